"""The contract every scorer fulfils.

A scorer judges one completion and answers in *characters*: an outcome, a verdict, and a local
signal over character spans of the completion. It never sees the caller's tokens; the span
mapper (:func:`botgrpo.reward_server.spans.compose`, applying the reward recipe of
:mod:`botgrpo.services.recipe`) turns them into one score per caller token, so every scorer works
with every tokenizer.
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
    """What a scorer is given: the completion and, optionally, its prompt and reference.
    ``truncated``: generation stopped at the token limit, not at an end token."""

    completion: str
    prompt: str | None = None
    reference: Mapping[str, Any] | None = None
    truncated: bool = False


@dataclass
class ScoreResult:
    """A scorer's verdict on one completion, in the two channels of the reward recipe.

    * ``score`` is the rollout's **outcome** ``R_i`` in ``[-1, 1]`` (compile verdict mixed with
      the spec check, answer correctness, ...): it reaches every token.
    * ``local`` is the bounded **local signal** ``l`` in ``[-1, 0]`` over character spans: where
      in the completion the blame lies. ``local_default`` is ``l`` of the characters no span
      covers (0: no blame; -1: blame everything, e.g. no code at all). Where spans overlap the
      lowest value wins (blame is never averaged away).

    :func:`botgrpo.reward_server.spans.compose` turns the two into one bounded score per caller token.
    All numbers must be finite; out-of-range values are clipped there. ``error`` says the
    rollout cannot be judged at all (e.g. no reference answer): it goes back as an error result,
    which trainers leave out of the loss rather than punish.
    """

    score: float
    passed: bool | None
    local: list[SpanScore] = field(default_factory=list)
    local_default: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the rollout cannot be judged (the data's fault, not the policy's)


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
