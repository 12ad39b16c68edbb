"""Advantage estimators: hand-computed cases, edge cases and properties."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from botgrpo.trainer.algo.advantages import ESTIMATORS, RECOMMENDED_MIN_STD, compute_advantages, reward_to_go, softmin_to_go
from tests.reference_advantages import NAIVE


def batch(rows, groups, dtype=torch.float32):
    """Pad a list of per-rollout token-reward lists into (rewards, mask, group_ids)."""
    width = max([len(r) for r in rows] + [1])
    rewards = torch.zeros(len(rows), width, dtype=dtype)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, row in enumerate(rows):
        rewards[i, : len(row)] = torch.tensor(row, dtype=dtype)
        mask[i, : len(row)] = True
    return rewards, mask, torch.tensor(groups, dtype=torch.long)


def valid(adv, mask):
    """The completion-token values of each row, flattened in row order."""
    return adv[mask].tolist()


def flat(rows):
    return [x for row in rows for x in row]


# --------------------------------------------------------------------------- hand-computed
def test_bot_grpo_hand_computed():
    # weights: rollout 0's tokens 1/2 each, rollout 1's token 1; sum of weights 2.
    # mu = (0.5*1 + 0.5*0 + 1*1)/2 = 0.75; var = (0.5*0.25^2 + 0.5*0.75^2 + 0.25^2)/2 = 0.1875
    r, m, g = batch([[1.0, 0.0], [1.0]], [0, 0])
    adv = compute_advantages("bot_grpo_paper", r, m, g, eps=0.0)
    sigma = math.sqrt(0.1875)
    assert valid(adv, m) == pytest.approx(flat([[0.25 / sigma, -0.75 / sigma], [0.25 / sigma]]), abs=1e-6)


def test_bot_grpo_reward_to_go_hand_computed():
    r, m, g = batch([[1.0, 2.0, 3.0], [0.0]], [5, 5])
    assert valid(reward_to_go(r, m), m) == [6.0, 5.0, 3.0, 0.0]
    # bag of returns: rollout 0 mean (6+5+3)/3 = 14/3, rollout 1 mean 0 -> mu = 7/3
    adv = compute_advantages("bot_grpo", r, m, g, eps=0.0, use_reward_to_go=True)
    mu = 7 / 3
    var = ((6 - mu) ** 2 / 3 + (5 - mu) ** 2 / 3 + (3 - mu) ** 2 / 3 + mu**2) / 2
    expected = [[(x - mu) / math.sqrt(var) for x in (6, 5, 3)], [-mu / math.sqrt(var)]]
    assert valid(adv, m) == pytest.approx(flat(expected), abs=1e-5)


def test_grpo_hand_computed():
    r, m, g = batch([[1.0], [0.0, 0.0], [0.0], [1.0, 1.0, 1.0]], [0, 0, 0, 0])
    adv = compute_advantages("grpo", r, m, g, eps=0.0)
    a = 0.5 / math.sqrt(1 / 3)  # mean 0.5, unbiased std sqrt(4*0.25/3)
    assert valid(adv, m) == pytest.approx(flat([[a], [-a, -a], [-a], [a, a, a]]), abs=1e-6)


def test_grpo_uses_seq_rewards_when_given():
    r, m, g = batch([[9.0], [9.0]], [0, 0])
    adv = compute_advantages("grpo", r, m, g, seq_rewards=torch.tensor([1.0, 0.0]), eps=0.0)
    a = 0.5 / math.sqrt(0.5)
    assert valid(adv, m) == pytest.approx(flat([[a], [-a]]), abs=1e-6)


def test_dr_grpo_and_rloo_hand_computed():
    r, m, g = batch([[1.0], [0.0], [0.0, 0.0]], [0, 0, 0])
    assert valid(compute_advantages("dr_grpo", r, m, g), m) == pytest.approx(flat([[2 / 3], [-1 / 3], [-1 / 3, -1 / 3]]))
    assert valid(compute_advantages("rloo", r, m, g), m) == pytest.approx(flat([[1.0], [-0.5], [-0.5, -0.5]]))


def test_pure_strict_min_and_softmin_hand_computed():
    r, m, g = batch([[0.5, -1.0, 0.2], [0.0, 1.0]], [0, 0])
    strict = compute_advantages("pure", r, m, g, temperature=0.0)
    assert valid(strict, m) == pytest.approx(flat([[-1.0, -1.0, 0.2], [0.0, 1.0]]))
    soft = softmin_to_go(r, m, temperature=1.0)
    e = math.exp(-1.0)
    assert valid(soft, m)[3:] == pytest.approx([e / (1 + e), 1.0], abs=1e-6)
    with_vr = compute_advantages("pure", r, m, g, seq_rewards=torch.tensor([1.0, 0.0]), temperature=0.0)
    assert valid(with_vr, m) == pytest.approx(flat([[0.0, 0.0, 1.2], [-1.0, 0.0]]))


def test_pure_softmin_tends_to_strict_min_without_overflow():
    torch.manual_seed(0)
    r = torch.rand(8, 32) * 2 - 1
    m = torch.rand(8, 32) > 0.2
    strict = softmin_to_go(r, m, temperature=0.0)
    for tau in (1e-3, 1e-6):
        soft = softmin_to_go(r, m, temperature=tau)
        assert torch.isfinite(soft).all()
        assert torch.allclose(soft, strict, atol=5e-3)


# --------------------------------------------------------------------------- edge cases
@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - {"pure"}))
@pytest.mark.parametrize("seq", [None, 0.1])
def test_all_equal_rewards_give_exact_zero(name, seq):
    r, m, g = batch([[0.1] * 3, [0.1] * 7, [0.1]], [4, 4, 4])
    seq_rewards = None if seq is None else torch.full((3,), seq)
    adv = compute_advantages(name, r, m, g, seq_rewards=seq_rewards)
    assert torch.equal(adv, torch.zeros_like(adv))


def test_pure_all_equal_rewards_keep_the_process_return():
    """PURE has no baseline on process rewards: equal rewards give their own min-form return."""
    r, m, g = batch([[0.1] * 3, [0.1] * 7], [4, 4])
    adv = compute_advantages("pure", r, m, g, seq_rewards=torch.full((2,), 1.0))
    assert torch.allclose(adv[m], torch.full_like(adv[m], 0.1))


@pytest.mark.parametrize("name", ["grpo", "rloo", "dr_grpo", "bot_grpo"])
def test_group_of_one(name):
    r, m, g = batch([[1.0, 1.0]], [0])
    adv = compute_advantages(name, r, m, g)
    assert torch.equal(adv, torch.zeros_like(adv))


def test_bot_grpo_group_of_one_normalises_within_its_own_bag():
    r, m, g = batch([[1.0, 0.0]], [0])
    assert valid(compute_advantages("bot_grpo", r, m, g, eps=0.0), m) == pytest.approx(flat([[1.0, -1.0]]))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_rollouts_without_tokens_are_zero_and_ignored(name):
    r, m, g = batch([[1.0, 0.5], [], [0.0, -1.0, 0.3], []], [0, 0, 0, 1])
    adv = compute_advantages(name, r, m, g)
    assert torch.equal(adv[1], torch.zeros_like(adv[1])) and torch.equal(adv[3], torch.zeros_like(adv[3]))
    keep = torch.tensor([0, 2])
    assert torch.allclose(adv[keep], compute_advantages(name, r[keep], m[keep], g[keep]), atol=1e-6)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("poison", [float("nan"), float("inf"), -float("inf")])
def test_an_empty_row_with_poisoned_padding_leaves_its_group_alone(name, poison):
    """A row with no completion tokens whose padding holds NaN/inf is ignored; its group's
    advantages equal those of the group without it (regression: bot_grpo turned them NaN)."""
    r, m, g = batch([[1.0, 0.5], [], [0.0, -1.0, 0.3]], [0, 0, 0])
    r[1] = poison
    adv = compute_advantages(name, r, m, g)
    keep = torch.tensor([0, 2])
    assert torch.isfinite(adv).all() and torch.equal(adv[1], torch.zeros_like(adv[1]))
    assert torch.allclose(adv[keep], compute_advantages(name, r[keep], m[keep], g[keep]), atol=1e-6)


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "pure", "decoupled"])
def test_undefined_sequence_rewards_are_left_out_of_the_group(name):
    """A NaN sequence reward (a rollout the server could not score) takes no part in its group's
    statistics and, with its row masked out, gets no advantage."""
    r, m, g = batch([[1.0, 0.5], [0.2], [0.0, -1.0, 0.3], [1.0]], [0, 0, 0, 0])
    seq = torch.tensor([1.0, float("nan"), -1.0, 0.5])
    m[1] = False
    adv = compute_advantages(name, r, m, g, seq)
    keep = torch.tensor([0, 2, 3])
    assert torch.isfinite(adv).all() and torch.equal(adv[1], torch.zeros_like(adv[1]))
    assert torch.allclose(adv[keep], compute_advantages(name, r[keep], m[keep], g[keep], seq[keep]), atol=1e-6)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_inputs(name, dtype):
    torch.manual_seed(1)
    r = torch.rand(16, 24) * 2 - 1
    m = torch.rand(16, 24) > 0.25
    g = torch.arange(16) % 4
    low = compute_advantages(name, r.to(dtype), m, g)
    ref = compute_advantages(name, r.to(dtype).float(), m, g)
    assert low.dtype == dtype and torch.isfinite(low).all()
    assert torch.allclose(low.float(), ref, atol=0.05, rtol=0.02)


def test_padding_is_exactly_zero_and_empty_batch():
    r, m, g = batch([[1.0], [0.0, 2.0, 3.0]], [0, 0])
    r[~m] = float("nan")  # whatever lies under the padding must not leak
    for name in ESTIMATORS:
        adv = compute_advantages(name, r, m, g)
        assert torch.isfinite(adv).all() and (adv[~m] == 0).all()
    empty = compute_advantages("bot_grpo", torch.zeros(0, 4), torch.zeros(0, 4, dtype=torch.bool), torch.zeros(0, dtype=torch.long))
    assert empty.shape == (0, 4)


def test_bad_input_is_a_clear_error():
    r, m, g = batch([[1.0]], [0])
    with pytest.raises(ValueError, match="unknown advantage estimator 'nope'.*bot_grpo"):
        compute_advantages("nope", r, m, g)
    with pytest.raises(ValueError, match="mask must be a bool"):
        compute_advantages("grpo", r, m.float(), g)
    with pytest.raises(ValueError, match="group_ids"):
        compute_advantages("grpo", r, m, g.float())
    with pytest.raises(ValueError, match="seq_rewards"):
        compute_advantages("grpo", r, m, g, seq_rewards=torch.zeros(3))


# --------------------------------------------------------------------------- properties
@st.composite
def batches(draw, max_rollouts=12, max_len=9):
    n = draw(st.integers(1, max_rollouts))
    lengths = draw(st.lists(st.integers(0, max_len), min_size=n, max_size=n))
    groups = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    # quantised rewards make ties (and all-equal groups) common; the rest are rounded so that no
    # two rewards differ by less than float32 can resolve (the reference computes in float64)
    reward = st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0]) | st.floats(-2, 2).map(lambda x: round(x, 4))
    rows = [draw(st.lists(reward, min_size=L, max_size=L)) for L in lengths]
    return batch(rows, groups)


ESTIMATOR_OPTIONS = [("bot_grpo", {}), ("bot_grpo_paper", {}), ("bot_grpo_paper", {"use_reward_to_go": True}), ("grpo", {}),
                     ("dr_grpo", {}), ("rloo", {}), ("pure", {"temperature": 0.0}), ("pure", {"temperature": 0.5}),
                     ("prime", {}), ("prime", {"leave_one_out": False}), ("decoupled", {}),
                     ("decoupled", {"local_weight": 1.0})]


@pytest.mark.parametrize("name,options", ESTIMATOR_OPTIONS)
@settings(max_examples=60, deadline=None)
@given(data=batches())
def test_matches_naive_reference(name, options, data):
    r, m, g = data
    got = compute_advantages(name, r, m, g, **options)
    want = NAIVE[name](r.double(), m, g, **options)
    assert torch.allclose(got.double(), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name,options", ESTIMATOR_OPTIONS)
@settings(max_examples=40, deadline=None)
@given(data=batches(), seed=st.integers(0, 2**16))
def test_permutation_of_rollouts(name, options, data, seed):
    r, m, g = data
    perm = torch.randperm(r.shape[0], generator=torch.Generator().manual_seed(seed))
    full = compute_advantages(name, r, m, g, **options)
    assert torch.allclose(full[perm], compute_advantages(name, r[perm], m[perm], g[perm], **options), atol=1e-5)


@pytest.mark.parametrize("name,options", ESTIMATOR_OPTIONS)
@settings(max_examples=40, deadline=None)
@given(data=batches(), extra=st.integers(1, 5))
def test_padding_width_does_not_matter(name, options, data, extra):
    r, m, g = data
    wide_r = torch.cat([r, torch.randn(r.shape[0], extra)], dim=1)
    wide_m = torch.cat([m, torch.zeros(m.shape[0], extra, dtype=torch.bool)], dim=1)
    wide = compute_advantages(name, wide_r, wide_m, g, **options)
    assert torch.allclose(wide[:, : r.shape[1]], compute_advantages(name, r, m, g, **options), atol=1e-5)
    assert (wide[:, r.shape[1]:] == 0).all()


@pytest.mark.parametrize("name,options", ESTIMATOR_OPTIONS)
@settings(max_examples=40, deadline=None)
@given(data=batches())
def test_splitting_groups_into_separate_calls(name, options, data):
    r, m, g = data
    full = compute_advantages(name, r, m, g, **options)
    for gid in g.unique():
        rows = g == gid
        assert torch.allclose(full[rows], compute_advantages(name, r[rows], m[rows], g[rows], **options), atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(data=batches())
def test_bot_grpo_reduces_to_grpo_with_population_std(data):
    r, m, g = data
    seq = torch.randn(r.shape[0])
    shared = torch.where(m, seq[:, None], 0.0)  # every token of a rollout carries its reward
    got = compute_advantages("bot_grpo_paper", shared, m, g, eps=1e-6)
    has = m.any(1)
    want = torch.zeros_like(got)
    for gid in g.unique():
        rows = (g == gid) & has
        if rows.any():
            R = seq[rows].double()
            adv = (R - R.mean()) / (R.std(unbiased=False) + 1e-6)
            want[rows] = torch.where(m[rows], adv[:, None].float(), 0.0)
    assert torch.allclose(got, want, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(data=batches(), k=st.integers(2, 4))
def test_bot_grpo_length_invariance(data, k):
    """Repeating every token of every rollout k times leaves each token's advantage unchanged."""
    r, m, g = data
    adv = compute_advantages("bot_grpo", r, m, g)
    rep = compute_advantages("bot_grpo", r.repeat_interleave(k, dim=1), m.repeat_interleave(k, dim=1), g)
    assert torch.allclose(rep, adv.repeat_interleave(k, dim=1), atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(data=batches())
def test_bot_grpo_weighted_mean_zero_and_variance_one(data):
    r, m, g = data
    adv = compute_advantages("bot_grpo_paper", r, m, g, eps=0.0).double()
    lengths = m.sum(1).double()
    for gid in g.unique():
        rows = (g == gid) & (lengths > 0)
        if not rows.any():
            continue
        a, w = adv[rows], torch.where(m[rows], 1.0 / lengths[rows, None], 0.0).double()
        mean = (w * a).sum() / w.sum()
        var = (w * (a - mean) ** 2).sum() / w.sum()
        assert abs(mean) < 1e-5
        x = r[rows].double()
        reward_var = (w * (x - (w * x).sum() / w.sum()) ** 2).sum() / w.sum()
        if reward_var > 1e-10:
            assert abs(var - 1.0) < 1e-4
        else:
            assert var == 0


def test_bot_grpo_min_std_bounds_the_amplification_of_a_group_whose_outcomes_agree():
    """Every rollout fails (outcome -1) and one token is blamed: the paper's estimator divides the
    local nudge by its own tiny spread; the registry's bot_grpo (min_std 0.5) keeps it a nudge,
    and a mixed group whose spread is above the bound is untouched."""
    fail = [-1.0] * 9 + [-1.5]
    r, m, g = batch([fail, [-1.0] * 10], [0, 0])
    plain = compute_advantages("bot_grpo_paper", r, m, g, eps=0.0)
    assert max(abs(a) for a in valid(plain, m)) > 4.0
    assert torch.equal(plain, compute_advantages("bot_grpo", r, m, g, eps=0.0, min_std=0.0))
    floored = compute_advantages("bot_grpo", r, m, g, eps=0.0)
    mu = (sum(fail) / 10 + (-1.0)) / 2
    assert float(floored[0, 9]) == pytest.approx((-1.5 - mu) / RECOMMENDED_MIN_STD)
    r, m, g = batch([[1.0] * 4, [-1.0] * 3 + [-1.5]], [0, 0])
    assert torch.equal(compute_advantages("bot_grpo", r, m, g), compute_advantages("bot_grpo_paper", r, m, g))


def test_min_std_also_shrinks_a_mixed_group_whose_spread_is_below_it():
    """The bound is not only for all-fail groups: a pass that misses the spec (outcome 0) among
    three fails (-1) has sigma = sqrt(3/16) = 0.433 < 0.5, so the passer gets 0.75 / 0.5 = 1.5
    instead of the paper's 0.75 / 0.433 = 1.73."""
    r, m, g = batch([[0.0] * 3, [-1.0] * 3, [-1.0] * 3, [-1.0] * 3], [0, 0, 0, 0])
    assert float(compute_advantages("bot_grpo_paper", r, m, g, eps=0.0)[0, 0]) == pytest.approx(0.75 / math.sqrt(3 / 16))
    assert float(compute_advantages("bot_grpo", r, m, g, eps=0.0)[0, 0]) == pytest.approx(0.75 / 0.5)


# --------------------------------------------------------------------------- BoT-GRPO's outcome baseline
def _bag_sigma(rows):
    """The length-weighted bag's population std over a group's rows (each row weighs 1)."""
    weights = [(x, 1 / len(row) / len(rows)) for row in rows for x in row]
    mu = sum(x * w for x, w in weights)
    return math.sqrt(sum(w * (x - mu) ** 2 for x, w in weights))


def test_outcome_baseline_hand_computed():
    """A_it = (r_it - mean_i max_t r_it) / sigma_bag: a pass with one blamed token beside a failure."""
    rows = [[0.6, 0.2, 0.6], [-1.0, -1.0]]
    r, m, g = batch(rows, [0, 0])
    adv = compute_advantages("bot_grpo", r, m, g, eps=0.0, baseline="outcome")
    baseline, sigma = (0.6 - 1.0) / 2, _bag_sigma(rows)
    assert valid(adv, m) == pytest.approx([(x - baseline) / sigma for x in flat(rows)], abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, -0.25, -1.0]), min_size=1, max_size=6), min_size=2, max_size=5),
       st.floats(-1, 1))
