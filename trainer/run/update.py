"""One policy update: the loss over a scored batch, accumulated over micro-batches (and ranks).

Aggregation totals (tokens, sequences) are those of the *whole* batch across ranks, and the
loss is scaled by the world size because DDP averages gradients: so micro-batching and data
parallelism leave the gradient equal to the single-process, single-pass one.

Old and reference log-probs (:func:`batch_logprobs`) go through the very forward the update
uses: the same layout and micro-batches (padded or packed, :mod:`botgrpo.trainer.models.policy`), the same
autocast, dropout off. So on the first pass the ratio is exactly 1 (``first_ratio_error`` in the
diagnostics says how far from 1 it is). With an asynchronous pipeline the old log-probs are the
behaviour policy's, as the engine returned them, and the ratio is against those.

One optimizer step is an :class:`Update`: parts of the batch added (forward and backward), then
finished (normalise, clip, step). A batch update is an update with one part, the whole batch
(:func:`policy_update`: one per iteration); the on-policy loop's group-streamed update feeds it a
few groups at a time as their scores arrive, with the token normaliser applied at the end.
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
    """``num_iterations`` optimizer steps on ``batch``, each an :class:`Update` with the batch as
    its one part; returns the diagnostics averaged over them (:func:`mean_of_passes`)."""
    passes = []
    for iteration in range(num_iterations):
        update = Update(model, optimizer, algo, rows=batch.mask.shape[0], norm_len=norm_len, d=d,
                        temperature=temperature, micro_batch_size=micro_batch_size, bf16=bf16,
                        first_pass=iteration == 0)
        update.add(batch)
        passes.append(update.finish(max_grad_norm))
    return mean_of_passes(passes)


DIAGNOSTICS = ("loss", "clip_frac", "kl", "entropy", "grad_norm", "skipped", "first_ratio_error")
MEANS = ("loss", "clip_frac", "kl", "entropy", "grad_norm")  # averaged over a batch's iterations


def mean_of_passes(passes: list[dict[str, float]]) -> dict[str, float]:
    """A batch's diagnostics from its passes' (one per iteration): the mean of :data:`MEANS`, the
    largest first-pass ratio error, skipped if any pass was."""
    out = dict.fromkeys(DIAGNOSTICS, 0.0)
    for step in passes:
        for key in MEANS:
            out[key] += step[key] / len(passes)
        for key in ("skipped", "first_ratio_error"):
            out[key] = max(out[key], step[key])
    return out


# Aggregation -> whether its normaliser is the batch's loss-token count. That count is known only
# once the last group is scored (unscored rollouts and dynamic sampling remove rows), so a
# streamed update aggregates with a unit count and divides the summed gradient by the count at
# the end; the other totals (``num_seqs``: the batch's rows, ``norm_len``) are known before any
# score. An aggregation missing here is not streamed (the batch comes as one part).
STREAMABLE_AGGREGATIONS: dict[str, bool] = {
    "token-mean": True,
    "seq-mean-token-mean": False,
    "seq-mean-token-sum-norm": False,
}


class Update:
    """One optimizer step over a batch fed in parts: :meth:`add` runs a part's micro-batches'
    forward and backward (gradients accumulate), :meth:`finish` normalises, clips and steps once.
    A batch update is an update with one part, the whole batch; the group-streamed update
    (:mod:`botgrpo.trainer.run.streamed`) adds a few whole groups at a time, their advantages
    final, as their scores arrive.

    The aggregation's totals are the whole batch's over every rank: ``num_seqs`` (its rows) and
    ``norm_len`` are known before any score, ``num_tokens`` (its loss tokens) once the loss mask
    is. A batch that comes whole knows it at :meth:`add`: each micro-batch's loss is divided by it.
    ``streamed``, it is known only when the last group is in: micro-batches aggregate with a unit
    count and :meth:`finish` divides the summed gradient by the count. The two give the same
    gradient to float rounding: every policy loss and KL estimator is per row, each aggregation in
    :data:`STREAMABLE_AGGREGATIONS` is linear in per-row terms over a normaliser fixed by then, and
    rows a part leaves out of the loss (mask all False) add exactly zero gradient. Streamed is
    on-policy and single-process only: old log-probs are the forward's own (detached), and under
    DDP every rank would need the same number of backwards.
    """

    def __init__(self, model, optimizer, algo: AlgorithmSettings, *, rows: int, norm_len: int, d: Dist,
                 temperature: float, micro_batch_size: int, bf16: bool = False, streamed: bool = False,
                 first_pass: bool = True):
        if streamed and algo.aggregation not in STREAMABLE_AGGREGATIONS:
            raise ValueError(f"loss aggregation {algo.aggregation!r} cannot be streamed")
        self.model, self.optimizer, self.algo, self.d = model, optimizer, algo, d
        self.temperature, self.micro_batch_size, self.bf16 = temperature, micro_batch_size, bf16
        self.streamed, self.first_pass = streamed, first_pass
        self.loss_fn = lookup(POLICY_LOSSES, algo.policy_loss, "policy loss")
        self.kl_fn = lookup(KL_ESTIMATORS, algo.kl_estimator, "KL estimator")
        self.totals = {"num_tokens": 1.0 if streamed else None, "num_seqs": global_sum(rows, d), "norm_len": norm_len}
        self.raw = _RawStats()
        optimizer.zero_grad(set_to_none=True)

    def add(self, part: UpdateBatch) -> None:
        """Forward and backward of ``part``'s micro-batches in train mode. Not streamed, ``part``
        is the whole batch (this rank's share) and the one part."""
        if not self.streamed:
            if self.totals["num_tokens"] is not None:
                raise ValueError("an update that is not streamed takes the whole batch as its one part")
            self.totals["num_tokens"] = global_sum(part.mask.sum().item(), self.d)
            if self.totals["num_tokens"] == 0:  # nothing in the loss on any rank: no forward, no step
                return
        layout = part.layout_for(self.micro_batch_size)
        was_training = self.model.training
        self.model.train()
        try:
            for mb in layout.micro_batches:
                self._backward(layout, mb, part)
        finally:
            self.model.train(was_training)

    def finish(self, max_grad_norm: float) -> dict[str, float]:
        """Scale the accumulated gradient to the batch's normaliser (streamed), clip it by its
        global norm, step; the step's diagnostics. No loss token in the whole batch: no step at
        all, on any rank (Adam would still move the weights on its momentum)."""
        raw = self.raw
        tokens = raw.tokens if self.streamed else self.totals["num_tokens"]  # the batch's loss tokens
        if not tokens:
            self.optimizer.zero_grad(set_to_none=True)
            return _no_step()
        scale = tokens if self.streamed and STREAMABLE_AGGREGATIONS[self.algo.aggregation] else 1.0
        if scale != 1.0:
            with torch.no_grad():
                for p in self.model.parameters():
                    if p.grad is not None:
                        p.grad.div_(scale)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_grad_norm))
        self.optimizer.step()
        count = max(raw.tokens, 1.0)  # this rank's loss tokens (none on a rank: zeros, not a division by zero)
        return {"loss": raw.loss / self.d.world / scale, "clip_frac": raw.clip_frac / count, "kl": raw.kl / count,
                "entropy": raw.entropy / count, "grad_norm": grad_norm, "skipped": 0.0,
                "first_ratio_error": raw.first_ratio_error}

    def _backward(self, layout, mb, part: UpdateBatch) -> None:
        """Forward and backward of one micro-batch of ``part``, its diagnostics added up; the loss
        is aggregated with the batch's totals and scaled by the world size (DDP averages gradients)."""
        algo, raw = self.algo, self.raw
        device = next(self.model.parameters()).device
        rows = mb.rows
        mask = part.mask[rows].to(device)
        with autocast(self.bf16, device):
            logp, entropy = layout.logprobs(self.model, mb, temperature=self.temperature, with_entropy=True)
        old = part.old_logp[rows].to(device) if part.old_logp is not None else logp.detach()
        if self.first_pass and mask.any():
            error = (logp.detach() - old)[mask].exp().sub(1).abs().max()
            raw.first_ratio_error = max(raw.first_ratio_error, float(error))
        per_token, stats = self.loss_fn(logp, old, part.advantages[rows].to(device), mask,
                                        eps_low=algo.eps_low, eps_high=algo.eps_high)
        if algo.kl_coef > 0 and part.ref_logp is not None:
            kl = self.kl_fn(logp, part.ref_logp[rows].to(device))
            per_token = per_token + algo.kl_coef * kl
            raw.kl += float(torch.where(mask, kl.detach(), 0.0).sum())
        loss = aggregate(algo.aggregation, per_token, mask, **self.totals) * self.d.world
        loss.backward()
        count = float(mask.sum())
        raw.loss += float(loss.detach())
        raw.clip_frac += float(stats["clip_frac"]) * count
        raw.entropy += float(torch.where(mask, entropy, 0.0).sum())
        raw.tokens += count


def _no_step() -> dict[str, float]:
    """The diagnostics of an update with no loss token: nothing stepped."""
    return {**dict.fromkeys(DIAGNOSTICS, 0.0), "skipped": 1.0}


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
