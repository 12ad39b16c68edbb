"""The local signal of a math verdict: where in the completion the reasoning broke.

``l = -1`` (the reward recipe, :mod:`botgrpo.services.recipe`, weighs it against the
outcome) on:

* **the first step that is not verified right and everything after it**, with
  ``error_propagation`` (default, the paper's best variant): once a step is wrong, or is
  arithmetic the check cannot value (``ok=None``: beyond the evaluator's bounds, a division by
  zero), nothing built on it earns local credit, not even the correct-looking arithmetic that
  follows;
* each such step alone, without it;
* **the whole completion** when no final answer can be found: there is nothing to credit.

Verified steps and the prose around them carry no local signal (``l = 0``): they earn exactly
the outcome, +1 or -1. An unverified step is blamed like a wrong one so that hiding the working
never earns more local credit than showing it: a wrong step written where the check cannot value
it (``2^{2000} - 2^{2000} + 5 = 6``) would otherwise be credited as if it were right. The same
step written in words, with a relation word or in full-width characters is read as written with
signs (:func:`.steps.read_line`). What the reader does not recognise as a step at all (number
words, free prose) carries no local signal: the local signal is not decided there. The answer's
correctness is the outcome's business, not the local one's.

Registry :data:`LOCAL_SIGNALS`, chosen by the math scorer's ``local`` option:

``steps`` (default)
    The above (:func:`step_blame`), from the steps' own arithmetic.
``oracle``
    The step-chain study's upper bound (:func:`oracle_blame`): exactly the first line that
    differs from the reference's ``chain`` of correct step lines. Falls back to ``steps`` for a
    reference without a ``chain`` (a list of strings).

Neither signal blames what the token limit cut: in a completion cut off by the cap
(``truncated``) the line the cut fell in was never finished, so it is no mistake of the policy's
(a chain stopped inside ``x = 19 - 3 = 1`` would otherwise be blamed for a wrong result it never
wrote). ``steps`` drops a step that runs into the cut; ``oracle`` judges complete lines only, and
a completion whose complete lines are all right gets no local blame (the outcome still counts).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from botgrpo.reward_server.math.steps import Step
from botgrpo.reward_server.scorers.base import SpanScore

BLAME = -1.0


def step_blame(steps: Iterable[Step], length: int, error_propagation: bool = True) -> list[SpanScore]:
    """Local spans for a completion of ``length`` characters whose checked ``steps`` are given:
    blame on every step not verified right (``ok`` False or None), from the first one on with
    ``error_propagation``."""
    unverified = [step for step in steps if step.ok is not True]
    if not unverified:
        return []
    if error_propagation:
        return [SpanScore(unverified[0].start, length, BLAME)]
    return [SpanScore(step.start, step.end, BLAME) for step in unverified]


def oracle_blame(completion: str, chain: Sequence[str], truncated: bool = False) -> list[SpanScore]:
    """The exact first wrong step of a step-chain completion (``botgrpo.trainer.tasks.chain``):
    ``l = -1`` on the first line of ``completion`` that differs (spaces ignored) from the
    reference's ``chain`` of correct step lines, and nowhere else. When every step line is right
    the blame is on what follows them (a wrong or missing answer), unless that is exactly
    ``The answer is \\boxed{<last value>}.``; a completion that ended (its end token) before the
    chain did is blamed on its last line (where it stopped). Unlike :func:`step_blame` it sees
    mistakes whose arithmetic is right (a digit or operator other than the prompt's) and blames no
    later line.

    ``truncated`` (cut off by the token limit): only complete lines are judged. The line the cut
    fell in is never blamed, and running out of lines is the cap's doing: no blame."""
    lines, offsets, position = completion.split("\n"), [], 0
    for line in lines:
        offsets.append((position, position + len(line)))
        position += len(line) + 1
    complete = len(lines) - 1 if truncated else len(lines)   # the cut line is not a line written
    for index, expected in enumerate(chain):
        if index >= complete:
            if truncated:  # the cap stopped it, not a mistake
                return []
            start, end = offsets[-1]  # stopped early: its last line is where it broke off
            return [SpanScore(start, end, BLAME)]
        if _squash(lines[index]) != _squash(expected):
            start, end = offsets[index]
            return [SpanScore(start, max(end, start + 1), BLAME)]
    final = expected_answer_line(chain)
    start = offsets[len(chain)][0] if len(chain) < len(lines) else len(completion)
    end = offsets[complete - 1][1] if truncated and complete > len(chain) else len(completion)
    if truncated and complete <= len(chain):   # the cut fell in the answer line: nothing after the chain to judge
        return []
    if _squash(completion[start:end]) == _squash(final):
        return []
    return [SpanScore(min(start, max(end - 1, 0)), end, BLAME)] if end else []


def expected_answer_line(chain: Sequence[str]) -> str:
    """The answer line that ends a correct chain: the last step's value, boxed."""
    last = chain[-1].rsplit("=", 1)[1].strip() if chain else ""
    return f"The answer is \\boxed{{{last}}}."


def _squash(text: str) -> str:
    return "".join(text.split())


@dataclass(frozen=True)
class BlameInput:
    """What a local signal may read about one judged rollout."""

    steps: tuple[Step, ...]
    completion: str
    reference: Mapping[str, Any]
    error_propagation: bool = True
    truncated: bool = False   # cut off by the token limit, not ended by the policy


def _complete_steps(case: BlameInput) -> tuple[Step, ...]:
    """The steps of ``case`` the policy finished: in a truncated completion, not one that runs into
    the cut (its last number may be cut short: ``= 1`` of ``= 18``)."""
    if not case.truncated:
        return case.steps
    end = len(case.completion.rstrip())
    return tuple(step for step in case.steps if step.end < end)


def _steps_signal(case: BlameInput) -> list[SpanScore]:
    return step_blame(_complete_steps(case), len(case.completion), case.error_propagation)


def _oracle_signal(case: BlameInput) -> list[SpanScore]:
    chain = case.reference.get("chain")
    if isinstance(chain, list) and chain and all(isinstance(line, str) for line in chain):
        return oracle_blame(case.completion, chain, case.truncated)
    return _steps_signal(case)


LOCAL_SIGNALS: dict[str, Callable[[BlameInput], list[SpanScore]]] = {"steps": _steps_signal, "oracle": _oracle_signal}
