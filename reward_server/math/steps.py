"""Find the arithmetic equalities a completion states, and check each one exactly.

A *step* is a run of arithmetic on one line with at least one ``=`` and at least one operator,
e.g. ``3 * 4 = 12``, ``\\frac{6}{3} = 2`` or a chain ``2 + 3 = 5 = 10/2``. Each step is
``ok=True`` (every side has the same value), ``ok=False`` (some side differs) or ``ok=None``
(uncheckable: a side is not plain arithmetic). Values come from :mod:`.arith`, so the check is
exact; a side written as a bare decimal may be a rounding of its neighbour
(``22/7 = 3.14`` is accepted, ``22/7 = 3.15`` is not).

Runs are cut where non-arithmetic text touches them, and a cut side is dropped rather than
misread: in ``2x + 3 = 7`` the run ``+ 3 = 7`` starts mid-expression, so ``+ 3`` is dropped and
what is left (``7``) is not a step; in ``x = 3 + 4 = 7`` the checked step is ``3 + 4 = 7``.

Work is bounded for adversarial completions: only the first :data:`MAX_LINES` lines holding an
``=`` are read, lines longer than :data:`MAX_LINE_CHARS` and runs longer than
:data:`MAX_RUN_CHARS` are skipped, and at most :data:`MAX_STEPS` steps are returned.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from .arith import UnevaluableError, evaluate, has_operator

MAX_LINES = 300
MAX_STEPS = 200
MAX_LINE_CHARS = 5000
MAX_RUN_CHARS = 400

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
    """The equality ``completion[start:end]`` and its verdict (``None``: uncheckable)."""

    start: int
    end: int
    text: str
    ok: bool | None


def find_steps(completion: str) -> list[Step]:
    """Every arithmetic equality in ``completion``, in order, with its verdict."""
    steps: list[Step] = []
    for line_start, line_end in _lines_with_equals(completion):
        for run in _RUN.finditer(completion, line_start, line_end):
            if "=" in run.group() and run.end() - run.start() <= MAX_RUN_CHARS:
                for start, end in _clauses(completion, run.start(), run.end()):
                    step = _step_from_run(completion, start, end)
                    if step is not None:
                        steps.append(step)
                    if len(steps) >= MAX_STEPS:
                        return steps
    return steps


def _clauses(completion: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split a run at commas and full stops followed by a space."""
    bounds, clause_start = [], start
    for match in _CLAUSE_BREAK.finditer(completion, start, end):
        bounds.append((clause_start, match.start()))
        clause_start = match.end()
    bounds.append((clause_start, end))
    return [(a, b) for a, b in bounds if "=" in completion[a:b]]


def _lines_with_equals(completion: str):
    """``(start, end)`` of the first :data:`MAX_LINES` short lines that contain ``=``."""
    position, seen = 0, 0
    while seen < MAX_LINES:
        equals = completion.find("=", position)
        if equals < 0:
            return
        start = completion.rfind("\n", 0, equals) + 1
        end = completion.find("\n", equals)
        end = len(completion) if end < 0 else end
        if end - start <= MAX_LINE_CHARS:
            seen += 1
            yield start, end
        position = end + 1


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
    texts = [completion[a:b] for a, b in sides]
    if not any(_computes(text) for text in texts):
        return None
    step_start, step_end = sides[0][0], sides[-1][1]
    return Step(step_start, step_end, completion[step_start:step_end], _check(texts))


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

