"""``botgrpo train`` settings: one YAML file (flags override it), validated before anything loads.

A config has a few top-level fields (what to train, for how long) and one section per part of a
run, each a small model whose fields are written here::

    model, output_dir, seed, steps, max_seconds, distributed
    data:        dataset, prompt_column, reference_column, apply_chat_template
    algorithm:   method (a preset) and any field of AlgorithmSettings overriding it
    rollout:     engine, group_size, prompts_per_step, async_steps, sampling: {...}, vllm: {...}
    reward:      task, options, url, api_key
    optim:       lr, schedule, batch shape, precision, lora: {...}
    eval:        dataset, every, prompts
    checkpoint:  save_every, resume
    log:         tensorboard, plot, progress

The method comes from its preset with any of its fields overridden, axis by axis
(:func:`botgrpo.trainer.algo.settings.resolve`); the resolved choices are printed at start and saved
in the run directory. A key of the flat layout before sections (``kl_coef``, ``reward_url``)
is refused with its new place (:data:`MOVED`).
"""
from __future__ import annotations

from typing import Any, Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from botgrpo.trainer.algo.presets import PRESETS, preset
from botgrpo.trainer.algo.settings import AlgorithmSettings, resolve
from botgrpo.trainer.algo.settings import FIELDS as ALGORITHM_FIELDS
from botgrpo.trainer.models.lora import LoraSettings
from botgrpo.trainer.rollout.base import SamplingParams


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataSection(_Section):
    """``data:`` the prompts trained on."""

    dataset: str = Field(..., description="JSONL / Parquet file or a `datasets` directory of prompts")
    prompt_column: str = Field("prompt", description="dataset column holding the prompt: text, or a list of "
                               "chat messages (rows without it may hold the conversation under `messages`)")
    reference_column: str = Field("reference", description="dataset column holding the reference (dict or answer)")
    apply_chat_template: Optional[bool] = Field(None, description="unset: the tokenizer's chat template for "
                                                "conversational prompts, text verbatim; true: text prompts become "
                                                "one user message too; false: never (conversational rows are refused)")


class AlgorithmSection(_Section):
    """``algorithm:`` a method preset and, beside ``method``, any field of
    :class:`~botgrpo.trainer.algo.settings.AlgorithmSettings` overriding the preset's value
    (``{method: pure, estimator: grpo}``). Written back the same way, flat."""

    method: str = Field("bot_grpo", description=f"preset, one of {', '.join(PRESETS)}")
    overrides: dict[str, Any] = Field(default_factory=dict, description="the AlgorithmSettings fields set beside `method`")

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or "overrides" in data:
            return data
        fields = dict(data)
        method = fields.pop("method", "bot_grpo")
        unknown = sorted(set(fields) - set(ALGORITHM_FIELDS))
        if unknown:
            raise ValueError(f"unknown algorithm field(s) {unknown}: beside `method`, one of {list(ALGORITHM_FIELDS)}")
        return {"method": method, "overrides": fields}

    @model_validator(mode="after")
    def _resolves(self) -> "AlgorithmSection":
        self.settings()  # an unknown preset or a bad combination fails here, before anything loads
        return self

    @model_serializer
    def _flat(self) -> dict[str, Any]:
        return {"method": self.method, **self.overrides}

    def settings(self) -> AlgorithmSettings:
        """The preset with the overrides applied (an axis overridden alone drops its options)."""
        return resolve(preset(self.method), {k: v for k, v in self.overrides.items() if v is not None})


class VllmSection(_Section):
    """``rollout.vllm:`` the vLLM engine (``rollout.engine: vllm``)."""

    gpu_memory_utilization: float = Field(0.3, gt=0, le=1, description="share of GPU memory for vLLM (weights and KV cache)")
    max_model_len: Optional[int] = Field(None, ge=1, description="vLLM context length (unset: the model's)")
    sleep: bool = Field(True, description="sleep vLLM (level 2: weights and KV cache freed) while training")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="further `vllm.LLM` arguments")


