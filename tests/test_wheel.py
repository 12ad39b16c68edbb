"""The built wheel, installed the way a user installs it: a fresh virtualenv, no checkout.

Builds the wheel from this tree, then in a new virtualenv (run from an empty folder, so nothing
of the checkout is importable):

1. the base install imports the public API's light half, puts nothing but ``botgrpo`` at the
   top level, and ``botgrpo serve`` names the extra it lacks instead of a traceback;
2. with ``[server]`` (no torch: a server-only install does not pull it) ``botgrpo serve`` installs
   the sandbox's npm dependencies from the shipped lockfile into a cache folder on first start,
   then scores React at ``build`` and ``typecheck`` and math through REST, and serves the inspector
   page from the package's data.

Slow (a virtualenv, pip from the package index, npm ci): ``make test-wheel``, which CI runs.
Skipped elsewhere unless ``BOTGRPO_REQUIRE_WHEEL`` is set.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from botgrpo.sandbox.libraries import package_of
from tests.rest_checks import CURATED, check_libraries, check_react_and_math

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("BOTGRPO_REQUIRE_WHEEL"):
    pytest.skip("the installed-wheel test runs in make test-wheel (BOTGRPO_REQUIRE_WHEEL=1)", allow_module_level=True)


def _run(*argv, cwd, env=None, timeout=900) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    # from a copy of the tree: setuptools' build/ folder keeps files a checkout has since deleted
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", "node_modules", "build", "dist",
                                                                 "*.egg-info", "runs", "__pycache__", ".pytest_cache"))
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", source, cwd=tmp)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next((tmp / "dist").glob("botgrpo-*.whl"))
    assert _run(sys.executable, "-m", "venv", tmp / "venv", cwd=tmp).returncode == 0
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BOTGRPO_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), BOTGRPO_CACHE=str(tmp / "cache"), PATH=f"{tmp / 'venv' / 'bin'}:{env['PATH']}")
    return tmp, wheel, env


def test_the_wheel_holds_one_top_level_package_and_the_node_sources(venv):
    _, wheel, _ = venv
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"botgrpo", wheel.name.split("-py3")[0] + ".dist-info"}
    node = {n.split("botgrpo/sandbox/node/", 1)[1] for n in names if n.startswith("botgrpo/sandbox/node/")}
    assert {"package.json", "package-lock.json", "worker.mjs", "lib/typecheck.mjs"} <= node
    assert not any("node_modules" in n for n in node)
    assert {"botgrpo/reward_server/static/inspector.html", "botgrpo/reward_server/static/inspector.js",
            "botgrpo/reward_server/static/inspector.css"} <= set(names)  # the inspector page
    assert not any(n.startswith(("botgrpo/tests", "botgrpo/benchmarks")) for n in names)


def test_base_install_then_server_extra_serves_and_scores(venv):
    tmp, wheel, env = venv
    bin_ = tmp / "venv" / "bin"
    work = tmp / "work"  # an empty folder: nothing of the checkout on the path
    work.mkdir()
    done = _run(bin_ / "pip", "install", "-q", wheel, cwd=work, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = _run(bin_ / "python", "-c", "import botgrpo, botgrpo.services.client as c; "
                 "print(botgrpo.__version__, botgrpo.RewardClient is c.RewardClient, botgrpo.__file__)", cwd=work, env=env)
    assert probe.returncode == 0, probe.stderr
    version, same, where = probe.stdout.split()
    assert same == "True" and "site-packages" in where and version in wheel.name
    for bare in ("trainer", "services", "sandbox", "reward_server", "benchmarks"):
        assert _run(bin_ / "python", "-c", f"import {bare}", cwd=work, env=env).returncode != 0, bare
    assert _run(bin_ / "botgrpo", "--help", cwd=work, env=env).returncode == 0
    lacking = _run(bin_ / "botgrpo", "serve", cwd=work, env=env)
    assert lacking.returncode == 2 and "pip install 'botgrpo[server]'" in lacking.stderr, lacking.stderr[-2000:]

    done = _run(bin_ / "pip", "install", "-q", f"{wheel}[server]", cwd=work, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _run(bin_ / "python", "-c", "import torch", cwd=work, env=env).returncode != 0  # no torch for a server
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp / "serve.log", "w")
    server = subprocess.Popen([str(bin_ / "botgrpo"), "serve", "--port", str(port)], cwd=work, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 600  # the first start runs npm ci
        while True:
            assert server.poll() is None, (tmp / "serve.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp / "serve.log").read_text()[-3000:]
            time.sleep(1)

        check_react_and_math(url)
        with httpx.Client(base_url=url, timeout=120) as client:
            check_libraries(client)  # the same allow-list as the checkout's server and the image's
        page, script = httpx.get(f"{url}/inspector"), httpx.get(f"{url}/inspector/static/inspector.js")
        assert page.status_code == script.status_code == 200 and "textContent" in script.text
        assert httpx.get(f"{url}/inspector/rollouts").json()["rollouts"]  # what check_react_and_math scored
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    cached = list((tmp / "cache").glob("sandbox-node-*/node_modules/.installed"))
    assert len(cached) == 1, "the npm dependencies went into the cache folder"
    # the curated UI libraries came from the same lockfile and were bundled for rendering once
    node_modules = cached[0].parent
    assert all((node_modules / package_of(name) / "package.json").is_file() for name in CURATED)
    assert (node_modules / ".botgrpo-libraries" / "manifest.json").is_file()
    assert "installing the sandbox's npm dependencies" in (tmp / "serve.log").read_text()
