"""Throughput of the compile pool: ``python -m benchmarks.compile_throughput [--files N] [--size K]``.

Compiles N distinct ~40-line components at each level through a warm pool and, as a
baseline, spawns the esbuild CLI once per file (what a naive scorer would do).
"""

from __future__ import annotations

import argparse
import subprocess
import time

from sandbox.launcher import NODE_DIR
from sandbox.node_pool import NodePool

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


def component(n: int) -> str:
    return _TEMPLATE.format(n=n)


def bench_pool(pool: NodePool, codes: list[str], level: str) -> float:
    pool.compile_many(codes[:20], level=level)  # warm-up
    started = time.perf_counter()
    results = pool.compile_many(codes, level=level)
    elapsed = time.perf_counter() - started
    assert all(r.ok for r in results), [r.diagnostics for r in results if not r.ok][:1]
    return len(codes) / elapsed


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
    args = parser.parse_args()
    codes = [component(i) for i in range(args.files)]
    with NodePool(size=args.size) as pool:
        print(f"layers: {sorted(pool.active_layers())}")
        for level in ("syntax", "build", "typecheck"):
            print(f"{level:>9}: {bench_pool(pool, codes, level):8.1f} files/s (pool of {args.size})")
    print(f"esbuild CLI spawn per file: {bench_esbuild_cli(codes[:100]):8.1f} files/s")


if __name__ == "__main__":
    main()
