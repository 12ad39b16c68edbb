"""The docs' commands run, and the generated reference is current."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from botgrpo.docgen import render
from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def bash_blocks(path: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```\n", path.read_text(), flags=re.S)


def test_configuration_reference_is_current():
    assert (ROOT / "docs" / "configuration.md").read_text() == render(), \
        "docs/configuration.md is stale: run `python -m botgrpo.docgen > docs/configuration.md`"


def test_the_reference_takes_the_config_sections_from_the_model():
    """A section added to TrainConfig (at any depth, optional or not) is documented, introduced by
    its model's docstring; one without a docstring fails the generation instead of passing unseen."""
    from typing import Optional

    from pydantic import BaseModel, Field

    from botgrpo.docgen import intro, sections
    from botgrpo.trainer.config import TrainConfig

    class Inner(BaseModel):
        """``extra.inner:`` a section added later
        (its first paragraph introduces it).

        Not this paragraph."""
        x: int = 1

    class Outer(BaseModel):
        """``extra:`` its parent."""
        inner: Optional[Inner] = None

    class Config(BaseModel):
        a: int = 0
        extra: Outer = Field(default_factory=Outer)

    assert sections(Config) == [("extra", Outer), ("extra.inner", Inner)]
    assert intro("extra.inner", Inner) == "A section added later (its first paragraph introduces it)."

    class Bare(BaseModel):
        y: int = 0

    with pytest.raises(ValueError, match="no docstring"):
        intro("bare", Bare)
    text = render()
    assert [path for path, _ in sections(TrainConfig)] == \
        ["data", "algorithm", "rollout", "rollout.sampling", "rollout.vllm", "reward", "optim", "optim.lora", "eval",
         "checkpoint", "log"]
    assert all(f"## `{path}:`" in text for path, _ in sections(TrainConfig))


def test_api_page_commands_run_against_a_live_server(tmp_path):
    require_node_toolchain()
    server = LiveServer(tmp_path)
    try:
        for block in bash_blocks(ROOT / "docs" / "api.md"):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True, text=True,
                                  env={"PATH": "/usr/bin:/bin", "BOTGRPO_URL": server.url}, timeout=120)
            assert done.returncode == 0, done.stderr
            assert "['math', 'react']" in done.stdout and '"passed": true' in done.stdout.replace('"passed":true', '"passed": true')
    finally:
        server.stop()


def test_example_training_config_is_valid():
    from botgrpo.commands.train import FLAGS, build_config
    args = argparse.Namespace(config=str(ROOT / "docs" / "examples" / "train_react.yaml"), resume=None, set=[],
                              **{k: None for k in FLAGS})
    cfg = build_config(args)
    assert cfg.reward.task == "react" and cfg.algorithm.settings().estimator == "bot_grpo"


COMMANDS = sorted({m for doc in DOCS for m in re.findall(r"botgrpo (serve|worker|train|score|eval|demo|compare|bench)\b", doc.read_text())})


@pytest.mark.parametrize("command", COMMANDS)
def test_every_documented_subcommand_answers_help(command):
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", command, "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "usage: botgrpo " + command in done.stdout
