"""Turn a math verdict into character-span scores (the token-level reward).

The scheme, for a completion whose final answer is correct / wrong / missing:

=====================  =========  =======  =========
region                  correct    wrong    no answer
=====================  =========  =======  =========
neutral text (default)   +0.1      -0.1      -1.0
correct step             +0.5       0.0      -1.0
uncheckable step         (neutral)  (neutral) -1.0
wrong step               -0.5      -1.0      -1.0
final answer span        +1.0      -1.0       --
=====================  =========  =======  =========

Why these numbers:

* the answer span carries the outcome (+1 / -1), so the tokens that decide the reward get it
  in full;
* within a completion a correct step scores above neutral text and a wrong step scores lowest,
  so blame lands on the line where the reasoning broke, not spread over the prose;
* every token of a wrong completion (at most 0.0, a correct step) scores below every token of a
  correct completion that is not itself a wrong step (at least +0.1), so no token is rewarded
  more for sitting in a failed completion;
* a completion with no extractable answer gets -1 everywhere: there is nothing to credit.

All values are finite and inside [-1, 1]; where spans overlap the lowest wins (the contract in
:mod:`reward_server.scorers.base`).
"""
from __future__ import annotations

from collections.abc import Iterable

from reward_server.scorers.base import SpanScore

from .extract import Extraction
from .steps import Step

NO_ANSWER = -1.0
NEUTRAL = {True: 0.1, False: -0.1}
CORRECT_STEP = {True: 0.5, False: 0.0}
WRONG_STEP = {True: -0.5, False: -1.0}
ANSWER = {True: 1.0, False: -1.0}


def span_scores(
    correct: bool, answer: Extraction, steps: Iterable[Step]
) -> tuple[list[SpanScore], float]:
    """``(spans, default)`` for a completion whose ``answer`` was judged ``correct`` or not."""
    spans = [
        SpanScore(step.start, step.end, CORRECT_STEP[correct] if step.ok else WRONG_STEP[correct])
        for step in steps
        if step.ok is not None
    ]
    spans.append(SpanScore(answer.start, answer.end, ANSWER[correct]))
    return spans, NEUTRAL[correct]


def no_answer_scores() -> tuple[list[SpanScore], float]:
    """A completion without an answer is blamed throughout."""
    return [], NO_ANSWER
