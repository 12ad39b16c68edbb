"""Convergence of BoT-GRPO against GRPO, GSPO, DAPO and PURE, from one warm start, same budget.

    python -m benchmarks.convergence --quick            # < 10 min on 2 cores: 1 seed, short runs
    python -m benchmarks.convergence --out docs/results # full: 3 seeds, 40 steps (about an hour on 2 cores)

Tasks: (a) React ``build`` with the spec check in the reward, (b) synthetic multi-step
arithmetic scored by the math verifier (step checks + final answer). Every method starts from
the same warm-started tiny policy of its task and gets the same steps, prompts and group size.
Per method: steps to reach the pass-rate threshold on held-out prompts, final pass rate,
final compile-and-spec rate (React: reward hacking shows there first), wall time; mean and
spread over seeds. The reward-scheme ablation trains BoT-GRPO and GRPO on React with the
``window`` token scheme and with ``uniform`` (no token information). Writes ``results.json``,
``results.md`` and one plot per task to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from trainer.demo import DemoSettings, prepare
from trainer.tasks import arith
from trainer.tasks.base import write_jsonl

METHODS = ["bot_grpo", "grpo", "gspo", "dapo", "pure"]


@dataclass(frozen=True)
class Budget:
    seeds: int
    steps: int
    eval_every: int
    eval_prompts: int
    threshold: float


QUICK = Budget(seeds=1, steps=16, eval_every=8, eval_prompts=32, threshold=0.8)
FULL = Budget(seeds=3, steps=40, eval_every=10, eval_prompts=64, threshold=0.8)


EASY_ARITH = {"max_operand": 9, "max_operations": 2, "operators": ("+", "-")}


def arith_setup(root: Path, seed: int = 0) -> dict[str, str]:
    """Arithmetic prompts (two steps of single-digit addition and subtraction) and a tiny policy
    warm-started on worked solutions, half of them with a wrong step or answer."""
    from trainer.sft import build_tiny_policy, sft

    warm = root / "arith-warm"
    paths = {"model": str(warm / "model"), "dataset": str(root / "arith-train.jsonl"),
             "eval_dataset": str(root / "arith-eval.jsonl")}
    write_jsonl(paths["dataset"], arith.make_prompts(2000, seed + 1, **EASY_ARITH))
    write_jsonl(paths["eval_dataset"], arith.make_prompts(128, seed + 2, **EASY_ARITH))
    if not (warm / "done.json").exists():
        pairs = arith.make_sft_corpus(6000, seed, broken_share=0.5, **EASY_ARITH)
        build_tiny_policy([p + c for p, c in pairs], warm / "model", seed=seed, vocab_size=600)
        metrics = sft(warm / "model", pairs, max_steps=1200, max_seconds=300, seed=seed)
        (warm / "done.json").write_text(json.dumps({"steps": metrics.steps, "last_loss": metrics.last_loss}))
    return paths


def train_one(paths: dict[str, str], out: Path, task: str, method: str, seed: int, budget: Budget,
              task_options: dict[str, Any]) -> dict[str, Any]:
    from trainer.config import TrainConfig
    from trainer.loop import Trainer

    cfg = TrainConfig(**paths, output_dir=str(out), task=task, task_options=task_options, method=method, seed=seed,
                      steps=budget.steps, eval_every=budget.eval_every, eval_prompts=budget.eval_prompts,
                      group_size=8, prompts_per_step=8, lr=2e-4, micro_batch_size=32,
                      sampling={"max_new_tokens": 200 if task == "react" else 96}, progress=False, tensorboard=False)
    started = time.perf_counter()
    trainer = Trainer(cfg)
    try:
        trainer.train()
    finally:
        trainer.close()
    evals = [{k: e.get(k) for k in ("step", "pass_rate", "spec_rate", "reward_mean")} for e in trainer.evals]
    reached = next((e["step"] for e in evals if e["pass_rate"] >= budget.threshold), None)
    return {"task": task, "method": method, "seed": seed, "options": task_options, "evals": evals,
            "steps_to_threshold": reached, "final_pass_rate": evals[-1]["pass_rate"],
            "final_spec_rate": evals[-1]["spec_rate"], "seconds": time.perf_counter() - started}


def _stat(values: list[Optional[float]]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "-"
    if len(got) == 1:
        return f"{got[0]:.2f}"
    return f"{statistics.mean(got):.2f} ± {statistics.stdev(got):.2f}" + ("" if len(got) == len(values) else f" ({len(got)}/{len(values)})")


def table(runs: list[dict[str, Any]], budget: Budget) -> str:
    rows = ["| task | method | token scheme | steps to " f"{budget.threshold:.0%}" " | final pass | final pass & spec | seconds |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted({(r["task"], r["method"], r["options"].get("scheme", "-")) for r in runs},
                  key=lambda k: (k[0], k[2] != "window", METHODS.index(k[1])))
    for task, method, scheme in keys:
        group = [r for r in runs if (r["task"], r["method"], r["options"].get("scheme", "-")) == (task, method, scheme)]
        reached = [r["steps_to_threshold"] for r in group]
        steps = _stat([float(s) for s in reached if s is not None]) if any(s is not None for s in reached) else "not reached"
        if any(s is None for s in reached) and steps != "not reached":
            steps += f" ({sum(s is not None for s in reached)}/{len(reached)} seeds)"
        rows.append(f"| {task} | {method} | {scheme} | {steps} | {_stat([r['final_pass_rate'] for r in group])} | "
                    f"{_stat([r['final_spec_rate'] for r in group])} | {_stat([r['seconds'] for r in group])} |")
    return "\n".join(rows)


def plot(runs: list[dict[str, Any]], task: str, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for method in METHODS:
        group = [r for r in runs if r["task"] == task and r["method"] == method and r["options"].get("scheme", "window") == "window"]
        if not group:
            continue
        steps = [e["step"] for e in group[0]["evals"]]
        curves = [[e["pass_rate"] for e in r["evals"]] for r in group]
        mean = [statistics.mean(c[i] for c in curves) for i in range(len(steps))]
        ax.plot(steps, mean, marker="o", label=method, lw=2 if method == "bot_grpo" else 1.2)
        if len(curves) > 1:
            ax.fill_between(steps, [min(c[i] for c in curves) for i in range(len(steps))],
                            [max(c[i] for c in curves) for i in range(len(steps))], alpha=0.15)
    ax.set_xlabel("step")
    ax.set_ylabel("held-out pass rate" + (" (compiles at build)" if task == "react" else " (answer correct)"))
    ax.set_title(f"{task}: mean over seeds (band: min-max)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / f"convergence-{task}.png", dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1 seed, short runs: under 10 minutes on 2 cores")
    p.add_argument("--out", type=Path, default=Path("runs/convergence"))
    p.add_argument("--tasks", nargs="+", default=["react", "math"])
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--no-ablation", action="store_true")
    args = p.parse_args(argv)
    budget = QUICK if args.quick else FULL
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    setups = {}
    if "react" in args.tasks:
        setups["react"] = (prepare(DemoSettings(out_dir=str(args.out / "react-warm"), eval_prompts=budget.eval_prompts)),
                           {"level": "build", "spec_weight": 0.5, "scheme": "window"})
    if "math" in args.tasks:
        setups["math"] = (arith_setup(args.out), {})
    plan = [(task, method, seed, options) for task, (_, options) in setups.items()
            for method in args.methods for seed in range(budget.seeds)]
    if "react" in setups and not args.no_ablation:
        plan += [("react", m, seed, {**setups["react"][1], "scheme": "uniform"})
                 for m in ("bot_grpo", "grpo") for seed in range(budget.seeds)]
    runs = []
    for i, (task, method, seed, options) in enumerate(plan, 1):
        run_dir = args.out / "runs" / f"{task}-{method}-{options.get('scheme', 'na')}-s{seed}"
        print(f"[{i}/{len(plan)}] {task} {method} {options.get('scheme', '')} seed {seed}", flush=True)
        runs.append(train_one(setups[task][0], run_dir, task, method, seed, budget, options))
        print(f"    final pass {runs[-1]['final_pass_rate']:.3f}  spec {runs[-1]['final_spec_rate']}  "
              f"{runs[-1]['seconds']:.0f} s", flush=True)
    command = "python -m benchmarks.convergence" + (" --quick" if args.quick else "") + f" --out {args.out}"
    md = table(runs, budget)
    (args.out / "results.json").write_text(json.dumps({"budget": budget.__dict__, "commit": commit, "command": command,
                                                       "runs": runs}, indent=2))
    (args.out / "results.md").write_text(f"Command: `{command}` (commit {commit})\n\n{md}\n")
    for task in setups:
        plot(runs, task, args.out)
    print(md)


if __name__ == "__main__":
    main()
