"""BoT-GRPO inside verl (0.9.1): the estimator, token rewards from our server, and the hooks
that make both reach verl's Ray actors.

verl computes advantages in its ``TaskRunner`` Ray actor and rewards in ``RewardLoopWorker``
actors, never in the user's process, so registering there is not enough. The registrations live
in :mod:`botgrpo.trainer.integrations.verl_plugin`, which registers on import, and verl imports it in
every process through its documented hook ``VERL_USE_EXTERNAL_MODULES`` (read by
``import verl``), set in the Ray runtime environment::

    python -m verl.trainer.main_ppo \
        +ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=botgrpo.trainer.integrations.verl_plugin \
        algorithm.adv_estimator=bot_grpo trainer.v1.trainer_mode=botgrpo_sync \
        reward.reward_manager.name=botgrpo \
        +reward.reward_kwargs.botgrpo.url=http://reward-server:8000 +reward.reward_kwargs.botgrpo.task=math

(The module can also be named in the config alone: ``reward.reward_manager.source=importlib
reward.reward_manager.module.path=pkg://trainer.integrations.verl_plugin
reward.reward_manager.name=BoTGRPORewardManager``; verl imports it in the TaskRunner, which
registers the estimator there, before any advantage is computed, but the trainer mode needs
the hook above.)

Token rewards. verl's reward loop puts one scalar per rollout on its last token; BoT-GRPO over
such a row hands every earlier token ``-mu/sigma``. The ``botgrpo`` reward manager sends each
response with its tokens' character spans to the reward server and keeps the server's token
scores (``reward_extra_info["botgrpo_token_scores"]``; the scalar verl logs is the outcome);
the ``botgrpo_<mode>`` trainer modes put them into ``token_level_scores`` for the advantage
step. A rollout the server could not score carries NaN token scores and leaves the statistics
and the loss (advantage 0).

Estimator contract (``ray_trainer.compute_advantage``, the branch for every estimator but GAE
and GRPO): ``fn(token_level_rewards=(bs, T), response_mask=(bs, T) 0/1, config=AlgoConfig,
index=object array of uids)``, returning ``(advantages, returns)``. This module imports no verl,
so the estimator and its helpers are tested without it.

Two estimators are registered: ``bot_grpo`` (the bounded form the project recommends, the same
as ``botgrpo train``'s and the TRL trainer's) and ``bot_grpo_paper`` (the paper's exactly). Their
options come from verl's own config, the ``algorithm.bot_grpo`` section
(``+algorithm.bot_grpo.min_std=0.25 +algorithm.bot_grpo.use_reward_to_go=true``), which verl
hands the estimator as ``config``.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np
import torch

from botgrpo.trainer.integrations.contract import (DEFAULT_NAME, NAMES, OPTIONS_KEY, checked_options,
                                                   group_ids_from_uids, reference_of, uid_group_advantages)

__all__ = ["DEFAULT_NAME", "NAMES", "bot_grpo_advantage", "group_ids_from_uids", "options_from_config",
           "reference_of", "register", "token_scores_row"]


def options_from_config(config: Any, estimator: str = DEFAULT_NAME) -> dict[str, Any]:
    """The estimator's options from verl's algorithm config (its ``bot_grpo`` section), checked
    against what ``estimator`` accepts (ValueError naming the unknown option and the valid ones).
    verl passes the config as an OmegaConf mapping; no section (or no config) is no options."""
    section = config.get(OPTIONS_KEY) if isinstance(config, Mapping) else None
    return checked_options(section, estimator, f"algorithm.{OPTIONS_KEY}")


def bot_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                       index: Optional[np.ndarray] = None, config: Any = None, *,
                       estimator: str = DEFAULT_NAME, options: Optional[dict[str, Any]] = None,
                       **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """verl estimator: BoT-GRPO advantages, returned as both ``advantages`` and ``returns``.

    ``estimator`` is ``bot_grpo`` or ``bot_grpo_paper``; its options (``eps``, ``use_reward_to_go``,
    ``min_std``) are ``config``'s ``bot_grpo`` section (:func:`options_from_config`) overridden by
    ``options`` (which :func:`register` binds). No other field of verl's config applies
    (``gamma``, ``norm_adv_by_std_in_grpo``...); extra keyword arguments verl may pass
    (``reward_baselines``...) are ignored for the same reason. Unscored rows (NaN rewards):
    see :func:`~botgrpo.trainer.integrations.contract.uid_group_advantages`.
    """
    options = {**options_from_config(config, estimator), **(options or {})}
    return uid_group_advantages(token_level_rewards, response_mask, index, estimator, options)


def register(name: str = DEFAULT_NAME, **options: Any):
    """Register the estimator ``name`` (``bot_grpo`` or ``bot_grpo_paper``) in verl's estimator
    registry in *this* process; returns the registered function. (For verl's actors use
    :mod:`botgrpo.trainer.integrations.verl_plugin`.)

    ``options`` (``eps``, ``use_reward_to_go``, ``min_std``) are bound into the function, over the
    config's. Calling again with the same name and options is a no-op (the same function object
    is reused, so verl's duplicate check passes); different options under a taken name raise
    verl's ``ValueError``.
    """
    from verl.trainer.ppo import core_algos  # lazy: verl is optional and heavy

    if name not in NAMES:
        raise ValueError(f"no BoT-GRPO estimator {name!r}; choose one of {list(NAMES)}")
    fn = _bound(name, tuple(sorted(options.items())))
    return core_algos.register_adv_est(name)(fn)


@functools.lru_cache(maxsize=None)
def _bound(name: str, options: tuple[tuple[str, Any], ...]):
    """One function object per estimator and option set, so re-registering is idempotent."""
    return functools.partial(bot_grpo_advantage, estimator=name, options=dict(options))


def token_scores_row(extra: Any, length: int) -> list[float]:
    """One row of token rewards from a rollout's ``extra_fields`` (NaN when unscored)."""
    info = (extra or {}).get("reward_extra_info", {}) if isinstance(extra, dict) else {}
    scores = info.get("botgrpo_token_scores")
    if scores is None:
        raise ValueError("a rollout has no botgrpo_token_scores: set reward.reward_manager.name=botgrpo")
    if info.get("botgrpo_unscored"):
        return [math.nan] * length
    scores = [float(x) for x in scores]
    if len(scores) != length:
        raise ValueError(f"{len(scores)} token scores for a response of {length} tokens")
    return scores
