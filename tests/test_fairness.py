"""One client's flood of slow rollouts cannot delay another client's single rollout by more than
about one rollout (issue 20, finding 5).

Before: the in-process queue was one FIFO, so a request waited for every rollout queued before
it (an innocent one-rollout ``typecheck`` waited 60.7 s behind 16 type-instantiation bombs).
Now each request waits in its own lane, lanes are served round-robin, and a worker takes about
``score_chunk_s`` of one request's work at a time (see ``services/queue/fair.py``).

The live test floods a real ``botgrpo serve`` with a slow but legal React input: a tail-recursive
conditional type instantiated at depth 200 (TypeScript allows 1,000), five times, about 1.3 s of
``typecheck`` each on a quiet core. ``python -m tests.test_fairness [TREE]`` prints the
measurement quoted in docs/security.md (``TREE``: another checkout, e.g. the code before the fix)::

    git worktree add /tmp/before-fairness 9d08043   # node_modules copied into its sandbox/node
    .venv/bin/python -m tests.test_fairness /tmp/before-fairness
    .venv/bin/python -m tests.test_fairness
"""
from __future__ import annotations

import asyncio
import json
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx

from botgrpo.services.queue import InProcessQueue, WorkItem
from botgrpo.services.queue.fair import FairBacklog, take_size

FLOOD = 24


def slow_component(depth: int = 200, copies: int = 5) -> str:
    """Legal TSX whose type check costs ~0.25 s per copy at depth 200 (tsgo), and compiles."""
    lines = ["type Rep<N extends number, S, A extends any[] = []> = A['length'] extends N ? A : Rep<N, S, [...A, S]>;"]
    for i in range(copies):
        lines.append(f"type T{i} = Rep<{depth}, {i}>;\nconst v{i}: T{i}['length'] = {depth};")
    total = " + ".join(f"v{i}" for i in range(copies))
    lines.append(f"export default function Slow() {{\n  return <p>{{{total}}}</p>;\n}}")
    return "```tsx\n" + "\n".join(lines) + "\n```"


QUICK = "```tsx\nexport default function Quick() {\n  return <p>hi</p>;\n}\n```"


# ------------------------------------------------------------------------------ the scheduler's rules

def items(batch: str, n: int) -> list[WorkItem]:
    return [WorkItem(batch, i, {}) for i in range(n)]


def test_a_new_lane_is_served_before_a_lane_already_served():
    backlog = FairBacklog()
    backlog.add(items("flood", 100))
    assert [i.batch for i in backlog.take(8)] == ["flood"]  # first take: one item, to learn the cost
    backlog.add(items("innocent", 1))
    assert [i.batch for i in backlog.take(8)] == ["innocent"]
    assert backlog.take(8)[0].batch == "flood" and len(backlog) == 99 - 1


def test_takes_follow_the_measured_cost_and_the_number_of_lanes():
    assert take_size(8, 1, None, 0.5) == 1  # unknown cost
    assert take_size(8, 1, 0.01, 0.5) == 8  # cheap: whole batches
    assert take_size(8, 1, 2.0, 0.5) == 1  # slow: one at a time
    assert take_size(8, 4, 0.01, 0.5) == 2  # four lanes share the batch
    backlog = FairBacklog(chunk_s=0.5)
    backlog.add(items("b", 20))
    backlog.take(8)
    backlog.record("b", 1, 0.1)
    assert len(backlog.take(8)) == 5


def test_a_finished_lane_leaves_no_cost_behind():
    """A long-running server sees millions of requests: a drained lane's cost estimate goes too."""
    backlog = FairBacklog(chunk_s=0.5)
    backlog.add(items("b", 2))
    backlog.take(8)
    backlog.record("b", 1, 0.1)
    assert backlog.take(8) and backlog.lanes() == 0
    backlog.record("b", 1, 0.1)
    assert backlog._cost == {}


def test_a_lane_that_is_not_ready_keeps_its_place_and_costs_nothing():
    backlog = FairBacklog()
    backlog.add(items("stalled", 5))
    backlog.add(items("reading", 5))
    assert backlog.take(8, ready=lambda b: b != "stalled")[0].batch == "reading"
    assert backlog.take(8, ready=lambda b: False) == []
    assert backlog.drop("stalled") == 5 and len(backlog) == 4


