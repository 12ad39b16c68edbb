"""Turn a set of active isolation layers into a concrete command line + environment.

The chain is ``prlimit [limits] -- bwrap [namespaces, fs view] -- node ...`` (or
``unshare --net --`` instead of bwrap). Limits are applied by prlimit(1) rather than a Python
``preexec_fn`` because workers are (re)started from pool threads, where ``preexec_fn`` is not
safe. The same launcher runs the compile worker and, in tests, arbitrary probe scripts, so the
isolation tests exercise exactly what the pool uses.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.toolchain import node_dir

NODE_DIR = node_dir()  # the checkout's sandbox/node, or a cache folder for an installed wheel
WORKER_SCRIPT = NODE_DIR / "worker.mjs"
# V8 stack for the TS parser on deeply nested JSX; safe under the 8 MiB RLIMIT_STACK set below.
NODE_STACK_KB = 3000
STACK_BYTES = 8 * 1024 * 1024
SANDBOX_TMP = "/tmp"  # tmpfs mount point inside bwrap
NOBODY = "65534"


@dataclass(frozen=True)
class LaunchSpec:
    """What to hand to ``subprocess.Popen``. ``host_tmp`` is a host scratch dir the caller must
    create before and remove after the process (None when bwrap provides a private tmpfs)."""

    argv: list[str]
    env: dict[str, str]
    host_tmp: str | None


def node_binary() -> str:
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node not found on PATH; the sandbox needs Node.js >= 18")
    return os.path.realpath(node)


def _prlimit_args(layers: frozenset[str], config: iso.IsolationConfig) -> list[str]:
    prlimit = shutil.which("prlimit")
    limits = [f"--stack={STACK_BYTES}"]
    if iso.CPU_LIMIT in layers:
        limits.append(f"--cpu={config.cpu_seconds}")
    if iso.MEMORY_LIMIT in layers:
        limits.append(f"--data={config.memory_mb * 1024 * 1024}")
    if iso.FILE_SIZE_LIMIT in layers:
        limits.append(f"--fsize={config.file_size_mb * 1024 * 1024}")
    if prlimit is None:
        if len(limits) > 1:
            raise FileNotFoundError("prlimit(1) (util-linux) is required to apply resource limits")
        return []  # only the stack size would be raised; node's default stack is then kept
    return [prlimit, *limits, "--"]


def _system_binds(node: str) -> list[str]:
    """Read-only /usr (libc, libstdc++ for node) plus node's own prefix if it lives elsewhere."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin"):
        target = os.readlink(f"/{name}") if os.path.islink(f"/{name}") else None
        if target:
            args += ["--symlink", target, f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            args += ["--ro-bind", f"/{name}", f"/{name}"]
    prefix = str(Path(node).parent.parent)
    if not prefix.startswith("/usr"):
        args += ["--ro-bind", prefix, prefix]
    return args


def _bwrap_args(layers: frozenset[str], config: iso.IsolationConfig, node: str) -> list[str]:
    args = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if iso.NO_NETWORK in layers:
        args.append("--unshare-net")
    if iso.DROP_PRIVILEGES in layers:
        args += ["--unshare-user", "--uid", NOBODY, "--gid", NOBODY, "--cap-drop", "ALL"]
    # bwrap mounts in argument order and a later mount hides what lies beneath it: the private
    # /tmp goes first, so a checkout (or node) that lives under /tmp is bound on top of it.
    tmpfs = ["--size", str(config.tmpfs_mb * 1024 * 1024), "--tmpfs", SANDBOX_TMP]
    if iso.FS_VIEW in layers:
        args += tmpfs + _system_binds(node)
    else:
        args += ["--bind", "/", "/"] + tmpfs + _under_tmp_binds(node)
    args += ["--ro-bind", str(NODE_DIR), str(NODE_DIR)]
    args += ["--proc", "/proc", "--dev", "/dev", "--chdir", str(NODE_DIR), "--"]
    return args


def _under_tmp_binds(node: str) -> list[str]:
    """Node's prefix again when it lives under /tmp, which the private tmpfs would hide."""
    prefix = str(Path(node).parent.parent)
    return ["--ro-bind", prefix, prefix] if prefix.startswith(SANDBOX_TMP + "/") else []


def _uses_bwrap(layers: frozenset[str]) -> bool:
    return bool({iso.FS_VIEW, iso.DROP_PRIVILEGES} & layers)


def _environment(layers: frozenset[str], tmp: str, extra_env: dict[str, str]) -> dict[str, str]:
    if iso.CLEAN_ENV in layers:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp}
    else:
        env = dict(os.environ)
    # GOTRACEBACK=none: a dying esbuild/tsgo prints its one-line reason ("fatal error: runtime:
    # out of memory") instead of thousands of goroutine frames, so the reason stays in the
    # stderr tail the pool keeps.
    env.update({"TMPDIR": tmp, "BOTGRPO_SANDBOX_TMP": tmp, "GOTRACEBACK": "none"})
    env.update(extra_env)
    return env


def build_launch(
    command: list[str],
    layers: frozenset[str],
    config: iso.IsolationConfig,
    *,
    extra_env: dict[str, str] | None = None,
    host_tmp: str | None = None,
) -> LaunchSpec:
    """Wrap ``command`` (whose first element is the node binary) in the active layers.

    Without bwrap the process needs a host scratch directory: pass ``host_tmp`` (the caller
    owns its lifetime). Under bwrap the process gets a private, size-capped tmpfs instead.
    """
    node = command[0]
    if iso.MEMORY_LIMIT in layers and Path(node).name == "node":
        command = [node, f"--max-old-space-size={config.heap_mb}", *command[1:]]
    prefix = _prlimit_args(layers, config)
    if _uses_bwrap(layers):
        prefix += _bwrap_args(layers, config, node)
    elif iso.NO_NETWORK in layers:
        prefix += [shutil.which("unshare") or "unshare", "--net", "--"]
    private_tmp = _uses_bwrap(layers)
    if not private_tmp and host_tmp is None:
        raise ValueError("host_tmp is required when the fs_view layer is not active")
    tmp = SANDBOX_TMP if private_tmp else str(host_tmp)
    env = _environment(layers, tmp, extra_env or {})
    return LaunchSpec(argv=[*prefix, *command], env=env, host_tmp=None if private_tmp else host_tmp)


# A larger young generation: ESLint and the TS parser allocate many short-lived objects, and
# with the default semi-space a lint spent a sixth of its time in scavenges.
NODE_SEMI_SPACE_MB = 32


def worker_command() -> list[str]:
    """The compile worker's own command line (before isolation wrapping)."""
    return [node_binary(), f"--stack-size={NODE_STACK_KB}", f"--max-semi-space-size={NODE_SEMI_SPACE_MB}",
            str(WORKER_SCRIPT)]
