"""From character spans to one value per caller token: the shared mapper under every scorer.

Scorers speak characters; callers speak their own tokens, given as character spans of the
completion (or the server's own split, :func:`botgrpo.services.schemas.default_split`). The
rules, shared by every scorer (:func:`compose` applies them to the local signal, then the reward
recipe of :mod:`botgrpo.services.recipe`):

1. **Characters.** A character covered by spans takes the lowest of their values (blame is
   never averaged away); a character no span covers takes the ``default``.
2. **Tokens.** A token takes the *minimum* over the characters it covers: a token that touches
   a blamed character is blamed. An empty span ``[s, s)`` (special tokens) takes character
   ``s`` (the last character when ``s`` is the end, ``fill`` when there are no characters).

Identical input gives identical output: no randomness, no dependence on batch composition.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from botgrpo.reward_server.scorers.base import ScoreResult, SpanScore
from botgrpo.services import recipe
from botgrpo.services.schemas import default_split  # noqa: F401 - the wire's split, used beside these rules

Offsets = Sequence[tuple[int, int]] | np.ndarray


def char_scores(spans: Sequence[SpanScore], default: float, length: int) -> np.ndarray:
    """``(length,)`` float64: the value of every character of the completion."""
    scores = np.full(length, np.inf, dtype=np.float64)
    for span in spans:
        start, end = max(0, span.start), min(length, span.end)
        if start < end:
            np.minimum(scores[start:end], span.score, out=scores[start:end])
    scores[np.isposinf(scores)] = float(default)
    return scores


def token_minima(chars: np.ndarray, offsets: Offsets, fill: float) -> np.ndarray:
    """``(N,)``: for each ``[start, end)`` span the minimum of its characters (rule 2).

    ``offsets`` must already be valid (see :func:`check_offsets`). Vectorised: one
    ``np.minimum.reduceat`` over the interleaved starts and ends.
    """
    spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    if spans.size == 0:
        return np.zeros(0, dtype=np.float64)
    # a sentinel after the last character makes `end == length` a valid index
    extended = np.append(chars, chars[-1] if len(chars) else fill)
    return np.minimum.reduceat(extended, spans.reshape(-1))[0::2]


def check_offsets(offsets: Offsets, length: int) -> str | None:
    """Why ``offsets`` do not fit a completion of ``length`` characters, or None if they do."""
    spans = np.asarray(offsets, dtype=np.int64)
    if spans.size == 0:
        return None
    if spans.ndim != 2 or spans.shape[1] != 2:
        return "token_offsets must be a list of [start, end] pairs"
    bad = np.flatnonzero((spans[:, 0] < 0) | (spans[:, 0] > spans[:, 1]) | (spans[:, 1] > length))
    if bad.size:
        i = int(bad[0])
        return (f"token_offsets[{i}] = [{spans[i, 0]}, {spans[i, 1]}] does not fit a completion of "
                f"{length} characters (need 0 <= start <= end <= {length})")
    return None


def compose(verdict: ScoreResult, length: int, offsets: Offsets, local_weight: float,
            bounds: tuple[float, float] = recipe.DEFAULT_BOUNDS, wire: recipe.WireMap | None = None) -> list[float]:
    """One bounded score per caller token of a completion of ``length`` characters: the verdict's
    local signal mapped onto the tokens (rules 1-2), then the recipe ``r = R + w_s * l`` put on
    the wire (:func:`botgrpo.services.recipe.to_wire`) by ``wire``, the map of ``local_weight``
    onto ``bounds`` (computed here when not given; the service computes it once for the rollouts it
    scores together and sends that map as their ``reward_map``).

    An empty completion's tokens (an eos alone) take ``local_default``: a scorer that finds
    nothing to credit (no code, no answer) sets it to -1, so stopping at once is never
    preferred to trying.
    """
    chars = char_scores(verdict.local, verdict.local_default, length)
    local = token_minima(chars, offsets, fill=verdict.local_default)
    rewards = recipe.token_rewards(verdict.score, local, local_weight)
    return recipe.to_wire(rewards, wire if wire is not None else recipe.WireMap.of(local_weight, bounds), bounds)
