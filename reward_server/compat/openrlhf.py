"""OpenRLHF's remote reward protocol: ``POST /compat/openrlhf/{task}/get_reward``.

What OpenRLHF sends and reads (its release 0.11.2 on PyPI, what ``pip install openrlhf`` gives;
facts, no code):

* ``openrlhf/utils/agent.py``, ``SingleTurnAgentExecutor``: for each generated sample,
  ``{"query": [...], "prompts": [...], "labels": [...]}`` of that one sample, posted with
  aiohttp's ``json=`` to the next URL of ``--reward.remote_url`` (split at commas, taken in
  turn), so no URL gets an empty request. A query is the decoded prompt tokens followed by the
  response tokens. 180 s timeout, 5 tries 1 s apart on any error status; after the fifth the
  sample's reward is ``None`` (docs/integrations.md says what its trainer does with that).
  (At commit 3c3be62 the lists were sharded across the URLs instead, the extra URLs getting
  three empty lists, which are still answered.)
* It takes ``rewards`` as the sample's reward and ``scores`` (else ``rewards``) as its score for
  dynamic filtering (``e.scores[0].item()``: one number per query), and turns every value of
  ``extra_logs`` into a per-sample logging tensor (``torch.tensor([value])``), merged across
  samples key by key (``openrlhf/trainer/ppo_utils/samples_generator.py``, ``experience.py``):
  so each value is a list of one number per query, and every answer carries the same keys.
* Its own server (``openrlhf/cli/serve_rm.py``, ``/get_reward``) answers
  ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``.

Here: the task is the route's, options come from the query string
(:func:`botgrpo.reward_server.compat.core.query_options`), each label becomes the reference
(:func:`botgrpo.reward_server.compat.core.reference_for`), the response is the query with its prompt
cut off (a query that does not start with its prompt is a 422 naming it) and the end-of-sequence
text OpenRLHF leaves on it (``<|im_end|>``; it decodes with ``skip_special_tokens=False``) cut
from its end (``?eos=`` sets which: :func:`botgrpo.reward_server.compat.core.eos_texts`), ``rewards`` is the
outcome ``R`` in the server's bounds, ``scores`` the outcome mapped onto [0, 1], and
``extra_logs`` holds per-query scalars under ``botgrpo_*`` (OpenRLHF cannot take a per-token
list there: it merges per-sample values, so the token scores are summarised as their mean and
minimum). A rollout the server could not score (a timeout, a dead letter) gets the lower bound
as its reward, as on ``/v1/rewards``, and ``botgrpo_unscored`` 1: OpenRLHF has no way to leave
a sample out of its loss.
"""
from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from botgrpo.reward_server.bodies import read_body
from botgrpo.reward_server.compat.core import (SUMMARY_KEYS, body_schema, check_empty, eos_texts, query_options,
                                      reference_for, response_text, score, summary, unit_score)
from botgrpo.reward_server.service import RequestRejected
from botgrpo.services.schemas import JSONValue, Result, Text

router = APIRouter()
LOG_PREFIX = "botgrpo_"


class OpenRLHFRequest(BaseModel):
    """The body OpenRLHF posts: three parallel lists, one entry per sample."""

    model_config = ConfigDict(extra="forbid")

    query: list[Text] = Field(..., description="each sample's prompt followed by its response, as decoded text")
    prompts: list[Text] = Field(..., description="each sample's prompt: the query's prefix")
    labels: list[JSONValue] = Field(..., description="each sample's label: math the answer, react a spec or component name")


class OpenRLHFResponse(BaseModel):
    rewards: list[float] = Field(..., description="the outcome R per query, within the server's bounds")
    scores: list[float] = Field(..., description="the outcome mapped onto [0, 1] (OpenRLHF's dynamic filtering)")
    extra_logs: dict[str, list[float]] = Field(..., description="per-query scalars: botgrpo_passed, botgrpo_unscored, "
                                                                "botgrpo_token_score_mean, botgrpo_token_score_min")


def split_response(query: str, prompt: str, index: int) -> str:
    """The response: ``query`` without its leading ``prompt``; 422 where it does not lead."""
    if query.startswith(prompt):
        return query[len(prompt):]
    at = next((i for i, (a, b) in enumerate(zip(query, prompt)) if a != b), min(len(query), len(prompt)))
    raise RequestRejected(422, f"query[{index}] does not start with prompts[{index}] (they differ from character "
                               f"{at}: {query[at:at + 20]!r} against {prompt[at:at + 20]!r}), so its response "
                               f"cannot be split off; OpenRLHF sends the decoded prompt tokens, which differ from the "
                               f"prompt when it was truncated to fit max_len or the tokenizer does not round-trip it")


def rollouts_of(body: OpenRLHFRequest, task: str, eos: tuple[str, ...], limit: int) -> list[dict[str, Any]]:
    """One ``/v1/rewards`` rollout per query (4xx naming the first bad field); the response
    without the end-of-sequence texts ``eos`` it ends with, at most ``limit`` characters as sent."""
    for name in ("prompts", "labels"):
        if len(getattr(body, name)) != len(body.query):
            raise RequestRejected(422, f"{name} has {len(getattr(body, name))} entries for {len(body.query)} queries: "
                                       f"query, prompts and labels are parallel lists")
    return [{"id": f"query[{i}]", "prompt": prompt,
             "completion": response_text(split_response(query, prompt, i), eos, limit, f"query[{i}]'s response"),
             "reference": reference_for(task, label, f"labels[{i}]")}
            for i, (query, prompt, label) in enumerate(zip(body.query, body.prompts, body.labels))]


def answer(results: list[Result], bounds: tuple[float, float]) -> dict[str, Any]:
    """The answer OpenRLHF reads, from the results."""
    summaries = [summary(r, bounds) for r in results]
    return {"rewards": [r.score for r in results],
            "scores": [unit_score(r, bounds) for r in results],
            "extra_logs": {LOG_PREFIX + key: [s[key] for s in summaries] for key in SUMMARY_KEYS}}


@router.post("/openrlhf/{task}/get_reward", response_model=OpenRLHFResponse,
             summary="OpenRLHF's remote reward protocol (--reward.remote_url): the outcome per query",
             openapi_extra=body_schema(OpenRLHFRequest))
async def get_reward(task: str, http: Request) -> dict[str, Any]:
    """Score OpenRLHF's ``{"query", "prompts", "labels"}``; options from the query string."""
    settings = http.app.state.settings
    body = await asyncio.to_thread(read_body, await http.body(), OpenRLHFRequest)
    options = await asyncio.to_thread(query_options, http, task)
    rollouts = await asyncio.to_thread(rollouts_of, body, task, eos_texts(http), settings.max_completion_chars)
    bounds = settings.bounds
    if not rollouts:  # a shard left empty by OpenRLHF's split across URLs: nothing to score
        check_empty(http, task, options)
        return answer([], bounds)
    mapping = "rollouts[i] is query[i] with its prompt cut off: the completion; its label is the reference"
    return answer(await score(http, task, options, rollouts, mapping), bounds)
