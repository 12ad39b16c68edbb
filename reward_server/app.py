"""The FastAPI app: REST and streaming reward endpoints over a rollout queue.

    POST /v1/rewards          -> {"results": [Result, ...]} in request order
    POST /v1/rewards:stream   -> NDJSON, one Result per line as each finishes
    GET  /v1/scorers          -> tasks, their options (JSON schema), score bounds
    GET  /healthz, /readyz, /metrics

Without ``redis_url`` the queue and its workers live in this process; with it, rollouts go to a
Redis Stream and ``botgrpo worker`` processes anywhere score them. Bad input is always a 4xx.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Optional

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from reward_server.limits import BodyLimit
from reward_server.metrics import Metrics, RequestMetrics
from reward_server.service import RequestRejected, ScoringService, error_result
from reward_server.settings import ServerSettings
from services.queue import InProcessQueue, QueueFull, RedisQueue, RolloutQueue
from services.schemas import ErrorResponse, RewardRequest, RewardResponse, ScorersResponse

log = logging.getLogger(__name__)
_bearer = HTTPBearer(auto_error=False, description="required when the server runs with BOTGRPO_API_KEY")
_ERRORS = {status: {"model": ErrorResponse} for status in (401, 413, 422, 503)}


def build_queue(settings: ServerSettings, service: ScoringService) -> RolloutQueue:
    if settings.redis_url:
        return RedisQueue(settings.redis_url, max_depth=settings.queue_max_depth)
    return InProcessQueue(service.handle, workers=settings.workers, max_depth=settings.queue_max_depth,
                          max_batch=settings.score_batch)


def create_app(settings: Optional[ServerSettings] = None, queue: Optional[RolloutQueue] = None) -> FastAPI:
    """A reward-server app. ``queue`` overrides the one ``settings`` would build (tests)."""
    settings = settings or ServerSettings()
    service = ScoringService(settings)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.queue = queue or build_queue(settings, service)
        await app.state.queue.start()
        if settings.warm_scorers and not settings.redis_url:
            await asyncio.to_thread(service.warm_up)
        try:
            yield
        finally:
            await app.state.queue.close()
            await asyncio.to_thread(service.close)

    app = FastAPI(title="BoT-GRPO reward server", version="0.1.0", lifespan=lifespan,
                  description="Token-level rewards for RL on LLM reasoning: send completions, get one bounded score "
                              "per token. See docs/rewards.md for the scoring schemes.")
    app.state.settings, app.state.service, app.state.metrics = settings, service, metrics
    app.add_middleware(RequestMetrics, metrics=metrics)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
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
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=headers)

    @app.exception_handler(QueueFull)
    async def queue_full(_: Request, exc: QueueFull) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503,
                            headers={"Retry-After": str(max(1, math.ceil(exc.retry_after_s)))})

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    async def submit(request: RewardRequest) -> tuple[str, Any]:
        options = service.check(request)
        batch = uuid.uuid4().hex
        await app.state.queue.submit(service.work_items(batch, request, options))
        return batch, options

    async def results(batch: str, request: RewardRequest) -> AsyncIterator[dict[str, Any]]:
        async for outcome in app.state.queue.results(batch, len(request.rollouts), settings.result_timeout_s):
            if outcome.result is not None:
                result = outcome.result
            else:
                rollout = request.rollouts[outcome.index].model_dump(mode="json")
                result = error_result(rollout, outcome.index, outcome.error or "unknown error", settings.bounds)
            metrics.rollouts.labels(request.task, "error" if result.get("error") else "scored").inc()
            yield result

    @app.post("/v1/rewards", response_model=RewardResponse, responses=_ERRORS, dependencies=[Depends(authorised)],
              summary="Score rollouts; all results at once, in request order")
    async def rewards(request: RewardRequest) -> dict[str, Any]:
        batch, _ = await submit(request)
        ordered: list[Optional[dict[str, Any]]] = [None] * len(request.rollouts)
        async for result in results(batch, request):
            ordered[result["index"]] = result
        return {"results": ordered}

    @app.post("/v1/rewards:stream", responses={200: {"content": {"application/x-ndjson": {}},
                                                     "description": "one Result per line, as each finishes"}, **_ERRORS},
              dependencies=[Depends(authorised)], summary="Score rollouts; stream each result as it finishes")
    async def rewards_stream(request: RewardRequest) -> StreamingResponse:
        batch, _ = await submit(request)

        async def lines() -> AsyncIterator[bytes]:
            async for result in results(batch, request):
                yield (json.dumps(result) + "\n").encode()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.get("/v1/scorers", response_model=ScorersResponse, dependencies=[Depends(authorised)], responses=_ERRORS,
             summary="The tasks this server scores, their options and score bounds")
    async def scorers() -> dict[str, Any]:
        return {"scorers": [{**info, "bounds": settings.bounds} for info in service.describe()]}

    @app.get("/healthz", summary="Liveness: the process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Readiness: the queue (Redis) and the local scorer pools are usable")
    async def readyz() -> JSONResponse:
        checks = {"queue": await app.state.queue.healthy(), **service.healthy()}
        ready = all(checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def prometheus() -> PlainTextResponse:
        metrics.queue_depth.set(await app.state.queue.depth())
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
