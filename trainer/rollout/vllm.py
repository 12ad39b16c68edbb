"""Rollouts with vLLM (optional extra ``[vllm]``, GPU only), colocated with the trainer.

Thin on purpose: vLLM's own API does the work; this module turns its outputs into a
:class:`RolloutBatch` (tested without vLLM against the output shape vLLM documents) and pushes
the trained weights into the engine after each optimizer step. Not run on this project's CI
machines, which have no GPU: see docs/trainer.md for what was and was not exercised.
"""
from __future__ import annotations

import time
from typing import Any, Optional, Sequence

import torch

from .alignment import token_spans
from .base import RolloutBatch, SamplingParams


def to_batch(outputs: Sequence[Any], prompt_ids: list[list[int]], tokenizer, group_size: int,
             pad_id: int, eos_id: int) -> RolloutBatch:
    """A :class:`RolloutBatch` from vLLM ``RequestOutput``s, one per prompt with ``n=group_size``.

    Each completion needs ``token_ids`` and ``logprobs`` (one ``{token_id: Logprob}`` dict per
    position, as returned with ``SamplingParams(logprobs=0)``).
    """
    rows = [c for out in outputs for c in out.outputs]
    if len(rows) != len(prompt_ids) * group_size:
        raise ValueError(f"expected {len(prompt_ids) * group_size} completions, got {len(rows)}")
    T = max(1, max(len(c.token_ids) for c in rows))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    logprobs = torch.zeros((len(rows), T))
    mask = torch.zeros((len(rows), T), dtype=torch.bool)
    texts, spans, truncated = [], [], []
    for i, c in enumerate(rows):
        tokens = list(c.token_ids)
        ids[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        mask[i, : len(tokens)] = True
        for t, (token, entry) in enumerate(zip(tokens, c.logprobs or [])):
            logprobs[i, t] = entry[token].logprob
        text, s = token_spans(tokenizer, tokens)
        texts.append(text)
        spans.append(s)
        truncated.append(not tokens or tokens[-1] != eos_id)
    return RolloutBatch(prompt_ids=prompt_ids, completion_ids=ids, completion_mask=mask, behaviour_logprobs=logprobs,
                        texts=texts, spans=spans, truncated=torch.tensor(truncated), group_size=group_size)


class VLLMEngine:
    """Samples with a colocated ``vllm.LLM`` and keeps its weights equal to ``model``'s."""

    def __init__(self, model, tokenizer, model_path: str, *, seed: int = 0, gpu_memory_utilization: float = 0.3,
                 sleep_between_steps: bool = True, **llm_kwargs: Any):
        from vllm import LLM  # the [vllm] extra

        self.model, self.tokenizer, self.seed = model, tokenizer, seed
        self.eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.sleep_between_steps = sleep_between_steps
        self.llm = LLM(model=model_path, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                       enable_sleep_mode=sleep_between_steps, **llm_kwargs)
        self._asleep = False

    def generate(self, prompts: Sequence[str], group_size: int, sampling: SamplingParams,
                 seeds: Optional[Sequence[int]] = None) -> RolloutBatch:
        from vllm import SamplingParams as VSampling

        started = time.perf_counter()
        self._wake()
        seeds = list(seeds) if seeds is not None else [self.seed + i for i in range(len(prompts))]
        params = [VSampling(n=group_size, temperature=sampling.temperature, top_p=sampling.top_p,
                            max_tokens=sampling.max_new_tokens, logprobs=0, seed=int(s)) for s in seeds]
        prompt_ids = [self.tokenizer(p)["input_ids"] for p in prompts]
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False)
        if self.sleep_between_steps:  # free the KV cache for the training step
            self.llm.sleep(level=1)
            self._asleep = True
        batch = to_batch(outputs, prompt_ids, self.tokenizer, group_size, self.pad_id, self.eos_id)
        batch.timings["generate"] = time.perf_counter() - started
        return batch

    def sync_weights(self) -> None:
        """Push the trained weights into the engine (called after each optimizer step)."""
        self._wake()
        weights = ((name, p.detach()) for name, p in self.model.state_dict().items())
        runner = self.llm.llm_engine.model_executor.driver_worker.worker.model_runner
        runner.model.load_weights(weights)
        self.llm.reset_prefix_cache()

    def _wake(self) -> None:
        if self._asleep:
            self.llm.wake_up()
            self._asleep = False
