"""The compile sandbox against the text an attacking (or looping) policy writes: real Node
workers, no mocks. One test (or test group) per finding of the hostile-input review:

1. inputs that run esbuild's service out of memory must not poison later rollouts;
2. lone surrogates (and any exception in a dispatcher) must not hang or kill anything;
4. typecheck must not read host files or echo them, nor act as an existence oracle;
5. rollouts compiled in one typecheck batch must not see, name or influence each other;
8. temporary directories of killed owners are swept.

Most tests run without the bubblewrap layers (``fs_view``, ``drop_privileges``): that is the
host the findings were made on, where a worker can read the host filesystem, so only the
sandbox's own policy stands between a rollout and host files.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.launcher import NODE_DIR
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

NO_BWRAP = frozenset({iso.FS_VIEW, iso.DROP_PRIVILEGES})
LEVELS = ("syntax", "build", "typecheck")

VALID = '''import { useState } from "react";

export function Counter({ start }: { start: number }) {
  const [count, setCount] = useState(start);
  return <button onClick={() => setCount(count + 1)}>{count}</button>;
}
'''
TYPO = "export const Typo = () => <i>{nope}</i>;\n"
PLAIN = "export const Plain = () => <p>plain</p>;\n"

# Contents of host files (and of a neighbour's code) that no diagnostic may ever show.
MARKERS = ("SECRET_TS_MARKER", "SECRET_JSON_MARKER", "SECRET_REF_MARKER", "SECRET_TYPES_MARKER",
           "NEIGHBOUR_MARKER")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
# The sandbox's own layout: where its files and its node_modules live.
INTERNAL = ("botgrpo-node", "tsgo-", "batch", str(NODE_DIR), ".tsx(", ".d.ts")


@pytest.fixture(scope="module", autouse=True)
def node_toolchain():
    require_node_toolchain()


@pytest.fixture(scope="module")
def secrets(tmp_path_factory):
    """Host files a rollout must not be able to read through the type checker."""
    root = tmp_path_factory.mktemp("host-secrets")
    (root / "secret.ts").write_text('export type Secret = "SECRET_TS_MARKER";\n'
                                    'export const token = "SECRET_TS_MARKER" as const;\n')
    (root / "secret.json").write_text('{"apiKey": "SECRET_JSON_MARKER", "n": 1}\n')
    (root / "broken.ts").write_text('const SECRET_REF_MARKER: number = "x"; const = ;\n')
    (root / "typeerr.ts").write_text('const leak: number = "SECRET_REF_MARKER";\n')
    types = root / "node_modules" / "@types" / "leaky"
    types.mkdir(parents=True)
    (types / "index.d.ts").write_text('declare const SECRET_TYPES_MARKER: number = "x";\n')
    return root


@pytest.fixture(scope="module")
def pool():
    """One worker, so jobs queued behind a blocker go out (and are type-checked) as one batch."""
    with NodePool(size=1, timeout_s=10.0, enable_debug_levels=True,
                  isolation=iso.IsolationConfig(disable=NO_BWRAP)) as p:
        yield p


def same_batch(pool: NodePool, codes: list[str], level: str = "typecheck", timeout: float = 60):
    """Compile ``codes`` as one batch: a short blocker holds the worker while they queue."""
    blocker = pool._debug("debug_hang", seconds=0.3)
    time.sleep(0.05)
    futures = [pool.submit(code, level) for code in codes]
    assert blocker.result(timeout=timeout).ok
    return [f.result(timeout=timeout) for f in futures]


def all_messages(results) -> list[str]:
    return [d.message for r in results for d in r.diagnostics]


def assert_no_leak(results, secrets_dir: Path | None = None) -> None:
    """No host content, no sandbox paths, one line per message. A refusal may quote the
    rollout's own specifier (a path it wrote itself); neighbours never mention it."""
    for message in all_messages(results):
        assert "\n" not in message and "\r" not in message, message
        if "not allowed in this sandbox" in message:
            message = QUOTED.sub('"..."', message)  # the rollout's own words
        for fragment in MARKERS + INTERNAL:
            assert fragment not in message, message
    if secrets_dir is not None:
        for message in all_messages(results[1:]):
            assert str(secrets_dir) not in message, message