def test_outcome_baseline_moves_only_blamed_tokens_of_an_all_fail_group(local, outcome):
    """Every rollout shares the outcome: unblamed tokens (l = 0) get 0 (to rounding), blamed ones less
    (the bag's own mean gives the unblamed tokens of such a group a positive advantage instead).
    Each rollout keeps an unblamed token, as a blame window inside a completion does: a rollout
    blamed everywhere reads as a lower outcome (the estimator sees only token rewards)."""
    local = [row + [0.0] for row in local]
    rows = [[outcome + 0.5 * l for l in row] for row in local]
    r, m, g = batch(rows, [0] * len(rows), dtype=torch.float64)
    adv = valid(compute_advantages("bot_grpo", r, m, g, baseline="outcome", min_std=0.5), m)
    for a, l in zip(adv, flat(local)):
        assert (abs(a) < 1e-12) if l == 0.0 else (a < -0.1)  # blamed: at least 0.5 * 0.25 / sigma


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.integers(1, 6)), min_size=1, max_size=6))
def test_outcome_baseline_is_the_bag_when_each_rollout_has_one_reward(rollouts):
    """w_s = 0 (one reward per rollout): the outcome level is the rollout's mean, so nothing changes."""
    r, m, g = batch([[x] * n for x, n in rollouts], [0] * len(rollouts), dtype=torch.float64)
    bag = compute_advantages("bot_grpo", r, m, g, min_std=0.5)
    outcome = compute_advantages("bot_grpo", r, m, g, min_std=0.5, baseline="outcome")
    assert torch.allclose(bag, outcome, atol=1e-9)


def test_outcome_baseline_ignores_what_padding_holds():
    r, m, g = batch([[0.2, -0.2], [0.5], []], [0, 0, 0])
    clean = compute_advantages("bot_grpo", r, m, g, baseline="outcome")
    r[~m] = float("nan")
    r[1, 1] = float("inf")
    dirty = compute_advantages("bot_grpo", r, m, g, baseline="outcome")
    assert torch.equal(clean[m], dirty[m]) and clean[m].isfinite().all()


def test_outcome_baseline_refuses_rewards_to_go_and_unknown_names():
    r, m, g = batch([[0.0, 1.0]], [0])
    with pytest.raises(ValueError, match="rewards-to-go"):
        compute_advantages("bot_grpo", r, m, g, baseline="outcome", use_reward_to_go=True)
    with pytest.raises(ValueError, match="baseline must be"):
        compute_advantages("bot_grpo", r, m, g, baseline="median")
