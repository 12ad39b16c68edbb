"""Find a completion's final answer and where it is.

Order of preference, as graders of math benchmarks read answers:

1. the last *balanced* ``\\boxed{...}`` / ``\\fbox{...}`` (braces nest). If the completion boxes
   something but no box is balanced (e.g. ``\\boxed{`` cut off by the length limit), there is
   no answer: the model committed to boxing and did not finish, and guessing a number elsewhere
   would reward a truncated completion;
2. the last "the answer is X", "final answer: X" or "Answer: X" (X runs to the end of the line
   or sentence);
3. the last number in the completion's tail.

Every scan is linear in the completion and bounded: a box is read for at most
:data:`MAX_ANSWER_CHARS` characters and only the last :data:`MAX_BOX_CANDIDATES` boxes are
tried, so a 1 MB completion full of ``\\boxed{`` costs milliseconds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ANSWER_CHARS = 1000
MAX_BOX_CANDIDATES = 8
NUMBER_TAIL_CHARS = 1000

_BOX_OPENERS = ("\\boxed{", "\\fbox{")
_PHRASE = re.compile(
    rf"\banswer\s*(?:is\s*:?|:|=)\s*(?P<answer>[^\n]{{1,{MAX_ANSWER_CHARS}}})",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NUMBER_THEN_WORDS = re.compile(r"(-?\d[\d,./]*)\s+[A-Za-z]{2,}")
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?")


@dataclass(frozen=True)
class Extraction:
    """The answer ``text`` found at ``completion[start:end]`` and how it was found."""

    text: str
    start: int
    end: int
    method: str  # "boxed" | "phrase" | "last_number"


def extract_final_answer(completion: str) -> Extraction | None:
    """The completion's final answer with its character span, or ``None`` if it has none."""
    if any(opener in completion for opener in _BOX_OPENERS):
        return _last_balanced_box(completion)
    return _last_phrase(completion) or _last_number(completion)


def _box_openings(completion: str) -> list[int]:
    """Content start offsets of the last few box openers, last first."""
    found: list[int] = []
    for opener in _BOX_OPENERS:
        end = len(completion)
        for _ in range(MAX_BOX_CANDIDATES):
            at = completion.rfind(opener, 0, end)
            if at < 0:
                break
            found.append(at + len(opener))
            end = at
    return sorted(found, reverse=True)[:MAX_BOX_CANDIDATES]


def _balanced_end(text: str, start: int) -> int | None:
    """Offset of the ``}`` closing a group opened just before ``start``, within the bound."""
    depth = 1
    stop = min(len(text), start + MAX_ANSWER_CHARS + 1)
    for offset in range(start, stop):
        char = text[offset]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return offset
    return None


def _last_balanced_box(completion: str) -> Extraction | None:
    for content_start in _box_openings(completion):
        close = _balanced_end(completion, content_start)
        if close is not None:
            return _trimmed(completion, content_start, close, "boxed")
    return None


def _last_match(pattern: re.Pattern[str], text: str, start: int = 0) -> re.Match[str] | None:
    match = None
    for match in pattern.finditer(text, start):  # noqa: B007 - the last one is wanted
        continue
    return match


def _last_phrase(completion: str) -> Extraction | None:
    last = _last_match(_PHRASE, completion)
    if last is None:
        return None
    start, end = last.span("answer")
    if completion.startswith("$", start):
        delimiter = "$$" if completion.startswith("$$", start) else "$"
        start += len(delimiter)
        closing = completion.find(delimiter, start, end)
        end = closing if closing >= 0 else end
    else:
        sentence_end = _SENTENCE_END.search(completion, start, end)
        end = sentence_end.start() if sentence_end is not None else end
        unit = _NUMBER_THEN_WORDS.match(completion, start, end)  # "12 apples" -> "12"
        end = unit.end(1) if unit else end
    return _trimmed(completion, start, end, "phrase")


def _last_number(completion: str) -> Extraction | None:
    tail_start = max(0, len(completion) - NUMBER_TAIL_CHARS)
    last = _last_match(_NUMBER, completion, tail_start)
    if last is None:
        return None
    return Extraction(last.group(), last.start(), last.end(), "last_number")


def _trimmed(completion: str, start: int, end: int, method: str) -> Extraction | None:
    """Shrink ``[start, end)`` past whitespace, ``$`` delimiters and a trailing full stop."""
    strip = " \t\r\n$"
    while start < end and completion[start] in strip:
        start += 1
    while end > start and completion[end - 1] in strip + ".":
        end -= 1
    if start == end:
        return None
    return Extraction(completion[start:end], start, end, method)
