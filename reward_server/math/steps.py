"""Find the arithmetic equalities a completion states, and check each one exactly.

A *step* is a run of arithmetic on one line with at least one ``=`` and at least one operator,
e.g. ``3 * 4 = 12``, ``\\frac{6}{3} = 2`` or a chain ``2 + 3 = 5 = 10/2``. Each step is
``ok=True`` (every side has the same value), ``ok=False`` (some side differs) or ``ok=None``
(unverified: a side is arithmetic the evaluator cannot value, e.g. beyond its bounds or a
division by zero). Values come from :mod:`.arith`, so the check is exact; a side written as a
bare decimal may be a rounding of its neighbour (``22/7 = 3.14`` is accepted, ``22/7 = 3.15`` is not).

A line is *read* before its runs are found (:func:`read_line`), so that the same step written
another way is checked the same: compatibility characters are NFKC-normalised (a full-width
``\uff13 \uff0a \uff14 \uff1d \uff11\uff13`` is ``3 * 4 = 13``), the operator words ``plus``,
``minus``, ``times``, ``multiplied by``, ``divided by`` between two numbers are their signs, and a
relation word (``is``, ``is equal to``, ``equals``, ``makes``, ``gives``, ``yields``) or arrow
(``->``, ``=>``, ``\u2192``, ``\u21d2``) is ``=`` where the arithmetic before it computes something
and a number follows (``5 - 2 - 2 equals 3`` is checked; ``Step 2 is 3 + 4`` and ``the answer is
12`` are not steps). Spans always point at the completion as written.

Runs are cut where non-arithmetic text touches them, and a cut side is dropped rather than
misread: in ``2x + 3 = 7`` the run ``+ 3 = 7`` starts mid-expression, so ``+ 3`` is dropped and
what is left (``7``) is not a step; in ``x = 3 + 4 = 7`` the checked step is ``3 + 4 = 7``. A
bracket the first or last side does not match belongs to the text around it: ``(2 * 3 = 6)``
checks ``2 * 3 = 6``, and a side closing a group opened before the run (the ``(1)}{40320}`` of a
larger ``\\frac``) is dropped.

Work is bounded for adversarial completions: only the first :data:`MAX_LINES` lines that may hold
a step are read, lines longer than :data:`MAX_LINE_CHARS` and runs longer than
:data:`MAX_RUN_CHARS` are skipped, at most :data:`MAX_WORDS_READ` ASCII arrows, as many operator
words and as many relation words or arrows are considered per line, and at most :data:`MAX_STEPS` steps are returned.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from botgrpo.reward_server.math.arith import UnevaluableError, evaluate, has_operator

MAX_LINES = 300
MAX_STEPS = 200
MAX_LINE_CHARS = 5000
MAX_RUN_CHARS = 400
MAX_WORDS_READ = 50  # operator and relation words considered per line

_RUN = re.compile(
    r"(?:[0-9.,+\-*/^(){}=\u2212\u00d7\u22c5\u00b7\u00f7 \t]|\\(?:[dt]?frac|times|cdot|div)(?![a-zA-Z]))+"
)
_CLAUSE_BREAK = re.compile(r"[,.](?=\s)")  # "x = 1, y = 2" or a full stop; never "1,000"
_PROSE_WORD = re.compile(r"[A-Za-z]{3,}$")
_BARE_DECIMAL = re.compile(r"\s*-?\d+\.(?P<places>\d+)\s*")
_LEADING_OPERATOR = frozenset("+*/^=)}\u00d7\u00f7\u22c5\u00b7")
_TRAILING_OPERATOR = frozenset("+-*/^=({\u2212\u00d7\u00f7\u22c5\u00b7")
_LEADING_PADDING = " \t,"
_TRAILING_PADDING = " \t,."


@dataclass(frozen=True)
class Step:
    """The equality ``completion[start:end]`` and its verdict (``None``: unverified, arithmetic the
    evaluator cannot value)."""

    start: int
    end: int
    text: str
    ok: bool | None


def find_steps(completion: str) -> list[Step]:
    """Every arithmetic equality in ``completion``, in order, with its verdict."""
    steps: list[Step] = []
    for line_start, line_end in _candidate_lines(completion):
        reading = read_line(completion[line_start:line_end])
        text = reading.text
        for run in _RUN.finditer(text):
            if "=" in run.group() and run.end() - run.start() <= MAX_RUN_CHARS:
                for start, end in _clauses(text, run.start(), run.end()):
                    step = _step_from_run(text, start, end)
                    if step is not None:
                        first = line_start + reading.origin(step.start)[0]
                        last = line_start + reading.origin(step.end - 1)[1]
                        steps.append(Step(first, last, completion[first:last], step.ok))
                    if len(steps) >= MAX_STEPS:
                        return steps
    return steps


def _clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split a run at commas and full stops followed by a space."""
    bounds, clause_start = [], start
    for match in _CLAUSE_BREAK.finditer(text, start, end):
        bounds.append((clause_start, match.start()))
        clause_start = match.end()
    bounds.append((clause_start, end))
    return [(a, b) for a, b in bounds if "=" in text[a:b]]


