"""Single-process back end: an asyncio queue drained by worker tasks in the server's own loop.

Used when no ``REDIS_URL`` is configured (development, single-box deployments). It has the same
contract as the Redis back end, so the server cannot tell them apart: batching for the handler,
per-item error isolation, exactly-once streaming of outcomes, and backpressure via ``max_depth``.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from .base import Handler, Outcome, OutcomeCollector, WorkItem, check_admission
from .scoring import score_items

log = logging.getLogger(__name__)


@dataclass
class _Inbox:
    """Outcomes of one batch, buffered until (and while) its ``results()`` reader consumes them.

    Outcomes can finish before the server starts reading, so the inbox exists from ``submit``.
    """

    created: float = field(default_factory=time.monotonic)
    outcomes: asyncio.Queue[Outcome] = field(default_factory=asyncio.Queue)
    has_reader: bool = False


class InProcessQueue:
    """``RolloutQueue`` backed by ``workers`` asyncio tasks calling ``handler`` in-process.

    Each worker takes up to ``max_batch`` waiting items at once so the handler can batch them.
    Inboxes of batches nobody reads are dropped after ``result_ttl_s`` so they cannot leak.
    """

    def __init__(
        self,
        handler: Handler,
        workers: int = 2,
        max_depth: int = 10_000,
        max_batch: int = 32,
        *,
        retry_after_s: float = 1.0,
        result_ttl_s: float = 3600.0,
    ) -> None:
        if workers < 1 or max_batch < 1 or max_depth < 1:
            raise ValueError("workers, max_batch and max_depth must all be >= 1")
        self._handler = handler
        self._n_workers = workers
        self._max_depth = max_depth
        self._max_batch = max_batch
        self._retry_after_s = retry_after_s
        self._result_ttl_s = result_ttl_s
        self._pending: asyncio.Queue[WorkItem] = asyncio.Queue()
        self._inboxes: dict[str, _Inbox] = {}
        self._depth = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._work_loop(), name=f"rollout-worker-{i}")
            for i in range(self._n_workers)
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def submit(self, items: list[WorkItem]) -> None:
        check_admission(self._depth, len(items), self._max_depth, self._retry_after_s)
        self._drop_stale_inboxes()
        for item in items:
            self._inboxes.setdefault(item.batch, _Inbox())
            self._pending.put_nowait(item)
        self._depth += len(items)

    async def results(self, batch: str, count: int, timeout_s: float) -> AsyncIterator[Outcome]:
        inbox = self._inboxes.setdefault(batch, _Inbox())
        inbox.has_reader = True
        collector = OutcomeCollector(batch, count)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            while not collector.done:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    outcome = await asyncio.wait_for(inbox.outcomes.get(), remaining)
                except asyncio.TimeoutError:
                    break
                if collector.accept(outcome):
                    yield outcome
            for outcome in collector.time_out_rest():
                yield outcome
        finally:
            # Outcomes that finish after the reader is gone have nowhere to go; drop them.
            self._inboxes.pop(batch, None)

    async def depth(self) -> int:
        return self._depth

    async def healthy(self) -> bool:
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    async def _work_loop(self) -> None:
        while True:
            items = await self._take_batch()
            scored = await score_items(self._handler, items)
            for item, verdict in zip(items, scored):
                self._deliver(Outcome(item.batch, item.index, verdict.result, verdict.error))
            self._depth -= len(items)

    async def _take_batch(self) -> list[WorkItem]:
        """Wait for one item, then take whatever else is already waiting, up to ``max_batch``."""
        items = [await self._pending.get()]
        while len(items) < self._max_batch and not self._pending.empty():
            items.append(self._pending.get_nowait())
        return items

    def _deliver(self, outcome: Outcome) -> None:
        inbox = self._inboxes.get(outcome.batch)
        if inbox is None:
            log.debug("dropping outcome for %s[%d]: no reader", outcome.batch, outcome.index)
            return
        inbox.outcomes.put_nowait(outcome)

    def _drop_stale_inboxes(self) -> None:
        cutoff = time.monotonic() - self._result_ttl_s
        stale = [b for b, box in self._inboxes.items() if not box.has_reader and box.created < cutoff]
        for batch in stale:
            del self._inboxes[batch]
