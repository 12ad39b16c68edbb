"""The verl adapter against verl's estimator contract, without verl installed.

verl (0.9.x, ``ray_trainer.compute_advantage``) calls a registered estimator with keyword
arguments ``token_level_rewards`` (bs, T) float, ``response_mask`` (bs, T) 0/1 (float or int),
``config`` (its ``AlgoConfig``) and ``index`` (an object array of string uids, one per row), and
stores the ``(advantages, returns)`` it returns. verl itself (its dispatch, DataProto, reward
loop, Ray actors) is tested in its own virtualenv: ``make test-verl`` runs this file and
tests/test_integration_verl_real.py there, with ``BOTGRPO_REQUIRE_VERL=1`` (a missing verl fails).
"""
import math
import os
import uuid

import numpy as np
import pytest
import torch

from botgrpo.trainer.algo.advantages import compute_advantages
from botgrpo.trainer.integrations.verl import bot_grpo_advantage, group_ids_from_uids, register


def verl_batch(groups=3, group_size=4, width=7, seed=0):
    """A batch as verl hands it over: right-padded responses, float mask, string uids."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (groups * group_size,), generator=g)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).float()
    rewards = torch.randn(groups * group_size, width, generator=g) * mask
    uids = np.array([str(uuid.UUID(int=k)) for k in range(groups) for _ in range(group_size)], dtype=object)
    return rewards, mask, uids


def test_matches_compute_advantages_and_returns_equal_advantages():
    rewards, mask, uids = verl_batch()
    advantages, returns = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None)
    expected = compute_advantages("bot_grpo", rewards, mask.bool(), torch.arange(12) // 4)
    assert advantages.shape == rewards.shape == returns.shape
    assert advantages.dtype == rewards.dtype
    torch.testing.assert_close(advantages, expected)
    assert torch.equal(returns, advantages)


def test_padding_is_exactly_zero_even_with_garbage_rewards_there():
    rewards, mask, uids = verl_batch(seed=1)
    rewards = torch.where(mask.bool(), rewards, torch.tensor(1e9))
    advantages, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None)
    assert torch.all(advantages[mask == 0] == 0.0)
    assert advantages.isfinite().all()


def test_string_uids_group_rows_in_any_order():
    rewards, mask, uids = verl_batch(seed=2)
    order = torch.randperm(12, generator=torch.Generator().manual_seed(3))
    shuffled, _ = bot_grpo_advantage(token_level_rewards=rewards[order], response_mask=mask[order],
                                     index=uids[order.numpy()], config=None)
    straight, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None)
    torch.testing.assert_close(shuffled, straight[order])


def test_uids_map_to_dense_ids_in_order_of_first_appearance():
    assert group_ids_from_uids(np.array(["b", "a", "b", "c"], dtype=object), 4).tolist() == [0, 1, 0, 2]
    assert group_ids_from_uids(None, 3).tolist() == [0, 0, 0]
    with pytest.raises(ValueError):
        group_ids_from_uids(np.array(["a", "b"], dtype=object), 3)


def test_groups_are_normalised_separately():
    """Each group's length-weighted token rewards have mean 0 and (population) std 1."""
    rewards, mask, uids = verl_batch(groups=2, group_size=5, seed=4)
    advantages, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None)
    for g in range(2):
        rows = slice(5 * g, 5 * g + 5)
        weights = mask[rows] / mask[rows].sum(1, keepdim=True)
        mean = (weights * advantages[rows]).sum() / weights.sum()
        var = (weights * (advantages[rows] - mean) ** 2).sum() / weights.sum()
        assert abs(float(mean)) < 1e-5 and abs(float(var) - 1) < 1e-3


def test_extra_keyword_arguments_from_verl_are_accepted():
    rewards, mask, uids = verl_batch(seed=5)
    advantages, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config={},
                                       reward_baselines=torch.zeros(12), epsilon=1e-6)
    assert advantages.shape == rewards.shape


