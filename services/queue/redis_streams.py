"""How the Redis back end lays out its data, shared by the server side and the workers.

* Work streams, one per *lane* (``botgrpo:rollouts``, ``botgrpo:rollouts:lane:1``, ...,
  :func:`lane_streams`): one entry per item, fields ``batch``, ``index``, ``payload`` (JSON). A
  submission goes whole into the shortest lane, so a request queued behind a flood sits in a lane
  of its own, and workers read every lane at once (:mod:`.redis_worker`). Entries are deleted
  once finished, so the lanes' total length *is* the backlog.
* Result stream per batch (``botgrpo:results:{batch}``): fields ``index`` and either ``result``
  (JSON) or ``error``. Expires ``result_ttl_s`` after the last write.
* Dead-letter stream (``botgrpo:dead``): the work entry plus ``error``, ``attempts``, ``entry_id``.

Keeping the encoding in one place is what lets producer and workers run different hosts and
versions of this code without drifting apart.
"""
from __future__ import annotations

import json

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


DEFAULT_LANES = 4


def result_key(batch: str, prefix: str = RESULTS_PREFIX) -> str:
    return f"{prefix}{batch}"


def lane_streams(stream: str, lanes: int = DEFAULT_LANES) -> list[str]:
    """The work streams of ``lanes`` lanes: ``stream`` itself first (a lone request uses it)."""
    if lanes < 1:
        raise ValueError("lanes must be >= 1")
    return [stream] + [f"{stream}:lane:{i}" for i in range(1, lanes)]


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
    return {"batch": item.batch, "index": str(item.index), "payload": json.dumps(item.payload)}


def decode_item(fields: dict[str, str]) -> WorkItem:
    try:
        return WorkItem(fields["batch"], int(fields["index"]), json.loads(fields["payload"]))
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
