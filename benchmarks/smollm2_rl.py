"""SmolLM2-135M-Instruct trained with the whole system on CPU: vLLM rollouts, the reward server over
HTTP, the trainer's update (issue 21).

    .venv-vllm/bin/python -m benchmarks.smollm2_rl run --name main            # one run (resumable)
    .venv-vllm/bin/python -m benchmarks.smollm2_rl run --name grpo-s1 --method grpo --seed 1
    .venv-vllm/bin/python -m benchmarks.smollm2_rl run --name ws0-s1 --local-weight 0 --seed 1
    .venv-vllm/bin/python -m benchmarks.smollm2_rl report      # JSON + PNG of every run; verdict.json

Each run is :class:`botgrpo.trainer.run.loop.Trainer` configured by
:class:`botgrpo.trainer.tasks.chat_arith.ChatArith` (``engine: vllm``, chat-template prompts of
:mod:`botgrpo.trainer.tasks.chat_arith`, the ``math`` scorer), fed by the reward server embedded in
this process (:func:`botgrpo.embedded.reward_server_for`: FastAPI on uvicorn on a thread, spoken to
over HTTP); ``--reward-url`` points it at a running server instead (Redis queue + ``botgrpo worker``).

Resumable: a run lives in ``runs/smollm2_rl/<name>/``; ``run.json`` holds the fingerprint of the
start checkpoint (sha256 of its files) and the run's settings, and a second invocation with other
settings or another checkpoint under the same name is refused. The trainer checkpoints every
``--save-every`` steps and ``run`` resumes from the latest; a run whose ``result.json`` exists
(``steps`` reached) is skipped. ``--max-seconds`` bounds one invocation (the steps are the budget:
call again to continue). Peak memory is this process's VmHWM (trainer, vLLM's in-process engine
and the embedded server together), sampled into ``memory.jsonl`` as the run goes.

Threads: one torch thread (``--threads``) and ``OMP_NUM_THREADS`` the same, set before anything loads.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botgrpo.trainer.models import pretrained

if TYPE_CHECKING:
    from botgrpo.trainer.tasks.chat_arith import ChatArith

# the study (protocol.md): arms, seeds, the compared pairs and the decision rule's gap
STUDY_SEEDS = (1, 2, 3)          # seed 0 is the CPU pilot's, never part of the study
STUDY_ARMS: dict[str, dict[str, Any]] = {  # arm -> the ChatArith fields it sets
    "bot_grpo": {"method": "bot_grpo"},
    "grpo": {"method": "grpo"},
    "ws0": {"method": "bot_grpo", "local_weight": 0.0},  # BoT-GRPO with the outcome alone on every token
}
# protocol.md's question: BoT-GRPO against GRPO, and where a gain comes from: the local signal
# (BoT-GRPO against itself at w_s = 0) or the aggregation alone (w_s = 0 against GRPO)
STUDY_PAIRS = (("bot_grpo", "grpo"), ("bot_grpo", "ws0"), ("ws0", "grpo"))
MIN_GAP = 0.05  # protocol.md: a difference is called only if every seed agrees in sign and the mean is >= 5 points


def with_arm(run: "ChatArith", arm: str, seed: int) -> "ChatArith":
    """``run`` as the study's ``arm`` on ``seed``."""
    return replace(run, seed=seed, **STUDY_ARMS[arm])


ROOT = Path("runs/smollm2_rl")
RESULTS = Path("docs/results/smollm2_rl")
KEEP = ("step", "reward_mean", "reward_std", "pass_rate", "kl", "entropy", "grad_norm", "completion_len_mean",
        "time_generate", "time_score", "time_score_wait", "time_train", "time_step")


# ---------------------------------------------------------------------- bookkeeping (pure)
PROVENANCE = {pretrained.RECORD}  # how the checkpoint was made (with its timings), not what it is
# The comparison's cells share the start ``4dc202a4…026f8``: `make smollm2` run under this release of
# transformers, whose version stamp in config.json and generation_config.json is part of the print
# (5.25.0 writes the same weights and tokenizer, and another print).
START_CONVERTER = "transformers==5.24.0"


