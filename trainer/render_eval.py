"""Render metrics for ``botgrpo eval`` at the react ``render`` level: of the scored rollouts,
the share that rendered (``render_rate``), the share that built but rendered nothing visible
(``empty_render_rate``) and the share whose render failed otherwise (``render_error_rate``),
read from the results' ``details.render`` as the scored batch carries them.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence


def render_metrics(level: Optional[str], details: Optional[Sequence[dict[str, Any]]],
                   prefix: str = "") -> dict[str, float]:
    """The render rates of one scored batch (``{}`` below level render)."""
    if level != "render":
        return {}
    scored = [d for d in details or () if not d.get("error")]
    statuses = [(d.get("render") or {}).get("status") for d in scored]
    n = len(scored)
    rate = (lambda k: sum(s == k for s in statuses) / n) if n else (lambda k: math.nan)
    out = {f"{prefix}render_rate": rate("ok"), f"{prefix}empty_render_rate": rate("empty")}
    out[f"{prefix}render_error_rate"] = (sum(s not in (None, "ok", "empty", "not_built") for s in statuses) / n
                                         if n else math.nan)
    return out