# where a line may state a step: a sign that reads as "=" (an arrow, a compatibility form of "="), or
# a relation word between a number and a number
_WORD_RELATIONS = r"is\s+equal\s+to|equals|is|makes|gives|yields"
_CANDIDATE = re.compile(  # one leading character class, so the regex engine skips prose fast
    rf"[-=\uff1d\ufe66\u2192\u21d2\d)}}](?:(?<=[=\uff1d\ufe66\u2192\u21d2])|(?<=-)>"
    rf"|(?<=[\d)}}])\s*(?:{_WORD_RELATIONS})\s*[-(\d])",  # \d: any decimal digit, full-width ones included
    re.IGNORECASE)


def _candidate_lines(completion: str):
    """``(start, end)`` of the first :data:`MAX_LINES` short lines that may hold a step."""
    position, seen = 0, 0
    while seen < MAX_LINES:
        found = _CANDIDATE.search(completion, position)
        if found is None:
            return
        start = completion.rfind("\n", 0, found.start()) + 1
        end = completion.find("\n", found.start())
        end = len(completion) if end < 0 else end
        if end - start <= MAX_LINE_CHARS:
            seen += 1
            yield start, end
        position = end + 1


# a word or arrow right after a number (the match starts at the number, group "word" is the word)
_OPERATOR_WORD = re.compile(r"[\d)}][ \t]*(?P<word>plus|minus|times|multiplied\s+by|divided\s+by)(?![A-Za-z])",
                            re.IGNORECASE)
_OPERATOR_SIGNS = {"plus": "+", "minus": "-", "times": "*", "multiplied": "*", "divided": "/"}
_OPERATOR_HINTS = tuple(_OPERATOR_SIGNS)  # a line without any of these has no operator word
_RELATION_HINTS = ("is", "equal", "make", "give", "yield", "\u2192", "\u21d2")
_RELATION = re.compile(rf"[\d)}}][ \t]*(?P<word>(?:{_WORD_RELATIONS})(?![A-Za-z])|[\u2192\u21d2])", re.IGNORECASE)
_ASCII_ARROW = re.compile(r"(?P<word>->|=>)")
_ARROWS = {"->": "\u2192", "=>": "\u21d2"}
_NUMBER_AFTER = re.compile(r"\s*[-(\d{\\]")


@dataclass(frozen=True)
class _Piece:
    """``length`` characters of a reading that stand for ``line[start:end]``: one for one when
    ``literal``, else all of them for the whole of it (a sign read from a word)."""

    start: int
    end: int
    length: int
    literal: bool


@dataclass(frozen=True)
class LineReading:
    """A line as the step finder reads it (:func:`read_line`), with where each part came from."""

    text: str
    pieces: tuple[_Piece, ...]
    offsets: tuple[int, ...]  # where each piece starts in ``text``

    @classmethod
    def of(cls, text: str, pieces: list[_Piece]) -> LineReading:
        offsets, at = [], 0
        for piece in pieces:
            offsets.append(at)
            at += piece.length
        return cls(text, tuple(pieces), tuple(offsets))

    def origin(self, at: int) -> tuple[int, int]:
        """``(start, end)`` in the line of the reading's character at ``at``."""
        index = bisect.bisect_right(self.offsets, at) - 1
        piece = self.pieces[index]
        if not piece.literal:
            return piece.start, piece.end
        start = piece.start + at - self.offsets[index]
        return start, start + 1

    def slice(self, start: int, end: int) -> list[_Piece]:
        """The pieces of ``text[start:end]``."""
        pieces = []
        for index in range(bisect.bisect_right(self.offsets, start) - 1, len(self.pieces)):
            piece, offset = self.pieces[index], self.offsets[index]
            if offset >= end:
                break
            low, high = max(start, offset), min(end, offset + piece.length)
            if piece.literal:
                pieces.append(_Piece(piece.start + low - offset, piece.start + high - offset, high - low, True))
            else:
                pieces.append(_Piece(piece.start, piece.end, high - low, False))
        return pieces


# compatibility forms that only change how a character looks (NFKC maps each to one character);
# superscripts, subscripts and vulgar fractions are left alone: NFKC would read 3\u00b2 as 32
_LOOKALIKE = ("<wide>", "<narrow>", "<small>", "<font>")


