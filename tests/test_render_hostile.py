"""Hostile components at level ``render``, on real Node workers under every isolation layer.

Each attack is answered with the lowest reward there is (outcome -1, every token at the lower
bound), a reason that names it, in bounded time and memory, and leaves the pool healthy: the
next component in the same worker renders exactly as it would alone. The process layers are
then tested on their own, as if a component had escaped every JavaScript-level guard
(``debug_escape`` hands test code ``require`` inside the worker), and the refusal to render on
a host without them.
"""
from __future__ import annotations

import json
import socket
import time

import pytest
from pydantic import ValidationError

from botgrpo.reward_server.spans import compose
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.spans import default_split
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

HOST = iso.detect()
TIMEOUT_MS = 500
PROBE = '''export default function Probe() {
  const o: any = {};
  const clean = o.polluted === undefined && [1, 2].map((x) => x * 2).join() === "2,4"
    && typeof (globalThis as any).hacked === "undefined" && JSON.stringify({ a: 1 }) === '{"a":1}';
  return <p>{clean ? "clean" : "polluted"}</p>;
}
'''


def component(body: str, imports: str = "", effect: str = "") -> str:
    head = 'import { useEffect } from "react";\n' + imports
    hook = f"  useEffect(() => {{ {effect} }}, []);\n" if effect else ""
    return f"{head}export default function Evil() {{\n{hook}  {body}\n  return <p>hello</p>;\n}}\n"


# name -> (code, expected status, a fragment of the reason)
ATTACKS = {
    # reading files
    "process.binding": (component('(globalThis as any).process.binding("fs");'), "violation", "process"),
    "bare process": (component("const p = (0, eval)('process');"), "violation", "eval"),
    "computed require": (component('const r: any = (module as any).require ?? require; r("fs").readFileSync("/etc/passwd");'),
                         "violation", "fs"),
    "import node:fs": (component('fs.readFileSync("/etc/passwd");', 'import fs from "node:fs";\n'), "violation", "node:fs"),
    "dynamic import": (component('const m = "node:" + "fs"; import(m).then((fs: any) => fs.readFileSync("/etc/passwd"));'),
                       "violation", "node:fs"),
    "createRequire": (component('createRequire("/")("fs");', 'import { createRequire } from "module";\n'), "violation", "module"),
    "global require": (component('(globalThis as any).require("fs");'), "violation", "require"),
    # network
    "fetch in render": (component('fetch("http://127.0.0.1:6379/");'), "violation", "fetch"),
    "fetch in effect": (component("", effect='fetch("http://example.com/").catch(() => {});'), "violation", "fetch"),
    "net": (component('net.connect(6379, "127.0.0.1");', 'import net from "net";\n'), "violation", "net"),
    "http": (component('http.get("http://127.0.0.1:6379/");', 'import http from "node:http";\n'), "violation", "http"),
    "dns": (component('dns.lookup("example.com", () => {});', 'import dns from "dns";\n'), "violation", "dns"),
    "websocket": (component('new (globalThis as any).WebSocket("ws://127.0.0.1:6379");'), "violation", "WebSocket"),
    # processes
    "child_process": (component('execSync("id");', 'import { execSync } from "child_process";\n'), "violation", "child_process"),
    "process.exit": (component("(globalThis as any).process.exit(1);"), "violation", "process"),
    "process.kill": (component("(globalThis as any).process.kill((globalThis as any).process.ppid, 9);"), "violation", "process"),
    # runaway work
    "loop in render": (component("while (true) {}"), "timeout", "did not finish"),
    "loop in effect": (component("", effect="for (;;) {}"), "timeout", "effects"),
    "loop in timer": (component("setTimeout(() => { for (;;) {} }, 10);"), "timeout", "timers"),
    "microtask loop": (component("const spin = (): any => Promise.resolve().then(spin); spin();"), "timeout", "did not finish"),
    "busy wait": (component("const end = Date.now() + 60000; while (Date.now() < end) {}"), "timeout", "did not finish"),
    # memory and stack
    "array bomb": (component("const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1.5));"), None, ""),
    "string bomb": (component('let s = "x"; for (;;) s += s;'), "memory", "memory"),
    "buffer bomb": (component("const b = new ArrayBuffer(2 ** 32);"), "memory", "memory"),
    "deep recursion": (component("const f = (n: number): number => f(n + 1) + 1; f(0);"), "stack", "stack"),
    # pollution aimed at the next component
    "prototype pollution": (component('(Object.prototype as any).polluted = "yes";'), "violation", "built-in"),
    "method replaced": (component("Array.prototype.map = function () { return []; } as any;"), "violation", "built-in"),
    "define on a built-in": (component('Object.defineProperty(JSON, "stringify", { value: () => "{}" });'), "violation", "built-in"),
    "global pollution": (component('(globalThis as any).hacked = true;'), "violation", "global hacked"),
    "global replaced": (component("(globalThis as any).Object = function Fake() {};"), "violation", "built-in"),
    "pollution at module load": ('(Object.prototype as any).polluted = 1;\nexport default () => <p>x</p>;\n', "violation", "built-in"),
    # code from strings, shared memory, finalizers
    "new Function": (component('new Function("return 1")();'), "violation", "eval"),
    "webassembly": (component("(globalThis as any).WebAssembly.compile(new Uint8Array(8));"), "violation", "WebAssembly"),
    "atomics wait": (component("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);"), "violation", "Atomics"),
    "finalizer": (component("new FinalizationRegistry(() => { for (;;) {} }).register({}, 1);"), "violation", "FinalizationRegistry"),
    # output floods
    "console flood": (component('for (let i = 0; i < 100000; i++) console.log("flood flood flood flood " + i);'), "output", "flood"),
    "markup flood": ("export default function Rows() {\n  return <div>{Array.from({ length: 20000 }, (_, i) => <p key={i}>row {i}</p>)}</div>;\n}\n",
                     "output", "too large"),
}


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1, timeout_s=10.0, enable_debug_levels=True) as p:  # one worker: attacker and probe share it
        yield p


