"""The training loop: generate, score (in the background), estimate advantages, update.

Per step, on each rank: take this rank's share of the step's prompts (the order is seeded, so
all ranks agree), sample G rollouts per prompt, send them to the reward server, compute old and
reference log-probs while the server scores, shape rewards (overlong penalty, dynamic
sampling), estimate advantages and update. Checkpoints, metrics and evaluations around it.

With ``rollout.async_steps: 1`` (:mod:`botgrpo.trainer.run.pipeline`) the next step's rollouts are
sampled and scored on a background thread while this step updates; on-policy is the default.
The update takes the batch in parts of whole groups (:meth:`Trainer._update`): shaping,
advantages, forward and backward of each, then one optimizer step. On-policy, where that is exact
(``optim.streamed_update``, :mod:`botgrpo.trainer.run.streamed`), a part is a few groups taken as
soon as their rollouts are scored; otherwise it is one part, every group, once all are scored.
"""
from __future__ import annotations

import copy
import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

import torch
from transformers import AutoTokenizer

from botgrpo.trainer.algo.advantages import compute_advantages
from botgrpo.trainer.algo.shaping import shape
from botgrpo.trainer.config import TrainConfig
from botgrpo.trainer.data import PromptOrder, load_examples
from botgrpo.trainer.evaluate import evaluate
from botgrpo.trainer.models import lora
from botgrpo.trainer.models.packing import enable_packed_attention
from botgrpo.trainer.models.policy import make_layout
from botgrpo.trainer.models.precision import disable_dropout, enable_gradient_checkpointing, load_causal_lm
from botgrpo.trainer.rewards import RewardSource, ScoredBatch
from botgrpo.trainer.rollout.base import RolloutBatch
from botgrpo.trainer.rollout.hf import HFEngine
from botgrpo.trainer.rollout.prompts import PromptEncoder, stop_token_ids
from botgrpo.trainer.run import checkpoint
from botgrpo.trainer.run.distributed import (Dist, all_true, broadcast_object, full_state_dicts, gather_objects,
                                             init_from_env, load_full_state_dicts, unwrap, wrap)
from botgrpo.trainer.run.pipeline import Rollouts
from botgrpo.trainer.run.progress import SILENT
from botgrpo.trainer.run.streamed import group_rows, scored_parts, streamable
from botgrpo.trainer.run.tracking import MetricsLog, Stopwatch, plot, read
from botgrpo.trainer.run.update import Update, UpdateBatch, batch_logprobs, mean_of_passes


def _schedule(cfg: TrainConfig):
    def factor(step: int) -> float:
        if step < cfg.optim.warmup_steps:
            return (step + 1) / (cfg.optim.warmup_steps + 1)
        progress = (step - cfg.optim.warmup_steps) / max(1, cfg.steps - cfg.optim.warmup_steps)
        if cfg.optim.lr_schedule == "linear":
            return max(0.0, 1.0 - progress)
        if cfg.optim.lr_schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
        return 1.0
    return factor


