"""Per-token log-probabilities of completions under a causal LM (the training-side forward).

Two layouts of a batch, with the same interface (``micro_batches``, ``logprobs(model, mb)``
giving ``(n, T)`` tensors aligned with the rollout tensors' rows ``mb.rows``):

* padded (:class:`PaddedLayout`, :func:`pack`): ``[left-padded prompt | completion | right
  padding]``, so that all completions start at the same column; micro-batches of
  ``micro_batch_size`` rows;
* packed (:class:`botgrpo.trainer.models.packing.PackedLayout`): one row per micro-batch, no padding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from botgrpo.trainer.models.packing import PackedLayout


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


@dataclass
class PaddedMicroBatch:
    rows: slice


class PaddedLayout:
    """The padded layout's micro-batches: ``micro_batch_size`` consecutive rows each."""

    def __init__(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor, int], micro_batch_size: int):
        self.inputs = inputs
        B = inputs[0].shape[0]
        self.shape = (B, inputs[0].shape[1] - inputs[3])
        self.micro_batches = [PaddedMicroBatch(slice(s, min(s + micro_batch_size, B)))
                              for s in range(0, B, micro_batch_size)]

    def logprobs(self, model, mb: PaddedMicroBatch, *, temperature: float = 1.0, with_entropy: bool = False):
        input_ids, attention, positions, width = self.inputs
        return completion_logprobs(model, input_ids[mb.rows], attention[mb.rows], positions[mb.rows], width,
                                   temperature=temperature, with_entropy=with_entropy)


def make_layout(prompt_ids, completion_ids: torch.Tensor, completion_mask: torch.Tensor, group_size: int,
                pad_id: int, *, packing: bool, micro_batch_size: int, micro_batch_tokens: Optional[int] = None,
                d=None):
    """The batch's layout for the log-prob passes and the update: packed or padded."""
    if packing:
        return PackedLayout(prompt_ids, completion_ids, completion_mask, group_size,
                            micro_batch_size=micro_batch_size, micro_batch_tokens=micro_batch_tokens, d=d)
    return PaddedLayout(pack(prompt_ids, completion_ids, completion_mask, group_size, pad_id), micro_batch_size)
