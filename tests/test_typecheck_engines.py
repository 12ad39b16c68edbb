"""The two tsgo engines of level ``typecheck`` (sandbox/node/lib/typecheck.mjs): ``server`` (a warm
tsgo API server per worker, the default) and ``spawn`` (one tsgo process per batch, the path
before it).

* Equal verdicts: the same corpus (type errors with message chains, JSX props, grammar errors
  (a TS1xxx code re-runs the rest of the batch), BOM, CRLF, U+2028, astral characters, allowlisted modules) gives the same diagnostics, spans
  and messages through either engine.
* Isolation in one batch: a rollout's global augmentation, module augmentation of "react",
  top-level `var` or `interface Window` never changes a neighbour's verdict in the same tsgo
  program; the neighbour gets exactly the diagnostics it gets alone, under either engine.
* The server is warm: one tsgo process answers run after run, and a run that fails as a whole
  restarts it.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from botgrpo.sandbox.launcher import NODE_DIR, node_binary
from botgrpo.sandbox.node_pool import TYPECHECK_ENGINES, NodePool
from tests.data.react_corpus import CASES
from tests.node_toolchain import require_node_toolchain

ENGINES = tuple(TYPECHECK_ENGINES)


def _fenced(completion: str) -> str:
    return completion.split("\n", 1)[1].rsplit("```", 1)[0] if "```" in completion else completion


CORPUS = [_fenced(completion) for _, completion, _, _ in CASES] + [
    "export const A = () => <div>{1}</div>;\n",
    'const s = "é😀中";\u2028const bad: number = "x";\nfunction f(a: { x: { y: number } }) {}\n'
    'f({ x: { y: "no" } });\nexport const A = () => <div foo="1" />;\n',
    "\ufeff// a byte-order mark\nconst s = 1; export const A = () => <b>{nope}</b>;\n",
    'export function B(p: { n: number }) {\r\n  return <b>{p.n.toFixed()}{undefinedName}</b>;\r\n}\r\n',
    "export const o = { a: 1, a: 2 };\n",  # TS1117, a grammar error of the checker: the batch is re-run
    'import { useState } from "react";\nexport function C() {\n  const [n, setN] = useState(0);\n'
    '  setN("one");\n  return <input value={n} onChange={(e) => setN(e.target.value)} />;\n}\n',
    "export function F(xs: number[]) {\n  return xs.map((x) => x.toUpperCase()).reduce((a, b) => a + b, 0);\n}\n",
    "function g(a: string): number;\nfunction g(a: number): string;\nfunction g(a: any) { return a; }\n"
    "export const v = g(true);\n",
    "export function H(props) {\n  return <ul>{props.items.map((i) => <li>{i}</li>)}</ul>;\n}\n",
    'import _ from "lodash";\nexport const total = _.sum([1, 2]) as number;\nexport const n: string = total;\n',
    "type P = { a: { b: { c: number } } };\nexport const p: P = { a: { b: { c: \"deep\" } } };\n",
    "export const Unfinished = () => <div>{[1, 2].map(x => <span key={x}>{x}</span>)}</div>;\nconst z: never = 1;\n",
]


@pytest.fixture(scope="module")
def pools():
    require_node_toolchain()
    # a generous budget: this machine is shared, and a timeout is not what these tests are about
    made = {engine: NodePool(size=1, timeout_s=30.0, typecheck_engine=engine) for engine in ENGINES}
    yield made
    for pool in made.values():
        pool.close()


def _verdict(result):
    return (result.ok, result.timed_out, result.crashed,
            [(d.start, d.end, d.line, d.col, d.message, d.rule) for d in result.diagnostics])


def test_both_engines_give_the_same_diagnostics_and_spans_on_a_corpus(pools):
    answers = {engine: [_verdict(r) for r in pool.compile_many(CORPUS, level="typecheck", allow=("lodash",))]
               for engine, pool in pools.items()}
    assert answers["server"] == answers["spawn"]
    failing = [v for v in answers["server"] if not v[0]]
    assert len(failing) >= 12 and any(len(v[3]) >= 2 for v in failing)  # the corpus exercises the mapping
    messages = " ".join(d[4] for v in failing for d in v[3])
    for code in ("TS2322", "TS2304", "TS2339", "TS2769", "TS1117", "TS2345", "TS7006"):
        assert code in messages, code


# A neighbour that fails alone, and what would make it pass if a rollout's declarations leaked
# into its program. Each pair: (the rollout that tries to leak, the neighbour).
LEAKS = {
    "declare-global": ("declare global { interface Window { botgrpoLeak: number } }\n"
                       "export const A = () => <b>a</b>;\n",
                       "export const B = () => <b>{window.botgrpoLeak + 1}</b>;\n"),
    "declare-module-react": ('declare module "react" {\n  interface HTMLAttributes<T> { botgrpoLeak?: number }\n}\n'
                             "export const A = () => <b>a</b>;\n",
                             "export const B = () => <div botgrpoLeak={1}>b</div>;\n"),
    "global-var": ("var botgrpoLeak = 1;\nfunction botgrpoHelper(): number { return 2; }\n",
                   "export const B = () => <b>{botgrpoLeak + botgrpoHelper()}</b>;\n"),
    "global-interface": ("interface Window { botgrpoLeak: number }\nconst a = 1;\n",
                         "export const B = () => <b>{window.botgrpoLeak}</b>;\n"),
}


@pytest.mark.parametrize("leak", sorted(LEAKS))
@pytest.mark.parametrize("engine", ENGINES)
def test_a_rollout_cannot_change_a_neighbours_verdict_in_the_same_batch(pools, engine, leak):
    """One worker, one batch: the leaking rollout first, the neighbour after it."""
    leaker, neighbour = LEAKS[leak]
    pool = pools[engine]
    alone = pool.compile(neighbour, level="typecheck")
    assert not alone.ok and alone.diagnostics
    together = pool.compile_many([leaker, neighbour, neighbour], level="typecheck")
    for result in together[1:]:
        assert _verdict(result) == _verdict(alone)


_WARM_SCRIPT = r"""
import path from "node:path";
import { TypecheckBatcher } from "./lib/typecheck.mjs";
const [engine, workDir] = process.argv.slice(1);
const nodeModules = path.resolve("node_modules");
const tsgoPath = path.join(nodeModules, "@typescript", `typescript-${process.platform}-${process.arch}`, "lib", "tsc");
const batcher = new TypecheckBatcher({ tsgoPath, nodeModules, workDir, engine, timeoutMs: 10000, debug: true });
const check = async (code, debug = null) => { batcher.reserve(); return batcher.submit(code, [], debug); };
const pid = () => batcher.server?.rpc?.child.pid ?? null;
const pids = [];
const verdicts = [];
for (const code of ["export const a: number = 1;\n", "export const b: number = 'x';\n", "export const c = <b>{1}</b>;\n"]) {
  verdicts.push((await check(code)).diagnostics.map((d) => d.message));
  pids.push(pid());
}
const failed = await check("export const d = 1;\n", "fail");
verdicts.push(failed.diagnostics.map((d) => d.message));
pids.push(pid());
verdicts.push((await check("export const e: string = 1;\n")).diagnostics.map((d) => d.message));
pids.push(pid());
batcher.server?.stop();
console.log(JSON.stringify({ pids, verdicts, crashed: failed.crashed }));
"""


def _run_batcher(engine: str, tmp_path) -> dict:
    out = subprocess.run([node_binary(), "--input-type=module", "-e", _WARM_SCRIPT, engine, str(tmp_path)],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_server_engine_reuses_one_tsgo_and_restarts_it_after_a_failed_run(tmp_path):
    require_node_toolchain()
    server = _run_batcher("server", tmp_path)
    pids = server["pids"]
    assert None not in pids and pids[0] == pids[1] == pids[2]  # warm: one process, run after run
    assert pids[3] != pids[2] and pids[4] == pids[3]  # the failed run's server was replaced
    assert server["verdicts"][0] == [] and server["verdicts"][1][0].startswith("TS2322")
    assert server["crashed"] and server["verdicts"][3] == ["Type checker failed on this input"]
    spawn = _run_batcher("spawn", tmp_path / "spawn")
    assert spawn["pids"] == [None] * 5  # no server: a tsgo process per run
    assert spawn["verdicts"] == server["verdicts"]


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="typecheck_engine"):
        NodePool(size=1, typecheck_engine="tsc")


def test_the_pool_offers_exactly_the_workers_engines():
    require_node_toolchain()
    script = 'import { TYPECHECK_ENGINES } from "./lib/typecheck.mjs"; console.log(JSON.stringify(Object.keys(TYPECHECK_ENGINES)));'
    out = subprocess.run([node_binary(), "--input-type=module", "-e", script], cwd=NODE_DIR, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == list(TYPECHECK_ENGINES)  # the same order: the default first