def test_a_single_item_waits_for_about_one_item_not_for_the_flood():
    """In-process queue, a handler that takes 0.1 s per item: the old FIFO made the single
    item wait for the whole flood (200 x 0.1 s / 2 workers = 10 s)."""
    async def handler(batch: list[WorkItem]) -> list[dict]:
        await asyncio.sleep(0.1 * len(batch))
        return [{} for _ in batch]

    async def scenario() -> float:
        queue = InProcessQueue(handler, workers=2, max_batch=8)
        await queue.start()
        flood = uuid.uuid4().hex
        await queue.submit(items(flood, 200))
        reader = asyncio.create_task(drain(queue, flood, 200))
        await asyncio.sleep(1.0)
        started = time.monotonic()
        single = uuid.uuid4().hex
        await queue.submit(items(single, 1))
        [outcome] = [o async for o in queue.results(single, 1, 30)]
        waited = time.monotonic() - started
        assert outcome.ok
        reader.cancel()
        await queue.close()
        return waited

    waited = asyncio.run(scenario())
    assert waited < 0.8, waited  # chunk_s 0.5 of work in each worker's hands, then this item


async def drain(queue: InProcessQueue, batch: str, count: int) -> None:
    async for _ in queue.results(batch, count, 60):
        pass


# ------------------------------------------------------------------------------ real server, real compiles

def post_timed(url: str, rollouts: list[dict]) -> float:
    body = {"task": "react", "options": {"level": "typecheck"}, "rollouts": rollouts}
    started = time.perf_counter()
    r = httpx.post(url + "/v1/rewards", content=json.dumps(body), headers={"content-type": "application/json"},
                   timeout=600)
    assert r.status_code == 200, r.text[:300]
    assert all(x["error"] is None and x["passed"] for x in r.json()["results"]), r.text[:500]
    return time.perf_counter() - started


def measure(url: str, flood: int = FLOOD) -> dict[str, float]:
    """Probe latencies (one quick rollout at a time) while another client's ``flood`` slow
    rollouts are being scored; the quiet latency first."""
    quiet = min(post_timed(url, [{"id": "q", "completion": QUICK}]) for _ in range(3))
    done = threading.Event()
    elapsed: dict[str, float] = {}

    def flooder() -> None:
        elapsed["flood"] = post_timed(url, [{"id": f"s{i}", "completion": slow_component()} for i in range(flood)])
        done.set()

    thread = threading.Thread(target=flooder)
    thread.start()
    time.sleep(1.0)  # the flood is queued and being scored
    probes = []
    while not done.is_set():
        probes.append(post_timed(url, [{"id": "p", "completion": QUICK}]))
        time.sleep(0.2)
    thread.join()
    probes.sort()
    p99 = probes[min(len(probes) - 1, int(0.99 * len(probes)))]
    return {"quiet_s": quiet, "flood_s": elapsed["flood"], "probes": len(probes),
            "p50_s": statistics.median(probes), "p99_s": p99, "max_s": probes[-1]}


def test_a_flood_of_slow_rollouts_delays_another_client_by_about_one_rollout(tmp_path):
    from tests.node_toolchain import require_node_toolchain
    from tests.live_server import LiveServer
    require_node_toolchain()
    srv = LiveServer(tmp_path)
    try:
        numbers = measure(srv.url)
    finally:
        srv.stop()
    # before: the first probe waited for the whole flood (max ~ flood_s); now about one slow
    # rollout per compiler worker, however long the flood
    assert numbers["probes"] >= 3, numbers
    assert numbers["max_s"] < max(0.3 * numbers["flood_s"], 3.0), numbers


if __name__ == "__main__":
    import os
    from botgrpo.processes import Server
    import tempfile
    tree = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp), tree=tree)
        try:
            print(json.dumps({"tree": str(tree or os.getcwd()), "flood": FLOOD, **measure(srv.url)}))
        finally:
            srv.stop()
