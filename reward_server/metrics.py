"""Prometheus metrics of one app instance (its own registry, so several apps can coexist)."""
from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("botgrpo_requests_total", "HTTP requests", ["route", "status"], registry=self.registry)
        self.latency = Histogram("botgrpo_request_seconds", "HTTP request latency", ["route"], registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.rollouts = Counter("botgrpo_rollouts_total", "rollouts scored", ["task", "outcome"], registry=self.registry)
        self.queue_depth = Gauge("botgrpo_queue_depth", "rollouts queued, being scored, or scored and not yet sent to their client", registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware counting requests by route template and status, and timing them."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status, started = 500, time.perf_counter()

        async def observe(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.metrics.requests.labels(path, str(status)).inc()
            self.metrics.latency.labels(path).observe(time.perf_counter() - started)
