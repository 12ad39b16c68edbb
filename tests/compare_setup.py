"""The shared start of the tiny ``botgrpo compare`` studies in the tests: built once per folder."""
from __future__ import annotations

from pathlib import Path

from tests.tiny_setup import tiny_math_setup


def tiny(root: Path) -> dict[str, str]:
    """The tiny policy and arithmetic datasets under ``root`` (reused when built: a setup hook
    runs on every ``botgrpo compare`` and the lock fingerprints what it returns)."""
    paths = {"model": str(root / "model"), "dataset": str(root / "train.jsonl"),
             "eval_dataset": str(root / "eval.jsonl")}
    if not (root / "model" / "config.json").exists():
        paths = tiny_math_setup(Path(root))
    return paths