def assert_neighbours_unharmed(results) -> None:
    """Neighbours get exactly the verdict they get alone."""
    valid, typo, plain = results
    assert valid.ok, valid.diagnostics
    assert plain.ok, plain.diagnostics
    assert not typo.ok
    (diag,) = typo.diagnostics
    assert TYPO[diag.start:diag.end] == "nope" and "TS2304" in diag.message


# ---------------------------------------------------------------------------------------------
# 1. a rollout that runs esbuild's service out of memory must not poison later rollouts
# ---------------------------------------------------------------------------------------------

OOM_MINUS = "const x = " + "-" * 60000 + "1;"
OOM_PROPS = "export const A = () => <div " + "a={1} " * 20000 + "/>;\n"


@pytest.fixture(scope="module")
def oom_pool():
    # A long timeout so the compiler's own death (not our timeout) ends the request, as on a
    # faster host; 1 GiB of data per process makes the death come sooner than the default 2 GiB.
    with NodePool(size=1, timeout_s=60.0, enable_debug_levels=True,
                  isolation=iso.IsolationConfig(disable=NO_BWRAP, memory_mb=1024)) as p:
        yield p


@pytest.mark.parametrize("hostile", [OOM_MINUS, OOM_PROPS], ids=["minus-chain", "repeated-props"])
def test_esbuild_oom_input_does_not_poison_later_rollouts(oom_pool, hostile):
    results = same_batch(oom_pool, [VALID, hostile, PLAIN], level="build", timeout=180)
    assert results[0].ok and results[2].ok, all_messages(results)
    bad = results[1]
    for message in all_messages(results):
        assert "service" not in message.lower(), message
    if not bad.ok and bad.crashed:
        assert "out of memory" in bad.diagnostics[0].message
    for level in LEVELS:
        later = oom_pool.compile_many([VALID, PLAIN, TYPO], level=level)
        assert [r.ok for r in later] == [True, True, level != "typecheck"], all_messages(later)
        for message in all_messages(later):
            assert "service" not in message.lower(), message
    assert oom_pool.healthy()


def test_poisoned_services_are_restarted_and_counted(oom_pool):
    before = oom_pool.stats()
    assert set(before) >= {"restarts", "poisoned", "timeouts", "crashes", "spawn_failures"}
    result = same_batch(oom_pool, [PLAIN, OOM_MINUS], level="syntax", timeout=180)[1]
    after = oom_pool.stats()
    assert not result.ok and result.crashed and "out of memory" in result.diagnostics[0].message
    # The service died twice: in the batch, then alone on a fresh worker.
    assert after["poisoned"] == before["poisoned"] + 2
    assert after["restarts"] >= before["restarts"] + 2
    assert oom_pool.healthy() and oom_pool.compile(VALID, "build").ok


def test_minus_chain_fails_with_a_clear_reason(oom_pool):
    result = oom_pool.submit(OOM_MINUS, "syntax").result(timeout=180)
    assert not result.ok
    message = result.diagnostics[0].message
    assert "out of memory" in message or "Invalid assignment target" in message, message
    assert oom_pool.compile(VALID, "typecheck").ok


def test_repeated_props_are_answered_without_running_out_of_memory(oom_pool):
    started = time.monotonic()
    built = oom_pool.submit(OOM_PROPS, "build").result(timeout=180)
    assert built.ok and not built.crashed  # duplicate props are a warning, not an error
    typed = oom_pool.submit(OOM_PROPS, "typecheck").result(timeout=180)
    assert not typed.ok and not typed.crashed
    assert typed.diagnostics[0].message.startswith("TS")
    assert time.monotonic() - started < 60
    assert oom_pool.compile(VALID, "typecheck").ok


