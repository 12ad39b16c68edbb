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

import json
import re
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from botgrpo.services.recipe import from_wire

MAX_OFFSET = 2**31 - 1  # far above any completion the server accepts; bigger ints are a 422, not an overflow
MAX_DEPTH = 32  # nesting of free-form JSON: a spec is 3 levels deep; 32 is far from any parser's limit
_SURROGATE = re.compile("[\ud800-\udfff]")
_SPLIT = re.compile(r"\s*\S+|\s+")


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


def default_split(text: str) -> list[tuple[int, int]]:
    """The server's own tokens when the caller sends none: each word with the whitespace before it."""
    return [m.span() for m in _SPLIT.finditer(text)]


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
                          "('the answer is X') before the cut; a math step the cut fell in is not blamed")


class RewardRequest(BaseModel):
    """A batch of rollouts for one task."""

    model_config = ConfigDict(extra="forbid")

    task: Text = Field(..., description="scorer name; GET /v1/scorers lists them")
    options: JSONObject = Field(default_factory=dict, description="scorer options, e.g. {\"level\": \"build\"} for react")
    rollouts: list[RolloutIn] = Field(..., min_length=1, description="the rollouts to score")
    return_offsets: bool = Field(False, description="also return each result's token_offsets as sent (they are always "
                                                    "returned where the server split a completion itself)")


class Result(BaseModel):
    """The score of one rollout: what the server sends, the clients yield and the trainer reads.

    Made by the server through :meth:`scored` or :meth:`unscored`; read back from the wire with
    :meth:`from_json`. Token scores are in the server's bounds; :meth:`rewards` gives them in the
    recipe's units (its ``reward_map`` undone: :mod:`botgrpo.services.recipe`).
    """

    id: str = Field(..., description="the rollout's id")
    group: Optional[str] = Field(None, description="the rollout's group, echoed")
    index: int = Field(..., description="position of the rollout in the request")
    score: float = Field(..., description="sequence-level score: the outcome R, within the bounds")
    passed: Optional[bool] = Field(None, description="the scorer's verdict (compiles / answer correct); null if unknown")
    token_scores: list[float] = Field(..., description="one finite score per token, within the bounds")
    token_offsets: Optional[list[Span]] = Field(
        None, description="the spans scored: present when the server split the completion itself (no "
                          "`token_offsets` sent) or the request set `return_offsets`")
    reward_map: Optional[tuple[float, float]] = Field(
        None, description="[scale, shift]: token_score = scale * r + shift, r the token reward in the recipe's units "
                          "(R + w_s * l, R in [-1, 1], l in [-1, 0]); a trainer divides it out before a floor in "
                          "reward units (bot_grpo's min_std) applies. Absent on unscored results")
    details: dict[str, Any] = Field(default_factory=dict, description="diagnostics: error spans and messages, extracted answer, ...")
    error: Optional[str] = Field(None, description="set when the rollout could not be scored (it then scores the "
                                                   "lower bound on every token and belongs in no loss)")

    @classmethod
    def scored(cls, rollout: Mapping[str, Any], index: int, *, score: float, passed: Optional[bool],
               token_scores: list[float], reward_map: tuple[float, float], details: dict[str, Any],
               offsets: Optional[list[Span]] = None) -> "Result":
        """The result of a judged rollout (``rollout``: the request's rollout as JSON); the values
        are the server's own, already checked, so no validation runs."""
        return cls.model_construct(id=rollout["id"], group=rollout.get("group"), index=index, score=score, passed=passed,
                                   token_scores=token_scores, token_offsets=offsets, reward_map=tuple(reward_map),
                                   details=details, error=None)

    @classmethod
    def unscored(cls, rollout: Mapping[str, Any], index: int, error: str, bounds: tuple[float, float],
                 details: Optional[dict[str, Any]] = None, return_offsets: bool = False) -> "Result":
        """The result of a rollout that could not be scored (a scorer that cannot judge it, a
        timeout, a dead letter): ``error`` says why. It belongs in no loss (the trainer and the
        integrations drop it and count it); its tokens score the lower bound only so that a
        consumer that ignores ``error`` never gains from a scorer's failure."""
        sent = rollout.get("token_offsets")
        offsets = [tuple(s) for s in sent] if sent is not None else default_split(rollout.get("completion", ""))
        low = bounds[0]
        return cls.model_construct(id=str(rollout.get("id")), group=rollout.get("group"), index=index, score=low,
                                   passed=None, token_scores=[low] * len(offsets),
                                   token_offsets=offsets if sent is None or return_offsets else None,
                                   reward_map=None, details=details or {}, error=error)

    @property
    def ok(self) -> bool:
        """Scored (no ``error``): the rollout belongs in a loss."""
        return self.error is None

    def rewards(self) -> list[float]:
        """The token rewards in the recipe's units (``reward_map`` divided out; as sent without one)."""
        return from_wire(self.token_scores, self.reward_map)

    def to_json(self) -> bytes:
        """Compact JSON as UTF-8; strings that cannot be encoded have their lone surrogates replaced."""
        try:
            return self.__pydantic_serializer__.to_json(self)
        except ValueError:  # a lone surrogate in a message or detail (it cannot be UTF-8)
            return json.dumps(clean_json(self.model_dump(mode="python")), ensure_ascii=False,
                              separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: str | bytes) -> "Result":
        """A result read from the wire (validated)."""
        return cls.model_validate_json(data)


class RewardResponse(BaseModel):
    results: list[Result] = Field(..., description="one per rollout, in request order")


class ScorerInfo(BaseModel):
    task: str
    options: dict[str, Any] = Field(..., description="JSON schema of the task's options")
    bounds: tuple[float, float] = Field(..., description="every score lies within [low, high]")
    allowed_imports: Optional[list[str]] = Field(
        None, description="the modules a component may import besides React (the server's react_allow); "
                          "null for a task that compiles no code")


class ScorersResponse(BaseModel):
    scorers: list[ScorerInfo]


class ErrorResponse(BaseModel):
    detail: Any = Field(..., description="what was wrong with the request")
