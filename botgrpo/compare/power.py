"""Power before the study: how large an effect the protocol's seeds and test can detect.

The model: a comparison's per-seed paired differences ``d_1..d_n`` of the endpoint (for steps to
a threshold, the log of the steps ratio) are independent draws of ``N(delta, sd^2)``; ``sd`` is
estimated from pilot seeds the study never uses (:func:`pilot_sd`), ``delta`` is the true effect.
The power at ``delta`` is the chance that the protocol's test, the two-sided exact sign-flip test
(:func:`botgrpo.compare.stats.sign_flip_p`) rejecting when ``p < alpha``, rejects.

Method: Monte Carlo over :data:`DRAWS` sets of ``n`` differences (a fixed seed, the same
standard-normal draws ``z`` for every ``delta``: ``d = delta + sd * z``, so the power curve is
smooth in ``delta``), each decided

* exactly, for ``n <= EXACT_MAX``: all ``2^n`` sign assignments are listed and the exact p
  compared with ``alpha`` (the test's discreteness included: under 6 seeds at alpha 0.05 no
  outcome is significant, ``2 / 2^n >= alpha``, and the power is 0 whatever the effect);
* by the normal approximation of the sign-flip statistic above: given ``|d|``, ``S = sum s_i |d_i|``
  under the null has mean 0 and variance ``sum d_i^2``, so the test rejects when
  ``|sum d_i| / sqrt(sum d_i^2) >= z_{1 - alpha/2}``. ``tests/test_compare_stats.py`` checks it
  against the exact decision on the same draws.

:func:`detectable_effect` bisects ``delta`` for the power level (80%); :func:`seeds_needed` scans
``n`` upward. Under Holm over m tested comparisons a comparison is rejected at the first step
only when ``p < alpha / m``, so a tested comparison's power is computed at ``alpha / m`` (a lower
bound on its Holm power); the positive-control gate at its own alpha.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, Optional, Sequence

import numpy as np

from botgrpo.compare.stats import TIE_TOLERANCE, sample_sd

DRAWS = 4000
EXACT_MAX = 12       # exact decisions up to 2^12 sign assignments per draw; the normal approximation above
MAX_SEEDS = 400      # seeds_needed scans this far
LEVEL = 0.8


def smallest_p(n: int) -> float:
    """The exact sign-flip test's smallest attainable p with ``n`` seeds: ``2 / 2^n``."""
    return 2 / 2 ** n


def _signs(n: int) -> np.ndarray:
    """All ``2^n`` rows of ``{-1, +1}^n``."""
    return 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)


