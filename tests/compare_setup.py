"""The shared start of the tiny ``botgrpo compare`` studies in the tests: built once per folder."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from botgrpo.compare.cells import BUILT_FROM
from tests.tiny_setup import tiny_math_setup


def tiny(root: Path) -> dict[str, Any]:
    """The tiny policy and arithmetic datasets under ``root``, as training config values (reused
    when built: a setup hook runs on every ``botgrpo compare`` and the lock fingerprints them). The
    policy is made by a seeded recipe, and says so: its built-from.json is its identity."""
    root = Path(root)
    if not (root / "model" / "config.json").exists():
        tiny_math_setup(root)
        (root / "model" / BUILT_FROM).write_text('{"builder": "tests.tiny_setup.tiny_math_setup"}\n')
    return {"model": str(root / "model"), "data": {"dataset": str(root / "train.jsonl")},
            "eval": {"dataset": str(root / "eval.jsonl")}}



def where(root: Path) -> dict[str, Any]:
    """Where a setup hook runs: its process id and its folder (a Path), as config values."""
    return {"setup_pid": os.getpid(), "root": root}


def answer(root: Path, value: Any) -> Any:
    """A setup hook that returns ``value`` as it is."""
    return value
