"""The UI libraries a React component may import besides React, and the one allow list.

The curated set is pinned in the sandbox's lockfile and named in ``node/package.json``
(``"botgrpo": {"libraries": [...]}``): that list is the default of the server's ``react_allow``
(``BOTGRPO_REACT_ALLOW``), of :class:`~botgrpo.reward_server.scorers.react.ReactScorer` and so
of ``botgrpo score``; the wheel installs the same lockfile (``botgrpo setup``, or the first pool
to start) and the image runs ``npm ci`` on it. A setting narrows the list (``[]``: React only)
or widens it with other installed packages; an entry whose package is not installed in the
sandbox is refused when the scorer starts (:class:`LibraryNotInstalled`), never at render.
What each level does with a library: ``node/lib/libraries.mjs``.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from botgrpo.sandbox.toolchain import SOURCE, ToolchainError


class LibraryNotInstalled(ToolchainError):
    """An allowed module whose package is not installed in the sandbox's node_modules."""


@lru_cache(maxsize=1)
def curated() -> tuple[str, ...]:
    """The curated libraries, as ``package.json`` names them (import specifiers)."""
    manifest = json.loads((SOURCE / "package.json").read_text())
    return tuple(manifest.get("botgrpo", {}).get("libraries", ()))


def package_of(specifier: str) -> str:
    """The npm package an import specifier (or a ``pkg/*`` allow entry) names."""
    parts = specifier.split("/")
    return "/".join(parts[:2]) if specifier.startswith("@") else parts[0]


def missing(allow: Iterable[str], directory: Path) -> list[str]:
    """Entries of ``allow`` whose package has no ``package.json`` under ``directory/node_modules``."""
    modules = Path(directory) / "node_modules"
    return [entry for entry in allow if not (modules / package_of(entry) / "package.json").is_file()]


def check_installed(allow: Iterable[str], directory: Path) -> None:
    """Raise :class:`LibraryNotInstalled` naming every allowed module the sandbox cannot load."""
    absent = missing(allow, directory)
    if absent:
        raise LibraryNotInstalled(
            f"react_allow names {', '.join(map(repr, absent))}, not installed in the sandbox ({directory}/node_modules): "
            f"add it to sandbox/node/package.json and its lockfile (npm install --save-exact), or remove it from "
            f"BOTGRPO_REACT_ALLOW; the curated libraries are {list(curated())}")
