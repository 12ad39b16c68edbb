"""What the peer protocols share: their body parsing, labels as references, options from the
query string, and scoring through the server's own request path.

Scoring goes through exactly what ``POST /v1/rewards`` uses: :meth:`ScoringService.check`
(limits, task, options, references; a :class:`RequestRejected` becomes the app's 4xx),
:meth:`ScoringService.work_items`, the app's queue (all-or-nothing admission: a
:class:`QueueFull` becomes the app's 503 with ``Retry-After`` and leaves nothing queued) and its
results, with :meth:`ScoringService.outcome_result` for a rollout that could not be scored. Auth
(:func:`authorised`) takes the server's API key as on ``/v1/*``, and also as the password of HTTP
Basic auth: neither peer client can set a header, but aiohttp sends a URL's userinfo
(``http://botgrpo:KEY@host:8000/...``) as Basic auth. So a peer client's retry (OpenRLHF:
5 tries 1 s apart; slime: 10 with exponential backoff) is safe: a rejected request queued
nothing, and a scored one is a pure function of its input (same text, label and options, same
answer), so scoring it twice gives the same reward.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import math
import re
import types
import typing
import uuid
from contextlib import aclosing
from typing import Any, Callable, Optional

from fastapi import Request
from pydantic import BaseModel, ValidationError

from botgrpo.reward_server.bodies import UnreadableJSON, parse_json
from botgrpo.reward_server.clients import client_of
from botgrpo.reward_server.react.spec import Spec
from botgrpo.reward_server.scorers import scorer_class
from botgrpo.reward_server.service import RequestRejected
from botgrpo.services.schemas import Result, RewardRequest

RESERVED = frozenset({"options", "eos"})  # query parameters that are not scorer options
# end-of-sequence texts of common chat models: OpenRLHF decodes with skip_special_tokens=False,
# so its responses end with one, which unfenced code cannot compile with
EOS_TEXTS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<end_of_turn>", "<eos>",
             "<|end|>", "<\uff5cend\u2581of\u2581sentence\uff5c>")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI ``requestBody`` of a route that parses ``model`` itself: its JSON schema with the
    (non-recursive) ``$defs`` written in place, so the schema has no dangling references."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref[len("#/$defs/"):]])
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    return {"requestBody": {"required": True, "content": {"application/json": {"schema": inline(schema)}}}}


def authorised(http: Request) -> None:
    """Pass when the server has no API key, or the request carries it: ``Authorization: Bearer
    <key>``, or ``Basic`` with the key as the password (any user name); else a 401."""
    key = http.app.state.settings.api_key
    if key is None:
        return
    scheme, _, value = http.headers.get("authorization", "").partition(" ")
    given = b""
    if scheme.lower() == "bearer":
        given = value.strip().encode()
    elif scheme.lower() == "basic":
        try:
            given = base64.b64decode(value.strip(), validate=True).partition(b":")[2]
        except (binascii.Error, ValueError):
            given = b""
    if not hmac.compare_digest(given, key.get_secret_value().encode()):
        raise RequestRejected(401, "missing or invalid API key (send `Authorization: Bearer <key>`, or put it in the "
                                   "URL as the password: http://botgrpo:<key>@host/...)")


def eos_texts(http: Request) -> tuple[str, ...]:
    """The end-of-sequence texts to cut from a response: ``?eos=...`` (repeatable), ``?eos=``
    for none, else :data:`EOS_TEXTS`."""
    if "eos" not in http.query_params:
        return EOS_TEXTS
    return tuple(t for t in http.query_params.getlist("eos") if t)


def cut_eos(text: str, markers: tuple[str, ...]) -> str:
    """``text`` without the end-of-sequence markers it ends with (one after another, as in
    ``<|im_end|><|endoftext|>``); nothing else changes, so offsets from its start still hold.

    Linear: markers are compared in place at a moving end and the text is copied once (cutting
    a copy per marker made a 1.5 MB response of ``</s>`` cost 8 s of CPU).
    """
    end, cut = len(text), True
    while cut:
        cut = False
        for marker in markers:
            if marker and len(marker) <= end and text.startswith(marker, end - len(marker), end):
                end, cut = end - len(marker), True
    return text[:end]


def response_text(text: str, markers: tuple[str, ...], limit: int, where: str) -> str:
    """The completion to score: ``text`` without its end-of-sequence ``markers``; a 413 when
    ``text`` *as sent* has more than ``limit`` (``max_completion_chars``) characters, so a
    response made of markers is no way around the limit."""
    if len(text) > limit:
        raise RequestRejected(413, f"{where} has {len(text)} characters; the limit max_completion_chars is {limit}")
    return cut_eos(text, markers)


def list_options(model: Optional[type[BaseModel]]) -> frozenset[str]:
    """The fields of an options ``model`` that hold a list (``wrapper_tags``), Optional or not."""
    def is_list(annotation: Any) -> bool:
        origin = typing.get_origin(annotation)
        if origin in (list, tuple, set, frozenset):
            return True
        return origin in (typing.Union, types.UnionType) and any(is_list(a) for a in typing.get_args(annotation))

    return frozenset(name for name, info in (model.model_fields.items() if model else ()) if is_list(info.annotation))


def query_options(http: Request, task: str, reserved: frozenset[str] = RESERVED) -> dict[str, Any]:
    """Scorer options from the query string: ``?level=build&spec_weight=0.25``.

    Each parameter is one option, its value a string that the scorer's options model converts
    (``"0.25"`` -> 0.25, ``"true"`` -> True). A list option (``wrapper_tags``) takes its values
    from every time it is given and splits each at commas: ``?wrapper_tags=main``,
    ``?wrapper_tags=main&wrapper_tags=section`` and ``?wrapper_tags=main%2Csection`` (a comma
    as OpenRLHF's comma-split URL list needs it) are ``["main"]``, ``["main", "section"]`` and
    the same; an empty value is no value. Another option given twice is a list (the options
    model says whether it takes one). ``options`` holds a JSON object of options (URL-encoded)
    for anything else; a parameter named too wins over it. Names in ``reserved`` other than
    ``options`` belong to the route. Unknown names are a 422 from the scorer's options model,
    as on ``/v1/rewards``.
    """
    params = http.query_params
    options: dict[str, Any] = {}
    if "options" in params:
        try:
            loaded = parse_json(params["options"])
        except UnreadableJSON as exc:
            raise RequestRejected(422, f"query parameter options: not JSON ({exc})") from None
        if not isinstance(loaded, dict):
            raise RequestRejected(422, "query parameter options: must be a JSON object of scorer options")
        options.update(loaded)
    service = http.app.state.service
    lists = list_options(scorer_class(task).Options if task in service.tasks() else None)
    for key in params.keys():
        if key in reserved:
            continue
        values = params.getlist(key)
        if key in lists:
            options[key] = [part for value in values for part in value.split(",") if part]
        else:
            options[key] = values[0] if len(values) == 1 else values
    return options


# what a peer sends without its label column set (docs/integrations.md, "A refused sample")
LABEL_HINT = ("name the answer's column in your trainer: OpenRLHF's --data.label_key (it sends \"\" without it), "
              "slime's --label-key (null without it)")


def _answer_label(label: Any, where: str) -> dict[str, Any]:
    """``math``: the reference answer, a string or a number (``"\\frac{1}{2}"``, ``42``), or an
    object that holds it as ``answer``; an empty label, or an object without an answer, is a 422
    (the math scorer needs one: scored without, the sample would be a failure the peer trains on)."""
    if isinstance(label, dict):
        answer = label.get("answer")
        if answer is not None and not (isinstance(answer, str) and not answer.strip()):
            return label
        raise RequestRejected(422, f"{where}: task 'math' needs the reference answer; an object label must hold it "
                                   f"as a non-empty 'answer', got {_show(label)}")
    if isinstance(label, int) and not isinstance(label, bool):
        return {"answer": str(label)}
    if isinstance(label, float) and math.isfinite(label):
        return {"answer": repr(label)}
    if isinstance(label, str) and label.strip():
        return {"answer": label}
    raise RequestRejected(422, f"{where}: task 'math' needs the reference answer as the label "
                               f"(a non-empty string or a number), got {_show(label)}; {LABEL_HINT}")


def _spec_reference(label: Any, where: str) -> Optional[dict[str, Any]]:
    """``react`` / ``judge``: the spec, as a JSON object (or a string holding one), or a component
    name (``"TodoList"``: the spec ``{"component": "TodoList"}``); an empty label is no spec
    (compile verdict only). A malformed spec is a 422 naming the label."""
    spec = _spec_label(label, where)
    if spec is None:
        return None
    try:
        Spec.model_validate(spec)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in exc.errors())
        raise RequestRejected(422, f"{where}: not a valid spec ({problems}); valid keys: "
                                   f"{sorted(Spec.model_fields)}") from None
    return {"spec": spec}


# task -> how a peer's label becomes its reference; a task not here (``model``) reads none
LABEL_READERS: dict[str, Callable[[Any, str], Optional[dict[str, Any]]]] = {
    "math": _answer_label, "react": _spec_reference, "judge": _spec_reference,
}


def reference_for(task: str, label: Any, where: str) -> Optional[dict[str, Any]]:
    """The ``reference`` a peer's ``label`` stands for (``where`` names the label in errors),
    read by the task's entry in :data:`LABEL_READERS`."""
    reader = LABEL_READERS.get(task)
    return reader(label, where) if reader is not None else None


def _spec_label(label: Any, where: str) -> Optional[dict[str, Any]]:
    if label is None or (isinstance(label, str) and not label.strip()):
        return None
    if isinstance(label, dict):
        return label
    if isinstance(label, str):
        text = label.strip()
        if text.startswith("{"):
            try:
                loaded = parse_json(text)
            except UnreadableJSON as exc:
                raise RequestRejected(422, f"{where}: starts with '{{' but is not JSON ({exc})") from None
            if isinstance(loaded, dict):
                return loaded
        elif _IDENTIFIER.match(text):
            return {"component": text}
    raise RequestRejected(422, f"{where}: a react label is a spec (a JSON object, or a string holding one) or a "
                               f"component name, got {_show(label)}")


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    except (ValueError, RecursionError):  # labels are at most MAX_DEPTH deep; this is the last resort
        text = f"a {type(value).__name__} that cannot be shown"
    return text if len(text) <= 80 else text[:77] + "..."


async def score(http: Request, task: str, options: dict[str, Any], rollouts: list[dict[str, Any]],
                mapping: str) -> list[Result]:
    """The results (as ``/v1/rewards`` returns them) of ``rollouts``, in their order.

    ``mapping`` is appended to rejections that name ``rollouts[i]``, saying which part of the
    peer's request that is.
    """
    state = http.app.state
    service, settings = state.service, state.settings
    try:
        request = RewardRequest.model_validate({"task": task, "options": options, "rollouts": rollouts})
    except ValidationError as exc:
        raise RequestRejected(422, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                             for e in exc.errors(include_url=False)) + f" ({mapping})") from None
    batch = uuid.uuid4().hex

    def prepare():
        try:
            return service.work_items(batch, request, service.check(request), client_of(http))
        except RequestRejected as exc:
            raise RequestRejected(exc.status, f"{exc.detail} ({mapping})" if "rollouts[" in exc.detail else exc.detail)

    await state.queue.submit(await asyncio.to_thread(prepare))
    results: list[Optional[Result]] = [None] * len(rollouts)
    async with aclosing(state.queue.results(batch, len(rollouts), settings.result_timeout_s)) as outcomes:
        async for outcome in outcomes:
            result = service.outcome_result(outcome, request)
            state.metrics.rollouts.labels(task, "scored" if result.ok else "error").inc()
            state.inspector.record(request, result)
            results[outcome.index] = result
    return results  # type: ignore[return-value]