# ---------------------------------------------------------------------------------------------
# 2. nothing a caller sends can kill a dispatcher thread or hang a future
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
def test_lone_surrogate_resolves_with_correct_offsets(pool, level):
    code = 'const s = "\ud800"; const n: number = "x";\nexport const A = () => <b>\udc00{s}</b>;\n'
    result = pool.submit(code, level).result(timeout=30)
    if level == "typecheck":
        (diag,) = result.diagnostics
        assert code[diag.start:diag.end] == "n" and diag.line == 1
    else:
        assert result.ok, result.diagnostics
    broken = "const s = '\ud800';\nexport const A = () => <p>\udbff</q>;\n"
    result = pool.submit(broken, level).result(timeout=30)
    assert not result.ok
    diag = result.diagnostics[0]
    assert broken[diag.start:diag.end] == "q" and diag.line == 2
    assert pool.compile(VALID, level).ok  # the dispatcher is still serving
    assert pool.healthy()


@pytest.mark.parametrize("prefix", ["\u2028", "\u2029", "\r", "\r\n", "\ufeff", "\x00 ", "😀\ud83d"],
                         ids=["LS", "PS", "CR", "CRLF", "BOM", "NUL", "emoji-and-half"])
def test_odd_unicode_keeps_diagnostic_offsets_right(pool, prefix):
    code = f"// one{prefix}\nconst s = 1; export const A = () => <b>{{nope}}</b>;\n"
    if prefix == "\ufeff":
        code = prefix + code[len("// one") + 1:]
    typed = pool.submit(code, "typecheck").result(timeout=30)
    (diag,) = typed.diagnostics
    assert code[diag.start:diag.end] == "nope", (diag, code)
    broken = code.replace("</b>", "</q>").replace("{nope}", "x")
    for level in ("syntax", "build"):
        diag = pool.submit(broken, level).result(timeout=30).diagnostics[0]
        assert broken[diag.start:diag.end] == "q", (level, diag)


def test_exception_inside_a_dispatcher_becomes_that_jobs_failing_result(pool, monkeypatch):
    import botgrpo.sandbox.dispatcher as dispatcher

    real = dispatcher.from_response

    def exploding(code, response, *args, **kwargs):
        if "EXPLODE" in code:
            raise RuntimeError("boom")
        return real(code, response, *args, **kwargs)

    monkeypatch.setattr(dispatcher, "from_response", exploding)
    results = same_batch(pool, [PLAIN, "export const EXPLODE = 1;\n", PLAIN], level="build")
    assert results[0].ok and results[2].ok
    assert not results[1].ok and "internal" in results[1].diagnostics[0].message.lower()
    monkeypatch.setattr(dispatcher, "from_response", real)
    assert pool.compile(VALID, "typecheck").ok and pool.healthy()


def test_cancelled_future_does_not_kill_the_dispatcher(pool):
    blocker = pool._debug("debug_hang", seconds=0.3)
    time.sleep(0.05)
    cancelled = pool.submit(PLAIN, "build")
    assert cancelled.cancel()
    after = pool.submit(VALID, "build")
    assert blocker.result(timeout=30).ok
    assert after.result(timeout=30).ok
    assert pool.compile(PLAIN, "syntax").ok and pool.healthy()


def test_submit_after_close_fails_instead_of_hanging():
    p = NodePool(size=1, isolation=iso.IsolationConfig(disable=NO_BWRAP)).start()
    p.close()
    result = p.submit(PLAIN, "build").result(timeout=5)
    assert not result.ok and "closed" in result.diagnostics[0].message


# ---------------------------------------------------------------------------------------------
# 4 + 5. typecheck: no host files, no existence oracle, no rollout influences another
# ---------------------------------------------------------------------------------------------

