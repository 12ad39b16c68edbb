"""The group-streamed update: the on-policy step's backward starts on the first scored groups.

Every advantage estimator here normalises within a group, so a group's advantages are final
as soon as its G rollouts are scored; so are its shaping (the overlong penalty is per rollout,
dynamic sampling drops a whole group or keeps it) and its rows of the loss mask. The loop
therefore takes the groups as they complete (:meth:`botgrpo.trainer.rewards.StreamedScores.next_groups`,
fed by the reward server's NDJSON stream as results finish), a few at a time in index order
(:func:`scored_parts`, :func:`parts_of`), computes their advantages with the same estimator call
restricted to their rows, and adds their forward and backward to one
:class:`botgrpo.trainer.run.update.Update` while the rest of the batch is still being scored; the
optimizer steps once, when the last group is in. A batch update is the same sequence with one
part, every group, taken once the whole result is in. The resulting parameters equal the batch
update's to float tolerance (``tests/test_streamed_update.py``).

Where that equality would not hold (or needs more than this), the step takes one part
(:func:`streamable` says why): more than one optimizer pass per batch, the asynchronous
pipeline, more than one process (DDP's backward is a collective: every rank would need the same
number of them), an estimator not known to be group-local, an aggregation whose normaliser is
not covered, a reward source whose futures do not stream, or one that had every score ready
when the batch was submitted (an in-process scorer: nothing to hide, and one whole-batch
layout needs fewer forwards than the parts). A source that scores on another thread (the
reward server) always streams, however soon its scores come: which path a step takes must not
depend on timing, or a resumed run would not repeat the straight one bit for bit.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from botgrpo.trainer.rewards import ScoredBatch
from botgrpo.trainer.run.tracking import Stopwatch
from botgrpo.trainer.run.update import STREAMABLE_AGGREGATIONS

# Estimators whose advantage for a row depends only on its own group's rows (segment reductions
# per group id, per-row transforms): computing them on a few whole groups gives the batch's
# values for those rows (checked for each, with its options, in tests/test_streamed_update.py).
# An estimator registered elsewhere is not assumed to be: its steps take the batch path.
GROUP_LOCAL_ESTIMATORS = frozenset({"bot_grpo", "bot_grpo_paper", "grpo", "dr_grpo", "rloo", "pure", "prime", "decoupled"})

# A batch is updated in at most this many parts (consecutive groups each): what is left after
# the last score is one part's update, and a batch of many small groups does not pay a
# forward per group (each forward has a fixed cost, large against a small group's rows).
MAX_PARTS = 8


def streamable(cfg, algo, world: int, pending: Any) -> Optional[str]:
    """``None`` when this step's update can be group-streamed exactly, else why it cannot."""
    if not cfg.optim.streamed_update:
        return "streamed_update is off"
    if cfg.rollout.async_steps:
        return "async_steps: the batch was scored during the previous step"
    if cfg.optim.num_iterations != 1:
        return "num_iterations > 1: every pass needs the whole batch"
    if world > 1:
        return "more than one rank: DDP needs as many backwards on every rank"
    if algo.estimator not in GROUP_LOCAL_ESTIMATORS:
        return f"estimator {algo.estimator!r} is not known to be group-local"
    if algo.aggregation not in STREAMABLE_AGGREGATIONS:
        return f"aggregation {algo.aggregation!r} has no streamed normaliser"
    if not hasattr(pending, "next_groups"):
        return "the reward source does not stream its results"
    if pending.done() and not getattr(pending, "background", False):
        return "every score is in already: one pass over the whole batch costs fewer forwards"
    return None


def parts_of(num_groups: int, max_parts: int = MAX_PARTS) -> list[list[int]]:
    """Consecutive groups, ``ceil(num_groups / max_parts)`` a part (the last may hold fewer)."""
    per = max(1, -(-num_groups // max_parts))
    return [list(range(s, min(s + per, num_groups))) for s in range(0, num_groups, per)]


def group_rows(groups: list[int], group_size: int) -> list[int]:
    """The batch rows of ``groups`` (rows ``g*G .. g*G+G-1``), groups in ascending order."""
    return [g * group_size + k for g in sorted(groups) for k in range(group_size)]


def scored_parts(pending, num_groups: int, streamed: bool,
                 clock: Stopwatch) -> Iterator[tuple[list[int], ScoredBatch]]:
    """The step's groups in the parts its update takes, each with the scores to shape it from, as
    soon as they are in: ``streamed``, :func:`parts_of` the groups **in index order** (part k waits
    for part k-1's scores) as ``pending``'s groups complete; otherwise one part holding every
    group, once the whole result is in. Seconds blocked on scores go to ``clock``'s ``score_wait``.

    The parts are fixed, so the computation, and the resulting weights bit for bit, do not depend
    on the order or timing in which scores arrive (a run, and its resume, reproduce).
    """
    if not streamed:
        with clock.lap("score_wait"):
            scored = pending.result()
        yield list(range(num_groups)), scored
        return
    arrived: set[int] = set()
    for part in parts_of(num_groups):
        while not arrived.issuperset(part):
            with clock.lap("score_wait"):
                groups = pending.next_groups()
            if not groups:
                raise RuntimeError(f"the scores ended without groups {sorted(set(part) - arrived)}")
            arrived.update(groups)
        yield part, pending.partial
