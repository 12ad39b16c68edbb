"""Rewards for a rollout batch from the reward server, scored in the background.

``RewardSource.submit`` sends the batch through the streaming client on a worker thread and
returns a future at once (a :class:`StreamedScores`), so the trainer computes log-probs (or
anything else) while the server scores. Results land in it one rollout at a time, as the server
streams them; :meth:`StreamedScores.next_groups` hands out each group once all its rollouts are
in (the group-streamed update starts on those), ``result()`` is the whole batch. The policy's
own tokens go as ``token_offsets``, so the server's token scores line up with the trainer's
tokens one to one. A rollout the server could not score (a result with
``error``, not ``ok``) is marked unscored: NaN sequence reward, no token rewards, and the loop leaves it out
of the loss rather than punish the policy for the server's failure.

The trainer reaches a reward server only through :mod:`botgrpo.services.client`; a server in
this process, for one-machine runs, is composed above it (:mod:`botgrpo.embedded`).
"""
from __future__ import annotations

import math
import queue
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from botgrpo.services.client import RewardClient
from botgrpo.services.schemas import Result
from botgrpo.trainer.rollout.alignment import scores_to_tensor
from botgrpo.trainer.rollout.base import RolloutBatch


@dataclass
class ScoredBatch:
    token_rewards: torch.Tensor   # (B, T)
    seq_rewards: torch.Tensor     # (B,) NaN where unscored
    passed: torch.Tensor          # (B,) float: 1 passed, 0 failed, nan unknown
    spec_passed: torch.Tensor     # (B,) float: 1, 0, nan where no spec applies
    scored: torch.Tensor          # (B,) bool: False where the server could not score (result with `error`)
    seconds: float
    component: Optional[torch.Tensor] = None   # (B,) float: 1 declares the spec's component, 0 not, nan: no such check
    details: Optional[list] = None   # (B,) each result's ``details`` (``{}`` until delivered), with ``error`` if any

    @property
    def errors(self) -> int:
        return int((~self.scored).sum())


def _flag(value: Optional[bool]) -> float:
    return math.nan if value is None else float(bool(value))


class StreamedScores(Future):
    """A batch's scores, filled in one rollout at a time by the thread that receives them.

    A ``Future`` of the whole :class:`ScoredBatch` (``result()``), and also a stream of groups:
    :meth:`next_groups` returns the groups completed since the last call (every rollout of group
    ``g`` = rows ``g*G .. g*G+G-1`` delivered), in the order they completed; the rows of a group
    it has returned are final in :attr:`partial`. A delivery error (a bad result, the stream
    failing) fails the future and every waiter.
    """

    def __init__(self, mask: torch.Tensor, group_size: int, background: bool = False):
        super().__init__()
        self.background = background  # filled by another thread: how soon it is done is timing, not data
        B, _ = mask.shape
        if B % group_size:
            raise ValueError(f"{B} rollouts are not whole groups of {group_size}")
        self.mask, self.group_size = mask, group_size
        nan = torch.full((B,), math.nan)
        self.partial = ScoredBatch(torch.zeros(mask.shape, dtype=torch.float32), nan.clone(), nan.clone(),
                                   nan.clone(), torch.zeros(B, dtype=torch.bool), 0.0, nan.clone(), [{}] * B)
        self.num_groups = B // group_size
        self._missing = [group_size] * self.num_groups
        self._seen = torch.zeros(B, dtype=torch.bool)
        self._completed: "queue.SimpleQueue[Optional[int]]" = queue.SimpleQueue()  # None: all in, or failed
        self._started = time.perf_counter()
        if B == 0:
            self._finish()

    def deliver(self, row: int, result: Result) -> None:
        """Row ``row``'s server result. Called by one thread; raises (and fails the batch) on a
        result that does not fit."""
        try:
            if self._seen[row]:
                raise ValueError(f"rollout {row} was delivered twice")
            p, scored = self.partial, result.ok
            if scored:
                # in the recipe's units (the wire's map divided out): bot_grpo's min_std is a floor in them
                p.token_rewards[row] = scores_to_tensor([result.rewards()], self.mask[row:row + 1], first=row)[0]
                p.seq_rewards[row] = result.score
            details = result.details
            p.details[row] = details if scored else {**details, "error": result.error}
            p.passed[row] = _flag(result.passed)
            p.spec_passed[row] = _flag(details.get("spec_passed"))
            p.component[row] = _flag(details.get("component_declared"))
            p.scored[row] = scored
            self._seen[row] = True
        except Exception as error:
            self.fail(error)
            raise
        group = row // self.group_size
        self._missing[group] -= 1
        if not self._missing[group]:
            self._completed.put(group)
        if bool(self._seen.all()):
            self._finish()

    def fail(self, error: BaseException) -> None:
        if not self.done():
            self.set_exception(error)
            self._completed.put(None)

    def _finish(self) -> None:
        self.partial.seconds = time.perf_counter() - self._started
        self.set_result(self.partial)
        self._completed.put(None)

    def next_groups(self, timeout: Optional[float] = None) -> list[int]:
        """The groups completed since the last call, waiting for one if none is; ``[]`` once all
        are in (and returned). Raises the delivery error once the batch has failed."""
        groups: list[int] = []
        item = self._completed.get(timeout=timeout)
        while True:
            if item is None:
                self._completed.put(None)  # stays the end marker for later calls
                if self.exception() is not None:
                    raise self.exception()
                return groups
            groups.append(item)
            try:
                item = self._completed.get_nowait()
            except queue.Empty:
                return groups


class RewardSource:
    """Scores rollout batches on ``url`` for ``task`` in a background thread."""

    def __init__(self, url: str, task: str, options: Optional[dict[str, Any]] = None, api_key: Optional[str] = None):
        self.task, self.options = task, dict(options or {})
        self.client = RewardClient(url, api_key=api_key)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rewards")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()

    def submit(self, batch: RolloutBatch, references: Sequence[Optional[dict]],
               options: Optional[dict[str, Any]] = None) -> "Future[ScoredBatch]":
        """Start scoring ``batch``; ``references[j]`` belongs to prompt ``j``. ``options``
        override the source's scorer options for this batch (e.g. another compile level)."""
        rollouts = [{"id": str(i), "group": str(i // batch.group_size), "completion": text,
                     "token_offsets": [list(s) for s in spans], "reference": references[i // batch.group_size],
                     "finish_reason": "length" if cut else "stop"}
                    for i, (text, spans, cut) in enumerate(zip(batch.texts, batch.spans, batch.truncated.tolist()))]
        scores = StreamedScores(batch.completion_mask, batch.group_size, background=True)
        self._pool.submit(self._stream, rollouts, scores, {**self.options, **(options or {})})
        return scores

    def _stream(self, rollouts: list[dict], scores: StreamedScores, options: dict[str, Any]) -> None:
        """Each result into ``scores`` as the server streams it (``RewardClient.stream``: every id
        once, a broken stream resumed); any failure fails ``scores``."""
        try:
            for result in self.client.stream(self.task, rollouts, options):
                scores.deliver(int(result.id), result)
            if not scores.done():
                raise RuntimeError("the reward stream ended before every rollout was scored")
        except BaseException as error:
            scores.fail(error)
