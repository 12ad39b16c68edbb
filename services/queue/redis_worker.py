"""Consuming side of the Redis back end: a worker process scoring items from the consumer group.

Delivery is at-least-once and the result stream is the unit of idempotency:

1. A take (:data:`.redis_streams.TAKE_SCRIPT`) moves the next items of the client whose turn it
   is into the work stream and reads them into this worker's pending list (PEL), in one atomic
   step: the rules of :mod:`.fair` (clients in turn, each client's requests in order, takes of
   about ``chunk_s`` seconds of work), applied in Redis for every worker at once. With nothing
   waiting the worker blocks on the wake-up list until a submission arrives.
2. The handler scores them (a failed batch is retried item by item, see :mod:`.scoring`), and
   the take's seconds per item are recorded for the client's next take.
3. One MULTI/EXEC publishes the outcomes and XACKs + XDELs the entries, so an item is never
   both finished and still queued. Deleting finished entries keeps ``XLEN`` equal to the work
   in hand without ever trimming unconsumed work.

If a worker dies between 1 and 3, its entries go idle in the PEL; every worker periodically
``XAUTOCLAIM``s entries idle longer than ``claim_idle_ms`` and rescores them. A slow (not dead)
worker may therefore publish the same index twice; ``results()`` deduplicates by index.
``claim_idle_ms`` must comfortably exceed the longest handler call, or work is needlessly redone.

Each claim bumps the entry's delivery count. An entry delivered more than ``max_attempts`` times
(it keeps killing workers), or whose handler call fails on its last allowed attempt, goes to the
dead-letter stream and gets an error outcome, so the client hears about it instead of timing out.
Handler failures on earlier attempts leave the entry pending, to be retried after
``claim_idle_ms`` by whichever worker claims it (possibly on a healthier host).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from botgrpo.services.queue.backoff import Backoff, sleep_unless_stopped
from botgrpo.services.queue.base import Handler, Outcome, WorkItem
from botgrpo.services.queue.redis_streams import (
                                                  DEFAULT_DEAD_STREAM,
                                                  DEFAULT_GROUP,
                                                  DEFAULT_STREAM,
                                                  RECORD_SCRIPT,
                                                  RESULTS_PREFIX,
                                                  TAKE_SCRIPT,
                                                  TRANSIENT_ERRORS,
                                                  MalformedEntry,
                                                  QueueKeys,
                                                  connect,
                                                  decode_item,
                                                  encode_outcome,
                                                  ensure_group,
                                                  is_missing_group,
                                                  result_key,
                                                  )
from botgrpo.services.queue.scoring import score_items

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Delivery:
    """A work entry as handed to this worker, with how many times it has been delivered so far."""

    entry_id: str
    fields: dict[str, str]
    attempts: int


@dataclass
class _Commit:
    """Everything a processed batch writes back, applied atomically by :meth:`RedisWorker._write`."""

    outcomes: list[Outcome] = field(default_factory=list)
    dead: list[dict[str, str]] = field(default_factory=list)
    done_ids: list[str] = field(default_factory=list)

    def finish(self, delivery: _Delivery, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.done_ids.append(delivery.entry_id)

    def bury(self, delivery: _Delivery, item: WorkItem | None, error: str, consumer: str) -> None:
        """Dead-letter the entry and, when we know whom it belongs to, tell its client why."""
        self.dead.append(
            {**delivery.fields, "error": error, "attempts": str(delivery.attempts),
             "entry_id": delivery.entry_id, "consumer": consumer}
        )
        if item is not None:
            self.outcomes.append(Outcome(item.batch, item.index, None, error))
        self.done_ids.append(delivery.entry_id)


class RedisWorker:
    """Scores work from ``stream`` as member ``consumer`` of ``group`` until ``run``'s stop event."""

    def __init__(
        self,
        redis_url: str,
        handler: Handler,
        *,
        stream: str = DEFAULT_STREAM,
        group: str = DEFAULT_GROUP,
        consumer: str | None = None,
        batch_size: int = 16,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_attempts: int = 3,
        dead_stream: str = DEFAULT_DEAD_STREAM,
        dead_maxlen: int = 100_000,
        result_ttl_s: int = 3600,
        results_prefix: str = RESULTS_PREFIX,
        chunk_s: float = 0.5,
    ) -> None:
        if batch_size < 1 or max_attempts < 1 or chunk_s <= 0:
            raise ValueError("batch_size and max_attempts must be >= 1, chunk_s > 0")
        self._url = redis_url
        self._handler = handler
        self._keys = QueueKeys(stream)
        self._chunk_s = chunk_s
        self._group = group
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self._batch_size = batch_size
        self._block_ms = block_ms
        self._claim_idle_ms = claim_idle_ms
        self._reclaim_every_s = max(claim_idle_ms / 2000, 0.05)
        self._max_attempts = max_attempts
        self._dead_stream = dead_stream
        self._dead_maxlen = dead_maxlen  # trims only the dead-letter archive, never pending work
        self._result_ttl_s = result_ttl_s
        self._results_prefix = results_prefix
        self._redis: aioredis.Redis | None = None
        self._take_script: AsyncScript | None = None
        self._record_script: AsyncScript | None = None

    @property
    def _client(self) -> aioredis.Redis:
        if self._redis is None:
            raise RuntimeError("RedisWorker is not running")
        return self._redis

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until ``stop`` is set, riding out Redis outages; the batch in hand is finished first."""
        self._redis = connect(self._url, longest_block_s=self._block_ms / 1000)
        self._take_script = self._redis.register_script(TAKE_SCRIPT)
        self._record_script = self._redis.register_script(RECORD_SCRIPT)
        backoff = Backoff()
        try:
            while not stop.is_set():
                try:
                    await ensure_group(self._client, self._keys.stream, self._group)
                    await self._serve(stop, backoff)
                except TRANSIENT_ERRORS as exc:
                    log.warning("%s: Redis unavailable (%s); reconnecting", self.consumer, exc)
                except ResponseError as exc:
                    if is_missing_group(exc):
                        log.warning("%s: consumer group vanished (Redis lost its data?); re-creating",
                                    self.consumer)
                    else:  # e.g. OOM under maxmemory: waiting beats crashing the whole fleet
                        log.error("%s: Redis refused a command (%s); backing off", self.consumer, exc)
                # Reached after an error (``_serve`` only returns once ``stop`` is set).
                await sleep_unless_stopped(stop, backoff.next_delay())
            await self._leave_group()
        finally:
            await self._client.aclose()
            self._redis = None

    async def _serve(self, stop: asyncio.Event, backoff: Backoff) -> None:
        next_reclaim = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_reclaim:
                await self._reclaim_idle(stop)
                next_reclaim = time.monotonic() + self._reclaim_every_s
            deliveries = await self._take()
            backoff.reset()
            if not deliveries:  # nothing waits: sleep until a submission (or the next reclaim)
                await self._client.blpop([self._keys.wake], timeout=self._block_ms / 1000)
                continue
            started = time.monotonic()
            await self._process(deliveries, stop)
            await self._record(deliveries, time.monotonic() - started)

    async def _take(self) -> list[_Delivery]:
        """This worker's next take (:data:`.redis_streams.TAKE_SCRIPT`), already in its PEL."""
        keys = self._keys
        reply = await self._take_script(
            keys=[keys.stream, keys.backlog, keys.clients, keys.clock, keys.cost, keys.wake],
            args=[self._group, self.consumer, self._batch_size, self._chunk_s, keys.waiting_prefix])
        return [_Delivery(eid, _pairs(fields), 1) for _stream, entries in reply or [] for eid, fields in entries]

    async def _record(self, deliveries: list[_Delivery], elapsed_s: float) -> None:
        """The take's seconds per item, for the size of its client's next take."""
        client = deliveries[0].fields.get("client")
        if client is not None:
            await self._record_script(keys=[self._keys.clients, self._keys.cost],
                                      args=[client, len(deliveries), f"{elapsed_s:.6f}"])

    async def _reclaim_idle(self, stop: asyncio.Event) -> None:
        """Take over entries whose consumer has held them too long (presumed dead) and score them."""
        cursor = "0-0"
        while not stop.is_set():
            cursor, claimed, *_ = await self._client.xautoclaim(
                self._keys.stream, self._group, self.consumer,
                min_idle_time=self._claim_idle_ms, start_id=cursor, count=self._batch_size,
            )
            claimed = [(eid, fields) for eid, fields in claimed if eid is not None and fields]
            if claimed:
                log.info("%s: reclaimed %d idle entries", self.consumer, len(claimed))
                attempts = await self._delivery_counts([eid for eid, _ in claimed])
                await self._process([_Delivery(eid, f, attempts.get(eid, 1)) for eid, f in claimed], stop)
            if cursor == "0-0":
                break

    async def _delivery_counts(self, entry_ids: list[str]) -> dict[str, int]:
        pipe = self._client.pipeline(transaction=False)
        for eid in entry_ids:
            pipe.xpending_range(self._keys.stream, self._group, eid, eid, 1)
        counts: dict[str, int] = {}
        for rows in await pipe.execute():
            for row in rows:
                counts[row["message_id"]] = int(row["times_delivered"])
        return counts

    async def _process(self, deliveries: list[_Delivery], stop: asyncio.Event) -> None:
        commit = _Commit()
        to_score: list[tuple[_Delivery, WorkItem]] = []
        for delivery in deliveries:
            try:
                item = decode_item(delivery.fields)
            except MalformedEntry as exc:
                commit.bury(delivery, None, str(exc), self.consumer)
                continue
            if delivery.attempts > self._max_attempts:
                error = (f"dead-lettered: delivered {delivery.attempts} times, more than max_attempts="
                         f"{self._max_attempts}, without finishing (worker crashed or timed out?)")
                commit.bury(delivery, item, error, self.consumer)
            else:
                to_score.append((delivery, item))

        scored = await score_items(self._handler, [item for _, item in to_score])
        for (delivery, item), verdict in zip(to_score, scored):
            if verdict.error is None:
                commit.finish(delivery, Outcome(item.batch, item.index, verdict.result))
            elif delivery.attempts >= self._max_attempts:
                error = f"dead-lettered after {delivery.attempts} attempts: {verdict.error}"
                commit.bury(delivery, item, error, self.consumer)
            else:
                log.warning("%s: %s[%d] failed on attempt %d/%d; leaving it for a retry: %s", self.consumer,
                            item.batch, item.index, delivery.attempts, self._max_attempts, verdict.error)
        await self._apply(commit, stop)

    async def _apply(self, commit: _Commit, stop: asyncio.Event) -> None:
        """Write the commit, retrying through Redis outages so finished work is not thrown away.

        Re-sending a commit whose reply was lost only republishes outcomes (deduplicated by the
        reader) and re-acks/deletes entries (idempotent). Giving up on stop is safe too: the
        entries stay pending and are reclaimed by another worker.
        """
        if not commit.done_ids:
            return
        backoff = Backoff()
        while True:
            try:
                await self._write(commit)
                return
            except TRANSIENT_ERRORS as exc:
                delay = backoff.next_delay()
                log.warning("%s: publishing %d outcomes failed (%s); retrying in %.2fs",
                            self.consumer, len(commit.outcomes), exc, delay)
                if await sleep_unless_stopped(stop, delay):
                    log.warning("%s: stopping with unpublished outcomes; their entries will be reclaimed",
                                self.consumer)
                    return

    async def _write(self, commit: _Commit) -> None:
        pipe = self._client.pipeline(transaction=True)
        keys: set[str] = set()
        for outcome in commit.outcomes:
            key = result_key(outcome.batch, self._results_prefix)
            pipe.xadd(key, encode_outcome(outcome))
            keys.add(key)
        for key in keys:
            pipe.expire(key, self._result_ttl_s)
        for record in commit.dead:
            pipe.xadd(self._dead_stream, record, maxlen=self._dead_maxlen, approximate=True)
        pipe.xack(self._keys.stream, self._group, *commit.done_ids)
        pipe.xdel(self._keys.stream, *commit.done_ids)
        await pipe.execute()

    async def _leave_group(self) -> None:
        """On a clean exit, remove this consumer from the group, but only if it holds no entries:
        deleting a consumer discards its pending list, which would lose that work."""
        with contextlib.suppress(ResponseError, *TRANSIENT_ERRORS):
            held = await self._client.xpending_range(self._keys.stream, self._group, "-", "+", 1, self.consumer)
            if not held:
                await self._client.xgroup_delconsumer(self._keys.stream, self._group, self.consumer)


async def run_worker(redis_url: str, handler: Handler, *, stop: asyncio.Event | None = None, **kwargs: Any) -> None:
    """Run a :class:`RedisWorker` until ``stop`` is set or the process gets SIGTERM/SIGINT.

    Meant as a process entry point, e.g. ``asyncio.run(run_worker(url, my_handler))`` from a
    CLI command or ``python -c``; ``kwargs`` are passed to :class:`RedisWorker`.
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # non-main thread, Windows
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        await RedisWorker(redis_url, handler, **kwargs).run(stop)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _pairs(fields: Any) -> dict[str, str]:
    """An entry's fields as a dict: a script returns them as a flat list ``[k1, v1, k2, v2, ...]``."""
    if isinstance(fields, dict):
        return fields
    return dict(zip(fields[::2], fields[1::2]))
