"""What a rollout engine produces, whatever generates it (transformers here, vLLM on GPUs)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field


class SamplingParams(BaseModel):
    """``rollout.sampling:`` sampling of each completion."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(1.0, gt=0, description="softmax temperature (also used for training log-probs)")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling mass")
    max_new_tokens: int = Field(256, ge=1, description="completion length cap")


@dataclass
class RolloutBatch:
    """``G`` completions for each of ``P`` prompts, rows grouped by prompt (row ``i`` answers
    prompt ``i // G``).

    ``completion_ids`` is right-padded with ``pad_id``; ``completion_mask`` is True on generated
    tokens (the eos that ended a completion included). ``spans[i][t]`` is token t's character
    span in ``texts[i]``, the decoded completion (eos spans are empty, at the end).
    """

    prompt_ids: list[list[int]]
    completion_ids: torch.Tensor       # (B, T) long
    completion_mask: torch.Tensor      # (B, T) bool
    behaviour_logprobs: torch.Tensor   # (B, T) float, 0 where masked
    texts: list[str]
    spans: list[list[tuple[int, int]]]
    truncated: torch.Tensor            # (B,) bool: hit max_new_tokens without eos
    group_size: int
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(dim=1)


class Engine(Protocol):
    """Generates completions; told about weight updates so it can refresh its copy.

    ``prepare()`` makes the engine's copy current (on the trainer's thread); after it, an engine
    with weights of its own may ``generate`` on another thread while the policy is updated."""

    def generate(self, prompts: Sequence[str], group_size: int, sampling: SamplingParams,
                 seeds: Optional[Sequence[int]] = None) -> RolloutBatch: ...

    def sync_weights(self) -> None: ...

    def prepare(self) -> None: ...
