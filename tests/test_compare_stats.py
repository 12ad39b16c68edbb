"""The study statistics (botgrpo.compare.stats, .power, .endpoints) on hand-computed cases."""
import itertools
import math
import random
from statistics import NormalDist

import numpy as np
import pytest

from botgrpo.compare import power as pw
from botgrpo.compare import stats as s


def curve(*points):
    return [{"step": step, "pass_rate": p, "spec_rate": None} for step, p in points]


# --------------------------------------------------------------------------- endpoints of one run
def test_steps_to_threshold_and_censoring():
    evals = curve((0, 0.3), (5, 0.6), (10, 0.85), (15, 0.7))
    assert s.steps_to_threshold(evals, 0.8) == 10
    assert s.steps_to_threshold(evals, 0.9) is None
    assert s.censored_steps(evals, 0.9, budget=80, every=5) == 85.0


def test_interpolated_steps_read_the_crossing_off_the_line_between_evaluations():
    evals = curve((0, 0.3), (5, 0.5), (10, 0.7), (15, 0.9))
    # 0.6 lies between 0.5 (step 5) and 0.7 (step 10): 5 + (0.6 - 0.5) / (0.7 - 0.5) * 5 = 7.5
    assert s.interpolated_steps(evals, 0.6) == pytest.approx(7.5)
    assert s.interpolated_steps(evals, 0.7) == pytest.approx(10.0)      # exactly at an evaluation
    assert s.interpolated_steps(evals, 0.75) == pytest.approx(11.25)    # 10 + 0.05 / 0.2 * 5
    assert s.interpolated_steps(evals, 0.3) == 0.0                      # already there at the start
    assert s.interpolated_steps(evals, 0.95) is None                    # never: the caller censors
    # the first crossing counts, even when the curve falls back under the threshold later
    assert s.interpolated_steps(curve((0, 0.2), (5, 0.8), (10, 0.1), (15, 0.9)), 0.5) == pytest.approx(2.5)
    # two runs that cross between the same evaluations tie on the evaluated step, not here:
    # 5 + 0.01 / 0.10 * 5 = 5.5 against 5 + 0.09 / 0.10 * 5 = 9.5
    a, b = curve((0, 0.3), (5, 0.54), (10, 0.64)), curve((0, 0.3), (5, 0.46), (10, 0.56))
    assert s.steps_to_threshold(a, 0.55) == s.steps_to_threshold(b, 0.55) == 10
    assert s.interpolated_steps(a, 0.55) == pytest.approx(5.5) and s.interpolated_steps(b, 0.55) == pytest.approx(9.5)


def test_area_under_curve_is_the_trapezoid_mean():
    # (0.2 + 0.4) / 2 * 5 + (0.4 + 1.0) / 2 * 5 = 1.5 + 3.5 = 5.0 over 10 steps
    assert s.area_under_curve(curve((0, 0.2), (5, 0.4), (10, 1.0))) == pytest.approx(0.5)
    # uneven grid: (0.0 + 0.5) / 2 * 2 + (0.5 + 0.5) / 2 * 8 = 0.5 + 4 = 4.5 over 10
    assert s.area_under_curve(curve((0, 0.0), (2, 0.5), (10, 0.5))) == pytest.approx(0.45)


def test_a_collapse_is_a_fall_below_the_start_by_more_than_the_drop():
    assert s.collapsed({"evals": curve((0, 0.5), (5, 0.35), (10, 0.9))}, drop=0.1)        # fell 0.15, recovered
    assert not s.collapsed({"evals": curve((0, 0.5), (5, 0.45), (10, 0.3))}, drop=0.25)   # never 0.25 below


# --------------------------------------------------------------------------- intervals
def test_bootstrap_interval_brackets_the_mean_and_is_deterministic():
    values = [0.2, 0.4, 0.5, 0.7, 0.9]
    est, low, high = s.bootstrap_ci(values)
    assert est == pytest.approx(0.54) and low < est < high
    assert s.bootstrap_ci(values) == (est, low, high)
    assert math.isnan(s.bootstrap_ci([0.3])[1])
    assert s.bootstrap_ci([0.5] * 5) == (0.5, 0.5, 0.5)


def test_ratio_interval():
    est, low, high = s.ratio_ci([40, 45, 50], [20, 25, 30])
    assert est == pytest.approx(45 / 25) and low < est < high
    assert low > 1.0  # clearly separated samples


