"""``botgrpo train`` settings: one YAML file (flags override it), validated before anything loads.

The update rule comes from the method preset (``method``) with any of its fields overridden
here; the resolved choices are printed at start and saved in the run directory.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from botgrpo.settings import AlgorithmSettings
from trainer.presets import preset
from trainer.rollout.base import SamplingParams

ALGORITHM_FIELDS = tuple(AlgorithmSettings.model_fields)


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # what to train, on what
    model: str = Field(..., description="local Hugging Face causal LM (directory)")
    dataset: str = Field(..., description="JSONL / Parquet file or a `datasets` directory of prompts")
    prompt_column: str = Field("prompt", description="dataset column holding the prompt")
    reference_column: str = Field("reference", description="dataset column holding the reference (dict or answer)")
    eval_dataset: Optional[str] = Field(None, description="held-out prompts evaluated every `eval_every` steps")
    eval_every: int = Field(0, ge=0, description="steps between evaluations (0: first and last only)")
    eval_prompts: int = Field(64, ge=1, description="held-out prompts per evaluation")
    output_dir: str = Field("runs/botgrpo", description="checkpoints, metrics.jsonl, plot")

    # rewards
    task: str = Field("react", description="reward server task")
    task_options: dict[str, Any] = Field(default_factory=dict, description="scorer options, e.g. {level: build}")
    reward_url: Optional[str] = Field(None, description="reward server URL; unset: an embedded server in-process")
    reward_api_key: Optional[str] = Field(None, description="bearer key for the reward server")

    # the update rule: a preset and any overrides of its fields
    method: str = Field("bot_grpo", description="preset: bot_grpo, grpo, dr_grpo, gspo, dapo, pure")
    estimator: Optional[str] = Field(None, description="override the preset's advantage estimator")
    estimator_options: Optional[dict[str, Any]] = Field(None, description="override the estimator's options")
    policy_loss: Optional[str] = Field(None, description="override the preset's policy loss")
    eps_low: Optional[float] = Field(None, description="override the lower clip range")
    eps_high: Optional[float] = Field(None, description="override the upper clip range")
    aggregation: Optional[str] = Field(None, description="override the loss aggregation")
    kl_estimator: Optional[str] = Field(None, description="override the KL estimator")
    kl_coef: Optional[float] = Field(None, description="override the KL weight (> 0 loads a reference model)")

    # sampling and batch
    engine: Literal["hf", "vllm"] = Field("hf", description="rollout engine: transformers (any device) or vLLM (GPU, extra [vllm])")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1, description="share of GPU memory for vLLM's KV cache")
    group_size: int = Field(8, ge=1, description="rollouts per prompt (G)")
    prompts_per_step: int = Field(8, ge=1, description="prompts per step, over all ranks")
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    num_iterations: int = Field(1, ge=1, description="optimizer passes over each batch (old log-probs kept)")
    dynamic_sampling: Optional[bool] = Field(None, description="drop zero-variance groups (default: on for dapo)")
    overlong_buffer: Optional[int] = Field(None, ge=0, description="soft overlong penalty zone (default: max_new_tokens/4 for dapo)")
    overlong_penalty: float = Field(1.0, ge=0, description="penalty at and beyond max_new_tokens")

    # optimisation
    steps: int = Field(100, ge=1, description="training steps")
    max_seconds: Optional[float] = Field(None, gt=0, description="stop after this much wall time")
    lr: float = Field(1e-5, gt=0, description="AdamW learning rate")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field("constant", description="after warmup")
    warmup_steps: int = Field(0, ge=0, description="linear warmup steps")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    micro_batch_size: int = Field(64, ge=1, description="rollouts per forward/backward (gradient accumulation)")
    max_grad_norm: float = Field(1.0, gt=0, description="gradient clipping by global norm")
    bf16: bool = Field(False, description="bfloat16 autocast (GPU)")
    gradient_checkpointing: bool = Field(False, description="trade compute for activation memory")
    seed: int = Field(0, description="seeds prompt order, sampling and init")
    distributed: Literal["ddp", "fsdp", "none"] = Field("ddp", description="under torchrun")

    # bookkeeping
    save_every: int = Field(0, ge=0, description="steps between checkpoints (0: only at the end)")
    resume: bool = Field(False, description="continue from the latest checkpoint in output_dir")
    tensorboard: bool = Field(True, description="also log to TensorBoard when installed")
    plot: bool = Field(True, description="write curves.png at the end")
    progress: bool = Field(True, description="show a progress bar")

    def algorithm(self) -> AlgorithmSettings:
        """The preset with this config's overrides applied."""
        base = preset(self.method).model_dump()
        base.update({k: getattr(self, k) for k in ALGORITHM_FIELDS if getattr(self, k) is not None})
        return AlgorithmSettings.model_validate(base)

    def uses_dynamic_sampling(self) -> bool:
        return self.method == "dapo" if self.dynamic_sampling is None else self.dynamic_sampling

    def overlong_zone(self) -> int:
        if self.overlong_buffer is not None:
            return self.overlong_buffer
        return self.sampling.max_new_tokens // 4 if self.method == "dapo" else 0
