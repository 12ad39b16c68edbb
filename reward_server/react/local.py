"""Local signals of a compile verdict: where in a failing completion the blame lies.

A local signal is a list of character spans of the completion with ``l = -1`` (the composition
layer, :mod:`reward_server.composition`, weighs it against the outcome). Registry
:data:`LOCAL_SIGNALS`, chosen by the ``local`` option of the ``react`` scorer:

``first_cause`` (default)
    A parser's first error is where the prefix stops being completable; what it reports after
    that is mostly the cascade of that one mistake. So only the first *parse* diagnostic is
    blamed, with a window reaching back before it (compilers report after the true mistake:
    ``className="x"Back</p>`` is reported at ``</``), and where the compiler's note names an
    earlier construct (the opening tag a mismatched closing tag fails to match) the window is
    there instead of at the report. Diagnostics that do not cascade (a forbidden import, a type
    error) are independent findings and each is blamed in its window. Why the note: a
    mismatched closing tag is reported at the component's outer close; in the convergence
    replication's warm start two thirds of the failures' first errors were of that kind, so
    the report's window pushed down the tokens that close a component, the only gradient a
    group whose rollouts all fail gets. With it one replication seed of five collapsed, with
    the note's window none (docs/results/convergence/replication).
``first_error``
    The first parse error's window at the report, plus each non-cascading diagnostic's (the
    default until the replication).
``all_errors``
    Every diagnostic in its window (the blame of the retired ``window`` scheme).
``propagate``
    Error propagation, the code analogue of math's: the first parse error's window *and
    everything after it* (nothing built on a prefix that stopped being completable earns local
    credit), plus each non-cascading finding's window. The code before the window keeps the
    outcome alone; padding a failing completion after its error cannot dilute its blame.
``suffix``
    From the first diagnostic's window (of any kind) to the end.
``oracle``
    The study's upper bound: the tokens where the code differs from the prompt's reference
    component (``reference["code"]``), ignoring one-for-one swaps of a name, string or number
    (the legitimate freedom a prompt leaves). Falls back to ``first_error`` without a reference.
``none``
    No local signal: every token carries the outcome alone.

The window (``window`` and ``window_unit`` options) is counted in the code's own lexical tokens
(the paper's window of 3, independent of the caller's tokenizer) or in lines.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Literal, Optional

from reward_server.scorers.base import SpanScore
from sandbox.results import Diagnostic

BLAME = -1.0
# identifiers, numbers, strings (one token each, an unterminated one up to the line end),
# two-character JSX/arrow punctuators, then any other single non-space character
_LEXEME = re.compile(
    r"[A-Za-z_$][\w$]*|\d[\w.]*|\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?|</|/>|=>|[^\s]"
)
_LOOKBACK_CHARS = 400      # bounds the token window's scan, whatever the code's length
_ORACLE_MAX_TOKENS = 4000  # SequenceMatcher is quadratic in the worst case


@dataclass(frozen=True)
class Window:
    """How far blame reaches back before a report: ``size`` lexical tokens or lines."""

    size: int = 3
    unit: Literal["tokens", "lines"] = "tokens"


@dataclass(frozen=True)
class CompileOutcome:
    """A compile verdict located in the completion (diagnostic offsets are in the code)."""

    length: int                       # characters in the completion
    code_start: int = 0               # where the code begins in the completion
    code: str = ""
    passed: bool = False
    fatal: Optional[str] = None       # set when the whole completion is to blame
    diagnostics: tuple[Diagnostic, ...] = field(default_factory=tuple)


LocalSignal = Callable[[CompileOutcome, Window, Optional[str]], list[SpanScore]]
LOCAL_SIGNALS: dict[str, LocalSignal] = {}


def local_signal(name: str):
    def add(fn: LocalSignal) -> LocalSignal:
        LOCAL_SIGNALS[name] = fn
        return fn
    return add


def cascades(diagnostic: Diagnostic) -> bool:
    """True for parse errors (later ones are mostly consequences of the first); False for
    findings that stand alone: type errors (``TSxxxx``, except the TS1xxx syntax codes),
    import-policy refusals, and render failures and ESLint findings (a ``rule`` is set)."""
    if getattr(diagnostic, "rule", None):
        return False
    message = diagnostic.message
    if re.match(r"TS[2-9]\d{3}\b", message):
        return False
    return "is not allowed" not in message


def lexemes(code: str, start: int = 0, end: Optional[int] = None) -> list[tuple[int, int]]:
    """``[start, end)`` of each lexical token of ``code[start:end]`` (whitespace skipped)."""
    return [m.span() for m in _LEXEME.finditer(code, start, len(code) if end is None else end)]


def window_start(code: str, position: int, window: Window) -> int:
    """Where blame for a report at ``position`` begins: ``window.size`` lexical tokens (or the
    start of the line ``window.size`` lines) before it."""
    if window.unit == "lines":
        start = code.rfind("\n", 0, position) + 1
        for _ in range(window.size):
            if start == 0:
                break
            start = code.rfind("\n", 0, start - 1) + 1
        return start
    if window.size == 0:
        return position
    before = lexemes(code, max(0, position - _LOOKBACK_CHARS), position)
    return before[-window.size][0] if len(before) >= window.size else (before[0][0] if before else position)


def blame_window(code: str, diagnostic: Diagnostic, window: Window) -> tuple[int, int]:
    """``[start, end)`` in the code: the window before the report through the reported span
    (at least one character)."""
    end = min(len(code), max(diagnostic.end, diagnostic.start + 1))
    return window_start(code, diagnostic.start, window), end


def _spans(outcome: CompileOutcome, bounds: list[tuple[int, int]]) -> list[SpanScore]:
    return [SpanScore(outcome.code_start + s, outcome.code_start + e, BLAME) for s, e in bounds]


def _first_parse_error(outcome: CompileOutcome, window: Window, at_cause: bool) -> list[SpanScore]:
    """The first parse error's window (at the construct its note names when ``at_cause``), plus
    each non-cascading diagnostic's."""
    chosen, seen_parse_error = [], False
    for d in sorted(outcome.diagnostics, key=lambda d: d.start):
        if cascades(d):
            if seen_parse_error:
                continue
            seen_parse_error = True
            if at_cause and d.related:
                start, end = d.related[0]
                d = replace(d, start=start, end=end)
        chosen.append(blame_window(outcome.code, d, window))
    return _spans(outcome, chosen)


