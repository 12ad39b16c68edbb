"""Each isolation layer, tested on its own through the launcher the pool uses."""

from __future__ import annotations

import socket
import time

import pytest

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain, run_node_script
from tests.helpers import require_host

BASE = frozenset({iso.WALL_TIMEOUT})
HOST = iso.detect()
CONNECT = """
const s = require("net").connect(6379, "127.0.0.1");
s.on("connect", () => { console.log("CONNECTED"); process.exit(0); });
s.on("error", (e) => { console.log("ERROR " + e.code); process.exit(3); });
"""


@pytest.fixture(scope="module", autouse=True)
def node_toolchain():
    require_node_toolchain()


def redis_listening() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        return True
    except OSError:
        return False


def run(script: str, layers: set[str], **limits) -> object:
    return run_node_script(script, frozenset(layers) | BASE, iso.IsolationConfig(**limits))


def test_without_network_layer_the_host_is_reachable():
    require_host(redis_listening(), "a Redis listener on 127.0.0.1:6379 (the control connection)")
    assert "CONNECTED" in run(CONNECT, set()).stdout


def test_unshare_network_namespace_blocks_loopback_services():
    require_host(HOST.unshare_net, "unshare --net")
    done = run(CONNECT, {iso.NO_NETWORK})
    assert done.returncode == 3 and "ERROR" in done.stdout


def test_bwrap_network_namespace_blocks_loopback_services():
    require_host(HOST.bwrap, "bubblewrap (bwrap)")
    done = run(CONNECT, {iso.NO_NETWORK, iso.FS_VIEW, iso.DROP_PRIVILEGES})
    assert done.returncode == 3 and "ERROR" in done.stdout


def test_clean_env_drops_inherited_secrets(monkeypatch):
    monkeypatch.setenv("BOTGRPO_API_KEY", "super-secret")
    script = "console.log(JSON.stringify(process.env))"
    assert "super-secret" in run(script, set()).stdout
    leaked = run(script, {iso.CLEAN_ENV}).stdout
    assert "super-secret" not in leaked and "BOTGRPO_API_KEY" not in leaked


def test_memory_limit_stops_large_allocations():
    script = "const b = Buffer.alloc(1500 * 1024 * 1024, 1); console.log('ALLOCATED', b.length)"
    assert "ALLOCATED" in run(script, set()).stdout
    done = run(script, {iso.MEMORY_LIMIT}, memory_mb=512)
    assert done.returncode != 0 and "ALLOCATED" not in done.stdout


def test_memory_limit_caps_the_v8_heap():
    script = "const a = []; for (;;) a.push(new Array(1e6).fill(1));"
    done = run(script, {iso.MEMORY_LIMIT}, heap_mb=64)
    assert done.returncode != 0 and "heap" in done.stderr.lower()


def test_file_size_limit_bites():
    script = ("const fs = require('fs'); const p = require('os').tmpdir() + '/big';"
              "fs.writeFileSync(p, Buffer.alloc(4 * 1024 * 1024)); console.log('WROTE')")
    assert "WROTE" in run(script, set()).stdout
    done = run(script, {iso.FILE_SIZE_LIMIT}, file_size_mb=1)
    assert done.returncode != 0 and "WROTE" not in done.stdout


def test_cpu_limit_kills_a_busy_process():
    started = time.monotonic()
    done = run("for (;;) {}", {iso.CPU_LIMIT}, cpu_seconds=1)
    assert done.returncode != 0
    assert time.monotonic() - started < 10


def test_fs_view_hides_the_host_and_makes_the_node_dir_read_only():
    require_host(HOST.bwrap, "bubblewrap (bwrap)")
    script = """
const fs = require("fs");
const out = {};
for (const p of ["/work/main/pyproject.toml", "/root", "/etc/passwd"]) out[p] = fs.existsSync(p);
out.nodeDir = fs.existsSync(process.cwd() + "/worker.mjs");
try { fs.writeFileSync(process.cwd() + "/pwned", "x"); out.wrote = true; } catch { out.wrote = false; }
console.log(JSON.stringify(out));
"""
    import json

    out = json.loads(run(script, {iso.FS_VIEW}).stdout)
    assert out == {"/work/main/pyproject.toml": False, "/root": False, "/etc/passwd": False,
                   "nodeDir": True, "wrote": False}


def test_drop_privileges_runs_as_nobody_without_capabilities():
    require_host(HOST.bwrap, "bubblewrap (bwrap)")
    script = ("const s = require('fs').readFileSync('/proc/self/status', 'utf8');"
              "console.log(process.getuid(), /CapEff:\\s*(\\w+)/.exec(s)[1])")
    uid, caps = run(script, {iso.DROP_PRIVILEGES, iso.FS_VIEW}).stdout.split()
    assert uid == "65534" and int(caps, 16) == 0


