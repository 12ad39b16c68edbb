"""Single-process back end: a fair backlog drained by worker tasks in the server's own loop.

Used when no ``REDIS_URL`` is configured (development, single-box deployments). It has the same
contract as the Redis back end, so the server cannot tell them apart: batching for the handler,
per-item error isolation, exactly-once streaming of outcomes, and backpressure via ``max_depth``.

Two rules keep one client from costing the others (see :mod:`.fair` for the first):

* **fair**: workers serve clients round-robin (each client's requests in order), so a
  request's wait does not grow with the backlog other clients queued before it, nor with how
  many requests they keep sending;
* **bounded while unread**: an item counts toward ``max_depth`` from ``submit`` until its
  outcome is *read* by ``results()`` (not merely scored), and a batch whose unread outcomes weigh
  ``max_unsent`` or more (``weigh``: 1 per outcome by default; the server counts tokens) gets no
  more worker time until its reader catches up. A client that stops reading its stream therefore
  stops its own scoring and holds at most about ``max_unsent`` of results in memory; when its
  reader leaves, the batch's waiting items are dropped.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from botgrpo.services.queue.base import Handler, Outcome, OutcomeCollector, WorkItem, check_admission
from botgrpo.services.queue.fair import FairBacklog
from botgrpo.services.queue.scoring import score_items

log = logging.getLogger(__name__)


@dataclass
class _Inbox:
    """Outcomes of one batch, buffered until (and while) its ``results()`` reader consumes them.

    Outcomes can finish before the server starts reading, so the inbox exists from ``submit``.
    """

    created: float = field(default_factory=time.monotonic)
    outcomes: asyncio.Queue[Outcome] = field(default_factory=asyncio.Queue)
    has_reader: bool = False
    owed: int = 0  # items submitted whose outcome has not been read: they count toward max_depth
    unsent: int = 0  # the weight of the outcomes waiting in ``outcomes``


class InProcessQueue:
    """``RolloutQueue`` backed by ``workers`` asyncio tasks calling ``handler`` in-process.

    Each worker takes up to ``max_batch`` waiting items of one batch at once so the handler can
    batch them (fewer while other batches wait, see :mod:`.fair`). Inboxes of batches nobody
    reads are dropped after ``result_ttl_s`` so they cannot leak.
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
        max_unsent: int = 64,
        weigh: Callable[[Outcome], int] = lambda outcome: 1,
        chunk_s: float = 0.5,
    ) -> None:
        if workers < 1 or max_batch < 1 or max_depth < 1 or max_unsent < 1:
            raise ValueError("workers, max_batch, max_depth and max_unsent must all be >= 1")
        self._handler = handler
        self._n_workers = workers
        self._max_depth = max_depth
        self._max_batch = max_batch
        self._retry_after_s = retry_after_s
        self._result_ttl_s = result_ttl_s
        self._max_unsent = max_unsent
        self._weigh = weigh
        self._backlog = FairBacklog(chunk_s)
        self._wakeup = asyncio.Event()  # set when work is added or a reader frees room
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
            self._inboxes.setdefault(item.batch, _Inbox()).owed += 1
        self._backlog.add(items)
        self._depth += len(items)
        self._wakeup.set()

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
                self._read(inbox, outcome)
                if collector.accept(outcome):
                    yield outcome
            for outcome in collector.time_out_rest():
                yield outcome
        finally:
            # The reader is done (or gone): outcomes that finish later have nowhere to go, its
            # waiting items are dropped and nothing of the batch counts toward max_depth.
            self._forget(batch)

    def _read(self, inbox: _Inbox, outcome: Outcome) -> None:
        """``outcome`` left the inbox: it no longer counts toward max_depth nor the unsent weight."""
        inbox.unsent -= self._weight(outcome)
        if inbox.owed > 0:
            inbox.owed -= 1
            self._depth -= 1
        self._wakeup.set()

    def _forget(self, batch: str) -> None:
        inbox = self._inboxes.pop(batch, None)
        self._backlog.drop(batch)
        if inbox is not None:
            self._depth -= inbox.owed
            inbox.owed = 0
        self._wakeup.set()

    def _weight(self, outcome: Outcome) -> int:
        try:
            return max(1, int(self._weigh(outcome)))
        except Exception:  # noqa: BLE001 - a weight is an estimate; an odd result weighs 1
            return 1

    async def depth(self) -> int:
        return self._depth

    async def healthy(self) -> bool:
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    async def _work_loop(self) -> None:
        while True:
            items = await self._take_batch()
            started = time.monotonic()
            scored = await score_items(self._handler, items)
            self._backlog.record(items[0].batch, len(items), time.monotonic() - started)
            for item, verdict in zip(items, scored):
                self._deliver(Outcome(item.batch, item.index, verdict.result, verdict.error))

    def _ready(self, batch: str) -> bool:
        """A batch gets worker time while its unread outcomes weigh less than ``max_unsent``."""
        inbox = self._inboxes.get(batch)
        return inbox is None or inbox.unsent < self._max_unsent

    async def _take_batch(self) -> list[WorkItem]:
        """Wait until some batch is ready, then take up to ``max_batch`` of its items (fairly)."""
        while True:
            self._wakeup.clear()
            items = self._backlog.take(self._max_batch, self._ready)
            if items:
                if len(self._backlog):
                    self._wakeup.set()  # more work: let an idle worker look too
                return items
            await self._wakeup.wait()

    def _deliver(self, outcome: Outcome) -> None:
        inbox = self._inboxes.get(outcome.batch)
        if inbox is None:
            log.debug("dropping outcome for %s[%d]: no reader", outcome.batch, outcome.index)
            return
        inbox.unsent += self._weight(outcome)
        inbox.outcomes.put_nowait(outcome)

    def _drop_stale_inboxes(self) -> None:
        cutoff = time.monotonic() - self._result_ttl_s
        stale = [b for b, box in self._inboxes.items() if not box.has_reader and box.created < cutoff]
        for batch in stale:
            self._forget(batch)
