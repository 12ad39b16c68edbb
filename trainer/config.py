"""``botgrpo train`` settings: one YAML file (flags override it), validated before anything loads.

The method comes from its preset (``method``) with any of its fields overridden here, axis by
axis (:func:`botgrpo.trainer.algorithm.resolve`); the resolved choices are printed at start and saved
in the run directory.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from botgrpo.trainer.algorithm import FIELDS as ALGORITHM_FIELDS
from botgrpo.trainer.algorithm import AlgorithmSettings, resolve
from botgrpo.trainer.lora import LoraSettings
from botgrpo.trainer.presets import PRESETS, preset
from botgrpo.trainer.rollout.base import SamplingParams


class _TrainSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # what to train, on what
    model: str = Field(..., description="local Hugging Face causal LM (directory)")
    dataset: str = Field(..., description="JSONL / Parquet file or a `datasets` directory of prompts")
    prompt_column: str = Field("prompt", description="dataset column holding the prompt: text, or a list of "
                               "chat messages (rows without it may hold the conversation under `messages`)")
    apply_chat_template: Optional[bool] = Field(None, description="unset: the tokenizer's chat template for "
                                                "conversational prompts, text verbatim; true: text prompts become "
                                                "one user message too; false: never (conversational rows are refused)")
    reference_column: str = Field("reference", description="dataset column holding the reference (dict or answer)")
    eval_dataset: Optional[str] = Field(None, description="held-out prompts evaluated every `eval_every` steps")
    eval_every: int = Field(0, ge=0, description="steps between evaluations (0: first and last only)")
    eval_prompts: int = Field(64, ge=1, description="held-out prompts per evaluation")
    output_dir: str = Field("runs/botgrpo", description="checkpoints, metrics.jsonl, plot")

    # rewards
    task: str = Field("react", description="reward server task")
    task_options: dict[str, Any] = Field(default_factory=dict, description="scorer options, e.g. {level: build}")
    reward_url: Optional[str] = Field(None, description="reward server URL; unset: `botgrpo train` serves one in-process (botgrpo.embedded)")
    reward_api_key: Optional[str] = Field(None, description="bearer key for the reward server")

    # the update rule: a preset (its fields overridable one by one: generated below)
    method: str = Field("bot_grpo", description=f"preset, one of {', '.join(PRESETS)}")

    # sampling and batch
    engine: Literal["hf", "vllm"] = Field("hf", description="rollout engine: transformers (any device) or vLLM (GPU, extra [vllm])")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1, description="share of GPU memory for vLLM (weights and KV cache)")
    vllm_max_model_len: Optional[int] = Field(None, ge=1, description="vLLM context length (unset: the model's)")
    vllm_sleep: bool = Field(True, description="sleep vLLM (level 2: weights and KV cache freed) while training")
    vllm_kwargs: dict[str, Any] = Field(default_factory=dict, description="further `vllm.LLM` arguments")
    group_size: int = Field(8, ge=1, description="rollouts per prompt (G)")
    prompts_per_step: int = Field(8, ge=1, description="prompts per step, over all ranks")
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    num_iterations: int = Field(1, ge=1, description="optimizer passes over each batch (old log-probs kept)")
    async_steps: int = Field(0, ge=0, le=1, description="1: the next step's rollouts are generated and scored while "
                             "this step updates (one policy version stale at most, the ratio taken against the "
                             "behaviour log-probs); 0: on-policy")
    streamed_update: bool = Field(True, description="on-policy: each group's advantages and backward as soon as "
                                  "its rollouts are scored (gradients accumulated, one optimizer step; the same update). "
                                  "Only where exact: num_iterations 1, async_steps 0, one process, a group-local "
                                  "estimator; the batch path otherwise (DDP: always)")

    # optimisation
    steps: int = Field(100, ge=1, description="training steps")
    max_seconds: Optional[float] = Field(None, gt=0, description="stop after this much wall time")
    lr: float = Field(1e-5, gt=0, description="AdamW learning rate")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field("constant", description="after warmup")
    warmup_steps: int = Field(0, ge=0, description="linear warmup steps")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    micro_batch_size: int = Field(64, ge=1, description="rollouts per forward/backward (gradient accumulation); "
                                  "packed: the batch is split into as many micro-batches, balanced by tokens")
    packing: bool = Field(True, description="padding-free update forward: each micro-batch's sequences in one row, "
                          "attention kept within each sequence (false: rows padded to the longest)")
    micro_batch_tokens: Optional[int] = Field(None, ge=1, description="packed: at most this many tokens per "
                                              "micro-batch (more micro-batches if needed; unset: no cap)")
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping by global norm")
    bf16: Optional[bool] = Field(None, description="bfloat16 autocast over float32 master weights, the same for "
                                 "old, reference and updated log-probs; unset: on when a CUDA GPU is present")
    gradient_checkpointing: bool = Field(False, description="trade compute for activation memory (recomputed in the update)")
    disable_dropout: bool = Field(True, description="no dropout in the update (its log-probs then match the rollouts')")
    seed: int = Field(0, description="seeds prompt order, sampling and init")
    distributed: Literal["ddp", "fsdp", "none"] = Field("ddp", description="under torchrun")
    lora: Optional[LoraSettings] = Field(None, description="train LoRA adapters on the frozen model (extra [lora]): "
                                         "{r, alpha, dropout, target_modules}; unset: full fine-tune")

    # bookkeeping
    save_every: int = Field(0, ge=0, description="steps between checkpoints (0: only at the end)")
    resume: bool = Field(False, description="continue from the latest checkpoint in output_dir")
    tensorboard: bool = Field(True, description="also log to TensorBoard when installed")
    plot: bool = Field(True, description="write curves.png at the end")
    progress: bool = Field(True, description="show a progress bar")

    @model_validator(mode="after")
    def _method_resolves(self) -> "_TrainSettings":
        self.algorithm()  # an unknown preset or a bad combination fails here, before anything loads
        return self

    @model_validator(mode="after")
    def _lora_combines(self) -> "_TrainSettings":
        if self.lora is None:
            return self
        if self.distributed == "fsdp":
            raise ValueError("lora is not supported with distributed: fsdp (the adapters' export gathers no "
                             "shards): use distributed: ddp")
        if self.lora.dropout > 0 and self.disable_dropout:
            raise ValueError("lora.dropout > 0 needs disable_dropout: false (disable_dropout switches every "
                             "dropout off, the adapters' too)")
        return self

    def algorithm(self) -> AlgorithmSettings:
        """The preset with this config's overrides applied (an axis overridden alone drops its options)."""
        overrides = {k: getattr(self, k) for k in ALGORITHM_FIELDS if getattr(self, k) is not None}
        return resolve(preset(self.method), overrides)

    def overlong_zone(self) -> int:
        """The soft overlong penalty zone in tokens (0: off)."""
        return int(round(self.algorithm().overlong_buffer * self.sampling.max_new_tokens))

    def use_bf16(self) -> bool:
        if self.bf16 is not None:
            return self.bf16
        import torch
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def _overrides() -> dict[str, Any]:
    """Every :class:`AlgorithmSettings` field as an optional override of the preset's value
    (None: the preset's), generated so that the two never drift apart; their bounds are checked
    when the preset and the overrides resolve (``_method_resolves``)."""
    return {name: (Optional[field.annotation], Field(None, description=f"override the preset's {field.description}"))
            for name, field in AlgorithmSettings.model_fields.items()}


TrainConfig = create_model("TrainConfig", __base__=_TrainSettings, __module__=__name__,
                           __doc__="``botgrpo train``'s settings (module docstring).", **_overrides())