def test_required_layer_missing_fails_closed():
    bare = iso.HostCapabilities(bwrap=False, unshare_net=False, rlimits=frozenset())
    config = iso.IsolationConfig(require={iso.FS_VIEW, iso.NO_NETWORK})
    with pytest.raises(iso.IsolationUnavailable) as info:
        iso.resolve_layers(config, bare)
    assert "no_network" in str(info.value) and "fs_view" in str(info.value)


CONTAINER_BWRAP = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"


@pytest.fixture
def host_path(tmp_path, monkeypatch):
    """A PATH holding prlimit and true, and a bwrap of the test's choosing; detect() re-probes
    under it, and again with the real PATH afterwards."""
    import shutil
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("prlimit", "true"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    iso.detect.cache_clear()
    yield bin_dir
    iso.detect.cache_clear()


@pytest.mark.parametrize("bwrap", ["broken", "absent"])
def test_the_hint_says_what_is_missing_where_bubblewrap_is_installed_but_fails(host_path, bwrap):
    """In a container with the default profiles bubblewrap is installed and fails (as in the
    server image under podman): the hint quotes it and names the run flags, not an install."""
    from botgrpo.reward_server.settings import ServerSettings, isolation_report
    if bwrap == "broken":
        fake = host_path / "bwrap"
        fake.write_text(f"#!/bin/sh\necho \"{CONTAINER_BWRAP}\" >&2\nexit 1\n")
        fake.chmod(0o755)
    host = iso.detect()
    assert not host.bwrap and not {iso.FS_VIEW, iso.DROP_PRIVILEGES, iso.NO_NETWORK} & host.layers
    with pytest.raises(iso.IsolationUnavailable) as refused:
        iso.resolve_layers(iso.IsolationConfig(require={iso.FS_VIEW}))
    texts = {"report": isolation_report(ServerSettings())["hint"], "required": str(refused.value),
             "render": iso.render_refusal(host.layers)}
    for where, text in texts.items():
        if bwrap == "broken":
            assert "install bubblewrap" not in text, (where, text)
            assert CONTAINER_BWRAP in text and "--security-opt seccomp=unconfined" in text, (where, text)
            assert "--security-opt apparmor=unconfined" in text and "--security-opt unmask=ALL" in text, (where, text)
        else:
            assert "apt-get install bubblewrap" in text and "seccomp" not in text, (where, text)
    assert host.bwrap_failure == (CONTAINER_BWRAP if bwrap == "broken" else None)


def test_no_hint_for_layers_the_host_has():
    works = iso.HostCapabilities(bwrap=True, unshare_net=True)
    assert iso.missing_hint([iso.FS_VIEW], works) is None  # turned off by the operator, not lacking
    only_unshare = iso.HostCapabilities(bwrap=False, unshare_net=True)
    assert iso.missing_hint([iso.NO_NETWORK], only_unshare) is None
    assert "unshare" in iso.missing_hint([iso.NO_NETWORK], iso.HostCapabilities(bwrap=False, unshare_net=False))


def test_pool_start_fails_closed(monkeypatch):
    bare = iso.HostCapabilities(bwrap=False, unshare_net=True, rlimits=frozenset())
    monkeypatch.setattr(iso, "detect", lambda: bare)
    pool = NodePool(size=1, isolation=iso.IsolationConfig(require={iso.DROP_PRIVILEGES}))
    with pytest.raises(iso.IsolationUnavailable, match="drop_privileges"):
        pool.start()
    pool.close()


def test_unknown_or_conflicting_layers_are_config_errors():
    with pytest.raises(ValueError):
        iso.IsolationConfig(require={"seccomp"})
    with pytest.raises(ValueError):
        iso.IsolationConfig(require={iso.FS_VIEW}, disable={iso.FS_VIEW})


def test_pool_defaults_to_every_available_layer():
    with NodePool(size=1) as pool:
        assert pool.active_layers() == HOST.layers
        assert pool.compile("export const A = () => <b>x</b>;", level="build").ok


def test_pool_works_with_only_unshare_and_rlimits():
    disable = {iso.FS_VIEW, iso.DROP_PRIVILEGES}
    with NodePool(size=1, isolation=iso.IsolationConfig(disable=disable)) as pool:
        assert not disable & pool.active_layers()
        assert pool.compile("export const A = () => <b>{x}</b>;", level="typecheck").ok is False


def test_private_tmp_is_mounted_before_the_binds_it_would_hide():
    """A checkout under /tmp (as CI may use) must stay visible inside bwrap's private /tmp."""
    from botgrpo.sandbox.launcher import NODE_DIR, _bwrap_args, node_binary
    for layers in ({iso.FS_VIEW}, set()):
        args = _bwrap_args(frozenset(layers), iso.IsolationConfig(), node_binary())
        tmpfs = args.index("--tmpfs")
        node_bind = max(i for i, a in enumerate(args) if a == str(NODE_DIR) and args[i - 1] == "--ro-bind")
        assert tmpfs < node_bind - 1
