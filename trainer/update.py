"""One policy update: the loss over a scored batch, accumulated over micro-batches (and ranks).

Aggregation totals (tokens, sequences) are those of the *whole* batch across ranks, and the
loss is scaled by the world size because DDP averages gradients: so micro-batching and data
parallelism leave the gradient equal to the single-process, single-pass one.

Old and reference log-probs (:func:`batch_logprobs`) go through the very forward the update
uses: the same layout and micro-batches (padded or packed, :mod:`trainer.policy`), the same
autocast, dropout off. So on the first pass the ratio is exactly 1 (``first_ratio_error`` in the
diagnostics says how far from 1 it is). With an asynchronous pipeline the old log-probs are the
behaviour policy's, as the engine returned them, and the ratio is against those.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from trainer.algorithm import AlgorithmSettings
from trainer.distributed import Dist, global_sum
from trainer.losses import KL_ESTIMATORS, POLICY_LOSSES, aggregate, lookup
from trainer.policy import PaddedLayout
from trainer.precision import autocast


@dataclass
class UpdateBatch:
    """A scored batch for the update: the padded tensors of :func:`trainer.policy.pack` (positional,
    as before), or any layout (:meth:`from_layout`, e.g. packed)."""

    input_ids: Optional[torch.Tensor]      # (B, W + T)
    attention: Optional[torch.Tensor]
    positions: Optional[torch.Tensor]
    prompt_width: int
    mask: torch.Tensor           # (B, T) completion tokens taking part in the loss
    advantages: torch.Tensor     # (B, T)
    old_logp: Optional[torch.Tensor] = None   # (B, T): num_iterations > 1, or the behaviour policy's (async)
    ref_logp: Optional[torch.Tensor] = None   # (B, T) when kl_coef > 0
    layout: Any = None

    @classmethod
    def from_layout(cls, layout, mask: torch.Tensor, advantages: torch.Tensor, old_logp: Optional[torch.Tensor] = None,
                    ref_logp: Optional[torch.Tensor] = None) -> "UpdateBatch":
        return cls(None, None, None, 0, mask, advantages, old_logp, ref_logp, layout=layout)

    def layout_for(self, micro_batch_size: int):
        if self.layout is not None:
            return self.layout
        return PaddedLayout((self.input_ids, self.attention, self.positions, self.prompt_width), micro_batch_size)


def _layout(inputs, micro_batch_size: int):
    return PaddedLayout(inputs, micro_batch_size) if isinstance(inputs, tuple) else inputs


@torch.no_grad()
def batch_logprobs(model, inputs, *, temperature: float, micro_batch_size: int, bf16: bool) -> torch.Tensor:
    """``(B, T)`` log-probs on CPU, in the update's layout, micro-batches and autocast (eval mode,
    no grad). ``inputs``: :func:`trainer.policy.pack`'s tuple or a layout."""
    device = next(model.parameters()).device
    layout = _layout(inputs, micro_batch_size)
    was_training = model.training
    model.eval()
    try:
        out = torch.zeros(layout.shape)
        for mb in layout.micro_batches:
            with autocast(bf16, device):
                out[mb.rows] = layout.logprobs(model, mb, temperature=temperature).cpu()
        return out
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
    sums = {"loss": 0.0, "clip_frac": 0.0, "kl": 0.0, "entropy": 0.0, "grad_norm": 0.0, "skipped": 0.0,
            "first_ratio_error": 0.0}
    if totals["num_tokens"] == 0:  # every group filtered out (e.g. dynamic sampling): Adam would still
        sums["skipped"] = 1.0      # move the weights on its momentum, so no step at all, on any rank
        return sums
    tokens = max(float(batch.mask.sum()), 1.0)
    layout = batch.layout_for(micro_batch_size)
    was_training = model.training
    model.train()
    try:
        for iteration in range(num_iterations):
            optimizer.zero_grad(set_to_none=True)
            for mb in layout.micro_batches:
                rows = mb.rows
                mask = batch.mask[rows].to(device)
                with autocast(bf16, device):
                    logp, entropy = layout.logprobs(model, mb, temperature=temperature, with_entropy=True)
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