def shape_rows(batch: RolloutBatch, scored: ScoredBatch, rows: list[int], algo, max_new_tokens: int,
               overlong_zone) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`botgrpo.trainer.algo.shaping.shape` of ``rows`` (whole groups, in order): token
    rewards, sequence rewards, loss mask."""
    at = torch.tensor(rows, dtype=torch.long)
    return shape(scored.token_rewards[at], scored.seq_rewards[at], scored.scored[at], batch.completion_mask[at],
                 batch.lengths[at], batch.group_size, max_new_tokens=max_new_tokens, overlong_zone=overlong_zone,
                 overlong_factor=algo.overlong_penalty, dynamic_sampling=algo.dynamic_sampling)


def _masked_mean(values: torch.Tensor) -> Optional[float]:
    values = values[~values.isnan()]
    return float(values.mean()) if values.numel() else None


class Trainer:
    def __init__(self, cfg: TrainConfig, *, dist: Optional[Dist] = None, reward_source=None):
        """``reward_source``: anything with :class:`RewardSource`'s ``submit``/``close`` (an
        in-process scorer, say) instead of the reward server at ``cfg.reward.url``."""
        self.cfg, self.d = cfg, dist or init_from_env()
        self.algo, self.bf16 = cfg.algorithm.settings(), cfg.optim.use_bf16()
        self.overlong_zone = cfg.overlong_zone()
        self.out = Path(cfg.output_dir)
        if cfg.rollout.prompts_per_step % self.d.world:
            raise ValueError(f"rollout.prompts_per_step={cfg.rollout.prompts_per_step} must be a multiple of the "
                             f"{self.d.world} ranks")
        torch.manual_seed(cfg.seed)
        self.tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        self.encoder = PromptEncoder(self.tokenizer, cfg.data.apply_chat_template)
        self.examples = load_examples(cfg.data.dataset, cfg.data.prompt_column, cfg.data.reference_column)
        self.eval_examples = (load_examples(cfg.eval.dataset, cfg.data.prompt_column,
                                            cfg.data.reference_column)[: cfg.eval.prompts] if cfg.eval.dataset else [])
        self.encoder.check([e.prompt for e in self.examples + self.eval_examples])  # before any model loads
        self.device = self._device()
        model = load_causal_lm(cfg.model, self.device)  # float32 master weights, whatever the checkpoint's dtype
        self.stop_ids = stop_token_ids(self.tokenizer, model.generation_config)
        if cfg.optim.disable_dropout:
            disable_dropout(model)
        if cfg.optim.gradient_checkpointing:
            enable_gradient_checkpointing(model)
        if cfg.optim.packing:  # sdpa for rollouts and padded rows; per-sequence attention for packed rows
            enable_packed_attention(model)
        # the asynchronous pipeline samples from a copy of its own (plain, unsharded: no collectives
        # on the sampling thread; without adapters: LoRA's are merged into what it is given), given
        # the policy's weights before each update
        self._sampler = (copy.deepcopy(model).eval().requires_grad_(False)
                         if cfg.rollout.async_steps and cfg.rollout.engine == "hf" else None)
        if cfg.optim.lora is not None:  # adapters on the frozen model (botgrpo.trainer.models.lora)
            model = lora.apply_lora(model, cfg.optim.lora)
        self.ref = None
        if self.algo.kl_coef > 0:  # no reference model at all unless the KL term is on
            self.ref = lora.AdapterDisabled(model) if cfg.optim.lora is not None else self._reference()
        self.model = wrap(model, cfg.distributed, self.d)
        self.optimizer = torch.optim.AdamW(lora.trainable_parameters(self.model), lr=cfg.optim.lr,
                                           weight_decay=cfg.optim.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _schedule(cfg))
        self.sharded = self.d.enabled and cfg.distributed == "fsdp"
        self.order = PromptOrder(len(self.examples), cfg.seed)
        self.step, self.evals, self.resumed_from = 0, [], None
        self._pending: Optional[Rollouts] = None   # the next step's rollouts (async pipeline)
        self._restored: Optional[dict] = None
        self._background = ThreadPoolExecutor(1, thread_name_prefix="rollouts") if cfg.rollout.async_steps else None
        if reward_source is None:
            if not cfg.reward.url:
                raise ValueError("no reward server: set reward.url, or run the server in this process with "
                                 "botgrpo.embedded.reward_server_for(cfg) (what `botgrpo train` does)")
            reward_source = RewardSource(cfg.reward.url, cfg.reward.task, cfg.reward.options, cfg.reward.api_key)
        self.rewards = reward_source
        if cfg.checkpoint.resume:
            self._resume()
        elif self.d.main:  # a new run in an old directory starts new records
            for name in ("metrics.jsonl", "evals.jsonl"):
                (self.out / name).unlink(missing_ok=True)
        # after resuming: an engine with its own copy of the weights (vLLM) starts from the resumed ones
        self.engine = self._engine((lambda done: all_true(done, self.d)) if self.sharded and self._sampler is None
                                   else None)
        if self._restored is not None:  # the checkpoint's next batch, scored again
            self._pending = Rollouts.from_state(self._restored, None)
            self._pending.scores = self._submit(self._pending.batch, self._pending.indices)
        self.log = MetricsLog(self.out, cfg.log.tensorboard) if self.d.main else None

    def _reference(self) -> torch.nn.Module:
        """A frozen copy of the starting policy (a full fine-tune's KL reference)."""
        ref = load_causal_lm(self.cfg.model, self.device).eval().requires_grad_(False)
        disable_dropout(ref)
        if self.cfg.optim.packing:
            enable_packed_attention(ref)
        return ref

    def _device(self) -> torch.device:
        if not torch.cuda.is_available():
            return torch.device("cpu")
        torch.cuda.set_device(self.d.local_rank)  # vLLM and NCCL use the current device
        return torch.device("cuda", self.d.local_rank)

    def _engine(self, synced):
        if self.cfg.rollout.engine == "vllm":
            from botgrpo.trainer.rollout.vllm import VLLMEngine
            c, v = self.cfg, self.cfg.rollout.vllm  # a LoRA checkpoint holds an adapter only: start from the base
            start = c.model if c.optim.lora is not None else (self.resumed_from or c.model)
            return VLLMEngine(unwrap(self.model), self.tokenizer, start, seed=c.seed,
                              encoder=self.encoder, stop_ids=self.stop_ids, bf16=self.bf16, sleep=v.sleep,
                              gpu_memory_utilization=v.gpu_memory_utilization, max_model_len=v.max_model_len,
                              **v.kwargs)
        if self._sampler is not None:
            return self.hf_engine_class(self._sampler, self.tokenizer, seed=self.cfg.seed, encoder=self.encoder,
                                        stop_ids=self.stop_ids, bf16=self.bf16, source=unwrap(self.model))
        return self.hf_engine_class(unwrap(self.model), self.tokenizer, seed=self.cfg.seed, everyone_finished=synced,
                                    encoder=self.encoder, stop_ids=self.stop_ids, bf16=self.bf16)

    hf_engine_class = HFEngine

    # ------------------------------------------------------------------ one step
    def _prompts(self, index: int) -> tuple[list[int], list[int]]:
        """This rank's prompt indices for step ``index`` (0-based) and their per-prompt sampling
        seeds; steps must ask in order (the data order advances)."""
        chosen = self.order.take(self.cfg.rollout.prompts_per_step)
        mine = list(range(self.d.rank, len(chosen), self.d.world))
        seeds = [self.cfg.seed * 1_000_003 + index * 10_007 + j for j in mine]
        return [chosen[j] for j in mine], seeds

    def _submit(self, batch: RolloutBatch, indices: list[int]):
        return self.rewards.submit(batch, [self.examples[i].reference for i in indices])

    def _sample(self, index: int, indices: list[int], seeds: list[int], version: int) -> Rollouts:
        """Generate step ``index``'s rollouts and send them for scoring (the scores come back later)."""
        batch = self.engine.generate([self.examples[i].prompt for i in indices], self.cfg.rollout.group_size,
                                     self.cfg.rollout.sampling, seeds=seeds)
        return Rollouts(index, indices, seeds, version, batch, self._submit(batch, indices))

    def _layout(self, batch: RolloutBatch, rows: Optional[list[int]] = None):
        """The update layout of the whole batch (the same micro-batches on every rank), or of some
        of its rows, each with its own prompt (a streamed part)."""
        optim = self.cfg.optim
        sizes = dict(packing=optim.packing, micro_batch_size=optim.micro_batch_size,
                     micro_batch_tokens=optim.micro_batch_tokens)
        if rows is None:
            return make_layout(batch.prompt_ids, batch.completion_ids, batch.completion_mask, batch.group_size,
                               self.engine.pad_id, d=self.d, **sizes)
        return make_layout([batch.prompt_ids[r // batch.group_size] for r in rows], batch.completion_ids[rows],
                           batch.completion_mask[rows], 1, self.engine.pad_id, **sizes)

    def _update(self, batch: RolloutBatch, pending, streamed: bool, layout, old_logp: Optional[torch.Tensor],
                ref_logp: Optional[torch.Tensor], clock: Stopwatch) -> dict[str, float]:
        """``num_iterations`` optimizer steps (one when ``streamed``), each an :class:`Update` fed the
        batch's parts (:func:`scored_parts`) as their scores are in: shaping, advantages, forward and
        backward of each; then normalise, clip, step. Not streamed, the one part is the whole batch in
        ``layout``, the layout of its old and reference log-probs."""
        G, B = batch.group_size, batch.completion_mask.shape[0]
        sampling, passes, early = self.cfg.rollout.sampling, [], 0
        for iteration in range(self.cfg.optim.num_iterations):
            update = Update(self.model, self.optimizer, self.algo, rows=B, norm_len=sampling.max_new_tokens, d=self.d,
                            temperature=sampling.temperature, micro_batch_size=self.cfg.optim.micro_batch_size,
                            bf16=self.bf16, streamed=streamed, first_pass=iteration == 0)
            for groups, scored in scored_parts(pending, B // G, streamed, clock):
                with clock.lap("train"):
                    rows = group_rows(groups, G)
                    token_rewards, seq_rewards, mask = shape_rows(batch, scored, rows, self.algo,
                                                                  sampling.max_new_tokens, self.overlong_zone)
                    advantages = compute_advantages(self.algo.estimator, token_rewards, mask, torch.tensor(rows) // G,
                                                    seq_rewards, **self.algo.estimator_options)
                    if not streamed:  # every row, in the batch's micro-batches (the same count on every rank)
                        update.add(UpdateBatch(layout, mask, advantages, old_logp, ref_logp))
                    elif mask.any():  # the part's rows in the loss, laid out on their own (the others add zero)
                        keep = mask.any(1).nonzero().squeeze(1)
                        chosen = [rows[i] for i in keep.tolist()]
                        update.add(UpdateBatch(self._layout(batch, chosen), mask[keep], advantages[keep],
                                               ref_logp=ref_logp[chosen] if ref_logp is not None else None))
                early += 0 if pending.done() else len(groups)
            with clock.lap("train"):
                passes.append(update.finish(self.cfg.optim.max_grad_norm))
        return {**mean_of_passes(passes), "early_groups": early}

    def _rollouts(self) -> tuple[Rollouts, Optional[Any]]:
        """This step's rollouts, and the next step's being sampled meanwhile (async pipeline only)."""
        if self._background is None:  # on-policy: sampled now, from the weights about to be updated
            return self._sample(self.step, *self._prompts(self.step), self.step), None
        current, self._pending = self._pending, None
        if current is None:  # the first step (or a resume without a saved batch): nothing prefetched
            current = self._sample(self.step, *self._prompts(self.step), self.step)
        self.engine.prepare()  # the engine's copy := the weights before this update, read on this thread
        return current, self._background.submit(self._sample, self.step + 1, *self._prompts(self.step + 1), self.step)

    def _old_and_reference(self, batch: RolloutBatch, layout) -> tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
        """Old log-probs (the behaviour policy's when async; a pass of their own for several
        iterations) and the reference's, computed exactly as the update's forward is."""
        same_forward = dict(temperature=self.cfg.rollout.sampling.temperature,
                            micro_batch_size=self.cfg.optim.micro_batch_size, bf16=self.bf16)
        old_logp = ref_logp = None
        if self._background is not None:  # the ratio is against the policy that sampled the batch
            old_logp = batch.behaviour_logprobs
        elif self.cfg.optim.num_iterations > 1:
            old_logp = batch_logprobs(self.model, layout, **same_forward)
        if self.ref is not None:
            ref_logp = batch_logprobs(self.ref, layout, **same_forward)
        return old_logp, ref_logp

    def train_step(self) -> dict[str, Any]:
        clock = Stopwatch()
        current, upcoming = self._rollouts()
        batch, pending = current.batch, current.scores
        streamed = streamable(self.cfg, self.algo, self.d.world, pending) is None
        layout = None  # the whole batch's: one part's, and the old and reference passes' (a streamed part has its own)
        if not streamed or self.ref is not None:
            layout = self._layout(batch)
        with clock.lap("overlapped"):  # while the server scores
            old_logp, ref_logp = self._old_and_reference(batch, layout)
        stats = self._update(batch, pending, streamed, layout, old_logp, ref_logp, clock)
        with clock.lap("train"):
            self.scheduler.step()
            self.engine.sync_weights()
        staleness = self.step - current.version
        scored = pending.result()
        _, seq_rewards, mask = shape_rows(batch, scored, list(range(batch.completion_mask.shape[0])), self.algo,
                                          self.cfg.rollout.sampling.max_new_tokens, self.overlong_zone)
        self.step += 1
        with clock.lap("generate_wait"):
            if upcoming is not None:  # the next step's rollouts, sampled meanwhile (scores may be on the way)
                self._pending = upcoming.result()
        elapsed = clock.elapsed()
        tokens = int(batch.completion_mask.sum())
        defined = seq_rewards[seq_rewards.isfinite()]
        return {"step": self.step, "reward_mean": float(defined.mean()) if defined.numel() else math.nan,
                "reward_std": float(defined.std()) if defined.numel() > 1 else math.nan,
                "pass_rate": _masked_mean(scored.passed), "spec_rate": _masked_mean(scored.passed * scored.spec_passed),
                "kl": stats["kl"], "entropy": stats["entropy"], "clip_frac": stats["clip_frac"],
                "loss": stats["loss"], "grad_norm": stats["grad_norm"], "lr": self.scheduler.get_last_lr()[0],
                "first_ratio_error": stats["first_ratio_error"],
                "completion_len_mean": float(batch.lengths.float().mean()), "tokens_per_s": tokens / elapsed,
                "kept_rollouts": int(mask.any(1).sum()), "update_skipped": stats["skipped"],
                "reward_errors": scored.errors,
                "staleness": staleness, "update_streamed": int(streamed),
                "update_early_groups": stats["early_groups"],
                "time_generate": batch.timings["generate"], "time_score": scored.seconds,
                **{f"time_{name}": clock.laps.get(name, 0.0) for name in ("score_wait", "overlapped", "generate_wait",
                                                                          "train")},
                "time_step": elapsed}

    # ------------------------------------------------------------------ around the steps
    def evaluate(self, track=SILENT) -> Optional[dict[str, Any]]:
        """Score the held-out prompts now (``track``: :func:`botgrpo.trainer.evaluate.evaluate`'s)."""
        if not self.eval_examples or not (self.d.main or self.sharded):
            return None  # a sharded model needs every rank's forwards; only rank 0 scores
        scores = evaluate(self.engine, self.rewards if self.d.main else None, self.eval_examples,
                          self.cfg.rollout.sampling, seed=self.cfg.seed, track=track if self.d.main else SILENT,
                          label=f"eval at step {self.step}")
        if scores is None:
            return None
        result = {"step": self.step, **scores}
        self.evals.append(result)
        with (self.out / "evals.jsonl").open("a") as f:
            f.write(json.dumps(result) + "\n")
        return result

    def save(self, final: bool = False) -> Optional[Path]:
        """A checkpoint of this step (every rank calls it); the ``final`` one of a LoRA run also
        holds the merged model (``checkpoint-<step>/merged``)."""
        model_state, optimizer_state = full_state_dicts(self.model, self.optimizer, self.d)  # every rank
        extra = {"data": self.order.state_dict(), "evals": self.evals}
        if self._background is not None:  # every rank's next batch: a resume trains on it
            extra["pending"] = gather_objects(self._pending.state_dict() if self._pending else None, self.d)
        if not self.d.main:
            return None
        path = checkpoint.save(self.out, self.step, unwrap(self.model), self.tokenizer, model_state, optimizer_state,
                               self.scheduler, extra)
        if final:
            lora.save_merged(unwrap(self.model), self.tokenizer, path / lora.MERGED_DIR)
        return path

    def _resume(self) -> None:
        path = broadcast_object(str(checkpoint.latest(self.out) or ""), self.d)
        if not path:
            return
        state = checkpoint.restore(Path(path), self.scheduler)
        model_state = lora.checkpoint_state(unwrap(self.model), Path(path))
        load_full_state_dicts(self.model, self.optimizer, model_state, state.pop("optimizer"), self.d)
        self.step, self.evals, self.resumed_from = state["step"], state.get("evals", []), path
        self.order.load_state_dict(state["data"])
        pending = state.get("pending")
        if self._background is not None and pending and len(pending) == self.d.world:
            self._restored = pending[self.d.rank]
        elif self._background is not None and pending:
            # another world size: the saved batches belong to other ranks' prompts; sample anew
            # (from the resumed weights: this step is on-policy, the run no longer equals an uninterrupted one)
            print(f"resume: {len(pending)} ranks' prefetched batches, {self.d.world} ranks now; sampling afresh")

    def close(self) -> None:
        if self._background is not None:
            self._background.shutdown(wait=True)
        self.rewards.close()
        if self.log is not None:
            self.log.close()

    def train(self, on_step=None, track=SILENT) -> list[dict[str, Any]]:
        """Run to ``steps`` (or ``max_seconds``); ``on_step(record)`` after each step, the
        evaluations shown through ``track`` (:func:`botgrpo.trainer.run.progress.lines_tracker`)."""
        cfg, records, started = self.cfg, [], time.perf_counter()
        if self.step == 0:
            self.evaluate(track)
        while self.step < cfg.steps and (cfg.max_seconds is None or time.perf_counter() - started < cfg.max_seconds):
            record = self.train_step()
            records.append(record)
            if self.log is not None:
                self.log.write(record)
            if on_step is not None:
                on_step(record)
            if cfg.eval.every and self.step % cfg.eval.every == 0 and self.step < cfg.steps:
                self.evaluate(track)
            if cfg.checkpoint.save_every and self.step % cfg.checkpoint.save_every == 0:
                self.save()
        self.evaluate(track)
        self.save(final=True)
        if cfg.log.plot and self.d.main and (self.out / "metrics.jsonl").exists():
            plot(read(self.out / "metrics.jsonl"), self.out / "curves.png",
                 title=f"{cfg.algorithm.method} on {cfg.reward.task}", evals=self.evals)
        return records
