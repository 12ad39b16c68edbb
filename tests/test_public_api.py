"""``import botgrpo``: one version string everywhere, and a small public API loaded on first use."""
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import botgrpo

ROOT = Path(__file__).resolve().parents[1]


def test_one_version_string():
    assert importlib.metadata.version("botgrpo") == botgrpo.__version__
    tags = set()
    for path in [*ROOT.glob("deploy/*.yaml"), *ROOT.glob("deploy/k8s/*.yaml"), *ROOT.glob("deploy/Dockerfile.*")]:
        tags |= set(re.findall(r"botgrpo-(?:server|trainer):(\d+\.\d+\.\d+)", path.read_text()))
        tags |= set(re.findall(r"newTag:\s*(\d+\.\d+\.\d+)", path.read_text()))
    assert tags == {botgrpo.__version__}
    from botgrpo.reward_server.app import create_app
    from botgrpo.reward_server.settings import ServerSettings
    assert create_app(ServerSettings()).version == botgrpo.__version__


@pytest.mark.parametrize("name", sorted(set(botgrpo.__all__) - {"__version__"}))
def test_every_public_name_resolves(name):
    assert getattr(botgrpo, name) is not None and name in dir(botgrpo)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        botgrpo.nothing  # noqa: B018


def test_importing_botgrpo_loads_neither_torch_nor_the_server():
    probe = "import sys, botgrpo; print('torch' in sys.modules, 'fastapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "False"]
