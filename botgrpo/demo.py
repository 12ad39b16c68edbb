"""The end-to-end demo: the whole system on one machine, from nothing to a trained policy.

1. Synthetic React tasks (prompts with a spec) and a warm-start corpus where a good share of
   the components do not compile (:mod:`botgrpo.trainer.tasks.react`).
2. A tiny policy from scratch: a tokenizer trained on the corpus and a random-init Qwen2,
   warmed up by a short supervised pass (:mod:`botgrpo.trainer.models.sft`).
3. The reward server, embedded (in-process queue), scoring React ``build`` plus the spec check.
4. RL with the chosen method (BoT-GRPO by default), evaluated on held-out prompts before,
   during and after: compile rate and the rate of outputs that compile AND match their spec.

The warm start is cached in the output directory (keyed by its settings), so ``--method grpo``
after a BoT-GRPO run starts from the very same policy; ``<out>/warm`` names the latest run's
warm start (``runs/demo/warm/model``), whatever its key.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from botgrpo.services.links import point
from botgrpo.trainer.tasks import react
from botgrpo.trainer.tasks.base import write_jsonl


WARM = "warm"  # <out_dir>/warm -> warm-<key>: the latest demo's warm start under a stable name


@dataclass(frozen=True)
class DemoSettings:
    out_dir: str = "runs/demo"
    method: str = "bot_grpo"
    seed: int = 0
    vocabulary: int = 8            # component names and words the tasks draw from
    shape: str = "template"        # components: "template" (8-15 lines) or "blocks" (15-30 lines)
    corpus: int = 4000             # warm-start pairs
    broken_share: float = 0.5
    max_mistakes: int = 1          # mistakes in one broken warm-start component
    sft_steps: int = 800           # bounded by steps alone: the same policy on a busy machine as on a quiet one
    train_prompts: int = 2000
    eval_prompts: int = 64
    steps: int = 60
    group_size: int = 8
    prompts_per_step: int = 8
    max_new_tokens: int = 200
    lr: float = 2e-4
    eval_every: int = 20
    spec_weight: float = 0.5

    def warm_key(self) -> str:
        fields = ("seed", "vocabulary", "shape", "corpus", "broken_share", "max_mistakes", "sft_steps")
        values = {k: getattr(self, k) for k in fields}
        values["sft_max_seconds"] = None  # the retired wall-time cap (None: steps alone), kept so warm starts keep their names
        return hashlib.sha256(json.dumps(values).encode()).hexdigest()[:12]


def prepare(s: DemoSettings, log: Callable[[str], None] = print) -> dict[str, str]:
    """Datasets and the warm-started policy under ``out_dir`` (reused when already built), also
    named ``out_dir/warm`` (a link to ``warm-<key>``: the name docs and configs use)."""
    from botgrpo.trainer.models.sft import build_tiny_policy, sft

    root = Path(s.out_dir)
    warm = root / f"warm-{s.warm_key()}"
    paths = {"model": str(warm / "model"), "dataset": str(root / "train.jsonl"), "eval_dataset": str(root / "eval.jsonl")}
    write_jsonl(paths["dataset"], react.make_prompts(s.train_prompts, s.seed + 1, s.vocabulary, s.shape))
    write_jsonl(paths["eval_dataset"], react.make_prompts(s.eval_prompts, s.seed + 2, s.vocabulary, s.shape))
    if (warm / "done.json").exists():
        log(f"warm start: reusing {warm}")
        point(root / WARM, warm)
        return paths
    shutil.rmtree(warm, ignore_errors=True)
    pairs = react.make_sft_corpus(s.corpus, s.seed, s.broken_share, vocabulary=s.vocabulary, shape=s.shape,
                                  max_mistakes=s.max_mistakes)
    log(f"warm start: tokenizer and a random-init Qwen2 from {len(pairs)} synthetic components "
        f"({s.broken_share:.0%} broken), then up to {s.sft_steps} supervised steps")
    build_tiny_policy([p + c for p, c in pairs], warm / "model", seed=s.seed)
    metrics = sft(warm / "model", pairs, max_steps=s.sft_steps, max_seconds=None, seed=s.seed,
                  log=lambda line: log(f"warm start: {line}"))
    (warm / "done.json").write_text(json.dumps({"steps": metrics.steps, "seconds": metrics.seconds,
                                                "first_loss": metrics.first_loss, "last_loss": metrics.last_loss}))
    log(f"warm start: {metrics.steps} steps in {metrics.seconds:.0f} s, loss {metrics.first_loss:.2f} -> "
        f"{metrics.last_loss:.2f}")
    point(root / WARM, warm)
    return paths


def setup(root: Path, **settings: Any) -> dict[str, Any]:
    """``botgrpo compare``'s setup hook (``setup: botgrpo.demo:setup``): the demo's prompts and warm
    start under ``root``, from any :class:`DemoSettings` fields but ``out_dir`` (built once, reused)."""
    paths = prepare(DemoSettings(out_dir=str(root), **settings))
    return {"model": paths["model"], "data": {"dataset": paths["dataset"]}, "eval": {"dataset": paths["eval_dataset"]}}


def train_config(s: DemoSettings, paths: dict[str, str]):
    from botgrpo.trainer.config import TrainConfig

    return TrainConfig(
        model=paths["model"], output_dir=str(Path(s.out_dir) / s.method), steps=s.steps, seed=s.seed,
        data={"dataset": paths["dataset"]}, algorithm={"method": s.method},
        rollout={"group_size": s.group_size, "prompts_per_step": s.prompts_per_step,
                 "sampling": {"max_new_tokens": s.max_new_tokens}},
        reward={"task": "react", "options": {"level": "build", "spec_weight": s.spec_weight}},
        optim={"lr": s.lr, "micro_batch_size": 32},
        eval={"dataset": paths["eval_dataset"], "every": s.eval_every, "prompts": s.eval_prompts},
        log={"progress": True})


def run(s: DemoSettings, log: Callable[[str], None] = print, on_step: Optional[Callable] = None,
        console=None) -> dict[str, Any]:
    """Prepare, train, evaluate; returns the summary also written to ``<out>/<method>/summary.json``.
    Without ``on_step``, progress is shown (:func:`botgrpo.trainer.run.progress.progress_callback`).
    (``console``: the CLI's, unused here; the demos share one signature.)"""
    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.run.loop import Trainer
    from botgrpo.trainer.run.progress import lines_tracker, progress_callback

    started = time.perf_counter()
    paths = prepare(s, log)
    with reward_server_for(train_config(s, paths)) as cfg:
        trainer = Trainer(cfg)
        try:
            with progress_callback(s.steps, enabled=on_step is None, label=f"RL {s.method}") as shown:
                trainer.train(on_step or shown, lines_tracker(on_step is None))  # a bar on a terminal, lines in a log
        finally:
            trainer.close()
    first, last = trainer.evals[0], trainer.evals[-1]
    summary = {"method": s.method, "steps": trainer.step, "seconds": time.perf_counter() - started,
               "compile_rate": [first["pass_rate"], last["pass_rate"]],
               "compile_and_spec_rate": [first["spec_rate"], last["spec_rate"]],
               "compile_and_component_rate": [first.get("component_rate"), last.get("component_rate")],
               "evals": trainer.evals, "plot": str(Path(cfg.output_dir) / "curves.png"), "settings": asdict(s)}
    (Path(cfg.output_dir) / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def report(console, s: DemoSettings, summary: dict[str, Any]) -> None:
    """The CLI's closing table: held-out rates, first against last."""
    from rich.table import Table

    table = Table(title=f"{s.method}: held-out prompts ({s.eval_prompts}), step 0 vs step {summary['steps']}")
    for col in ("metric", "first", "last", "change"):
        table.add_column(col, justify="right")
    for label, key in (("compile rate", "compile_rate"),
                       ("compiles and declares the named component", "compile_and_component_rate"),
                       ("compiles and matches spec", "compile_and_spec_rate")):
        first, last = summary[key]
        if first is not None and last is not None:
            table.add_row(label, f"{first:.3f}", f"{last:.3f}", f"{(last - first) * 100:+.1f} pts")
    console.print(table)
    console.print(f"{summary['seconds']:.0f} s in all; curves: {summary['plot']}")
