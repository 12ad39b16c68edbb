"""Where the sandbox's Node code runs from, with its npm dependencies installed on first use.

The package ships the Node sources (``node/*.mjs``, ``package.json``, ``package-lock.json``) as
package data and never their dependencies; those come from the lockfile (``npm ci``):

* in a checkout, or wherever ``node/node_modules`` sits beside the sources (an image that put it
  there), the sources' own folder is used; a checkout without it gets ``npm ci`` there, which is
  what ``make install`` runs;
* from an installed wheel, the sources are copied to ``$BOTGRPO_CACHE/sandbox-node-<fingerprint>``
  (default ``~/.cache/botgrpo``; the fingerprint covers every shipped file, so an upgrade gets a
  fresh folder) and ``npm ci`` runs there once, under a file lock, whichever process gets there
  first;
* ``BOTGRPO_NODE_DIR`` names a prepared folder explicitly (it is never installed into).

``botgrpo setup`` does the install ahead of time; otherwise the first Node pool to start does it.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

SOURCE = Path(__file__).resolve().parent / "node"
MARKER = ".installed"           # node_modules/.installed: what `make install` touches too
SHIPPED = ("package.json", "package-lock.json", "*.mjs", "lib/*.mjs", "lib/render/*.mjs", "lib/render/*.js")
NPM_TIMEOUT_S = 900


class ToolchainError(RuntimeError):
    """The sandbox's Node toolchain cannot be used or installed; the message says what to do."""


def shipped_files(source: Path = SOURCE) -> list[Path]:
    """The Node sources the package ships (pyproject's package-data lists the same patterns)."""
    return sorted({p for pattern in SHIPPED for p in source.glob(pattern) if p.is_file()})


def fingerprint(source: Path = SOURCE) -> str:
    """sha256 over the shipped files' relative paths and bytes, 16 hex digits."""
    digest = hashlib.sha256()
    for path in shipped_files(source):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    return Path(os.environ.get("BOTGRPO_CACHE") or Path.home() / ".cache" / "botgrpo")


def in_checkout(source: Path = SOURCE) -> bool:
    """The sources sit in a repository checkout (``sandbox/node`` beside ``pyproject.toml``)."""
    return (source.parents[1] / "pyproject.toml").is_file()


def node_dir() -> Path:
    """The folder the sandbox's worker runs from (module docstring); a path decision only."""
    explicit = os.environ.get("BOTGRPO_NODE_DIR")
    if explicit:
        return Path(explicit).resolve()
    if (SOURCE / "node_modules").is_dir() or in_checkout():
        return SOURCE
    return cache_root() / f"sandbox-node-{fingerprint()}"


def installed(directory: Path) -> bool:
    return (directory / "node_modules" / MARKER).is_file()


def prepare_libraries(directory: Path, node: str = "node") -> None:
    """Bundle the curated UI libraries once, after ``npm ci`` (``node/lib/libraries.mjs``): without
    it each compiler worker would bundle them on first use (seconds each)."""
    try:
        done = subprocess.run([node, "lib/libraries.mjs", "prepare"], cwd=directory, capture_output=True, text=True,
                              timeout=NPM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"preparing the sandbox's libraries in {directory} took over {NPM_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise ToolchainError(f"preparing the sandbox's libraries in {directory} failed: {done.stderr.strip()[-800:]}")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stderr(message: str) -> None:
    print(f"botgrpo sandbox: {message}", file=sys.stderr, flush=True)


def ensure(directory: Optional[Path] = None, log: Callable[[str], None] = _stderr) -> Path:
    """``directory`` (default :func:`node_dir`) with its npm dependencies installed from the
    lockfile; installs them if missing. Raises :class:`ToolchainError` saying what is wrong."""
    directory = Path(directory or node_dir())
    if installed(directory):
        return directory
    if os.environ.get("BOTGRPO_NODE_DIR") and directory == Path(os.environ["BOTGRPO_NODE_DIR"]).resolve():
        raise ToolchainError(f"BOTGRPO_NODE_DIR={directory} has no installed node_modules "
                             f"(run `npm ci` there and touch node_modules/{MARKER}, or unset it)")
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise ToolchainError(f"the sandbox needs Node.js >= 18 with npm on PATH to install its compilers "
                             f"(missing: {', '.join(n for n, p in (('node', node), ('npm', npm)) if p is None)})")
    with _locked(directory.parent / f"{directory.name}.lock"):
        if installed(directory):  # another process finished it while this one waited
            return directory
        if directory != SOURCE:
            for path in shipped_files(SOURCE):
                target = directory / path.relative_to(SOURCE)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        log(f"installing the sandbox's npm dependencies from its lockfile into {directory} (once)")
        try:
            done = subprocess.run([npm, "ci", "--prefix", str(directory), "--no-audit", "--no-fund",
                                   "--loglevel=error"], capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"npm ci in {directory} took over {NPM_TIMEOUT_S} s") from None
        if done.returncode != 0:
            raise ToolchainError(f"npm ci in {directory} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
        prepare_libraries(directory, node)
        (directory / "node_modules" / MARKER).touch()
    return directory