def fingerprint(model_dir: Path) -> str:
    """sha256 over the checkpoint's files (name and bytes, sorted by name), less the provenance
    record, so the same start converted again on another machine or session has the same print."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(model_dir).iterdir() if p.is_file() and p.name not in PROVENANCE):
        digest.update(path.name.encode())
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


# Every run here (the pilot, LoRA, the comparison's cells) scores as the scorer did when the
# comparison was registered: a rollout cut off at the token limit is read like any other. The
# scorer refuses such readings by default since the chain study (docs/results/chain/README.md).
CUT_OFF_ANSWERS = "read"


def settings_of(args: argparse.Namespace) -> dict:
    """What defines a run (two invocations with the same name must agree on all of it); the LoRA
    fields only when set, so a full fine-tune's record reads as it did before they existed. The keys
    are :class:`ChatArith`'s fields (the records committed before issue 35 name ``group_size`` ``group``;
    only their fingerprint is read back)."""
    keys = ("method", "seed", "local_weight", "steps", "prompts_per_step", "group_size", "lr", "temperature",
            "max_new_tokens", "eval_every", "eval_prompts", "max_operand", "operators", "extraction")
    lora = {k: getattr(args, k, None) for k in ("lora_r", "lora_alpha")}
    return {**{k: getattr(args, k) for k in keys}, **{k: v for k, v in lora.items() if v is not None}}


def check_manifest(path: Path, manifest: dict) -> None:
    """Write ``manifest`` at ``path``, or refuse when one there disagrees."""
    if path.exists():
        old = json.loads(path.read_text())
        if old != manifest:
            diff = {k: (old.get(k), manifest.get(k)) for k in set(old) | set(manifest) if old.get(k) != manifest.get(k)}
            raise SystemExit(f"{path}: this run was started with other settings or another checkpoint: {diff}")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2))


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class MemoryProbe:
    """This process's resident memory (``/proc/self/status`` VmRSS, VmHWM) every ``every`` s, appended
    to ``path`` as ``{"t", "rss_gib", "hwm_gib"}``."""

    def __init__(self, path: Path, every: float = 5.0):
        self.path, self.every, self._stop = path, every, threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-probe", daemon=True)

    @staticmethod
    def read() -> dict:
        fields = {}
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 2**20  # kB -> GiB
        return {"t": time.time(), "rss_gib": fields.get("VmRSS"), "hwm_gib": fields.get("VmHWM")}

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            with self.path.open("a") as f:
                f.write(json.dumps(self.read()) + "\n")

    def __enter__(self) -> "MemoryProbe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        with self.path.open("a") as f:
            f.write(json.dumps(self.read()) + "\n")


# ---------------------------------------------------------------------- one run
def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch
    torch.set_num_threads(args.threads)

    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.run.loop import Trainer
    from botgrpo.trainer.tasks.chat_arith import ChatArith

    model = Path(args.model).expanduser()
    if not (model / "config.json").exists():
        raise SystemExit(f"--model {model}: no checkpoint there (make smollm2)")
    out = ROOT / args.name
    manifest = {"model": str(model), "fingerprint": fingerprint(model), "settings": settings_of(args)}
    check_manifest(out / "run.json", manifest)
    if (out / "result.json").exists():
        print(f"{out}: finished, skipped", flush=True)
        return 0
    arith_run = ChatArith(model=str(model), bf16=False, resume=True, engine="vllm", **{
        k: tuple(v) if k == "operators" else v for k, v in settings_of(args).items()},
        max_seconds=args.max_seconds, save_every=args.save_every, cut_off_answers=CUT_OFF_ANSWERS)
    cfg = arith_run.train_config(out / "trainer", *arith_run.write_datasets(out), **{"reward.url": args.reward_url})
    started = time.time()
    with MemoryProbe(out / "memory.jsonl"), reward_server_for(cfg) as served:
        trainer = Trainer(served)
        print(f"{out}: from step {trainer.step}, reward server {served.reward.url}", flush=True)
        try:
            trainer.train(on_step=lambda r: print(json.dumps({k: r.get(k) for k in KEEP}), flush=True))
        finally:
            trainer.close()
    with (out / "sessions.jsonl").open("a") as f:
        f.write(json.dumps({"started": started, "seconds": time.time() - started, "reached": trainer.step}) + "\n")
    if trainer.step >= args.steps:
        (out / "result.json").write_text(json.dumps(summarise(out), indent=2))
        print(f"{out}: done at step {trainer.step}", flush=True)
    else:
        print(f"{out}: stopped at step {trainer.step} of {args.steps}; run again to continue", flush=True)
    return 0


# ---------------------------------------------------------------------- report
def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def summarise(out: Path) -> dict:
    """A run's curve, held-out evaluations, per-step time split and peak memory, from its files."""
    records = read_jsonl(out / "trainer" / "metrics.jsonl")
    by_step = {r["step"]: r for r in records}  # a resumed step logged twice: the later record
    curve = [{k: r.get(k) for k in KEEP} for _, r in sorted(by_step.items())]
    evals = {e["step"]: e for e in read_jsonl(out / "trainer" / "evals.jsonl")}
    evals = [{k: e.get(k) for k in ("step", "pass_rate", "reward_mean", "completion_len_mean", "prompts")}
             for _, e in sorted(evals.items())]
    memory = read_jsonl(out / "memory.jsonl")
    times = {k: _mean(r.get(k) for r in curve) for k in ("time_generate", "time_score", "time_score_wait", "time_train",
                                                          "time_step")}
    return {"run": out.name, "manifest": json.loads((out / "run.json").read_text()),
            "steps": len(curve), "base_pass_rate": evals[0]["pass_rate"] if evals else None,
            "final_pass_rate": evals[-1]["pass_rate"] if evals else None,
            "best_pass_rate": max((e["pass_rate"] for e in evals), default=None),
            "mean_step_seconds": times, "peak_rss_gib": max((m["hwm_gib"] or 0 for m in memory), default=None),
            "sessions": read_jsonl(out / "sessions.jsonl"), "evals": evals, "curve": curve}


