"""One policy update: the loss over a scored batch, accumulated over micro-batches (and ranks).

Aggregation totals (tokens, sequences) are those of the *whole* batch across ranks, and the
loss is scaled by the world size because DDP averages gradients: so micro-batching and data
parallelism leave the gradient equal to the single-process, single-pass one.

Old and reference log-probs (:func:`batch_logprobs`) go through the very forward the update
uses: the same layout and micro-batches (padded or packed, :mod:`botgrpo.trainer.models.policy`), the same
autocast, dropout off. So on the first pass the ratio is exactly 1 (``first_ratio_error`` in the
diagnostics says how far from 1 it is). With an asynchronous pipeline the old log-probs are the
behaviour policy's, as the engine returned them, and the ratio is against those.

:class:`StreamedUpdate` is the same single-pass update fed a batch a few groups at a time, as
their scores arrive (the on-policy loop's group-streamed update): gradients accumulate with a
unit token normaliser and are divided by the batch's token count once the last group is in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from botgrpo.trainer.algo.losses import KL_ESTIMATORS, POLICY_LOSSES, aggregate, lookup
from botgrpo.trainer.algo.settings import AlgorithmSettings
from botgrpo.trainer.models.policy import PaddedLayout
from botgrpo.trainer.models.precision import autocast
from botgrpo.trainer.run.distributed import Dist, global_sum


@dataclass
class UpdateBatch:
    """A scored batch for the update: its layout (a packed or padded layout, or the padded tensors
    of :func:`botgrpo.trainer.models.policy.pack`, split into micro-batches when the update runs) and,
    per completion token, what the loss needs."""

    layout: Any                  # a layout, or pack()'s (input_ids, attention, positions, prompt_width)
    mask: torch.Tensor           # (B, T) completion tokens taking part in the loss
    advantages: torch.Tensor     # (B, T)
    old_logp: Optional[torch.Tensor] = None   # (B, T): num_iterations > 1, or the behaviour policy's (async)
    ref_logp: Optional[torch.Tensor] = None   # (B, T) when kl_coef > 0

    def layout_for(self, micro_batch_size: int):
        return _layout(self.layout, micro_batch_size)


def _layout(inputs, micro_batch_size: int):
    return PaddedLayout(inputs, micro_batch_size) if isinstance(inputs, tuple) else inputs


@torch.no_grad()
def batch_logprobs(model, inputs, *, temperature: float, micro_batch_size: int, bf16: bool) -> torch.Tensor:
    """``(B, T)`` log-probs on CPU, in the update's layout, micro-batches and autocast (eval mode,
    no grad). ``inputs``: :func:`botgrpo.trainer.models.policy.pack`'s tuple or a layout."""
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
    loss_fn = lookup(POLICY_LOSSES, algo.policy_loss, "policy loss")
    kl_fn = lookup(KL_ESTIMATORS, algo.kl_estimator, "KL estimator")
    totals = {"num_tokens": global_sum(batch.mask.sum().item(), d),
              "num_seqs": global_sum(batch.mask.shape[0], d), "norm_len": norm_len}
    if totals["num_tokens"] == 0:  # every group filtered out (e.g. dynamic sampling): Adam would still
        return _no_step()          # move the weights on its momentum, so no step at all, on any rank
    sums = dict.fromkeys(DIAGNOSTICS, 0.0)
    tokens = max(float(batch.mask.sum()), 1.0)
    layout = batch.layout_for(micro_batch_size)
    was_training = model.training
    model.train()
    try:
        for iteration in range(num_iterations):
            optimizer.zero_grad(set_to_none=True)
            raw = _RawStats()
            for mb in layout.micro_batches:
                _micro_batch_backward(model, layout, mb, batch, algo, loss_fn, kl_fn, totals, raw,
                                      temperature=temperature, bf16=bf16, world=d.world, first_pass=iteration == 0)
            step = _diagnostics(raw, tokens, raw.loss / d.world, _clip_and_step(model, optimizer, max_grad_norm))
            for key in MEANS:  # over the iterations
                sums[key] += step[key] / num_iterations
            sums["first_ratio_error"] = max(sums["first_ratio_error"], step["first_ratio_error"])
    finally:
        model.train(was_training)
    return sums


