"""The FastAPI app: REST and streaming reward endpoints over a rollout queue.

    POST /v1/rewards          -> {"results": [Result, ...]} in request order
    POST /v1/rewards:stream   -> NDJSON, one Result per line as each finishes
    GET  /v1/scorers          -> tasks, their options (JSON schema), score bounds
    GET  /healthz, /readyz, /metrics
    GET  /inspector            the reward inspector page (setting `inspector`; reward_server/inspector.py)

Without ``redis_url`` the queue and its workers live in this process; with it, rollouts go to a
Redis Stream and ``botgrpo worker`` processes anywhere score them. Bad input is always a 4xx.

The event loop only awaits: request bodies are parsed, validated and turned into work items in
a thread, and results are encoded one at a time (large ones in a thread) and streamed, the
REST response in request order. Each step is one bounded call, so /healthz keeps answering
while a 15 MB request is parsed or a 140 MB response is written, and the server never holds a
whole response as Python objects.

A client must keep reading: each chunk must be taken within ``send_timeout_s`` or the
connection is closed, and a response's reader leaving (that, or a disconnect) drops the
request's waiting rollouts. Unsent results pause the request's scoring (``max_unsent_tokens``)
and count toward ``queue_max_depth`` (see :mod:`botgrpo.services.queue.inprocess`).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import uuid
from contextlib import aclosing, asynccontextmanager
from typing import Any, AsyncIterator, Optional

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import Message, Send

from botgrpo import __version__
from botgrpo.reward_server.bodies import read_body
from botgrpo.reward_server.clients import client_of
from botgrpo.reward_server.compat import router as compat_router
from botgrpo.reward_server.inspector import router as inspector_router
from botgrpo.reward_server.limits import BodyLimit
from botgrpo.reward_server.metrics import Metrics, RequestMetrics
from botgrpo.reward_server.ring import RolloutRing
from botgrpo.reward_server.service import RequestRejected, ScoringService
from botgrpo.reward_server.settings import ServerSettings, isolation_report
from botgrpo.services.queue import InProcessQueue, Outcome, QueueFull, RedisQueue, RolloutQueue
from botgrpo.services.schemas import ErrorResponse, Result, RewardRequest, RewardResponse, ScorersResponse, clean_json

log = logging.getLogger(__name__)
_bearer = HTTPBearer(auto_error=False, description="required when the server runs with BOTGRPO_API_KEY")
_ERRORS = {status: {"model": ErrorResponse} for status in (401, 408, 413, 422, 503)}
_REQUEST_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/RewardRequest"}}}}}
_INLINE_TOKENS = 2048  # results with fewer tokens are encoded on the event loop (microseconds)


class SafeJSONResponse(JSONResponse):
    """JSON whose strings are valid UTF-8 whatever they hold (a lone surrogate becomes U+FFFD)."""

    def render(self, content: Any) -> bytes:
        return encode(content)


def encode(content: Any) -> bytes:
    """Compact JSON as UTF-8; a string that cannot be encoded has its lone surrogates replaced."""
    try:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(clean_json(content), ensure_ascii=False, separators=(",", ":")).encode()


def parse_request(body: bytes) -> RewardRequest:
    """The request in ``body``; :class:`RequestValidationError` (a 422) if it is not one (the
    schema replaces lone surrogates: see :mod:`botgrpo.services.schemas`)."""
    return read_body(body, RewardRequest)


def result_tokens(outcome: Outcome) -> int:
    """What an unsent result weighs toward ``max_unsent_tokens``: its tokens (1 at least)."""
    return 1 + (len(outcome.result.token_scores) if outcome.result is not None else 0)


def build_queue(settings: ServerSettings, service: ScoringService) -> RolloutQueue:
    if settings.redis_url:
        return RedisQueue(settings.redis_url, max_depth=settings.queue_max_depth)
    return InProcessQueue(service.handle, workers=settings.workers, max_depth=settings.queue_max_depth,
                          max_batch=settings.score_batch, max_unsent=settings.max_unsent_tokens, weigh=result_tokens,
                          chunk_s=settings.score_chunk_s)


class BoundedStreamingResponse(StreamingResponse):
    """A streaming response whose client must accept each chunk within ``send_timeout_s``.

    A client that stops reading fills its socket buffers, and then each ``send`` waits. After
    ``send_timeout_s`` the body is closed (its queue reader leaves, so the request's waiting
    rollouts are dropped) and the connection is closed by returning an unfinished response.
    """

    def __init__(self, content: AsyncIterator[bytes], send_timeout_s: float, media_type: str):
        super().__init__(content, media_type=media_type)
        self.send_timeout_s = send_timeout_s

    async def stream_response(self, send: Send) -> None:
        async def timed(message: Message) -> None:
            await asyncio.wait_for(send(message), self.send_timeout_s)

        try:
            await timed({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                await timed({"type": "http.response.body", "body": chunk, "more_body": True})
            await timed({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.TimeoutError:
            log.warning("client did not read its response for send_timeout_s=%g s: closing the connection",
                        self.send_timeout_s)
        finally:
            with anyio.CancelScope(shield=True):  # also when the client left (the task group cancels us)
                await self.body_iterator.aclose()  # type: ignore[attr-defined]


def create_app(settings: Optional[ServerSettings] = None, queue: Optional[RolloutQueue] = None) -> FastAPI:
    """A reward-server app. ``queue`` overrides the one ``settings`` would build (tests)."""
    settings = settings or ServerSettings()
    service = ScoringService(settings)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.isolation = isolation_report(settings)
        app.state.queue = queue or build_queue(settings, service)
        await app.state.queue.start()
        if settings.warm_scorers and not settings.redis_url:
            await asyncio.to_thread(service.warm_up)
        try:
            yield
        finally:
            await app.state.queue.close()
            await asyncio.to_thread(service.close)

    app = FastAPI(title="BoT-GRPO reward server", version=__version__, lifespan=lifespan, default_response_class=SafeJSONResponse,
                  description="Token-level rewards for RL on LLM reasoning: send completions, get one bounded score "
                              "per token. See docs/rewards.md for the scoring schemes.")
    app.state.settings, app.state.service, app.state.metrics = settings, service, metrics
    app.state.inspector = RolloutRing(settings.inspector_rollouts if settings.inspector else 0)
    app.add_middleware(RequestMetrics, metrics=metrics)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes, timeout_s=settings.body_timeout_s)
    expected_key = settings.api_key.get_secret_value().encode() if settings.api_key else None

    async def authorised(credentials: Optional[HTTPAuthorizationCredentials] = Depends(_bearer)) -> None:
        if expected_key is None:
            return
        given = credentials.credentials.encode() if credentials and credentials.scheme.lower() == "bearer" else b""
        if not hmac.compare_digest(given, expected_key):
            raise RequestRejected(401, "missing or invalid API key (send `Authorization: Bearer <key>`)")

    @app.exception_handler(RequestRejected)
    async def rejected(_: Request, exc: RequestRejected) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return SafeJSONResponse({"detail": exc.detail}, status_code=exc.status, headers=headers)

    @app.exception_handler(QueueFull)
    async def queue_full(_: Request, exc: QueueFull) -> JSONResponse:
        return SafeJSONResponse({"detail": str(exc)}, status_code=503,
                                headers={"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))})

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
        return SafeJSONResponse({"detail": errors}, status_code=422)

    async def submit(http: Request) -> tuple[str, RewardRequest]:
        """Parse, check and queue the request's rollouts, off the event loop but for the queueing."""
        request = await asyncio.to_thread(parse_request, await http.body())

        def prepare(batch: str):
            return service.work_items(batch, request, service.check(request), client_of(http))

        batch = uuid.uuid4().hex
        await app.state.queue.submit(await asyncio.to_thread(prepare, batch))
        return batch, request

    async def encoded(batch: str, request: RewardRequest) -> AsyncIterator[tuple[int, bytes]]:
        """``(index, JSON bytes)`` of each result as it finishes; closing this closes the queue's
        reader at once."""
        async with aclosing(app.state.queue.results(batch, len(request.rollouts), settings.result_timeout_s)) as outcomes:
            async for outcome in outcomes:
                result: Result = service.outcome_result(outcome, request)
                metrics.rollouts.labels(request.task, "scored" if result.ok else "error").inc()
                app.state.inspector.record(request, result)
                small = len(result.token_scores) < _INLINE_TOKENS
                yield result.index, result.to_json() if small else await asyncio.to_thread(result.to_json)

    @app.post("/v1/rewards", response_model=RewardResponse, responses=_ERRORS, dependencies=[Depends(authorised)],
              openapi_extra=_REQUEST_BODY, summary="Score rollouts; all results at once, in request order")
    async def rewards(http: Request) -> StreamingResponse:
        batch, request = await submit(http)

        async def body() -> AsyncIterator[bytes]:
            """``{"results": [...]}`` written in request order as results become contiguous."""
            yield b'{"results":['
            waiting: dict[int, bytes] = {}
            following = 0
            async with aclosing(encoded(batch, request)) as chunks:
                async for index, chunk in chunks:
                    waiting[index] = chunk
                    while following in waiting:
                        yield (b"," if following else b"") + waiting.pop(following)
                        following += 1
            yield b"]}"

        return BoundedStreamingResponse(body(), settings.send_timeout_s, media_type="application/json")

    @app.post("/v1/rewards:stream", responses={200: {"content": {"application/x-ndjson": {}},
                                                     "description": "one Result per line, as each finishes"}, **_ERRORS},
              dependencies=[Depends(authorised)], openapi_extra=_REQUEST_BODY,
              summary="Score rollouts; stream each result as it finishes")
    async def rewards_stream(http: Request) -> StreamingResponse:
        batch, request = await submit(http)

        async def lines() -> AsyncIterator[bytes]:
            async with aclosing(encoded(batch, request)) as chunks:
                async for _, chunk in chunks:
                    yield chunk + b"\n"

        return BoundedStreamingResponse(lines(), settings.send_timeout_s, media_type="application/x-ndjson")

    @app.get("/v1/scorers", response_model=ScorersResponse, dependencies=[Depends(authorised)], responses=_ERRORS,
             summary="The tasks this server scores, their options and score bounds")
    async def scorers() -> dict[str, Any]:
        return {"scorers": [{**info, "bounds": settings.bounds} for info in service.describe()]}

    @app.get("/healthz", summary="Liveness: the process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Readiness: the queue (Redis) and the local scorer pools are usable; the compiler "
                                "sandbox's isolation layers on this host (active, missing, required)")
    async def readyz() -> JSONResponse:
        checks = {"queue": await app.state.queue.healthy(), **service.healthy()}
        ready = all(checks.values())
        return SafeJSONResponse({"ready": ready, "checks": checks, "isolation": app.state.isolation},
                                status_code=200 if ready else 503)

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def prometheus() -> PlainTextResponse:
        metrics.queue_depth.set(await app.state.queue.depth())
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    def openapi() -> dict[str, Any]:
        """FastAPI's schema plus RewardRequest, which the endpoints parse themselves (off the loop)."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            request_schema = RewardRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(request_schema.pop("$defs", {}))
            components["RewardRequest"] = request_schema
            app.openapi_schema = schema
        return app.openapi_schema

    app.include_router(compat_router)  # /compat/*: OpenRLHF's and slime's protocols, same key (reward_server/compat)
    if settings.inspector:
        app.include_router(inspector_router)  # /inspector: the last scored rollouts (reward_server/inspector.py)
    app.openapi = openapi  # type: ignore[method-assign]
    return app
