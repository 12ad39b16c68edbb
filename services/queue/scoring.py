"""Calling the handler so that one bad item cannot fail the items batched with it.

Both back ends batch items for throughput, but a handler exception says nothing about *which*
item was at fault. So a failed batch of several items is retried one item at a time: the
healthy items still get results and only the culprit ends up with an error. A single item that
fails is not retried here; retrying across attempts is the back end's policy (the Redis worker
counts deliveries, see :mod:`.redis_worker`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from botgrpo.services.queue.base import Handler, WorkItem
from botgrpo.services.schemas import Result

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scored:
    """The handler's verdict on one item: ``result`` on success, else ``error`` (a description)."""

    result: Result | None
    error: str | None = None


async def _call(handler: Handler, items: list[WorkItem]) -> list[Result]:
    results = list(await handler(items))
    if len(results) != len(items):
        raise ValueError(f"handler returned {len(results)} results for {len(items)} items")
    return results


async def _score_alone(handler: Handler, item: WorkItem) -> Scored:
    try:
        (result,) = await _call(handler, [item])
        return Scored(result)
    except Exception as exc:  # noqa: BLE001 - reported per item, never swallowed silently
        log.warning("handler failed on %s[%d]: %s", item.batch, item.index, exc)
        return Scored(None, f"handler raised {type(exc).__name__}: {exc}")


async def score_items(handler: Handler, items: list[WorkItem]) -> list[Scored]:
    """One :class:`Scored` per item, in order. Never raises (except on cancellation)."""
    if len(items) <= 1:
        return [await _score_alone(handler, item) for item in items]
    try:
        return [Scored(r) for r in await _call(handler, items)]
    except Exception as exc:  # noqa: BLE001 - isolated below
        log.warning("handler failed on a batch of %d; retrying items one by one: %s", len(items), exc)
    return [await _score_alone(handler, item) for item in items]