DIAGNOSTICS = ("loss", "clip_frac", "kl", "entropy", "grad_norm", "skipped", "first_ratio_error")
MEANS = ("loss", "clip_frac", "kl", "entropy", "grad_norm")  # averaged over a batch's iterations


def _no_step() -> dict[str, float]:
    """The diagnostics of an update with no loss token: nothing stepped."""
    return {**dict.fromkeys(DIAGNOSTICS, 0.0), "skipped": 1.0}


def _clip_and_step(model, optimizer, max_grad_norm: float) -> float:
    """Clip the accumulated gradient by its global norm, step; the norm before clipping."""
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
    optimizer.step()
    return grad_norm


def _diagnostics(raw: "_RawStats", tokens: float, loss: float, grad_norm: float) -> dict[str, float]:
    """One optimizer step's diagnostics: per-token means of clip fraction, KL and entropy over
    ``tokens`` loss tokens, the (already normalised) ``loss`` and the gradient norm."""
    return {"loss": loss, "clip_frac": raw.clip_frac / tokens, "kl": raw.kl / tokens, "entropy": raw.entropy / tokens,
            "grad_norm": grad_norm, "skipped": 0.0, "first_ratio_error": raw.first_ratio_error}


@dataclass
class _RawStats:
    """Unnormalised diagnostics of some micro-batches: sums over their loss tokens (clip
    fraction and KL and entropy), the summed loss, the largest first-pass |ratio - 1|."""
    loss: float = 0.0
    clip_frac: float = 0.0
    kl: float = 0.0
    entropy: float = 0.0
    first_ratio_error: float = 0.0
    tokens: float = 0.0


def _micro_batch_backward(model, layout, mb, batch: UpdateBatch, algo: AlgorithmSettings, loss_fn, kl_fn,
                          totals: dict, raw: _RawStats, *, temperature: float, bf16: bool, world: int,
                          first_pass: bool) -> None:
    """Forward and backward of one micro-batch of ``batch`` (gradients accumulate), its
    diagnostics added to ``raw``; the loss is aggregated with ``totals`` and scaled by ``world``."""
    device = next(model.parameters()).device
    rows = mb.rows
    mask = batch.mask[rows].to(device)
    with autocast(bf16, device):
        logp, entropy = layout.logprobs(model, mb, temperature=temperature, with_entropy=True)
    old = batch.old_logp[rows].to(device) if batch.old_logp is not None else logp.detach()
    if first_pass and mask.any():
        error = (logp.detach() - old)[mask].exp().sub(1).abs().max()
        raw.first_ratio_error = max(raw.first_ratio_error, float(error))
    per_token, stats = loss_fn(logp, old, batch.advantages[rows].to(device), mask,
                               eps_low=algo.eps_low, eps_high=algo.eps_high)
    if algo.kl_coef > 0 and batch.ref_logp is not None:
        kl = kl_fn(logp, batch.ref_logp[rows].to(device))
        per_token = per_token + algo.kl_coef * kl
        raw.kl += float(torch.where(mask, kl.detach(), 0.0).sum())
    loss = aggregate(algo.aggregation, per_token, mask, **totals) * world
    loss.backward()
    count = float(mask.sum())
    raw.loss += float(loss.detach())
    raw.clip_frac += float(stats["clip_frac"]) * count
    raw.entropy += float(torch.where(mask, entropy, 0.0).sum())
    raw.tokens += count


