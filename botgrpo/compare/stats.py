"""The statistics of a study: pure functions over held-out curves and per-seed values.

A curve is a list of evaluations ``{"step": int, "pass_rate": float, ...}`` in step order, the
first at step 0 (what ``botgrpo train`` writes to ``evals.jsonl``). Everything here is
deterministic: every bootstrap draws from a seeded ``random.Random``.

Endpoints of one run
    :func:`steps_to_threshold` (first evaluated step at or above a threshold),
    :func:`censored_steps` (the same, a run that never gets there counted past the budget),
    :func:`interpolated_steps` (the crossing interpolated between evaluations: continuous, so
    two runs rarely tie), :func:`area_under_curve`, :func:`collapsed`.
Paired comparisons over seeds
    :func:`sign_flip_p` (exact two-sided sign-flip test, exact up to :data:`MAX_EXACT_SEEDS`),
    :func:`holm`, :func:`bootstrap_ci`, :func:`paired_bootstrap_ci` and the unpaired
    :func:`ratio_ci`, and :func:`paired_verdict` (the SmolLM2 study's every-seed-agrees rule).
"""
from __future__ import annotations

import math
import random
import statistics
from typing import Any, Callable, Optional, Sequence

import numpy as np

Record = dict[str, Any]
RESAMPLES = 10_000
COLLAPSE_DROP = 0.1   # an evaluation this far below the start is a collapse (set before the next study's runs)
ENUMERATE_MAX = 20    # sign-flip: up to 2^20 sums enumerated at once; above, meet in the middle
MAX_EXACT_SEEDS = 44  # meet in the middle holds 2 x 2^22 sums (about 70 MB) at 44 seeds
TIE_TOLERANCE = 1e-9  # relative: sums this close to the observed one count as equally extreme


# --------------------------------------------------------------------------- endpoints of one run
def steps_to_threshold(evals: Sequence[Record], threshold: float) -> Optional[int]:
    """The first evaluated step whose held-out pass rate reaches ``threshold`` (None: never)."""
    return next((e["step"] for e in evals if e["pass_rate"] >= threshold), None)


def censored_steps(evals: Sequence[Record], threshold: float, budget: int, every: int) -> float:
    """:func:`steps_to_threshold`, with a run that never gets there counted at ``budget + every``
    (a lower bound on its true value: it makes the ratio of a never-reaching method conservative)."""
    reached = steps_to_threshold(evals, threshold)
    return float(budget + every if reached is None else reached)


def interpolated_steps(evals: Sequence[Record], threshold: float, key: str = "pass_rate") -> Optional[float]:
    """The step at which the curve first reaches ``threshold``, read off the straight line between
    the evaluation before the crossing and the first one at or above it (None: never)::

        i = min{ j : p_j >= threshold },   T = s_{i-1} + (threshold - p_{i-1}) / (p_i - p_{i-1}) * (s_i - s_{i-1})

    ``T = s_0`` when the first evaluation is already there. Evaluations every k steps put ties
    into :func:`steps_to_threshold` (two runs crossing between the same evaluations tie); this
    one is continuous, so ties are rare. The first crossing counts, even if the curve falls back.
    """
    previous = None
    for e in evals:
        step, rate = e["step"], e[key]
        if rate >= threshold:
            if previous is None:
                return float(step)
            s0, p0 = previous  # p0 < threshold <= rate, so the slope is positive
            return s0 + (threshold - p0) / (rate - p0) * (step - s0)
        previous = (step, rate)
    return None


def area_under_curve(evals: Sequence[Record], key: str = "pass_rate") -> float:
    """Mean of the curve over the steps it spans (trapezoids), in [0, 1]: ``int_0^T p(s) ds / T``."""
    points = [(e["step"], e[key]) for e in evals if e.get(key) is not None]
    if len(points) < 2:
        return points[0][1] if points else float("nan")
    area = sum((s1 - s0) * (p0 + p1) / 2 for (s0, p0), (s1, p1) in zip(points, points[1:]))
    return area / (points[-1][0] - points[0][0])


def collapsed(record: Record, cap: Optional[int] = None, drop: float = COLLAPSE_DROP) -> bool:
    """A run collapsed if *any* evaluation is more than ``drop`` below its step-0 pass rate, or
    its per-step mean completion length ever reached the cap (>= 95% of ``cap`` tokens: nearly
    every completion cut off). A run that falls to 0 mid-way and recovers counts: its final
    rate alone would hide it."""
    evals = record["evals"]
    fell = any(e["pass_rate"] < evals[0]["pass_rate"] - drop for e in evals[1:])
    lengths = record.get("lengths") or []
    return fell or (cap is not None and bool(lengths) and max(lengths) >= 0.95 * cap)


