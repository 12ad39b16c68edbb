"""Advantage estimators: pure tensor functions from rewards to per-token advantages.

Every estimator takes the same batch layout and is vectorised over groups with segment
reductions (``index_add``), so its cost is a few passes over the ``(B, T)`` tensor whatever the
number or order of groups.

Shared conventions (see ``docs/algorithms.md`` for the derivations):

* ``token_rewards`` ``(B, T)``: reward of each completion token; ignored where ``mask`` is False.
* ``mask`` ``(B, T)`` bool: True on completion tokens. ``L_i`` is row i's token count.
* ``group_ids`` ``(B,)`` int: rollouts of one prompt share an id; ids may be any integers in any
  order (groups may be interleaved).
* ``seq_rewards`` ``(B,)`` or None: sequence-level estimators use it when given, else each
  rollout's mean token reward ``R_i = sum_t r_it / L_i``.
* A rollout takes part in its group's statistics when its reward is defined: when its
  ``seq_rewards`` entry is finite if given (NaN marks a rollout nobody could score), else (and
  always for token-level estimators) only when ``L_i > 0``.
* Where a spread is undefined or zero (a group of one, all-equal rewards) the advantage is exactly
  0.0, never NaN. Output is exactly 0.0 where ``mask`` is False.
* Arithmetic runs in float32 (float64 inputs stay float64); the result has the rewards' dtype.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

import torch
from torch import Tensor

from botgrpo.services.recipe import DEFAULT_LOCAL_WEIGHT

Estimator = Callable[..., Tensor]
ESTIMATORS: dict[str, Estimator] = {}


def register(name: str) -> Callable[[Estimator], Estimator]:
    """Add an estimator to :data:`ESTIMATORS` under ``name``."""

    def add(fn: Estimator) -> Estimator:
        if name in ESTIMATORS:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        ESTIMATORS[name] = fn
        return fn

    return add


# --------------------------------------------------------------------------- segment helpers
class _Groups:
    """Dense group indices and per-group reductions for one batch."""

    def __init__(self, group_ids: Tensor):
        _, self.index = torch.unique(group_ids, return_inverse=True)
        self.count = int(self.index.max()) + 1 if self.index.numel() else 0

    def sum(self, per_rollout: Tensor) -> Tensor:
        """``(B,) -> (G,)``: sum of each group's members."""
        out = per_rollout.new_zeros(self.count)
        return out.index_add_(0, self.index, per_rollout)

    def gather(self, per_group: Tensor) -> Tensor:
        """``(G,) -> (B,)``: each rollout's group value."""
        return per_group[self.index]


