"""The study's two extra estimators (issue 22): PRIME's group baseline and the decoupled
(PASS-style) normalisation. Hand-computed cases, their properties, and how they are selected."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from botgrpo.services.recipe import DEFAULT_LOCAL_WEIGHT
from botgrpo.trainer.algo.advantages import compute_advantages
from tests.test_advantages import batch, batches, flat, valid


def weighted_mean(adv, mask, rows):
    """The length-weighted mean of a group's advantages (every rollout weighs 1)."""
    a, m = adv[rows].double(), mask[rows]
    w = torch.where(m, 1.0 / m.sum(1, keepdim=True).clamp_min(1).double(), 0.0)
    return float((w * a).sum() / w.sum())


def composed(outcomes, locals_, w):
    """Token rewards r = R + w l, the outcomes and the mask of one group (float64)."""
    rows = [[R + w * l for l in local] for R, local in zip(outcomes, locals_)]
    r, m, g = batch(rows, [0] * len(rows), dtype=torch.float64)
    return r, m, g, torch.tensor(outcomes, dtype=torch.float64)


# --------------------------------------------------------------------------- PRIME, hand-computed
def test_prime_hand_computed():
    # rollout means m = (0.5, 1, -1), mu = 1/6
    r, m, g = batch([[1.0, 0.0], [1.0], [-1.0, -1.0, -1.0]], [0, 0, 0])
    # leave-one-out: b = mean of the others' means = (0, -0.25, 0.75)
    assert valid(compute_advantages("prime", r, m, g), m) == pytest.approx(
        flat([[1.0, 0.0], [1.25], [-1.75] * 3]))
    plain = compute_advantages("prime", r, m, g, leave_one_out=False)
    assert valid(plain, m) == pytest.approx(flat([[5 / 6, -1 / 6], [5 / 6], [-7 / 6] * 3]))


def test_prime_group_of_one():
    r, m, g = batch([[1.0, 0.0]], [0])
    loo = compute_advantages("prime", r, m, g)
    assert torch.equal(loo, torch.zeros_like(loo))  # nobody else to be the baseline
    assert valid(compute_advantages("prime", r, m, g, leave_one_out=False), m) == [0.5, -0.5]


def test_prime_is_bot_grpo_paper_without_the_std():
    r, m, g = batch([[1.0, 0.0, -0.5], [1.0], [0.25, 0.0]], [0, 0, 0])
    paper = compute_advantages("bot_grpo_paper", r, m, g, eps=0.0)
    plain = compute_advantages("prime", r, m, g, leave_one_out=False)
    w = torch.where(m, 1.0 / m.sum(1, keepdim=True), 0.0)
    sigma = math.sqrt(float((w * plain ** 2).sum() / w.sum()))
    assert torch.allclose(paper * sigma, plain, atol=1e-6)


# --------------------------------------------------------------------------- PRIME, properties
@pytest.mark.parametrize("leave_one_out", [True, False])
@settings(max_examples=60, deadline=None)
@given(data=batches())
def test_prime_has_zero_mean_under_the_bag_weights(leave_one_out, data):
    r, m, g = data
    adv = compute_advantages("prime", r, m, g, leave_one_out=leave_one_out)
    for gid in g.unique():
        rows = (g == gid) & m.any(1)
        if rows.any():
            assert abs(weighted_mean(adv, m, rows)) < 1e-5


@pytest.mark.parametrize("leave_one_out", [True, False])
@settings(max_examples=60, deadline=None)
@given(data=batches(), shift=st.sampled_from([-3.0, -0.5, 0.25, 2.0]))
def test_prime_is_invariant_to_a_constant_shift(leave_one_out, data, shift):
    r, m, g = data
    adv = compute_advantages("prime", r, m, g, leave_one_out=leave_one_out)
    moved = compute_advantages("prime", r + shift, m, g, leave_one_out=leave_one_out)
    assert torch.allclose(moved, adv, atol=1e-5)


@pytest.mark.parametrize("leave_one_out,sequence_estimator", [(True, "rloo"), (False, "dr_grpo")])
@settings(max_examples=60, deadline=None)
@given(data=batches())
def test_prime_with_one_reward_per_rollout_is_rloo_or_dr_grpo(leave_one_out, sequence_estimator, data):
    r, m, g = data
    seq = torch.randn(r.shape[0])
    shared = torch.where(m, seq[:, None], 0.0)  # every token of a rollout carries its reward
    got = compute_advantages("prime", shared, m, g, leave_one_out=leave_one_out)
    # the sequence estimators count a rollout without tokens only when it has a reward: give it none
    want = compute_advantages(sequence_estimator, shared, m, g, torch.where(m.any(1), seq, math.nan))
    assert torch.allclose(got, want, atol=1e-5)


def test_prime_leave_one_out_differs_from_verls_form_only_within_a_rollout():
    """verl-recipe's PRIME computes n/(n-1) (r_it - mu_g); ours never reads rollout i in its
    baseline. They agree where a rollout's tokens share one reward, not otherwise."""
    r, m, g = batch([[1.0, 0.0], [1.0], [-1.0, -1.0, -1.0]], [0, 0, 0])
    n, mu = 3, (0.5 + 1.0 - 1.0) / 3
    verl = torch.where(m, n / (n - 1) * (r - mu), 0.0)
    ours = compute_advantages("prime", r, m, g)
    assert torch.allclose(ours[1:], verl[1:]) and not torch.allclose(ours[0], verl[0])


