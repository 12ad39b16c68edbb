"""What verl and SkyRL hand a registered advantage estimator and a reward source, and BoT-GRPO's
answer to it; framework-free (SkyRL's ``ppo_utils`` descends from verl's ``core_algos``, and both
call an estimator the same way).

* Estimator call: keyword arguments ``token_level_rewards`` ``(bs, T)`` float, ``response_mask``
  ``(bs, T)`` 0/1 and ``index`` (one group uid per row: verl's object array of strings, SkyRL's
  list of strings), returning ``(advantages, returns)``. Both frameworks pass more keywords
  (``config``, ``gamma``, ``values``...), which BoT-GRPO has no use for.
* Reference: each row's ground truth is ``{"ground_truth": ...}`` in a per-row dict (verl's
  ``reward_model``, SkyRL's ``env_extras[i]["reward_spec"]``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Sequence

import numpy as np
import torch

from botgrpo.trainer.algo.advantages import ESTIMATORS, compute_advantages
from botgrpo.trainer.algo.settings import keyword_options

DEFAULT_NAME = "bot_grpo"
NAMES = ("bot_grpo", "bot_grpo_paper")
OPTIONS_KEY = "bot_grpo"  # the algorithm config section holding the estimator's options, in both frameworks


def checked_options(section: Any, estimator: str, where: str) -> dict[str, Any]:
    """``section`` (a mapping of estimator options, or None) as a dict, checked against what
    ``estimator`` accepts: ValueError naming ``where``, the unknown option and the valid ones."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise ValueError(f"{where} must be a mapping of estimator options, got {type(section).__name__}")
    options = {str(k): v for k, v in section.items()}
    accepted = keyword_options(ESTIMATORS[estimator])
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(f"{where}: estimator {estimator!r} takes no option {unknown[0]!r}; "
                         f"its options: {sorted(accepted)}")
    return options


def group_ids_from_uids(index: Optional[Sequence[Any]], batch_size: int) -> torch.Tensor:
    """``(bs,)`` int64 dense group ids: equal uids share an id; no uids puts every row in one group.

    The frameworks' uids are strings, which ``compute_advantages`` cannot take, so they are
    mapped to integers in order of first appearance.
    """
    if index is None:
        return torch.zeros(batch_size, dtype=torch.long)
    uids = np.asarray(index, dtype=object)
    if uids.shape != (batch_size,):
        raise ValueError(f"index must hold one uid per row ({batch_size}), got shape {uids.shape}")
    ids: dict[Any, int] = {}
    return torch.tensor([ids.setdefault(uid, len(ids)) for uid in uids.tolist()], dtype=torch.long)


def uid_group_advantages(token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                         index: Optional[Sequence[Any]], estimator: str,
                         options: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """BoT-GRPO advantages for the estimator call, returned as both ``advantages`` and ``returns``
    (as for the frameworks' own critic-free estimators, GRPO and RLOO).

    A row with a non-finite reward on a response token is unscored (NaN: the server could not
    score it): advantage 0, outside its group's statistics.
    """
    mask = response_mask.bool()
    scored = torch.where(mask, token_level_rewards, 0.0).isfinite().all(dim=1)
    mask = mask & scored[:, None]
    groups = group_ids_from_uids(index, token_level_rewards.shape[0]).to(token_level_rewards.device)
    with torch.no_grad():
        advantages = compute_advantages(estimator, token_level_rewards, mask, groups, **options)
    return advantages, advantages


def reference_of(reward_spec: Optional[dict], extras: Optional[dict]) -> Optional[dict]:
    """Our server's ``reference`` from a row's fields: ``extras["reference"]`` when it is a dict,
    else ``reward_spec["ground_truth"]`` (a dict as is, anything else as the answer)."""
    if extras and isinstance(extras.get("reference"), dict):
        return extras["reference"]
    truth = (reward_spec or {}).get("ground_truth")
    if truth is None or isinstance(truth, dict):
        return truth
    return {"answer": str(truth)}
