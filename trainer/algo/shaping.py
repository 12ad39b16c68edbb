"""Reward shaping and batch filtering used by some methods (pure functions)."""
from __future__ import annotations

import torch
from torch import Tensor


def overlong_penalty(lengths: Tensor, max_len: int, buffer: int, factor: float = 1.0) -> Tensor:
    """DAPO's soft overlong punishment, ``(B,)``, added to each rollout's reward::

        0                                 if L <= max_len - buffer
        (max_len - buffer - L) / buffer * factor   if max_len - buffer < L <= max_len
        -factor                            if L > max_len
    """
    if buffer <= 0:
        return torch.zeros(lengths.shape, dtype=torch.float32)
    lengths = lengths.float()
    ramp = (max_len - buffer - lengths) / buffer * factor
    return torch.where(lengths <= max_len - buffer, 0.0, torch.where(lengths <= max_len, ramp, -factor))


def informative_groups(seq_rewards: Tensor, group_ids: Tensor) -> Tensor:
    """``(B,)`` bool: rows whose group's rewards are not all equal (DAPO's dynamic sampling keeps
    only these; a group where every rollout scored the same has zero advantage everywhere).
    NaN rewards (unscored rollouts) are ignored."""
    _, index = torch.unique(group_ids, return_inverse=True)
    count = int(index.max()) + 1 if index.numel() else 0
    rewards = seq_rewards.float()
    defined = rewards.isfinite()
    high = torch.full((count,), -torch.inf).scatter_reduce(0, index, torch.where(defined, rewards, -torch.inf), "amax")
    low = torch.full((count,), torch.inf).scatter_reduce(0, index, torch.where(defined, rewards, torch.inf), "amin")
    return (high > low)[index]
