"""The killable process pool: results, errors, deadlines, crashes, threads, asyncio, close."""
from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from botgrpo.sandbox.cpu_budget import WALL_FACTOR
from botgrpo.sandbox.process_pool import POOL_CLOSED, TIMEOUT, WORKER_DIED, ProcessPool
from tests.helpers import frozen

_WARMED = False


# Test-only tasks: module-level so that spawned workers can import them by reference.
def warm() -> None:
    global _WARMED
    _WARMED = True


def was_warmed() -> bool:
    return _WARMED


def square(x: int) -> int:
    return x * x


def divide(a: int, b: int) -> float:
    return a / b


def sleep_forever() -> None:
    time.sleep(3600)


def spin_forever() -> None:
    while True:
        pass


def crash() -> None:
    os._exit(3)


def unpicklable():
    return threading.Lock()


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes * 1024 * 1024))


@pytest.fixture(scope="module")
def pool():
    with ProcessPool(2, initializer=warm, default_timeout_s=5.0) as p:
        yield p


def test_map_returns_values_in_order(pool):
    outcomes = pool.map(square, [(i,) for i in range(50)])
    assert [o.value for o in outcomes] == [i * i for i in range(50)]
    assert all(o.ok for o in outcomes)


def test_initializer_ran_in_every_worker(pool):
    assert all(o.value is True for o in pool.map(was_warmed, [()] * 10))


def test_task_exception_is_an_outcome_not_a_raise(pool):
    outcome = pool.submit(divide, 1, 0).result()
    assert not outcome.ok and outcome.error.startswith("ZeroDivisionError")
    assert pool.submit(divide, 6, 3).result().value == 2


def test_hanging_task_is_killed_at_its_deadline_and_pool_recovers(pool):
    """A task that sleeps uses no CPU: the wall-clock backstop, WALL_FACTOR x its budget, ends it."""
    restarts = pool.stats()["restarts"]
    started = time.perf_counter()
    outcome = pool.submit(sleep_forever, timeout_s=0.5).result(timeout=30)
    elapsed = time.perf_counter() - started
    assert outcome.timed_out and outcome.error == TIMEOUT
    assert WALL_FACTOR * 0.5 <= elapsed < WALL_FACTOR * 0.5 + 10
    assert pool.stats()["restarts"] == restarts + 1
    assert pool.submit(square, 7).result(timeout=30).value == 49
    _wait_until(lambda: pool.stats()["alive"] == 2)


def test_a_computing_task_is_killed_at_its_cpu_budget(pool):
    """The budget is CPU time: an endless loop is stopped once it has used it (however busy the
    machine, within the backstop); the worker's replacement answers."""
    outcome = pool.submit(spin_forever, timeout_s=0.3).result(timeout=60)
    assert outcome.timed_out and outcome.error == TIMEOUT
    assert pool.submit(square, 8).result(timeout=30).value == 64


def test_a_task_that_waits_for_a_core_is_not_timed_out():
    """Issue 34: a worker that gets no CPU for three budgets (stopped, as a very busy machine
    would leave it) answers when it runs again; with a wall-clock deadline the task timed out."""
    with ProcessPool(1, default_timeout_s=0.5) as one:
        assert one.submit(square, 2).result(timeout=60).value == 4  # started and warm
        # the worker names itself (a diff of this process's descendants also caught another
        # pool's replacement worker starting at the same moment)
        worker = one.submit(os.getpid).result(timeout=60).value
        with frozen(worker, 3 * 0.5):
            future = one.submit(square, 3)
        outcome = future.result(timeout=30)
        assert outcome.ok and outcome.value == 9, outcome.error
        assert one.stats()["restarts"] == 0


def _wait_until(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_tasks_batched_behind_a_hang_still_run(pool):
    futures = [pool.submit(sleep_forever, timeout_s=0.5)] + [pool.submit(square, i) for i in range(20)]
    outcomes = [f.result(timeout=60) for f in futures]
    assert outcomes[0].timed_out
    assert [o.value for o in outcomes[1:]] == [i * i for i in range(20)]


def test_crashing_worker_is_replaced(pool):
    assert pool.submit(crash).result(timeout=30).error == WORKER_DIED
    assert pool.submit(square, 3).result(timeout=30).value == 9


def test_unpicklable_result_is_an_error(pool):
    outcome = pool.submit(unpicklable).result(timeout=30)
    assert not outcome.ok and "unpicklable" in outcome.error
    assert pool.submit(square, 4).result(timeout=30).value == 16


def test_unpicklable_argument_is_an_error(pool):
    outcome = pool.submit(square, threading.Lock()).result(timeout=30)
    assert not outcome.ok
    assert pool.submit(square, 5).result(timeout=30).value == 25


def test_submit_is_thread_safe(pool):
    def work(base: int) -> list[int]:
        return [o.value for o in pool.map(square, [(base + i,) for i in range(25)])]

    with ThreadPoolExecutor(8) as threads:
        results = list(threads.map(work, range(0, 800, 100)))
    assert results == [[(b + i) ** 2 for i in range(25)] for b in range(0, 800, 100)]


def test_asyncio_callers_do_not_block_the_loop(pool):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        outcomes = await pool.amap(sleep_forever, [()], timeout_s=0.5)
        tick_task.cancel()
        return outcomes, ticks

    outcomes, ticks = asyncio.run(main())
    assert outcomes[0].timed_out
    assert ticks >= 10  # the loop kept running while the task hung


def test_close_fails_new_work_and_stops_workers():
    pool = ProcessPool(1, default_timeout_s=2.0)
    assert pool.submit(square, 2).result(timeout=30).value == 4
    pool.close()
    pool.close()  # idempotent
    assert pool.submit(square, 2).result(timeout=1).error == POOL_CLOSED
    assert pool.stats()["alive"] == 0


def test_memory_limit_turns_runaway_allocation_into_an_error():
    with ProcessPool(1, memory_limit_mb=1024) as limited:
        outcome = limited.submit(allocate, 4096).result(timeout=30)
        assert not outcome.ok and outcome.error.startswith("MemoryError")
        assert limited.submit(allocate, 1).result(timeout=30).value == 1024 * 1024


def test_invalid_configuration_is_rejected():
    with pytest.raises(ValueError):
        ProcessPool(0)
