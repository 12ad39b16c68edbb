"""The reward server under load: the real server over HTTP, a trainer's mixed workload (issue 38).

    python -m benchmarks.server_load [--seconds 20] [--clients 1 8 64] [--modes embedded redis] [--quick]

Each mode runs as deployed, in processes of its own, with auth on (``BOTGRPO_API_KEY``; every
request carries the Bearer key):

* embedded: ``botgrpo serve`` (in-process queue, its 2 scoring tasks, a Node pool of 2);
* redis: its own ``redis-server``, ``botgrpo serve --redis-url URL`` and 2 ``botgrpo worker``
  processes with a Node pool of 1 each (2 compilers in all, as embedded).

For each N of ``--clients``, N clients (an ``httpx.AsyncClient`` each) send requests back to back
to ``POST /v1/rewards:stream`` for ``--seconds``; a request in flight at the deadline is finished
and counted. A request is one trainer group of ``--group`` rollouts of one kind, the kinds taken in
the fixed order of ``MIX`` (per 10 requests: 5 math, 3 React ``build``, 2 React ``typecheck``):
math from ``benchmarks.math_throughput.ordinary`` (GSM8K-like, about 70% right answers, each text
distinct); React 3 of 4 passing components (``benchmarks.compile_throughput.component``, each
distinct) and 1 of 4 from ``tests/data/react_corpus.CASES`` that fails at the request's level
(syntax, import and type errors). ``token_offsets`` are 4-character spans, a tokenizer's stand-in.
Before a mode's cells, ``--warmup`` uncounted rounds of 4 requests of each kind at once.

Per (mode, N): rollouts/s and requests/s over the cell's wall time (first request to last
response); p50/p99 latency of a request (to its last result line) and of a rollout (to its own
line); CPU milliseconds per rollout of the server's process tree, the workers' trees (compilers,
tsgo and the math pool are inside them), redis-server and this client process, from /proc and
``getrusage`` before and after the cell, also by process name (where the CPU goes); errors:
non-2xx answers, results with ``error`` set, ids missing or repeated, exceptions (all must be 0;
each is printed, and the exit status is then 1). Then each kind's request latency, which shows
whether one kind starves another.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import resource
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.compile_throughput import component
from benchmarks.math_throughput import ordinary
from benchmarks.server import summarise
from botgrpo.processes import Process, Redis, Server, botgrpo, tree_cpu_by_name
from tests.data.react_corpus import CASES
from tests.loaded import load

API_KEY = "server-load-benchmark-key"
MIX = ("math", "build", "math", "typecheck", "math", "build", "math", "typecheck", "math", "build")
SPAN_CHARS = 4


def token_spans(text: str) -> list[list[int]]:
    """``[[0, 4], [4, 8], ...]``: ``SPAN_CHARS``-character tokens covering ``text``."""
    return [[i, min(i + SPAN_CHARS, len(text))] for i in range(0, len(text), SPAN_CHARS)]


def math_group(k: int, size: int) -> list[dict]:
    """``size`` GSM8K-like completions with their reference answers (seeded by the request ``k``)."""
    rng = random.Random(k)
    return [{"completion": text, "reference": {"answer": answer}} for text, answer in (ordinary(rng) for _ in range(size))]


def react_group(level: str) -> Callable[[int, int], list[dict]]:
    """Groups at ``level``: every 4th rollout a corpus completion that fails there, the rest distinct
    passing components."""
    failing = [text for _, text, verdicts, _ in CASES if verdicts.get(level) is False]

    def group(k: int, size: int) -> list[dict]:
        return [{"completion": failing[(k + i) % len(failing)] if i % 4 == 3
                 else f"Here it is:\n```tsx\n{component(k * size + i)}```\n"} for i in range(size)]
    return group


@dataclass(frozen=True)
class Kind:
    task: str
    options: dict
    rollouts: Callable[[int, int], list[dict]]  # (request number, group size) -> rollouts without ids

    def body(self, k: int, size: int) -> dict:
        rollouts = [{"id": f"q{k}-{i}", "token_offsets": token_spans(r["completion"]), **r}
                    for i, r in enumerate(self.rollouts(k, size))]
        return {"task": self.task, "options": self.options, "rollouts": rollouts}


KINDS = {
    "math": Kind("math", {}, math_group),
    "build": Kind("react", {"level": "build"}, react_group("build")),
    "typecheck": Kind("react", {"level": "typecheck"}, react_group("typecheck")),
}


@dataclass
class Tally:
    """What a cell's clients saw."""
    request_s: list[float] = field(default_factory=list)
    rollout_s: list[float] = field(default_factory=list)
    kind_s: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Cell:
    """One (mode, clients) measurement; latencies in ms, CPU in ms per rollout by process role."""
    mode: str
    clients: int
    seconds: float
    requests: int
    rollouts: int
    requests_per_s: float
    rollouts_per_s: float
    request_p50_ms: float
    request_p99_ms: float
    rollout_p50_ms: float
    rollout_p99_ms: float
    cpu_ms_per_rollout: dict[str, float]  # role -> its process trees' CPU
    cpu_ms_by_process: dict[str, float]  # "role/name" -> CPU of the processes of that name in the role's trees
    kind_latency_ms: dict[str, tuple[int, float, float]]  # kind -> (requests, p50, p99)
    errors: list[str]


