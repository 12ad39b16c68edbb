"""Named method presets: each paper's choice on the three axes, so a comparison is one flag.

Sampling-side choices of a method (DAPO's dynamic sampling and overlong penalty) live with the
trainer's settings; here are the update-rule choices only.
"""
from __future__ import annotations

from botgrpo.settings import AlgorithmSettings

PRESETS: dict[str, AlgorithmSettings] = {
    # Length-weighted bag of tokens over token rewards; PPO-clip; every token weighs the same.
    "bot_grpo": AlgorithmSettings(estimator="bot_grpo", policy_loss="ppo_clip", aggregation="token-mean"),
    # Sequence reward, unbiased group std, per-sequence mean of token means (DeepSeekMath).
    "grpo": AlgorithmSettings(estimator="grpo", policy_loss="ppo_clip", aggregation="seq-mean-token-mean"),
    # No std, token sum normalised by a constant (Liu et al., "Understanding R1-Zero").
    "dr_grpo": AlgorithmSettings(estimator="dr_grpo", policy_loss="ppo_clip", aggregation="seq-mean-token-sum-norm"),
    # Sequence-level ratio with GSPO's tiny clip range, sequence mean.
    "gspo": AlgorithmSettings(estimator="grpo", policy_loss="gspo", eps_low=3e-4, eps_high=4e-4,
                              aggregation="seq-mean-token-mean"),
    # Clip-higher 0.2/0.28 and token-mean loss (dynamic sampling / overlong penalty: trainer).
    "dapo": AlgorithmSettings(estimator="grpo", policy_loss="ppo_clip", eps_low=0.2, eps_high=0.28,
                              aggregation="token-mean"),
    # Min-form credit over process rewards plus RLOO on the verifiable reward.
    "pure": AlgorithmSettings(estimator="pure", estimator_options={"temperature": 0.1}, policy_loss="ppo_clip",
                              aggregation="token-mean"),
}


def preset(name: str) -> AlgorithmSettings:
    """A copy of the preset ``name`` (ValueError listing the presets if unknown)."""
    try:
        return PRESETS[name].model_copy(deep=True)
    except KeyError:
        raise ValueError(f"unknown method preset {name!r}; choose one of {sorted(PRESETS)}") from None