def plot(summary: dict, path: Path) -> None:
    """One run's held-out and training-batch success, and its seconds per step split."""
    from botgrpo.trainer.run.tracking import plot_runs

    plot_runs([{"label": summary["run"], "evals": summary["evals"], "curve": summary["curve"]}], path,
              f"{summary['run']}: SmolLM2-135M-Instruct, a + b")


def study_plots() -> list[Path]:
    """``study-s<seed>.png``: every arm of a study seed whose record is committed under ``RESULTS``."""
    from botgrpo.trainer.run.tracking import plot_runs

    written = []
    for seed in STUDY_SEEDS:
        records = [(arm, RESULTS / f"{arm}-s{seed}.json") for arm in STUDY_ARMS]
        runs = [{"label": f"{arm}-s{seed}", "arm": arm, **json.loads(path.read_text())}
                for arm, path in records if path.exists()]
        if runs:
            written.append(plot_runs(runs, RESULTS / f"study-s{seed}.png",
                                     f"seed {seed}: SmolLM2-135M-Instruct, a + b, held-out"))
    return written


def study_verdict(records: dict[str, dict]) -> dict:
    """protocol.md's rule over the records ``{"<arm>-s<seed>": record}`` of finished cells, for
    each pair of ``STUDY_PAIRS``: on the primary metric (held-out success at the last step) and
    the secondary (mean held-out success of the evaluations at steps 5..60). A pair with fewer
    than every study seed is "not yet", never called."""
    from botgrpo.compare.stats import paired_verdict

    primary: dict[str, dict[int, float]] = {}
    secondary: dict[str, dict[int, float]] = {}
    for arm in STUDY_ARMS:
        for seed in STUDY_SEEDS:
            record = records.get(f"{arm}-s{seed}")
            if record and record.get("finished"):
                primary.setdefault(arm, {})[seed] = record["final_pass_rate"]
                secondary.setdefault(arm, {})[seed] = _mean(e["pass_rate"] for e in record["evals"] if e["step"] >= 5)

    def verdicts(table: dict) -> list[dict]:
        out = []
        for a, b in STUDY_PAIRS:
            v = paired_verdict(table, a, b, MIN_GAP)
            if len(v["seeds"]) < len(STUDY_SEEDS):
                v["verdict"] = f"not yet: {len(v['seeds'])} of {len(STUDY_SEEDS)} seeds"
            out.append(v)
        return out

    finished = sum(len(seeds) for seeds in primary.values())
    return {"cells_finished": finished, "complete": finished == len(STUDY_ARMS) * len(STUDY_SEEDS),
            "final_pass_rate": primary, "mean_pass_rate_5_60": secondary,
            "primary": verdicts(primary), "secondary": verdicts(secondary)}


