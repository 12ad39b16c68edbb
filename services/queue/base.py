"""The queue's vocabulary: work items, outcomes, the handler contract and the server-facing protocol.

Both back ends (in-process and Redis) speak exactly these types, so the reward server is written
once against :class:`RolloutQueue` and the choice of back end is a deployment detail.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from botgrpo.services.schemas import Result

TIMED_OUT = "timed out waiting for a worker"


@dataclass(frozen=True)
class WorkItem:
    """One rollout to score. ``payload`` is opaque to the queue; only the handler reads it.

    ``client`` names who sent it (the server decides how: docs/security.md); the queues share
    their workers fairly between clients, whatever the number of requests each sends
    (:mod:`.fair`). Items of one batch share one client.
    """

    batch: str
    index: int
    payload: dict[str, Any]
    client: str = ""


@dataclass(frozen=True)
class Outcome:
    """The final word on one item: a result, or ``result=None`` plus the reason it failed for good."""

    batch: str
    index: int
    result: Result | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Handler = Callable[[list[WorkItem]], Awaitable[list[Result]]]
"""Scores a batch of items and returns one :class:`Result` per item, in order. May raise."""


class QueueFull(Exception):
    """Raised by ``submit`` instead of letting the backlog grow without bound.

    ``retry_after_s`` is a hint for the HTTP layer (a ``Retry-After`` header on a 503/429).
    """

    def __init__(self, depth: int, max_depth: int, retry_after_s: float) -> None:
        super().__init__(
            f"queue full: {depth} items waiting (max_depth={max_depth}); retry in {retry_after_s:g}s"
        )
        self.depth = depth
        self.max_depth = max_depth
        self.retry_after_s = retry_after_s


@runtime_checkable
class RolloutQueue(Protocol):
    """What the reward server needs from a queue back end."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def submit(self, items: list[WorkItem]) -> None:
        """Enqueue ``items`` all-or-nothing; raise :class:`QueueFull` when over ``max_depth``."""

    def results(self, batch: str, count: int, timeout_s: float) -> AsyncIterator[Outcome]:
        """Yield every index ``0..count-1`` of ``batch`` exactly once, in completion order.

        Indexes still missing after ``timeout_s`` are yielded as ``Outcome(error=TIMED_OUT)``.
        """

    async def depth(self) -> int:
        """Items submitted and not yet finished."""

    async def healthy(self) -> bool: ...


def reject_oversized(incoming: int, max_depth: int) -> None:
    """A submission larger than ``max_depth`` could never be admitted, so it is a caller error
    (``ValueError``) rather than a ``QueueFull`` that would invite endless retries."""
    if incoming > max_depth:
        raise ValueError(f"a submission of {incoming} items can never fit max_depth={max_depth}")


def check_admission(depth: int, incoming: int, max_depth: int, retry_after_s: float) -> None:
    """Shared backpressure rule: admit a submission only if the backlog stays within ``max_depth``."""
    reject_oversized(incoming, max_depth)
    if depth + incoming > max_depth:
        raise QueueFull(depth, max_depth, retry_after_s)


class OutcomeCollector:
    """Turns an at-least-once stream of outcomes into exactly-once delivery for one batch.

    Back ends may see the same index twice (a reclaimed item rescored by a second worker) or
    not at all (every worker gone); this keeps the bookkeeping of which indexes are still owed.
    """

    def __init__(self, batch: str, count: int) -> None:
        self.batch = batch
        self._missing = set(range(count))

    @property
    def done(self) -> bool:
        return not self._missing

    def accept(self, outcome: Outcome) -> bool:
        """True the first time an in-range index is seen; False for duplicates and strays."""
        if outcome.batch != self.batch or outcome.index not in self._missing:
            return False
        self._missing.discard(outcome.index)
        return True

    def time_out_rest(self) -> list[Outcome]:
        """Error outcomes for every index still owed, which are then considered delivered."""
        rest = [Outcome(self.batch, i, None, TIMED_OUT) for i in sorted(self._missing)]
        self._missing.clear()
        return rest