def check_empty(http: Request, task: str, options: dict[str, Any]) -> None:
    """The checks a request with no rollouts still gets: its task and options (4xx if bad)."""
    http.app.state.service.check(RewardRequest.model_construct(task=task, options=options, rollouts=[]))


def unit_score(result: Result, bounds: tuple[float, float]) -> float:
    """The outcome mapped affinely from ``bounds`` onto [0, 1] (an unscored rollout: 0).

    OpenRLHF's ``scores`` feed its dynamic filtering, which keeps a prompt's group while the mean
    lies strictly inside ``--algo.dynamic_filtering_range`` (default (0, 1)): with this map a
    group that all fails (0) or all passes (1) is filtered, as with its 0/1 example scorers.
    """
    if not result.ok:
        return 0.0
    low, high = bounds
    return (result.score - low) / (high - low) if high > low else 0.0


SUMMARY_KEYS = ("passed", "unscored", "token_score_mean", "token_score_min")


def summary(result: Result, bounds: tuple[float, float]) -> dict[str, float]:
    """Per-rollout scalars: ``passed`` (1/0), ``unscored`` (1/0), the token scores' mean and min.

    The same keys for every result, scored or not, so that per-sample logs line up.
    """
    scores = result.token_scores
    low = bounds[0]
    return {"passed": 1.0 if result.passed else 0.0,
            "unscored": 0.0 if result.ok else 1.0,
            "token_score_mean": float(sum(scores) / len(scores)) if scores else low,
            "token_score_min": float(min(scores)) if scores else low}
