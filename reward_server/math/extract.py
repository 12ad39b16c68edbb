"""Find a completion's final answer and where it is.

Order of preference, as graders of math benchmarks read answers:

1. the last *balanced* ``\\boxed{...}`` / ``\\fbox{...}`` (braces nest). If the completion boxes
   something but no box is balanced (e.g. ``\\boxed{`` cut off by the length limit), there is
   no answer: the model committed to boxing and did not finish, and guessing a number elsewhere
   would reward a truncated completion;
2. the last "the answer is X", "final answer: X" or "Answer: X" (X runs to the end of the line
   or sentence);
3. the last number in the completion's tail.

:func:`extract_answer` adds the request's extraction policy and several boxes:

* several boxes with *different* contents are one answer when the reference has that many parts
  (``\\boxed{(98, 2)}`` and ``\\boxed{(99, 503)}`` against ``(98, 2), (99, 503)``: method ``boxes``,
  the contents joined with ``", "``); otherwise they are a hedge (method ``hedge``, refused);
* with no box, policy ``boxed`` reads 2. and 3. above; policy ``latex`` hands the completion's last
  :data:`REGION_CHARS` characters to math-verify's own extraction (its last LaTeX expression,
  "final answer is", last number), in the worker, behind the guard (method ``latex``); so is a
  single box that holds prose rather than an expression, and (policy ``latex``) a box that closes
  beyond :data:`MAX_ANSWER_CHARS`.

Every scan is linear in the completion and bounded: a box is read for at most
:data:`MAX_ANSWER_CHARS` characters and only the last :data:`MAX_BOX_CANDIDATES` boxes are
tried, so a 1 MB completion full of ``\\boxed{`` costs milliseconds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ANSWER_CHARS = 1000
REGION_CHARS = 4000
MAX_BOX_CANDIDATES = 8
NUMBER_TAIL_CHARS = 1000

_BOX_OPENERS = ("\\boxed{", "\\fbox{")
_PHRASE = re.compile(
    rf"\banswer\s*(?:is\s*:?|:|=)\s*(?P<answer>[^\n]{{1,{MAX_ANSWER_CHARS}}})",
    re.IGNORECASE,
)
_EXTRACTABLE = re.compile(r"[\d$]|\\[(\[]")
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NUMBER_THEN_WORDS = re.compile(r"(-?\d[\d,./]*)\s+[A-Za-z]{2,}")
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?")


@dataclass(frozen=True)
class Extraction:
    """The answer ``text`` found at ``completion[start:end]`` and how it was found."""

    text: str
    start: int
    end: int
    method: str  # "boxed" | "boxes" | "hedge" | "straddling" | "phrase" | "last_number" | "latex"


def extract_answer(completion: str, policy: str = "boxed", parts: int = 1) -> Extraction | None:
    """The final answer under ``policy`` (``boxed`` or ``latex``) for a reference of ``parts`` parts."""
    if any(opener in completion for opener in _BOX_OPENERS):
        boxes = balanced_boxes(completion)
        if not boxes:
            if policy == "latex" and _closes_late(completion):
                return _region(completion)  # a box longer than the bound: the library reads it
            return None
        distinct: list[Extraction] = []
        for box in boxes:
            if all(_squeezed(box.text) != _squeezed(seen.text) for seen in distinct):
                distinct.append(box)
        if len(distinct) == 1:
            last = boxes[-1]
            if _crosses_math(completion, last):  # the box straddles math delimiters: no one expression
                return _region(completion) if policy == "latex" else Extraction(last.text, last.start, last.end,
                                                                                 "straddling")
            return Extraction(last.text, last.start, last.end, "latex") if _is_prose(last.text) else last
        joined = ", ".join(box.text for box in distinct)
        method = "boxes" if len(distinct) == parts else "hedge"
        return Extraction(joined, boxes[0].start, boxes[-1].end, method)
    if policy == "latex":
        return _region(completion)
    return _last_phrase(completion) or _last_number(completion)


def _region(completion: str) -> Extraction | None:
    """The completion's last :data:`REGION_CHARS` characters, for math-verify's own extraction."""
    start, end = max(0, len(completion) - REGION_CHARS), len(completion)
    while start < end and completion[start].isspace():
        start += 1
    while end > start and completion[end - 1].isspace():
        end -= 1
    if not _EXTRACTABLE.search(completion, start, end):
        return None  # nothing math-verify could read: no answer, blamed throughout
    return Extraction(completion[start:end], start, end, "latex")


def _closes_late(completion: str) -> bool:
    """True if the last box opener is closed, but beyond :data:`MAX_ANSWER_CHARS` (one linear
    scan); a box that is never closed (cut off by the length limit) is no answer."""
    opened = max(completion.rfind(opener) + len(opener) for opener in _BOX_OPENERS if opener in completion)
    depth = 1
    for char in completion[opened:]:
        depth += (char == "{") - (char == "}")
        if depth == 0:
            return True
    return False


def balanced_boxes(completion: str) -> list[Extraction]:
    """The balanced boxes among the last few box openers, in reading order (nested boxes skipped)."""
    found: list[Extraction] = []
    for content_start in sorted(_box_openings(completion)):
        if found and content_start < found[-1].end:
            continue  # inside the previous box
        close = _balanced_end(completion, content_start)
        if close is not None:
            box = _trimmed(completion, content_start, close, "boxed")
            if box is not None:
                found.append(box)
    return found


_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}(?![A-Za-z])")
_TEXT_COMMAND = re.compile(r"\\(?:text|mathrm|textbf|textit|mbox)\s*\{[^{}]*\}")


_DOLLAR = re.compile(r"(?<!\\)\$")


def _crosses_math(completion: str, box: Extraction) -> bool:
    """True if ``box`` holds a math delimiter that closes a span opened before it
    (``$\\boxed{12 $ and $13}$``), or an unpaired one."""
    inside = len(_DOLLAR.findall(box.text))
    return inside % 2 == 1 or (inside > 0 and len(_DOLLAR.findall(completion, 0, box.start)) % 2 == 1)


def _is_prose(text: str) -> bool:
    """A box holding sentences (five words or more outside ``\\text{}``), not an expression:
    math-verify's own extraction reads it, like a completion without a box."""
    return len(_WORD.findall(_TEXT_COMMAND.sub(" ", text))) >= 5


