"""The Redis path is fair between clients too (issue 20, finding 5; issue 34, finding 1; a real
redis-server, real RedisWorker tasks).

Issue 20: one work stream read in order, so a single item submitted after 200 slow ones waited
for all of them (200 x 0.05 s / 1 worker = 10 s). Its fix put each submission into the
shortest of four work streams ("lanes"), which a steady stream of small requests fills as well
as it fills one: another client's item still queued behind them. Now each client waits in a
stream of its own and a worker's take serves the clients in turn (services/queue/redis_streams.py).
"""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from botgrpo.services.queue import RedisQueue, RedisWorker, WorkItem
from botgrpo.services.schemas import Result
from tests.helpers import queue_result
from botgrpo.services.queue.redis_streams import DEFAULT_STREAM, QueueKeys
from tests.redis_server import RedisServer, redis_server_fixture  # noqa: F401  (provides redis_server)

PER_ITEM_S = 0.05


async def slow(items: list[WorkItem]) -> list[Result]:
    await asyncio.sleep(PER_ITEM_S * len(items))
    return [queue_result(item, i=item.index) for item in items]


def batch_of(n: int, client: str) -> tuple[str, list[WorkItem]]:
    batch = uuid.uuid4().hex
    return batch, [WorkItem(batch, i, {"i": i}, client) for i in range(n)]


async def scored_in(queue: RedisQueue, client: str, n: int = 1) -> float:
    """Seconds from submitting ``n`` items of ``client`` to having every outcome."""
    batch, items = batch_of(n, client)
    started = time.monotonic()
    await queue.submit(items)
    outcomes = [o async for o in queue.results(batch, n, timeout_s=60)]
    assert sorted(o.index for o in outcomes if o.ok) == list(range(n))
    return time.monotonic() - started


def test_a_single_item_is_not_queued_behind_a_flood(redis_server: RedisServer) -> None:
    async def scenario() -> tuple[float, int]:
        queue = RedisQueue(redis_server.url, poll_s=0.05)
        await queue.start()
        stop = asyncio.Event()
        worker = RedisWorker(redis_server.url, slow, consumer="w", block_ms=100, batch_size=8)
        task = asyncio.create_task(worker.run(stop))
        try:
            flood = asyncio.create_task(scored_in(queue, "flood", 200))
            await asyncio.sleep(0.5)
            waited = await scored_in(queue, "single")
            await flood
            return waited, await queue.depth()
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=10)
            await queue.close()

    waited, depth = asyncio.run(scenario())
    assert waited < 1.0, waited  # one take in hand (about chunk_s, 0.5 s), then its own item
    assert depth == 0


def test_a_steady_stream_of_new_requests_does_not_starve_another_client(redis_server: RedisServer) -> None:
    """One worker scores 20 items a second; client A sends a new one-item request every 25 ms
    (40 a second) for 4 s; client V's single items wait for about one take. With the four lanes,
    V's item queued behind A's in its lane, a wait that grew with A's backlog (measured with
    that code: 0.76 s, then 2.06 s, and only two probes fitted in the 4 s)."""
    async def scenario() -> list[float]:
        queue = RedisQueue(redis_server.url, poll_s=0.02)
        await queue.start()
        stop = asyncio.Event()
        worker = asyncio.create_task(RedisWorker(redis_server.url, slow, consumer="w", block_ms=100,
                                                 batch_size=8).run(stop))
        end = time.monotonic() + 4.0
        sent: list[asyncio.Task] = []

        async def stream() -> None:
            while time.monotonic() < end:
                sent.append(asyncio.create_task(scored_in(queue, "A")))
                await asyncio.sleep(0.025)

        streaming = asyncio.create_task(stream())
        try:
            await asyncio.sleep(0.5)
            waits = []
            while time.monotonic() < end - 0.5:
                waits.append(await scored_in(queue, "V"))
                await asyncio.sleep(0.1)
            await streaming
            return waits
        finally:
            for task in sent:
                task.cancel()
            stop.set()
            await asyncio.wait_for(worker, timeout=10)
            await queue.close()

    waits = asyncio.run(scenario())
    assert len(waits) >= 3 and max(waits) < 1.0, waits


