"""Per-token log-probabilities of completions under a causal LM (the training-side forward).

Sequences are laid out ``[left-padded prompt | completion | right padding]`` so that all
completions start at the same column and the result aligns with the rollout tensors.
"""
from __future__ import annotations

from typing import Sequence

import torch


def pack(prompt_ids: Sequence[Sequence[int]], completion_ids: torch.Tensor, completion_mask: torch.Tensor,
         group_size: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """``(input_ids, attention_mask, position_ids, prompt_width)`` for rows ``i`` = prompt ``i // G``."""
    B, T = completion_ids.shape
    width = max(len(p) for p in prompt_ids)
    input_ids = torch.full((B, width + T), pad_id, dtype=torch.long)
    attention = torch.zeros((B, width + T), dtype=torch.long)
    for i in range(B):
        p = prompt_ids[i // group_size]
        input_ids[i, width - len(p):width] = torch.tensor(p, dtype=torch.long)
        attention[i, width - len(p):width] = 1
    input_ids[:, width:] = torch.where(completion_mask, completion_ids, pad_id)
    attention[:, width:] = completion_mask.long()
    positions = (attention.cumsum(1) - 1).clamp_min(0)
    return input_ids, attention, positions, width


def completion_logprobs(model, input_ids: torch.Tensor, attention: torch.Tensor, positions: torch.Tensor,
                        prompt_width: int, temperature: float = 1.0, with_entropy: bool = False):
    """``(B, T)`` log pi(y_t | prefix) of the completion tokens (and their entropy if asked).

    Logits are divided by ``temperature``, matching the distribution the rollouts were drawn
    from. The model computes logits for the last ``T + 1`` positions only (``logits_to_keep``),
    so the vocab-sized tensor over the prompt is never materialised; the position that predicts
    past the end is dropped.
    """
    device = next(model.parameters()).device
    T = input_ids.shape[1] - prompt_width
    logits = model(input_ids=input_ids.to(device), attention_mask=attention.to(device),
                   position_ids=positions.to(device), use_cache=False, logits_to_keep=T + 1).logits
    logits = logits[:, -(T + 1):-1].float() / temperature
    targets = input_ids[:, prompt_width:].to(device)
    # log p(y) = logit_y - logsumexp(logits): no (B, T, V) log-softmax tensor is kept for backward
    normaliser = torch.logsumexp(logits, dim=-1)
    logprobs = logits.gather(-1, targets[..., None]).squeeze(-1) - normaliser
    if not with_entropy:
        return logprobs
    with torch.no_grad():  # H = logsumexp - E_p[logit], a row at a time to bound the extra memory
        entropy = torch.stack([normaliser[i] - (logits[i].softmax(-1) * logits[i]).sum(-1)
                               for i in range(logits.shape[0])])
    return logprobs, entropy
