"""Where the sandbox's Node code runs from (botgrpo.sandbox.toolchain), without installing.

The install itself (npm ci from the shipped lockfile into the cache, from an installed wheel)
runs in tests/test_wheel.py (make test-wheel)."""
from __future__ import annotations

import shutil

import pytest

from botgrpo.sandbox import toolchain
from botgrpo.sandbox.toolchain import SOURCE, ToolchainError


def test_the_shipped_files_are_the_node_sources_and_match_pyproject():
    import tomllib
    names = {p.relative_to(SOURCE).as_posix() for p in toolchain.shipped_files()}
    assert {"package.json", "package-lock.json", "worker.mjs", "lib/typecheck.mjs", "lib/render/prelude.js"} <= names
    assert not any("node_modules" in n for n in names)
    data = tomllib.loads((SOURCE.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert sorted(data["botgrpo.sandbox"]) == sorted(f"node/{p}" for p in toolchain.SHIPPED)


def test_the_fingerprint_follows_every_shipped_byte(tmp_path):
    copy = tmp_path / "node"
    for path in toolchain.shipped_files():
        (copy / path.relative_to(SOURCE)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy / path.relative_to(SOURCE))
    assert toolchain.fingerprint(copy) == toolchain.fingerprint()
    (copy / "lib" / "build.mjs").write_text((copy / "lib" / "build.mjs").read_text() + "\n")
    assert toolchain.fingerprint(copy) != toolchain.fingerprint()


def test_a_checkout_runs_from_its_own_folder_and_a_variable_overrides(monkeypatch, tmp_path):
    monkeypatch.delenv("BOTGRPO_NODE_DIR", raising=False)
    assert toolchain.in_checkout() and toolchain.node_dir() == SOURCE
    monkeypatch.setenv("BOTGRPO_NODE_DIR", str(tmp_path))
    assert toolchain.node_dir() == tmp_path.resolve()
    with pytest.raises(ToolchainError, match="BOTGRPO_NODE_DIR=.* has no installed node_modules"):
        toolchain.ensure()  # a named folder is never installed into


def test_a_wheel_without_node_modules_uses_a_fingerprinted_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("BOTGRPO_NODE_DIR", raising=False)
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path))
    monkeypatch.setattr(toolchain, "in_checkout", lambda source=SOURCE: False)
    monkeypatch.setattr(toolchain, "SOURCE", tmp_path / "site-packages" / "node")  # no node_modules beside it
    (tmp_path / "site-packages" / "node").mkdir(parents=True)
    assert toolchain.node_dir().parent == tmp_path and toolchain.node_dir().name.startswith("sandbox-node-")


def test_no_node_on_path_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("BOTGRPO_NODE_DIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # neither node nor npm
    with pytest.raises(ToolchainError, match=r"Node.js >= 18 with npm on PATH .*missing: node, npm"):
        toolchain.ensure(tmp_path / "cache" / "sandbox-node-x")
    assert not (tmp_path / "cache").exists()  # nothing half-made


def test_an_installed_folder_is_used_as_is(tmp_path, monkeypatch):
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / toolchain.MARKER).touch()
    monkeypatch.setenv("PATH", "")
    assert toolchain.ensure(tmp_path) == tmp_path  # no npm needed once installed
