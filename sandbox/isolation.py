"""Isolation layers for the Node compile workers: what exists, what this host can provide,
and which layers a pool actually runs with.

Untrusted model output is compiled by the workers and, at level ``render``, executed (in a
fresh realm on a heap-capped thread); compilers are large attack surfaces and node:vm is no
boundary at all, so every worker is wrapped in independent layers; losing one (e.g. no
bubblewrap on a laptop) must not silently lose the others. The operator lists layers they
*require*; a required layer that this host cannot provide makes pool start-up fail closed
with :class:`IsolationUnavailable` naming the layer. Everything else available is used.

Building the actual command line lives in :mod:`botgrpo.sandbox.launcher`.
"""

from __future__ import annotations

import functools
import resource
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Iterable

# Layer names (stable strings: they appear in configs, logs and pool.active_layers()).
CLEAN_ENV = "clean_env"  # minimal environment: no inherited secrets (BOTGRPO_API_KEY, ...)
WALL_TIMEOUT = "wall_timeout"  # per-request wall clock; the worker's process group is killed
CPU_LIMIT = "cpu_limit"  # RLIMIT_CPU: backstop on total CPU seconds of a worker process
MEMORY_LIMIT = "memory_limit"  # RLIMIT_DATA + V8 --max-old-space-size
FILE_SIZE_LIMIT = "file_size_limit"  # RLIMIT_FSIZE
NO_NETWORK = "no_network"  # empty network namespace (bwrap --unshare-net or unshare -n)
FS_VIEW = "fs_view"  # bwrap: only /usr, the node dir (read-only) and a size-capped tmpfs
DROP_PRIVILEGES = "drop_privileges"  # bwrap: uid nobody in a user ns, no caps, own pid/ipc ns

ALL_LAYERS: tuple[str, ...] = (
    CLEAN_ENV,
    WALL_TIMEOUT,
    CPU_LIMIT,
    MEMORY_LIMIT,
    FILE_SIZE_LIMIT,
    NO_NETWORK,
    FS_VIEW,
    DROP_PRIVILEGES,
)

# Rendering executes model-written code: the layers that keep it off the host's files and
# network must be there, or the pool refuses to render (compiling still works without them).
RENDER_LAYERS: tuple[str, ...] = (NO_NETWORK, FS_VIEW, DROP_PRIVILEGES)
RENDER_OPT_OUT_ENV = "BOTGRPO_RENDER_UNISOLATED"

_RLIMIT_LAYERS = {
    CPU_LIMIT: "RLIMIT_CPU",
    MEMORY_LIMIT: "RLIMIT_DATA",
    FILE_SIZE_LIMIT: "RLIMIT_FSIZE",
}


class IsolationUnavailable(RuntimeError):
    """A layer the operator required cannot be provided on this host."""

    def __init__(self, layers: list[str], reason: str) -> None:
        self.layers = layers
        super().__init__(f"required isolation layer(s) unavailable: {', '.join(layers)} ({reason})")


@dataclass(frozen=True)
class IsolationConfig:
    """Which layers to use and their limits.

    ``require``: layers that must be active or the pool refuses to start.
    ``disable``: layers the operator turns off on purpose (e.g. ``fs_view`` while debugging).
    Limits apply per worker process. ``cpu_seconds`` is a lifetime backstop (RLIMIT_CPU counts
    the whole life of a long-lived process); per-request runaway work is bounded by the pool's
    wall-clock timeout, and the pool recycles workers long before the backstop is reached.
    """

    require: frozenset[str] = frozenset()
    disable: frozenset[str] = frozenset()
    cpu_seconds: int = 900
    memory_mb: int = 2048
    heap_mb: int = 512
    file_size_mb: int = 16
    tmpfs_mb: int = 64

    def __post_init__(self) -> None:
        object.__setattr__(self, "require", frozenset(self.require))
        object.__setattr__(self, "disable", frozenset(self.disable))
        unknown = (self.require | self.disable) - set(ALL_LAYERS)
        if unknown:
            raise ValueError(f"unknown isolation layer(s): {sorted(unknown)}; known: {ALL_LAYERS}")
        conflicting = self.require & self.disable
        if conflicting:
            raise ValueError(f"layer(s) both required and disabled: {sorted(conflicting)}")


# What a container's default profiles take from bubblewrap, and the podman flags that give it
# back (Docker spells the last one `--security-opt systempaths=unconfined`): docs/deployment.md.
CONTAINER_FLAGS = "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt unmask=ALL"


