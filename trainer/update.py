"""One policy update: the loss over a scored batch, accumulated over micro-batches (and ranks).

Aggregation totals (tokens, sequences) are those of the *whole* batch across ranks, and the
loss is scaled by the world size because DDP averages gradients: so micro-batching and data
parallelism leave the gradient equal to the single-process, single-pass one.

Old and reference log-probs (:func:`batch_logprobs`) go through the very forward the update
uses: the same micro-batches, the same autocast, dropout off. So on the first pass the ratio
is exactly 1 (``first_ratio_error`` in the diagnostics says how far from 1 it is).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from trainer.algorithm import AlgorithmSettings
from trainer.distributed import Dist, global_sum
from trainer.losses import KL_ESTIMATORS, POLICY_LOSSES, aggregate, lookup
from trainer.policy import completion_logprobs
from trainer.precision import autocast


@dataclass
class UpdateBatch:
    input_ids: torch.Tensor      # (B, W + T)
    attention: torch.Tensor
    positions: torch.Tensor
    prompt_width: int
    mask: torch.Tensor           # (B, T) completion tokens taking part in the loss
    advantages: torch.Tensor     # (B, T)
    old_logp: Optional[torch.Tensor] = None   # (B, T) for num_iterations > 1
    ref_logp: Optional[torch.Tensor] = None   # (B, T) when kl_coef > 0


def _rows(inputs, rows: slice) -> dict:
    input_ids, attention, positions, width = inputs
    return {"input_ids": input_ids[rows], "attention": attention[rows], "positions": positions[rows],
            "prompt_width": width}


@torch.no_grad()
def batch_logprobs(model, inputs, *, temperature: float, micro_batch_size: int, bf16: bool) -> torch.Tensor:
    """``(B, T)`` log-probs on CPU, in the update's micro-batches and autocast (eval mode, no grad)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        parts = []
        for start in range(0, inputs[0].shape[0], micro_batch_size):
            with autocast(bf16, device):
                parts.append(completion_logprobs(model, **_rows(inputs, slice(start, start + micro_batch_size)),
                                                 temperature=temperature).cpu())
        return torch.cat(parts)
    finally:
        model.train(was_training)


def policy_update(model, optimizer, batch: UpdateBatch, algo: AlgorithmSettings, *, temperature: float,
                  micro_batch_size: int, num_iterations: int, max_grad_norm: float, norm_len: int,
                  d: Dist, bf16: bool = False) -> dict[str, float]:
    """``num_iterations`` optimizer steps on ``batch`` in train mode; returns the mean diagnostics."""
    device = next(model.parameters()).device
    loss_fn = lookup(POLICY_LOSSES, algo.policy_loss, "policy loss")
    kl_fn = lookup(KL_ESTIMATORS, algo.kl_estimator, "KL estimator")
    totals = {"num_tokens": global_sum(batch.mask.sum().item(), d),
              "num_seqs": global_sum(batch.mask.shape[0], d), "norm_len": norm_len}
    B = batch.mask.shape[0]
    sums = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "entropy": 0.0, "grad_norm": 0.0, "skipped": 0.0,
            "first_ratio_error": 0.0}
    if totals["num_tokens"] == 0:  # every group filtered out (e.g. dynamic sampling): Adam would still
        sums["skipped"] = 1.0      # move the weights on its momentum, so no step at all, on any rank
        return sums
    tokens = max(float(batch.mask.sum()), 1.0)
    inputs = (batch.input_ids, batch.attention, batch.positions, batch.prompt_width)
    was_training = model.training
    model.train()
    try:
        for iteration in range(num_iterations):
            optimizer.zero_grad(set_to_none=True)
            for start in range(0, B, micro_batch_size):
                rows = slice(start, start + micro_batch_size)
                mask = batch.mask[rows].to(device)
                with autocast(bf16, device):
                    logp, entropy = completion_logprobs(model, **_rows(inputs, rows), temperature=temperature,
                                                        with_entropy=True)
                old = batch.old_logp[rows].to(device) if batch.old_logp is not None else logp.detach()
                if iteration == 0 and mask.any():
                    error = (logp.detach() - old)[mask].exp().sub(1).abs().max()
                    sums["first_ratio_error"] = max(sums["first_ratio_error"], float(error))
                per_token, stats = loss_fn(logp, old, batch.advantages[rows].to(device), mask,
                                           eps_low=algo.eps_low, eps_high=algo.eps_high)
                if algo.kl_coef > 0 and batch.ref_logp is not None:
                    kl = kl_fn(logp, batch.ref_logp[rows].to(device))
                    per_token = per_token + algo.kl_coef * kl
                    sums["kl"] += float(torch.where(mask, kl.detach(), 0.0).sum()) / tokens / num_iterations
                loss = aggregate(algo.aggregation, per_token, mask, **totals) * d.world
                loss.backward()
                share = float(mask.sum()) / tokens / num_iterations
                sums["loss"] += float(loss.detach()) / d.world / num_iterations
                sums["clip_frac"] += float(stats["clip_frac"]) * share
                sums["entropy"] += float(torch.where(mask, entropy, 0.0).sum()) / tokens / num_iterations
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            sums["grad_norm"] += float(grad_norm) / num_iterations
            optimizer.step()
    finally:
        model.train(was_training)
    return sums
