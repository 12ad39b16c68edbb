"""slime's remote reward protocol: ``POST /compat/slime/{task}``.

What slime sends and reads (its sources at commit 624b824, August 2026; facts, no code):

* ``slime/rollout/rm_hub/__init__.py``, ``remote_rm`` (``--rm-type remote_rm --rm-url URL``):
  one sample per request, ``{"prompt": ..., "response": ..., "label": ...}`` posted with
  aiohttp's ``json=``; 120 s timeout, 10 tries with exponential backoff (1 s doubling to 30 s)
  on any error status; the JSON body of the answer *is* the sample's reward.
* ``slime/utils/types.py``: ``prompt`` is a string or a list of chat messages
  (``{"role", "content"}``), ``response`` the generated text, ``label`` a string or null;
  ``Sample.get_reward_value`` uses the reward as a number, or ``reward[--reward-key]`` when a
  key is set.

Here: the task is the route's, options come from the query string
(:func:`botgrpo.reward_server.compat.core.query_options`), the label becomes the reference
(:func:`botgrpo.reward_server.compat.core.reference_for`), an end-of-sequence text the response ends with
is cut off as for OpenRLHF (``?eos=``), and the answer is the outcome ``R`` as a bare
JSON number. With ``?format=dict`` it is an object (use it with ``--reward-key reward``):
``reward`` (R), ``score`` (R on [0, 1]), ``passed``, ``unscored``, ``error``, and the token
scores over the server's whitespace split of the response (``token_scores``,
``token_offsets``). A rollout the server could not score gets the lower bound, as on
``/v1/rewards`` (``unscored`` says so in the dict form).
"""
from __future__ import annotations

import asyncio
from typing import Any, Literal, Optional, Union

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from botgrpo.reward_server.bodies import read_body
from botgrpo.reward_server.compat.core import (RESERVED, body_schema, eos_texts, query_options, reference_for,
                                      response_text, score, unit_score)
from botgrpo.services.schemas import JSONValue, Result, Text

router = APIRouter()


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Text
    content: JSONValue = None


class SlimeRequest(BaseModel):
    """The body slime posts: one sample."""

    model_config = ConfigDict(extra="forbid")

    prompt: Union[Text, list[Message]] = Field("", description="the prompt: text, or chat messages")
    response: Text = Field(..., description="the generated text to score")
    label: JSONValue = Field(None, description="math: the answer; react: a spec (JSON) or a component name")


class SlimeDetail(BaseModel):
    reward: float = Field(..., description="the outcome R, within the server's bounds")
    score: float = Field(..., description="R mapped onto [0, 1]")
    passed: Optional[bool] = Field(None, description="the scorer's verdict (compiles / answer correct)")
    unscored: bool = Field(..., description="the server could not score it (reward is then the lower bound)")
    error: Optional[str] = None
    token_scores: list[float] = Field(..., description="one bounded score per span of token_offsets")
    token_offsets: list[tuple[int, int]] = Field(..., description="the server's whitespace split of the response")


def prompt_text(prompt: Union[str, list[Message]]) -> str:
    """The prompt as text: a chat's last user message (its instruction); text as is."""
    if isinstance(prompt, str):
        return prompt
    for message in reversed(prompt):
        if message.role == "user" and isinstance(message.content, str):
            return message.content
    return ""


def rollout_of(body: SlimeRequest, task: str, eos: tuple[str, ...], limit: int) -> dict[str, Any]:
    """The ``/v1/rewards`` rollout of slime's sample (4xx naming the bad field): its response
    without the end-of-sequence texts ``eos``, at most ``limit`` characters as sent."""
    return {"id": "sample", "prompt": prompt_text(body.prompt), "completion": response_text(body.response, eos, limit, "response"),
            "reference": reference_for(task, body.label, "label")}


def answer(result: Result, form: str, bounds: tuple[float, float]) -> Union[float, dict[str, Any]]:
    """What slime stores as the reward: the outcome, or the dict form's fields."""
    if form == "number":
        return result.score
    return {"reward": result.score, "score": unit_score(result, bounds), "passed": result.passed,
            "unscored": not result.ok, "error": result.error,
            "token_scores": result.token_scores, "token_offsets": [list(s) for s in result.token_offsets or ()]}


@router.post("/slime/{task}", response_model=Union[float, SlimeDetail],
             summary="slime's remote reward protocol (--rm-type remote_rm --rm-url): the outcome as the body",
             openapi_extra=body_schema(SlimeRequest))
async def reward(task: str, http: Request, format: Literal["number", "dict"] = "number") -> Any:  # noqa: A002
    """Score slime's ``{"prompt", "response", "label"}``; options from the query string."""
    settings = http.app.state.settings
    body = await asyncio.to_thread(read_body, await http.body(), SlimeRequest)
    options = await asyncio.to_thread(query_options, http, task, RESERVED | {"format"})
    rollout = await asyncio.to_thread(rollout_of, body, task, eos_texts(http), settings.max_completion_chars)
    mapping = "rollouts[0] is this sample: completion its response, reference its label"
    [result] = await score(http, task, options, [rollout], mapping)
    return answer(result, format, settings.bounds)
