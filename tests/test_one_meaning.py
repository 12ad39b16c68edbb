"""``bot_grpo`` means one thing at every entry point: the registry's estimator with its default
bound, which the ``bot_grpo`` preset (``botgrpo train``, ``botgrpo demo``), the verl estimator and
the README's first example all use; the paper's unbounded form is ``bot_grpo_paper`` everywhere."""
import inspect
import re
from pathlib import Path

import torch

from botgrpo.demo import DemoSettings
from botgrpo.trainer.algo.advantages import RECOMMENDED_MIN_STD, compute_advantages
from botgrpo.trainer.algo.presets import preset
from botgrpo.trainer.config import AlgorithmSection
from botgrpo.trainer.integrations.verl import DEFAULT_NAME, bot_grpo_advantage

ROOT = Path(__file__).resolve().parents[1]


def all_fail_group():
    """Every rollout fails and one token is blamed: where the bound decides the advantages."""
    rewards = torch.full((2, 10), -1.0)
    rewards[0, 9] = -1.5
    return rewards, torch.ones(2, 10, dtype=torch.bool), torch.zeros(2, dtype=torch.long)


def test_every_entry_point_computes_the_same_bot_grpo():
    r, m, g = all_fail_group()
    registry = compute_advantages("bot_grpo", r, m, g)
    bounded = compute_advantages("bot_grpo", r, m, g, min_std=RECOMMENDED_MIN_STD)
    paper = compute_advantages("bot_grpo_paper", r, m, g)
    assert torch.equal(registry, bounded) and not torch.allclose(registry, paper)
    for method in (AlgorithmSection.model_fields["method"].default, DemoSettings.method):
        algo = preset(method)
        assert torch.equal(compute_advantages(algo.estimator, r, m, g, **algo.estimator_options), registry)
    verl, _ = bot_grpo_advantage(r, m.float(), [0, 0])
    assert DEFAULT_NAME == "bot_grpo" and torch.equal(verl, registry)
    algo = preset("bot_grpo_paper")
    assert torch.equal(compute_advantages(algo.estimator, r, m, g, **algo.estimator_options), paper)


def test_the_trl_trainer_defaults_to_the_same_estimator():
    """Read from the source: importing the TRL module needs TRL, which make test-trl has."""
    source = (ROOT / "trainer" / "integrations" / "trl.py").read_text()
    assert re.search(r'advantage_estimator: str = "bot_grpo"', source)


def test_the_readme_example_uses_the_registry_name():
    readme = (ROOT / "README.md").read_text()
    calls = re.findall(r'compute_advantages\("(\w+)"', readme)
    assert calls and set(calls) <= {"bot_grpo", "bot_grpo_paper", "grpo"}
    assert inspect.signature(compute_advantages)  # the example's entry point exists
