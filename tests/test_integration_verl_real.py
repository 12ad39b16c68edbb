"""BoT-GRPO in verl itself (run by ``make test-verl`` in .venv-verl, verl 0.9.1): verl's
``compute_advantage`` dispatch on its ``DataProto``, the registration hooks reaching a fresh
process and a Ray actor, and token rewards from a live ``botgrpo serve`` through the reward
manager into the advantage step.

Needs verl. Skipped without it, unless ``BOTGRPO_REQUIRE_VERL`` is set: then a missing verl is
an error, so the CI job that means to test the integration cannot pass by skipping.
"""
import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

if os.environ.get("BOTGRPO_REQUIRE_VERL") is None:
    pytest.importorskip("verl", reason="verl is not installed (make test-verl); set BOTGRPO_REQUIRE_VERL=1 to require it")

from omegaconf import OmegaConf  # noqa: E402  (verl's dependency)
from tensordict import TensorDict  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

import botgrpo.trainer.integrations.verl_plugin as plugin  # noqa: E402  (registers bot_grpo, botgrpo, botgrpo_<mode>)
from botgrpo.trainer.algo.advantages import compute_advantages  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "botgrpo.trainer.integrations.verl_plugin"


def dataproto(rewards: torch.Tensor, mask: torch.Tensor, group_size: int) -> DataProto:
    uids = np.array([str(uuid.UUID(int=i // group_size)) for i in range(rewards.shape[0])], dtype=object)
    batch = TensorDict({"token_level_rewards": rewards, "response_mask": mask}, batch_size=rewards.shape[0])
    return DataProto(batch=batch, non_tensor_batch={"uid": uids})


def random_batch(seed=0, rows=8, width=6):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (rows,), generator=g)
    mask = (torch.arange(width)[None] < lengths[:, None]).float()
    return torch.randn(rows, width, generator=g) * mask, mask


def test_verls_compute_advantage_dispatches_to_bot_grpo():
    rewards, mask = random_batch()
    data = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo",
                             config=AlgoConfig(adv_estimator="bot_grpo"))
    expected = compute_advantages("bot_grpo", rewards, mask.bool(), torch.arange(8) // 4)
    torch.testing.assert_close(data.batch["advantages"], expected)
    torch.testing.assert_close(data.batch["returns"], expected)
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # the v1 trainers' entry
    keys = [f"{uuid.UUID(int=i // 4)}_{i}_0" for i in range(8)]
    v1 = compute_advantage_for_multi_trajectories(dataproto(rewards, mask, 4), keys, adv_estimator="bot_grpo",
                                                  config=AlgoConfig(adv_estimator="bot_grpo"))
    torch.testing.assert_close(v1.batch["advantages"], expected)


def test_the_algorithm_config_section_configures_the_estimator_through_verl():
    """What ``+algorithm.bot_grpo.min_std=0.0`` gives verl's trainers: the algorithm section is an
    OmegaConf DictConfig, handed to the estimator as ``config``; and ``bot_grpo_paper`` is registered."""
    rewards, mask = random_batch(seed=3)
    config = OmegaConf.create({"adv_estimator": "bot_grpo", "gamma": 1.0, "lam": 1.0, "bot_grpo": {"min_std": 0.0}})
    data = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo", config=config)
    paper = compute_advantages("bot_grpo_paper", rewards, mask.bool(), torch.arange(8) // 4)
    torch.testing.assert_close(data.batch["advantages"], paper)
    named = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo_paper",
                              config=AlgoConfig(adv_estimator="bot_grpo_paper"))
    torch.testing.assert_close(named.batch["advantages"], paper)


PROBE = ("import verl\n"
         "from verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
         "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
         "from verl.trainer.ppo.v1 import get_trainer_cls\n"
         "print(get_adv_estimator_fn('bot_grpo').func.__name__, get_reward_manager_cls('botgrpo').__name__,"
         " get_trainer_cls('botgrpo_sync').__name__)\n")


def probe(env):
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600, cwd="/",
                          env={**os.environ, **env})


def test_verls_external_modules_hook_registers_in_a_fresh_process():
    without = probe({"VERL_USE_EXTERNAL_MODULES": ""})
    assert without.returncode != 0 and "Unknown advantage estimator" in without.stderr
    done = probe({"VERL_USE_EXTERNAL_MODULES": PLUGIN})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["bot_grpo_advantage", "BoTGRPORewardManager", "BoTGRPOPPOTrainerSync"]


def test_a_config_named_reward_manager_module_registers_the_estimator_where_it_loads():
    """verl's TaskRunner resolves the reward manager class (RewardLoopManager.__init__) before any
    advantage; naming our module there registers the estimator in that very process."""
    config = {"reward": {"reward_manager": {"source": "importlib", "name": "BoTGRPORewardManager",
                                            "module": {"path": f"pkg://{PLUGIN}"}}}}
    code = ("from omegaconf import OmegaConf\n"
            "from verl.trainer.ppo.reward import resolve_reward_manager_cls\n"
            f"cls = resolve_reward_manager_cls(OmegaConf.create({config!r}))\n"
            "from verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
            "print(cls.__name__, get_adv_estimator_fn('bot_grpo').func.__name__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd="/",
                          env={**os.environ, "VERL_USE_EXTERNAL_MODULES": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["BoTGRPORewardManager", "bot_grpo_advantage"]


def test_the_ray_runtime_env_hook_reaches_an_actor_that_computes_advantages():
    """The TaskRunner is a Ray actor: the estimator must be registered in its process."""
    import ray

    rewards, mask = random_batch(seed=3)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"VERL_USE_EXTERNAL_MODULES": PLUGIN}})
    try:
        @ray.remote
        class TaskRunnerLike:
            def advantages(self, rewards, mask):
                from verl.trainer.config import AlgoConfig
                from verl.trainer.ppo.ray_trainer import compute_advantage
                data = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo",
                                         config=AlgoConfig(adv_estimator="bot_grpo"))
                return data.batch["advantages"]

        remote = ray.get(TaskRunnerLike.remote().advantages.remote(rewards, mask))
    finally:
        ray.shutdown()
    torch.testing.assert_close(remote, compute_advantages("bot_grpo", rewards, mask.bool(), torch.arange(8) // 4))


# --------------------------------------------------------------------------- token rewards from the server
from tests.integration_fixtures import server, tokenizer  # noqa: E402,F401  (pytest fixtures)


def manager(server, tokenizer):
    config = OmegaConf.create({"reward": {"reward_kwargs": {"botgrpo": {"url": server.url, "task": "math"}}}})
    return plugin.BoTGRPORewardManager(config=config, tokenizer=tokenizer, compute_score=None)


def item(tokenizer, completion: str, ground_truth, width=40):
    ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    prompt = torch.tensor([[1, 2, 3]])
    responses = torch.zeros((1, width), dtype=torch.long)
    responses[0, : len(ids)] = torch.tensor(ids)
    attention = torch.cat([torch.ones((1, 3)), (torch.arange(width) < len(ids)).float()[None]], dim=1).long()
    batch = TensorDict({"prompts": prompt, "responses": responses, "attention_mask": attention}, batch_size=1)
    non_tensor = {"reward_model": np.array([{"ground_truth": ground_truth}], dtype=object),
                  "extra_info": np.array([{}], dtype=object), "data_source": np.array(["math"], dtype=object)}
    return DataProto(batch=batch, non_tensor_batch=non_tensor), ids


COMPLETIONS = [("3 * 4 = 12, so \\boxed{12}", "12"), ("3 * 4 = 12, 12 + 2 = 15, so \\boxed{15}", "14"),
               ("3 * 4 = 12, so \\boxed{12}", "12"), ("2 + 2 = 5 wrong", "12")]


def test_the_reward_manager_fills_token_scores_from_a_live_server(server, tokenizer):
    from botgrpo.services.client import RewardClient
    from botgrpo.trainer.rollout.alignment import token_spans
    rm = manager(server, tokenizer)
    results = []
    for completion, truth in COMPLETIONS:
        data, ids = item(tokenizer, completion, truth)
        result = asyncio.run(rm.run_single(data))
        text, spans = token_spans(tokenizer, ids)
        with RewardClient(server.url) as client:
            [direct] = client.score("math", [{"id": "0", "completion": text, "reference": {"answer": truth},
                                              "token_offsets": [list(s) for s in spans]}])
        assert result["reward_score"] == direct.score
        # the server's token scores in reward units (its reward_map divided out), as the trainer reads them
        assert result["reward_extra_info"]["botgrpo_token_scores"] == pytest.approx(direct.rewards())
        assert len(direct.token_scores) == len(ids)
        results.append(result)
    assert results[0]["reward_score"] > results[1]["reward_score"]
    wrong_step = results[1]["reward_extra_info"]["botgrpo_token_scores"]
    assert len(set(wrong_step)) > 1, "a wrong step is blamed locally: the token scores vary within the rollout"


class MemoryTQ:
    """TransferQueue's kv_batch_get / kv_batch_put on a dict (what the trainer-mode override calls)."""

    def __init__(self, fields):
        self.fields = fields

    def kv_batch_get(self, keys, partition_id, select_fields):
        return {f: self.fields[f] for f in select_fields}

    def kv_batch_put(self, keys, partition_id, fields):
        self.fields.update({k: fields[k] for k in fields.keys()})
        return type("Meta", (), {"keys": keys, "partition_id": partition_id})()


def test_token_scores_reach_the_advantage_step_and_verls_metrics_keep_the_outcome(server, tokenizer):
    rm = manager(server, tokenizer)
    outs, lengths = [], []
    for completion, truth in COMPLETIONS:
        data, ids = item(tokenizer, completion, truth)
        outs.append(asyncio.run(rm.run_single(data)))
        lengths.append(len(ids))
    scalar = [torch.zeros(n) for n in lengths]
    for row, out in zip(scalar, outs):
        row[-1] = out["reward_score"]  # verl's agent loop: the outcome on the last token
    tq = MemoryTQ({"rm_scores": torch.nested.as_nested_tensor(scalar, layout=torch.jagged),
                   "extra_fields": [{"reward_extra_info": o["reward_extra_info"]} for o in outs]})
    meta = type("Meta", (), {"keys": [f"u_{i}_0" for i in range(4)], "partition_id": "train"})()
    seen = {}

    class Base:
        def _compute_advantage(self, batch, metrics):
            rm_scores = tq.fields["rm_scores"]
            width = max(lengths)
            rewards = rm_scores.to_padded_tensor(0.0, output_size=(4, width))
            mask = (torch.arange(width)[None] < torch.tensor(lengths)[:, None]).float()
            data = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo",
                                     config=AlgoConfig(adv_estimator="bot_grpo"))
            seen.update(rewards=rewards, mask=mask, advantages=data.batch["advantages"])
            return batch

    class Trainer(plugin.TokenRewardAdvantages, Base):
        pass

    original = plugin.trainer_base.tq
    plugin.trainer_base.tq = tq
    try:
        Trainer()._compute_advantage(meta, {})
    finally:
        plugin.trainer_base.tq = original
    tokens = [o["reward_extra_info"]["botgrpo_token_scores"] for o in outs]
    for i, row in enumerate(tokens):
        assert seen["rewards"][i, : lengths[i]].tolist() == pytest.approx(row)
    expected = compute_advantages("bot_grpo", seen["rewards"], seen["mask"].bool(), torch.zeros(4, dtype=torch.long))
    torch.testing.assert_close(seen["advantages"], expected)
    restored = tq.fields["rm_scores"]  # after the advantage step, verl logs the outcome again
    assert [float(r[-1]) for r in restored.unbind()] == [o["reward_score"] for o in outs]


def test_a_rollout_the_server_cannot_score_leaves_the_advantages(server, tokenizer):
    rm = manager(server, tokenizer)
    data, ids = item(tokenizer, "3 * 4 = 12, so \\boxed{12}", None)  # no reference: the math scorer cannot judge
    out = asyncio.run(rm.run_single(data))
    assert out["reward_extra_info"]["botgrpo_unscored"] is True
    row = plugin.token_scores_row({"reward_extra_info": out["reward_extra_info"]}, len(ids))
    rewards, mask = random_batch(seed=5, rows=4, width=len(ids))
    rewards[0], mask[0] = torch.tensor(row), 1.0
    data = compute_advantage(dataproto(rewards, mask, 4), adv_estimator="bot_grpo",
                             config=AlgoConfig(adv_estimator="bot_grpo"))
    advantages = data.batch["advantages"]
    assert torch.all(advantages[0] == 0) and advantages.isfinite().all()
    keep = mask.bool().clone()
    keep[0] = False
    torch.testing.assert_close(advantages[1:], compute_advantages("bot_grpo", rewards.nan_to_num(), keep,
                                                                  torch.zeros(4, dtype=torch.long))[1:])


def test_botgrpo_trainer_modes_wrap_each_of_verls_trainers():
    from verl.trainer.ppo.v1 import get_trainer_cls
    for mode in ("sync", "colocate_async", "separate_async"):
        cls = get_trainer_cls(f"botgrpo_{mode}")
        assert issubclass(cls, get_trainer_cls(mode)) and issubclass(cls, plugin.TokenRewardAdvantages)
