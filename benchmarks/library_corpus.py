"""The UI-library corpus through the sandbox, and what Tailwind costs a screenshot:
``python -m benchmarks.library_corpus [--rounds R]``.

1. ``build``, ``typecheck`` and ``render`` rates (files/s, one warm worker) on the corpus of
   tests/data/react_libraries (components importing lucide-react, framer-motion, recharts,
   clsx, date-fns), beside a library-free component of the same size (tests/data/react_corpus's
   card) measured in the same run.
2. Screenshots of the same renders with and without their Tailwind stylesheet, interleaved in
   one run: the CSS compile (``css_ms``, in the worker) and the shot (Chromium), per screenshot,
   and their ratio.

Prints one JSON object. Numbers depend on the machine and its load: report them with ``uptime``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from botgrpo.reward_server.react.render import styled_page
from botgrpo.sandbox.libraries import curated
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.sandbox.screenshot import ScreenshotPool

CORPUS_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "react_libraries"
PLAIN = '''import { useState } from "react";

type Row = { id: number; name: string; amount: number };

export default function Ledger() {
  const [rows, setRows] = useState<Row[]>([{ id: 1, name: "Coffee", amount: 4 }, { id: 2, name: "Lunch", amount: 12 }]);
  const [name, setName] = useState("");
  const total = rows.reduce((sum, r) => sum + r.amount, 0);
  return (
    <main className="mx-auto max-w-md p-6">
      <h1 className="text-2xl font-bold">Expenses</h1>
      <ul className="mt-4 divide-y">
        {rows.map((r) => <li key={r.id} className="flex justify-between py-2"><span>{r.name}</span><span>${r.amount}</span></li>)}
      </ul>
      <p className="mt-2 font-semibold">Total: ${total}</p>
      <input className="mt-4 w-full rounded border px-3 py-2" value={name} onChange={(e) => setName(e.target.value)} />
      <button className="mt-2 rounded bg-indigo-600 px-4 py-2 text-white"
        onClick={() => setRows([...rows, { id: rows.length + 1, name, amount: 1 }])}>Add</button>
    </main>
  );
}
'''


def rate(pool: NodePool, codes: list[str], level: str, rounds: int) -> float:
    """Files per second at ``level``, each file once per round, one at a time (no batching)."""
    for code in codes:  # warm: the worker's library bundles and tsgo's declarations
        pool.compile(code, level, curated())
    started = time.perf_counter()
    for _ in range(rounds):
        for code in codes:
            result = pool.compile(code, level, curated())
            assert result.ok, (level, result.diagnostics[:2], result.render)
    return rounds * len(codes) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    corpus = [p.read_text() for p in sorted(CORPUS_DIR.glob("*.tsx"))]
    out: dict = {"load_before": os.getloadavg()[0], "files": len(corpus)}
    with NodePool(size=1, timeout_s=30.0) as pool:
        for level in ("build", "typecheck", "render"):
            out[level] = {"libraries": round(rate(pool, corpus, level, args.rounds), 1),
                          "plain": round(rate(pool, [PLAIN], level, args.rounds * len(corpus)), 1)}
        rendered = [pool.compile(code, "render", curated(), render={"tailwind": True}).render for code in corpus]
        with ScreenshotPool(size=1, timeout_s=30.0) as shots:
            for render in rendered:  # warm the browser
                shots.shoot(render.html, 800, 600)
            timing: dict[str, list[float]] = {"styled": [], "plain": [], "css": []}
            for _ in range(args.rounds):
                for code, render in zip(corpus, rendered):
                    again = pool.compile(code, "render", curated(), render={"tailwind": True}).render
                    timing["css"].append(again.css_ms / 1000)
                    for kind, page in (("styled", styled_page(render)), ("plain", render.html)):
                        shot = shots.shoot(page, 800, 600)
                        assert shot.png is not None, shot.error
                        timing[kind].append(shot.elapsed_s)
    median = {k: statistics.median(v) for k, v in timing.items()}
    out["screenshot_s"] = {k: round(v, 4) for k, v in median.items()}
    out["tailwind_cost_ratio"] = round((median["styled"] + median["css"]) / median["plain"], 2)
    out["css_bytes"] = [len(r.css) for r in rendered]
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
