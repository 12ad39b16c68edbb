"""How the Redis back end lays out its data, shared by the server side and the workers.

Work is queued per client and handed out fairly, with the rules of :mod:`.fair`, by two Lua
scripts; so a client's share of the workers does not grow with the requests it sends.

* Waiting streams, one per client (``botgrpo:rollouts:waiting:{client}``): one entry per item,
  fields ``batch``, ``index``, ``payload`` (JSON) and ``client``, in arrival order. The server
  appends a whole submission (:data:`SUBMIT_SCRIPT`). ``botgrpo:rollouts:backlog`` counts their
  entries.
* Turns (``botgrpo:rollouts:clients``, a sorted set): each waiting client scored by the take
  that last served it (``botgrpo:rollouts:clock`` counts takes); a client that starts waiting
  joins at the latest take minus 0.5, behind every client that waited before it (clients that
  join between the same two takes go in name order).
* The work stream (``botgrpo:rollouts``) and its consumer group: a worker's take
  (:data:`TAKE_SCRIPT`) moves the next items of the client whose turn it is from its waiting
  stream into the work stream and reads them into its own pending list, in one step. So the
  work stream holds only what workers have in hand, and the at-least-once machinery (pending
  lists, ``XAUTOCLAIM``, delivery counts, dead letters) is that of a consumer group.
  Entries are deleted once finished, so the backlog is the work stream's length plus the count.
* Take sizes (``botgrpo:rollouts:cost``, a hash): each waiting client's measured seconds per
  item, so a take holds about ``chunk_s`` of work (:func:`.fair.take_size`).
* Wake-ups (``botgrpo:rollouts:wake``, a short list): a submission pushes a token for the
  workers blocked on it.
* Result stream per batch (``botgrpo:results:{batch}``): fields ``index`` and either ``result``
  (JSON) or ``error``. Expires ``result_ttl_s`` after the last write.
* Dead-letter stream (``botgrpo:dead``): the work entry plus ``error``, ``attempts``, ``entry_id``.

Keeping the encoding in one place is what lets producer and workers run different hosts and
versions of this code without drifting apart; servers and workers of this layout must be
upgraded together with one another (earlier ones used four work streams, "lanes").
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from botgrpo.services.queue.base import Outcome, WorkItem
from botgrpo.services.schemas import Result

DEFAULT_STREAM = "botgrpo:rollouts"
DEFAULT_GROUP = "botgrpo-workers"
DEFAULT_DEAD_STREAM = "botgrpo:dead"
RESULTS_PREFIX = "botgrpo:results:"

# Errors that mean "Redis is (temporarily) unreachable or still loading", never "bad request".
# BusyLoadingError (a restarted Redis replaying its AOF) subclasses ConnectionError.
TRANSIENT_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)


class MalformedEntry(ValueError):
    """A stream entry this code cannot decode (written by something else, or a newer version)."""


WAKE_TOKENS = 64  # at most this many wake-ups wait in the list (a worker that wakes for nothing just looks)


def result_key(batch: str, prefix: str = RESULTS_PREFIX) -> str:
    return f"{prefix}{batch}"


@dataclass(frozen=True)
class QueueKeys:
    """The keys of one queue, named after its work stream (see the module docstring)."""

    stream: str

    def waiting(self, client: str) -> str:
        return f"{self.waiting_prefix}{client}"

    @property
    def waiting_prefix(self) -> str:
        return f"{self.stream}:waiting:"

    @property
    def backlog(self) -> str:
        return f"{self.stream}:backlog"

    @property
    def clients(self) -> str:
        return f"{self.stream}:clients"

    @property
    def clock(self) -> str:
        return f"{self.stream}:clock"

    @property
    def cost(self) -> str:
        return f"{self.stream}:cost"

    @property
    def wake(self) -> str:
        return f"{self.stream}:wake"


# Queue a whole submission of one client, all-or-nothing and only if the backlog stays within
# max_depth, in one atomic step (concurrent server replicas cannot overshoot it). No MAXLEN:
# trimming would silently drop unconsumed work.
# KEYS: work stream, backlog, clients, clock, the client's waiting stream, wake
# ARGV: max_depth, client, then batch/index/payload for each item
SUBMIT_SCRIPT = """
local depth = redis.call('XLEN', KEYS[1]) + tonumber(redis.call('GET', KEYS[2]) or '0')
local incoming = (#ARGV - 2) / 3
if depth + incoming > tonumber(ARGV[1]) then
  return {0, depth}
end
for i = 3, #ARGV, 3 do
  redis.call('XADD', KEYS[5], '*', 'batch', ARGV[i], 'index', ARGV[i + 1], 'payload', ARGV[i + 2], 'client', ARGV[2])
end
redis.call('INCRBY', KEYS[2], incoming)
if not redis.call('ZSCORE', KEYS[3], ARGV[2]) then
  redis.call('ZADD', KEYS[3], tonumber(redis.call('GET', KEYS[4]) or '0') - 0.5, ARGV[2])
end
for i = 1, math.min(incoming, %(wake)d) do
  redis.call('LPUSH', KEYS[6], '1')
end
redis.call('LTRIM', KEYS[6], 0, %(wake)d - 1)
return {1, depth + incoming}
""" % {"wake": WAKE_TOKENS}

# A worker's take: the next items of the client whose turn it is (fair.take_size of them), moved
# into the work stream and read into this consumer's pending list in the same step.
# KEYS: work stream, backlog, clients, clock, cost, wake
# ARGV: group, consumer, max_items, chunk_s, waiting-stream prefix
# Returns the XREADGROUP reply (nil when nothing waits).
TAKE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then  -- no stream, no group: say so before moving anything
  return redis.error_reply('NOGROUP the work stream and its group are gone')
end
local first = redis.call('ZRANGE', KEYS[3], 0, 0)
if #first == 0 then  -- nothing waits; entries a server of the old layout added directly are read here
  return redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
end
local client = first[1]
local waiting = ARGV[5] .. client
local max_items = tonumber(ARGV[3])
local share = math.max(1, math.ceil(max_items / redis.call('ZCARD', KEYS[3])))
local cost = tonumber(redis.call('HGET', KEYS[5], client))
local count = 1
if cost ~= nil then
  count = share
  if cost > 0 then
    count = math.max(1, math.min(share, math.floor(tonumber(ARGV[4]) / cost)))
  end
end
local entries = redis.call('XRANGE', waiting, '-', '+', 'COUNT', count)
for _, entry in ipairs(entries) do
  redis.call('XADD', KEYS[1], '*', unpack(entry[2]))
  redis.call('XDEL', waiting, entry[1])
end
redis.call('DECRBY', KEYS[2], #entries)
local clock = redis.call('INCR', KEYS[4])
if redis.call('XLEN', waiting) == 0 then
  redis.call('DEL', waiting)
  redis.call('ZREM', KEYS[3], client)
  redis.call('HDEL', KEYS[5], client)
else
  redis.call('ZADD', KEYS[3], clock, client)
  redis.call('LPUSH', KEYS[6], '1')
  redis.call('LTRIM', KEYS[6], 0, %(wake)d - 1)
end
return redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', math.max(1, #entries), 'STREAMS', KEYS[1], '>')
""" % {"wake": WAKE_TOKENS}

# A take of ARGV[2] items of client ARGV[1] took ARGV[3] seconds: its cost, a moving average,
# kept only while the client waits. KEYS: clients, cost
RECORD_SCRIPT = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local per_item = math.max(0, tonumber(ARGV[3])) / tonumber(ARGV[2])
local previous = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if previous ~= nil then
  per_item = 0.5 * previous + 0.5 * per_item
end
redis.call('HSET', KEYS[2], ARGV[1], tostring(per_item))
return 1
"""


def connect(redis_url: str, *, longest_block_s: float = 1.0) -> aioredis.Redis:
    """A client whose socket timeout outlasts our longest blocking read.

    redis-py's own retry is kept to one quick attempt (it mainly refreshes pooled connections that
    a Redis restart left dead); the real reconnect policy is the callers' :class:`Backoff` loops.
    """
    return aioredis.from_url(
        redis_url,
        decode_responses=True,
        socket_connect_timeout=2.0,
        socket_timeout=longest_block_s + 5.0,
        retry=Retry(ExponentialWithJitterBackoff(cap=0.2, base=0.02), retries=1),
    )


async def ensure_group(client: aioredis.Redis, stream: str, group: str) -> None:
    """Create the consumer group (and the stream) if missing.

    The group starts at id ``0`` so that entries submitted before any worker ever ran are consumed.
    """
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def is_missing_group(exc: ResponseError) -> bool:
    """True for the errors Redis gives when the group (or its stream) vanished, e.g. data loss:
    ``NOGROUP`` on the next command, or ``UNBLOCKED`` for a read blocked when the key was deleted."""
    message = str(exc)
    return message.startswith(("NOGROUP", "UNBLOCKED"))


def encode_item(item: WorkItem) -> dict[str, str]:
    return {"batch": item.batch, "index": str(item.index), "payload": json.dumps(item.payload), "client": item.client}


def decode_item(fields: dict[str, str]) -> WorkItem:
    try:
        return WorkItem(fields["batch"], int(fields["index"]), json.loads(fields["payload"]), fields.get("client", ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedEntry(f"undecodable work entry {fields!r}: {exc}") from exc


def encode_outcome(outcome: Outcome) -> dict[str, str]:
    if outcome.error is not None:
        return {"index": str(outcome.index), "error": outcome.error}
    return {"index": str(outcome.index), "result": outcome.result.to_json().decode()}


def decode_outcome(batch: str, fields: dict[str, str]) -> Outcome:
    try:
        index = int(fields["index"])
        if "error" in fields:
            return Outcome(batch, index, None, fields["error"])
        return Outcome(batch, index, Result.from_json(fields["result"]))
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise MalformedEntry(f"undecodable result entry {fields!r}: {exc}") from exc
