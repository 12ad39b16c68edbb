"""BoT-GRPO as a verl advantage estimator: ``algorithm.adv_estimator=bot_grpo``.

verl looks estimators up by name in ``verl.trainer.ppo.core_algos.ADV_ESTIMATOR_REGISTRY``, filled
by its decorator ``register_adv_est``. :func:`register` adds ours there; call it in the driver
process before the trainer computes advantages (verl computes them on the driver, not on the
workers)::

    from trainer.integrations import verl as botgrpo_verl
    botgrpo_verl.register()            # then run verl with algorithm.adv_estimator=bot_grpo

Contract, as of verl 0.9.1 (``ray_trainer.compute_advantage``, the branch for every estimator but
GAE and GRPO): verl calls ``fn(token_level_rewards=(bs, T) float, response_mask=(bs, T) 0/1,
config=AlgoConfig, index=np.ndarray of uids)`` (``index`` only when the batch has uids, plus
optional extras such as ``reward_baselines``) and stores the returned ``(advantages, returns)``.
Rollouts of one prompt share a uid (a string, usually a UUID), so the uids are the groups.

verl itself is imported only inside :func:`register`: this module, and the estimator, work
without verl installed (the tests check the contract that way).
"""
from __future__ import annotations

import functools
from typing import Any, Optional, Sequence

import numpy as np
import torch

from trainer.advantages import compute_advantages

DEFAULT_NAME = "bot_grpo"


def group_ids_from_uids(index: Optional[Sequence[Any]], batch_size: int) -> torch.Tensor:
    """``(bs,)`` int64 dense group ids: equal uids share an id; no uids puts every row in one group.

    verl's uids are strings (an object array), which ``compute_advantages`` cannot take, so they
    are mapped to integers in order of first appearance.
    """
    if index is None:
        return torch.zeros(batch_size, dtype=torch.long)
    uids = np.asarray(index, dtype=object)
    if uids.shape != (batch_size,):
        raise ValueError(f"index must hold one uid per row ({batch_size}), got shape {uids.shape}")
    ids: dict[Any, int] = {}
    return torch.tensor([ids.setdefault(uid, len(ids)) for uid in uids.tolist()], dtype=torch.long)


def bot_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                       index: Optional[np.ndarray] = None, config: Any = None, *,
                       options: Optional[dict[str, Any]] = None, **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """verl estimator: BoT-GRPO advantages, returned as both ``advantages`` and ``returns``.

    ``options`` go to :func:`trainer.advantages.bot_grpo` (``eps``, ``use_reward_to_go``);
    :func:`register` binds them. ``config`` (verl's ``AlgoConfig``) is accepted for the contract
    but not read: none of its fields (``gamma``, ``norm_adv_by_std_in_grpo``...) applies. Extra
    keyword arguments verl may pass (``reward_baselines``...) are ignored for the same reason.
    Returns are the advantages, as for verl's own critic-free estimators (GRPO, RLOO).
    """
    mask = response_mask.bool()
    groups = group_ids_from_uids(index, token_level_rewards.shape[0]).to(token_level_rewards.device)
    with torch.no_grad():
        advantages = compute_advantages("bot_grpo", token_level_rewards, mask, groups, **(options or {}))
    return advantages, advantages


def register(name: str = DEFAULT_NAME, **options: Any):
    """Register BoT-GRPO in verl's estimator registry under ``name``; returns the registered function.

    ``options`` (``eps``, ``use_reward_to_go``) are bound into the function. Calling again with
    the same name and options is a no-op (the same function object is reused, so verl's
    duplicate check passes); different options under a taken name raise verl's ``ValueError``.
    """
    from verl.trainer.ppo import core_algos  # lazy: verl is optional and heavy

    fn = _bound(tuple(sorted(options.items())))
    return core_algos.register_adv_est(name)(fn)


@functools.lru_cache(maxsize=None)
def _bound(options: tuple[tuple[str, Any], ...]):
    """One function object per option set, so re-registering identical options is idempotent."""
    return functools.partial(bot_grpo_advantage, options=dict(options))
