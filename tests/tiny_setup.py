"""A tiny policy and arithmetic datasets, built locally in a few seconds, for trainer tests."""
from __future__ import annotations

from pathlib import Path

from botgrpo.trainer.models.sft import build_tiny_policy
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
    """A two-step math run on ``paths`` (:func:`tiny_math_setup`); ``overrides``: sections (merged
    into the defaults here) or top-level fields, e.g. ``optim={"lr": 1e-2}, steps=3``."""
    from botgrpo.trainer.config import TrainConfig, merge

    values = {"model": paths["model"], "output_dir": str(out), "steps": 2,
              "data": {"dataset": paths["dataset"]},
              "eval": {"dataset": paths.get("eval_dataset"), "prompts": 4},
              "rollout": {"group_size": 4, "prompts_per_step": 4, "sampling": {"max_new_tokens": 24}},
              "reward": {"task": "math"}, "optim": {"lr": 1e-3},
              "log": {"tensorboard": False, "progress": False}}
    return TrainConfig.model_validate(merge(values, overrides))


def straight_and_resumed(make, root, steps: int = 4, split: int = 2):
    """One run of ``steps`` straight through (``root/a``) and one stopped at ``split`` then resumed
    to ``steps`` (``root/b``), from ``make(out, steps=..., checkpoint={"resume": ...})`` returning a Trainer:
    ``(straight, its records, resumed, its records after the resume)``, every trainer closed."""
    straight = make(root / "a", steps=steps)
    straight_records = straight.train()
    straight.close()
    first = make(root / "b", steps=split)
    first.train()
    first.close()
    resumed = make(root / "b", steps=steps, checkpoint={"resume": True})
    assert resumed.step == split
    resumed_records = resumed.train()
    resumed.close()
    return straight, straight_records, resumed, resumed_records
