"""Render metrics for ``botgrpo eval`` at the react ``render`` level: of the scored rollouts,
the share that rendered (``render_rate``) and the share that built but rendered nothing
visible (``empty_render_rate``), read from the results' ``details.render``.

The evaluation scores each level once; this module watches that one call (it wraps the
reward source's client for its duration) instead of scoring the batch a second time.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator, Optional


class RenderMetrics:
    """Collects the raw results of one scoring call; :meth:`metrics` turns them into rates."""

    def __init__(self, level: Optional[str]) -> None:
        self.level = level
        self.results: list[dict[str, Any]] = []

    def metrics(self, prefix: str = "") -> dict[str, float]:
        if self.level != "render":
            return {}
        scored = [r for r in self.results if not r.get("error")]
        statuses = [((r.get("details") or {}).get("render") or {}).get("status") for r in scored]
        n = len(scored)
        rate = (lambda k: sum(s == k for s in statuses) / n) if n else (lambda k: math.nan)
        out = {f"{prefix}render_rate": rate("ok"), f"{prefix}empty_render_rate": rate("empty")}
        out[f"{prefix}render_error_rate"] = (sum(s not in (None, "ok", "empty", "not_built") for s in statuses) / n
                                             if n else math.nan)
        return out


@contextmanager
def render_metrics(rewards, level: Optional[str]) -> Iterator[RenderMetrics]:
    """While the block runs, record what ``rewards`` (a RewardSource) gets back from its server."""
    collector = RenderMetrics(level)
    if rewards is None or level != "render":
        yield collector
        return
    client = rewards.client
    original = client.score

    def score(*args: Any, **kwargs: Any):
        results = original(*args, **kwargs)
        collector.results.extend(results)
        return results

    client.score = score
    try:
        yield collector
    finally:
        client.score = original