# --------------------------------------------------------------------------- intervals
def _percentiles(draws: list[float], level: float) -> tuple[float, float]:
    draws = sorted(draws)
    tail, last = (1 - level) / 2, len(draws) - 1
    return draws[int(tail * len(draws))], draws[min(last, int((1 - tail) * len(draws)))]


def bootstrap_ci(values: Sequence[float], statistic: Callable[[Sequence[float]], float] = statistics.mean,
                 level: float = 0.95, seed: int = 0, resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """``(estimate, low, high)``: the statistic and its percentile bootstrap interval over seeds
    (``resamples`` draws of n values with replacement; the interval is the draws' ``(1 - level) / 2``
    and ``(1 + level) / 2`` quantiles)."""
    values = list(values)
    estimate = statistic(values)
    if len(values) < 2:
        return estimate, float("nan"), float("nan")
    rng = random.Random(seed)
    return (estimate, *_percentiles([statistic(rng.choices(values, k=len(values))) for _ in range(resamples)], level))


def paired_bootstrap_ci(a: Sequence[float], b: Sequence[float],
                        statistic: Callable[[Sequence[float], Sequence[float]], float],
                        level: float = 0.95, seed: int = 0, resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of ``statistic(a, b)`` where ``a[i]`` and ``b[i]`` come from the same
    seed: each draw resamples n *seeds* with replacement and keeps each seed's pair together,
    ``statistic([a[j] for j in J], [b[j] for j in J])``. Two arms run on one seed share its prompt
    order, sampling and evaluation set, so their values move together; resampling the arms
    independently (:func:`ratio_ci`) throws that away and widens the interval. With
    ``statistic = mean(a) - mean(b)`` this is :func:`bootstrap_ci` of the per-seed differences
    (same draws, same seed)."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    estimate = statistic(a, b)
    if len(a) < 2:
        return estimate, float("nan"), float("nan")
    rng, seeds = random.Random(seed), range(len(a))
    draws = []
    for _ in range(resamples):
        chosen = rng.choices(seeds, k=len(a))
        draws.append(statistic([a[j] for j in chosen], [b[j] for j in chosen]))
    return (estimate, *_percentiles(draws, level))


def ratio_ci(numerator: Sequence[float], denominator: Sequence[float], level: float = 0.95,
             seed: int = 0) -> tuple[float, float, float]:
    """``mean(numerator) / mean(denominator)`` with a bootstrap interval, both samples resampled
    *independently* (unpaired: right for two samples with no seed in common; for arms run on the
    same seeds :func:`paired_bootstrap_ci` is the right interval)."""
    num, den = list(numerator), list(denominator)
    estimate = statistics.mean(num) / statistics.mean(den)
    if len(num) < 2 or len(den) < 2:
        return estimate, float("nan"), float("nan")
    rng = random.Random(seed)
    draws = [statistics.mean(rng.choices(num, k=len(num))) / statistics.mean(rng.choices(den, k=len(den)))
             for _ in range(RESAMPLES)]
    return (estimate, *_percentiles(draws, level))


# --------------------------------------------------------------------------- the exact sign-flip test
def _signed_sums(values: Sequence[float]) -> np.ndarray:
    """All ``2^n`` sums ``sum_i s_i x_i`` with ``s_i = +-1`` (built by doubling: O(2^n))."""
    sums = np.zeros(1)
    for x in values:
        sums = np.concatenate((sums + x, sums - x))
    return sums


def _count_enumerated(d: Sequence[float], bound: float) -> int:
    """How many of the ``2^n`` sign assignments have ``|sum_i s_i d_i| >= bound``, by listing them."""
    return int(np.count_nonzero(np.abs(_signed_sums(d)) >= bound))


def _count_meet_in_the_middle(d: Sequence[float], bound: float) -> int:
    """:func:`_count_enumerated` without listing all ``2^n`` sums: split ``d`` into halves with
    signed sums ``L`` (2^{n/2}) and ``R`` (sorted); ``|l + r| >= bound`` (bound > 0) holds exactly
    when ``r >= bound - l`` or ``r <= -bound - l``, two disjoint ranges counted for every ``l`` by
    binary search: ``O(2^{n/2} log 2^{n/2})`` time and memory, the same count."""
    half = len(d) // 2
    left, right = _signed_sums(d[:half]), np.sort(_signed_sums(d[half:]))
    above = len(right) - np.searchsorted(right, bound - left, side="left")
    below = np.searchsorted(right, -bound - left, side="right")
    return int(above.sum() + below.sum())


def sign_flip_p(differences: Sequence[float]) -> float:
    """Exact two-sided paired sign-flip test of ``mean(d) = 0`` on per-seed differences ``d``.

    Under the null each seed's difference is as likely to have either sign, so every one of the
    ``2^n`` assignments ``s in {-1, +1}^n`` is equally likely, and::

        p = #{ s : |sum_i s_i d_i| >= |sum_i d_i| } / 2^n

    (sums within :data:`TIE_TOLERANCE` of ``sum_i |d_i|``, relative, count as equal). Exact at
    every n up to :data:`MAX_EXACT_SEEDS`: enumerated up to :data:`ENUMERATE_MAX` seeds, counted
    by meeting in the middle above (the same count, no sampling). The smallest possible p is
    ``2 / 2^n`` (0.0625 at 5 seeds); a zero difference doubles every count (its sign is free),
    and equal magnitudes (ties from evaluations every k steps) make many sums equal, so the
    attainable p-values are fewer and coarser. All differences 0: p = 1.
    """
    d = [float(x) for x in differences]
    if not d:
        return float("nan")
    if len(d) > MAX_EXACT_SEEDS:
        raise ValueError(f"the exact sign-flip test is computed up to {MAX_EXACT_SEEDS} seeds, got {len(d)}")
    scale = sum(abs(x) for x in d)
    if scale == 0:
        return 1.0
    bound = abs(sum(d)) - TIE_TOLERANCE * scale
    if bound <= 0:  # an observed sum of 0: every assignment is at least as far from 0
        return 1.0
    count = _count_enumerated(d, bound) if len(d) <= ENUMERATE_MAX else _count_meet_in_the_middle(d, bound)
    return count / 2 ** len(d)


def holm(pvalues: dict[str, float]) -> dict[str, float]:
    """Holm-Bonferroni adjusted p-values over the m tests given (step-down, made monotone; NaN
    stays NaN): sorted ``p_(1) <= ... <= p_(m)``, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
    Reject ``i`` when ``adj_(i) < alpha``: the chance of any false rejection among the m stays
    below alpha. Pass only the comparisons a protocol names as tested."""
    ranked = sorted((p, k) for k, p in pvalues.items() if p == p)
    out, running = {k: p for k, p in pvalues.items() if p != p}, 0.0
    for i, (p, k) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - i) * p))
        out[k] = running
    return out


