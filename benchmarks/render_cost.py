"""Worker CPU per rendered component: ``python -m benchmarks.render_cost [--rounds R]``.

Renders R rounds of 100 distinct ~20-line components (no source repeats) at level ``render``
through one warm worker, and reports the CPU time the worker's processes spent (summed from /proc over every process
below this one: the Node worker, its render thread, esbuild), which a shared machine's load
disturbs much less than wall time. A third of the components declare an optional prop (they get
the second render without it), a third catch an error (their bundle's catch clauses are
instrumented), a third neither. For a before/after comparison run it in two trees, e.g. a copy
of the last commit: ``git archive HEAD | tar -x -C /tmp/before`` (plus ``sandbox/node/node_modules``).
"""
from __future__ import annotations

import argparse
import json
import os
import time

from botgrpo.sandbox.node_pool import NodePool

TEMPLATE = '''import {{ useState }} from "react";
type Item = {{ id: number; label: string }};
interface Props {{ title: string; {extra} }}
export default function List{n}({{ title, {param} }}: Props) {{
  const [items, setItems] = useState<Item[]>([{{ id: 1, label: "a{n}" }}]);
  const [draft, setDraft] = useState("");
  {body}
  return (
    <section>
      <h2>{{title}}</h2>
      <input value={{draft}} onChange={{(e) => setDraft(e.target.value)}} placeholder="New item" />
      <button onClick={{() => setItems([...items, {{ id: items.length + 1, label: draft }}])}}>Add item</button>
      <ul>{{items.map((it) => <li key={{it.id}} onClick={{() => setDraft(it.label)}}>{{it.label}}</li>)}}</ul>
      {{note ? <p>{{note}}</p> : null}}
    </section>
  );
}}
'''
CATCHES = 'let note = ""; try { note = JSON.parse("{\\"a\\": 1}").a ? "one" : ""; } catch (e) { note = "bad"; }'


def component(n: int) -> str:
    """Component ``n``: an optional prop (n % 3 == 0), a plain one (1) or one with a try/catch (2)."""
    kind = n % 3
    if kind == 0:
        return TEMPLATE.format(n=n, extra="note?: string;", param="note", body="")
    if kind == 1:
        return TEMPLATE.format(n=n, extra="", param="", body='const note = "x";')
    return TEMPLATE.format(n=n, extra="", param="", body=CATCHES)


def descendants_cpu_s() -> float:
    """User + system CPU seconds of every live process below this one."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, cpu = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(pid)], cpu[int(pid)] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    me = os.getpid()

    def below(p: int) -> bool:
        while p > 1:
            if p == me:
                return True
            p = parents.get(p, 0)
        return False

    return sum(c for p, c in cpu.items() if p != me and below(p))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with NodePool(size=1, timeout_s=20.0) as pool:
        pool.compile_many([component(10_000 + n) for n in range(60)], "render")  # warm-up
        before, started = descendants_cpu_s(), time.perf_counter()
        for r in range(args.rounds):  # distinct sources every round: no compilation cache hits
            codes = [component(r * 100 + n) for n in range(100)]
            results = pool.compile_many(codes, "render")
            assert all(r.ok for r in results), [r.render for r in results if not r.ok][:1]
        cpu, wall = descendants_cpu_s() - before, time.perf_counter() - started
    n = args.rounds * 100
    print(json.dumps({"renders": n, "worker_cpu_ms_per_component": round(cpu / n * 1000, 2),
                      "wall_ms_per_component": round(wall / n * 1000, 2)}))


if __name__ == "__main__":
    main()
