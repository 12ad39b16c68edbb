"""RedisQueue / RedisWorker contract on a real Redis: dead letters, backpressure, deduplication,
timeouts and clean shutdown. Workers run as tasks in the test's event loop to keep this fast;
the multi-process failure scenarios live in test_queue_redis_failover.py."""
from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from botgrpo.services.queue import (
    DEFAULT_DEAD_STREAM,
    DEFAULT_GROUP,
    DEFAULT_STREAM,
    TIMED_OUT,
    Outcome,
    QueueFull,
    RedisQueue,
    RedisWorker,
    RolloutQueue,
    WorkItem,
    result_key,
)
from botgrpo.services.queue.redis_streams import TAKE_SCRIPT, QueueKeys
from botgrpo.services.schemas import Result
from tests.helpers import queue_result
from tests.redis_server import RedisServer, redis_server_fixture  # noqa: F401  (provides redis_server)


def make_batch(n: int, poison: int | None = None) -> tuple[str, list[WorkItem]]:
    batch = uuid.uuid4().hex
    return batch, [WorkItem(batch, i, {"rollout": {"i": i}, "poison": i == poison}) for i in range(n)]


async def echo(items: list[WorkItem]) -> list[Result]:
    if any(item.payload["poison"] for item in items):
        raise RuntimeError("poisoned item")
    return [queue_result(item, echo=item.payload) for item in items]


async def with_worker(
    url: str,
    body: Callable[[RedisQueue], Awaitable[Any]],
    handler: Any = echo,
    queue_kw: dict[str, Any] | None = None,
    **worker_kw: Any,
) -> Any:
    """Run ``body(queue)`` while a RedisWorker task serves the queue; stop the worker afterwards."""
    queue = RedisQueue(url, poll_s=0.2, **(queue_kw or {}))
    await queue.start()
    stop = asyncio.Event()
    worker = RedisWorker(url, handler, consumer="test-worker", block_ms=100, **worker_kw)
    task = asyncio.create_task(worker.run(stop))
    try:
        return await body(queue)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=5)
        await queue.close()


def test_redis_queue_is_a_rollout_queue(redis_server: RedisServer) -> None:
    assert isinstance(RedisQueue(redis_server.url), RolloutQueue)


def test_item_the_handler_keeps_failing_is_dead_lettered_and_reported(redis_server: RedisServer) -> None:
    calls: list[list[int]] = []

    async def recording_echo(items: list[WorkItem]) -> list[Result]:
        calls.append([item.index for item in items])
        return await echo(items)

    async def body(queue: RedisQueue) -> list[Outcome]:
        batch, items = make_batch(8, poison=3)
        await queue.submit(items)
        return [o async for o in queue.results(batch, 8, timeout_s=15)]

    outcomes = asyncio.run(
        with_worker(redis_server.url, body, recording_echo, claim_idle_ms=300, max_attempts=3, batch_size=8)
    )
    by_index = {o.index: o for o in outcomes}
    assert sorted(by_index) == list(range(8)) and len(outcomes) == 8
    assert all(by_index[i].result.details == {"echo": {"rollout": {"i": i}, "poison": False}} for i in by_index if i != 3)
    failed = by_index[3]
    assert failed.result is None
    assert "dead-lettered after 3 attempts" in failed.error and "poisoned item" in failed.error
    assert sum(call == [3] for call in calls) == 3  # retried alone, once per attempt

    client = redis_server.client()
    ((_, dead),) = client.xrange(DEFAULT_DEAD_STREAM)
    assert dead["index"] == "3" and dead["attempts"] == "3" and "poisoned item" in dead["error"]
    assert json.loads(dead["payload"])["poison"] is True
    assert client.xlen(DEFAULT_STREAM) == 0  # dead-lettered entries leave the work stream
    client.close()


def test_entry_that_keeps_killing_workers_is_dead_lettered_without_scoring(redis_server: RedisServer) -> None:
    """Simulate a crash loop: a consumer that never finishes received the entry max_attempts times."""
    client = redis_server.client()
    scored: list[WorkItem] = []

    async def recording_echo(items: list[WorkItem]) -> list[Result]:
        scored.extend(items)
        return await echo(items)

    async def body(queue: RedisQueue) -> list[Outcome]:
        return [o async for o in queue.results(batch, 1, timeout_s=10)]

    async def submit_and_crash_loop() -> None:
        queue = RedisQueue(redis_server.url)
        await queue.start()
        await queue.submit(items)
        await queue.close()
        keys = QueueKeys(DEFAULT_STREAM)  # the ghost takes it as a worker does: into its own pending list
        take = client.register_script(TAKE_SCRIPT)
        ((_, [(entry_id, _)]),) = take(keys=[keys.stream, keys.backlog, keys.clients, keys.clock, keys.cost, keys.wake],
                                       args=[DEFAULT_GROUP, "ghost", 1, 0.5, keys.waiting_prefix])
        for _ in range(2):
            client.xclaim(DEFAULT_STREAM, DEFAULT_GROUP, "ghost", 0, [entry_id])

    batch, items = make_batch(1)
    asyncio.run(submit_and_crash_loop())
    (outcome,) = asyncio.run(with_worker(redis_server.url, body, recording_echo, claim_idle_ms=50, max_attempts=3))
    assert outcome.result is None and "delivered 4 times" in (outcome.error or "")
    assert scored == []
    assert client.xlen(DEFAULT_DEAD_STREAM) == 1
    client.close()


