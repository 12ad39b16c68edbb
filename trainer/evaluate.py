"""Evaluation on held-out prompts: pass rate (compile rate per level for react) and pass@k."""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import torch

from botgrpo.trainer.data import Example
from botgrpo.trainer.render_eval import render_metrics
from botgrpo.trainer.rewards import RewardSource
from botgrpo.trainer.rollout.base import SamplingParams
from botgrpo.trainer.run.progress import SILENT

EVAL_SEED = 1_000_003  # held-out sampling never shares seeds with training


def collect(pending, update: Callable[[int], None]):
    """``pending``'s whole batch of scores, ``update(groups scored so far)`` as they stream in."""
    done = 0
    while hasattr(pending, "next_groups") and (groups := pending.next_groups()):
        done += len(groups)
        update(done)
    return pending.result()


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` passed: ``1 - C(n-c, k) / C(n, k)``."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def evaluate(engine, rewards: Optional[RewardSource], examples: Sequence[Example], sampling: SamplingParams, *,
             samples: int = 1, ks: Sequence[int] = (1,), levels: Sequence[Optional[str]] = (None,),
             seed: int = 0, track=SILENT, label: str = "eval") -> Optional[dict[str, Any]]:
    """Sample ``samples`` completions per prompt (fixed seeds: the same model gives the same
    numbers) and score them, once per compile ``level`` (None: the source's own options).

    Returns ``pass_rate``, ``spec_rate`` (passed and met the spec), ``component_rate`` (React:
    passed and declares the spec's named component, exported; the headline that a compiling
    fragment does not inflate; None without a spec that names one), ``reward_mean``, ``pass@k``
    for each k, and the same per level as ``<level>/pass_rate`` when several levels are asked.
    With ``rewards=None`` it only samples (the other ranks of a sharded model) and returns None.
    ``track(text, total)`` shows the sampling (``total`` None: no steps) and each level's scoring
    (``total``: prompts, counted as their samples are scored) as ``label: ...``.
    """
    prompts = [e.prompt for e in examples]
    with track(f"{label}: sampling {len(prompts)} prompts x {samples}", None):
        batch = engine.generate(prompts, samples, sampling, seeds=[EVAL_SEED + seed + i for i in range(len(prompts))])
    if rewards is None:
        return None
    refs = [e.reference for e in examples]
    out: dict[str, Any] = {"prompts": len(prompts), "samples": samples,
                           "completion_len_mean": float(batch.lengths.float().mean())}
    for level in levels:
        with track(f"{label}: scoring{f' at {level}' if level else ''}", len(prompts)) as update:
            scored = collect(rewards.submit(batch, refs, {"level": level} if level else None), update)
        passed = torch.nan_to_num(scored.passed, nan=0.0)
        both = passed * torch.nan_to_num(scored.spec_passed, nan=1.0)
        ok = scored.scored  # an unscored rollout is neither a pass nor a failure: left out, counted
        prefix = f"{level}/" if level and len(levels) > 1 else ""
        out[prefix + "pass_rate"] = float(passed[ok].mean()) if ok.any() else math.nan
        out[prefix + "spec_rate"] = (float(both[ok].mean()) if ok.any() and not scored.spec_passed.isnan().all()
                                     else None)
        declared = scored.component
        out[prefix + "component_rate"] = (  # passed (compiles / renders) AND declares the named component
            float((passed * torch.nan_to_num(declared, nan=0.0))[ok].mean())
            if declared is not None and ok.any() and not declared[ok].isnan().all() else None)
        out[prefix + "reward_mean"] = float(scored.seq_rewards[ok].mean()) if ok.any() else math.nan
        out[prefix + "unscored"] = scored.errors
        per_prompt = passed.view(len(prompts), samples).sum(1).long().tolist()  # unscored: not a pass
        for k in ks:
            out[f"{prefix}pass@{k}"] = sum(pass_at_k(samples, c, k) for c in per_prompt) / len(prompts)
        out.update(render_metrics(level, scored.details, prefix))  # render and empty-render rates at level render
    return out
