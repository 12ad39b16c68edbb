"""The local signal of a math verdict: where in the completion the reasoning broke.

``l = -1`` (the composition layer, :mod:`botgrpo.reward_server.composition`, weighs it against the
outcome) on:

* **the first wrong step and everything after it**, with ``error_propagation`` (default, the
  paper's best variant): once a step is wrong, nothing built on it earns local credit, not even
  the correct-looking arithmetic that follows;
* each wrong step alone, without it;
* **the whole completion** when no final answer can be found: there is nothing to credit.

Correct and uncheckable steps and the prose around them carry no local signal (``l = 0``):
they earn exactly the outcome, +1 or -1. A step is "wrong" when the exact check of
:mod:`.steps` says so; the answer's correctness is the outcome's business, not the local one's.
"""
from __future__ import annotations

from collections.abc import Iterable

from botgrpo.reward_server.scorers.base import SpanScore

from .steps import Step

BLAME = -1.0


def step_blame(steps: Iterable[Step], length: int, error_propagation: bool = True) -> list[SpanScore]:
    """Local spans for a completion of ``length`` characters whose checked ``steps`` are given."""
    wrong = [step for step in steps if step.ok is False]
    if not wrong:
        return []
    if error_propagation:
        return [SpanScore(wrong[0].start, length, BLAME)]
    return [SpanScore(step.start, step.end, BLAME) for step in wrong]
