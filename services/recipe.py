"""The reward recipe: the outcome dominates, the local signal nudges. Defined once, here; the
server applies it (:func:`to_wire`) and every consumer undoes its map (:func:`from_wire`).

Every scorer answers in two channels: the rollout's outcome ``R_i`` and a bounded local signal
``l`` over its characters (the server's span mapper reduces ``l`` to one value per caller token).
Token ``t`` of rollout ``i`` then gets, in the recipe's units::

    r_it = R_i + w_s * l_it        R_i  in [-1, 1]   the outcome, on every token
                                   l_it in [-1, 0]   the minimum of l over the token's characters
                                   w_s  >= 0         ``local_weight``, a request option

and on the wire ``r`` is mapped affinely from ``[-1 - w_s, 1]`` onto the server's bounds
``[low, high]`` (:class:`WireMap`)::

    token_score_it = scale * r_it + shift      scale = (high - low) / (2 + w_s)
                                               shift = low + scale * (1 + w_s)

Why this shape:

* the outcome reaches every token, so a failing rollout's unblamed tokens are pushed down as
  GRPO pushes them, and the local term only adds ``w_s`` of extra blame where the mistake is;
  with ``w_s <= 1`` it never outweighs the outcome (a blamed token of a passing rollout,
  ``1 - w_s``, still scores at least as high as an unblamed token of a failing one, ``-1``);
* affine, not clipped: clipping would flatten the local signal of failing rollouts into the
  lower bound. Group-normalising estimators without a floor on the spread (GRPO, the paper's
  BoT-GRPO) are invariant to an affine map; one with a floor in reward units (``bot_grpo``'s
  ``min_std``) is not, so every result carries its map (``reward_map``) and consumers read token
  rewards back in the recipe's units (:func:`from_wire`, ``Result.rewards()``);
* ``w_s = 0`` puts exactly ``R_i`` on every token (default bounds: the map is the identity), so
  BoT-GRPO's advantages are GRPO's with the population std (``tests/test_composition.py``).

The sequence-level ``score`` on the wire is the outcome ``R_i`` itself, clipped to the bounds.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np
from pydantic import BaseModel, Field

# The study in docs/results/convergence picks it; the paper found 0.1, 0.5 and 1.0 all robust.
DEFAULT_LOCAL_WEIGHT = 0.5
MAX_LOCAL_WEIGHT = 4.0
DEFAULT_BOUNDS = (-1.0, 1.0)


class RecipeOptions(BaseModel):
    """The recipe's request option, shared by every scorer's options."""

    local_weight: float = Field(DEFAULT_LOCAL_WEIGHT, ge=0, le=MAX_LOCAL_WEIGHT,
                                description="w_s in r = R + w_s * l: weight of the local signal against the "
                                            "outcome (0: every token carries the outcome only)")


class WireMap(NamedTuple):
    """The affine map from the recipe's units onto the wire: ``token_score = scale * r + shift``."""

    scale: float
    shift: float

    @classmethod
    def of(cls, local_weight: float, bounds: tuple[float, float] = DEFAULT_BOUNDS) -> "WireMap":
        """The map of ``[-1 - w_s, 1]`` onto ``bounds`` (module formula); with the default bounds
        and ``w_s = 0`` it is the identity, exactly."""
        low, high = bounds
        scale = (high - low) / (2.0 + local_weight)
        return cls(scale, low + scale * (1.0 + local_weight))

    def check(self) -> "WireMap":
        """``self``, or ValueError when it cannot be undone (a non-finite or non-positive scale)."""
        if not (math.isfinite(self.scale) and math.isfinite(self.shift)) or self.scale <= 0:
            raise ValueError(f"reward_map must be [scale > 0, shift], finite; got {list(self)}")
        return self


def clip_outcome(outcome: float, bounds: tuple[float, float] = DEFAULT_BOUNDS) -> float:
    """``R_i`` clipped into ``bounds``; a non-finite outcome is the lower bound."""
    low, high = bounds
    return float(min(max(outcome, low), high)) if math.isfinite(outcome) else low


def token_rewards(outcome: float, local: np.ndarray, local_weight: float) -> np.ndarray:
    """``(N,)`` token rewards ``r = R + w_s * l`` in the recipe's units (module formula).

    ``outcome`` is clipped to ``[-1, 1]`` and ``local`` to ``[-1, 0]`` first (NaN: the worst)."""
    R = min(max(outcome, -1.0), 1.0) if math.isfinite(outcome) else -1.0
    l = np.clip(np.nan_to_num(np.asarray(local, dtype=np.float64), nan=-1.0, neginf=-1.0), -1.0, 0.0)
    return R + local_weight * l


def to_wire(rewards: np.ndarray, wire: WireMap, bounds: tuple[float, float] = DEFAULT_BOUNDS) -> list[float]:
    """Token rewards on the wire: ``scale * r + shift``, inside ``bounds`` (the clip is for rounding)."""
    low, high = bounds
    return np.clip(wire.scale * np.asarray(rewards) + wire.shift, low, high).tolist()


def from_wire(token_scores: Sequence[float], wire: WireMap | None) -> list[float]:
    """Token scores back in the recipe's units, ``r = (token_score - shift) / scale`` (as sent when
    there is no map). Every consumer that normalises with a floor in reward units (``bot_grpo``'s
    ``min_std``) reads token rewards through this (``Result.rewards()``)."""
    if not wire:
        return [float(x) for x in token_scores]
    scale, shift = WireMap(*(float(v) for v in wire)).check()
    return [(float(x) - shift) / scale for x in token_scores]