class RolloutSection(_Section):
    """``rollout:`` how completions are sampled, how many, and how far ahead."""

    engine: Literal["hf", "vllm"] = Field("hf", description="rollout engine: transformers (any device) or vLLM (GPU, extra [vllm])")
    group_size: int = Field(8, ge=1, description="rollouts per prompt (G)")
    prompts_per_step: int = Field(8, ge=1, description="prompts per step, over all ranks")
    async_steps: int = Field(0, ge=0, le=1, description="1: the next step's rollouts are generated and scored while "
                             "this step updates (one policy version stale at most, the ratio taken against the "
                             "behaviour log-probs); 0: on-policy")
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    vllm: VllmSection = Field(default_factory=VllmSection)


class RewardSection(_Section):
    """``reward:`` the reward server and what it scores."""

    task: str = Field("react", description="reward server task")
    options: dict[str, Any] = Field(default_factory=dict, description="scorer options, e.g. {level: build}")
    url: Optional[str] = Field(None, description="reward server URL; unset: `botgrpo train` serves one in-process (botgrpo.embedded)")
    api_key: Optional[str] = Field(None, description="bearer key for the reward server (or BOTGRPO_REWARD_API_KEY)")


class OptimSection(_Section):
    """``optim:`` the optimiser, the update's batch shape and precision."""

    lr: float = Field(1e-5, gt=0, description="AdamW learning rate")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field("constant", description="after warmup")
    warmup_steps: int = Field(0, ge=0, description="linear warmup steps")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping by global norm")
    num_iterations: int = Field(1, ge=1, description="optimizer passes over each batch (old log-probs kept)")
    micro_batch_size: int = Field(64, ge=1, description="rollouts per forward/backward (gradient accumulation); "
                                  "packed: the batch is split into as many micro-batches, balanced by tokens")
    micro_batch_tokens: Optional[int] = Field(None, ge=1, description="packed: at most this many tokens per "
                                              "micro-batch (more micro-batches if needed; unset: no cap)")
    packing: bool = Field(True, description="padding-free update forward: each micro-batch's sequences in one row, "
                          "attention kept within each sequence (false: rows padded to the longest)")
    streamed_update: bool = Field(True, description="on-policy: each group's advantages and backward as soon as "
                                  "its rollouts are scored (gradients accumulated, one optimizer step; the same update). "
                                  "Only where exact: num_iterations 1, async_steps 0, one process, a group-local "
                                  "estimator; the batch path otherwise (DDP: always)")
    bf16: Optional[bool] = Field(None, description="bfloat16 autocast over float32 master weights, the same for "
                                 "old, reference and updated log-probs; unset: on when a CUDA GPU is present")
    gradient_checkpointing: bool = Field(False, description="trade compute for activation memory (recomputed in the update)")
    disable_dropout: bool = Field(True, description="no dropout in the update (its log-probs then match the rollouts')")
    lora: Optional[LoraSettings] = Field(None, description="train LoRA adapters on the frozen model (extra [lora]): "
                                         "{r, alpha, dropout, target_modules}; unset: full fine-tune")

    @model_validator(mode="after")
    def _lora_dropout(self) -> "OptimSection":
        if self.lora is not None and self.lora.dropout > 0 and self.disable_dropout:
            raise ValueError("lora.dropout > 0 needs disable_dropout: false (disable_dropout switches "
                             "every dropout off, the adapters' too)")
        return self

    def use_bf16(self) -> bool:
        if self.bf16 is not None:
            return self.bf16
        import torch
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


class EvalSection(_Section):
    """``eval:`` held-out prompts scored during training."""

    dataset: Optional[str] = Field(None, description="held-out prompts evaluated every `every` steps (unset: none)")
    every: int = Field(0, ge=0, description="steps between evaluations (0: first and last only)")
    prompts: int = Field(64, ge=1, description="held-out prompts per evaluation")


