"""Where a pool's CPU goes per file: ``python -m benchmarks.pool_profile [--files 400] [--warmup 300]``.

Two views, both in CPU milliseconds per file (not wall time, so a loaded machine stretches the
wall clock but hardly the table; the shares are what to read):

* pool: a warm :class:`NodePool` of 2 workers with every isolation layer compiles ``--files``
  benchmark components (``benchmarks.compile_throughput.component``) per mode; the CPU of this
  Python process (submit, dispatcher threads, JSON, pipes: ``time.process_time``) and of each
  process in the workers' process groups (``/proc``: the Node worker, esbuild's Go service, the
  oxlint host, the warm tsgo server the worker starts for level typecheck, bwrap) is read before
  and after, a process's own CPU apart from its reaped children's (a spawned tsgo run); level
  ``syntax`` by oxc's path and by esbuild's (``NodePool(syntax_engine=...)``); ``typecheck``
  with and without the spec summary. ``--only typecheck --rounds 2`` repeats those modes only.
* stages: one unsandboxed Node process runs each stage of the worker on the same files, one file
  at a time after a warm-up (``benchmarks/pool_profile.mjs``), with its own CPU
  (``process.cpuUsage``) and its children's (esbuild's service, the tsgo server) from ``/proc``;
  for typecheck, each stage the worker runs a file through, and the tsgo server on batches of
  128 down to 1 file (its cost per run and per file).
* functions (``--cpu-prof N``): one unsandboxed worker (``sandbox/node/worker.mjs`` under
  ``node --cpu-prof``) answers N ``syntax`` + oxlint requests in batches of 32 as the dispatcher
  sends them; V8's sampled profile is summed per function (self and inclusive ms a file, start-up
  included but amortised over N), for the main thread and the oxc thread. Samples are wall-clock
  ticks of a running thread, so a loaded machine inflates them: read the shares.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.compile_throughput import component
from botgrpo.sandbox.launcher import NODE_DIR
from botgrpo.sandbox.node_pool import NodePool

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")
STAGES_SCRIPT = Path(__file__).with_name("pool_profile.mjs")
#: (label, level, lint, syntax engine, summary) of each pool mode measured: oxc's path (the default)
#: and esbuild's transform on every file (the path before) for the syntax level; the lint with no
#: spec summary (what the react scorer asks for a rollout with no spec) and with it; level
#: typecheck likewise without the summary and with it, and without it from a pool whose dispatchers
#: send a worker up to 64 files at a time (NodePool(max_batch=64): tsgo runs of up to 64, the
#: worker batcher's own cap, instead of 32).
MODES = (("syntax, oxc path", "syntax", False, "oxc", True), ("syntax, esbuild path", "syntax", False, "esbuild", True),
         ("syntax + oxlint, oxc path, no summary", "syntax", "oxlint", "oxc", False),
         ("syntax + oxlint, oxc path", "syntax", "oxlint", "oxc", True),
         ("syntax + oxlint, esbuild path", "syntax", "oxlint", "esbuild", True),
         ("build, oxc path", "build", False, "oxc", True), ("build, esbuild path", "build", False, "esbuild", True),
         ("typecheck, no summary, oxc path", "typecheck", False, "oxc", False),
         ("typecheck, no summary, esbuild path", "typecheck", False, "esbuild", False), ("typecheck", "typecheck", False, "oxc", True),
         ("typecheck, no summary, max_batch 64", "typecheck", False, "oxc, max_batch 64", False))


def process_kind(pid: int) -> str:
    """A worker-group process by what it runs: node worker, oxlint host, esbuild, the warm tsgo
    server (``tsc --api``, lib/tsgo-server.mjs), bwrap, ..."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "oxlint-host" in cmdline:
        return "oxlint host (node + Rust)"
    if comm == "tsc" and " --api" in cmdline:
        return "tsgo server (Go)"
    if comm == "node":
        return "node worker"
    return comm


