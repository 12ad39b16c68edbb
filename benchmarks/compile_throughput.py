"""Throughput of the compile pool: ``python -m benchmarks.compile_throughput [--files N] [--size K]``.

Compiles N distinct ~40-line components at each level through a warm pool and, as a
baseline, spawns the esbuild CLI once per file (what a naive scorer would do); then renders
them (level ``render``: build, execute, server-render) and lints them (ESLint after the
syntax check). Each measurement follows a warm-up of ``--warmup`` files per worker: ESLint and
the TypeScript parser take a few hundred files to reach their steady speed in V8's JIT.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from typing import Iterator

from botgrpo.sandbox.launcher import NODE_DIR
from botgrpo.sandbox.node_pool import NodePool

_TEMPLATE = '''import {{ useState }} from "react";

type Item = {{ id: number; label: string; done: boolean }};

interface Props {{
  title: string;
  initial?: Item[];
}}

export function TodoList{n}({{ title, initial = [] }}: Props) {{
  const [items, setItems] = useState<Item[]>(initial);
  const [draft, setDraft] = useState("");

  function add() {{
    if (!draft.trim()) return;
    setItems([...items, {{ id: items.length + {n}, label: draft, done: false }}]);
    setDraft("");
  }}

  function toggle(id: number) {{
    setItems(items.map((it) => (it.id === id ? {{ ...it, done: !it.done }} : it)));
  }}

  return (
    <section className="todo">
      <h2>{{title}}</h2>
      <input value={{draft}} onChange={{(e) => setDraft(e.target.value)}} />
      <button onClick={{add}}>Add item {n}</button>
      <ul>
        {{items.map((it) => (
          <li key={{it.id}} onClick={{() => toggle(it.id)}}>
            {{it.done ? <s>{{it.label}}</s> : it.label}}
          </li>
        ))}}
      </ul>
    </section>
  );
}}

export default TodoList{n};
'''


def proc_cpu() -> Iterator[tuple[int, int, int, int]]:
    """``(pid, ppid, pgrp, CPU ticks)`` of every live process (Linux /proc; ticks are utime +
    stime + the reaped children's cutime + cstime, in ``os.sysconf("SC_CLK_TCK")`` units)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), int(fields[1]), int(fields[2]), sum(int(x) for x in fields[11:15])


def component(n: int) -> str:
    return _TEMPLATE.format(n=n)


def bench_pool(pool: NodePool, codes: list[str], level: str, *, lint: bool = False, warmup: int = 20,
               summary: bool = True) -> float:
    """Files per second through ``pool`` at ``level`` (``lint``: ESLint too; ``summary``: the spec
    summary too), after a warm-up on ``warmup`` other files per worker."""
    extra = [component(100_000 + i) for i in range(warmup * pool.size)]
    pool.compile_many(extra, level=level, lint=lint, summary=summary)
    started = time.perf_counter()
    results = pool.compile_many(codes, level=level, lint=lint, summary=summary)
    elapsed = time.perf_counter() - started
    assert all(r.ok for r in results), [r.diagnostics for r in results if not r.ok][:1]
    if level == "render":
        assert all(r.render.status == "ok" for r in results)
    return len(codes) / elapsed


def bench_screenshots(htmls: list[str], size: int = 1) -> float:
    """Screenshots per second of server-rendered markup (800 x 600) through a warm Chromium pool."""
    from botgrpo.sandbox.screenshot import ScreenshotPool

    with ScreenshotPool(size=size) as shots:
        shots.shoot_many(htmls[:max(2, size)])  # start the browsers
        started = time.perf_counter()
        taken = shots.shoot_many(htmls)
        elapsed = time.perf_counter() - started
    assert all(s.png for s in taken), [s.error for s in taken if not s.png][:1]
    return len(htmls) / elapsed


def bench_esbuild_cli(codes: list[str]) -> float:
    esbuild = NODE_DIR / "node_modules" / ".bin" / "esbuild"
    started = time.perf_counter()
    for code in codes:
        subprocess.run([str(esbuild), "--loader=tsx", "--jsx=automatic"], input=code.encode(),
                       capture_output=True, check=True)
    return len(codes) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--size", type=int, default=2, help="pool workers")
    parser.add_argument("--warmup", type=int, default=300, help="warm-up files per worker before render and lint")
    args = parser.parse_args()
    codes = [component(i) for i in range(args.files)]
    with NodePool(size=args.size) as pool:
        print(f"layers: {sorted(pool.active_layers())}")
        for level in ("syntax", "build", "typecheck"):
            print(f"{level:>9}: {bench_pool(pool, codes, level):8.1f} files/s (pool of {args.size})")
        print(f"   render: {bench_pool(pool, codes, 'render', warmup=args.warmup):8.1f} components/s")
        print(f"     lint: {bench_pool(pool, codes, 'syntax', lint=True, warmup=args.warmup):8.1f} files/s")
        htmls = [r.render.html for r in pool.compile_many(codes[:100], level="render")]
    print(f"screenshots: {bench_screenshots(htmls):8.1f} /s (one Chromium)")
    print(f"esbuild CLI spawn per file: {bench_esbuild_cli(codes[:100]):8.1f} files/s")


if __name__ == "__main__":
    main()
