"""BoT-GRPO inside TRL: :class:`BoTGRPOTrainer`, a drop-in ``GRPOTrainer`` with token-level rewards.

A TRL user switches by changing the class name; everything else (``GRPOConfig``, datasets, vLLM,
accelerate/DeepSpeed setups, loss types) stays TRL's. What changes:

* reward functions return one score **per completion token** (``list[list[float]]``), with TRL's
  usual signature ``fn(prompts, completions, completion_ids, **columns)``; a BoT-GRPO reward
  server can stand in for (or join) them: ``reward_url=..., reward_task=...``;
* the advantage of each token is BoT-GRPO's (:func:`botgrpo.trainer.algo.advantages.bot_grpo`), a ``(B, T)``
  tensor, instead of TRL's one value per completion.

How, with the least of TRL overridden (tested with trl 1.16.0; supported range ``>=1.16,<1.17``,
since both hooks are private TRL methods):

* ``_calculate_rewards`` calls the token-level functions itself, keeps the ``(B, T)`` token
  rewards, and hands TRL each completion's mean token reward, so TRL's logging and reward
  metrics still work (its completions table shows TRL's sequence-level advantage of that mean);
* ``_generate_and_score_completions`` runs unchanged, then replaces ``advantages`` with the
  per-token ones. TRL's ``_compute_loss`` already accepts ``(B, T)`` advantages (it unsqueezes
  only 1-D ones), so the loss, clipping, KL and aggregation (``loss_type``) are untouched.

TRL settings that shape advantages: groups are ``num_generations`` rollouts in training and
``num_generations_eval`` in evaluation, as in TRL; ``scale_rewards="group"`` (TRL's default) is
what BoT-GRPO does, per group's bag of tokens, and ``multi_objective_aggregation=
"sum_then_normalize"`` (the default) is how several token reward functions combine (weighted
per-token sum, then BoT-GRPO). The other values (``scale_rewards`` ``"batch"``/``"none"``,
``"normalize_then_sum"``) have no BoT-GRPO counterpart here and are refused at construction
rather than silently ignored.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import torch
from trl import GRPOTrainer

from botgrpo.services.client import RewardClient
from botgrpo.trainer.algo.advantages import compute_advantages
from botgrpo.trainer.rollout.alignment import token_spans

TokenRewardFunc = Callable[..., Sequence[Optional[Sequence[float]]]]
_NOT_COLUMNS = ("prompt", "completion", "completion_ids")


class RewardServerTokens:
    """A token-level reward function backed by a BoT-GRPO reward server.

    Each completion goes with its tokens' character spans as ``token_offsets``, so the server's
    scores line up with the policy's tokens one to one. ``reference_column`` names the dataset
    column holding each prompt's reference (TRL passes dataset columns to reward functions).
    The tokenizer is the trainer's unless given (:class:`BoTGRPOTrainer` fills it in).
    """

    def __init__(self, url: str, task: str, *, options: Optional[dict[str, Any]] = None,
                 api_key: Optional[str] = None, reference_column: str = "reference", tokenizer=None):
        self.task, self.options, self.reference_column = task, dict(options or {}), reference_column
        self.client = RewardClient(url, api_key=api_key)
        self.tokenizer = tokenizer
        self.__name__ = f"reward_server/{task}"  # TRL's metric name for this function

    def __call__(self, prompts, completions, completion_ids, **columns) -> list[Optional[list[float]]]:
        """Token scores per completion; None for one the server could not score (it then
        takes no part in the loss, see :class:`BoTGRPOTrainer`)."""
        if self.tokenizer is None:
            raise RuntimeError("RewardServerTokens needs a tokenizer (BoTGRPOTrainer sets its own)")
        references = columns.get(self.reference_column) or [None] * len(prompts)
        # TRL's own test for truncation: a completion that does not end in an end token hit the limit
        ends = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id} - {None}
        groups: dict[str, int] = {}
        rollouts = []
        for i, (prompt, ids, reference) in enumerate(zip(prompts, completion_ids, references)):
            ids = list(ids)
            text, spans = token_spans(self.tokenizer, ids)
            rollouts.append({"id": str(i), "group": str(groups.setdefault(str(prompt), len(groups))),
                             "completion": text, "token_offsets": [list(s) for s in spans], "reference": reference,
                             "finish_reason": "stop" if ids and ids[-1] in ends else "length"})
        return [r.rewards() if r.ok else None  # in the recipe's units: min_std is a floor in them
                for r in self.client.score(self.task, rollouts, self.options)]

    def close(self) -> None:
        self.client.close()


class BoTGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with token-level rewards and BoT-GRPO per-token advantages.

    ``reward_funcs``: token-level reward functions (one callable or a list), combined per token
    with ``args.reward_weights``. A function may return ``None`` for a completion it cannot
    score; a completion no function scores gets zero advantage. ``reward_url`` and
    ``reward_task`` (with ``reward_options``, ``reward_api_key``) add a :class:`RewardServerTokens`.
    ``advantage_estimator`` is ``bot_grpo`` (the bounded form, as ``botgrpo train`` and verl use it)
    or ``bot_grpo_paper`` (the paper's estimator exactly); ``advantage_options`` go to it (``eps``,
    ``use_reward_to_go``, ``min_std``).
    Other arguments are ``GRPOTrainer``'s.
    """

    def __init__(self, model, reward_funcs: TokenRewardFunc | Sequence[TokenRewardFunc] | None = None, *,
                 reward_url: Optional[str] = None, reward_task: Optional[str] = None,
                 reward_options: Optional[dict[str, Any]] = None, reward_api_key: Optional[str] = None,
                 advantage_estimator: str = "bot_grpo", advantage_options: Optional[dict[str, Any]] = None,
                 **kwargs: Any):
        funcs = list(reward_funcs) if isinstance(reward_funcs, (list, tuple)) else [reward_funcs] if reward_funcs else []
        if reward_url is not None:
            if reward_task is None:
                raise ValueError("reward_url needs reward_task (the server task that scores the completions)")
            funcs.append(RewardServerTokens(reward_url, reward_task, options=reward_options, api_key=reward_api_key))
        if not funcs:
            raise ValueError("give token-level reward_funcs, a reward_url + reward_task, or both")
        if any(isinstance(f, (str, torch.nn.Module)) for f in funcs):
            raise TypeError("BoTGRPOTrainer takes token-level reward callables, not reward models")
        _check_supported(kwargs.get("args"))
        super().__init__(model=model, reward_funcs=funcs, **kwargs)
        for f in self.reward_funcs:
            if isinstance(f, RewardServerTokens) and f.tokenizer is None:
                f.tokenizer = self._tokenizer
        if advantage_estimator not in ("bot_grpo", "bot_grpo_paper"):
            raise ValueError(f"advantage_estimator must be 'bot_grpo' or 'bot_grpo_paper', got {advantage_estimator!r}")
        self.advantage_estimator, self.advantage_options = advantage_estimator, dict(advantage_options or {})
        self._token_rewards: Optional[list[list[float]]] = None

    # ------------------------------------------------------------------ TRL hooks
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        """Score every token; keep the weighted ``(B, T)`` rewards, return TRL its per-completion means.

        Returns ``(B_global, n_funcs)`` gathered over processes, as TRL expects (NaN where a
        function returned ``None``).
        """
        columns = {k: [x[k] for x in inputs] for k in inputs[0] if k not in _NOT_COLUMNS}
        columns["trainer_state"] = self.state
        per_func = [self._score(f, prompts, completions, completion_ids_list, columns) for f in self.reward_funcs]
        weights = self.reward_weights.tolist()
        self._token_rewards = [_combine([scores[i] for scores in per_func], weights)
                               for i in range(len(completion_ids_list))]
        means = torch.tensor([[_mean(scores[i]) for scores in per_func] for i in range(len(prompts))],
                             dtype=torch.float32, device=self.accelerator.device)
        return self.accelerator.gather(means)

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        output["advantages"] = self._token_advantages(output["completion_mask"])
        self._token_rewards = None
        return output

    # ------------------------------------------------------------------ helpers
    def _score(self, func, prompts, completions, completion_ids, columns) -> list[Optional[list[float]]]:
        """One function's token scores, checked: a list per completion, one score per token (or None)."""
        scores = list(func(prompts=prompts, completions=completions, completion_ids=completion_ids, **columns))
        name = getattr(func, "__name__", type(func).__name__)
        if len(scores) != len(completion_ids):
            raise ValueError(f"reward function {name!r} returned {len(scores)} rows for {len(completion_ids)} completions")
        for i, (row, ids) in enumerate(zip(scores, completion_ids)):
            if row is not None and len(row) != len(ids):
                raise ValueError(f"reward function {name!r}: completion {i} has {len(ids)} tokens "
                                 f"but {len(row)} scores (it must score every token)")
        return [None if row is None else [float(x) for x in row] for row in scores]

    def _token_advantages(self, completion_mask: torch.Tensor) -> torch.Tensor:
        """``(B_local, T)`` BoT-GRPO advantages; group statistics over the whole gathered batch."""
        rows, width = self._token_rewards, completion_mask.shape[1]
        rewards = torch.zeros(completion_mask.shape, dtype=torch.float32)
        scored = torch.ones(len(rows), dtype=torch.bool)
        for i, row in enumerate(rows):
            if row is None:
                scored[i] = False
            else:
                rewards[i, : min(len(row), width)] = torch.tensor(row[:width])
        device = completion_mask.device
        mask = completion_mask.bool() & scored.to(device)[:, None]
        rewards, mask = self._gather_padded(rewards.to(device)), self._gather_padded(mask)
        group_size = self.num_generations if self.model.training else self.num_generations_eval  # as TRL groups
        groups = torch.arange(rewards.shape[0], device=device) // group_size
        advantages = compute_advantages(self.advantage_estimator, rewards, mask, groups, **self.advantage_options)
        start = self.accelerator.process_index * len(rows)
        return advantages[start: start + len(rows), :width]

    def _gather_padded(self, local: torch.Tensor) -> torch.Tensor:
        """All processes' rows, right-padded to the widest (completion widths differ per process)."""
        if self.accelerator.num_processes == 1:
            return local
        from accelerate.utils import pad_across_processes

        return self.accelerator.gather(pad_across_processes(local, dim=1, pad_index=0))


SUPPORTED = {"scale_rewards": ("group",), "multi_objective_aggregation": ("sum_then_normalize",)}


def _check_supported(args) -> None:
    """Refuse the GRPOConfig values BoT-GRPO's advantages would silently ignore."""
    for name, allowed in SUPPORTED.items():
        value = getattr(args, name, allowed[0]) if args is not None else allowed[0]
        if value not in allowed:
            raise ValueError(f"BoTGRPOTrainer supports {name}={allowed[0]!r} only (got {value!r}): BoT-GRPO "
                             "normalises each group's bag of token rewards, after summing the reward functions")


def _combine(rows: Sequence[Optional[list[float]]], weights: Sequence[float]) -> Optional[list[float]]:
    """Weighted per-token sum of the functions that scored this completion (None if none did)."""
    present = [(w, row) for w, row in zip(weights, rows) if row is not None]
    if not present:
        return None
    return [sum(w * row[t] for w, row in present) for t in range(len(present[0][1]))]


def _mean(row: Optional[list[float]]) -> float:
    return sum(row) / len(row) if row else math.nan
