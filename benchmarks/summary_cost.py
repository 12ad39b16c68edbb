"""Cost of the structural summary the spec check reads (sandbox/node/lib/summary.mjs + reach.mjs).

    python -m benchmarks.summary_cost [--n 300] [--rounds 5] [--lib DIR]

Summarises ``--n`` task components (``botgrpo.trainer.tasks.react.make_example``, seed 0) ``--rounds``
times in one Node process, after one warm-up round, and prints the mean milliseconds a file for
the parse and for the summary (parse excluded). ``--lib`` times another tree's
``sandbox/node/lib`` (e.g. a checkout of the previous commit) with this tree's node_modules.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
from pathlib import Path

from botgrpo.sandbox.launcher import NODE_DIR, NODE_STACK_KB
from botgrpo.trainer.tasks.react import make_example

SCRIPT = """
import fs from "node:fs";
import { parseTsx, summarize } from "%s";
const codes = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const rounds = Number(process.argv[3]);
const time = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
let sfs = codes.map(parseTsx); sfs.forEach(summarize);  // warm-up
const parse = time(() => { for (let r = 0; r < rounds; r++) sfs = codes.map(parseTsx); });
const summary = time(() => { for (let r = 0; r < rounds; r++) sfs.forEach(summarize); });
const n = rounds * codes.length;
console.log(JSON.stringify({ files: codes.length, rounds, parse_ms_per_file: parse / n, summary_ms_per_file: summary / n,
  mean_chars: codes.reduce((a, c) => a + c.length, 0) / codes.length }));
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lib", type=Path, default=NODE_DIR / "lib", help="the sandbox/node/lib whose summary.mjs is timed")
    args = parser.parse_args()
    rng = random.Random(0)
    codes = [make_example(rng, shape="template" if i % 2 else "blocks").component.code for i in range(args.n)]
    with tempfile.TemporaryDirectory() as tmp:
        data, script = Path(tmp) / "codes.json", Path(tmp) / "bench.mjs"
        data.write_text(json.dumps(codes))
        script.write_text(SCRIPT % (args.lib.resolve() / "summary.mjs").as_posix())
        out = subprocess.run(["node", f"--stack-size={NODE_STACK_KB}", str(script), str(data), str(args.rounds)],
                             check=True, capture_output=True, text=True, cwd=NODE_DIR)
    print(out.stdout.strip())


if __name__ == "__main__":
    main()
