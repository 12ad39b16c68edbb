"""BoT-GRPO in SkyRL itself (run by ``make test-skyrl`` in .venv-skyrl, skyrl 0.3.0): SkyRL's
advantage dispatch on per-token rewards, its config parser and launcher reaching our entrypoint,
and a live ``botgrpo serve``'s token scores through SkyRL's trainer steps, from the generator
output (its ``validate_generator_output``) to the advantages.

SkyRL's ``RayPPOTrainer`` steps run as SkyRL wrote them, on a stand-in ``self`` holding what
they read (the config, the tokenizer, the generator, a metrics dict): building the trainer
itself needs GPUs and an inference engine.

Needs SkyRL. Skipped without it, unless ``BOTGRPO_REQUIRE_SKYRL`` is set: then a missing SkyRL
is an error, so the CI job that means to test the integration cannot pass by skipping.
"""
import asyncio
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

if os.environ.get("BOTGRPO_REQUIRE_SKYRL") is None:
    pytest.importorskip("skyrl.train.trainer", reason="SkyRL is not installed (make test-skyrl); "
                                                      "set BOTGRPO_REQUIRE_SKYRL=1 to require it")

from skyrl.backends.skyrl_train.utils import ppo_utils  # noqa: E402
from skyrl.train.config import AlgorithmConfig  # noqa: E402
from skyrl.train.generators.base import GeneratorInterface  # noqa: E402
from skyrl.train.generators.utils import prepare_generator_input  # noqa: E402
from skyrl.train.trainer import RayPPOTrainer  # noqa: E402
from skyrl.train.utils.trainer_utils import validate_generator_output  # noqa: E402

from botgrpo.services.client import RewardClient  # noqa: E402
from botgrpo.trainer.algo.advantages import compute_advantages  # noqa: E402
from botgrpo.trainer.integrations import skyrl as integration  # noqa: E402
from botgrpo.trainer.integrations.contract import group_ids_from_uids  # noqa: E402
from botgrpo.trainer.rollout.alignment import token_spans  # noqa: E402

for _name in integration.NAMES:
    integration.register(_name)


def random_batch(seed=0, rows=8, width=6, group_size=4):
    """Right-aligned responses (SkyRL's layout), string uids as SkyRL's metadata holds them."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    mask = (torch.arange(width).flip(0)[None] < lengths[:, None]).float()
    uids = [f"prompt-{i // group_size}" for i in range(rows)]
    return torch.randn(rows, width, generator=g) * mask, mask, uids


def skyrl_dispatch(rewards, mask, uids, estimator, config):
    """SkyRL's own entry (what RayPPOTrainer.compute_advantages_and_returns calls)."""
    return ppo_utils.compute_advantages_and_returns(
        token_level_rewards=rewards, response_mask=mask, index=uids, adv_estimator=estimator, config=config,
        values=None, gamma=config.gamma, lambd=config.lambd, grpo_norm_by_std=config.grpo_norm_by_std)


def test_skyrls_dispatch_computes_bot_grpo_on_token_rewards():
    rewards, mask, uids = random_batch()
    groups = torch.arange(8) // 4
    for name in integration.NAMES:
        advantages, returns = skyrl_dispatch(rewards, mask, uids, name, AlgorithmConfig(advantage_estimator=name))
        expected = compute_advantages(name, rewards, mask.bool(), groups)
        torch.testing.assert_close(advantages, expected)
        assert torch.equal(returns, advantages)
    quiet = rewards * 0.01  # a spread below the bound: where the two estimators differ
    bounded, _ = skyrl_dispatch(quiet, mask, uids, "bot_grpo", AlgorithmConfig())
    paper, _ = skyrl_dispatch(quiet, mask, uids, "bot_grpo_paper", AlgorithmConfig())
    assert not torch.allclose(bounded, paper), "the two names are two estimators"