def test_the_paired_bootstrap_keeps_each_seeds_pair_and_the_unpaired_one_does_not():
    """b takes exactly twice a's steps on every seed, while seeds differ eightfold: resampling
    seeds keeps every pair, so every draw's ratio of means is 2 and the interval is [2, 2]; the
    unpaired interval mixes one seed's a with another's b and spreads wide."""
    a, b = [10.0, 20.0, 40.0, 80.0], [20.0, 40.0, 80.0, 160.0]
    ratio = lambda xs, ys: (sum(ys) / len(ys)) / (sum(xs) / len(xs))
    assert s.paired_bootstrap_ci(a, b, ratio) == pytest.approx((2.0, 2.0, 2.0))
    est, low, high = s.ratio_ci(b, a)
    assert est == pytest.approx(2.0) and low < 1.2 and high > 3.5
    # the mean difference: paired, exactly bootstrap_ci of the per-seed differences (same draws)
    d = [y - x for x, y in zip(a, b)]
    assert s.paired_bootstrap_ci(b, a, s.mean_difference, seed=3) == pytest.approx(s.bootstrap_ci(d, seed=3))
    with pytest.raises(ValueError, match="differ in length"):
        s.paired_bootstrap_ci([1.0], [1.0, 2.0], s.mean_difference)


# --------------------------------------------------------------------------- the exact test
@pytest.mark.parametrize("d, hits", [
    ([2, 1, 1], 2),              # n=3: sums +-4, +-2, +-2, +-0: |s| >= 4 twice
    ([1, -1], 4),                # observed sum 0: every assignment
    ([1, 2, 3, 4], 2),           # n=4, all one sign: only the all-plus and all-minus
    ([1, 1, 1, -1], 10),         # n=4: sum 2k - 4 for k plus signs, |.| >= 2 for k in {0,1,3,4}: 1+4+4+1
    ([3, 1, 2, 5, 4], 2),        # n=5, all positive: 2/32, the smallest p with 5 seeds
    ([1, 2, 3, 4, -5], 20),      # n=5: sum 15 - 2S, S the negated subset's sum; |.| >= 5 for S <= 5 (10 subsets) or S >= 10 (10)
    ([1, 1, 1, 1, 1, 1], 2),     # n=6: 2/64
    ([1, 1, 1, 1, 1, -1], 14),   # n=6: |2k - 6| >= 4 for k in {0, 1, 5, 6}: 1+6+6+1
    ([0, 1, 2, 3, 4, 5], 4),     # a zero difference: its sign is free, so every count doubles (4/64, not 2/64)
])
def test_sign_flip_p_is_exact_on_hand_counted_cases(d, hits):
    assert s.sign_flip_p(d) == pytest.approx(hits / 2 ** len(d))


def brute_force(d):
    """The definition, straight: every assignment of signs, in pure Python."""
    observed = abs(sum(d))
    return sum(abs(sum(sign * x for sign, x in zip(signs, d))) >= observed - 1e-9
               for signs in itertools.product((1, -1), repeat=len(d))) / 2 ** len(d)


def test_sign_flip_p_matches_the_definition_and_meeting_in_the_middle_matches_enumeration():
    rng = random.Random(0)
    for n in (7, 10, 12):
        d = [rng.gauss(0.2, 1) for _ in range(n)]
        assert s.sign_flip_p(d) == pytest.approx(brute_force(d))
    for d in ([rng.gauss(0.3, 1) for _ in range(16)],      # continuous: no ties
              [rng.choice((-10, -5, 5, 10, 15)) for _ in range(16)],  # evaluations every 5 steps: many ties
              [0.0] * 3 + [rng.uniform(-1, 2) for _ in range(13)]):
        bound = abs(sum(d)) - s.TIE_TOLERANCE * sum(abs(x) for x in d)
        assert s._count_meet_in_the_middle(d, bound) == s._count_enumerated(d, bound)
    # above ENUMERATE_MAX the test meets in the middle: 24 equal differences have p = 2 / 2^24 exactly
    assert s.sign_flip_p([0.7] * 24) == 2 / 2 ** 24
    # 30 seeds, 6 of them tied at zero difference
    assert s.sign_flip_p([1.0] * 24 + [0.0] * 6) == 2 * 2 ** 6 / 2 ** 30
    with pytest.raises(ValueError, match="up to 44 seeds"):
        s.sign_flip_p([1.0] * 45)


