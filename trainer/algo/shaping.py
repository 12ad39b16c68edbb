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


def shape(token_rewards: Tensor, seq_rewards: Tensor, scored: Tensor, completion_mask: Tensor, lengths: Tensor,
          group_size: int, *, max_new_tokens: int, overlong_zone: int, overlong_factor: float,
          dynamic_sampling: bool) -> tuple[Tensor, Tensor, Tensor]:
    """A batch's (or some whole groups') rewards and loss mask, shaped by the method::

        mask   = completion_mask & scored                  (an unscored rollout leaves the loss
        R_i    = R_i if scored else NaN                      and its group's statistics)
        r_i,t += p_i on its tokens, R_i += p_i              p = overlong_penalty(L, max_new_tokens, zone)
        mask  &= informative group                          (dynamic sampling)

    Per rollout or per group only (rows in whole groups, in order), so shaping a few groups gives
    the batch's values for them. Returns ``(token_rewards, seq_rewards, mask)``.
    """
    mask = completion_mask & scored[:, None]
    seq_rewards = torch.where(scored, seq_rewards, torch.nan)
    if overlong_zone:
        penalty = overlong_penalty(lengths, max_new_tokens, overlong_zone, overlong_factor)
        token_rewards = torch.where(mask, token_rewards + penalty[:, None], 0.0)
        seq_rewards = seq_rewards + penalty
    if dynamic_sampling:
        groups = torch.arange(mask.shape[0]) // group_size
        mask = mask & informative_groups(seq_rewards, groups)[:, None]
    return token_rewards, seq_rewards, mask