def process_ticks(groups: set[int]) -> dict[int, tuple[str, int, int]]:
    """pid -> (kind, own utime + stime, reaped children's cutime + cstime) for the processes in
    the process groups ``groups``. A child that has exited and been waited for (a spawned tsgo
    run, a dead tsgo server) is no longer listed: its CPU is in its parent's reaped ticks."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups:
            out[int(entry)] = (process_kind(int(entry)), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    return out


def group_ticks(groups: set[int]) -> dict[int, tuple[str, int]]:
    """pid -> (kind, utime + stime + reaped children's ticks) for processes in ``groups``."""
    return {pid: (kind, own + reaped) for pid, (kind, own, reaped) in process_ticks(groups).items()}


def cpu_by_kind(before: dict[int, tuple[str, int, int]], after: dict[int, tuple[str, int, int]]) -> dict[str, int]:
    """Ticks spent between two :func:`process_ticks` readings, by process kind; what a process's
    reaped children spent goes to "<kind>: reaped children" (a process started in between counts
    from zero; one that ended in between counts in its parent's reaped children)."""
    spent: dict[str, int] = {}
    for pid, (kind, own, reaped) in after.items():
        _, own0, reaped0 = before.get(pid, (kind, 0, 0))
        spent[kind] = spent.get(kind, 0) + own - own0
        if reaped - reaped0:
            spent[f"{kind}: reaped children"] = spent.get(f"{kind}: reaped children", 0) + reaped - reaped0
    return spent


def pool_mode(pool: NodePool, codes: list[str], level: str, lint, warmup: int, summary: bool = True) -> dict[str, float]:
    """CPU ms per file of each process kind for one mode, and the wall rate."""
    pool.compile_many([component(200_000 + i) for i in range(warmup * pool.size)], level=level, lint=lint, summary=summary)
    groups = set(pool.worker_pids())
    before, py0, t0 = process_ticks(groups), time.process_time(), time.perf_counter()
    results = pool.compile_many(codes, level=level, lint=lint, summary=summary)
    wall, py1, after = time.perf_counter() - t0, time.process_time(), process_ticks(groups)
    assert all(r.ok for r in results)
    per_kind: dict[str, float] = {"python (pool, dispatchers, JSON, pipes)": (py1 - py0) * 1000 / len(codes)}
    for kind, ticks in cpu_by_kind(before, after).items():
        per_kind[kind] = ticks * TICK_MS / len(codes)
    per_kind["files/s (wall)"] = len(codes) / wall
    return per_kind


def node_stages(files: int) -> str:
    """The stage table of benchmarks/pool_profile.mjs (run in sandbox/node, unsandboxed)."""
    codes = json.dumps([component(i) for i in range(files)])
    return subprocess.run(["node", str(STAGES_SCRIPT)], input=codes, capture_output=True, text=True,
                          cwd=NODE_DIR, check=True).stdout


def profile_worker(files: int, engine: str, out_dir: Path) -> float:
    """Run one unsandboxed worker under ``node --cpu-prof`` over ``files`` syntax+oxlint requests;
    return its files/s (the profiles land in ``out_dir``)."""
    env = dict(os.environ, BOTGRPO_SYNTAX_ENGINE=engine)
    proc = subprocess.Popen(["node", "--stack-size=3000", "--max-semi-space-size=32", "--cpu-prof",
                             f"--cpu-prof-dir={out_dir}", "worker.mjs"], cwd=NODE_DIR, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert json.loads(proc.stdout.readline())["id"] == "__ready__"
    started = time.perf_counter()
    for first in range(0, files, 32):
        batch = range(first, min(files, first + 32))
        for i in batch:
            proc.stdin.write(json.dumps({"id": str(i), "code": component(i), "level": "syntax", "allow": [],
                                         "lint": "oxlint"}) + "\n")
        proc.stdin.flush()
        for _ in batch:
            assert json.loads(proc.stdout.readline())["ok"]
    rate = files / (time.perf_counter() - started)
    proc.stdin.close()
    proc.wait(timeout=60)
    return rate


def profile_table(path: Path, files: int, top: int = 22) -> list[str]:
    """Self and inclusive sampled ms a file per function of one .cpuprofile."""
    profile = json.loads(path.read_text())
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {child: n["id"] for n in profile["nodes"] for child in n.get("children", [])}
    ticks: collections.Counter[int] = collections.Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        ticks[sample] += delta
    name = lambda nid: (lambda f: f"{f['functionName'] or '(anonymous)'} {f['url'].rsplit('/', 1)[-1]}")(nodes[nid]["callFrame"])  # noqa: E731
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for nid, us in ticks.items():
        own[name(nid)] += us
        seen, cur = set(), nid
        while cur is not None:
            if name(cur) not in seen:
                inclusive[name(cur)] += us
                seen.add(name(cur))
            cur = parent.get(cur)
    total = sum(ticks.values())
    idle = own.get("(idle) ", 0)
    lines = [f"    sampled {total / 1000 / files:.3f} ms a file, of which idle {idle / 1000 / files:.3f}"]
    for label, counter in (("self", own), ("inclusive", inclusive)):
        lines.append(f"    -- {label} (ms a file, share of the non-idle samples)")
        for key, us in counter.most_common(top + 2):
            if key.startswith("(root)") or key.startswith("(idle)"):
                continue
            lines.append(f"    {us / 1000 / files:7.3f}  {us / max(1, total - idle):6.1%}  {key}")
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--warmup", type=int, default=300, help="warm-up files per worker before each mode")
    p.add_argument("--cpu-prof", type=int, default=0, metavar="N",
                   help="also profile one unsandboxed worker over N syntax+oxlint files, per engine")
    p.add_argument("--only", default="", metavar="TEXT", help="pool modes whose label contains TEXT only")
    p.add_argument("--rounds", type=int, default=1, help="measure the pool modes this many times, interleaved")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    codes = [component(i) for i in range(args.files)]
    with NodePool(size=2, syntax_engine="oxc") as oxc, NodePool(size=2, syntax_engine="esbuild") as esbuild, \
            NodePool(size=2, syntax_engine="oxc", max_batch=64) as oxc64:
        pools = {"oxc": oxc, "esbuild": esbuild, "oxc, max_batch 64": oxc64}
        print(f"pools of 2 workers, layers: {', '.join(sorted(oxc.active_layers()))}")
        for label, level, lint, engine, summary in [m for _ in range(args.rounds) for m in MODES if args.only in m[0]]:
            row = pool_mode(pools[engine], codes, level, lint, args.warmup, summary)
            rate = row.pop("files/s (wall)")
            total = sum(row.values())
            print(f"\n## pool, {label}: {rate:.0f} files/s wall, {total:.2f} ms CPU a file in all")
            for kind, ms in sorted(row.items(), key=lambda kv: -kv[1]):
                print(f"  {kind:42s} {ms:6.3f} ms/file  {ms / total:5.1%}")
    print("\n## stages in one Node process (ms CPU a file; wall is stretched by the load)")
    print(node_stages(args.files), end="")
    for engine in ("oxc", "esbuild") if args.cpu_prof else ():
        with tempfile.TemporaryDirectory(prefix="botgrpo-cpuprof-") as out:
            rate = profile_worker(args.cpu_prof, engine, Path(out))
            print(f"\n## functions, one unsandboxed worker, syntax + oxlint, {engine} path ({rate:.0f} files/s)")
            for path in sorted(Path(out).glob("*.cpuprofile")):  # the main thread first, then the oxc thread
                print(f"  {'main thread' if path.name.endswith('.001.cpuprofile') else 'oxc thread'}:")
                print("\n".join(profile_table(path, args.cpu_prof)))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
