"""From character-span scores to one bounded score per caller token.

Scorers speak characters (:class:`~reward_server.scorers.base.ScoreResult`); callers speak their
own tokens, given as character spans of the completion. The scheme, shared by every scorer:

1. **Characters.** A character covered by spans takes the lowest of their scores (blame is
   never averaged away); a character no span covers takes the result's ``default``.
2. **Mixing.** A task that mixes scorers sums their character arrays with its weights.
3. **Tokens.** A token scores the *minimum* over the characters it covers: a token that touches
   a blamed character is blamed. An empty span ``[s, s)`` (special tokens) takes the score of
   character ``s`` (the last character when ``s`` is the end).
4. **Bounds.** Scores are clipped into ``[low, high]``; non-finite values become ``low``.

Identical input gives identical output: no randomness, no dependence on batch composition.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

import numpy as np

from reward_server.scorers.base import ScoreResult, SpanScore

Offsets = Sequence[tuple[int, int]] | np.ndarray
_SPLIT = re.compile(r"\s*\S+|\s+")


def char_scores(result: ScoreResult, length: int) -> np.ndarray:
    """``(length,)`` float64: the result's score of every character of the completion."""
    scores = np.full(length, np.inf, dtype=np.float64)
    for span in result.spans:
        start, end = max(0, span.start), min(length, span.end)
        if start < end:
            np.minimum(scores[start:end], span.score, out=scores[start:end])
    scores[np.isposinf(scores)] = float(result.default)
    return scores


def mix(weighted: Iterable[tuple[float, np.ndarray]]) -> np.ndarray:
    """``sum_k w_k * chars_k``: the character scores of a weighted mix of scorers."""
    total = None
    for weight, chars in weighted:
        total = weight * chars if total is None else total + weight * chars
    if total is None:
        raise ValueError("mix needs at least one scorer")
    return total


def token_scores(chars: np.ndarray, offsets: Offsets, bounds: tuple[float, float] = (-1.0, 1.0),
                 empty_default: float = 0.0) -> list[float]:
    """One score per ``[start, end)`` span: the minimum of its characters, clipped to ``bounds``.

    ``offsets`` must already be valid (see :func:`check_offsets`). Vectorised: one
    ``np.minimum.reduceat`` over the interleaved starts and ends.
    """
    low, high = bounds
    spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    if spans.size == 0:
        return []
    # a sentinel after the last character makes `end == length` a valid index
    sentinel = chars[-1] if len(chars) else empty_default
    extended = np.append(chars, sentinel)
    mins = np.minimum.reduceat(extended, spans.reshape(-1))[0::2]
    mins = np.nan_to_num(mins, nan=low, posinf=high, neginf=low)
    return np.clip(mins, low, high).tolist()


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


def default_split(text: str) -> list[tuple[int, int]]:
    """The server's own tokens when the caller sends none: each word with the whitespace before it."""
    return [m.span() for m in _SPLIT.finditer(text)]


def result_from_chars(chars: np.ndarray, *, score: float, passed: bool | None, details: dict) -> ScoreResult:
    """A :class:`ScoreResult` whose character scores are exactly ``chars`` (run-length encoded:
    ``default`` is the highest score, each run below it a span)."""
    if len(chars) == 0:
        return ScoreResult(score=score, passed=passed, default=score, details=details)
    top = float(chars.max())
    cuts = np.flatnonzero(np.diff(chars)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(chars)]))
    spans = [SpanScore(int(s), int(e), float(chars[s])) for s, e in zip(starts, ends) if chars[s] < top]
    return ScoreResult(score=score, passed=passed, spans=spans, default=top, details=details)
