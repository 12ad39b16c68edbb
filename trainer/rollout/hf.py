"""Rollouts with a Hugging Face causal LM and a lean decode loop of our own.

Why not ``model.generate``: on small models its per-step bookkeeping dominates, it keeps
decoding rows that have finished (wasted work when lengths vary), and its sampling draws from
one global RNG, so a rollout depends on which other prompts share its batch. Here:

* one prefill over left-padded prompts, then one single-token forward per step on a KV cache;
* rows that emit an end token (the tokenizer's eos or any of the generation config's, the
  same set vLLM stops at: :func:`~trainer.rollout.prompts.stop_token_ids`) leave the batch
  (their cache rows are dropped), so a step costs what the *unfinished* rollouts cost;
* prompts (text or chat conversations) are encoded by the shared
  :class:`~trainer.rollout.prompts.PromptEncoder`;
* each prompt's G rollouts draw their uniforms from a generator seeded by that prompt's seed,
  so the same prompt and weights give the same rollouts on any rank and in any batch, and a
  step samples every row in one batched inverse-CDF lookup;
* under FSDP, ranks that finish early keep stepping with a dummy forward until all have
  finished, because every sharded forward is a collective;
* with ``source`` (the asynchronous pipeline) the engine samples from a model of its own and
  copies ``source``'s weights into it in :meth:`prepare` (on the trainer's thread, when the
  policy has changed; a LoRA policy's merged, :func:`~botgrpo.trainer.models.lora.export_weights`): after
  that, :meth:`generate` reads nothing of the policy, so it can run on another thread while
  the policy is updated.
"""
from __future__ import annotations

import functools
import inspect
import time
from typing import Optional, Sequence

import torch

from botgrpo.trainer.models.lora import base_model, export_weights
from botgrpo.trainer.models.precision import autocast
from botgrpo.trainer.rollout.alignment import token_spans
from botgrpo.trainer.rollout.base import RolloutBatch, SamplingParams
from botgrpo.trainer.rollout.prompts import PromptEncoder, stop_token_ids


