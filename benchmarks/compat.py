"""Latency of one math sample through the peers' protocols against ``/v1/rewards``, in one run.

    python -m benchmarks.compat [--requests 200]

A live ``botgrpo serve`` (in-process queue); each route gets the same sample (the body its
client sends: OpenRLHF's three lists, slime's one sample, our rollout) ``--requests`` times
from one client, one request at a time, after a warm-up. Prints the median and p90 per route
and each compat route's median over ``/v1/rewards``'s: what the protocol layer costs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import httpx

from botgrpo.processes import Server

PROMPT, RESPONSE = "What is 6 * 7?\n", "6 * 7 = 42, so \\boxed{42}."
ROUTES = {
    "openrlhf": ("/compat/openrlhf/math/get_reward", {"query": [PROMPT + RESPONSE], "prompts": [PROMPT], "labels": ["42"]}),
    "slime": ("/compat/slime/math", {"prompt": PROMPT, "response": RESPONSE, "label": "42"}),
    "v1": ("/v1/rewards", {"task": "math", "rollouts": [{"id": "a", "prompt": PROMPT, "completion": RESPONSE,
                                                          "reference": {"answer": "42"}}]}),
}


def latencies(client: httpx.Client, url: str, body: bytes, n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        r = client.post(url, content=body, headers={"Content-Type": "application/json"})
        times.append(time.perf_counter() - started)
        if r.status_code != 200:
            raise RuntimeError(f"{url}: {r.status_code} {r.text[:200]}")
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.compat")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    server = Server(tempfile.mkdtemp(prefix="bench-compat-"))
    try:
        with httpx.Client(timeout=60) as client:
            bodies = {name: (server.url + path, json.dumps(body).encode()) for name, (path, body) in ROUTES.items()}
            for url, body in bodies.values():
                latencies(client, url, body, 20)  # warm-up
            medians = {}
            for name, (url, body) in bodies.items():
                times = sorted(latencies(client, url, body, args.requests))
                medians[name] = statistics.median(times)
                print(f"{name:9s} median {medians[name] * 1e3:6.1f} ms   p90 {times[int(0.9 * len(times))] * 1e3:6.1f} ms")
            for name in ("openrlhf", "slime"):
                print(f"{name} / v1 median: {medians[name] / medians['v1']:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
