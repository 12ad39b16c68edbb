"""Importing this module registers BoT-GRPO in verl (0.9.1), in whichever process imports it.

Name it in ``VERL_USE_EXTERNAL_MODULES`` (verl imports it from ``import verl`` in every process
of the run, its TaskRunner and reward workers included) or as a reward-manager module path; see
:mod:`botgrpo.trainer.integrations.verl` for the command line. Registers:

* the advantage estimators ``bot_grpo`` and ``bot_grpo_paper`` (``algorithm.adv_estimator=bot_grpo``;
  options from ``algorithm.bot_grpo``, e.g. ``+algorithm.bot_grpo.min_std=0.25``);
* the reward manager ``botgrpo`` (:class:`BoTGRPORewardManager`): each response goes to the
  BoT-GRPO reward server with its tokens' character spans; the server's outcome is the scalar
  verl logs, its token scores travel in ``reward_extra_info``;
* the trainer modes ``botgrpo_<mode>`` for each of verl's v1 trainer modes (``sync``,
  ``colocate_async``, ``separate_async``): verl's trainer with the token scores put into
  ``rm_scores`` for the advantage step only (verl's reward metrics keep the outcome).

Server settings come from ``reward.reward_kwargs.botgrpo`` (``url``, ``task``, ``options``,
``api_key``), else from ``BOTGRPO_REWARD_URL`` / ``BOTGRPO_REWARD_TASK``.
"""
from __future__ import annotations

import asyncio
import math
import os
from typing import Any

import torch
from tensordict import TensorDict
from verl.experimental.reward_loop.reward_manager import register as register_reward_manager
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
from verl.trainer.ppo.v1 import trainer_base

from botgrpo.services.client import RewardClient
from botgrpo.trainer.integrations.verl import NAMES, reference_of, register, token_scores_row
from botgrpo.trainer.rollout.alignment import token_spans

EXTRA_KEYS = ("botgrpo_token_scores", "botgrpo_score", "botgrpo_unscored")


def _settings(config) -> dict[str, Any]:
    reward = config.get("reward", {}) if config is not None else {}
    values = dict((reward.get("reward_kwargs") or {}).get("botgrpo") or {})
    values.setdefault("url", os.environ.get("BOTGRPO_REWARD_URL"))
    values.setdefault("task", os.environ.get("BOTGRPO_REWARD_TASK"))
    if not values["url"] or not values["task"]:
        raise ValueError("the botgrpo reward manager needs reward.reward_kwargs.botgrpo.url and .task "
                         "(or BOTGRPO_REWARD_URL and BOTGRPO_REWARD_TASK)")
    return values


@register_reward_manager("botgrpo")
class BoTGRPORewardManager(RewardManagerBase):
    """Token scores for each response from a BoT-GRPO reward server (one request per rollout)."""

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None,
                 reward_model_tokenizer=None, **_: Any):
        super().__init__(config, tokenizer, compute_score)
        settings = _settings(config)
        self.task, self.options = settings["task"], dict(settings.get("options") or {})
        self.client = RewardClient(settings["url"], api_key=settings.get("api_key"))

    def score_ids(self, response_ids: list[int], reference) -> dict[str, Any]:
        """The server's verdict on one response: its outcome and one score per response token."""
        text, spans = token_spans(self.tokenizer, response_ids)
        [result] = self.client.score(self.task, [{"id": "0", "completion": text, "reference": reference,
                                                  "token_offsets": [list(s) for s in spans]}], self.options)
        return {"reward_score": result.score,
                "reward_extra_info": {"botgrpo_token_scores": result.rewards(),  # the recipe's units
                                      "botgrpo_score": result.score if result.ok else math.nan,
                                      "botgrpo_unscored": not result.ok}}

    async def run_single(self, data) -> dict:
        item = data[-1:][0]  # multi-output agent loops: the final output, as verl's own managers do
        length = item.batch["responses"].shape[-1]
        valid = int(item.batch["attention_mask"][-length:].sum())
        response_ids = item.batch["responses"][:valid].tolist()
        reference = reference_of(item.non_tensor_batch.get("reward_model"), item.non_tensor_batch.get("extra_info"))
        return await asyncio.get_running_loop().run_in_executor(None, self.score_ids, response_ids, reference)

    @classmethod
    def assemble_rm_scores(cls, data, scores) -> torch.Tensor:
        """verl's colocated path: each row's token scores on its response tokens (scalars: verl's layout)."""
        if not scores or not isinstance(scores[0], (list, tuple)):
            return super().assemble_rm_scores(data, scores)
        prompt_length = data.batch["prompts"].size(1)
        lengths = data.batch["attention_mask"][:, prompt_length:].sum(dim=1).tolist()
        rm_scores = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        for i, (row, n) in enumerate(zip(scores, lengths)):
            rm_scores[i, :n] = torch.tensor(token_scores_row({"reward_extra_info": {"botgrpo_token_scores": row}}, n))
        return rm_scores


def swap_in_token_scores(tq, batch):
    """Replace each row's ``rm_scores`` in TransferQueue with its token scores; returns the old ones."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["rm_scores", "extra_fields"])
    original = data["rm_scores"]
    lengths = original.offsets().diff().tolist()
    extras = list(data["extra_fields"].tolist() if hasattr(data["extra_fields"], "tolist") else data["extra_fields"])
    rows = [torch.tensor(token_scores_row(e, n), dtype=torch.float32) for e, n in zip(extras, lengths)]
    tokens = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
    tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id,
                    fields=TensorDict({"rm_scores": tokens}, batch_size=len(rows)))
    return original


class TokenRewardAdvantages:
    """Mixin for verl's v1 trainers: the advantage step sees the server's token scores."""

    def _compute_advantage(self, batch, metrics: dict):
        original = swap_in_token_scores(trainer_base.tq, batch)
        try:
            batch = super()._compute_advantage(batch, metrics)
        finally:  # verl's reward metrics and logs keep the outcome on the last token
            batch = trainer_base.tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id,
                                                 fields=TensorDict({"rm_scores": original}, batch_size=len(batch.keys)))
        return batch


def _register_trainer_modes() -> None:
    for name, base in list(trainer_base.TRAINER_REGISTRY.items()):
        if not name.startswith("botgrpo_"):
            cls = type(f"BoTGRPO{base.__name__}", (TokenRewardAdvantages, base), {"__module__": __name__})
            trainer_base.register_trainer(f"botgrpo_{name}")(_cached(name, cls))


_MODES: dict[str, type] = {}


def _cached(name: str, cls: type) -> type:
    return _MODES.setdefault(name, cls)  # importing twice registers the same class (verl's duplicate check)


for _name in NAMES:
    register(_name)
_register_trainer_modes()
