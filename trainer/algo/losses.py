"""Policy losses, loss aggregation and KL estimators: three independent registries.

A training step composes one of each::

    per_token, stats = POLICY_LOSSES[name](logp, old_logp, advantages, mask, **options)
    loss = AGGREGATIONS[mode](per_token + beta * KL_ESTIMATORS[k](logp, ref_logp), mask)

All tensors are ``(B, T)``; ``mask`` is True on completion tokens. Policy losses return the
per-token loss (to be minimised) and a dict of detached diagnostics (``clip_frac``, ratios).
"""
from __future__ import annotations

from typing import Callable, Optional

import torch
from torch import Tensor

PolicyLoss = Callable[..., tuple[Tensor, dict[str, Tensor]]]
Aggregation = Callable[..., Tensor]
KLEstimator = Callable[[Tensor, Tensor], Tensor]

POLICY_LOSSES: dict[str, PolicyLoss] = {}
AGGREGATIONS: dict[str, Aggregation] = {}
KL_ESTIMATORS: dict[str, KLEstimator] = {}


def _registrar(registry: dict, kind: str):
    def register(name: str):
        def add(fn):
            if name in registry:
                raise ValueError(f"{kind} {name!r} is already registered")
            registry[name] = fn
            return fn
        return add
    return register


register_policy_loss = _registrar(POLICY_LOSSES, "policy loss")
register_aggregation = _registrar(AGGREGATIONS, "loss aggregation")
register_kl = _registrar(KL_ESTIMATORS, "KL estimator")


def lookup(registry: dict, name: str, kind: str):
    """``registry[name]``, or a ValueError that lists the valid names."""
    try:
        return registry[name]
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {sorted(registry)}") from None


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return torch.where(mask, x, 0.0).sum() / mask.sum().clamp_min(1)


def _clip_stats(ratio: Tensor, clipped: Tensor, mask: Tensor) -> dict[str, Tensor]:
    return {"clip_frac": _masked_mean(clipped.float(), mask).detach(),
            "ratio_mean": _masked_mean(ratio, mask).detach()}


# --------------------------------------------------------------------------- policy losses
def _clipped_surrogate(ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float) -> tuple[Tensor, Tensor]:
    """``-min(rho A, clip(rho, 1-eps_low, 1+eps_high) A)`` and where the clip was active."""
    unclipped = -ratio * adv
    clipped = -ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * adv
    return torch.maximum(unclipped, clipped), clipped > unclipped