def test_submit_over_max_depth_raises_queue_full(redis_server: RedisServer) -> None:
    async def scenario() -> None:
        queue = RedisQueue(redis_server.url, max_depth=10, retry_after_s=1.5)
        await queue.start()
        await queue.submit(make_batch(7)[1])
        with pytest.raises(QueueFull) as full:
            await queue.submit(make_batch(4)[1])
        assert full.value.retry_after_s == 1.5 and full.value.depth == 7
        assert await queue.depth() == 7  # all-or-nothing: no partial submission
        await queue.submit(make_batch(3)[1])
        assert await queue.depth() == 10
        with pytest.raises(QueueFull):
            await queue.submit(make_batch(1)[1])
        await queue.close()

    asyncio.run(scenario())


def test_finished_work_frees_capacity(redis_server: RedisServer) -> None:
    async def body(queue: RedisQueue) -> None:
        for _ in range(3):  # 3 x 4 items through a queue that holds 5
            batch, items = make_batch(4)
            await queue.submit(items)
            assert all([o.ok async for o in queue.results(batch, 4, timeout_s=10)])
        assert await queue.depth() == 0

    asyncio.run(with_worker(redis_server.url, body, queue_kw={"max_depth": 5}))


def test_results_deduplicates_republished_indexes_and_times_out_the_rest(redis_server: RedisServer) -> None:
    batch = uuid.uuid4().hex
    key = result_key(batch)
    client = redis_server.client()
    def result(index: int, **details) -> str:
        return queue_result(WorkItem(batch, index, {}), **details).to_json().decode()

    client.xadd(key, {"index": "0", "result": result(0, first=True)})
    client.xadd(key, {"index": "0", "result": result(0, first=False)})  # a rescored duplicate
    client.xadd(key, {"garbage": "x"})  # undecodable: skipped, not fatal
    client.xadd(key, {"index": "7", "result": result(7)})  # out of range: ignored
    client.xadd(key, {"index": "1", "error": "boom"})
    client.xadd(key, {"index": "1", "result": result(1)})  # late duplicate of a failure: still the first wins

    async def scenario() -> list[Outcome]:
        queue = RedisQueue(redis_server.url, poll_s=0.1)
        await queue.start()
        outcomes = [o async for o in queue.results(batch, 3, timeout_s=0.6)]
        await queue.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert outcomes == [
        Outcome(batch, 0, queue_result(WorkItem(batch, 0, {}), first=True)),
        Outcome(batch, 1, None, "boom"),
        Outcome(batch, 2, None, TIMED_OUT),
    ]
    client.close()


def test_fully_read_results_are_deleted_and_published_ones_expire(redis_server: RedisServer) -> None:
    client = redis_server.client()

    async def body(queue: RedisQueue) -> None:
        batch, items = make_batch(3)
        await queue.submit(items)
        await asyncio.sleep(0.5)  # let the worker publish before anyone reads
        assert 0 < client.ttl(result_key(batch)) <= 60
        assert len([o async for o in queue.results(batch, 3, timeout_s=5)]) == 3
        assert not client.exists(result_key(batch))

    asyncio.run(with_worker(redis_server.url, body, result_ttl_s=60))
    client.close()


def test_worker_stops_cleanly_and_leaves_the_group(redis_server: RedisServer) -> None:
    async def body(queue: RedisQueue) -> None:
        batch, items = make_batch(2)
        await queue.submit(items)
        assert len([o async for o in queue.results(batch, 2, timeout_s=5)]) == 2

    asyncio.run(with_worker(redis_server.url, body))
    client = redis_server.client()
    assert [c["name"] for c in client.xinfo_consumers(DEFAULT_STREAM, DEFAULT_GROUP)] == []
    client.close()


def test_worker_recreates_a_group_that_vanished(redis_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    """Redis without persistence can come back empty; workers must not wedge on NOGROUP."""
    client = redis_server.client()

    async def body(queue: RedisQueue) -> None:
        await asyncio.sleep(0.3)  # worker is now blocked reading from the group
        client.delete(DEFAULT_STREAM)  # drops the group with it
        batch, items = make_batch(3)
        await queue.submit(items)
        outcomes = [o async for o in queue.results(batch, 3, timeout_s=10)]
        assert all(o.ok for o in outcomes) and len(outcomes) == 3

    asyncio.run(with_worker(redis_server.url, body))
    client.close()
    assert "consumer group vanished" in caplog.text
