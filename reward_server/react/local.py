"""Local signals of a compile verdict: where in a failing completion the blame lies.

A local signal is a list of character spans of the completion with ``l = -1`` (the reward recipe,
:mod:`botgrpo.services.recipe`, weighs it against the outcome). Registry
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
    group whose rollouts all fail gets. An *extra* closing tag (``</div>`` with no opener) is
    reported the same way, but there the closing tag is the mistake: the worker then points the
    note at that tag (``sandbox/node/lib/positions.mjs``), so it is what gets blamed. With it one replication seed of five collapsed, with
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
    Linear cost: where the alignment would need more than 300 steps a token (repetitive text),
    the blame is the code between the common prefix and suffix instead (:func:`oracle`).
``none``
    No local signal: every token carries the outcome alone.

The window (``window`` and ``window_unit`` options) is counted in the code's own lexical tokens
(the paper's window of 3, independent of the caller's tokenizer) or in lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable, Literal, Optional

from botgrpo.reward_server.scorers.base import SpanScore
from botgrpo.sandbox.results import Diagnostic

BLAME = -1.0
# identifiers, numbers, strings (one token each, an unterminated one up to the line end),
# two-character JSX/arrow punctuators, then any other single non-space character
_LEXEME = re.compile(
    r"[A-Za-z_$][\w$]*|\d[\w.]*|\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?|</|/>|=>|[^\s]"
)
_LOOKBACK_CHARS = 400      # bounds the token window's scan, whatever the code's length
_ORACLE_MAX_TOKENS = 4000  # longer code or reference: first_error
# The token matcher's work budget (inner-loop steps) is this many per token of code plus
# reference, at least _ORACLE_MIN_WORK: repetitive text costs the longest-match recursion a
# quadratic (or worse) number of steps; past the budget oracle falls back (see oracle()).
_ORACLE_WORK_PER_TOKEN = 300
_ORACLE_MIN_WORK = 200_000


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
    """The code's tokens where it departs from ``reference``; see the module docstring.

    Cost is linear in the tokens: the matcher (the same alignment as ``difflib.SequenceMatcher``
    without junk heuristics) gets a work budget of ``_ORACLE_WORK_PER_TOKEN`` steps a token; on
    text where it would need more (long runs of repeated tokens), the blame is instead the span
    from the first to the last token that differs once the common prefix and suffix are set
    aside (:func:`_differing_span`)."""
    if not reference:
        return first_error(outcome, window)
    ours, theirs = lexemes(outcome.code), lexemes(reference)
    if max(len(ours), len(theirs)) > _ORACLE_MAX_TOKENS:
        return first_error(outcome, window)
    a = [outcome.code[s:e] for s, e in ours]
    b = [reference[s:e] for s, e in theirs]
    budget = max(_ORACLE_MIN_WORK, _ORACLE_WORK_PER_TOKEN * (len(a) + len(b)))
    blocks = matching_blocks(a, b, budget)
    if blocks is None:
        return _spans(outcome, _differing_span(ours, a, b))
    blamed: list[tuple[int, int]] = []
    for op, i1, i2, j1, j2 in opcodes(blocks):
        if op == "equal" or (op == "replace" and i2 - i1 == 1 == j2 - j1 and _same_kind(a[i1], b[j1])):
            continue
        blamed.append(_gap_or_run(ours, i1, i2))
    return _spans(outcome, [span for span in blamed if span is not None])


def _gap_or_run(ours: list[tuple[int, int]], i1: int, i2: int) -> Optional[tuple[int, int]]:
    """Characters of our tokens ``[i1, i2)``; for an empty run (something is missing there)
    the tokens on both sides of the gap; None when there are no tokens at all."""
    if i2 > i1:
        return ours[i1][0], ours[i2 - 1][1]
    if not ours:
        return None
    return ours[max(0, i1 - 1)][0], ours[min(i1, len(ours) - 1)][1]


def _differing_span(ours: list[tuple[int, int]], a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """The fallback blame: our tokens between the longest common prefix and suffix of ``a``
    and ``b`` (the gap's neighbours when ours has nothing there); nothing when they are equal."""
    if a == b:
        return []
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    span = _gap_or_run(ours, prefix, len(a) - suffix)
    return [span] if span is not None else []


def _longest_match(a: list[str], positions: dict[str, list[int]], alo: int, ahi: int, blo: int, bhi: int,
                   work: list[int]) -> tuple[int, int, int]:
    """The longest common run of ``a[alo:ahi]`` and ``b[blo:bhi]`` as (i, j, size); among equally
    long runs the one that starts first in ``a``, then in ``b``. ``positions[x]`` lists the
    indexes of ``x`` in ``b`` in order; ``work[0]`` counts down the steps left (negative: out)."""
    best_i, best_j, best = alo, blo, 0
    run_ending: dict[int, int] = {}  # j -> length of the common run ending at (i - 1, j)
    for i in range(alo, ahi):
        js = positions.get(a[i], ())
        work[0] -= len(js) + 1
        if work[0] < 0:
            return best_i, best_j, best
        here: dict[int, int] = {}
        for j in js:
            if j < blo:
                continue
            if j >= bhi:
                break
            k = run_ending.get(j - 1, 0) + 1
            here[j] = k
            if k > best:
                best_i, best_j, best = i - k + 1, j - k + 1, k
        run_ending = here
    return best_i, best_j, best


def matching_blocks(a: list[str], b: list[str], budget: int) -> Optional[list[tuple[int, int, int]]]:
    """Runs ``(i, j, size)`` where ``a[i:i+size] == b[j:j+size]``, in order, adjacent runs joined
    and a final ``(len(a), len(b), 0)``: take the longest common run, then recurse on both sides
    of it (the alignment ``difflib.SequenceMatcher(None, a, b, autojunk=False)`` finds). None
    when that takes more than ``budget`` steps."""
    positions: dict[str, list[int]] = {}
    for j, token in enumerate(b):
        positions.setdefault(token, []).append(j)
    work = [budget]
    found = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        i, j, k = _longest_match(a, positions, alo, ahi, blo, bhi, work)
        if work[0] < 0:
            return None
        if k:
            found.append((i, j, k))
            if alo < i and blo < j:
                todo.append((alo, i, blo, j))
            if i + k < ahi and j + k < bhi:
                todo.append((i + k, ahi, j + k, bhi))
    joined: list[tuple[int, int, int]] = []
    for i, j, k in sorted(found):
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + k)
        else:
            joined.append((i, j, k))
    joined.append((len(a), len(b), 0))
    return joined


def opcodes(blocks: list[tuple[int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """``(op, i1, i2, j1, j2)`` turning ``a`` into ``b`` from :func:`matching_blocks`: ``equal``
    runs between them, ``replace``/``delete``/``insert`` for the gaps (``difflib``'s opcodes)."""
    ops = []
    i = j = 0
    for ai, bj, size in blocks:
        if i < ai or j < bj:
            op = "replace" if i < ai and j < bj else "delete" if i < ai else "insert"
            ops.append((op, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            ops.append(("equal", ai, i, bj, j))
    return ops


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