def _lookalike_table(line: str) -> dict[int, str]:
    table = {}
    for char in set(line):
        if ord(char) > 127 and unicodedata.decomposition(char).startswith(_LOOKALIKE):
            table[ord(char)] = unicodedata.normalize("NFKC", char)
    return table


def read_line(line: str) -> LineReading:
    """``line`` as the step finder reads it (module docstring): look-alike compatibility forms
    NFKC-normalised (one character each), then operator words, then relation words and arrows
    between arithmetic read as signs."""
    if not line.isascii():
        line = line.translate(_lookalike_table(line))
    reading = LineReading.of(line, [_Piece(0, len(line), len(line), True)] if line else [])
    reading = _replaced(reading, _signs(line, _ASCII_ARROW, lambda _, match: _ARROWS[match.group()]),
                        padded=False)  # "->" is no minus sign, "=>" no equation
    lowered = reading.text.lower()
    if any(word in lowered for word in _OPERATOR_HINTS):
        reading = _replaced(reading, _signs(reading.text, _OPERATOR_WORD, _operator_sign))
    if not any(word in lowered for word in _RELATION_HINTS):
        return reading
    runs = _RUN.finditer(reading.text)
    return _replaced(reading, _signs(reading.text, _RELATION, lambda text, match: _equals_sign(text, match, runs)))


def _signs(text: str, pattern: re.Pattern[str], sign) -> list[tuple[int, int, str]]:
    """``(start, end, sign)`` for each of the first :data:`MAX_WORDS_READ` matches of ``pattern``
    in ``text`` that ``sign`` reads as a sign."""
    found = []
    for index, match in enumerate(pattern.finditer(text)):
        if index >= MAX_WORDS_READ:
            break
        replacement = sign(text, match)
        if replacement is not None:
            found.append((*match.span("word"), replacement))
    return found


def _replaced(reading: LineReading, replacements: list[tuple[int, int, str]], padded: bool = True) -> LineReading:
    """``reading`` with each ``(start, end, sign)`` put in place of ``text[start:end]`` (padded
    with spaces, so it never joins its neighbours); a sign stands for all of what it replaced."""
    if not replacements:
        return reading
    text, pieces, pieces_text, position = reading.text, [], [], 0
    for start, end, sign in replacements:
        sign = f" {sign} " if padded else sign
        pieces += reading.slice(position, start)
        first, last = reading.origin(start)[0], reading.origin(end - 1)[1]
        pieces.append(_Piece(first, last, len(sign), False))
        pieces_text += [text[position:start], sign]
        position = end
    pieces += reading.slice(position, len(text))
    pieces_text.append(text[position:])
    return LineReading.of("".join(pieces_text), pieces)


def _operator_sign(text: str, match: re.Match) -> str | None:
    """``3 times 4`` -> ``3 * 4``: an operator word between two numbers."""
    if not _NUMBER_AFTER.match(text, match.end()):
        return None
    return _OPERATOR_SIGNS[match.group("word").split()[0].lower()]


def _run_ending_at(runs, at: int) -> re.Match | None:
    """The run of ``runs`` (an iterator over the line's runs, consumed in order) that ends at ``at``."""
    for run in runs:
        if run.end() >= at:
            return run if run.end() == at else None
    return None


def _equals_sign(text: str, match: re.Match, runs) -> str | None:
    """``3 * 4 is 13`` -> ``3 * 4 = 13``: a relation whose left side computes and whose right
    side is a number (the line is an arithmetic statement, not prose that mentions one).
    ``runs``: an iterator over the arithmetic runs of ``text``, consumed in order."""
    left = _run_ending_at(runs, match.start("word"))
    if left is None or not _NUMBER_AFTER.match(text, match.end()) or left.end() - left.start() > MAX_RUN_CHARS:
        return None
    side_start = left.start()
    for cut in re.finditer(r"=|[,.](?=\s)", left.group()):
        side_start = left.start() + cut.end()
    while side_start < match.start("word") and text[side_start] in _LEADING_PADDING:
        side_start += 1
    side = text[side_start:match.start("word")].rstrip(_TRAILING_PADDING)
    if not side or ("=" not in left.group() and _starts_mid_expression(text, side_start)):
        return None
    return "=" if _computes(side) else None


