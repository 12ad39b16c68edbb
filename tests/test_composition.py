"""The reward recipe: r = R + w_s * l, mapped affinely into the bounds (services/recipe.py), and
the span mapper that applies it to a verdict (reward_server/spans.compose)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from botgrpo.reward_server.scorers.base import ScoreResult, SpanScore
from botgrpo.reward_server.spans import compose
from botgrpo.services.recipe import WireMap, clip_outcome, from_wire, to_wire
from botgrpo.services.recipe import token_rewards as recipe_rewards
from botgrpo.trainer.algo.advantages import compute_advantages


def token_rewards(outcome, local, w, bounds=(-1.0, 1.0)) -> np.ndarray:
    """The recipe's token rewards as the wire carries them (the map applied)."""
    return np.array(to_wire(recipe_rewards(outcome, local, w), WireMap.of(w, bounds), bounds))


def test_hand_computed():
    # failing rollout, one blamed token, w_s = 0.5: r = [-1, -1.5, -1] mapped from [-1.5, 1] onto [-1, 1]
    assert token_rewards(-1.0, np.array([0.0, -1.0, 0.0]), 0.5).tolist() == pytest.approx([-0.6, -1.0, -0.6])
    assert token_rewards(1.0, np.array([0.0]), 0.5).tolist() == pytest.approx([1.0])
    # other bounds: the same points, affinely moved
    assert token_rewards(-1.0, np.array([0.0, -1.0]), 0.5, bounds=(0.0, 1.0)).tolist() == pytest.approx([0.2, 0.0])


def test_out_of_range_inputs_are_clipped_and_nan_is_the_worst():
    # R = 3 -> 1; l: 0.7 -> 0, NaN -> -1, -5 -> -1; r = [1, 0, 0] from [-2, 1] onto [-1, 1]
    assert token_rewards(3.0, np.array([0.7, np.nan, -5.0]), 1.0).tolist() == pytest.approx([1.0, 1 / 3, 1 / 3])
    assert token_rewards(float("nan"), np.array([0.0]), 0.0).tolist() == [-1.0]
    assert clip_outcome(float("inf"), (-1, 1)) == -1 and clip_outcome(0.3, (-1, 1)) == 0.3


def test_compose_maps_characters_onto_tokens():
    completion = "abcdefgh"
    result = ScoreResult(score=-1.0, passed=False, local=[SpanScore(2, 4, -1.0)])
    got = compose(result, len(completion), [(0, 2), (1, 3), (4, 8), (8, 8)], local_weight=0.5)
    assert got == pytest.approx([-0.6, -1.0, -0.6, -0.6])


def test_an_empty_completion_takes_the_local_default():
    nothing = ScoreResult(score=-1.0, passed=False, local_default=-1.0)
    assert compose(nothing, 0, [(0, 0)], 0.5) == [-1.0]
    assert compose(nothing, 0, [(0, 0)], 0.0) == [-1.0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=8), st.integers(1, 12), st.data())
def test_zero_local_weight_reproduces_population_std_grpo(outcomes, length, data):
    """With w_s = 0 every token carries R_i, and BoT-GRPO on the composed tokens equals GRPO
    with the population std on R, whatever the local signal says."""
    rows = []
    for R in outcomes:
        blamed = data.draw(st.lists(st.integers(0, length - 1), max_size=length))
        result = ScoreResult(score=R, passed=None, local=[SpanScore(t, t + 1, -1.0) for t in blamed])
        rows.append(compose(result, length, [(t, t + 1) for t in range(length)], local_weight=0.0))
    rewards = torch.tensor(rows, dtype=torch.float64)
    assert torch.equal(rewards, torch.tensor(outcomes, dtype=torch.float64)[:, None].expand(-1, length))
    mask = torch.ones_like(rewards, dtype=torch.bool)
    groups = torch.zeros(len(outcomes), dtype=torch.long)
    bot = compute_advantages("bot_grpo_paper", rewards, mask, groups)
    R = torch.tensor(outcomes, dtype=torch.float64)
    std = (R - R.mean()).square().mean().sqrt()
    expected = torch.where(std > 0, (R - R.mean()) / (std + 1e-6), torch.zeros_like(R))
    assert torch.allclose(bot, expected[:, None].expand(-1, length), atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-1.0, 0.0, 1.0]), st.lists(st.sampled_from([0.0, -1.0]), min_size=1, max_size=6)),
                min_size=2, max_size=6), st.sampled_from([0.1, 0.5, 1.0]))