@local_signal("first_error")
def first_error(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """The first parse error's window, plus each non-cascading diagnostic's."""
    return _first_parse_error(outcome, window, at_cause=False)


@local_signal("first_cause")
def first_cause(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """:func:`first_error`, but a parse error whose compiler note names an earlier construct (the
    opening tag a closing tag fails to match) is blamed there rather than where it was noticed:
    a mismatched closing tag is reported at the component's outer close, and blaming that pushes
    down closing it."""
    return _first_parse_error(outcome, window, at_cause=True)


@local_signal("all_errors")
def all_errors(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """Every diagnostic's window."""
    return _spans(outcome, [blame_window(outcome.code, d, window) for d in outcome.diagnostics])


@local_signal("suffix")
def suffix(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """From the first diagnostic's window to the end of the completion."""
    if not outcome.diagnostics:
        return []
    first = min(outcome.diagnostics, key=lambda d: d.start)
    start = outcome.code_start + blame_window(outcome.code, first, window)[0]
    return [SpanScore(start, outcome.length, BLAME)]


@local_signal("propagate")
def propagate(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """The first parse error's window through the end, plus each non-cascading diagnostic's window."""
    ordered = sorted(outcome.diagnostics, key=lambda d: d.start)
    spans = _spans(outcome, [blame_window(outcome.code, d, window) for d in ordered if not cascades(d)])
    first_parse = next((d for d in ordered if cascades(d)), None)
    if first_parse is not None:
        start = outcome.code_start + blame_window(outcome.code, first_parse, window)[0]
        spans.append(SpanScore(start, outcome.length, BLAME))
    return spans


@local_signal("none")
def none(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    return []


@local_signal("oracle")
def oracle(outcome: CompileOutcome, window: Window, reference: Optional[str] = None) -> list[SpanScore]:
    """The code's tokens where it departs from ``reference``; see the module docstring."""
    if not reference:
        return first_error(outcome, window)
    ours, theirs = lexemes(outcome.code), lexemes(reference)
    if max(len(ours), len(theirs)) > _ORACLE_MAX_TOKENS:
        return first_error(outcome, window)
    a = [outcome.code[s:e] for s, e in ours]
    b = [reference[s:e] for s, e in theirs]
    blamed: list[tuple[int, int]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == 1 == j2 - j1 and _same_kind(a[i1], b[j1])):
            continue
        if i2 > i1:
            blamed.append((ours[i1][0], ours[i2 - 1][1]))
        elif ours:  # something is missing here: blame the tokens on both sides of the gap
            blamed.append((ours[max(0, i1 - 1)][0], ours[min(i1, len(ours) - 1)][1]))
    return _spans(outcome, blamed)


def _kind(lexeme: str) -> str:
    if lexeme[0] in "\"'":
        return "string"
    if lexeme[0].isdigit():
        return "number"
    if lexeme[0].isalpha() or lexeme[0] in "_$":
        return "name"
    return lexeme  # punctuation: only itself


def _same_kind(ours: str, theirs: str) -> bool:
    return _kind(ours) == _kind(theirs) and _kind(ours) in ("string", "number", "name")
