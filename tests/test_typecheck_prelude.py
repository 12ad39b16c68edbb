"""The typecheck prelude (sandbox/node/lib/typecheck.mjs TYPECHECK_PRELUDES): the root file every
tsgo program of level ``typecheck`` gets. ``global`` (the default) imports React and only the
curated libraries whose declarations act outside their own modules (lib/libraries.mjs
globalEffects, prepared into the manifest); ``all`` imports every curated library (the path
before). A library without global effects is loaded by the files that import it and invisible to
the rest, so the two give the same verdicts:

* the classification: framer-motion and motion/react are global (motion-dom's ``declare global``
  of ``Window`` fields), React is (a script file and a UMD namespace), the others are not
  (recharts's @types/d3-shape merges an empty ``CanvasRenderingContext2D``: neutral);
* a file that uses motion-dom's ``Window`` fields without importing a library checks the same
  under both, alone and beside a file that imports framer-motion (with no prelude it fails:
  TS2339);
* every corpus file of tests/test_syntax_engines.py, the UI-library components and the library
  misuses of tests/test_react_libraries.py get the same verdicts, diagnostics and spans, with a
  library importer among every 16 files (so most runs load libraries beside files that do not).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox import libraries
from botgrpo.sandbox.launcher import NODE_DIR, node_binary
from botgrpo.sandbox.node_pool import TYPECHECK_PRELUDES, NodePool
from tests import test_react_libraries
from tests.node_toolchain import require_node_toolchain, run_node_script
from tests.test_syntax_engines import _module_texts, corpus

GLOBAL = ("framer-motion", "motion/react")
PREPARE_HINT = ("the prepared manifest is stale or missing: run `make install` "
                "(or `cd sandbox/node && node lib/libraries.mjs prepare`)")
# uses motion-dom's `declare global { interface Window { MotionIsMounted?: boolean } }`, imports nothing
USES_WINDOW_FIELD = "export const A = () => <b>{String(window.MotionIsMounted ?? false)}</b>;\n"
IMPORTS_MOTION = ('import { motion } from "framer-motion";\n'
                  "export const M = () => <motion.div animate={{ opacity: 1 }}>hi</motion.div>;\n")


def _node(script: str, cwd: Path = NODE_DIR) -> tuple[object, str]:
    out = subprocess.run([node_binary(), "--input-type=module", "-e", script], cwd=cwd, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _verdict(result):
    return (result.ok, result.timed_out, result.crashed,
            [(d.start, d.end, d.line, d.col, d.message, d.rule) for d in result.diagnostics])


def test_the_libraries_with_global_effects_are_found_and_named():
    require_node_toolchain()
    names = ["react", *libraries.curated()]
    found, _ = _node("import { globalEffects } from './lib/libraries.mjs';\n"
                     f"console.log(JSON.stringify(Object.fromEntries({json.dumps(names)}.map((n) => [n, globalEffects(n)]))));")
    assert set(GLOBAL) <= set(found) and len(found) == len(names)
    for name in GLOBAL:
        assert found[name]["effects"] and all("motion-dom/" in e and "declare global { Window }" in e
                                              for e in found[name]["effects"]), found[name]
    assert {name for name, e in found.items() if e["effects"]} == {"react", *GLOBAL}, found
    assert "@types/react/global.d.ts: script" in found["react"]["effects"]
    assert any("export as namespace React" in e for e in found["react"]["effects"])
    assert found["recharts"]["neutral"] == ["@types/d3-shape/index.d.ts:5: declare global { CanvasRenderingContext2D }"]


def test_the_prelude_holds_react_and_the_global_libraries_and_all_of_them_without_a_current_manifest(tmp_path):
    require_node_toolchain()
    script = ("import { TYPECHECK_PRELUDES } from './lib/typecheck.mjs';\n"
              "console.log(JSON.stringify(Object.fromEntries(Object.entries(TYPECHECK_PRELUDES).map(([k, f]) => [k, f()]))));")
    preludes, _ = _node(script)
    imports = lambda names: "".join(f"import {json.dumps(n)};\n" for n in names)  # noqa: E731
    assert preludes["all"] == imports(libraries.curated())
    assert preludes["global"] == imports(["react", *GLOBAL]), PREPARE_HINT
    # the same inside the pool's sandbox (the worker reads the manifest and its stamp through fs_view)
    layers = iso.resolve_layers(iso.IsolationConfig())
    inside = run_node_script('import("./lib/typecheck.mjs").then((m) => console.log(JSON.stringify(m.TYPECHECK_PRELUDES.global())))',
                             layers, iso.IsolationConfig(), timeout_s=60)
    assert inside.returncode == 0, inside.stderr
    assert json.loads(inside.stdout) == preludes["global"], inside.stderr
    # a stale manifest (here: libraries.mjs changed since it was made) is not trusted: every library
    shutil.copytree(NODE_DIR / "lib", tmp_path / "lib")
    shutil.copy(NODE_DIR / "package.json", tmp_path)
    shutil.copy(NODE_DIR / "package-lock.json", tmp_path)
    (tmp_path / "node_modules").symlink_to(NODE_DIR / "node_modules")
    with (tmp_path / "lib" / "libraries.mjs").open("a") as f:
        f.write("// changed\n")
    stale, stderr = _node(script, cwd=tmp_path)
    assert "stale" in stderr
    assert stale["global"] == imports(["react", *libraries.curated()])


def test_an_unknown_prelude_is_refused_and_the_pool_offers_exactly_the_workers_preludes():
    require_node_toolchain()
    with pytest.raises(ValueError, match="typecheck_prelude"):
        NodePool(size=1, typecheck_prelude="none")
    keys, _ = _node("import { TYPECHECK_PRELUDES } from './lib/typecheck.mjs';\n"
                    "console.log(JSON.stringify(Object.keys(TYPECHECK_PRELUDES)));")
    assert keys == list(TYPECHECK_PRELUDES)  # the same order: the default first


@pytest.fixture(scope="module")
def pools():
    require_node_toolchain()
    # one worker each, so that compile_many's files share tsgo runs; a generous budget (a shared machine)
    made = {prelude: NodePool(size=1, timeout_s=30.0, typecheck_prelude=prelude) for prelude in TYPECHECK_PRELUDES}
    yield made
    for pool in made.values():
        pool.close()


@pytest.mark.parametrize("engine", ["server", "spawn"])
def test_a_global_augmentation_is_seen_the_same_alone_and_beside_a_library_importer(pools, engine):
    allow = libraries.curated()
    spawned = {}
    try:
        if engine == "spawn":
            spawned = {p: NodePool(size=1, timeout_s=30.0, typecheck_engine="spawn", typecheck_prelude=p)
                       for p in TYPECHECK_PRELUDES}
        chosen = spawned or pools
        answers = {}
        for prelude, pool in chosen.items():
            alone = pool.compile(USES_WINDOW_FIELD, level="typecheck", allow=allow)
            beside = pool.compile_many([IMPORTS_MOTION, USES_WINDOW_FIELD, USES_WINDOW_FIELD], level="typecheck", allow=allow)
            after = pool.compile_many([USES_WINDOW_FIELD, IMPORTS_MOTION], level="typecheck", allow=allow)
            answers[prelude] = [_verdict(r) for r in [alone, *beside, *after]]
    finally:
        for pool in spawned.values():
            pool.close()
    assert answers["global"] == answers["all"]
    assert all(v[0] for v in answers["global"]), answers["global"]  # the Window field is known in every run


def test_both_preludes_give_the_same_verdicts_on_every_corpus_file(pools):
    files = corpus()
    files += [p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parent / "data" / "react_libraries").glob("*.tsx"))]
    files += _module_texts(test_react_libraries)
    files = list(dict.fromkeys(files))
    allow = libraries.curated()
    # a library importer every 16 files, so that most tsgo runs (up to 32 files) load a library
    # beside files that do not import it
    importers = [f for f in files if any(f'from "{name}"' in f for name in allow)]
    files = [g for i, f in enumerate(files) for g in ([f, importers[i // 16 % len(importers)]] if i % 16 == 0 else [f])]
    answers = {prelude: [_verdict(r) for r in pool.compile_many(files, level="typecheck", allow=allow)]
               for prelude, pool in pools.items()}
    for pool in pools.values():
        assert pool.stats()["crashes"] == 0 and pool.stats()["restarts"] == 0, pool.stats()
    differing = [(i, files[i][:200], g, a) for i, (g, a) in enumerate(zip(answers["global"], answers["all"])) if g != a]
    # as in tests/test_syntax_engines.py: a file a few thousand levels deep sits at the edge of the
    # worker's stack in TypeScript's parser, so whether it parses or is refused as nested too
    # deeply depends on V8's JIT state, whatever the prelude (on this corpus: the 4,000-deep pieces)
    deep = lambda view: bool(view[3]) and view[3][0][4] == "Input is nested too deeply to analyse"  # noqa: E731
    unexplained = [d for d in differing if not (deep(d[2]) or deep(d[3]))]
    assert not unexplained, f"{len(unexplained)} of {len(files)} files differ:\n" + "\n".join(map(repr, unexplained[:20]))
    assert len(differing) <= 5, differing
    # the comparison means something: both verdicts, and files that load the libraries left out of the prelude
    assert {v[0] for v in answers["all"]} == {True, False}
    for name in ("date-fns", "recharts", "lucide-react", "clsx"):
        assert sum(f'from "{name}"' in f for f in files) >= 10, name
