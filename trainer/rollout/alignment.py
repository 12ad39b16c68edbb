"""Character spans of generated tokens in their decoded text, and rewards back onto tokens.

The reward server works in characters; the trainer in tokens. A completion is decoded once;
each token's span is where its text lands in that string. Byte-level tokenizers can split a
multi-byte character across tokens; then the pieces do not concatenate to the text, and the
spans come from decoding growing prefixes instead (exact, slower, rare).
"""
from __future__ import annotations

from typing import Sequence

import torch


def token_spans(tokenizer, ids: Sequence[int]) -> tuple[str, list[tuple[int, int]]]:
    """``(text, spans)`` for the token ids of one completion (special tokens decode to empty)."""
    text = tokenizer.decode(ids, skip_special_tokens=True)
    pieces = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    if "".join(pieces) == text:
        return text, _cumulative(len(p) for p in pieces)
    ends = [len(tokenizer.decode(ids[: k + 1], skip_special_tokens=True)) for k in range(len(ids))]
    spans, start = [], 0
    for end in ends:
        end = max(end, start)
        spans.append((start, end))
        start = end
    return text, spans


def _cumulative(lengths) -> list[tuple[int, int]]:
    spans, start = [], 0
    for n in lengths:
        spans.append((start, start + n))
        start += n
    return spans


def scores_to_tensor(token_scores: Sequence[Sequence[float]], mask: torch.Tensor, first: int = 0) -> torch.Tensor:
    """``(B, T)`` rewards: row i's scores on its first ``len(token_scores[i])`` masked positions;
    ValueError (naming rollout ``first + i``) where a row's count is not its token count."""
    rewards = torch.zeros(mask.shape, dtype=torch.float32)
    for i, scores in enumerate(token_scores):
        n = int(mask[i].sum())
        if len(scores) != n:
            raise ValueError(f"rollout {first + i}: {len(scores)} token scores for {n} tokens")
        rewards[i, :n] = torch.tensor(scores, dtype=torch.float32)
    return rewards
