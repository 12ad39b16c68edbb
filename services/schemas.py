"""The wire contract between the reward server and its clients (also the OpenAPI schema at /docs).

Request::

    {"task": "react" | "math" | <other registered scorer>,
     "options": {...},
     "rollouts": [{"id", "group"?, "prompt"?, "completion", "token_offsets"?, "reference"?}]}

Response: one :class:`Result` per rollout (``POST /v1/rewards``: a JSON list in request order;
``POST /v1/rewards:stream``: NDJSON, one line per rollout as each finishes).
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

Span = tuple[int, int]


class RolloutIn(BaseModel):
    """One completion to score."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1, max_length=256, description="caller's id; results are keyed by it and unique per request")
    group: Optional[str] = Field(None, max_length=256, description="group (prompt) id, echoed back")
    prompt: Optional[str] = Field(None, description="the prompt, for scorers that use it")
    completion: str = Field(..., description="the text to score")
    token_offsets: Optional[list[Span]] = Field(
        None, description="[start, end) character spans of the caller's tokens in `completion`; "
                          "the server splits on whitespace when omitted")
    reference: Optional[dict[str, Any]] = Field(
        None, description='task-specific ground truth, e.g. {"answer": "42"} (math) or {"spec": {...}} (react)')


class RewardRequest(BaseModel):
    """A batch of rollouts for one task."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(..., description="scorer name; GET /v1/scorers lists them")
    options: dict[str, Any] = Field(default_factory=dict, description="scorer options, e.g. {\"level\": \"build\"} for react")
    rollouts: list[RolloutIn] = Field(..., min_length=1, description="the rollouts to score")


class Result(BaseModel):
    """The score of one rollout."""

    id: str = Field(..., description="the rollout's id")
    group: Optional[str] = Field(None, description="the rollout's group, echoed")
    index: int = Field(..., description="position of the rollout in the request")
    score: float = Field(..., description="sequence-level score, within the bounds")
    passed: Optional[bool] = Field(None, description="the scorer's verdict (compiles / answer correct); null if unknown")
    token_offsets: list[Span] = Field(..., description="the spans scored: the caller's, or the server's own split")
    token_scores: list[float] = Field(..., description="one finite score per span, within the bounds")
    details: dict[str, Any] = Field(default_factory=dict, description="diagnostics: error spans and messages, extracted answer, ...")
    error: Optional[str] = Field(None, description="set when the rollout could not be scored (it then scores the lower bound)")


class RewardResponse(BaseModel):
    results: list[Result] = Field(..., description="one per rollout, in request order")


class ScorerInfo(BaseModel):
    task: str
    options: dict[str, Any] = Field(..., description="JSON schema of the task's options")
    bounds: tuple[float, float] = Field(..., description="every score lies within [low, high]")


class ScorersResponse(BaseModel):
    scorers: list[ScorerInfo]


class ErrorResponse(BaseModel):
    detail: Any = Field(..., description="what was wrong with the request")
