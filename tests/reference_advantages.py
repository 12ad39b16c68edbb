"""Naive per-group, per-rollout Python references for the advantage estimators.

Written straight from the formulas with loops and float64, independent of the vectorised
implementation, so the tests compare two derivations rather than one code path twice.
"""
import functools
import math

import torch


def _rows(mask, group_ids):
    groups = {}
    for i, gid in enumerate(group_ids.tolist()):
        groups.setdefault(gid, []).append(i)
    return groups


def _tokens(r, mask, i):
    return [float(x) for x, keep in zip(r[i].tolist(), mask[i].tolist()) if keep]


def _seq_rewards(r, mask, seq_rewards):
    out = []
    for i in range(r.shape[0]):
        toks = _tokens(r, mask, i)
        if seq_rewards is not None:
            out.append(float(seq_rewards[i]))
        else:
            out.append(sum(toks) / len(toks) if toks else None)
    return out


def _fill(r, mask, per_rollout_tokens):
    out = torch.zeros_like(r, dtype=torch.float64)
    for i, values in per_rollout_tokens.items():
        cols = [t for t in range(r.shape[1]) if mask[i, t]]
        for t, v in zip(cols, values):
            out[i, t] = v
    return out


def naive_bot_grpo(r, mask, group_ids, seq_rewards=None, eps=1e-6, use_reward_to_go=False, min_std=0.0):
    toks = {i: _tokens(r, mask, i) for i in range(r.shape[0])}
    if use_reward_to_go:
        toks = {i: [sum(v[t:]) for t in range(len(v))] for i, v in toks.items()}
    result = {}
    for rows in _rows(mask, group_ids).values():
        bag = [(x, 1.0 / len(toks[i])) for i in rows for x in toks[i]]
        if not bag:
            continue
        W = sum(w for _, w in bag)
        mu = sum(w * x for x, w in bag) / W
        sigma = math.sqrt(sum(w * (x - mu) ** 2 for x, w in bag) / W)
        for i in rows:
            result[i] = [(x - mu) / (max(sigma, min_std) + eps) if sigma > 1e-12 else 0.0 for x in toks[i]]
    return _fill(r, mask, result)


def _sequence_estimator(per_group):
    def estimator(r, mask, group_ids, seq_rewards=None, **options):
        R = _seq_rewards(r, mask, seq_rewards)
        result = {}
        for rows in _rows(mask, group_ids).values():
            members = [i for i in rows if R[i] is not None]
            values = [R[i] for i in members]
            for i, adv in zip(members, per_group(values, **options)):
                result[i] = [adv] * len(_tokens(r, mask, i))
        return _fill(r, mask, result)
    return estimator


def _grpo(values, eps=1e-6):
    n = len(values)
    if n < 2:
        return [0.0] * n
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return [(v - mean) / (std + eps) if std > 1e-12 else 0.0 for v in values]


def _dr_grpo(values):
    mean = sum(values) / len(values) if values else 0.0
    return [v - mean for v in values]


def _rloo(values):
    n = len(values)
    if n < 2:
        return [0.0] * n
    total = sum(values)
    return [v - (total - v) / (n - 1) for v in values]


def naive_pure(r, mask, group_ids, seq_rewards=None, temperature=0.1):
    result = {}
    for i in range(r.shape[0]):
        p = _tokens(r, mask, i)
        returns = []
        for t in range(len(p)):
            future = p[t:]
            if temperature <= 0:
                returns.append(min(future))
            else:
                low = min(future)
                ws = [math.exp(-(x - low) / temperature) for x in future]
                returns.append(sum(w * x for w, x in zip(ws, future)) / sum(ws))
        result[i] = returns
    out = _fill(r, mask, result)
    if seq_rewards is not None:
        out = out + NAIVE["rloo"](r, mask, group_ids, seq_rewards)
    return out


def naive_prime(r, mask, group_ids, seq_rewards=None, leave_one_out=True):
    result = {}
    for rows in _rows(mask, group_ids).values():
        means = {i: sum(v) / len(v) for i in rows if (v := _tokens(r, mask, i))}
        n = len(means)
        for i, m_i in means.items():
            if leave_one_out:
                if n < 2:
                    result[i] = [0.0] * len(_tokens(r, mask, i))
                    continue
                baseline = (sum(means.values()) - m_i) / (n - 1)
            else:
                baseline = sum(means.values()) / n
            result[i] = [x - baseline for x in _tokens(r, mask, i)]
    return _fill(r, mask, result)


def naive_decoupled(r, mask, group_ids, seq_rewards=None, local_weight=0.5, eps=1e-6, local_tol=1e-5):
    R = _seq_rewards(r, mask, seq_rewards)
    defined = [R[i] is not None and math.isfinite(R[i]) for i in range(r.shape[0])]
    outcome, local = {}, {}
    for rows in _rows(mask, group_ids).values():
        members = [i for i in rows if defined[i]]
        for i, adv in zip(members, _grpo([R[i] for i in members], eps=eps)):
            outcome[i] = [adv] * len(_tokens(r, mask, i))
        d = {i: [x - R[i] for x in _tokens(r, mask, i)] for i in members}
        bag = [(x, 1.0 / len(v)) for v in d.values() for x in v]
        if not bag:
            continue
        W = sum(w for _, w in bag)
        mu = sum(w * x for x, w in bag) / W
        sigma = math.sqrt(sum(w * (x - mu) ** 2 for x, w in bag) / W)
        for i, v in d.items():
            local[i] = [(x - mu) / (sigma + eps) if sigma > local_tol else 0.0 for x in v]
    return _fill(r, mask, outcome) + local_weight * _fill(r, mask, local)


NAIVE = {
    "bot_grpo": functools.partial(naive_bot_grpo, min_std=0.5),   # the registry's default bound
    "bot_grpo_paper": naive_bot_grpo,
    "grpo": _sequence_estimator(_grpo),
    "dr_grpo": _sequence_estimator(_dr_grpo),
    "rloo": _sequence_estimator(_rloo),
    "pure": naive_pure,
    "prime": naive_prime,
    "decoupled": naive_decoupled,
}
