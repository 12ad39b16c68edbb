"""Token rewards the paper's way: the outcome dominates, the local signal nudges.

Every scorer answers in two channels (:class:`~reward_server.scorers.base.ScoreResult`): the
rollout's outcome ``R_i`` and a bounded local signal ``l`` over its characters. Token ``t`` of
rollout ``i`` then gets::

    r_it = R_i + w_s * l_it        R_i  in [-1, 1]   the outcome, on every token
                                   l_it in [-1, 0]   the minimum of l over the token's characters
                                   w_s  >= 0         ``local_weight``, a request option

mapped affinely from ``[-1 - w_s, 1]`` onto the server's bounds ``[low, high]``::

    token_score_it = low + (high - low) * (r_it + 1 + w_s) / (2 + w_s)

Why this shape:

* the outcome reaches every token, so a failing rollout's unblamed tokens are pushed down as
  GRPO pushes them, and the local term only adds ``w_s`` of extra blame where the mistake is;
  with ``w_s <= 1`` it never outweighs the outcome (a blamed token of a passing rollout,
  ``1 - w_s``, still scores at least as high as an unblamed token of a failing one, ``-1``);
* affine, not clipped: clipping would flatten the local signal of failing rollouts into the
  lower bound. Group-normalising estimators without a floor on the spread (GRPO, the paper's
  BoT-GRPO) are invariant to an affine map; one with a floor in reward units (``bot_grpo``'s
  ``min_std``) is not, so every result carries its map (``reward_map``: ``[scale, shift]`` with
  ``token_score = scale * r + shift``) and the trainer divides it out (:func:`wire_map`);
* ``w_s = 0`` puts exactly ``R_i`` on every token (default bounds), so BoT-GRPO's advantages
  are GRPO's with the population std (``tests/test_composition.py`` checks it).

The sequence-level ``score`` on the wire is the outcome ``R_i`` itself, clipped to the bounds.
"""
from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field

from botgrpo.reward_server.scorers.base import ScoreResult
from botgrpo.reward_server.spans import Offsets, char_scores, token_minima

# The study in docs/results/convergence picks it; the paper found 0.1, 0.5 and 1.0 all robust.
DEFAULT_LOCAL_WEIGHT = 0.5
MAX_LOCAL_WEIGHT = 4.0


class RecipeOptions(BaseModel):
    """The composition's request option, shared by every scorer's options."""

    local_weight: float = Field(DEFAULT_LOCAL_WEIGHT, ge=0, le=MAX_LOCAL_WEIGHT,
                                description="w_s in r = R + w_s * l: weight of the local signal against the "
                                            "outcome (0: every token carries the outcome only)")


def clip_outcome(outcome: float, bounds: tuple[float, float]) -> float:
    """``R_i`` clipped into ``bounds``; a non-finite outcome is the lower bound."""
    low, high = bounds
    return float(min(max(outcome, low), high)) if math.isfinite(outcome) else low


def token_rewards(outcome: float, local: np.ndarray, local_weight: float,
                  bounds: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """``(N,)`` bounded token rewards from ``R_i`` and the tokens' local signal (module formula).

    ``outcome`` is clipped to ``[-1, 1]`` and ``local`` to ``[-1, 0]`` first (NaN: the worst).
    """
    low, high = bounds
    R = min(max(outcome, -1.0), 1.0) if math.isfinite(outcome) else -1.0
    l = np.clip(np.nan_to_num(np.asarray(local, dtype=np.float64), nan=-1.0, neginf=-1.0), -1.0, 0.0)
    scale, shift = wire_map(local_weight, bounds)
    return np.clip(scale * (R + local_weight * l) + shift, low, high)  # clip: rounding only


def wire_map(local_weight: float, bounds: tuple[float, float] = (-1.0, 1.0)) -> tuple[float, float]:
    """``(scale, shift)`` of the affine map from reward units onto the wire's bounds::

        scale = (high - low) / (2 + w_s)      shift = low + scale * (1 + w_s)

    so ``token_score = scale * r + shift`` and ``r = (token_score - shift) / scale``; with the
    default bounds and ``w_s = 0`` it is the identity, exactly."""
    low, high = bounds
    scale = (high - low) / (2.0 + local_weight)
    return scale, low + scale * (1.0 + local_weight)


def compose(result: ScoreResult, length: int, offsets: Offsets, local_weight: float,
            bounds: tuple[float, float] = (-1.0, 1.0)) -> list[float]:
    """One bounded score per caller token of a completion of ``length`` characters.

    An empty completion's tokens (an eos alone) take ``local_default``: a scorer that finds
    nothing to credit (no code, no answer) sets it to -1, so stopping at once is never
    preferred to trying.
    """
    chars = char_scores(result.local, result.local_default, length)
    local = token_minima(chars, offsets, fill=result.local_default)
    return token_rewards(result.score, local, local_weight, bounds).tolist()