def plot_verdict(records: dict[str, dict], verdict: dict, path: Path) -> Path:
    """Left: each arm's held-out success, the mean over its seeds (thick) and every seed (thin).
    Right: each pair's per-seed difference at the last step, its mean, and the rule's +-5 points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    for colour, arm in zip(("C0", "C1", "C2"), STUDY_ARMS):
        runs = [r for name, r in sorted(records.items()) if name.rsplit("-s", 1)[0] == arm and r.get("finished")]
        for run in runs:
            left.plot([e["step"] for e in run["evals"]], [e["pass_rate"] for e in run["evals"]], color=colour, lw=0.7,
                      alpha=0.45)
        if runs:
            steps = [e["step"] for e in runs[0]["evals"]]
            mean = [sum(r["evals"][i]["pass_rate"] for r in runs) / len(runs) for i in range(len(steps))]
            left.plot(steps, mean, color=colour, lw=2.2, marker="o", label=f"{arm} (mean of {len(runs)} seeds)")
    left.set(xlabel="step", ylabel="held-out success", ylim=(0, 1), title="SmolLM2-135M-Instruct, a + b, held-out")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    for x, v in enumerate(verdict["primary"]):
        right.scatter([x + 0.08 * (i - 1) for i in range(len(v["differences"]))], [100 * d for d in v["differences"]],
                      color="k", s=18, zorder=3)   # seeds side by side, so equal differences stay visible
        if v["mean_difference"] is not None:
            right.hlines(100 * v["mean_difference"], x - 0.25, x + 0.25, color="C3", lw=2.5)
    right.axhspan(-100 * MIN_GAP, 100 * MIN_GAP, color="0.85", zorder=0)
    right.axhline(0, color="0.4", lw=0.8)
    right.set_xticks(range(len(verdict["primary"])),
                     [f"{v['a']} - {v['b']}\n{v['verdict']}" for v in verdict["primary"]], fontsize=7)
    right.set(ylabel="difference at the last step (points)", title="per seed (dots), mean (bar); grey: < 5 points")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_verdict() -> dict:
    """``verdict.json`` and ``study.png`` from the committed records of the study's cells; printed as well."""

    names = [f"{arm}-s{seed}" for arm in STUDY_ARMS for seed in STUDY_SEEDS]
    records = {name: json.loads((RESULTS / f"{name}.json").read_text()) for name in names
               if (RESULTS / f"{name}.json").exists()}
    verdict = study_verdict(records)
    (RESULTS / "verdict.json").write_text(json.dumps(verdict, indent=2))
    plot_verdict(records, verdict, RESULTS / "study.png")
    for metric in ("primary", "secondary"):
        for v in verdict[metric]:
            gaps = ", ".join(f"s{s} {d:+.3f}" for s, d in zip(v["seeds"], v["differences"]))
            print(f"{metric}: {v['a']} vs {v['b']}: {v['verdict']} ({gaps})", flush=True)
    return verdict


def report(args: argparse.Namespace) -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    only = getattr(args, "only", None)
    for out in sorted(p for p in ROOT.iterdir() if (p / "run.json").exists() and only in (None, p.name)):
        summary = summarise(out)
        summary["finished"] = (out / "result.json").exists()
        (RESULTS / f"{out.name}.json").write_text(json.dumps(summary, indent=2))
        if summary["curve"]:
            plot(summary, RESULTS / f"{out.name}.png")
        print(out.name, {k: summary[k] for k in ("steps", "finished", "base_pass_rate", "final_pass_rate",
                                                 "best_pass_rate", "peak_rss_gib")}, flush=True)
    study_plots()
    write_verdict()
    return 0


