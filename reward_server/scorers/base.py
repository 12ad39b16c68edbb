"""The contract every scorer fulfils.

A scorer judges one completion and answers in *characters*: a sequence-level score, a verdict,
and scores over character spans of the completion. It never sees the caller's tokens; the shared
mapper in :mod:`reward_server.spans` turns span scores into one score per caller token, so every
scorer works with every tokenizer.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Protocol, Sequence

from pydantic import BaseModel


@dataclass(frozen=True)
class SpanScore:
    """A score for the characters ``completion[start:end]`` (half-open, ``0 <= start <= end``)."""

    start: int
    end: int
    score: float


@dataclass(frozen=True)
class Rollout:
    """What a scorer is given: the completion and, optionally, its prompt and reference."""

    completion: str
    prompt: str | None = None
    reference: Mapping[str, Any] | None = None


@dataclass
class ScoreResult:
    """A scorer's verdict on one completion.

    ``default`` scores every character that no span covers; a span's score replaces it (up or
    down) and where spans overlap the lowest score wins (blame is never averaged away). All numbers must be finite; the mapper clips
    them into the configured bounds.
    """

    score: float
    passed: bool | None
    spans: list[SpanScore] = field(default_factory=list)
    default: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


class Scorer(Protocol):
    """A named, stateless-per-call judge of completions.

    ``Options`` validates the request's ``options`` object (unknown keys are an error);
    ``score_batch`` returns one result per rollout, in order, and must not raise for bad
    completions: a completion that cannot be judged is a failing result with a reason in
    ``details``.
    """

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel]]

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]: ...
