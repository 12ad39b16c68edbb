"""``botgrpo train --config FILE.yaml [flags]``: train a policy with BoT-GRPO or a baseline.

Flags override the file; ``--set key=value`` (YAML value, dotted keys for nested fields such as
``rollout.sampling.max_new_tokens``) reaches every field of :class:`botgrpo.trainer.config.TrainConfig`.
Under ``torchrun --nproc_per_node N`` it trains data-parallel (DDP or FSDP).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import yaml

FLAGS: dict[str, tuple[str, type]] = {  # flag -> (config field, dotted; type), for the most used fields
    "model": ("model", str), "dataset": ("data.dataset", str), "eval_dataset": ("eval.dataset", str),
    "output_dir": ("output_dir", str), "task": ("reward.task", str), "reward_url": ("reward.url", str),
    "method": ("algorithm.method", str), "estimator": ("algorithm.estimator", str),
    "policy_loss": ("algorithm.policy_loss", str), "aggregation": ("algorithm.aggregation", str),
    "kl_coef": ("algorithm.kl_coef", float), "steps": ("steps", int), "lr": ("optim.lr", float),
    "group_size": ("rollout.group_size", int), "prompts_per_step": ("rollout.prompts_per_step", int),
    "seed": ("seed", int), "num_iterations": ("optim.num_iterations", int), "max_seconds": ("max_seconds", float),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file of TrainConfig fields (docs/configuration.md)")
    for name, (field, kind) in FLAGS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, help=f"sets {field}")
    parser.add_argument("--resume", action="store_true", default=None, help="continue from the latest checkpoint")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="any field by its dotted name, e.g. rollout.sampling.top_p=0.9")


def build_config(args: argparse.Namespace):
    from botgrpo.services.settings import SettingsError, read_yaml
    from botgrpo.trainer.config import TrainConfig, merge, nest

    values: dict[str, Any] = read_yaml(args.config) if args.config else {}
    dotted: dict[str, Any] = {field: getattr(args, name) for name, (field, _) in FLAGS.items()
                              if getattr(args, name) is not None}
    if args.resume:
        dotted["checkpoint.resume"] = True
    for pair in args.set:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise SettingsError(f"--set expects KEY=VALUE, got {pair!r}")
        dotted[key] = yaml.safe_load(raw)
    try:
        values = merge(values, nest(dotted))
        reward = values.get("reward")
        if os.environ.get("BOTGRPO_REWARD_API_KEY") and not (isinstance(reward, dict) and reward.get("api_key")):
            values = merge(values, {"reward": {"api_key": os.environ["BOTGRPO_REWARD_API_KEY"]}})  # off the command line
        return TrainConfig.model_validate(values)
    except ValueError as exc:  # pydantic's message names every bad field
        raise SettingsError(f"invalid training config: {exc}") from None


def describe(cfg) -> str:
    algo = cfg.algorithm.settings()
    return (f"method {cfg.algorithm.method}: estimator={algo.estimator} {algo.estimator_options or ''} "
            f"policy_loss={algo.policy_loss} clip=({algo.eps_low}, {algo.eps_high}) aggregation={algo.aggregation} "
            f"kl={algo.kl_coef} ({algo.kl_estimator}) dynamic_sampling={algo.dynamic_sampling} "
            f"overlong_buffer={cfg.overlong_zone()} tokens")


def check_paths(cfg) -> None:
    """Name a missing model or dataset before anything heavy loads."""
    from botgrpo.services.settings import SettingsError

    if not (Path(cfg.model) / "config.json").exists():
        raise SettingsError(f"model {cfg.model!r} is not a local Hugging Face model directory (no config.json)")
    for field, path in (("data.dataset", cfg.data.dataset), ("eval.dataset", cfg.eval.dataset)):
        if path is not None and not Path(path).exists():
            raise SettingsError(f"{field} {path!r} does not exist")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.run.loop import Trainer

    cfg = build_config(args)
    check_paths(cfg)
    with reward_server_for(cfg) as served:
        return _train(Trainer(served), cfg, Console())  # config.json keeps the run's own settings


def _train(trainer, cfg, console) -> int:
    from botgrpo.trainer.run.progress import lines_tracker, progress_callback

    if trainer.d.main:
        console.print(describe(cfg))
        out = Path(cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(cfg.model_dump_json(indent=2))
        (out / "algorithm.json").write_text(json.dumps(cfg.algorithm.settings().model_dump(), indent=2))
    try:
        shown = cfg.log.progress and trainer.d.main
        with progress_callback(cfg.steps, enabled=shown) as on_step:
            trainer.train(on_step, lines_tracker(shown))
    finally:
        trainer.close()
    if trainer.d.main:
        console.print(f"done: {cfg.output_dir}/metrics.jsonl, curves.png, checkpoint-{trainer.step}")
        for e in trainer.evals:
            console.print(f"eval at step {e['step']}: pass_rate={e['pass_rate']:.3f} spec_rate={e.get('spec_rate')}")
    return 0
