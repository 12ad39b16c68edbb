"""A stand-in for ``vllm`` on CPU: the offline API's signatures and the behaviour the trainer
relies on, as in vLLM 0.33.0's source (``vllm/entrypoints/llm.py``, ``vllm/sampling_params.py``,
``vllm/engine/arg_utils.py``, ``vllm/v1/engine/parallel_sampling.py``, ``vllm/v1/worker/gpu_worker.py``).

What it enforces, each as the real engine does or fails:

* ``LLM(model, *, ...)``: keyword arguments are ``LLM``'s own or ``EngineArgs`` fields; anything
  else is a TypeError. ``distributed_executor_backend="external_launcher"`` puts the worker in
  this process (vLLM sets ``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and reads ``RANK``/``LOCAL_RANK``;
  otherwise the engine core is another process, ``llm_engine.model_executor`` does not exist and
  ``collective_rpc`` arguments must pickle (a generator of tensors does not).
* ``SamplingParams``: only its real fields; sample ``k`` of a request gets ``seed + k``.
* ``sleep(level)`` needs ``enable_sleep_mode``; level 2 discards the weights, so after
  ``wake_up`` they are garbage until reloaded; generating while anything sleeps, or on garbage
  weights, is an error. ``wake_up(tags)`` takes ``weights``, ``kv_cache``, ``scheduling``.
* ``collective_rpc("reload_weights", kwargs={"weights_iterator": ...})`` loads checkpoint-format
  tensors; a sharded tensor (DTensor) or a wrong shape is an error, as in ``load_weights``.
* Generation samples from a real copy of the model (float32, CPU), stops at the generation
  config's eos ids and ``stop_token_ids``; ``logprobs_mode`` decides raw or temperature-scaled
  log-probs.

``events`` records every call, so tests can check the order of wake-ups, loads and sampling.
"""
from __future__ import annotations

import json
import os
import pickle
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch

# EngineArgs fields (a subset of vLLM 0.33.0's 259) that LLM(**kwargs) forwards
ENGINE_ARGS = {"max_model_len", "distributed_executor_backend", "enable_sleep_mode", "logprobs_mode",
               "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching", "kv_cache_dtype",
               "generation_config", "model_impl", "disable_log_stats", "pipeline_parallel_size",
               "data_parallel_size", "max_logprobs", "worker_extension_cls", "load_format"}
SAMPLING_FIELDS = {"n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p",
                   "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos", "max_tokens", "min_tokens",
                   "logprobs", "prompt_logprobs", "detokenize", "skip_special_tokens",
                   "spaces_between_special_tokens", "include_stop_str_in_output", "logit_bias",
                   "allowed_token_ids", "extra_args", "bad_words", "structured_outputs", "flat_logprobs"}
WAKE_TAGS = ("weights", "kv_cache", "scheduling")


class SamplingParams:
    def __init__(self, **values: Any):
        unknown = set(values) - SAMPLING_FIELDS
        if unknown:
            raise TypeError(f"SamplingParams got unexpected fields {sorted(unknown)}")
        defaults = {"n": 1, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "seed": None, "stop_token_ids": None,
                    "ignore_eos": False, "max_tokens": 16, "logprobs": None, "detokenize": True}
        self.__dict__.update({**defaults, **values})


@dataclass
class Logprob:
    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list
    cumulative_logprob: Optional[float]
    logprobs: Optional[list]
    finish_reason: Optional[str] = None
    stop_reason: Any = None


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list
    outputs: list = field(default_factory=list)