@pytest.fixture(scope="module")
def scorer(pool):
    return ReactScorer(pool)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_is_scored_lowest_bounded_and_leaves_the_pool_healthy(pool, scorer, name):
    code, status, reason = ATTACKS[name]
    completion = f"```tsx\n{code}```\n"
    started = time.monotonic()
    [result] = scorer.score_batch([Rollout(completion, reference={"spec": {"component": "Evil"}})],
                                  ReactOptions(level="render", render_timeout_ms=TIMEOUT_MS))
    elapsed = time.monotonic() - started
    render = result.details["render"]
    assert render["status"] in (status,) if status else render["status"] in ("memory", "timeout"), render
    assert reason.lower() in (render["message"] + " ".join(render["violations"])).lower(), render
    assert result.score == -1.0 and result.passed is False and result.local_default == -1.0
    scores = compose(result, len(completion), default_split(completion), 0.5)
    assert max(scores) == -1.0  # every token at the lower bound
    assert elapsed < TIMEOUT_MS / 1000 + 8, elapsed
    assert pool.healthy()
    probe = pool.compile(PROBE, "render")
    assert probe.ok and probe.render.html == "<p>clean</p>", (name, probe.render)


def test_hostile_batch_does_not_change_its_neighbours_verdicts(pool):
    codes = [ATTACKS["loop in render"][0], PROBE, ATTACKS["prototype pollution"][0], PROBE, ATTACKS["array bomb"][0], PROBE]
    results = pool.compile_many(codes, "render", render={"timeout_ms": TIMEOUT_MS})
    assert [r.render.status for r in results[1::2]] == ["ok", "ok", "ok"]
    assert all(r.render.html == "<p>clean</p>" for r in results[1::2])
    assert results[0].render.status == "timeout" and results[2].render.status == "violation"


# ---------------------------------------------------------------- the process layers on their own


def escaped(pool: NodePool, code: str) -> str:
    """What code with `require` in the worker process itself (past every JS guard) can see."""
    return pool._debug("debug_escape", code).result(timeout=60).summary.get("output", "")


