"""Token schemes for a compile verdict: where in the completion the reward and the blame go.

A scheme maps a :class:`CompileOutcome` to a :class:`ScoreResult` over characters. Measured on
this project's small RL runs: a scheme that gives a failing component's prefix full credit
("+1 before the error line, -1 on it") is gamed within 40 steps (errors move to later lines,
outputs grow, compile rate collapses); and compilers report errors *after* the true mistake
(``className="x"Back</p>`` is reported at ``</``). Hence the default, ``window``:

=====================================  =========
characters                             score
=====================================  =========
all of a compiling completion          +1.0
a failing completion's other text      -0.2      (``FAIL_BASE``: never full credit)
blame window of each diagnostic        -1.0      (from the start of the line ``blame_lines``
                                                  above the report to the end of the report)
no code / truncated / timeout / crash  -1.0      everywhere
=====================================  =========

``uniform`` gives every character the sequence score (the token-less baseline) and
``prefix_credit`` is the gamed scheme above, kept only for ablations.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from reward_server.scorers.base import ScoreResult, SpanScore
from sandbox.results import Diagnostic

PASS, FAIL, FAIL_BASE = 1.0, -1.0, -0.2


@dataclass(frozen=True)
class CompileOutcome:
    """A compile verdict located in the completion (diagnostic offsets are in the code)."""

    length: int                       # characters in the completion
    code_start: int = 0               # where the code begins in the completion
    code: str = ""
    passed: bool = False
    fatal: Optional[str] = None       # set when the whole completion is to blame
    diagnostics: tuple[Diagnostic, ...] = field(default_factory=tuple)


Scheme = Callable[[CompileOutcome, int], ScoreResult]
SCHEMES: dict[str, Scheme] = {}


def scheme(name: str):
    def add(fn: Scheme) -> Scheme:
        SCHEMES[name] = fn
        return fn
    return add


def _line_start(code: str, index: int, lines_above: int) -> int:
    start = code.rfind("\n", 0, index) + 1
    for _ in range(lines_above):
        if start == 0:
            break
        start = code.rfind("\n", 0, start - 1) + 1
    return start


def blame_window(code: str, diagnostic: Diagnostic, lines_above: int) -> tuple[int, int]:
    """``[start, end)`` in the code: from the start of the line ``lines_above`` lines above the
    report through the reported span (at least one character)."""
    end = min(len(code), max(diagnostic.end, diagnostic.start + 1))
    return _line_start(code, diagnostic.start, lines_above), end


def _sequence(outcome: CompileOutcome) -> tuple[float, bool]:
    return (PASS, True) if outcome.passed else (FAIL, False)


def _whole(outcome: CompileOutcome, score: float) -> ScoreResult:
    return ScoreResult(score=score, passed=outcome.passed, default=score)


@scheme("window")
def window(outcome: CompileOutcome, blame_lines: int) -> ScoreResult:
    """Default: see the module docstring."""
    if outcome.passed:
        return _whole(outcome, PASS)
    if outcome.fatal or not outcome.diagnostics:
        return _whole(outcome, FAIL)
    spans = []
    for d in outcome.diagnostics:
        start, end = blame_window(outcome.code, d, blame_lines)
        spans.append(SpanScore(outcome.code_start + start, outcome.code_start + end, FAIL))
    return ScoreResult(score=FAIL, passed=False, spans=spans, default=FAIL_BASE)


@scheme("uniform")
def uniform(outcome: CompileOutcome, blame_lines: int) -> ScoreResult:
    """Every character carries the sequence score: no token-level information at all."""
    return _whole(outcome, _sequence(outcome)[0])


@scheme("prefix_credit")
def prefix_credit(outcome: CompileOutcome, blame_lines: int) -> ScoreResult:
    """Ablation only (gamed, see above): +1 before the first error's line, -1 from it on."""
    if outcome.passed:
        return _whole(outcome, PASS)
    if outcome.fatal or not outcome.diagnostics:
        return _whole(outcome, FAIL)
    first = min(d.start for d in outcome.diagnostics)
    cut = outcome.code_start + _line_start(outcome.code, first, 0)
    return ScoreResult(score=FAIL, passed=False, spans=[SpanScore(cut, outcome.length, FAIL)], default=PASS)
