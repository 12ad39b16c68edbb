"""Level ``typecheck`` through the pool with each tsgo engine, side by side in one run.

    python -m benchmarks.typecheck_engines [--files 400] [--warmup 300] [--rounds 3]

The same ``--files`` components (those of ``benchmarks.scorers``) go through two pools of
``--workers`` workers each, one per engine of ``sandbox/node/lib/typecheck.mjs``: ``spawn`` (one
tsgo process per batch, the path before the server) and ``server`` (a warm tsgo API server per
worker). After ``--warmup`` other files per worker, the pools alternate, ``--rounds`` times each,
so a neighbour's load falls on both; each round's rate, the best and the median, and the ratio
of the medians are printed, with the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics

from benchmarks.compile_throughput import bench_pool, component
from botgrpo.sandbox.node_pool import TYPECHECK_ENGINES, NodePool


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=300, help="warm-up files per worker")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {args.workers} workers per pool")
    codes = [component(i) for i in range(args.files)]
    pools = {engine: NodePool(size=args.workers, typecheck_engine=engine) for engine in reversed(TYPECHECK_ENGINES)}
    rates: dict[str, list[float]] = {engine: [] for engine in pools}
    try:
        for engine, pool in pools.items():
            bench_pool(pool, [component(200_000 + i) for i in range(args.workers)], "typecheck",
                       warmup=args.warmup)
        for _ in range(args.rounds):
            for engine, pool in pools.items():
                rates[engine].append(bench_pool(pool, codes, "typecheck", warmup=0))
    finally:
        for pool in pools.values():
            pool.close()
    for engine, values in rates.items():
        shown = " / ".join(f"{v:.0f}" for v in values)
        print(f"  typecheck, {engine:6s} engine: {shown} files/s (best {max(values):.0f}, median {statistics.median(values):.0f})")
    ratio = statistics.median(rates["server"]) / statistics.median(rates["spawn"])
    print(f"  server / spawn (medians) = {ratio:.2f}x   (target: server >= 400 files/s)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
