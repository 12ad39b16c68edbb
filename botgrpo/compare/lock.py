"""The lock: the protocol as it was before the first study run, written beside the results.

``lock.json`` holds the protocol's canonical form and hash (:func:`botgrpo.compare.protocol.canonical`),
the git commit it was locked at (and whether the protocol file was committed there), the
fingerprints of the shared start's files and the power estimate. Study cells run only under a
lock that matches the protocol as it is now; a changed protocol is a new study (a new name, new
seeds). Pilots run before the lock and need none.
"""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from botgrpo.compare.protocol import Protocol, canonical, differences, digest
from botgrpo.services.settings import SettingsError

LOCK = "lock.json"


class ProtocolChanged(SettingsError):
    """The protocol (or the shared start) differs from the one locked before the study's runs."""


@dataclass(frozen=True)
class Lock:
    protocol_hash: str
    protocol: dict[str, Any]                 # the canonical protocol locked
    commit: str                              # git HEAD when locked ("unknown" outside a repository)
    protocol_committed: bool                 # the protocol file had no uncommitted change then
    locked_at: str                           # UTC, ISO 8601
    start: dict[str, str] = field(default_factory=dict)   # trainer key -> fingerprint of the file it names
    power: Optional[dict[str, Any]] = None   # power.json when locked

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def git(*args: str, cwd: Optional[Path] = None) -> Optional[str]:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def committed(path: Path) -> bool:
    """Whether ``path`` is tracked by git with no uncommitted change."""
    folder = path.resolve().parent
    if git("ls-files", "--error-unmatch", path.name, cwd=folder) is None:
        return False
    return git("status", "--porcelain", "--", path.name, cwd=folder) == ""


def read(results: Path) -> Optional[Lock]:
    path = Path(results) / LOCK
    return Lock(**json.loads(path.read_text())) if path.exists() else None


def write(protocol: Protocol, start: dict[str, str], power: Optional[dict[str, Any]]) -> Lock:
    """Lock ``protocol`` (refused when a lock exists already)."""
    path = protocol.results_dir / LOCK
    if path.exists():
        raise SettingsError(f"{path} exists: the study is locked already")
    data = canonical(protocol)
    source = protocol._path or protocol.folder
    commit = git("rev-parse", "HEAD", cwd=protocol.folder) or git("rev-parse", "HEAD") or "unknown"
    lock = Lock(digest(data), data, commit,
                committed(source) if protocol._path else False,
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), dict(start), power)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(lock.as_dict(), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return lock


def check(protocol: Protocol, lock: Optional[Lock], start: Optional[dict[str, str]] = None) -> Lock:
    """``lock`` when it matches ``protocol`` (and, given, the shared start's fingerprints);
    :class:`ProtocolChanged` saying what changed otherwise, or that there is no lock."""
    where = protocol.results_dir / LOCK
    if lock is None:
        raise ProtocolChanged(f"no lock at {where}: study cells run only under a lock "
                              f"(botgrpo compare PROTOCOL --lock, or a run without --pilot)")
    data = canonical(protocol)
    changed = differences(lock.protocol, data) if digest(data) != lock.protocol_hash else []
    if start is not None:
        changed += [f"shared start {name}: fingerprint {lock.start.get(name)} -> {value}"
                    for name, value in sorted(start.items()) if lock.start.get(name) != value]
        changed += [f"shared start {name}: fingerprint {value} -> (absent)"
                    for name, value in sorted(lock.start.items()) if name not in start]
    if changed:
        raise ProtocolChanged(
            f"the protocol changed since it was locked ({where}, {lock.locked_at}, commit {lock.commit[:12]}):\n  "
            + "\n  ".join(changed)
            + "\nA changed protocol is a new study: restore the locked one to continue this study, or give the new "
              "one another name (a new results folder) and new seeds, never the ones run under this lock.")
    return lock