# --------------------------------------------------------------------------- decoupled, hand-computed
def test_decoupled_hand_computed():
    # one pass (R = 1, its second token blamed: l = -1) and one fail (R = -1), w_s = 0.5
    r, m, g, R = composed([1.0, -1.0], [[0.0, -1.0], [0.0]], 0.5)
    adv = compute_advantages("decoupled", r, m, g, R, eps=0.0, local_weight=0.5)
    # outcome: mean 0, unbiased std sqrt(2) -> +-1/sqrt(2)
    # local d = w_s l: rollout means (-0.25, 0), mu = -0.125; sigma^2 = (0.0625 + 0)/2 + 0.125^2 = 0.046875
    a, sigma = 1 / math.sqrt(2), math.sqrt(0.046875)
    expected = [[a + 0.5 * 0.125 / sigma, a + 0.5 * -0.375 / sigma], [-a + 0.5 * 0.125 / sigma]]
    assert valid(adv, m) == pytest.approx(flat(expected), abs=1e-6)


def test_decoupled_without_seq_rewards_reads_the_rollout_mean_as_the_outcome():
    r, m, g = batch([[1.0, 0.0], [1.0]], [0, 0])
    adv = compute_advantages("decoupled", r, m, g, eps=0.0, local_weight=1.0)
    # R = (0.5, 1): outcome +-1/sqrt(2) as GRPO; d = (0.5, -0.5 | 0): bag mu 0, sigma sqrt(0.125)
    a, z = 1 / math.sqrt(2), 0.5 / math.sqrt(0.125)
    assert valid(adv, m) == pytest.approx([-a + z, -a - z, a], abs=1e-6)


def test_decoupled_leaves_an_unscored_rollout_out_of_both_statistics():
    r, m, g, R = composed([1.0, 0.0, -1.0], [[0.0, -1.0], [0.0, 0.0], [-1.0]], 0.5)
    R[1] = math.nan
    adv = compute_advantages("decoupled", r, m, g, R)
    keep = torch.tensor([0, 2])
    assert torch.isfinite(adv).all()
    assert torch.allclose(adv[keep], compute_advantages("decoupled", r[keep], m[keep], g[keep], R[keep]), atol=1e-6)
    assert not torch.allclose(adv[keep], compute_advantages("decoupled", r[keep], m[keep], g[keep]), atol=1e-3)


# --------------------------------------------------------------------------- decoupled, properties
@st.composite
def recipe_groups(draw):
    """Groups of rollouts in the recipe's form: an outcome each and a local term in [-1, 0] per token."""
    n = draw(st.integers(1, 8))
    outcomes = draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0]), min_size=n, max_size=n))
    locals_ = [draw(st.lists(st.sampled_from([0.0, 0.0, -0.5, -1.0]), min_size=1, max_size=7)) for _ in range(n)]
    groups = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    return outcomes, locals_, groups


def recipe_batch(outcomes, locals_, groups, w):
    r, m, _ = batch([[R + w * l for l in local] for R, local in zip(outcomes, locals_)], groups, dtype=torch.float64)
    return r, m, torch.tensor(groups), torch.tensor(outcomes, dtype=torch.float64)


@settings(max_examples=80, deadline=None)
@given(case=recipe_groups(), w=st.sampled_from([0.1, 0.5, 1.0]))
def test_decoupled_without_a_local_term_is_grpo_exactly(case, w):
    outcomes, locals_, groups = case
    r, m, g, R = recipe_batch(outcomes, locals_, groups, w)
    grpo = compute_advantages("grpo", r, m, g, R)
    assert torch.equal(compute_advantages("decoupled", r, m, g, R, local_weight=0.0), grpo)
    r0, m0, g0, R0 = recipe_batch(outcomes, [[0.0] * len(l) for l in locals_], groups, w)  # w_s = 0 on the server
    assert torch.equal(compute_advantages("decoupled", r0, m0, g0, R0), compute_advantages("grpo", r0, m0, g0, R0))