# Aggregation -> whether its normaliser is the batch's loss-token count. That count is known only
# once the last group is scored (unscored rollouts and dynamic sampling remove rows), so a
# streamed update aggregates with a unit count and divides the summed gradient by the count at
# the end; the other totals (``num_seqs``: the batch's rows, ``norm_len``) are known before any
# score. An aggregation missing here is not streamed (the batch path runs).
STREAMABLE_AGGREGATIONS: dict[str, bool] = {
    "token-mean": True,
    "seq-mean-token-mean": False,
    "seq-mean-token-sum-norm": False,
}


class StreamedUpdate:
    """One optimizer step over a batch whose parts (whole groups, advantages final) arrive one
    at a time: :meth:`add` runs a part's micro-batches' forward and backward, accumulating
    gradients; :meth:`finish` scales them by the batch's normaliser, clips and steps once.

    The same gradient as :func:`policy_update` with ``num_iterations=1`` on the whole batch, to
    float rounding: every policy loss and KL estimator is per row, each aggregation in
    :data:`STREAMABLE_AGGREGATIONS` is linear in per-row terms over a normaliser fixed by then,
    and rows a part leaves out of the loss (mask all False) add exactly zero gradient, so they are
    not run at all. On-policy and single-process only: old log-probs are the forward's own
    (detached), and under DDP every rank would need the same number of backwards.
    """

    def __init__(self, model, optimizer, algo: AlgorithmSettings, *, rows: int, temperature: float,
                 norm_len: int, bf16: bool = False):
        if algo.aggregation not in STREAMABLE_AGGREGATIONS:
            raise ValueError(f"loss aggregation {algo.aggregation!r} cannot be streamed")
        self.model, self.optimizer, self.algo = model, optimizer, algo
        self.temperature, self.bf16 = temperature, bf16
        self.by_tokens = STREAMABLE_AGGREGATIONS[algo.aggregation]
        self.totals = {"num_tokens": 1.0, "num_seqs": float(rows), "norm_len": norm_len}
        self.loss_fn = lookup(POLICY_LOSSES, algo.policy_loss, "policy loss")
        self.kl_fn = lookup(KL_ESTIMATORS, algo.kl_estimator, "KL estimator")
        self.raw = _RawStats()
        self.backwards = 0
        optimizer.zero_grad(set_to_none=True)

    def add(self, layout, mask: torch.Tensor, advantages: torch.Tensor,
            ref_logp: Optional[torch.Tensor] = None) -> None:
        """Forward and backward of ``layout``'s micro-batches (``mask``, ``advantages`` and
        ``ref_logp`` are ``(n, T)`` over the layout's rows); micro-batches without a loss token are skipped."""
        part = UpdateBatch(layout, mask, advantages, None, ref_logp)
        was_training = self.model.training
        self.model.train()
        try:
            for mb in layout.micro_batches:
                if not bool(mask[mb.rows].any()):
                    continue
                _micro_batch_backward(self.model, layout, mb, part, self.algo, self.loss_fn, self.kl_fn, self.totals,
                                      self.raw, temperature=self.temperature, bf16=self.bf16, world=1, first_pass=True)
                self.backwards += 1
        finally:
            self.model.train(was_training)

    def finish(self, max_grad_norm: float) -> dict[str, float]:
        """Scale the accumulated gradient to the batch's normaliser, clip, step; the diagnostics
        :func:`policy_update` returns. No loss token at all: no step (as there)."""
        raw, tokens = self.raw, self.raw.tokens
        if tokens == 0:
            self.optimizer.zero_grad(set_to_none=True)
            return {**_no_step(), "first_ratio_error": raw.first_ratio_error}
        if self.by_tokens:
            with torch.no_grad():
                for p in self.model.parameters():
                    if p.grad is not None:
                        p.grad.div_(tokens)
        loss = raw.loss / tokens if self.by_tokens else raw.loss
        return _diagnostics(raw, tokens, loss, _clip_and_step(self.model, self.optimizer, max_grad_norm))
