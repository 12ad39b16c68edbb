"""Reward-server throughput and latency against calling the scorer directly, in one run.

    python -m benchmarks.server [--rollouts 16 --requests 48 --clients 1 8 64]

For 1, 8 and 64 concurrent clients, each sending requests of ``--rollouts`` react ``build``
rollouts: rollouts/s and request latency p50/p99, for
* direct: ``ReactScorer.score_batch`` in this process (a pool of 2 Node workers), threads as clients;
* embedded: ``botgrpo serve`` (in-process queue, a pool of 2 Node workers) over HTTP;
* redis: ``botgrpo serve`` + Redis + 2 ``botgrpo worker`` processes (a Node pool of 1 each).
Then the overhead at saturation, ``1 - best server rate / best direct rate`` over the client
counts, and for one streamed batch
of 256 rollouts the time to the first result as a share of the whole batch's time.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchmarks.compile_throughput import component
from botgrpo.processes import Redis, Server, botgrpo
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer


def rollouts(n: int, offset: int = 0) -> list[dict]:
    return [{"id": f"r{offset + i}", "completion": f"```tsx\n{component(offset + i)}```"} for i in range(n)]


def summarise(latencies: list[float], total: int, seconds: float) -> dict[str, float]:
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return {"rate": total / seconds, "p50": statistics.median(latencies) * 1e3, "p99": q[98] * 1e3}


def bench_direct(clients: int, requests: int, size: int) -> dict[str, float]:
    scorer, opts = ReactScorer(pool_size=2), ReactOptions(level="build")
    scorer.score_batch([Rollout(r["completion"]) for r in rollouts(8)], opts)  # warm-up

    def one(k: int) -> float:
        started = time.perf_counter()
        scorer.score_batch([Rollout(r["completion"]) for r in rollouts(size, k * size)], opts)
        return time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(one, range(requests)))
    result = summarise(latencies, requests * size, time.perf_counter() - started)
    scorer.close()
    return result


async def bench_http(url: str, clients: int, requests: int, size: int) -> dict[str, float]:
    body = {"task": "react", "options": {"level": "build"}}
    latencies: list[float] = []
    counter = iter(range(requests))
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=httpx.Limits(max_connections=clients)) as http:
        await http.post("/v1/rewards", json={**body, "rollouts": rollouts(8)})  # warm-up

        async def client() -> None:
            for k in counter:
                started = time.perf_counter()
                r = await http.post("/v1/rewards", json={**body, "rollouts": rollouts(size, k * size)})
                r.raise_for_status()
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return summarise(latencies, requests * size, time.perf_counter() - started)


async def first_result_share(url: str, n: int = 256) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=300) as http:
        started = time.perf_counter()
        first = None
        async with http.stream("POST", "/v1/rewards:stream",
                               json={"task": "react", "options": {"level": "build"}, "rollouts": rollouts(n)}) as r:
            async for line in r.aiter_lines():
                if line and first is None:
                    first = time.perf_counter() - started
        return first / (time.perf_counter() - started)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=16, help="rollouts per request")
    p.add_argument("--requests", type=int, default=48, help="requests per measurement")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    args = p.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.requests} requests of "
          f"{args.rollouts} react/build rollouts per row")
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for c in args.clients:
        rows[("direct", c)] = bench_direct(c, args.requests, args.rollouts)
    shares = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        def measure(mode: str, url: str) -> None:
            for c in args.clients:
                rows[(mode, c)] = asyncio.run(bench_http(url, c, args.requests, args.rollouts))
            shares[mode] = asyncio.run(first_result_share(url))

        server = Server(tmp, env={"BOTGRPO_REACT_POOL_SIZE": "2"})
        try:
            measure("embedded", server.url)
        finally:
            server.stop()
        redis = Redis(tmp / "redis")
        env = {"REDIS_URL": redis.url, "BOTGRPO_REACT_POOL_SIZE": "1"}
        workers = [botgrpo(["worker", "--consumer", f"w{i}"], env, tmp / f"worker{i}.log") for i in range(2)]
        server = Server(tmp, env=env)
        try:
            measure("redis+2 workers", server.url)
        finally:
            server.stop()
            for w in workers:
                w.stop()
            redis.stop()

    print(f"{'mode':16s} {'clients':>7s} {'rollouts/s':>11s} {'p50 ms':>8s} {'p99 ms':>8s}")
    for (mode, c), r in rows.items():
        print(f"{mode:16s} {c:7d} {r['rate']:11.0f} {r['p50']:8.0f} {r['p99']:8.0f}")
    def saturated(mode: str) -> float:  # the best rate over the client counts
        return max(r["rate"] for (m, _), r in rows.items() if m == mode)

    for mode in ("embedded", "redis+2 workers"):
        overhead = 1 - saturated(mode) / saturated("direct")
        print(f"{mode}: overhead at saturation = {overhead:+.0%} of direct scoring (target < 15%); "
              f"first streamed result at {shares[mode]:.0%} of the batch time (target < 20%)")


if __name__ == "__main__":
    main()
