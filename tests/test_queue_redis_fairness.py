"""The Redis path is fair too: a request queued behind another client's flood waits for about the
batch in a worker's hands, not for the flood (issue 20, finding 5; a real redis-server, real
RedisWorker tasks).

Before: one work stream read in order, so a single item submitted after 200 slow ones waited for
all of them (200 x 0.05 s / 1 worker = 10 s). Now a submission goes whole into the shortest of
``lanes`` streams, workers read every lane (``batch_size / busy lanes`` from each) and score the
lane with the shortest backlog first.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from botgrpo.services.queue import RedisQueue, RedisWorker, WorkItem
from botgrpo.services.queue.redis_streams import DEFAULT_STREAM, lane_streams
from tests.redis_server import RedisServer, redis_server_fixture  # noqa: F401  (provides redis_server)

PER_ITEM_S = 0.05


async def slow(items: list[WorkItem]) -> list[dict[str, Any]]:
    await asyncio.sleep(PER_ITEM_S * len(items))
    return [{"i": item.index} for item in items]


def batch_of(n: int) -> tuple[str, list[WorkItem]]:
    batch = uuid.uuid4().hex
    return batch, [WorkItem(batch, i, {"i": i}) for i in range(n)]


def test_a_single_item_is_not_queued_behind_a_flood(redis_server: RedisServer) -> None:
    async def scenario() -> tuple[float, int]:
        queue = RedisQueue(redis_server.url, poll_s=0.05)
        await queue.start()
        stop = asyncio.Event()
        worker = RedisWorker(redis_server.url, slow, consumer="w", block_ms=100, batch_size=8)
        task = asyncio.create_task(worker.run(stop))
        try:
            flood, flood_items = batch_of(200)
            await queue.submit(flood_items)
            await asyncio.sleep(0.5)
            single, single_items = batch_of(1)
            started = time.monotonic()
            await queue.submit(single_items)
            [outcome] = [o async for o in queue.results(single, 1, timeout_s=30)]
            waited = time.monotonic() - started
            assert outcome.ok and outcome.result == {"i": 0}
            flood_done = [o async for o in queue.results(flood, 200, timeout_s=60)]
            assert sorted(o.index for o in flood_done) == list(range(200))
            return waited, await queue.depth()
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=10)
            await queue.close()

    waited, depth = asyncio.run(scenario())
    assert waited < 1.0, waited  # one batch of 8 in hand (0.4 s), then its own item
    assert depth == 0


def test_a_lone_submission_uses_the_main_stream_and_a_second_goes_to_another_lane(redis_server: RedisServer) -> None:
    async def scenario() -> None:
        queue = RedisQueue(redis_server.url)
        await queue.start()
        await queue.submit(batch_of(5)[1])
        await queue.submit(batch_of(3)[1])
        assert await queue.depth() == 8
        await queue.close()

    asyncio.run(scenario())
    client = redis_server.client()
    lengths = [client.xlen(lane) for lane in lane_streams(DEFAULT_STREAM)]
    client.close()
    assert lengths[0] == 5 and sorted(lengths[1:]) == [0, 0, 3]