def test_bounds_are_a_wire_convention_for_bot_grpo(rollouts, w):
    """BoT-GRPO's advantages do not depend on the bounds the tokens were mapped into."""
    width = max(len(l) for _, l in rollouts)
    advantages = []
    for bounds in ((-1.0, 1.0), (0.0, 1.0), (-5.0, 3.0)):
        rewards = torch.zeros(len(rollouts), width, dtype=torch.float64)
        mask = torch.zeros(len(rollouts), width, dtype=torch.bool)
        for i, (R, local) in enumerate(rollouts):
            rewards[i, :len(local)] = torch.from_numpy(token_rewards(R, np.array(local), w, bounds))
            mask[i, :len(local)] = True
        advantages.append(compute_advantages("bot_grpo_paper", rewards, mask,
                                             torch.zeros(len(rollouts), dtype=torch.long), eps=0.0))
    assert torch.allclose(advantages[0], advantages[1], atol=1e-9) and torch.allclose(advantages[0], advantages[2], atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.sampled_from([0.0, -0.5, -1.0]), min_size=1, max_size=10),
       st.lists(st.sampled_from([0.0, -0.5, -1.0]), min_size=1, max_size=10))
def test_the_outcome_dominates(w, passing_local, failing_local):
    """For w_s <= 1 every token of a passing rollout scores at least every token of a failing one,
    and within a rollout blame only ever lowers a token."""
    passing = token_rewards(1.0, np.array(passing_local), w)
    failing = token_rewards(-1.0, np.array(failing_local), w)
    assert passing.min() >= failing.max() - 1e-12
    assert np.all(np.diff(token_rewards(-1.0, np.array([0.0, -0.5, -1.0]), w)) <= 0)
    assert failing.min() >= -1.0 and passing.max() <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-1.0, 0.0, 1.0]), st.lists(st.sampled_from([0.0, -1.0]), min_size=1, max_size=6)),
                min_size=2, max_size=6), st.sampled_from([0.1, 0.5, 1.0]))
def test_min_std_is_in_reward_units_whatever_the_wire_map(rollouts, w):
    """bot_grpo's floor on the spread applies to rewards in the recipe's units: the trainer divides
    each result's reward_map out (services.recipe.from_wire), so the bounded estimator's
    advantages are the same for every bound and equal those computed on r = R + w_s l directly."""
    width = max(len(l) for _, l in rollouts)
    mask = torch.zeros(len(rollouts), width, dtype=torch.bool)
    direct = torch.zeros(len(rollouts), width, dtype=torch.float64)
    for i, (R, local) in enumerate(rollouts):
        mask[i, :len(local)] = True
        direct[i, :len(local)] = torch.tensor([R + w * l for l in local], dtype=torch.float64)
    groups = torch.zeros(len(rollouts), dtype=torch.long)
    expected = compute_advantages("bot_grpo", direct, mask, groups)
    for bounds in ((-1.0, 1.0), (0.0, 1.0), (-5.0, 3.0)):
        units = torch.zeros_like(direct)
        for i, (R, local) in enumerate(rollouts):
            scores = token_rewards(R, np.array(local), w, bounds).tolist()
            units[i, :len(local)] = torch.tensor(from_wire(scores, WireMap.of(w, bounds)), dtype=torch.float64)
        assert torch.allclose(compute_advantages("bot_grpo", units, mask, groups), expected, atol=1e-6)