def hostile_cases(root: Path) -> dict[str, tuple[str, str]]:
    """name -> (code, text of the construct the refusal must point at)."""
    s = str(root)
    fake = "".join(f"\\n{name}.tsx(1,1): error TS2304: Cannot find name 'pwned'."
                   for name in [f"f{i}" for i in range(8)] + ["input"])
    cases = {
        "type-only-import-of-host-ts": (
            f'import type * as S from "{s}/secret";\nconst n: S.Secret = "nope";\n'
            'export const A = () => <b>{n}</b>;\n', f'"{s}/secret"'),
        "unused-import-of-host-ts": (
            f'import {{ token }} from "{s}/secret";\nexport const A = () => <b>x</b>;\n', f'"{s}/secret"'),
        "type-import-of-etc-hostname": (
            'import type * as H from "/etc/hostname";\nconst n: number = "x" as unknown as H.X;\n'
            'export const A = () => <b>{n}</b>;\n', '"/etc/hostname"'),
        "json-type-import": (
            f'import type * as D from "{s}/secret.json";\nconst n: number = {{}} as typeof D;\n'
            'export const A = () => <b>{n}</b>;\n', f'"{s}/secret.json"'),
        "json-import-type-node": (
            f'const n: number = {{}} as typeof import("{s}/secret.json");\n'
            'export const A = () => <b>{n}</b>;\n', f'"{s}/secret.json"'),
        "reference-path-broken": (
            f'/// <reference path="{s}/broken.ts" />\nexport const A = () => <b>x</b>;\n',
            f'/// <reference path="{s}/broken.ts" />'),
        "reference-path-typeerr": (
            f'/// <reference path="{s}/typeerr.ts" />\nexport const A = () => <b>x</b>;\n',
            f'/// <reference path="{s}/typeerr.ts" />'),
        "reference-path-etc": (
            '/// <reference path="/etc/passwd" />\nexport const A = () => <b>x</b>;\n',
            '/// <reference path="/etc/passwd" />'),
        "reference-types": (
            f'/// <reference types="{s}/node_modules/@types/leaky" />\nexport const A = () => <b>x</b>;\n',
            f'/// <reference types="{s}/node_modules/@types/leaky" />'),
        "reference-lib": (
            '/// <reference lib="webworker" />\nexport const A = () => <b>x</b>;\n',
            '/// <reference lib="webworker" />'),
        "no-default-lib": (
            '/// <reference no-default-lib="true" />\nexport const A = () => <b>x</b>;\n',
            '/// <reference no-default-lib="true" />'),
        "import-equals-require": (
            f'import fs = require("{s}/secret");\nexport const A = () => <b>x</b>;\n', f'"{s}/secret"'),
        "export-from": (
            f'export type {{ Secret }} from "{s}/secret";\nexport const A = () => <b>x</b>;\n',
            f'"{s}/secret"'),
        "dynamic-import": (
            f'export async function load() {{ const m = await import("{s}/secret"); return m.token; }}\n'
            'export const A = () => <b>x</b>;\n', f'"{s}/secret"'),
        "typeof-import-neighbour": (
            'type N = typeof import("./f1");\nconst n: number = {} as N;\n'
            'export const A = () => <b>{n}</b>;\n', '"./f1"'),
        "newline-module-name": (
            f'import type X from "a{fake}";\nexport const A = () => <b>x</b>;\n', f'"a{fake}"'),
        "jsx-import-source": (
            f'/** @jsxImportSource {s} */\nexport const A = () => <b>x</b>;\n', f'@jsxImportSource {s}'),
        "jsdoc-import-type": (
            f'/** @type {{import("{s}/secret").Secret}} */\nconst n = "nope";\n'
            f'import type {{ Secret }} from "{s}/secret";\nexport const A = () => <b>{{n}}</b>;\n',
            f'"{s}/secret"'),
        "declare-module-react": (
            'declare module "react" {\n  export function useState(x: number): [string, never];\n}\n'
            'export const A = () => <b>x</b>;\n', 'declare module "react"'),
        "declare-module-wildcard": (
            'declare module "*" {\n  const anything: any;\n  export default anything;\n}\n'
            'export const A = () => <b>x</b>;\n', 'declare module "*"'),
        "declare-global": (
            'declare global {\n  interface Array<T> { length: string }\n  var NEIGHBOUR_MARKER: number;\n}\n'
            'export const A = () => <b>x</b>;\n', "declare global"),
        "export-as-namespace": (
            "export as namespace React;\nexport const A = () => <b>x</b>;\n", "export as namespace React;"),
    }
    return cases


CASE_NAMES = list(hostile_cases(Path("/x")))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_typecheck_refuses_cross_file_constructs_without_leaking_or_harming_neighbours(pool, secrets, name):
    code, construct = hostile_cases(secrets)[name]
    results = same_batch(pool, [code, VALID, TYPO, PLAIN])
    hostile, neighbours = results[0], results[1:]
    assert not hostile.ok, f"{name} passed typecheck"
    refusal = [d for d in hostile.diagnostics if "not allowed in this sandbox" in d.message]
    assert refusal, hostile.diagnostics
    located = refusal[0]
    assert code[located.start:located.end] == construct, (located, code[located.start:located.end])
    assert_no_leak(results, secrets)
    assert_neighbours_unharmed(neighbours)