def _squeezed(text: str) -> str:
    return re.sub(r"\\[,;:! ]|\\[dt]frac|\\frac|\s+", lambda m: "\\frac" if "frac" in m.group() else "", text)


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
    """The last number of the completion's tail; inside a math span, the whole span (``So $13
    \\equiv 12$.`` answers ``13 \\equiv 12``, not ``12``): a statement is judged whole."""
    tail_start = max(0, len(completion) - NUMBER_TAIL_CHARS)
    last = _last_match(_NUMBER, completion, tail_start)
    if last is None:
        return None
    for span in math_spans(completion):
        if span.content_start <= last.start() and last.end() <= span.content_end:
            return _trimmed(completion, span.content_start, span.content_end, "last_number")
    return Extraction(last.group(), last.start(), last.end(), "last_number")


@dataclass(frozen=True)
class MathSpan:
    """A math span ``text[start:end]`` whose content is ``text[content_start:content_end]``."""

    start: int
    content_start: int
    content_end: int
    end: int
    display: bool  # ``$$...$$`` or ``\\[...\\]``


_MATH_DELIMITER = re.compile(r"\$\$|(?<!\\)\$|\\\(|\\\)|\\\[|\\\]")
_CLOSES = {"$": "$", "\\(": "\\)", "$$": "$$", "\\[": "\\]"}


def math_spans(text: str) -> list[MathSpan]:
    """The math spans of ``text`` (``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``); delimiters pair
    in reading order, a closing one without an opener is skipped. Linear in ``text``."""
    spans, opened = [], None
    for match in _MATH_DELIMITER.finditer(text):
        token = match.group()
        if opened is None:
            if token in _CLOSES:
                opened = match
        elif token == _CLOSES[opened.group()]:
            spans.append(MathSpan(opened.start(), opened.end(), match.start(), match.end(),
                                  opened.group() in ("$$", "\\[")))
            opened = None
    return spans


def _trimmed(completion: str, start: int, end: int, method: str) -> Extraction | None:
    """Shrink ``[start, end)`` past whitespace, a trailing full stop and ``$``/``$$`` delimiters
    that enclose the whole answer (inner ones, as in ``Answer $ 9 $``, are kept)."""
    while True:
        before = (start, end)
        while start < end and completion[start].isspace():
            start += 1
        while end > start and (completion[end - 1].isspace() or completion[end - 1] == "."):
            end -= 1
        if end - start >= 2 and completion[start] == "$" and completion[end - 1] == "$":
            start, end = start + 1, end - 1
        elif completion.startswith("$", start) and completion.count("$", start, end) == 1:
            start += 1  # a lone opening delimiter
        elif end > start and completion[end - 1] == "$" and completion.count("$", start, end) == 1:
            end -= 1
        if (start, end) == before:
            break
    if start == end:
        return None
    return Extraction(completion[start:end], start, end, method)
