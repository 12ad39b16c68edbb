"""Level ``typecheck`` through the pool with each tsgo engine, side by side in one run.

    python -m benchmarks.typecheck_engines [--files 400] [--warmup 300] [--rounds 3] [--timeout-s 5]

The same ``--files`` components (those of ``benchmarks.scorers``) go through two pools of
``--workers`` workers each, one per engine of ``sandbox/node/lib/typecheck.mjs``: ``spawn`` (one
tsgo process per batch, the path before the server) and ``server`` (a warm tsgo API server per
worker). After ``--warmup`` other files per worker, the pools alternate, ``--rounds`` times each,
so a neighbour's load falls on both; each round's rate, the best and the median, and the ratio
of the medians are printed, with the load average before and after. Beside the rates, the CPU
time a file costs the whole pool (this process, its workers, esbuild and tsgo, from /proc) is
less sensitive to a neighbour's load: ``cores / CPU a file`` is what the pool could reach with
the machine to itself (an estimate, not a measurement).
"""
from __future__ import annotations

import argparse
import os
import statistics

from benchmarks.compile_throughput import bench_pool, component, proc_cpu
from botgrpo.sandbox.node_pool import TYPECHECK_ENGINES, NodePool


def _tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds of process ``root`` and all its descendants, alive or reaped (Linux /proc)."""
    root = root or os.getpid()
    parents: dict[int, list[int]] = {}
    cpu: dict[int, int] = {}
    for pid, ppid, _, ticks in proc_cpu():
        parents.setdefault(ppid, []).append(pid)
        cpu[pid] = ticks
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0)
        stack.extend(parents.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=300, help="warm-up files per worker")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout-s", type=float, default=5.0,
                   help="the pools' per-rollout budget (a tsgo run gets 0.45 x this); raise it on a loaded machine")
    args = p.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {args.workers} workers per pool,"
          f" timeout_s {args.timeout_s}")
    codes = [component(i) for i in range(args.files)]
    pools = {engine: NodePool(size=args.workers, timeout_s=args.timeout_s, typecheck_engine=engine)
             for engine in reversed(TYPECHECK_ENGINES)}
    rates: dict[str, list[float]] = {}
    cpu_ms: dict[str, list[float]] = {}
    try:
        for engine, pool in pools.items():
            bench_pool(pool, [component(200_000 + i) for i in range(args.workers)], "typecheck",
                       warmup=args.warmup)
        for _ in range(args.rounds):
            # level build beside them: what typecheck costs before tsgo runs (esbuild, summary)
            runs = [*((engine, pool, "typecheck") for engine, pool in pools.items()), ("build", pools["server"], "build")]
            for name, pool, level in runs:
                before = _tree_cpu_s()
                rates.setdefault(name, []).append(bench_pool(pool, codes, level, warmup=0))
                cpu_ms.setdefault(name, []).append((_tree_cpu_s() - before) * 1e3 / len(codes))
    finally:
        for pool in pools.values():
            pool.close()
    for engine, values in rates.items():
        shown = " / ".join(f"{v:.0f}" for v in values)
        cpu = statistics.median(cpu_ms[engine])
        what = "build level, for reference" if engine == "build" else f"typecheck, {engine} engine"
        print(f"  {what:26s}: {shown} files/s (best {max(values):.0f}, median {statistics.median(values):.0f});"
              f" CPU {cpu:.1f} ms a file (median), {os.cpu_count()} cores / CPU = {os.cpu_count() * 1e3 / cpu:.0f} files/s")
    ratio = statistics.median(rates["server"]) / statistics.median(rates["spawn"])
    print(f"  server / spawn (medians) = {ratio:.2f}x   (target: server >= 400 files/s)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
