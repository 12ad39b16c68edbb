"""Named method presets: each paper's choice on the three axes, so a comparison is one flag.

Every behaviour of a method is a field of its preset, the sampling side included (DAPO's
dynamic sampling and overlong penalty): the trainer reads the fields, never the method's name.
"""
from __future__ import annotations

from botgrpo.trainer.algo.settings import AlgorithmSettings

PRESETS: dict[str, AlgorithmSettings] = {
    # Length-weighted bag of tokens over token rewards; PPO-clip; every token weighs the same. The
    # estimator's own default bounds the bag's std below by 0.5 (reward units): where a group's
    # outcomes all agree the local signal alone sets the spread, and the paper's division by it
    # collapsed the convergence study's runs (docs/results/convergence). The bound also shrinks
    # the advantages of mixed groups whose spread is below it (docs/algorithms.md).
    "bot_grpo": AlgorithmSettings(estimator="bot_grpo", policy_loss="ppo_clip", aggregation="token-mean"),
    # The paper's estimator exactly (no bound on the normalisation).
    "bot_grpo_paper": AlgorithmSettings(estimator="bot_grpo_paper", policy_loss="ppo_clip", aggregation="token-mean"),
    # Sequence reward, unbiased group std, per-sequence mean of token means (DeepSeekMath).
    "grpo": AlgorithmSettings(estimator="grpo", policy_loss="ppo_clip", aggregation="seq-mean-token-mean"),
    # GRPO's estimator with BoT-GRPO's aggregation: the row that separates the estimator from the
    # aggregation in a comparison (the two presets above differ in both).
    "grpo_token_mean": AlgorithmSettings(estimator="grpo", policy_loss="ppo_clip", aggregation="token-mean"),
    # No std, token sum normalised by a constant (Liu et al., "Understanding R1-Zero").
    "dr_grpo": AlgorithmSettings(estimator="dr_grpo", policy_loss="ppo_clip", aggregation="seq-mean-token-sum-norm"),
    # Sequence-level ratio with GSPO's tiny clip range, sequence mean.
    "gspo": AlgorithmSettings(estimator="grpo", policy_loss="gspo", eps_low=3e-4, eps_high=4e-4,
                              aggregation="seq-mean-token-mean"),
    # Clip-higher 0.2/0.28, token-mean loss, dynamic sampling, soft overlong penalty over the last quarter.
    "dapo": AlgorithmSettings(estimator="grpo", policy_loss="ppo_clip", eps_low=0.2, eps_high=0.28,
                              aggregation="token-mean", dynamic_sampling=True, overlong_buffer=0.25),
    # Min-form credit over process rewards plus RLOO on the verifiable reward.
    "pure": AlgorithmSettings(estimator="pure", estimator_options={"temperature": 0.1}, policy_loss="ppo_clip",
                              aggregation="token-mean"),
    # PRIME's group baseline: token reward minus the length-weighted leave-one-out mean, no std;
    # BoT-GRPO's aggregation, so the row differs from bot_grpo in the estimator alone.
    "prime": AlgorithmSettings(estimator="prime", policy_loss="ppo_clip", aggregation="token-mean"),
    # PASS-style decoupled normalisation: the outcome as GRPO, the local term in its own bag, weight 0.5.
    "decoupled": AlgorithmSettings(estimator="decoupled", policy_loss="ppo_clip", aggregation="token-mean"),
}


def preset(name: str) -> AlgorithmSettings:
    """A copy of the preset ``name`` (ValueError listing the presets if unknown)."""
    try:
        return PRESETS[name].model_copy(deep=True)
    except KeyError:
        raise ValueError(f"unknown method preset {name!r}; choose one of {sorted(PRESETS)}") from None
