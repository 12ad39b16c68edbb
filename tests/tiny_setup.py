"""A tiny policy and arithmetic datasets, built locally in a few seconds, for trainer tests."""
from __future__ import annotations

from pathlib import Path

from botgrpo.trainer.sft import build_tiny_policy
from botgrpo.trainer.tasks import arith
from botgrpo.trainer.tasks.base import write_jsonl


def tiny_math_setup(directory: Path) -> dict[str, str]:
    pairs = arith.make_sft_corpus(200, 0)
    build_tiny_policy([p + c for p, c in pairs], directory / "model", hidden=64, layers=2, vocab_size=400)
    write_jsonl(directory / "train.jsonl", arith.make_prompts(64, 1))
    write_jsonl(directory / "eval.jsonl", arith.make_prompts(16, 2))
    return {"model": str(directory / "model"), "dataset": str(directory / "train.jsonl"),
            "eval_dataset": str(directory / "eval.jsonl")}


def tiny_config(paths: dict[str, str], out: Path, **overrides):
    from botgrpo.trainer.config import TrainConfig

    values = dict(paths, task="math", output_dir=str(out), steps=2, group_size=4, prompts_per_step=4,
                  sampling={"max_new_tokens": 24}, lr=1e-3, tensorboard=False, progress=False, eval_prompts=4)
    values.update(overrides)
    return TrainConfig.model_validate(values)
