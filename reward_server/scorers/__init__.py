"""The scorer registry: task name -> scorer class, imported on first use.

Each scorer follows :class:`botgrpo.reward_server.scorers.base.Scorer`. Import paths rather than classes
keep ``import reward_server`` light: the math scorer pulls in sympy, the react scorer the Node
pool, and a deployment that serves one task need not load the other.

``judge`` (the react reward plus an LLM judge) is a task where a judge endpoint is configured
(``BOTGRPO_JUDGE_URL`` when this module is imported), as ``model`` is where a reward model is;
:func:`scorer_class` resolves it either way.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

SCORERS: dict[str, str] = {
    "react": "botgrpo.reward_server.scorers.react:ReactScorer",
    "math": "botgrpo.reward_server.scorers.math:MathScorer",
    "model": "botgrpo.reward_server.scorers.model:ModelScorer",
}
# a task served only where the server setting named here is set (told without importing it)
REQUIRES: dict[str, str] = {"model": "model_path"}
OPTIONAL_SCORERS: dict[str, str] = {
    "judge": "botgrpo.reward_server.scorers.judge:JudgeScorer",
}
if os.environ.get("BOTGRPO_JUDGE_URL"):
    SCORERS["judge"] = OPTIONAL_SCORERS["judge"]


def scorer_class(task: str) -> type:
    """The scorer class registered for ``task`` (ValueError listing the tasks if unknown)."""
    try:
        module, name = {**OPTIONAL_SCORERS, **SCORERS}[task].split(":")
    except KeyError:
        raise ValueError(f"unknown task {task!r}; choose one of {sorted(SCORERS)}") from None
    return getattr(importlib.import_module(module), name)


def create_scorer(task: str, **kwargs: Any):
    """A new scorer for ``task``, constructed with ``kwargs``."""
    return scorer_class(task)(**kwargs)