def _sides(completion: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split ``[start, end)`` at each ``=`` into trimmed ``(start, end)`` sides."""
    sides, side_start = [], start
    for index in range(start, end + 1):
        if index == end or completion[index] == "=":
            left, right = side_start, index
            while left < right and completion[left] in _LEADING_PADDING:
                left += 1
            while right > left and completion[right - 1] in _TRAILING_PADDING:
                right -= 1
            sides.append((left, right))
            side_start = index + 1
    return sides


def _starts_mid_expression(completion: str, side_start: int) -> bool:
    """True if the first side is the tail of an expression that began before the run."""
    first = completion[side_start] if side_start < len(completion) else "="
    before = side_start - 1
    while before >= 0 and completion[before] in " \t":
        before -= 1
    previous = completion[before] if before >= 0 else "\n"
    if first in _LEADING_OPERATOR:
        return True
    if first in "-\u2212" and previous.isalnum():
        # "2x - 3 = 7" continues an expression; "Then -3 + 5 = 2" does not.
        return _PROSE_WORD.search(completion, max(0, before - 40), before + 1) is None
    return before == side_start - 1 and (previous.isalnum() or previous in "\\_!%']|")


def _ends_mid_expression(completion: str, side_end: int, run_end: int) -> bool:
    """True if the last side continues into non-arithmetic text after the run."""
    if completion[side_end - 1] in _TRAILING_OPERATOR:
        return True
    following = completion[run_end] if run_end < len(completion) else " "
    return run_end == side_end and (following.isalpha() or following in "\\_!%'")


def _step_from_run(completion: str, start: int, end: int) -> Step | None:
    sides = _sides(completion, start, end)
    if sides and (sides[0][0] == sides[0][1] or _starts_mid_expression(completion, sides[0][0])):
        sides = sides[1:]
    if sides and (sides[-1][0] == sides[-1][1] or _ends_mid_expression(completion, sides[-1][1], end)):
        sides = sides[:-1]
    if len(sides) < 2 or any(a == b for a, b in sides):
        return None
    first, last = _first_side(completion, *sides[0]), _last_side(completion, *sides[-1])
    sides = [side for side in [first, *sides[1:-1], last] if side is not None]
    if len(sides) < 2:
        return None
    texts = [completion[a:b] for a, b in sides]
    if not any(_computes(text) for text in texts):
        return None
    step_start, step_end = sides[0][0], sides[-1][1]
    return Step(step_start, step_end, completion[step_start:step_end], _check(texts))


_PAIRS = {")": "(", "}": "{"}


def _unmatched(text: str) -> tuple[list[int], list[int]]:
    """Offsets of the brackets of ``text`` that open a group it never closes, and of those that
    close a group it never opened."""
    opened, stray_closers = [], []
    for index, char in enumerate(text):
        if char in "({":
            opened.append(index)
        elif char in ")}":
            if opened and text[opened[-1]] == _PAIRS[char]:
                opened.pop()
            else:
                stray_closers.append(index)
    return opened, stray_closers


def _first_side(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The first side without the text its stray brackets belong to: ``(2 * 3`` of
    ``(2 * 3 = 6)`` is ``2 * 3``; a side that closes a group opened before the run
    (``(1)}{40320}``) is the tail of a larger expression and is dropped (``None``)."""
    openers, closers = _unmatched(text[start:end])
    if closers:
        return None
    if openers:
        start += openers[-1] + 1
        while start < end and text[start] in _LEADING_PADDING:
            start += 1
    return (start, end) if start < end else None


def _last_side(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The last side without the text its stray brackets belong to: ``6)`` of ``(2 * 3 = 6)`` is
    ``6``; a side that opens a group it does not close continues past the run and is dropped."""
    openers, closers = _unmatched(text[start:end])
    if openers:
        return None
    if closers:
        end = start + closers[0]
        while end > start and text[end - 1] in _TRAILING_PADDING:
            end -= 1
    return (start, end) if start < end else None


def _computes(text: str) -> bool:
    try:
        return has_operator(text)
    except UnevaluableError:
        return any(op in text for op in "+*/^\u00d7\u00f7") or "\\frac" in text


def _check(sides: list[str]) -> bool | None:
    """All sides equal (allowing a bare decimal to be a rounding of its neighbour)?"""
    try:
        values = [evaluate(text) for text in sides]
    except UnevaluableError:
        return None
    return all(
        _same(values[i], values[i + 1], sides[i], sides[i + 1]) for i in range(len(values) - 1)
    )


def _same(left: Fraction, right: Fraction, left_text: str, right_text: str) -> bool:
    if left == right:
        return True
    places = max(_decimal_places(left_text), _decimal_places(right_text))
    return places > 0 and abs(left - right) <= Fraction(1, 2 * 10**places)


def _decimal_places(text: str) -> int:
    match = _BARE_DECIMAL.fullmatch(text)
    return len(match.group("places")) if match else 0