def test_the_algorithm_config_section_reaches_the_estimator_through_skyrls_parser():
    rewards, mask, uids = random_batch(seed=3)
    cfg = integration.parse(["trainer.override_entrypoint=botgrpo.trainer.integrations.skyrl",
                             "trainer.algorithm.advantage_estimator=bot_grpo",
                             "trainer.algorithm.bot_grpo.min_std=0.0",
                             "generator.botgrpo.url=http://reward:8000", "generator.botgrpo.task=math",
                             "generator.botgrpo.options.level=build"])
    assert (cfg.generator.botgrpo.url, cfg.generator.botgrpo.task) == ("http://reward:8000", "math")
    assert cfg.generator.botgrpo.options == {"level": "build"}
    algorithm = cfg.trainer.algorithm
    advantages, _ = skyrl_dispatch(rewards, mask, uids, algorithm.advantage_estimator, algorithm)
    paper = compute_advantages("bot_grpo_paper", rewards, mask.bool(), torch.arange(8) // 4)
    torch.testing.assert_close(advantages, paper)  # min_std=0 is the paper's form
    typo = integration.parse(["trainer.algorithm.advantage_estimator=bot_grpo", "trainer.algorithm.bot_grpo.min_sdt=0"])
    with pytest.raises(ValueError, match="min_sdt"):
        skyrl_dispatch(rewards, mask, uids, "bot_grpo", typo.trainer.algorithm)


def test_registering_again_is_a_no_op_and_other_options_are_refused():
    assert integration.register("bot_grpo") is not None  # done at import above: recognised, not re-added
    with pytest.raises(ValueError, match="already registered"):
        integration.register("bot_grpo", min_std=0.5)
    with pytest.raises(ValueError, match="no BoT-GRPO estimator"):
        integration.register("grpo")


def test_skyrls_launcher_hands_our_entrypoint_the_command_line():
    """``main_base`` imports the module named by ``trainer.override_entrypoint`` and calls its
    ``main()``, which parses the extended config and stops, before Ray, on a missing server."""
    done = subprocess.run([sys.executable, "-m", "skyrl.train.entrypoints.main_base",
                           "trainer.override_entrypoint=botgrpo.trainer.integrations.skyrl",
                           "trainer.algorithm.advantage_estimator=bot_grpo", "generator.botgrpo.task=math"],
                          capture_output=True, text=True, timeout=600, cwd="/")
    assert done.returncode != 0
    assert "set generator.botgrpo.url and generator.botgrpo.task" in done.stderr, done.stderr[-3000:]


# --------------------------------------------------------------------------- token rewards from the server
from tests.integration_fixtures import server, tokenizer  # noqa: E402,F401  (pytest fixtures)


# two prompts, two samples each: (completion, ground truth) in SkyRL's row order
PROMPTS = [{"uid": "p0", "truth": "12", "completions": ["3 * 4 = 12, so \\boxed{12}", "3 * 4 = 12, 12 + 2 = 15, so \\boxed{15}"]},
           {"uid": "p1", "truth": "14", "completions": ["3 * 4 = 12, 12 + 2 = 14, so \\boxed{14}", "2 + 2 = 5 wrong"]}]


class Scripted(GeneratorInterface):
    """A SkyRL generator that answers each prompt row with the next scripted completion."""

    def __init__(self, tokenizer, completions):
        self.tokenizer, self.completions = tokenizer, completions

    async def generate(self, input_batch, **_):
        responses = [self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in self.completions]
        prompt_ids = [self.tokenizer(p[-1]["content"], add_special_tokens=False)["input_ids"] for p in input_batch["prompts"]]
        return {"prompt_token_ids": prompt_ids, "response_ids": responses,
                "rewards": [0.0] * len(responses),  # the environment's scalar, which the wrapper replaces
                "loss_masks": [[1] * len(r) for r in responses], "stop_reasons": ["stop"] * len(responses),
                "rollout_metrics": None, "rollout_logprobs": None}


def skyrl_input(prompts):
    """SkyRL's own generator input: dataset rows expanded per sample, env_extras carrying reward_spec."""
    rows = [{"prompt": [{"role": "user", "content": f"Compute, then box the answer ({p['uid']})"}], "env_class": None,
             "uid": p["uid"], "env_extras": {"reward_spec": {"method": "rule", "ground_truth": p["truth"]}}}
            for p in prompts]
    return prepare_generator_input(rows, len(prompts[0]["completions"]), {}, "gsm8k", "train", 1)


def stand_in(tokenizer, generator):
    """What RayPPOTrainer's generate/postprocess/convert/advantage steps read from ``self``."""
    cfg = integration.parse(["trainer.algorithm.advantage_estimator=bot_grpo", "generator.n_samples_per_prompt=2",
                             "trainer.train_batch_size=2", "trainer.policy_mini_batch_size=2"])
    return SimpleNamespace(cfg=cfg, tokenizer=tokenizer, generator=generator, all_metrics={},
                           dispatch=SimpleNamespace(get_lcm_dp_size=lambda: 1))


def run_skyrl_steps(trainer, input_batch, uids):
    output = asyncio.run(RayPPOTrainer.generate(trainer, input_batch))  # runs validate_generator_output
    rewards_as_generated = [list(r) for r in output["rewards"]]
    output, uids = RayPPOTrainer.postprocess_generator_output(trainer, output, uids)
    data = RayPPOTrainer.convert_to_training_input(trainer, output, uids)
    data["values"] = None  # fwd_logprobs_values_reward (the model forward passes) leaves this without a critic
    return RayPPOTrainer.compute_advantages_and_returns(trainer, data), rewards_as_generated


def test_server_token_scores_flow_through_skyrls_trainer_steps_into_bot_grpo(server, tokenizer):
    completions = [c for p in PROMPTS for c in p["completions"]]
    trainer = stand_in(tokenizer, integration.TokenRewardGenerator(
        Scripted(tokenizer, completions), integration.RewardServerTokens(tokenizer, server.url, "math")))
    input_batch, uids = skyrl_input(PROMPTS)
    data, generated = run_skyrl_steps(trainer, input_batch, uids)

    # the generator output's rewards are the server's token scores, aligned one per response token
    truths = [p["truth"] for p in PROMPTS for _ in p["completions"]]
    outcomes = []
    with RewardClient(server.url) as client:
        for row, completion, truth in zip(generated, completions, truths):
            ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
            text, spans = token_spans(tokenizer, ids)
            [direct] = client.score("math", [{"id": "0", "completion": text, "reference": {"answer": truth},
                                              "token_offsets": [list(s) for s in spans]}])
            assert len(row) == len(ids) and row == pytest.approx(direct.rewards())
            outcomes.append(direct.score)
    assert len(set(generated[1])) > 1, "a wrong step is blamed locally: token rewards vary within the rollout"
    assert trainer.all_metrics["botgrpo/unscored"] == 0.0
    assert math.isfinite(trainer.all_metrics["reward/avg_raw_reward"])  # SkyRL's own metric over token rewards
    assert trainer.all_metrics["botgrpo/score_mean"] == pytest.approx(sum(outcomes) / len(outcomes))

    # SkyRL padded them right-aligned and dispatched to bot_grpo with the prompt uids as groups
    mask = data["response_mask"]
    for i, row in enumerate(generated):
        assert data["rewards"][i][mask[i].bool()].tolist() == pytest.approx(row)
    expected = compute_advantages("bot_grpo", data["rewards"], mask.bool(), group_ids_from_uids(uids, len(uids)))
    torch.testing.assert_close(data["advantages"], expected)
    first = data["advantages"][1][mask[1].bool()]
    assert first.unique().numel() > 1, "token-level credit: the advantages vary within a rollout"


def test_a_rollout_the_server_cannot_score_takes_no_part(server, tokenizer):
    completions = [c for p in PROMPTS for c in p["completions"]]
    trainer = stand_in(tokenizer, integration.TokenRewardGenerator(
        Scripted(tokenizer, completions), integration.RewardServerTokens(tokenizer, server.url, "math")))
    input_batch, uids = skyrl_input(PROMPTS)
    input_batch["env_extras"][0] = {}  # no reference: the math scorer cannot judge this rollout
    data, generated = run_skyrl_steps(trainer, input_batch, uids)
    assert all(math.isnan(x) for x in generated[0]) and trainer.all_metrics["botgrpo/unscored"] == 0.25
    advantages, mask = data["advantages"], data["response_mask"].bool()
    assert torch.all(advantages[0] == 0) and advantages.isfinite().all()
    keep = mask.clone()
    keep[0] = False
    expected = compute_advantages("bot_grpo", data["rewards"].nan_to_num(), keep, group_ids_from_uids(uids, len(uids)))
    torch.testing.assert_close(advantages[1:], expected[1:])


def test_skyrls_output_check_holds_our_rewards_to_one_per_token(server, tokenizer):
    """SkyRL's validate_generator_output is the guard our alignment must pass: one short row fails it."""
    completions = [c for p in PROMPTS for c in p["completions"]]
    tokens = integration.RewardServerTokens(tokenizer, server.url, "math")
    generator = integration.TokenRewardGenerator(Scripted(tokenizer, completions), tokens)
    input_batch, _ = skyrl_input(PROMPTS)
    output = asyncio.run(generator.generate(input_batch))
    validate_generator_output(len(input_batch["prompts"]), output)
    references = [{"answer": p["truth"]} for p in PROMPTS for _ in p["completions"]]
    standalone = asyncio.run(tokens(output["response_ids"], references))  # for a generator of one's own
    assert standalone == output["rewards"]
    output["rewards"][2] = output["rewards"][2][:-1]
    with pytest.raises(AssertionError, match="Token rewards and response ids must have the same length"):
        validate_generator_output(len(input_batch["prompts"]), output)


def test_the_experiment_wraps_skyrls_own_generator(tokenizer):
    """BasePPOExp.get_generator, overridden: SkyRL builds its SkyRLGymGenerator, we wrap it."""
    from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator

    cfg = integration.parse(["generator.botgrpo.url=http://reward:8000", "generator.botgrpo.task=math",
                             "generator.botgrpo.options.level=build"])
    tokenizer = copy_with_chat_template(tokenizer)
    Exp = integration.experiment_class()
    generator = Exp.get_generator(Exp.__new__(Exp), cfg, tokenizer, None)  # no engine needed to build it
    assert isinstance(generator, integration.TokenRewardGenerator)
    assert isinstance(generator.generator, SkyRLGymGenerator)
    assert (generator.tokens.url, generator.tokens.task, generator.tokens.options) == ("http://reward:8000", "math",
                                                                                       {"level": "build"})
    with pytest.raises(ValueError, match="set generator.botgrpo.url"):
        Exp.get_generator(Exp.__new__(Exp), integration.parse([]), tokenizer, None)


def copy_with_chat_template(tokenizer):
    """SkyRL's generator applies the chat template at construction; the tiny tokenizer has none."""
    import copy

    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    return tokenizer
