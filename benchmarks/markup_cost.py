"""CPU time of reading a render's markup (what is shown: sandbox/node/lib/render/dom.mjs).

    python -m benchmarks.markup_cost [--n 100] [--lib DIR]

Renders ``--n`` task components (``botgrpo.trainer.tasks.react.make_example``, seed 0) at level
``render`` once, then times ``readDom`` on their markup in one Node process (5 rounds of 20
passes after a warm-up) and prints the CPU milliseconds a render's markup costs. ``--lib``
times another tree's ``sandbox/node/lib`` alongside (e.g. a checkout of the previous commit,
whose ``readDom`` may come with a separate ``htmlStats``), in the same process.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
from pathlib import Path

from botgrpo.sandbox.launcher import NODE_DIR, node_binary
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.trainer.tasks.react import make_example

SCRIPT = """
const libs = JSON.parse(process.argv[1]);
const htmls = JSON.parse(process.argv[2]);
const readers = {};
for (const [name, lib] of Object.entries(libs)) {
  const dom = await import(`${lib}/render/dom.mjs`);
  const html = await import(`${lib}/render/html.mjs`);
  readers[name] = html.htmlStats ? (h) => html.htmlStats(dom.readDom(h, null).html) : (h) => dom.readDom(h, null);
}
const cpu = (f) => { const s = process.cpuUsage(); f(); const u = process.cpuUsage(s); return (u.user + u.system) / 1000; };
for (const read of Object.values(readers)) for (let w = 0; w < 3; w++) htmls.forEach(read);
const out = { renders: htmls.length, mean_chars: htmls.reduce((a, h) => a + h.length, 0) / htmls.length };
for (const name of Object.keys(readers)) out[name] = [];
for (let r = 0; r < 5; r++) {
  for (const [name, read] of Object.entries(readers)) {
    out[name].push(cpu(() => { for (let k = 0; k < 20; k++) htmls.forEach(read); }) / (20 * htmls.length));
  }
}
console.log(JSON.stringify(out));
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--lib", type=Path, default=None, help="another tree's sandbox/node/lib, timed alongside")
    args = parser.parse_args()
    rng = random.Random(0)
    codes = [make_example(rng, shape="template" if i % 2 else "blocks").component.code for i in range(args.n)]
    with NodePool(size=1, timeout_s=20.0) as pool:
        htmls = [r.render.html for r in pool.compile_many(codes, level="render") if r.render and r.render.html]
    libs = {"this": (NODE_DIR / "lib").as_posix()}
    if args.lib is not None:
        libs["other"] = args.lib.resolve().as_posix()
    out = subprocess.run([node_binary(), "--input-type=module", "-e", SCRIPT, json.dumps(libs), json.dumps(htmls)],
                         cwd=NODE_DIR, capture_output=True, text=True, check=True)
    print(out.stdout.strip())


if __name__ == "__main__":
    main()