def test_refused_import_message_names_the_specifier(pool):
    result = pool.submit('import type * as P from "/etc/passwd";\nexport const A = () => <b>x</b>;\n',
                         "typecheck").result(timeout=30)
    expected = 'Import of "/etc/passwd" is not allowed in this sandbox'
    assert [d.message for d in result.diagnostics] == [expected]


def test_typecheck_is_no_existence_oracle(pool, secrets):
    template = 'import type * as S from "{}";\nexport const A = () => <b>x</b>;\n'
    paths = [f"{secrets}/secret", f"{secrets}/missing", "/etc/hostname", "/etc/no-such-file"]
    results = same_batch(pool, [template.format(p) for p in paths])
    messages = [r.diagnostics[0].message.replace(p, "<p>") for r, p in zip(results, paths)]
    assert len(set(messages)) == 1, messages
    assert [(d.line, d.col) for r in results for d in r.diagnostics] == [(1, 24)] * 4


def test_declare_module_react_cannot_break_neighbours_that_use_use_state(pool):
    hostile = ('declare module "react" {\n  export function useState(x: number): [string, never];\n}\n'
               'export const A = () => <b>x</b>;\n')
    results = same_batch(pool, [hostile, VALID, VALID.replace("Counter", "Other"), PLAIN])
    assert not results[0].ok
    assert all(r.ok for r in results[1:]), all_messages(results[1:])


def test_neighbour_code_never_appears_in_diagnostics(pool):
    neighbour = 'export const NEIGHBOUR_MARKER = 1;\nexport const B = () => <b>{NEIGHBOUR_MARKER}</b>;\n'
    readers = [f'const n: number = {{}} as typeof import("./{name}");\nexport const A = () => <b>{{n}}</b>;\n'
               for name in ("f0", "f1", "f2", "input", "batch0/f1", "../f1")]
    results = same_batch(pool, [neighbour, *readers])
    assert results[0].ok
    assert not any(r.ok for r in results[1:])
    assert_no_leak(results)


def test_diagnostics_are_single_line_bounded_and_pathless(pool):
    long_literal = "y" * 5000
    codes = [
        f'const n: number = "{long_literal}";\nexport const A = () => <b>{{n}}</b>;\n',
        'import { useState } from "react";\nexport const A = () => { const [s] = useState<number>("x"); '
        'return <b>{s}</b>; };\n',
        'export const A = () => <input value={{ a: { b: { c: 1 } } }} />;\n',
    ]
    results = same_batch(pool, codes)
    assert all(not r.ok for r in results)
    for message in all_messages(results):
        assert len(message) <= 1000, len(message)
    assert_no_leak(results)


def test_a_batch_whose_tsgo_run_fails_still_gives_every_innocent_file_its_verdict(pool):
    # Test hook: this request's presence makes the batch's tsgo run fail as infrastructure
    # (tsgo exits with an error that names no file); the others must be re-run without it.
    blocker = pool._debug("debug_hang", seconds=0.3)
    time.sleep(0.05)
    futures = [pool.submit(VALID, "typecheck"), pool.submit(TYPO, "typecheck")]
    guilty = pool._debug("typecheck", code=PLAIN, debug_tsgo="fail")
    futures += [pool.submit(PLAIN, "typecheck")]
    assert blocker.result(timeout=30).ok
    valid, typo, plain = [f.result(timeout=60) for f in futures]
    assert valid.ok and plain.ok and not typo.ok
    failed = guilty.result(timeout=60)
    assert not failed.ok and "type checker" in failed.diagnostics[0].message.lower()
    assert_no_leak([valid, typo, plain, failed])
    assert pool.compile(VALID, "typecheck").ok