def rejects_exact(d: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of ``d`` (draws x n): does the exact sign-flip test reject (``p < alpha``)?"""
    n = d.shape[1]
    signs, out = _signs(n).astype(float), np.empty(len(d), dtype=bool)
    chunk = max(1, 2 ** 22 // 2 ** n)
    for start in range(0, len(d), chunk):
        block = d[start:start + chunk]
        bound = np.abs(block.sum(1)) - TIE_TOLERANCE * np.abs(block).sum(1)
        count = (np.abs(signs @ block.T) >= bound).sum(0)
        out[start:start + chunk] = (bound > 0) & (count / 2 ** n < alpha)
    return out


def rejects_normal(d: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of ``d``: the normal approximation's decision, ``|sum d| / sqrt(sum d^2) >= z_{1-alpha/2}``."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    norm = np.sqrt((d ** 2).sum(1))
    return (norm > 0) & (np.abs(d.sum(1)) >= z * norm)


def _draws(n: int, draws: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, n]).standard_normal((draws, n))


def power(delta: float, sd: float, n: int, alpha: float, draws: int = DRAWS, seed: int = 0,
          exact: Optional[bool] = None) -> float:
    """The share of ``draws`` simulated studies of ``n`` seeds (``d ~ N(delta, sd^2)``) in which the
    sign-flip test rejects at ``alpha``; ``exact`` None: exact for ``n <= EXACT_MAX``."""
    if n < 1:
        return 0.0
    d = delta + sd * _draws(n, draws, seed)
    decide = rejects_exact if (n <= EXACT_MAX if exact is None else exact) else rejects_normal
    return float(decide(d, alpha).mean())


def detectable_effect(sd: float, n: int, alpha: float, level: float = LEVEL, draws: int = DRAWS,
                      seed: int = 0) -> float:
    """The smallest ``delta >= 0`` with ``power(delta) >= level`` (bisection to 1e-4 sd); ``inf``
    when no effect reaches it (too few seeds for the test: ``2 / 2^n >= alpha``); 0 when ``sd`` is 0."""
    if sd == 0:
        return 0.0 if smallest_p(n) < alpha else math.inf
    low, high = 0.0, sd
    while power(high, sd, n, alpha, draws, seed) < level:
        low, high = high, high * 2
        if high > 64 * sd:
            return math.inf
    while high - low > 1e-4 * sd:
        middle = (low + high) / 2
        low, high = (low, middle) if power(middle, sd, n, alpha, draws, seed) >= level else (middle, high)
    return high


def seeds_needed(delta: float, sd: float, alpha: float, level: float = LEVEL, draws: int = DRAWS,
                 seed: int = 0, most: int = MAX_SEEDS) -> Optional[int]:
    """The fewest seeds with ``power(delta) >= level`` (None: more than ``most``)."""
    for n in range(2, most + 1):
        if smallest_p(n) < alpha and power(delta, sd, n, alpha, draws, seed) >= level:
            return n
    return None


def describe(draws: int = DRAWS) -> str:
    """The method, in one line (stored with every estimate)."""
    return (f"Monte Carlo over {draws} simulated studies, d_i ~ N(delta, sd^2) with sd from the pilots; the "
            f"two-sided sign-flip test decided exactly up to {EXACT_MAX} seeds, by its normal approximation above")


def pilot_sd(differences: Sequence[float]) -> float:
    """The per-seed SD of the paired differences on the pilot seeds (``n - 1`` in the denominator;
    with few pilots it is itself uncertain: 2 pilots give one degree of freedom)."""
    return sample_sd(list(differences))


@dataclass(frozen=True)
class PowerEstimate:
    """One comparison's power, in the endpoint's difference units (steps: log ratio)."""

    a: str
    b: str
    pilot_seeds: list[int]
    differences: list[float]  # a's advantage over b on each pilot seed
    sd: float                 # their sample SD
    seeds: int                # the study's seed count
    alpha: float              # the level the test is powered at (alpha / m for m tested comparisons)
    level: float              # the power asked for (0.8)
    detectable: Optional[float]  # smallest difference detected with that power at ``seeds`` (None: none is)
    target: float             # the protocol's target difference
    power_at_target: float    # the study's power at the target
    seeds_for_target: Optional[int]  # fewest seeds for ``level`` at the target

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate(a: str, b: str, pilot: dict[int, float], seeds: int, alpha: float, target: float,
             level: float = LEVEL, draws: int = DRAWS, seed: int = 0) -> PowerEstimate:
    """:class:`PowerEstimate` of comparison ``a`` vs ``b`` from its pilot differences ``{seed: d}``."""
    if len(pilot) < 2:
        raise ValueError(f"{a} vs {b}: power needs at least 2 pilot seeds with both arms finished, "
                         f"found {len(pilot)}")
    seeds_sorted = sorted(pilot)
    diffs = [pilot[s] for s in seeds_sorted]
    sd = pilot_sd(diffs)
    detectable = detectable_effect(sd, seeds, alpha, level, draws, seed)
    return PowerEstimate(a, b, seeds_sorted, diffs, sd, seeds, alpha, level,
                         detectable if math.isfinite(detectable) else None, target,
                         power(target, sd, seeds, alpha, draws, seed), seeds_needed(target, sd, alpha, level, draws, seed))