def test_an_escaped_component_sees_no_host_files(pool):
    out = json.loads(escaped(pool, '''
const fs = require("fs");
const probe = (p) => { try { fs.readFileSync(p); return "read"; } catch (e) { return e.code; } };
return JSON.stringify({passwd: probe("/etc/passwd"), repo: probe("/work/main/pyproject.toml"), root: probe("/root/.bashrc"),
  top: fs.readdirSync("/").sort(), write: (() => { try { fs.writeFileSync("/usr/pwned", "x"); return "wrote"; } catch (e) { return e.code; } })()});
'''))
    assert out["passwd"] == "ENOENT" and out["repo"] == "ENOENT" and out["root"] == "ENOENT"
    assert "etc" not in out["top"] and "root" not in out["top"] and out["write"] in ("EROFS", "EACCES")


def test_an_escaped_component_runs_as_nobody_with_no_network(pool):
    require_host(_redis_listening(), "a Redis listener on 127.0.0.1:6379 (the control connection)")
    probe = ('require("net").connect(6379, "127.0.0.1").on("connect", () => { console.log("CONNECTED"); process.exit(0); })'
             '.on("error", (e) => { console.log(e.code); process.exit(0); })')
    out = json.loads(escaped(pool, f'''
const {{ execFileSync }} = require("child_process");
const net = execFileSync(process.execPath, ["-e", {json.dumps(probe)}], {{ encoding: "utf8", timeout: 5000 }}).trim();
return JSON.stringify({{ uid: process.getuid(), net }});
'''))
    assert out["uid"] == 65534 and out["net"] != "CONNECTED"


def test_an_escaped_component_hits_the_file_size_limit_and_a_killed_worker_is_replaced(pool):
    out = escaped(pool, '''
const fs = require("fs");
try { fs.writeFileSync("/tmp/big", Buffer.alloc(64 * 1024 * 1024)); return "wrote"; } catch (e) { return e.code; }
''')
    assert out != "wrote"
    result = pool._debug("debug_escape", "process.kill(process.pid, 9);").result(timeout=60)
    assert not result.ok and result.crashed
    assert pool.healthy() and pool.compile(PROBE, "render").render.html == "<p>clean</p>"


def _redis_listening() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- hosts without the layers


BARE = iso.HostCapabilities(bwrap=False, unshare_net=True, rlimits=frozenset({iso.CPU_LIMIT, iso.MEMORY_LIMIT}))


def test_render_is_refused_with_a_4xx_naming_what_is_missing(monkeypatch):
    monkeypatch.setattr(iso, "detect", lambda: BARE)
    monkeypatch.delenv(iso.RENDER_OPT_OUT_ENV, raising=False)
    with pytest.raises(ValidationError, match="fs_view, drop_privileges.*bubblewrap"):
        ReactOptions(level="render")
    ReactOptions(level="typecheck")  # the compile levels keep working

    from botgrpo.reward_server.service import RequestRejected, ScoringService
    from botgrpo.reward_server.settings import ServerSettings
    from botgrpo.services.schemas import RewardRequest

    service = ScoringService(ServerSettings(sandbox_require=[]))
    request = RewardRequest.model_validate({"task": "react", "options": {"level": "render"},
                                            "rollouts": [{"id": "a", "completion": PROBE}]})
    with pytest.raises(RequestRejected) as info:
        service.check(request)
    assert info.value.status == 422 and "fs_view" in info.value.detail and iso.RENDER_OPT_OUT_ENV in info.value.detail
    monkeypatch.setenv(iso.RENDER_OPT_OUT_ENV, "1")
    assert ReactOptions(level="render").level == "render"


def test_a_pool_without_the_layers_refuses_to_render_unless_told_to():
    require_node_toolchain()
    disable = frozenset({iso.FS_VIEW, iso.DROP_PRIVILEGES})
    with NodePool(size=1, isolation=iso.IsolationConfig(disable=disable)) as pool:
        with pytest.raises(iso.IsolationUnavailable, match="fs_view"):
            pool.submit(PROBE, "render")
        assert pool.compile(PROBE, "build").ok
    with NodePool(size=1, isolation=iso.IsolationConfig(disable=disable), render_unisolated=True) as pool:
        assert pool.compile(PROBE, "render").render.html == "<p>clean</p>"
        hostile = pool.compile(ATTACKS["process.binding"][0], "render")  # the JS-level guards still hold
        assert hostile.render.status == "violation"