def test_each_client_waits_in_its_own_stream_and_nothing_stays_once_served(redis_server: RedisServer) -> None:
    keys = QueueKeys(DEFAULT_STREAM)

    async def queued() -> None:
        queue = RedisQueue(redis_server.url)
        await queue.start()
        await queue.submit(batch_of(5, "10.0.0.1")[1])
        await queue.submit(batch_of(3, "10.0.0.1")[1])
        await queue.submit(batch_of(2, "2001:db8::/64")[1])
        assert await queue.depth() == 10
        await queue.close()

    asyncio.run(queued())
    client = redis_server.client()
    assert client.xlen(keys.waiting("10.0.0.1")) == 8 and client.xlen(keys.waiting("2001:db8::/64")) == 2
    assert client.zrange(keys.clients, 0, -1) == ["10.0.0.1", "2001:db8::/64"]  # in arrival order
    assert client.xlen(DEFAULT_STREAM) == 0 and int(client.get(keys.backlog)) == 10

    seen: list[tuple[str, int]] = []

    async def record(items: list[WorkItem]) -> list[Result]:
        seen.append((items[0].client, len(items)))
        return [queue_result(item) for item in items]

    async def drained() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(RedisWorker(redis_server.url, record, consumer="w", block_ms=50).run(stop))
        deadline = time.monotonic() + 20
        while (client.xlen(DEFAULT_STREAM) or int(client.get(keys.backlog) or 0)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(drained())
    clients = [c for c, _ in seen]
    assert clients[:4] == ["10.0.0.1", "2001:db8::/64"] * 2, seen  # in turn
    assert seen[0][1] == 1 and max(n for _, n in seen) > 1, seen  # the first take learns the cost; cheap ones batch
    assert sum(n for _, n in seen) == 10
    assert not client.exists(keys.waiting("10.0.0.1"), keys.waiting("2001:db8::/64"), keys.clients, keys.cost)
    assert int(client.get(keys.backlog)) == 0
    client.close()


def test_the_server_queues_a_request_under_its_clients_address(tmp_path) -> None:
    """Real ``botgrpo serve`` on Redis, no worker yet: a request from 127.0.0.2 waits in that
    client's stream, its items carrying the client to the workers (issue 34)."""
    import threading

    import httpx

    from tests.live_server import LiveServer, worker
    from tests.node_toolchain import require_node_toolchain
    require_node_toolchain()
    redis = RedisServer(tmp_path / "redis")
    redis.data_dir.mkdir()
    redis.start()
    server = LiveServer(tmp_path, env={"REDIS_URL": redis.url})
    keys, client = QueueKeys(DEFAULT_STREAM), redis.client()
    answers: list[httpx.Response] = []
    body = {"task": "math", "rollouts": [{"id": "a", "completion": "\\boxed{2}", "reference": {"answer": "2"}}]}
    sender = threading.Thread(target=lambda: answers.append(httpx.Client(
        transport=httpx.HTTPTransport(local_address="127.0.0.2")).post(server.url + "/v1/rewards", json=body, timeout=60)))
    scorer = None
    try:
        sender.start()
        deadline = time.monotonic() + 30
        while not client.exists(keys.waiting("127.0.0.2")) and time.monotonic() < deadline:
            time.sleep(0.05)
        [(_, fields)] = client.xrange(keys.waiting("127.0.0.2"))
        assert fields["client"] == "127.0.0.2" and client.zrange(keys.clients, 0, -1) == ["127.0.0.2"]
        scorer = worker(["--consumer", "w0"], {"REDIS_URL": redis.url}, tmp_path / "worker.log")
        sender.join(60)
        assert answers and answers[0].status_code == 200 and answers[0].json()["results"][0]["passed"] is True
        assert not client.exists(keys.waiting("127.0.0.2"), keys.clients)
    finally:
        client.close()
        server.stop()
        if scorer is not None:
            scorer.stop()
        redis.stop()