def _compute_dtype(t: Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def _safe_div(num: Tensor, den: Tensor) -> Tensor:
    """``num / den`` with 0 where ``den == 0`` (no NaN, no inf)."""
    return torch.where(den > 0, num / den.clamp_min(torch.finfo(num.dtype).tiny), torch.zeros_like(num))


def _pick_per_group(values: Tensor, valid: Tensor, groups: _Groups) -> Tensor:
    """``(B,)``: for each rollout, one valid member's value from its group (0 if none is valid).

    Subtracting such an observed value before taking moments ("shifted data") keeps them
    accurate, and makes a group whose rewards are all equal produce exact zeros, hence an
    advantage of exactly 0.0 rather than rounding noise divided by ``eps``.
    """
    picked = values.new_zeros(groups.count)
    picked.index_put_((groups.index[valid],), values[valid])  # any member will do
    return groups.gather(picked)


def _first_token_values(r: Tensor, mask: Tensor) -> Tensor:
    """``(B,)`` reward of each rollout's first completion token (0 for a rollout with none:
    what lies under its padding, NaN or inf, must not reach the group's statistics).

    Right-padded rows start at column 0, so only the other rows pay for an ``argmax``.
    """
    index = torch.zeros(r.shape[0], dtype=torch.long, device=r.device)
    late = (~mask[:, 0]).nonzero().squeeze(1)
    first = r.gather(1, index[:, None]).squeeze(1)
    if late.numel():
        late_mask = mask[late].view(torch.uint8)
        values = r[late].gather(1, late_mask.argmax(dim=1, keepdim=True)).squeeze(1)
        first[late] = torch.where(late_mask.amax(dim=1) > 0, values, torch.zeros_like(values))
    return first


def _lengths(mask: Tensor) -> Tensor:
    """``(B,)`` float64 completion-token counts (summed through a uint8 view: bool sums are slow)."""
    return mask.view(torch.uint8).sum(dim=1, dtype=torch.float64)


def sequence_rewards(token_rewards: Tensor, mask: Tensor, seq_rewards: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    """``(R, valid)``: the sequence reward of each rollout and whether it is defined.

    ``R_i = seq_rewards_i`` when given (undefined when not finite: a rollout nobody could
    score), else ``sum_t r_it / L_i`` (undefined when ``L_i = 0``).
    """
    dtype = _compute_dtype(token_rewards)
    if seq_rewards is not None:
        if seq_rewards.shape != token_rewards.shape[:1]:
            raise ValueError(f"seq_rewards must have shape {tuple(token_rewards.shape[:1])}, got {tuple(seq_rewards.shape)}")
        rewards = seq_rewards.to(dtype)
        valid = rewards.isfinite()
        return torch.where(valid, rewards, 0.0), valid
    r = token_rewards.to(dtype)
    first = _first_token_values(r, mask)
    lengths = _lengths(mask).to(dtype)
    # shifted by the first token so that a rollout of equal rewards has exactly that mean
    shifted_sum = torch.where(mask, r - first[:, None], 0.0).sum(dim=1)
    return first + _safe_div(shifted_sum, lengths), lengths > 0


def _group_stats(values: Tensor, valid: Tensor, groups: _Groups) -> tuple[Tensor, Tensor, Tensor]:
    """Per-rollout ``(n_g, values - mean_g, sum of squared deviations_g)`` over valid members."""
    w = valid.to(values.dtype)
    n = groups.sum(w)
    shifted = torch.where(valid, values - _pick_per_group(values, valid, groups), 0.0)
    centred = torch.where(valid, shifted - groups.gather(_safe_div(groups.sum(shifted), n)), 0.0)
    ss = groups.sum(centred * centred)
    return groups.gather(n), centred, groups.gather(ss)


def _broadcast(per_rollout: Tensor, mask: Tensor, like: Tensor) -> Tensor:
    return torch.where(mask, per_rollout[:, None], 0.0).to(like.dtype)


class _Bag(NamedTuple):
    """Each group's length-weighted bag of token values (every rollout weighs 1), in a few passes.

    One pass over the tokens gives each rollout's shifted moments; the group statistics are then
    combined on ``(B,)`` vectors in float64 (law of total variance, each rollout weighing 1)::

        m_i = c_i + S1_i / L_i,   v_i = S2_i / L_i - (S1_i / L_i)^2,
        mu_g = mean_i m_i,        sigma_g^2 = mean_i v_i + mean_i (m_i - mu_g)^2

    where ``S_k`` are sums of ``(r - c_i)^k`` and ``c_i`` is the rollout's first value (shifted
    data: accurate moments, and exact zeros for a bag of equal values).
    """

    x: Tensor           # (B, T) r_it - c_i on the mask, exactly 0 elsewhere (whatever padding held)
    maskf: Tensor       # (B, T) the mask in the compute dtype
    first: Tensor       # (B,) float64 c_i
    mean_shift: Tensor  # (B,) float64 m_i - c_i
    centred: Tensor     # (B,) float64 m_i - mu_g
    sigma: Tensor       # (B,) float64 sigma_g
    n: Tensor           # (B,) float64 rollouts with tokens in the group
    has_tokens: Tensor  # (B,) bool L_i > 0
    groups: _Groups

    @classmethod
    def of(cls, r: Tensor, mask: Tensor, group_ids: Tensor) -> "_Bag":
        dtype = r.dtype
        first = _first_token_values(r, mask)[:, None]
        # padding takes the shift value, so x is exactly 0 there whatever it held (inf, NaN)
        x = torch.where(mask, r, first).sub_(first)
        maskf = mask.view(torch.uint8).to(dtype)  # via uint8: bool -> float is several times slower
        lengths = maskf.sum(dim=1).double()
        has_tokens = lengths > 0
        s1 = x.sum(dim=1).double()
        s2 = torch.linalg.vector_norm(x, dim=1).double().square()  # no (B, T) temporary, unlike x * x
        inv_len = _safe_div(torch.ones_like(lengths), lengths)
        mean_shift = s1 * inv_len                                         # m_i - c_i
        within = (s2 * inv_len - mean_shift * mean_shift).clamp_min(0.0)  # v_i
        groups = _Groups(group_ids)
        first = first.squeeze(1).double()
        n, centred, between = _group_stats(first + mean_shift, has_tokens, groups)
        sigma = _safe_div(groups.gather(groups.sum(torch.where(has_tokens, within, 0.0))) + between, n).sqrt()
        return cls(x, maskf, first, mean_shift, centred, sigma, n, has_tokens, groups)

    def normalised(self, offset: Tensor, scale: Tensor) -> Tensor:
        """``(r_it - b_i) * scale_i`` on the mask for ``offset_i = c_i - b_i`` (0 off it). In place
        on :attr:`x` (fresh ``(B, T)`` buffers cost page faults): a bag is normalised once."""
        dtype = self.x.dtype
        return self.x.mul_(scale.to(dtype)[:, None]).addcmul_(self.maskf, (offset * scale).to(dtype)[:, None])


# --------------------------------------------------------------------------- token-level
def reward_to_go(token_rewards: Tensor, mask: Tensor) -> Tensor:
    """``G_it = sum_{s >= t} r_is`` over completion tokens (undiscounted return)."""
    r = torch.where(mask, token_rewards, 0.0)
    return torch.where(mask, r.flip(1).cumsum(1).flip(1), 0.0)


# The bound on BoT-GRPO's normalisation that the project recommends (in reward units): the
# registry's ``bot_grpo`` uses it unless told otherwise; ``bot_grpo_paper`` is the unbounded form.
RECOMMENDED_MIN_STD = 0.5


@register("bot_grpo")
def bot_grpo(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
             *, eps: float = 1e-6, use_reward_to_go: bool = False, min_std: float = RECOMMENDED_MIN_STD,
             baseline: str = "bag") -> Tensor:
    """BoT-GRPO: normalise every token against its group's length-weighted bag of tokens.

    Each token (i, t) of group g weighs ``w_it = 1 / L_i`` (every rollout weighs 1 in total)::

        mu_g    = sum_{i,t} w_it r_it / sum_{i,t} w_it
        sigma_g = sqrt( sum_{i,t} w_it (r_it - mu_g)^2 / sum_{i,t} w_it )
        A_it    = (r_it - mu_g) / (max(sigma_g, min_std) + eps)

    With ``use_reward_to_go`` the bag holds ``G_it = sum_{s>=t} r_is`` instead of ``r_it``.
    ``seq_rewards`` is ignored: this estimator is defined on token rewards.

    ``min_std`` (default :data:`RECOMMENDED_MIN_STD`; 0 is the paper's estimator, registered as
    ``bot_grpo_paper``) bounds how far the normalisation may amplify: in a group whose outcomes
    all agree the bag's spread is the local signal's alone, and dividing by it turns a small
    local nudge into advantages of several units. It is in the rewards' own units, so it is only
    meaningful on rewards in the recipe's units (``botgrpo.trainer.rewards`` maps the server's bounded
    wire scores back to them). It also touches mixed groups whose spread is below it: one pass
    with outcome 0 (compiles, misses the spec) among three fails at -1 has sigma 0.43.

    ``baseline="outcome"`` centres on the group's mean *outcome level* instead of the bag's mean::

        O_i  = max_t r_it          (the unblamed tokens' reward: r = R + w_s l with l <= 0)
        A_it = (r_it - mean_i O_i) / (max(sigma_g, min_std) + eps)

    With the bag's mean, the unblamed tokens of a group whose rollouts all fail sit above the
    mean (the blamed ones pull it down) and get positive advantages, the more so the longer the
    rollout; with the outcome baseline they get 0 and only blamed tokens move (down).
    The same as the bag when every rollout's tokens share one reward (w_s = 0).
    """
    if baseline not in ("bag", "outcome"):
        raise ValueError(f"baseline must be 'bag' or 'outcome', got {baseline!r}")
    if baseline == "outcome" and use_reward_to_go:
        raise ValueError("baseline='outcome' reads the outcome level off token rewards, not rewards-to-go")
    dtype = _compute_dtype(token_rewards)
    r = token_rewards.to(dtype)
    if use_reward_to_go:
        r = reward_to_go(r, mask)
    bag = _Bag.of(r, mask, group_ids)
    scale = _safe_div(torch.ones_like(bag.sigma), bag.sigma.clamp_min(min_std) + eps)
    centred, mean_shift = bag.centred, bag.mean_shift
    if baseline == "outcome":  # the same offset with mean_g O in place of mu_g
        level = torch.where(bag.has_tokens, torch.where(mask, bag.x, -math.inf).amax(dim=1).double(), 0.0)  # O_i - c_i
        centred = _group_stats(bag.first + level, bag.has_tokens, bag.groups)[1]                       # O_i - mean_g O
        mean_shift = level
    return bag.normalised(centred - mean_shift, scale).to(token_rewards.dtype)   # offset: c_i - mu_g


@register("bot_grpo_paper")
def bot_grpo_paper(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
                   *, eps: float = 1e-6, use_reward_to_go: bool = False, baseline: str = "bag") -> Tensor:
    """The paper's BoT-GRPO exactly: :func:`bot_grpo` with ``min_std = 0`` (no bound on the
    normalisation: ``A_it = (r_it - mu_g) / (sigma_g + eps)``)."""
    return bot_grpo(token_rewards, mask, group_ids, seq_rewards, eps=eps, use_reward_to_go=use_reward_to_go,
                    min_std=0.0, baseline=baseline)


@register("prime")
def prime(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
          *, leave_one_out: bool = True) -> Tensor:
    """PRIME's group baseline: each token's reward minus the group's length-weighted mean, no std.

    Rollout i's tokens weigh ``1 / L_i`` (as in BoT-GRPO's bag), so its weight in the mean is its
    mean token reward ``m_i = sum_t r_it / L_i``::

        b_i  = mean_{j != i} m_j = (n mu_g - m_i) / (n - 1)    leave_one_out (default)
        b_i  = mean_j m_j = mu_g                               leave_one_out=False
        A_it = r_it - b_i

    over the ``n`` rollouts of the group with tokens; with ``leave_one_out`` a group of one has no
    baseline and gets 0. Either way the advantages have mean 0 under the weights ``1 / L_i``;
    where a rollout's tokens share one reward ``R_i`` they are :func:`rloo`'s (leave-one-out) or
    :func:`dr_grpo`'s (plain mean). ``leave_one_out=False`` is :func:`bot_grpo_paper` without the
    division by ``sigma_g``. ``seq_rewards`` is ignored.

    The leave-one-out baseline never reads rollout i. verl-recipe's PRIME computes
    ``n/(n-1) (r_it - mu_g) = r_it - b_i + (r_it - m_i)/(n-1)`` (the same where a rollout's
    tokens share one reward; its baseline reads the token's own reward otherwise), and then
    takes returns (reward-to-go) and whitens them over the batch, which this baseline does not.
    """
    bag = _Bag.of(token_rewards.to(_compute_dtype(token_rewards)), mask, group_ids)
    offset = bag.centred - bag.mean_shift                                   # c_i - mu_g
    scale = torch.ones_like(offset)
    if leave_one_out:  # c_i - b_i = (c_i - mu_g) + (m_i - mu_g) / (n - 1)
        offset = offset + _safe_div(bag.centred, bag.n - 1)
        scale = (bag.n > 1).double()
    return bag.normalised(offset, scale).to(token_rewards.dtype)


# --------------------------------------------------------------------------- sequence-level
@register("grpo")
def grpo(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
         *, eps: float = 1e-6) -> Tensor:
    """GRPO: ``A_i = (R_i - mean_g R) / (std_g R + eps)`` with the unbiased (n-1) group std.

    Broadcast to every completion token of rollout i. A group of one has no std: advantage 0.
    """
    R, valid = sequence_rewards(token_rewards, mask, seq_rewards)
    n, centred, ss = _group_stats(R, valid, _Groups(group_ids))
    std = _safe_div(ss, n - 1).sqrt()
    adv = torch.where((n > 1) & valid, _safe_div(centred, std + eps), 0.0)
    return _broadcast(adv, mask, token_rewards)


@register("dr_grpo")
def dr_grpo(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None) -> Tensor:
    """Dr. GRPO: ``A_i = R_i - mean_g R`` (no std normalisation, so no difficulty bias)."""
    R, valid = sequence_rewards(token_rewards, mask, seq_rewards)
    _, centred, _ = _group_stats(R, valid, _Groups(group_ids))
    return _broadcast(torch.where(valid, centred, 0.0), mask, token_rewards)


@register("rloo")
def rloo(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None) -> Tensor:
    """RLOO: ``A_i = R_i - mean_{j != i} R_j = n/(n-1) (R_i - mean_g R)``; 0 for a group of one."""
    R, valid = sequence_rewards(token_rewards, mask, seq_rewards)
    n, centred, _ = _group_stats(R, valid, _Groups(group_ids))
    adv = torch.where((n > 1) & valid, _safe_div(n, n - 1) * centred, 0.0)
    return _broadcast(adv, mask, token_rewards)


# --------------------------------------------------------------------------- decoupled


@register("decoupled")
def decoupled(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
              *, local_weight: float = DEFAULT_LOCAL_WEIGHT, eps: float = 1e-6, local_tol: float = 1e-5) -> Tensor:
    """Decoupled (PASS-style) normalisation: the outcome as GRPO does, the local term in its own bag.

    The token rewards are the recipe's ``r_it = R_i + w_s l_it``; the outcome ``R_i`` is
    ``seq_rewards`` (the wire's ``score``), so the local term comes back as ``d_it = r_it - R_i``
    (``= w_s l_it``). Then, with the bag's weights ``1 / L_i`` (every rollout weighs 1)::

        A_it = (R_i - mean_g R) / (std_g R + eps)                       GRPO: unbiased std
             + local_weight * (d_it - mu^d_g) / (sigma^d_g + eps)        population bag std

    A local bag whose spread is at most ``local_tol`` (reward units) has none: its part is 0, so
    with ``local_weight = 0``, no local signal, or one local value on all of a group's tokens
    this is :func:`grpo` exactly. The tolerance is for rounding: ``r = R + w_s l`` is rounded
    (to float32 on the trainer's path), so two rollouts with the same ``l`` and different
    outcomes give ``d`` apart by ~1e-7, which the division would blow up to unit size. A real
    small spread is amplified as in the paper's BoT-GRPO (one blamed token in a group of long
    rollouts gets a large negative local part): that is PASS-style standardisation, and what
    this row of a study measures.

    Standardising ``d`` divides its scale out, so the server's ``w_s`` only decides whether the
    local term reaches the trainer (any ``w_s > 0`` gives the same advantages up to ``eps``):
    ``local_weight`` is the one weight of the local term, and its default is the server's
    ``w_s`` default. ``R`` and ``r`` must be in the same units (the trainer divides the wire's
    ``reward_map`` out, ``Result.rewards()``); an affine map of both
    changes nothing. Without ``seq_rewards``, ``R_i`` is the rollout's mean token reward (the
    module's convention), so ``d`` is each token's deviation from its rollout's mean. A rollout
    whose ``R_i`` is undefined (NaN) takes no part in either statistic.
    """
    dtype = _compute_dtype(token_rewards)
    r = token_rewards.to(dtype)
    R, valid = sequence_rewards(r, mask, seq_rewards)
    outcome = grpo(r, mask, group_ids, seq_rewards, eps=eps)
    local_mask = mask & valid[:, None]
    bag = _Bag.of(torch.where(local_mask, r - R[:, None], 0.0), local_mask, group_ids)
    scale = torch.where(bag.sigma > local_tol, _safe_div(torch.ones_like(bag.sigma), bag.sigma + eps), 0.0)
    local = bag.normalised(bag.centred - bag.mean_shift, scale)
    return outcome.add_(local, alpha=local_weight).to(token_rewards.dtype)


# --------------------------------------------------------------------------- PURE
def softmin_to_go(process_rewards: Tensor, mask: Tensor, temperature: float) -> Tensor:
    """Min-form return ``G_it = softmin_{s >= t}(p_is; tau)`` over completion tokens.

    ``softmin(p; tau) = sum_s e^{-p_s/tau} p_s / sum_s e^{-p_s/tau}``, which tends to the strict
    ``min_{s>=t} p_is`` as ``tau -> 0`` (``temperature=0`` computes the strict min). Evaluated with
    reverse ``logcumsumexp`` on ``p - min(p) >= 0`` so no temperature under- or overflows; in
    float64, because ``(p - min p) / tau`` is huge for small ``tau`` and float32 would lose the
    difference of two such logs.
    """
    big = torch.finfo(process_rewards.dtype).max
    p = torch.where(mask, process_rewards, big)
    if temperature <= 0:
        suffix_min = p.flip(1).cummin(1).values.flip(1)
        return torch.where(mask, suffix_min, 0.0)
    p = p.double()
    low = p.amin(dim=1, keepdim=True)
    shifted = torch.where(mask, p - low, 0.0)
    logw = torch.where(mask, -shifted / temperature, -torch.inf)
    log_den = logw.flip(1).logcumsumexp(1).flip(1)
    log_num = (logw + shifted.log()).flip(1).logcumsumexp(1).flip(1)  # log 0 = -inf adds nothing
    g = torch.where(log_num.isfinite(), (log_num - log_den).exp(), 0.0) + low
    return torch.where(mask, g, 0.0).to(process_rewards.dtype)


@register("pure")
def pure(token_rewards: Tensor, mask: Tensor, group_ids: Tensor, seq_rewards: Optional[Tensor] = None,
         *, temperature: float = 0.1) -> Tensor:
    """PURE: min-form credit assignment over process rewards, plus an RLOO verifiable reward.

    ::

        A_it = softmin_{s >= t}(p_is; temperature) + (V_i - mean_{j != i} V_j)

    where ``p`` are the token (process) rewards and ``V = seq_rewards`` (the verifiable reward;
    the second term is dropped when ``seq_rewards`` is None). ``temperature = 0`` is the strict min.
    A token's credit is the worst step still ahead of it, so a good prefix cannot bank reward
    that a later mistake would take back.
    """
    dtype = _compute_dtype(token_rewards)
    adv = softmin_to_go(token_rewards.to(dtype), mask, temperature)
    if seq_rewards is not None:
        adv = adv + rloo(token_rewards.to(dtype), mask, group_ids, seq_rewards)
    return adv.to(token_rewards.dtype)


# --------------------------------------------------------------------------- entry point
def compute_advantages(name: str, token_rewards: Tensor, mask: Tensor, group_ids: Tensor,
                       seq_rewards: Optional[Tensor] = None, **options) -> Tensor:
    """Per-token advantages ``(B, T)`` from the estimator registered as ``name``.

    ``options`` go to the estimator (e.g. ``eps``, ``use_reward_to_go``, ``temperature``).
    """
    try:
        estimator = ESTIMATORS[name]
    except KeyError:
        raise ValueError(f"unknown advantage estimator {name!r}; choose one of {sorted(ESTIMATORS)}") from None
    _check_batch(token_rewards, mask, group_ids)
    if token_rewards.numel() == 0:
        return torch.zeros_like(token_rewards)
    return estimator(token_rewards, mask, group_ids, seq_rewards, **options)


def _check_batch(token_rewards: Tensor, mask: Tensor, group_ids: Tensor) -> None:
    if token_rewards.dim() != 2:
        raise ValueError(f"token_rewards must be (B, T), got shape {tuple(token_rewards.shape)}")
    if not token_rewards.is_floating_point():
        raise TypeError(f"token_rewards must be a float tensor, got {token_rewards.dtype}")
    if mask.shape != token_rewards.shape or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(token_rewards.shape)}, "
                         f"got {mask.dtype} {tuple(mask.shape)}")
    if group_ids.shape != token_rewards.shape[:1] or group_ids.is_floating_point():
        raise ValueError(f"group_ids must be an integer tensor of shape {tuple(token_rewards.shape[:1])}, "
                         f"got {group_ids.dtype} {tuple(group_ids.shape)}")