@register_policy_loss("ppo_clip")
def ppo_clip(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, *,
             eps_low: float = 0.2, eps_high: float = 0.2) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO-clip per token with asymmetric range (DAPO's clip-higher when ``eps_high > eps_low``)::

        rho_it = exp(logp_it - old_logp_it)
        l_it   = -min(rho_it A_it, clip(rho_it, 1 - eps_low, 1 + eps_high) A_it)
    """
    ratio = torch.exp(logp - old_logp)
    loss, clipped = _clipped_surrogate(ratio, advantages, eps_low, eps_high)
    return loss, _clip_stats(ratio, clipped, mask)


@register_policy_loss("dual_clip")
def dual_clip(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, *,
              eps_low: float = 0.2, eps_high: float = 0.2, clip_c: float = 3.0) -> tuple[Tensor, dict[str, Tensor]]:
    """Dual-clip PPO: PPO-clip, and for ``A < 0`` the loss is also capped at ``-c A``::

        l_it = min(l^clip_it, -c A_it)   if A_it < 0   else   l^clip_it

    so a token whose ratio has exploded cannot produce an unbounded update (``c > 1``).
    """
    if clip_c <= 1.0:
        raise ValueError(f"dual_clip needs clip_c > 1, got {clip_c}")
    ratio = torch.exp(logp - old_logp)
    loss, clipped = _clipped_surrogate(ratio, advantages, eps_low, eps_high)
    cap = -clip_c * advantages
    capped = (advantages < 0) & (loss > cap)
    return torch.where(capped, cap, loss), _clip_stats(ratio, clipped | capped, mask)


def _sequence_log_ratio(logp: Tensor, old_logp: Tensor, mask: Tensor) -> Tensor:
    """``(B,)``: ``(1/L_i) sum_t (logp_it - old_logp_it)``, the log of GSPO's sequence ratio."""
    lengths = mask.sum(dim=1).clamp_min(1)
    return torch.where(mask, logp - old_logp, 0.0).sum(dim=1) / lengths


@register_policy_loss("gspo")
def gspo(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, *,
         eps_low: float = 3e-4, eps_high: float = 4e-4) -> tuple[Tensor, dict[str, Tensor]]:
    """GSPO: one length-normalised importance ratio per sequence, clipped per sequence::

        s_i = exp( (1/L_i) sum_t (logp_it - old_logp_it) )
        l_i = -min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i),   A_i = mean_t A_it

    ``l_i`` is placed on each of rollout i's tokens, so ``seq-mean-token-mean`` aggregation gives
    GSPO's sequence mean.
    """
    lengths = mask.sum(dim=1).clamp_min(1)
    seq_adv = torch.where(mask, advantages, 0.0).sum(dim=1) / lengths
    ratio = torch.exp(_sequence_log_ratio(logp, old_logp, mask))
    loss, clipped = _clipped_surrogate(ratio, seq_adv, eps_low, eps_high)
    per_token = loss[:, None].expand_as(logp)
    return per_token, _clip_stats(ratio[:, None].expand_as(logp), clipped[:, None].expand_as(mask), mask)


@register_policy_loss("gspo_token")
def gspo_token(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, *,
               eps_low: float = 3e-4, eps_high: float = 4e-4) -> tuple[Tensor, dict[str, Tensor]]:
    """GSPO-token: GSPO's sequence ratio in value, a token's own ratio in gradient::

        s_it = sg[s_i] * pi(y_it) / sg[pi(y_it)]
        l_it = -min(s_it A_it, clip(s_it, 1 - eps_low, 1 + eps_high) A_it)

    Equal to GSPO when all of a rollout's advantages are equal; accepts per-token advantages.
    """
    seq_log_ratio = _sequence_log_ratio(logp, old_logp, mask).detach()
    ratio = torch.exp(logp - logp.detach() + seq_log_ratio[:, None])
    loss, clipped = _clipped_surrogate(ratio, advantages, eps_low, eps_high)
    return loss, _clip_stats(ratio, clipped, mask)


# --------------------------------------------------------------------------- aggregation
# Every aggregation takes the same optional totals, so a caller that splits a batch into
# micro-batches (or ranks) passes the whole batch's once and ignores which mode is in use.
@register_aggregation("token-mean")
def token_mean(per_token: Tensor, mask: Tensor, *, num_tokens: Optional[float] = None,
               num_seqs: Optional[float] = None, norm_len: Optional[float] = None) -> Tensor:
    """``sum_{i,t} l_it / N`` with N the number of completion tokens (or ``num_tokens``, e.g.
    the whole batch's count across micro-batches and ranks). Every token weighs the same (DAPO)."""
    denom = mask.sum() if num_tokens is None else torch.as_tensor(num_tokens, dtype=per_token.dtype)
    return torch.where(mask, per_token, 0.0).sum() / denom.clamp_min(1)


@register_aggregation("seq-mean-token-mean")
def seq_mean_token_mean(per_token: Tensor, mask: Tensor, *, num_tokens: Optional[float] = None,
                        num_seqs: Optional[float] = None, norm_len: Optional[float] = None) -> Tensor:
    """``mean_i (1/L_i) sum_t l_it`` over rollouts with tokens (GRPO's original form): every
    rollout weighs the same, so long rollouts' tokens weigh less. ``num_seqs``: whole-batch count."""
    lengths = mask.sum(dim=1)
    per_seq = torch.where(mask, per_token, 0.0).sum(dim=1) / lengths.clamp_min(1)
    denom = (lengths > 0).sum() if num_seqs is None else torch.as_tensor(num_seqs, dtype=per_token.dtype)
    return per_seq.sum() / denom.clamp_min(1)


@register_aggregation("seq-mean-token-sum-norm")
def seq_mean_token_sum_norm(per_token: Tensor, mask: Tensor, *, num_tokens: Optional[float] = None,
                            num_seqs: Optional[float] = None, norm_len: Optional[float] = None) -> Tensor:
    """``(1/B) sum_i sum_t l_it / norm_len`` with a constant ``norm_len`` (default: T, the padded
    width; the trainer passes max_new_tokens): Dr. GRPO's length-unbiased sum."""
    norm = per_token.shape[1] if norm_len is None else norm_len
    seqs = per_token.shape[0] if num_seqs is None else num_seqs
    return torch.where(mask, per_token, 0.0).sum() / (max(seqs, 1) * max(norm, 1))


def aggregate(mode: str, per_token: Tensor, mask: Tensor, **options) -> Tensor:
    """Reduce a per-token loss to a scalar with the aggregation registered as ``mode``."""
    return lookup(AGGREGATIONS, mode, "loss aggregation")(per_token, mask, **options)


# --------------------------------------------------------------------------- KL estimators
# Schulman's estimators of KL(pi || pi_ref) from samples of pi, with log r = logp_ref - logp.
@register_kl("k1")
def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``k1 = logp - logp_ref`` (unbiased, high variance, can be negative)."""
    return logp - ref_logp


@register_kl("k2")
def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``k2 = (logp - logp_ref)^2 / 2`` (biased, low variance, non-negative)."""
    return 0.5 * (logp - ref_logp) ** 2


@register_kl("k3")
def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1`` (unbiased, non-negative; GRPO's)."""
    log_r = ref_logp - logp
    return torch.expm1(log_r) - log_r