def test_sign_flip_p_handles_degenerate_inputs():
    assert s.sign_flip_p([0.0, 0.0, 0.0]) == 1.0
    assert math.isnan(s.sign_flip_p([]))
    assert s.sign_flip_p([0.1] * 5) == pytest.approx(2 / 32)  # float sums that are equal count as equal


def test_holm_adjusts_step_down_and_stays_monotone():
    adjusted = s.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": float("nan")})
    # sorted 0.01, 0.03, 0.04 -> 3 * 0.01, 2 * 0.03, max(0.06, 1 * 0.04)
    assert adjusted["a"] == pytest.approx(0.03) and adjusted["c"] == pytest.approx(0.06)
    assert adjusted["b"] == pytest.approx(0.06) and math.isnan(adjusted["d"])
    assert s.holm({"only": 0.012}) == {"only": 0.012}            # one tested comparison: nothing to correct
    # monotone: a later p smaller after scaling is raised to the earlier adjusted one; capped at 1
    assert s.holm({"x": 0.02, "y": 0.021, "z": 0.9}) == pytest.approx({"x": 0.06, "y": 0.06, "z": 0.9})
    assert s.holm({"x": 0.6, "y": 0.7}) == pytest.approx({"x": 1.0, "y": 1.0})


# --------------------------------------------------------------------------- power
def test_power_is_zero_where_the_exact_test_cannot_reject():
    """With 5 seeds the smallest p is 2/32 = 0.0625 > 0.05: no effect is ever detected."""
    assert pw.power(5.0, 1.0, 5, 0.05) == 0.0
    assert pw.detectable_effect(1.0, 5, 0.05) == math.inf
    assert pw.smallest_p(6) == pytest.approx(0.03125)


def test_power_at_six_seeds_matches_the_closed_form():
    """At 6 seeds and alpha 0.05 the exact test rejects only when all six differences share a sign
    (p = 2/64; any other pattern has p >= 4/64), so power = Phi(delta/sd)^6 + Phi(-delta/sd)^6."""
    for delta in (0.5, 1.0, 2.0):
        phi = NormalDist().cdf(delta)
        exact = phi ** 6 + (1 - phi) ** 6
        estimate = pw.power(delta, 1.0, 6, 0.05, draws=20_000)
        assert estimate == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-3)


def test_the_normal_approximation_agrees_with_the_exact_decisions_where_it_takes_over():
    """Above EXACT_MAX seeds power uses the normal approximation of the sign-flip statistic: on
    the same simulated studies it rejects almost as often as the exact test (a little less)."""
    delta = math.log(1.2)
    for n in (pw.EXACT_MAX, pw.EXACT_MAX + 2):
        exact = pw.power(delta, 0.24, n, 0.05, draws=2000, exact=True)
        normal = pw.power(delta, 0.24, n, 0.05, draws=2000, exact=False)
        assert abs(exact - normal) < 0.03 and normal <= exact + 0.005
    d = np.array([[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    assert pw.rejects_exact(d, 0.05)[0] and not pw.rejects_exact(d[:, :5], 0.05)[0]


def test_the_detectable_effect_and_the_seeds_needed_invert_the_power_curve():
    sd, n, alpha = 0.3, 20, 0.05
    mde = pw.detectable_effect(sd, n, alpha)
    assert pw.power(mde, sd, n, alpha) >= 0.8 > pw.power(mde * 0.98, sd, n, alpha)
    # the normal-theory value (z_0.975 + z_0.8) * sd / sqrt(n) = 0.188; a t-like test needs a little more
    assert 0.18 < mde < 0.22
    needed = pw.seeds_needed(math.log(1.2), 0.24, alpha)
    assert pw.power(math.log(1.2), 0.24, needed, alpha) >= 0.8 > pw.power(math.log(1.2), 0.24, needed - 1, alpha)
    assert pw.detectable_effect(0.0, 10, alpha) == 0.0 and pw.detectable_effect(0.0, 4, alpha) == math.inf


def test_the_estimate_from_pilots_uses_their_sd_and_states_the_study_power():
    e = pw.estimate("a", "b", {100: 0.1, 101: 0.3, 102: 0.2}, seeds=30, alpha=0.05, target=math.log(1.2))
    assert e.sd == pytest.approx(0.1) and e.pilot_seeds == [100, 101, 102]
    assert e.power_at_target > 0.95 and e.detectable < math.log(1.2) and e.seeds_for_target <= 10
    with pytest.raises(ValueError, match="at least 2 pilot seeds"):
        pw.estimate("a", "b", {100: 0.1}, seeds=30, alpha=0.05, target=0.1)