def test_a_batch_whose_tsgo_run_hangs_still_gives_every_innocent_file_its_verdict():
    # a stalled run ends at the budget's wall-clock backstop (WALL_FACTOR x 0.9 s here), twice
    with NodePool(size=1, timeout_s=2.0, enable_debug_levels=True, isolation=iso.IsolationConfig(disable=NO_BWRAP)) as pool:
        blocker = pool._debug("debug_hang", seconds=0.3)
        time.sleep(0.05)
        futures = [pool.submit(VALID, "typecheck"), pool.submit(TYPO, "typecheck")]
        guilty = pool._debug("typecheck", code=PLAIN, debug_tsgo="hang")
        futures += [pool.submit(PLAIN, "typecheck")]
        assert blocker.result(timeout=30).ok
        valid, typo, plain = [f.result(timeout=90) for f in futures]
        assert valid.ok and plain.ok and not typo.ok
        failed = guilty.result(timeout=90)
        assert not failed.ok and (failed.timed_out or "timed out" in failed.diagnostics[0].message)
        assert pool.compile(VALID, "typecheck").ok


def test_bwrap_pool_refuses_host_imports_too(secrets):
    require_host(iso.detect().bwrap, "bubblewrap (bwrap)")
    code, construct = hostile_cases(secrets)["type-only-import-of-host-ts"]
    with NodePool(size=1) as p:
        result = p.compile(code, "typecheck")
    assert not result.ok and "not allowed in this sandbox" in result.diagnostics[0].message
    assert_no_leak([result], secrets)


# ---------------------------------------------------------------------------------------------
# supervision: a pool that cannot serve says so
# ---------------------------------------------------------------------------------------------

def test_pool_that_cannot_start_workers_is_unhealthy_and_still_answers(monkeypatch):
    import botgrpo.sandbox.worker_process as worker_process

    p = NodePool(size=1, timeout_s=5.0, isolation=iso.IsolationConfig(disable=NO_BWRAP)).start()
    try:
        assert p.healthy() and p.compile(PLAIN, "build").ok
        broken = lambda: [sys.executable, "-c", "import sys; sys.exit(3)"]  # noqa: E731
        monkeypatch.setattr(worker_process, "worker_command", broken)
        os.killpg(p.worker_pids()[0], signal.SIGKILL)
        result = p.submit(PLAIN, "build").result(timeout=60)
        assert not result.ok and result.crashed
        deadline = time.monotonic() + 10
        while p.healthy() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not p.healthy()
        assert p.stats()["spawn_failures"] >= 1
        monkeypatch.undo()
        deadline = time.monotonic() + 30
        while not p.healthy() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert p.healthy() and p.compile(PLAIN, "build").ok
    finally:
        p.close()


# ---------------------------------------------------------------------------------------------
# 8. temporary directories of killed owners are swept
# ---------------------------------------------------------------------------------------------

_OWNER = textwrap.dedent("""
    import sys, time
    from botgrpo.sandbox import isolation as iso
    from botgrpo.sandbox.node_pool import NodePool
    pool = NodePool(size=2, isolation=iso.IsolationConfig(disable={"fs_view", "drop_privileges"})).start()
    assert pool.compile("export const A = () => <b>{x}</b>;", "typecheck").ok is False
    print("READY", flush=True)
    time.sleep(600)
""")


def _node_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "botgrpo-node-*")))


def test_temp_dirs_of_a_killed_owner_are_swept_when_a_pool_starts():
    before = _node_dirs()
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], cwd=str(Path(__file__).parent.parent),
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert owner.stdout.readline().strip() == "READY"
        theirs = _node_dirs() - before
        assert len(theirs) == 2
    finally:
        os.killpg(owner.pid, signal.SIGKILL)  # the owner and its workers die without cleaning up
        owner.wait(timeout=10)
    time.sleep(0.5)
    assert theirs <= _node_dirs()  # left behind
    with NodePool(size=1, isolation=iso.IsolationConfig(disable=NO_BWRAP)) as live:
        assert not (theirs & _node_dirs()), "stale dirs of a dead owner survived a pool start"
        mine = set(live.scratch_dirs())
        assert len(mine) == 1 and mine <= _node_dirs()
        with NodePool(size=1, isolation=iso.IsolationConfig(disable=NO_BWRAP)):
            assert mine <= _node_dirs()  # a live owner's dir is never swept
        assert live.compile(PLAIN, "build").ok
    assert not (mine & _node_dirs())
