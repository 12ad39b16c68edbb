"""The wire contract between the reward server and its clients (also the OpenAPI schema at /docs).

Request::

    {"task": "react" | "math" | <other registered scorer>,
     "options": {...},
     "rollouts": [{"id", "group"?, "prompt"?, "completion", "token_offsets"?, "reference"?}]}

Response: one :class:`Result` per rollout (``POST /v1/rewards``: a JSON list in request order;
``POST /v1/rewards:stream``: NDJSON, one line per rollout as each finishes).

Text is sanitised at this boundary: a lone UTF-16 surrogate (JSON allows the escape
``"\ud800"``; it cannot be encoded as UTF-8, so it broke response encoding and the compiler
pipe) is replaced by U+FFFD in every string of a request, keys of ``options`` and
``reference`` included. One code point replaces one code point, so character offsets
(``token_offsets``, reported spans) still index the completion as sent. A valid surrogate
*pair* is one character after JSON decoding and is left alone.

Free-form JSON (``options``, ``reference``) is nested at most :data:`MAX_DEPTH` levels (a 422
above): what the parser accepts (about 990 levels) is more than what serialising it again
(``model_dump``, the Redis payload, a worker's parser on a deeper stack) survives.
"""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

MAX_OFFSET = 2**31 - 1  # far above any completion the server accepts; bigger ints are a 422, not an overflow
MAX_DEPTH = 32  # nesting of free-form JSON: a spec is 3 levels deep; 32 is far from any parser's limit
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (same length)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not node.isascii() and _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def clean_json(value: Any) -> Any:
    """``value`` (JSON-like) with :func:`clean_text` applied to every string, keys included.

    Iterative, so nesting depth is no concern; returns ``value`` itself when nothing needs
    replacing, otherwise a copy (tuples become lists).
    """
    if isinstance(value, str):
        return clean_text(value)
    if not isinstance(value, (dict, list, tuple)) or not _has_surrogate(value):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            if isinstance(item, (dict, list, tuple)):
                copy: Any = {} if isinstance(item, dict) else []
                stack.append((item, copy))
            else:
                copy = clean_text(item) if isinstance(item, str) else item
            if isinstance(target, dict):
                target[clean_text(key) if isinstance(key, str) else key] = copy
            else:
                target.append(copy)
    return root


def nesting(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` (JSON-like) nests containers (a scalar: 0, ``[[]]``: 2), counted
    iteratively and only up to ``limit + 1``: enough to tell that it is over ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list, tuple)):
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            break
        stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _clean_input(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)) and nesting(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return clean_json(value)  # before validation: pydantic refuses a lone surrogate in a constrained str


Text = Annotated[str, BeforeValidator(_clean_input)]
JSONObject = Annotated[dict[str, Any], BeforeValidator(_clean_input)]
JSONValue = Annotated[Any, BeforeValidator(_clean_input)]  # any JSON, at most MAX_DEPTH deep
Offset = Annotated[int, Field(strict=True, ge=0, le=MAX_OFFSET)]  # strict: "0", true and 1.0 are not offsets
Span = tuple[int, int]


class RolloutIn(BaseModel):
    """One completion to score."""

    model_config = ConfigDict(extra="forbid")

    id: Text = Field(..., min_length=1, max_length=256, description="caller's id; results are keyed by it and unique per request")
    group: Optional[Text] = Field(None, max_length=256, description="group (prompt) id, echoed back")
    prompt: Optional[Text] = Field(None, description="the prompt, for scorers that use it")
    completion: Text = Field(..., description="the text to score")
    token_offsets: Optional[list[tuple[Offset, Offset]]] = Field(
        None, description="[start, end) character spans of the caller's tokens in `completion` (JSON integers, not strings, "
                          "booleans or floats; "
                          "0 <= start <= end <= len(completion)); the server splits on whitespace when omitted")
    reference: Optional[JSONObject] = Field(
        None, description='task-specific ground truth, e.g. {"answer": "42"} (math) or {"spec": {...}} (react)')
    finish_reason: Optional[Literal["stop", "length"]] = Field(
        None, description="why generation ended: `length` (the token limit) makes code cut off by it fail as "
                          "truncated output, blamed throughout, and a math answer count only if boxed or stated "
                          "('the answer is X') before the cut")


class RewardRequest(BaseModel):
    """A batch of rollouts for one task."""

    model_config = ConfigDict(extra="forbid")

    task: Text = Field(..., description="scorer name; GET /v1/scorers lists them")
    options: JSONObject = Field(default_factory=dict, description="scorer options, e.g. {\"level\": \"build\"} for react")
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
    reward_map: Optional[tuple[float, float]] = Field(
        None, description="[scale, shift]: token_score = scale * r + shift, r the token reward in the recipe's units "
                          "(R + w_s * l, R in [-1, 1], l in [-1, 0]); a trainer divides it out before a floor in "
                          "reward units (bot_grpo's min_std) applies. Absent on error results")
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


def reward_units(result: Mapping[str, Any]) -> list[float]:
    """A result's token scores back in the recipe's units, ``r = (token_score - shift) / scale``
    for its ``reward_map = [scale, shift]`` (as sent without one). Every consumer that normalises
    with a floor in reward units (``bot_grpo``'s ``min_std``) reads token rewards through this."""
    scores = [float(x) for x in result["token_scores"]]
    reward_map = result.get("reward_map")
    if not reward_map:
        return scores
    scale, shift = (float(v) for v in reward_map)
    if not (math.isfinite(scale) and math.isfinite(shift)) or scale <= 0:
        raise ValueError(f"reward_map must be [scale > 0, shift], finite; got {list(reward_map)}")
    return [(x - shift) / scale for x in scores]
