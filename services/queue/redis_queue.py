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

from .backoff import Backoff
from .base import Outcome, OutcomeCollector, QueueFull, WorkItem, reject_oversized
from .redis_streams import (
    DEFAULT_GROUP,
    DEFAULT_LANES,
    DEFAULT_STREAM,
    RESULTS_PREFIX,
    TRANSIENT_ERRORS,
    MalformedEntry,
    connect,
    decode_outcome,
    encode_item,
    ensure_group,
    lane_streams,
    result_key,
)

log = logging.getLogger(__name__)
# Results read from Redis per XREAD: a reader holds at most this many in memory beyond what its
# client has taken (a client that stops reading leaves the rest in Redis, under its TTL).
READ_CHUNK = 16

# Check the backlog over every lane and append the whole submission to the shortest lane, in one
# atomic step: concurrent submitters (several server replicas) cannot overshoot max_depth between
# the check and the append, and a submission is enqueued all-or-nothing. No MAXLEN: trimming
# would silently drop unconsumed work. KEYS: the lanes; ARGV: max_depth, then batch/index/payload.
_SUBMIT_SCRIPT = """
local depth, lane, shortest = 0, 1, nil
for i = 1, #KEYS do
  local length = redis.call('XLEN', KEYS[i])
  depth = depth + length
  if shortest == nil or length < shortest then
    lane, shortest = i, length
  end
end
local incoming = (#ARGV - 1) / 3
if depth + incoming > tonumber(ARGV[1]) then
  return {0, depth}
end
for i = 2, #ARGV, 3 do
  redis.call('XADD', KEYS[lane], '*', 'batch', ARGV[i], 'index', ARGV[i + 1], 'payload', ARGV[i + 2])
end
return {1, depth + incoming}
"""


class RedisQueue:
    """``RolloutQueue`` over a Redis Stream consumed by a consumer group of ``RedisWorker``s.

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
        lanes: int = DEFAULT_LANES,
    ) -> None:
        self._url = redis_url
        self._stream = stream
        self._lanes = lane_streams(stream, lanes)  # workers must be started with the same ``lanes``
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
            self._submit_script = self._redis.register_script(_SUBMIT_SCRIPT)
        try:
            for lane in self._lanes:
                await ensure_group(self._redis, lane, self._group)
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
        args: list[str | int] = [self._max_depth]
        for item in items:
            fields = encode_item(item)
            args += [fields["batch"], fields["index"], fields["payload"]]
        assert self._submit_script is not None, "RedisQueue used before start()"
        accepted, depth = await self._submit_script(keys=self._lanes, args=args)
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
        """Unfinished items: workers delete entries once finished, so this is the lanes' length."""
        pipe = self._client.pipeline(transaction=False)
        for lane in self._lanes:
            pipe.xlen(lane)
        return sum(int(n) for n in await pipe.execute())

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