def _sample(logits: torch.Tensor, sampling: SamplingParams, uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Next tokens (inverse-CDF draws with the given uniforms, one per row) and their log-probs
    under the temperature-scaled distribution.

    Top-p restricts what can be drawn; the log-prob reported is that of the full
    temperature-scaled softmax, which is what the trainer recomputes.
    """
    logprobs = torch.log_softmax(logits.float() / sampling.temperature, dim=-1)
    probs = logprobs.exp()
    if sampling.top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        outside = sorted_p.cumsum(-1) - sorted_p > sampling.top_p
        probs = probs.scatter(-1, order, sorted_p.masked_fill(outside, 0.0))
    cdf = probs.cumsum(-1)
    targets = (uniforms.to(cdf.device) * cdf[:, -1])[:, None]
    tokens = torch.searchsorted(cdf, targets, right=True).squeeze(1).clamp_max(cdf.shape[-1] - 1)
    return tokens, logprobs.gather(1, tokens[:, None]).squeeze(1)


@functools.lru_cache(maxsize=None)
def _forward_params(model_class) -> frozenset[str]:
    return frozenset(inspect.signature(model_class.forward).parameters)


def _cache_of(output):
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


class HFEngine:
    """Batched sampling from ``model`` (any ``AutoModelForCausalLM``) with ``tokenizer``."""

    def __init__(self, model, tokenizer, *, seed: int = 0, everyone_finished=None,
                 encoder: Optional[PromptEncoder] = None, stop_ids: Optional[Sequence[int]] = None,
                 bf16: bool = False, source=None):
        """``everyone_finished(local_done) -> bool`` synchronises the decode loop across ranks
        when the model is sharded (FSDP): every rank must run the same number of forwards.
        ``stop_ids`` default to the tokenizer's eos and the model's generation config's;
        ``bf16`` samples under the trainer's autocast. ``source``: the policy whose weights
        ``model`` (then a separate, unsharded copy) is given in :meth:`prepare`."""
        self.model, self.tokenizer, self.seed, self.bf16 = model, tokenizer, seed, bf16
        self.source, self.stale = source, source is not None
        self.everyone_finished = everyone_finished or (lambda local_done: local_done)
        self.encoder = encoder or PromptEncoder(tokenizer)
        self.stop_ids = list(stop_ids) if stop_ids else stop_token_ids(tokenizer, getattr(model, "generation_config", None))
        self.eos_id = self.stop_ids[0]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id

    def sync_weights(self) -> None:
        """After an optimizer step: nothing to do when the engine samples from the trained model
        itself; with a ``source``, its copy is stale until the next :meth:`prepare`."""
        if self.source is not None:
            self.stale = True

    @torch.no_grad()
    def prepare(self) -> None:
        """Copy the policy's current weights into the engine's model if they changed (a collective
        under FSDP: every rank calls it, on the trainer's thread)."""
        if not self.stale:
            return
        own = self.model.state_dict()
        for name, tensor in export_weights(self.source, next(self.model.parameters()).dtype):
            own[name].copy_(tensor)
        self.stale = False

    def encode_prompts(self, prompts) -> list[list[int]]:
        return self.encoder(prompts)

    def generate(self, prompts: Sequence, group_size: int, sampling: SamplingParams,
                 seeds: Optional[Sequence[int]] = None) -> RolloutBatch:
        started = time.perf_counter()
        self.prepare()
        prompt_ids = self.encode_prompts(prompts)
        ids, logprobs, lengths = self.sample_ids(prompt_ids, group_size, sampling, seeds)
        batch = self._package(prompt_ids, ids, logprobs, lengths, group_size)
        batch.timings["generate"] = time.perf_counter() - started
        return batch

    @torch.no_grad()
    def sample_ids(self, prompt_ids: list[list[int]], group_size: int, sampling: SamplingParams,
                   seeds: Optional[Sequence[int]] = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(ids, logprobs, lengths)`` for token-id prompts: ``(B, max_new_tokens)`` tokens and
        log-probs, ``(B,)`` lengths, rows grouped by prompt."""
        seeds = list(seeds) if seeds is not None else [self.seed + i for i in range(len(prompt_ids))]
        # every random number a prompt's group will use, drawn up front from that prompt's seed:
        # one uniform per row and step, so a step samples all rows in one inverse-CDF lookup
        uniforms = torch.cat([torch.rand(group_size, sampling.max_new_tokens,
                                         generator=torch.Generator().manual_seed(int(s))) for s in seeds])
        was_training = self.model.training
        self.model.eval()
        try:
            with autocast(self.bf16, next(self.model.parameters()).device):
                return self._decode(prompt_ids, group_size, sampling, uniforms)
        finally:
            self.model.train(was_training)

    def _prefill_inputs(self, rows: list[list[int]], device) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(p) for p in rows)
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, p in enumerate(rows):
            input_ids[i, width - len(p):] = torch.tensor(p)
            attention[i, width - len(p):] = 1
        return input_ids.to(device), attention.to(device)

    def _decode(self, prompt_ids, group_size, sampling, uniforms):
        """``(ids, logprobs, lengths)``: ``(B, max_new_tokens)`` tokens and log-probs, ``(B,)`` lengths."""
        device = next(self.model.parameters()).device
        B, max_new = len(prompt_ids) * group_size, sampling.max_new_tokens
        input_ids, attention = self._prefill_inputs([p for p in prompt_ids for _ in range(group_size)], device)
        positions = (attention.cumsum(1) - 1).clamp_min(0)
        alive = torch.arange(B, device=device)       # original row index of each row still decoding
        out_ids = torch.full((B, max_new), self.pad_id, dtype=torch.long)
        out_lp = torch.zeros((B, max_new))
        lengths = torch.full((B,), max_new, dtype=torch.long)

        out = self._forward(input_ids=input_ids, attention_mask=attention, position_ids=positions)
        cache, logits, next_pos = _cache_of(out), out.logits[:, -1], positions[:, -1] + 1
        finished = False
        for t in range(max_new - 1):
            if not finished:
                tokens, done = self._record(t, logits, sampling, uniforms, alive, out_ids, out_lp, lengths)
                finished = bool(done.all())
            if self.everyone_finished(finished):
                return out_ids, out_lp, lengths
            if finished:  # other ranks still decode: keep their sharded forwards company
                self._forward(input_ids=input_ids[:1, -1:])
                continue
            if bool(done.any()):  # finished rows leave the batch, cache rows included
                keep = (~done).nonzero().squeeze(1)
                cache.batch_select_indices(keep)
                alive, tokens = alive[keep], tokens[keep]
                attention, next_pos = attention[keep], next_pos[keep]
            attention = torch.cat([attention, attention.new_ones((attention.shape[0], 1))], dim=1)
            out = self._forward(input_ids=tokens[:, None], attention_mask=attention, position_ids=next_pos[:, None],
                                cache=cache)
            cache, logits, next_pos = _cache_of(out), out.logits[:, -1], next_pos + 1
        if not finished:
            self._record(max_new - 1, logits, sampling, uniforms, alive, out_ids, out_lp, lengths)
        return out_ids, out_lp, lengths

    def _record(self, t, logits, sampling, uniforms, alive, out_ids, out_lp, lengths):
        """Sample step ``t`` for the live rows and write it into the outputs; ``(tokens, done)``."""
        rows = alive.cpu()
        tokens, logprobs = _sample(logits, sampling, uniforms[rows, t])
        out_ids[rows, t], out_lp[rows, t] = tokens.cpu(), logprobs.cpu()
        done = torch.isin(tokens, self._stop_tensor(tokens.device))
        lengths[rows[done.cpu()]] = t + 1
        return tokens, done

    @functools.lru_cache(maxsize=4)
    def _stop_tensor(self, device) -> torch.Tensor:
        return torch.tensor(self.stop_ids, dtype=torch.long, device=device)

    def _forward(self, cache=None, **inputs):
        """One forward returning only the last position's logits, across transformers versions
        (the KV cache argument is ``cache`` from 5.x on, ``past_key_values`` before)."""
        params = _forward_params(type(base_model(self.model)))  # under a peft wrapper: the model it passes them to
        if "logits_to_keep" in params:
            inputs["logits_to_keep"] = 1
        if cache is not None:
            inputs["cache" if "cache" in params else "past_key_values"] = cache
        return self.model(use_cache=True, **inputs)

    def _package(self, prompt_ids, ids, logprobs, lengths, group_size) -> RolloutBatch:
        T = int(lengths.max()) if lengths.numel() else 1
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        texts, spans = [], []
        for i in range(ids.shape[0]):
            text, s = token_spans(self.tokenizer, ids[i, : lengths[i]].tolist())
            texts.append(text)
            spans.append(s)
        truncated = ~torch.isin(ids.gather(1, (lengths - 1).clamp_min(0)[:, None]).squeeze(1), self._stop_tensor("cpu"))
        return RolloutBatch(prompt_ids=prompt_ids, completion_ids=ids[:, :T], completion_mask=mask[:, :T],
                            behaviour_logprobs=torch.where(mask, logprobs, 0.0)[:, :T], texts=texts, spans=spans,
                            truncated=truncated, group_size=group_size)