# the pre-registered comparison (docs/results/smollm2_rl/protocol.md): run name -> its flags


def study_cells() -> dict[str, list[str]]:
    """Every (arm, seed) of the study as ``{run name: flags}``."""

    def flags(fields: dict) -> list[str]:
        return [part for key, value in fields.items() for part in (f"--{key.replace('_', '-')}", str(value))]

    return {f"{arm}-s{seed}": [*flags(fields), "--seed", str(seed)] for seed in STUDY_SEEDS
            for arm, fields in STUDY_ARMS.items()}


def committed(name: str, print_: str) -> bool:
    """Whether ``name`` finished in an earlier session: its record under ``RESULTS`` (committed
    with the repository; ``runs/`` is not) says so. A record from another start is refused."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return False
    record = json.loads(path.read_text())
    if record["manifest"]["fingerprint"] != print_:
        raise SystemExit(f"{path}: that run started from another checkpoint ({record['manifest']['fingerprint'][:12]}, "
                         f"this one {print_[:12]}): the study's cells must share one start (converted under "
                         f"{START_CONVERTER}: `pip install {START_CONVERTER}`, then `botgrpo convert-gguf --force`)")
    return bool(record.get("finished"))


def study(args: argparse.Namespace) -> int:
    """Each unfinished cell in order, one process each (one in-process vLLM engine per process);
    a cell is finished when its ``result.json`` exists here or its committed record says so.
    Stops after ``--budget-seconds`` of this invocation (call again to continue); each finished
    cell's record is written at once (``report``), ready to commit."""
    import subprocess
    started = time.time()
    print_ = fingerprint(Path(args.model).expanduser())
    for name, flags in study_cells().items():
        if (ROOT / name / "result.json").exists() or committed(name, print_):
            continue
        left = args.budget_seconds - (time.time() - started)
        if left < 300:
            print(f"budget spent; next cell {name}", flush=True)
            return 0
        command = [sys.executable, "-m", "benchmarks.smollm2_rl", "run", "--name", name, "--model", args.model, *flags,
                   "--max-seconds", str(int(left))]
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)
        if (ROOT / name / "result.json").exists():
            report(argparse.Namespace(only=name))
    print("study complete", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train one run (resumes; skips a finished one)")
    r.add_argument("--name", required=True)
    r.add_argument("--model", default="~/.cache/botgrpo/models/smollm2-135m-instruct")
    r.add_argument("--method", default="bot_grpo")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--local-weight", type=float, default=None, help="w_s (unset: the server's default)")
    r.add_argument("--steps", type=int, default=60)
    r.add_argument("--prompts-per-step", type=int, default=4)
    r.add_argument("--group-size", type=int, default=8)
    r.add_argument("--lr", type=float, default=1e-5)
    r.add_argument("--temperature", type=float, default=0.7)
    r.add_argument("--max-new-tokens", type=int, default=64)
    r.add_argument("--eval-every", type=int, default=5)
    r.add_argument("--eval-prompts", type=int, default=128)
    r.add_argument("--max-operand", type=int, default=30)
    r.add_argument("--operators", nargs="+", default=["+"])
    r.add_argument("--extraction", default="boxed", choices=["boxed", "latex"])
    r.add_argument("--lora-r", type=int, default=None, help="LoRA rank (unset: full fine-tune)")
    r.add_argument("--lora-alpha", type=float, default=None, help="LoRA alpha (unset: the trainer's default)")
    r.add_argument("--save-every", type=int, default=10)
    r.add_argument("--max-seconds", type=float, default=None, help="this invocation's wall-time cap")
    r.add_argument("--reward-url", default=None, help="a running reward server (unset: embedded in-process)")
    r.add_argument("--threads", type=int, default=1)
    sub.add_parser("report", help=f"write {RESULTS}/<run>.json and .png for every run")
    s = sub.add_parser("study", help="the pre-registered comparison, resumable (protocol.md)")
    s.add_argument("--budget-seconds", type=float, default=3600.0, help="this invocation's wall time")
    s.add_argument("--model", default="~/.cache/botgrpo/models/smollm2-135m-instruct")
    args = p.parse_args(argv)
    return {"run": run, "report": report, "study": study}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
