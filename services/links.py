"""Stable names for directories whose real names change (a fingerprint, a step number).

``point(link, target)`` makes ``link`` a relative symlink to ``target``, replacing any previous
one in one rename: a reader sees the old target or the new one, never a missing name. Docs and
configs name the link (``runs/demo/warm/model``, ``runs/<run>/latest``), never the fingerprint.
"""
from __future__ import annotations

import os
from pathlib import Path


def point(link: Path, target: Path) -> Path:
    """``link`` -> ``target`` (a sibling or below ``link``'s folder), atomically; returns ``link``."""
    link = Path(link)
    relative = os.path.relpath(Path(target), link.parent)
    staged = link.with_name(f".{link.name}.{os.getpid()}.link")
    staged.unlink(missing_ok=True)
    staged.symlink_to(relative, target_is_directory=True)
    os.replace(staged, link)
    return link