class CheckpointSection(_Section):
    """``checkpoint:`` what is saved, and resuming from it."""

    save_every: int = Field(0, ge=0, description="steps between checkpoints (0: only at the end)")
    resume: bool = Field(False, description="continue from the latest checkpoint in output_dir")


class LogSection(_Section):
    """``log:`` what a run shows and writes beside ``metrics.jsonl``."""

    tensorboard: bool = Field(True, description="also log to TensorBoard when installed")
    plot: bool = Field(True, description="write curves.png at the end")
    progress: bool = Field(True, description="show progress (live bars on a terminal, lines otherwise)")


SECTIONS: dict[str, type[_Section]] = {
    "data": DataSection, "algorithm": AlgorithmSection, "rollout": RolloutSection, "reward": RewardSection,
    "optim": OptimSection, "eval": EvalSection, "checkpoint": CheckpointSection, "log": LogSection,
}

# the flat layout before sections: old key -> its place now
MOVED: dict[str, str] = {
    **{name: f"{section}.{name}" for section in ("data", "rollout", "optim", "checkpoint", "log")
       for name in SECTIONS[section].model_fields},
    **{name: f"algorithm.{name}" for name in ("method", *ALGORITHM_FIELDS)},
    "vllm_gpu_memory_utilization": "rollout.vllm.gpu_memory_utilization", "vllm_max_model_len": "rollout.vllm.max_model_len",
    "vllm_sleep": "rollout.vllm.sleep", "vllm_kwargs": "rollout.vllm.kwargs",
    "eval_dataset": "eval.dataset", "eval_every": "eval.every", "eval_prompts": "eval.prompts",
    "task": "reward.task", "task_options": "reward.options", "reward_url": "reward.url", "reward_api_key": "reward.api_key",
}


class TrainConfig(_Section):
    """``botgrpo train``'s settings (module docstring)."""

    model: str = Field(..., description="local Hugging Face causal LM (directory)")
    output_dir: str = Field("runs/botgrpo", description="checkpoints, metrics.jsonl, plot")
    seed: int = Field(0, description="seeds prompt order, sampling and init")
    steps: int = Field(100, ge=1, description="training steps")
    max_seconds: Optional[float] = Field(None, gt=0, description="stop after this much wall time")
    distributed: Literal["ddp", "fsdp", "none"] = Field("ddp", description="under torchrun")

    data: DataSection
    algorithm: AlgorithmSection = Field(default_factory=AlgorithmSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    reward: RewardSection = Field(default_factory=RewardSection)
    optim: OptimSection = Field(default_factory=OptimSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    checkpoint: CheckpointSection = Field(default_factory=CheckpointSection)
    log: LogSection = Field(default_factory=LogSection)

    @model_validator(mode="before")
    @classmethod
    def _no_flat_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            moved = [f"`{key}` is now `{MOVED[key]}`" for key in data if key in MOVED and key not in cls.model_fields]
            if moved:
                raise ValueError("the config has sections now: " + "; ".join(moved))
        return data

    @model_validator(mode="after")
    def _lora_combines(self) -> "TrainConfig":
        if self.optim.lora is not None and self.distributed == "fsdp":
            raise ValueError("optim.lora is not supported with distributed: fsdp (the adapters' export gathers no "
                             "shards): use distributed: ddp")
        return self

    def overlong_zone(self) -> int:
        """The soft overlong penalty zone in tokens (0: off)."""
        return int(round(self.algorithm.settings().overlong_buffer * self.rollout.sampling.max_new_tokens))


def nest(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """``{"optim.lr": 1e-4, "steps": 3}`` -> ``{"optim": {"lr": 1e-4}, "steps": 3}``."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"{key!r} sets a field inside {part!r}, which is set to a value")
        node[leaf] = value
    return out


def merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` laid over it, section by section (nested mappings merged, other values replaced)."""
    out = dict(base)
    for key, value in update.items():
        out[key] = merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out