def test_options_reach_the_estimator():
    rewards, mask, uids = verl_batch(seed=6)
    advantages, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None,
                                       options={"use_reward_to_go": True})
    expected = compute_advantages("bot_grpo", rewards, mask.bool(), torch.arange(12) // 4, use_reward_to_go=True)
    torch.testing.assert_close(advantages, expected)


def test_unscored_rows_leave_the_statistics_and_get_zero_advantage():
    rewards, mask, uids = verl_batch(seed=8)
    rewards[1] = torch.where(mask[1].bool(), torch.tensor(math.nan), 0.0)  # the server could not score row 1
    advantages, _ = bot_grpo_advantage(token_level_rewards=rewards, response_mask=mask, index=uids, config=None)
    keep = mask.bool().clone()
    keep[1] = False
    expected = compute_advantages("bot_grpo", torch.nan_to_num(rewards), keep, torch.arange(12) // 4)
    assert torch.all(advantages[1] == 0.0) and advantages.isfinite().all()
    torch.testing.assert_close(advantages, expected)


def test_last_token_rewards_are_not_token_rewards():
    """verl's layout (the outcome on the last token) handed to BoT-GRPO pushes every earlier token
    by -mu/sigma; the same outcome spread over the tokens (what the server's scores carry when
    the local signal is off) gives GRPO's population-std advantage on every token."""
    rewards, mask, uids = verl_batch(seed=9)
    outcome = torch.tensor([1.0, -1.0, 1.0, -1.0] * 3)
    lengths = mask.sum(1).long()
    last = torch.zeros_like(rewards)
    last[torch.arange(12), lengths - 1] = outcome
    spread = outcome[:, None] * mask
    on_last, _ = bot_grpo_advantage(token_level_rewards=last, response_mask=mask, index=uids, config=None)
    on_tokens, _ = bot_grpo_advantage(token_level_rewards=spread, response_mask=mask, index=uids, config=None)
    first = on_tokens[:, 0]
    assert torch.allclose(on_tokens, first[:, None] * mask)           # one value per rollout
    assert torch.allclose(first, outcome / outcome.view(3, 4).std(1, unbiased=False).repeat_interleave(4), atol=1e-4)
    early = mask.bool() & (torch.arange(mask.shape[1])[None] < (lengths - 1)[:, None])
    assert early.any() and not torch.allclose(on_last[early], on_tokens[early])


def test_reference_and_token_score_rows_from_verls_fields():
    from botgrpo.trainer.integrations.verl import reference_of, token_scores_row
    assert reference_of({"ground_truth": "12"}, {}) == {"answer": "12"}
    assert reference_of({"ground_truth": {"spec": {"name": "A"}}}, None) == {"spec": {"name": "A"}}
    assert reference_of({"ground_truth": "1"}, {"reference": {"answer": "2"}}) == {"answer": "2"}
    extra = {"reward_extra_info": {"botgrpo_token_scores": [0.5, 1.0], "botgrpo_unscored": False}}
    assert token_scores_row(extra, 2) == [0.5, 1.0]
    assert all(math.isnan(x) for x in token_scores_row({"reward_extra_info": {**extra["reward_extra_info"],
                                                                             "botgrpo_unscored": True}}, 2))
    with pytest.raises(ValueError, match="2 token scores for a response of 3 tokens"):
        token_scores_row(extra, 3)
    with pytest.raises(ValueError, match="reward_manager.name=botgrpo"):
        token_scores_row({"reward_extra_info": {"acc": 1.0}}, 2)


def _verl_module(name: str):
    if os.environ.get("BOTGRPO_REQUIRE_VERL"):
        return __import__("importlib").import_module(name)  # make test-verl: a missing verl fails here
    return pytest.importorskip(name)


def test_register_puts_the_estimator_in_verls_registry():
    core_algos = _verl_module("verl.trainer.ppo.core_algos")
    fn = register()
    assert core_algos.get_adv_estimator_fn("bot_grpo") is fn
    assert register() is fn  # idempotent: same options, same function object
    rewards, mask, uids = verl_batch(seed=7)
    advantages, _ = core_algos.get_adv_estimator_fn("bot_grpo")(token_level_rewards=rewards, response_mask=mask,
                                                                 index=uids, config=None)
    torch.testing.assert_close(advantages, bot_grpo_advantage(rewards, mask, uids)[0])


def test_options_come_from_verls_algorithm_config_section():
    """``+algorithm.bot_grpo.min_std=0`` on verl's command line reaches the estimator as the
    ``bot_grpo`` section of the config verl hands it; bound options win over it."""
    rewards, mask, uids = verl_batch(seed=8)
    groups = torch.arange(12) // 4
    from_config, _ = bot_grpo_advantage(rewards, mask, uids, config={"adv_estimator": "bot_grpo",
                                                                     "bot_grpo": {"min_std": 0.0}})
    torch.testing.assert_close(from_config, compute_advantages("bot_grpo_paper", rewards, mask.bool(), groups))
    bound, _ = bot_grpo_advantage(rewards, mask, uids, config={"bot_grpo": {"min_std": 0.0}}, options={"min_std": 2.0})
    torch.testing.assert_close(bound, compute_advantages("bot_grpo", rewards, mask.bool(), groups, min_std=2.0))
    with pytest.raises(ValueError, match="takes no option 'min_sd'"):
        bot_grpo_advantage(rewards, mask, uids, config={"bot_grpo": {"min_sd": 0.0}})
    with pytest.raises(ValueError, match="must be a mapping"):
        bot_grpo_advantage(rewards, mask, uids, config={"bot_grpo": 0.5})


def test_the_paper_estimator_is_its_own_name():
    rewards, mask, uids = verl_batch(seed=9)
    paper, _ = bot_grpo_advantage(rewards, mask, uids, estimator="bot_grpo_paper")
    torch.testing.assert_close(paper, compute_advantages("bot_grpo", rewards, mask.bool(), torch.arange(12) // 4,
                                                         min_std=0.0))