@settings(max_examples=80, deadline=None)
@given(case=recipe_groups(), scale=st.sampled_from([0.25, 0.4, 2.0]), shift=st.sampled_from([-1.0, 0.3, 2.0]))
def test_decoupled_is_invariant_to_an_affine_map_of_both_channels(case, scale, shift):
    outcomes, locals_, groups = case
    r, m, g, R = recipe_batch(outcomes, locals_, groups, 0.5)
    adv = compute_advantages("decoupled", r, m, g, R, eps=0.0)
    mapped = compute_advantages("decoupled", torch.where(m, scale * r + shift, 0.0), m, g, scale * R + shift, eps=0.0)
    assert torch.allclose(mapped, adv, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(case=recipe_groups(), w=st.sampled_from([0.1, 1.0, 4.0]))
def test_the_servers_w_s_is_divided_out_and_local_weight_is_the_weight(case, w):
    outcomes, locals_, groups = case
    adv = compute_advantages("decoupled", *recipe_batch(outcomes, locals_, groups, 0.5), eps=0.0)
    assert torch.allclose(compute_advantages("decoupled", *recipe_batch(outcomes, locals_, groups, w), eps=0.0), adv,
                          atol=1e-9)
    r, m, g, R = recipe_batch(outcomes, locals_, groups, 0.5)
    outcome = compute_advantages("grpo", r, m, g, R, eps=0.0)
    doubled = compute_advantages("decoupled", r, m, g, R, eps=0.0, local_weight=2 * DEFAULT_LOCAL_WEIGHT)
    assert torch.allclose(doubled - outcome, 2 * (adv - outcome), atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(case=recipe_groups())
def test_decoupled_local_part_has_zero_mean_and_unit_spread_in_its_bag(case):
    outcomes, locals_, groups = case
    r, m, g, R = recipe_batch(outcomes, locals_, groups, 0.5)
    local = (compute_advantages("decoupled", r, m, g, R, eps=0.0, local_weight=1.0)
             - compute_advantages("grpo", r, m, g, R, eps=0.0))
    w = torch.where(m, 1.0 / m.sum(1, keepdim=True).double(), 0.0)
    for gid in g.unique():
        rows = g == gid
        mean = float((w[rows] * local[rows]).sum() / w[rows].sum())
        var = float((w[rows] * (local[rows] - mean) ** 2).sum() / w[rows].sum())
        assert abs(mean) < 1e-9 and (abs(var - 1) < 1e-9 or var == 0.0)


def test_decoupled_through_the_wire_equals_the_recipe_for_any_bounds():
    """The trainer's path: the server's token scores (mapped into its bounds), its score (the
    outcome) and reward_map, read by StreamedScores, give the advantages of R and l directly."""
    from botgrpo.services.recipe import WireMap, clip_outcome, to_wire, token_rewards
    from botgrpo.services.schemas import Result
    from botgrpo.trainer.rewards import StreamedScores

    outcomes, locals_, w = [1.0, 0.0, -1.0, -1.0], [[0.0, -1.0, 0.0], [0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0]], 0.5
    r, m, g, R = recipe_batch(outcomes, locals_, [0] * 4, w)
    expected = compute_advantages("decoupled", r, m, g, R)
    for bounds in ((-1.0, 1.0), (-5.0, 3.0)):
        scores = StreamedScores(m, group_size=4)
        for i, (outcome, local) in enumerate(zip(outcomes, locals_)):
            wire = WireMap.of(w, bounds)
            scores.deliver(i, Result.scored({"id": str(i)}, i, score=clip_outcome(outcome, bounds), passed=outcome > 0,
                                            token_scores=to_wire(token_rewards(outcome, np.array(local), w), wire, bounds),
                                            reward_map=wire, details={}))
        got = scores.result(timeout=5)
        adv = compute_advantages("decoupled", got.token_rewards, m, g, got.seq_rewards)
        assert torch.allclose(adv.double(), expected, atol=1e-5), bounds


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_decoupled_takes_a_rounding_sized_local_spread_as_none(dtype):
    """Both rollouts carry l = -0.5 on their one token: no local spread, but R + w_s l - R is
    rounded differently for R = -1 and R = 0. Without the tolerance the division blows that up."""
    r, m, g, R = composed([-1.0, 0.0], [[-0.5], [-0.5]], 0.1)
    r, R = r.to(dtype), R.to(dtype)
    assert r[0, 0] - R[0] != r[1, 0] - R[1]  # the rounding this is about
    grpo = compute_advantages("grpo", r, m, g, R)
    assert torch.equal(compute_advantages("decoupled", r, m, g, R), grpo)
    exact = compute_advantages("grpo", r, m, g, R, eps=0.0)
    assert torch.equal(compute_advantages("decoupled", r, m, g, R, eps=0.0), exact)
    blown_up = compute_advantages("decoupled", r, m, g, R, eps=0.0, local_tol=0.0) - exact
    assert blown_up.abs().max() > 0.4  # local_weight 0.5 times a unit-sized z made of rounding


# --------------------------------------------------------------------------- selection
@pytest.mark.parametrize("name", ["prime", "decoupled"])
def test_presets_differ_from_bot_grpo_in_the_estimator_alone(name):
    from botgrpo.trainer.algo.settings import resolve
    from botgrpo.trainer.algo.presets import preset
    assert preset(name) == preset("bot_grpo").model_copy(update={"estimator": name})
    assert resolve(preset("bot_grpo"), {"estimator": name}) == preset(name)


def test_the_chain_study_has_both_rows():
    from benchmarks import chain_study
    rows = {label: method for label, method, *_ in chain_study.ROWS}
    assert rows["prime"] == "prime" and rows["decoupled"] == "decoupled"
    runs = chain_study.plan(["prime", "decoupled"], (0, 1))
    assert [(r.method, r.seed) for r in runs] == [("prime", 0), ("prime", 1), ("decoupled", 0), ("decoupled", 1)]