@dataclass(frozen=True)
class HostCapabilities:
    """What this host can do, probed by actually running the tools (not just finding them).

    ``bwrap_failure``: what an installed bubblewrap said when its probe failed (e.g. ``bwrap:
    Can't mount proc on /newroot/proc: Operation not permitted`` in a container); None where
    it works or is not installed."""

    bwrap: bool
    unshare_net: bool
    rlimits: frozenset[str] = field(default_factory=frozenset)
    bwrap_failure: str | None = None

    @property
    def layers(self) -> frozenset[str]:
        available = {CLEAN_ENV, WALL_TIMEOUT} | set(self.rlimits)
        if self.bwrap or self.unshare_net:
            available.add(NO_NETWORK)
        if self.bwrap:
            available |= {FS_VIEW, DROP_PRIVILEGES}
        return frozenset(available)


def _probe(argv: list[str]) -> str | None:
    """None where ``argv`` succeeds, else why not (the last line of its stderr)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error) or type(error).__name__
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {done.returncode}"


@functools.lru_cache(maxsize=1)
def detect() -> HostCapabilities:
    """Probe the host once: bubblewrap with the namespaces we use, ``unshare -n``, rlimits."""
    bwrap = shutil.which("bwrap")
    unshare = shutil.which("unshare")
    true_bin = shutil.which("true") or "/bin/true"
    bwrap_failure = _probe(
        [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
         "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         "--", true_bin]
    ) if bwrap else None
    unshare_ok = bool(unshare) and _probe([unshare, "--net", "--", true_bin]) is None
    has_prlimit = shutil.which("prlimit") is not None  # launcher applies limits via prlimit(1)
    rlimits = frozenset(
        layer for layer, name in _RLIMIT_LAYERS.items() if has_prlimit and hasattr(resource, name)
    )
    return HostCapabilities(bwrap=bool(bwrap) and bwrap_failure is None, unshare_net=unshare_ok, rlimits=rlimits,
                            bwrap_failure=bwrap_failure)


def missing_hint(missing: Iterable[str], host: HostCapabilities | None = None) -> str | None:
    """What would give this host the ``missing`` layers; None where they are turned off, not lacking.

    Bubblewrap's layers: install it where it is absent. Where it is installed but its probe
    failed, the host forbids what it needs (user, pid and mount namespaces and a fresh /proc):
    what it said, and what restores it in a container."""
    wanted = {FS_VIEW, DROP_PRIVILEGES, NO_NETWORK} & set(missing)
    host = host or detect()
    if host.bwrap or not wanted or (wanted == {NO_NETWORK} and host.unshare_net):
        return None
    if host.bwrap_failure:
        return (f"bubblewrap is installed but cannot create its namespaces here ({host.bwrap_failure}): a "
                f"container's default seccomp and AppArmor profiles and its masked /proc forbid them; run the "
                f"container with {CONTAINER_FLAGS} (Docker: systempaths=unconfined for unmask=ALL; "
                f"docs/deployment.md), or, outside a container, allow unprivileged user namespaces")
    if wanted == {NO_NETWORK}:
        return "install util-linux (unshare) or bubblewrap"
    return "install bubblewrap (apt-get install bubblewrap)"


def resolve_layers(config: IsolationConfig, host: HostCapabilities | None = None) -> frozenset[str]:
    """Layers a pool will run with: every available layer not disabled. Fails closed."""
    host = host or detect()
    missing = sorted(config.require - host.layers, key=ALL_LAYERS.index)
    if missing:
        raise IsolationUnavailable(missing, missing_hint(missing, host) or "not available on this host")
    return frozenset(host.layers - config.disable)


def render_opted_out() -> bool:
    """The operator's explicit opt-out of :data:`RENDER_LAYERS` (``BOTGRPO_RENDER_UNISOLATED=1``)."""
    import os

    return os.environ.get(RENDER_OPT_OUT_ENV, "").strip().lower() in {"1", "true", "yes"}


def render_refusal(layers: frozenset[str], allow_unisolated: bool = False) -> str | None:
    """Why rendering must be refused with these active ``layers`` (None: it may run). Rendering
    executes model code, so it needs every layer of :data:`RENDER_LAYERS` unless the operator
    opted out (``allow_unisolated`` or ``BOTGRPO_RENDER_UNISOLATED=1``)."""
    missing = [layer for layer in RENDER_LAYERS if layer not in layers]
    if not missing or allow_unisolated or render_opted_out():
        return None
    hint = missing_hint(missing) or "not available on this host"
    return (f"level 'render' executes model-written code and needs the sandbox layers {', '.join(missing)}, "
            f"which this host lacks: {hint}; compiling (syntax, build, typecheck) still works. To render without "
            f"them anyway, set {RENDER_OPT_OUT_ENV}=1")