class LLM:
    instances: list["LLM"] = []

    def __init__(self, model: str, *, tokenizer=None, trust_remote_code: bool = False, tensor_parallel_size: int = 1,
                 dtype: str = "auto", quantization=None, seed: int = 0, gpu_memory_utilization: float = 0.92,
                 enforce_eager: bool = False, hf_overrides=None, compilation_config=None, **kwargs: Any):
        unknown = set(kwargs) - ENGINE_ARGS
        if unknown:
            raise TypeError(f"LLM got unexpected keyword arguments {sorted(unknown)}")
        from transformers import AutoModelForCausalLM

        self.kwargs = dict(model=model, tensor_parallel_size=tensor_parallel_size, dtype=dtype, seed=seed,
                           gpu_memory_utilization=gpu_memory_utilization, **kwargs)
        if kwargs.get("distributed_executor_backend") == "external_launcher":
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
            self.rank = (int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]))  # KeyError if unset, like vLLM
        self.in_process = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") == "0"
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
        config = json.loads((Path(model) / "generation_config.json").read_text())
        eos = config.get("eos_token_id")
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        self.sleep_mode = bool(kwargs.get("enable_sleep_mode", False))
        self.logprobs_mode = kwargs.get("logprobs_mode", "raw_logprobs")
        self.sleeping: set[str] = set()
        self.level = 0
        self.garbage = False
        self.events: list[str] = ["init"]
        self.child_seeds: list[int] = []
        self.loaded: list[dict[str, torch.Tensor]] = []
        self.llm_engine = types.SimpleNamespace()
        if self.in_process:  # the v0-compatible handle exists only without engine-core multiprocessing
            runner = types.SimpleNamespace(model=types.SimpleNamespace(load_weights=self._load_weights))
            worker = types.SimpleNamespace(model_runner=runner)
            self.llm_engine.model_executor = types.SimpleNamespace(
                driver_worker=types.SimpleNamespace(worker=worker, model_runner=runner))
        LLM.instances.append(self)

    # ------------------------------------------------------------------ memory
    def sleep(self, level: int = 1, mode: str = "abort") -> None:
        if not self.sleep_mode:
            raise ValueError("Sleep mode is not enabled (enable_sleep_mode=False)")
        self.events.append(f"sleep:{level}")
        self.level, self.sleeping = level, {"weights", "kv_cache"}

    def wake_up(self, tags: Optional[list[str]] = None) -> bool:
        if tags is not None and any(t not in WAKE_TAGS for t in tags):
            raise ValueError(f"wake_up tags must be in {WAKE_TAGS}, got {tags}")
        woken = set(self.sleeping) if tags is None else set(tags) & self.sleeping
        self.events.append("wake:" + ("all" if tags is None else ",".join(tags)))
        if "weights" in woken and self.level == 2:
            self.garbage = True  # level 2 discarded the weights: the memory is back, not its content
            with torch.no_grad():
                for p in self.model.parameters():
                    p.fill_(float("nan"))
        self.sleeping -= woken
        return not self.sleeping

    def allocated(self) -> set[str]:
        return {"weights", "kv_cache"} - self.sleeping

    def reset_prefix_cache(self, reset_running_requests: bool = False, reset_connector: bool = False) -> bool:
        self.events.append("reset_prefix_cache")
        return True

    # ------------------------------------------------------------------ workers
    def collective_rpc(self, method, timeout: Optional[float] = None, args: tuple = (),
                       kwargs: Optional[dict[str, Any]] = None) -> list:
        kwargs = kwargs or {}
        if not self.in_process:
            pickle.dumps((method, args, kwargs))  # crosses to the engine-core process
        if method == "reload_weights":
            return [self._reload(**kwargs)]
        if method == "apply_model":
            return [args[0](self.model)]
        raise AttributeError(f"the worker has no method {method!r}")

    def apply_model(self, func):
        return self.collective_rpc("apply_model", args=(func,))

    def _load_weights(self, weights) -> set:
        """The model's own ``load_weights`` (what reload_weights runs), reached through the executor."""
        self._reload(weights)
        return set(self.loaded[-1])

    def _reload(self, weights_iterator=None, weights_path: Optional[str] = None, is_checkpoint_format: bool = True):
        if "weights" in self.sleeping:
            raise RuntimeError("reload_weights while the weights sleep (wake_up(tags=['weights']) first)")
        params = dict(self.model.named_parameters())
        loaded = {}
        with torch.no_grad():
            for name, tensor in weights_iterator:
                if hasattr(tensor, "full_tensor") or type(tensor).__name__ == "DTensor":
                    raise TypeError(f"{name}: a sharded DTensor reached load_weights")
                if name in params:
                    if tuple(tensor.shape) != tuple(params[name].shape):
                        raise ValueError(f"{name}: shape {tuple(tensor.shape)} != {tuple(params[name].shape)}")
                    params[name].copy_(tensor)
                loaded[name] = tensor.detach().float().clone()
        missing = set(params) - set(loaded)
        if missing:
            raise ValueError(f"weights not loaded: {sorted(missing)[:3]}")
        self.garbage = False
        self.loaded.append(loaded)
        self.events.append("reload")

    # ------------------------------------------------------------------ sampling
    def generate(self, prompts, sampling_params=None, *, use_tqdm=True, lora_request=None, priority=None,
                 tokenization_kwargs=None, mm_processor_kwargs=None) -> list[RequestOutput]:
        if self.sleeping:
            raise RuntimeError(f"generate while {sorted(self.sleeping)} sleep")
        if self.garbage:
            raise RuntimeError("generate on weights discarded by sleep(level=2) and never reloaded")
        prompts = prompts if isinstance(prompts, list) else [prompts]
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError("sampling_params must be one or one per prompt")
        self.events.append("generate")
        return [RequestOutput(str(i), list(p["prompt_token_ids"]),
                              [self._sample(list(p["prompt_token_ids"]), sp, k) for k in range(sp.n)])
                for i, (p, sp) in enumerate(zip(prompts, params))]

    @torch.no_grad()
    def _sample(self, prompt: list[int], sp: SamplingParams, index: int) -> CompletionOutput:
        seed = None if sp.seed is None else sp.seed + index  # vLLM's rule for sample `index` of a request
        self.child_seeds.append(seed)
        gen = torch.Generator().manual_seed(seed if seed is not None else 12345 + index)
        stops = set(sp.stop_token_ids or []) | (set() if sp.ignore_eos else self.eos_ids)
        tokens, logprobs = [], []
        for _ in range(sp.max_tokens):
            logits = self.model(input_ids=torch.tensor([prompt + tokens])).logits[0, -1].float()
            scaled = torch.log_softmax(logits / sp.temperature, -1)
            token = int(torch.multinomial(scaled.exp(), 1, generator=gen))
            value = scaled if self.logprobs_mode == "processed_logprobs" else torch.log_softmax(logits, -1)
            tokens.append(token)
            logprobs.append({token: Logprob(float(value[token]))})
            if token in stops:
                break
        return CompletionOutput(index, "", tokens, None, logprobs if sp.logprobs is not None else None,
                                "stop" if tokens[-1] in stops else "length")


def install() -> types.ModuleType:
    """Put this stand-in in ``sys.modules['vllm']`` (tests undo it with monkeypatch)."""
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = LLM, SamplingParams
    module.__version__ = "0.33.0-fake"
    sys.modules["vllm"] = module
    return module
