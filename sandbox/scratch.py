"""Host scratch directories of compile workers, named after their owner so a later pool can
remove the ones a killed process left behind.

Without bubblewrap a worker needs a host directory for its HOME/TMPDIR (tsgo batches live
there). The pool removes it when it kills the worker, but a SIGKILLed server never gets to, so
the name records the owning process: ``botgrpo-node-<pid>-<start time>-<random>``. The start
time (clock ticks since boot, from ``/proc/<pid>/stat``) tells a dead owner from a new process
that reuses its pid. :func:`sweep_stale` removes every such directory whose owner is gone.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "botgrpo-node-"
_NAME = re.compile(r"^botgrpo-node-(\d+)-(\d+)-[A-Za-z0-9_]+$")


def process_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if unknown (no /proc, gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; comm may contain spaces
    except (IndexError, ValueError):
        return None


def _alive(pid: int, start_time: int) -> bool:
    if Path("/proc/self/stat").exists():
        return process_start_time(pid) == start_time
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_scratch_dir() -> str:
    """Create a scratch directory owned (by name) by this process."""
    pid = os.getpid()
    start = process_start_time(pid) or 0
    return tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-{start}-")


def sweep_stale(root: str | None = None) -> list[str]:
    """Remove scratch directories whose owning process no longer exists; return their paths.
    Directories in the old format (no owner in the name) are left alone."""
    root = root or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        pid, start = int(match.group(1)), int(match.group(2))
        if _alive(pid, start):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(entry.path)
    if removed:
        log.info("removed %d stale sandbox scratch dir(s) of dead processes", len(removed))
    return removed