# --------------------------------------------------------------------------- a small-study rule
def paired_verdict(final: dict[str, dict[int, float]], a: str, b: str, min_gap: float) -> dict[str, Any]:
    """The every-seed-agrees rule for arm ``a`` against ``b`` from ``final[arm][seed]``: called only
    when every shared seed's difference ``a - b`` has the same sign and ``|mean| >= min_gap``;
    otherwise "no difference detected at this size". (A rule for 3 seeds, where no exact test can
    reach p < 0.25; with no true difference up to 2 / 2^n of the sign patterns still fire it.)"""
    seeds = sorted(set(final.get(a, {})) & set(final.get(b, {})))
    diffs = [final[a][s] - final[b][s] for s in seeds]
    mean = sum(diffs) / len(diffs) if diffs else None
    same_sign = bool(diffs) and (all(x > 0 for x in diffs) or all(x < 0 for x in diffs))
    if mean is not None and same_sign and abs(mean) >= min_gap:
        verdict = f"{a} > {b}" if mean > 0 else f"{a} < {b}"
    else:
        verdict = "no difference detected at this size"
    return {"a": a, "b": b, "seeds": seeds, "differences": diffs, "mean_difference": mean, "verdict": verdict}


def mean_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """``mean(a) - mean(b)``: over paired samples, the mean of the per-seed differences."""
    return statistics.mean(a) - statistics.mean(b)


def sample_sd(values: Sequence[float]) -> float:
    """``sqrt(sum (x - mean)^2 / (n - 1))`` (NaN under 2 values)."""
    return statistics.stdev(values) if len(values) >= 2 else math.nan
