"""The endpoints a run is measured by, and how two runs on one seed are compared: a registry.

Each endpoint turns a run's held-out curve into one number (:meth:`Endpoint.value`) and two runs
on the same seed into a paired difference, **positive when arm a is better** (:meth:`Endpoint.difference`):

* ``steps_to_threshold``: ``T`` = :func:`~botgrpo.compare.stats.interpolated_steps` (a run that
  never gets there counts at the protocol's censoring value); difference ``log(T_b / T_a)`` (the
  log of the speed-up: symmetric, so a 1.2x gain and a 1.2x loss weigh the same); the effect is
  reported as the ratio ``exp(mean)``, b's steps over a's (the geometric mean of the per-seed
  ratios).
* ``auc``: the area under the held-out curve over the steps, divided by them (a mean pass rate);
  difference ``auc_a - auc_b``, reported as is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from botgrpo.compare.stats import area_under_curve, interpolated_steps


class EndpointUndefined(ValueError):
    """A paired difference that cannot be formed (a run at the threshold at step 0: the
    threshold is not above its start)."""


@dataclass(frozen=True)
class RunValue:
    value: float
    censored: bool = False   # never reached the threshold: counted at the censoring value


@dataclass(frozen=True)
class Endpoint:
    name: str
    describe: str                                    # one line: what the value is
    value: Callable[[Sequence[dict], Any], RunValue]  # (curve, protocol) -> the run's value
    difference: Callable[[float, float], float]      # (a's value, b's value) -> a's advantage
    effect: Callable[[float], float]                 # mean difference -> the reported effect
    from_effect: Callable[[float], float]            # a target effect -> its difference
    effect_name: str                                 # the reported effect, in words
    lower_is_better: bool


def _steps(evals: Sequence[dict], protocol) -> RunValue:
    reached: Optional[float] = interpolated_steps(evals, protocol.endpoint.threshold)
    return RunValue(protocol.censor_steps(), True) if reached is None else RunValue(reached)


def _log_ratio(a: float, b: float) -> float:
    if a <= 0 or b <= 0:
        raise EndpointUndefined("a run is at the threshold at step 0 (the threshold is not above its start)")
    return math.log(b / a)


ENDPOINTS: dict[str, Endpoint] = {
    "steps_to_threshold": Endpoint(
        "steps_to_threshold", "steps to the threshold (interpolated)", _steps, _log_ratio,
        math.exp, math.log, "speed-up (b's steps over a's, geometric mean over seeds)", lower_is_better=True),
    "auc": Endpoint(
        "auc", "area under the held-out curve / steps (mean pass rate)",
        lambda evals, protocol: RunValue(area_under_curve(evals)), lambda a, b: a - b,
        lambda mean: mean, lambda target: target, "difference in mean held-out pass rate (a - b)",
        lower_is_better=False),
}


def endpoints_of(protocol) -> list[Endpoint]:
    """The primary endpoint first, then the other ones the protocol can compute (steps need a threshold)."""
    names = [protocol.endpoint.primary] + [n for n in ENDPOINTS if n != protocol.endpoint.primary]
    return [ENDPOINTS[n] for n in names if n != "steps_to_threshold" or protocol.endpoint.threshold is not None]
