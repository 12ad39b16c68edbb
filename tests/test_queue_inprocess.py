"""InProcessQueue: streaming, exactly-once delivery, error isolation, timeouts and backpressure."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from botgrpo.services.queue import TIMED_OUT, InProcessQueue, Outcome, QueueFull, RolloutQueue, WorkItem


def make_batch(n: int, **payload: object) -> tuple[str, list[WorkItem]]:
    batch = uuid.uuid4().hex
    return batch, [WorkItem(batch, i, {"i": i, **payload}) for i in range(n)]


async def collect(queue: InProcessQueue, batch: str, count: int, timeout_s: float = 10.0) -> list[Outcome]:
    return [outcome async for outcome in queue.results(batch, count, timeout_s)]


def assert_exactly_once(outcomes: list[Outcome], count: int) -> None:
    assert sorted(o.index for o in outcomes) == list(range(count))


def test_is_a_rollout_queue() -> None:
    async def handler(items: list[WorkItem]) -> list[dict]:
        return [{} for _ in items]

    assert isinstance(InProcessQueue(handler), RolloutQueue)


def test_results_stream_before_the_batch_is_finished() -> None:
    scored: list[int] = []

    async def slow_handler(items: list[WorkItem]) -> list[dict]:
        out = []
        for item in items:
            await asyncio.sleep(0.02)
            scored.append(item.index)
            out.append({"echo": item.payload})
        return out

    async def scenario() -> None:
        queue = InProcessQueue(slow_handler, workers=2, max_batch=1)
        await queue.start()
        batch, items = make_batch(20)
        await queue.submit(items)
        outcomes = []
        async for outcome in queue.results(batch, 20, timeout_s=10):
            if not outcomes:
                assert len(scored) < 20, "first outcome only arrived after every item was scored"
            outcomes.append(outcome)
        assert_exactly_once(outcomes, 20)
        assert all(o.result == {"echo": {"i": o.index}} and o.error is None for o in outcomes)
        assert await queue.depth() == 0
        await queue.close()

    asyncio.run(scenario())


def test_handler_receives_batches_up_to_max_batch() -> None:
    sizes: list[int] = []

    async def handler(items: list[WorkItem]) -> list[dict]:
        sizes.append(len(items))
        return [{"ok": True} for _ in items]

    async def scenario() -> None:
        queue = InProcessQueue(handler, workers=1, max_batch=8)
        batch, items = make_batch(20)
        await queue.submit(items)  # before start: everything is waiting when the worker wakes
        await queue.start()
        assert_exactly_once(await collect(queue, batch, 20), 20)
        await queue.close()

    asyncio.run(scenario())
    assert sizes == [1, 8, 8, 3]  # one item to measure the batch's cost, then whole batches of cheap items


def test_failing_handler_gives_error_outcomes_not_silence() -> None:
    calls = 0

    async def broken(items: list[WorkItem]) -> list[dict]:
        nonlocal calls
        calls += 1
        raise RuntimeError("scorer exploded")

    async def scenario() -> list[Outcome]:
        queue = InProcessQueue(broken, workers=1, max_batch=4)
        await queue.start()
        batch, items = make_batch(3)
        await queue.submit(items)
        outcomes = await collect(queue, batch, 3)
        await queue.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert_exactly_once(outcomes, 3)
    assert all(o.result is None and "scorer exploded" in (o.error or "") for o in outcomes)
    assert calls == 1 + 3  # the batch once, then each item alone


def test_one_bad_item_does_not_fail_its_batch_mates() -> None:
    async def picky(items: list[WorkItem]) -> list[dict]:
        if any(item.payload.get("i") == 2 for item in items):
            raise ValueError("cannot score item 2")
        return [{"ok": item.index} for item in items]

    async def scenario() -> list[Outcome]:
        queue = InProcessQueue(picky, workers=1, max_batch=16)
        batch, items = make_batch(5)
        await queue.submit(items)
        await queue.start()
        outcomes = await collect(queue, batch, 5)
        await queue.close()
        return outcomes

    by_index = {o.index: o for o in asyncio.run(scenario())}
    assert by_index[2].result is None and "cannot score item 2" in (by_index[2].error or "")
    assert all(by_index[i].result == {"ok": i} for i in (0, 1, 3, 4))


def test_wrong_number_of_results_is_an_error() -> None:
    async def short(items: list[WorkItem]) -> list[dict]:
        return []

    async def scenario() -> list[Outcome]:
        queue = InProcessQueue(short, workers=1)
        await queue.start()
        batch, items = make_batch(2)
        await queue.submit(items)
        outcomes = await collect(queue, batch, 2)
        await queue.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert_exactly_once(outcomes, 2)
    assert all("0 results for 1 items" in (o.error or "") for o in outcomes)


def test_missing_indexes_time_out_with_an_error_outcome() -> None:
    async def stuck(items: list[WorkItem]) -> list[dict]:
        if items[0].index == 1:
            await asyncio.sleep(60)
        return [{"ok": True} for _ in items]

    async def scenario() -> list[Outcome]:
        queue = InProcessQueue(stuck, workers=2, max_batch=1)
        await queue.start()
        batch, items = make_batch(3)
        await queue.submit(items)
        outcomes = await collect(queue, batch, 3, timeout_s=0.5)
        await queue.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert_exactly_once(outcomes, 3)
    assert outcomes[-1] == Outcome(outcomes[-1].batch, 1, None, TIMED_OUT)
    assert all(o.ok for o in outcomes[:-1])


def test_submit_over_max_depth_raises_queue_full() -> None:
    async def handler(items: list[WorkItem]) -> list[dict]:
        return [{} for _ in items]

    async def scenario() -> None:
        queue = InProcessQueue(handler, max_depth=10, retry_after_s=3.0)  # not started: nothing drains
        await queue.submit(make_batch(8)[1])
        with pytest.raises(QueueFull) as full:
            await queue.submit(make_batch(3)[1])
        assert full.value.retry_after_s == 3.0
        assert await queue.depth() == 8  # the rejected submission left no trace
        await queue.submit(make_batch(2)[1])
        assert await queue.depth() == 10
        with pytest.raises(ValueError):
            await queue.submit(make_batch(11)[1])  # can never fit: a caller error, not "retry later"

    asyncio.run(scenario())
