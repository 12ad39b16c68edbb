"""Server side of the Redis back end: enqueue items, enforce backpressure, stream results back.

Any number of reward-server replicas and ``botgrpo worker`` processes can share one Redis; the
server never talks to workers directly. See :mod:`.redis_streams` for the key layout and
:mod:`.redis_worker` for the consuming side.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript

from botgrpo.services.queue.backoff import Backoff
from botgrpo.services.queue.base import Outcome, OutcomeCollector, QueueFull, WorkItem, reject_oversized
from botgrpo.services.queue.redis_streams import (
                                                  DEFAULT_GROUP,
                                                  DEFAULT_STREAM,
                                                  RESULTS_PREFIX,
                                                  SUBMIT_SCRIPT,
                                                  TRANSIENT_ERRORS,
                                                  MalformedEntry,
                                                  QueueKeys,
                                                  connect,
                                                  decode_outcome,
                                                  encode_item,
                                                  ensure_group,
                                                  result_key,
                                                  )

log = logging.getLogger(__name__)
# Results read from Redis per XREAD: a reader holds at most this many in memory beyond what its
# client has taken (a client that stops reading leaves the rest in Redis, under its TTL).
READ_CHUNK = 16


class RedisQueue:
    """``RolloutQueue`` over Redis: per-client waiting streams handed fairly to a consumer group
    of ``RedisWorker``s (:mod:`.redis_streams`).

    ``results()`` keeps one blocking XREAD per in-flight request (each holds a pooled connection)
    and polls at most every ``poll_s`` so deadlines are honoured promptly.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        stream: str = DEFAULT_STREAM,
        group: str = DEFAULT_GROUP,
        max_depth: int = 100_000,
        result_ttl_s: int = 3600,
        retry_after_s: float = 2.0,
        results_prefix: str = RESULTS_PREFIX,
        poll_s: float = 1.0,
    ) -> None:
        self._url = redis_url
        self._keys = QueueKeys(stream)
        self._group = group
        self._max_depth = max_depth
        self._result_ttl_s = result_ttl_s
        self._retry_after_s = retry_after_s
        self._results_prefix = results_prefix
        self._poll_s = poll_s
        self._redis: aioredis.Redis | None = None
        self._submit_script: AsyncScript | None = None

    @property
    def result_ttl_s(self) -> int:
        """The result-stream TTL this deployment is configured for. Workers own the EXPIRE (they
        write the streams), so this is informational: pass the same value to ``RedisWorker``."""
        return self._result_ttl_s

    async def start(self) -> None:
        """Connect and create the group. Tolerates Redis being down: workers create it too, and
        ``healthy()`` is what readiness probes should watch."""
        if self._redis is None:
            self._redis = connect(self._url, longest_block_s=self._poll_s)
            self._submit_script = self._redis.register_script(SUBMIT_SCRIPT)
        try:
            await ensure_group(self._redis, self._keys.stream, self._group)
        except TRANSIENT_ERRORS as exc:
            log.warning("Redis unreachable at start (%s); will keep trying on use", exc)

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def submit(self, items: list[WorkItem]) -> None:
        if not items:
            return
        reject_oversized(len(items), self._max_depth)
        client = items[0].client
        if any(item.client != client for item in items):
            raise ValueError("a submission comes from one client")
        args: list[str | int] = [self._max_depth, client]
        for item in items:
            fields = encode_item(item)
            args += [fields["batch"], fields["index"], fields["payload"]]
        assert self._submit_script is not None, "RedisQueue used before start()"
        keys = self._keys
        accepted, depth = await self._submit_script(
            keys=[keys.stream, keys.backlog, keys.clients, keys.clock, keys.waiting(client), keys.wake], args=args)
        if not accepted:
            raise QueueFull(int(depth), self._max_depth, self._retry_after_s)

    async def results(self, batch: str, count: int, timeout_s: float) -> AsyncIterator[Outcome]:
        """Follow the batch's result stream from the start, surviving Redis restarts.

        Reading from id ``0`` (not ``$``) means results published before we started reading are
        not missed; remembering the last id read means a reconnect resumes without re-reading.
        """
        collector = OutcomeCollector(batch, count)
        key = result_key(batch, self._results_prefix)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        last_id = "0-0"
        backoff = Backoff()
        while not collector.done:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                reply = await self._client.xread(  # a few results at a time: the reader's pace bounds memory
                    {key: last_id}, count=READ_CHUNK, block=max(1, int(1000 * min(remaining, self._poll_s)))
                )
                backoff.reset()
            except TRANSIENT_ERRORS as exc:
                delay = min(backoff.next_delay(), max(remaining, 0.0))
                log.warning("reading results of %s failed (%s); retrying in %.2fs", batch, exc, delay)
                await asyncio.sleep(delay)
                continue
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    last_id = entry_id
                    outcome = self._decode(batch, fields)
                    if outcome is not None and collector.accept(outcome):
                        yield outcome
        if collector.done:
            await self._forget(key)
        for outcome in collector.time_out_rest():
            yield outcome

    async def depth(self) -> int:
        """Unfinished items: those waiting, plus the work stream's (workers delete entries once
        finished, so it holds what they have in hand)."""
        pipe = self._client.pipeline(transaction=False)
        pipe.xlen(self._keys.stream)
        pipe.get(self._keys.backlog)
        in_hand, waiting = await pipe.execute()
        return int(in_hand) + int(waiting or 0)

    async def healthy(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self._client.ping(), timeout=2.0))
        except (asyncio.TimeoutError, *TRANSIENT_ERRORS):
            return False

    @property
    def _client(self) -> aioredis.Redis:
        if self._redis is None:
            raise RuntimeError("RedisQueue used before start()")
        return self._redis

    @staticmethod
    def _decode(batch: str, fields: dict[str, str]) -> Outcome | None:
        try:
            return decode_outcome(batch, fields)
        except MalformedEntry as exc:
            log.error("skipping result for batch %s: %s", batch, exc)
            return None

    async def _forget(self, key: str) -> None:
        """Free a fully-read result stream now instead of waiting for its TTL (best effort)."""
        with contextlib.suppress(*TRANSIENT_ERRORS):
            await self._client.delete(key)