@dataclass
class Deployment:
    """The running processes of one mode; ``roles`` maps a role to its processes, ``commands``
    says how each was started (the environment it was given, then its argv)."""
    url: str
    roles: dict[str, list[Process]]
    env: dict[str, dict[str, str]]

    def commands(self) -> Iterator[str]:
        for role, procs in self.roles.items():
            given = " ".join(f"{k}={v}" for k, v in self.env.get(role, {}).items())
            for proc in procs:
                yield f"{role}: {given + ' ' if given else ''}{shlex.join(proc.proc.args)}"

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds so far by ``"role/name"`` (:func:`tree_cpu_by_name`), and ``"client/root"``:
        this process."""
        cpu: dict[str, float] = {}
        for role, procs in self.roles.items():
            for p in procs:
                for name, seconds in tree_cpu_by_name(p.proc.pid).items():
                    cpu[f"{role}/{name}"] = cpu.get(f"{role}/{name}", 0.0) + seconds
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {**cpu, "client/root": usage.ru_utime + usage.ru_stime}

    def stop(self) -> None:
        for procs in reversed(self.roles.values()):
            for p in procs:
                p.stop()


async def one_request(http: httpx.AsyncClient, kind_name: str, k: int, size: int, tally: Tally) -> None:
    body = KINDS[kind_name].body(k, size)
    expected = {r["id"] for r in body["rollouts"]}
    seen: list[str] = []
    started = time.perf_counter()
    try:
        async with http.stream("POST", "/v1/rewards:stream", json=body) as r:
            if not r.is_success:
                await r.aread()
                tally.errors.append(f"HTTP {r.status_code} on {kind_name}: {r.text[:200]}")
                return
            async for line in r.aiter_lines():
                if line:
                    result = json.loads(line)
                    tally.rollout_s.append(time.perf_counter() - started)
                    seen.append(result["id"])
                    if result.get("error"):
                        tally.errors.append(f"rollout {result['id']} ({kind_name}): error {result['error']!r}")
    except httpx.HTTPError as exc:
        tally.errors.append(f"{type(exc).__name__} on {kind_name}: {exc}")
        return
    elapsed = time.perf_counter() - started
    if sorted(seen) != sorted(expected):
        tally.errors.append(f"request {k} ({kind_name}): ids missing {sorted(expected - set(seen))[:3]}, "
                            f"{len(seen) - len(set(seen))} repeated")
    tally.request_s.append(elapsed)
    tally.kind_s.setdefault(kind_name, []).append(elapsed)


async def drive(url: str, clients: int, seconds: float, size: int, numbers: Iterator[int]) -> tuple[Tally, float]:
    """``clients`` clients sending requests back to back until ``seconds`` have passed; the tally
    and the wall time until the last response."""
    tally = Tally()
    started = time.perf_counter()
    deadline = started + seconds

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=600,
                                     headers={"Authorization": f"Bearer {API_KEY}"}) as http:
            while time.perf_counter() < deadline:
                k = next(numbers)
                await one_request(http, MIX[k % len(MIX)], k, size, tally)

    await asyncio.gather(*(client() for _ in range(clients)))
    return tally, time.perf_counter() - started


async def warm_up(url: str, rounds: int, size: int, numbers: Iterator[int]) -> Tally:
    """``rounds`` times each kind, 4 requests at once (every compiler and tsgo server gets work)."""
    tally = Tally()
    async with httpx.AsyncClient(base_url=url, timeout=600, headers={"Authorization": f"Bearer {API_KEY}"}) as http:
        for _ in range(rounds):
            for kind in KINDS:
                await asyncio.gather(*(one_request(http, kind, next(numbers), size, tally) for _ in range(4)))
    return tally


def measure(mode: str, deployment: Deployment, clients: int, seconds: float, size: int,
            numbers: Iterator[int]) -> Cell:
    before = deployment.cpu_s()
    tally, wall = asyncio.run(drive(deployment.url, clients, seconds, size, numbers))
    after = deployment.cpu_s()
    n = max(len(tally.rollout_s), 1)
    requests = summarise(tally.request_s or [0.0], len(tally.request_s), wall)
    rollouts = summarise(tally.rollout_s or [0.0], len(tally.rollout_s), wall)
    kinds = {}
    for kind, latencies in sorted(tally.kind_s.items()):
        s = summarise(latencies, len(latencies), wall)
        kinds[kind] = (len(latencies), s["p50"], s["p99"])
    by_process = {key: (after[key] - before.get(key, 0.0)) * 1e3 / n for key in after}
    by_role: dict[str, float] = {}
    for key, ms in by_process.items():
        by_role[key.split("/")[0]] = by_role.get(key.split("/")[0], 0.0) + ms
    return Cell(mode, clients, wall, len(tally.request_s), len(tally.rollout_s), requests["rate"], rollouts["rate"],
                requests["p50"], requests["p99"], rollouts["p50"], rollouts["p99"], by_role, by_process, kinds,
                tally.errors)


SERVER_ENV = {"BOTGRPO_API_KEY": API_KEY}
WORKER_ENV = {"BOTGRPO_REACT_POOL_SIZE": "1"}


def embedded(tmp: Path) -> Deployment:
    server = Server(tmp, env=SERVER_ENV)
    return Deployment(server.url, {"server": [server]}, {"server": SERVER_ENV})


def with_redis(tmp: Path, workers: int = 2) -> Deployment:
    redis = Redis(tmp / "redis")
    procs = [botgrpo(["worker", "--redis-url", redis.url, "--consumer", f"w{i}"], WORKER_ENV, tmp / f"worker{i}.log")
             for i in range(workers)]
    try:
        server = Server(tmp, env=SERVER_ENV, args=("--redis-url", redis.url))
    except Exception:
        for p in [*procs, redis]:
            p.stop()
        raise
    return Deployment(server.url, {"server": [server], "workers": procs, "redis": [redis]},
                      {"server": SERVER_ENV, "workers": WORKER_ENV})


MODES: dict[str, Callable[[Path], Deployment]] = {"embedded": embedded, "redis": with_redis}


def print_table(cells: list[Cell]) -> None:
    roles = ("server", "workers", "redis", "client")
    print(f"{'mode':9s} {'N':>3s} {'reqs':>5s} {'rollouts':>8s} {'req/s':>6s} {'roll/s':>7s} "
          f"{'req p50':>8s} {'req p99':>8s} {'roll p50':>8s} {'roll p99':>8s} {'CPU ms/roll':>11s} "
          + " ".join(f"{r:>7s}" for r in roles) + f" {'errors':>6s}")
    for c in cells:
        cpu = c.cpu_ms_per_rollout
        print(f"{c.mode:9s} {c.clients:3d} {c.requests:5d} {c.rollouts:8d} {c.requests_per_s:6.1f} "
              f"{c.rollouts_per_s:7.1f} {c.request_p50_ms:8.0f} {c.request_p99_ms:8.0f} {c.rollout_p50_ms:8.0f} "
              f"{c.rollout_p99_ms:8.0f} {cpu['server'] + cpu.get('workers', 0.0):11.2f} "
              + " ".join(f"{cpu[r]:7.2f}" if r in cpu else f"{'-':>7s}" for r in roles) + f" {len(c.errors):6d}")
    print("latency in ms; CPU ms/roll = server + workers process trees; then each role's own "
          "(client: this benchmark process)")
    print("\nwhere the CPU goes, ms a rollout by role/process (root: the role's own process; python: "
          "its math pool; tsc: tsgo; exited: processes reaped meanwhile):")
    for c in cells:
        parts = sorted(((ms, key) for key, ms in c.cpu_ms_by_process.items() if ms >= 0.05), reverse=True)
        print(f"  {c.mode} N={c.clients}: " + ", ".join(f"{key} {ms:.2f}" for ms, key in parts))
    print(f"\n{'mode':9s} {'N':>3s} {'kind':10s} {'reqs':>5s} {'p50 ms':>8s} {'p99 ms':>8s}")
    for c in cells:
        for kind, (n, p50, p99) in c.kind_latency_ms.items():
            print(f"{c.mode:9s} {c.clients:3d} {kind:10s} {n:5d} {p50:8.0f} {p99:8.0f}")


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return model


def main(argv: list[str] | None = None) -> list[Cell]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="each cell's sending time")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    p.add_argument("--group", type=int, default=8, help="rollouts a request (a trainer's group)")
    p.add_argument("--warmup", type=int, default=2, help="uncounted rounds before a mode's cells (a round: 4 "
                   "requests of each kind at once)")
    p.add_argument("--quick", action="store_true", help="a tiny run: 2 s cells, 1 and 4 clients, 1 warm-up round")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds, args.clients, args.warmup = 2.0, [1, 4], 1
    argv = sys.argv[1:] if argv is None else argv
    print(f"command: {shlex.join([sys.executable, '-m', 'benchmarks.server_load', *argv])}")
    print(f"machine: {machine()}; before: {load()}")
    print(f"workload: requests of {args.group} rollouts, kinds in the order {'/'.join(MIX)}; "
          f"{args.seconds:g} s a cell after {args.warmup} warm-up rounds; auth on")
    started = time.perf_counter()
    cells: list[Cell] = []
    numbers = itertools.count()
    with tempfile.TemporaryDirectory(prefix="botgrpo-load-") as tmp:
        for mode in args.modes:
            (Path(tmp) / mode).mkdir()
            deployment = MODES[mode](Path(tmp) / mode)
            try:
                for command in deployment.commands():
                    print(f"  {mode} {command}")
                warm = asyncio.run(warm_up(deployment.url, args.warmup, args.group, numbers))
                print(f"  {mode} warm-up: {len(warm.request_s)} requests, {len(warm.errors)} errors", flush=True)
                for clients in args.clients:
                    cells.append(measure(mode, deployment, clients, args.seconds, args.group, numbers))
                    print(f"  {mode} N={clients}: {cells[-1].rollouts_per_s:.1f} rollouts/s, "
                          f"{len(cells[-1].errors)} errors; {load()}", flush=True)
            finally:
                deployment.stop()
    print()
    print_table(cells)
    errors = [e for c in cells for e in c.errors]
    for e in errors[:20]:
        print(f"error: {e}")
    print(f"\nerrors: {len(errors)}; {time.perf_counter() - started:.0f} s in all; after: {load()}")
    return cells


if __name__ == "__main__":
    sys.exit(1 if any(c.errors for c in main()) else 0)
