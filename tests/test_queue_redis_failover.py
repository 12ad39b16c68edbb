"""RedisQueue + RedisWorker processes under failure: a worker SIGKILLed mid-batch, and Redis
itself SIGKILLed and restarted from its AOF. Every index must still arrive exactly once."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from botgrpo.services.queue import DEFAULT_GROUP, DEFAULT_STREAM, Outcome, RedisQueue, WorkItem
from tests.redis_server import RedisServer, redis_server_fixture  # noqa: F401  (provides redis_server)

REPO_ROOT = Path(__file__).resolve().parents[1]

WORKER_SCRIPT = """
import asyncio, logging, sys
from botgrpo.services.queue import run_worker
from botgrpo.services.schemas import Result

url, name, delay_s, claim_idle_ms = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
logging.basicConfig(level=logging.INFO, format=f"{name} %(levelname)s %(name)s: %(message)s")

async def handler(items):
    results = []
    for item in items:
        await asyncio.sleep(delay_s)
        results.append(Result(id=str(item.index), index=item.index, score=0.0, token_scores=[],
                              details={"echo": item.payload, "worker": name}))
    return results

asyncio.run(run_worker(url, handler, consumer=name, batch_size=4, block_ms=200,
                       claim_idle_ms=claim_idle_ms, max_attempts=5))
"""

SpawnWorker = Callable[..., subprocess.Popen]


@pytest.fixture
def spawn_worker(tmp_path: Path) -> Iterator[SpawnWorker]:
    """Start ``python -c WORKER_SCRIPT`` processes; any still alive at teardown are killed."""
    procs: list[subprocess.Popen] = []

    def spawn(url: str, name: str, delay_s: float = 0.05, claim_idle_ms: int = 500) -> subprocess.Popen:
        log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process below
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT, url, name, str(delay_s), str(claim_idle_ms)],
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            stdout=log, stderr=subprocess.STDOUT,
        )
        proc.log = log  # type: ignore[attr-defined]
        procs.append(proc)
        return proc

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.log.close()  # type: ignore[attr-defined]


def submit_batch(n: int) -> tuple[str, list[WorkItem]]:
    batch = uuid.uuid4().hex
    return batch, [WorkItem(batch, i, {"task": "echo", "rollout": {"i": i}}) for i in range(n)]


def assert_all_scored_once(outcomes: list[Outcome], n: int) -> None:
    assert sorted(o.index for o in outcomes) == list(range(n)), "an index was lost or duplicated"
    bad = [o for o in outcomes if o.result is None or o.result.details["echo"]["rollout"]["i"] != o.index]
    assert not bad, f"failed or mismatched outcomes: {bad[:3]}"


def assert_work_stream_drained(server: RedisServer) -> None:
    client = server.client()
    assert client.xlen(DEFAULT_STREAM) == 0
    assert client.xpending(DEFAULT_STREAM, DEFAULT_GROUP)["pending"] == 0
    client.close()


def test_killed_worker_mid_batch_is_rescored_by_the_survivor(
    redis_server: RedisServer, spawn_worker: SpawnWorker
) -> None:
    doomed = spawn_worker(redis_server.url, "doomed")
    survivor = spawn_worker(redis_server.url, "survivor")
    n = 60

    async def scenario() -> tuple[list[Outcome], int]:
        queue = RedisQueue(redis_server.url, poll_s=0.2)
        await queue.start()
        batch, items = submit_batch(n)
        await queue.submit(items)
        outcomes: list[Outcome] = []
        held_at_death = 0
        async for outcome in queue.results(batch, n, timeout_s=40):
            outcomes.append(outcome)
            if held_at_death == 0 and len(outcomes) >= 8 and outcome.result.details["worker"] == "doomed":
                # It has just committed a batch; a moment later it is mid-way through the next.
                await asyncio.sleep(0.08)
                doomed.send_signal(signal.SIGKILL)
                doomed.wait(timeout=10)
                client = redis_server.client()
                held_at_death = len(client.xpending_range(DEFAULT_STREAM, DEFAULT_GROUP, "-", "+", 100, "doomed"))
                client.close()
        assert await queue.depth() == 0
        await queue.close()
        return outcomes, held_at_death

    outcomes, held_at_death = asyncio.run(scenario())
    assert held_at_death > 0, "the killed worker held no entries, so nothing was tested"
    assert_all_scored_once(outcomes, n)
    assert {o.result.details["worker"] for o in outcomes} == {"doomed", "survivor"}
    assert_work_stream_drained(redis_server)

    survivor.send_signal(signal.SIGTERM)
    assert survivor.wait(timeout=10) == 0, "worker did not exit cleanly on SIGTERM"


def test_redis_killed_and_restarted_mid_run_loses_nothing(
    redis_server: RedisServer, spawn_worker: SpawnWorker
) -> None:
    for name in ("w1", "w2"):
        spawn_worker(redis_server.url, name)
    n = 60

    async def scenario() -> list[Outcome]:
        queue = RedisQueue(redis_server.url, poll_s=0.2)
        await queue.start()
        batch, items = submit_batch(n)
        await queue.submit(items)
        outcomes: list[Outcome] = []
        async for outcome in queue.results(batch, n, timeout_s=40):
            outcomes.append(outcome)
            if len(outcomes) == 15:
                redis_server.kill()
                assert not await queue.healthy()
                await asyncio.sleep(0.5)  # workers and reader see the outage
                redis_server.start()
                assert await queue.healthy()
        await queue.close()
        return outcomes

    outcomes = asyncio.run(scenario())
    assert_all_scored_once(outcomes, n)
    assert_work_stream_drained(redis_server)
