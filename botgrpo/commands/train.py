"""``botgrpo train --config FILE.yaml [flags]``: train a policy with BoT-GRPO or a baseline.

Flags override the file; ``--set key=value`` (YAML value, dotted keys for nested fields such as
``sampling.max_new_tokens``) reaches every field of :class:`botgrpo.trainer.config.TrainConfig`.
Under ``torchrun --nproc_per_node N`` it trains data-parallel (DDP or FSDP).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import yaml

FLAGS = {  # flag -> config field, for the most used fields
    "model": str, "dataset": str, "eval_dataset": str, "output_dir": str, "task": str, "reward_url": str,
    "method": str, "estimator": str, "policy_loss": str, "aggregation": str, "steps": int, "lr": float,
    "group_size": int, "prompts_per_step": int, "seed": int, "kl_coef": float, "num_iterations": int,
    "max_seconds": float,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file of TrainConfig fields")
    for name, kind in FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind)
    parser.add_argument("--resume", action="store_true", default=None, help="continue from the latest checkpoint")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any field, e.g. sampling.top_p=0.9")


def _nested(values: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        values = values.setdefault(key, {})
    values[leaf] = value


def build_config(args: argparse.Namespace):
    from botgrpo.services.settings import SettingsError, read_yaml
    from botgrpo.trainer.config import TrainConfig

    values: dict[str, Any] = read_yaml(args.config) if args.config else {}
    values.update({k: getattr(args, k) for k in FLAGS if getattr(args, k) is not None})
    if "reward_api_key" not in values and os.environ.get("BOTGRPO_REWARD_API_KEY"):  # keeps secrets off the command line
        values["reward_api_key"] = os.environ["BOTGRPO_REWARD_API_KEY"]
    if args.resume:
        values["resume"] = True
    for pair in args.set:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise SettingsError(f"--set expects KEY=VALUE, got {pair!r}")
        _nested(values, key, yaml.safe_load(raw))
    try:
        return TrainConfig.model_validate(values)
    except Exception as exc:  # pydantic's message names every bad field
        raise SettingsError(f"invalid training config: {exc}") from None


def describe(cfg) -> str:
    algo = cfg.algorithm()
    return (f"method {cfg.method}: estimator={algo.estimator} {algo.estimator_options or ''} "
            f"policy_loss={algo.policy_loss} clip=({algo.eps_low}, {algo.eps_high}) aggregation={algo.aggregation} "
            f"kl={algo.kl_coef} ({algo.kl_estimator}) dynamic_sampling={algo.dynamic_sampling} "
            f"overlong_buffer={cfg.overlong_zone()} tokens")


def check_paths(cfg) -> None:
    """Name a missing model or dataset before anything heavy loads."""
    from botgrpo.services.settings import SettingsError

    if not (Path(cfg.model) / "config.json").exists():
        raise SettingsError(f"model {cfg.model!r} is not a local Hugging Face model directory (no config.json)")
    for field in ("dataset", "eval_dataset"):
        path = getattr(cfg, field)
        if path is not None and not Path(path).exists():
            raise SettingsError(f"{field} {path!r} does not exist")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.loop import Trainer

    cfg = build_config(args)
    check_paths(cfg)
    with reward_server_for(cfg) as served:
        return _train(Trainer(served), cfg, Console())  # config.json keeps the run's own settings


def _train(trainer, cfg, console) -> int:
    from botgrpo.trainer.progress import progress_callback

    if trainer.d.main:
        console.print(describe(cfg))
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(cfg.model_dump_json(indent=2))
        (out / "algorithm.json").write_text(json.dumps(cfg.algorithm().model_dump(), indent=2))
    try:
        with progress_callback(cfg.steps, enabled=cfg.progress and trainer.d.main) as on_step:
            trainer.train(on_step)
    finally:
        trainer.close()
    if trainer.d.main:
        console.print(f"done: {cfg.output_dir}/metrics.jsonl, curves.png, checkpoint-{trainer.step}")
        for e in trainer.evals:
            console.print(f"eval at step {e['step']}: pass_rate={e['pass_rate']:.3f} spec_rate={e.get('spec_rate')}")
    return 0
