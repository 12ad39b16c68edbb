"""The real-model recipe: a pretrained chat model learns ``a + b`` with the whole system (issue 21).

One place for what ``botgrpo demo --model smollm2`` (:mod:`botgrpo.real_demo`), the GPU check's
real-model comparison (``benchmarks/gpu_check.py``) and the CPU study harness
(``benchmarks/smollm2_rl.py``) share, as in
``docs/results/smollm2_rl/protocol.md``:

* the task, :mod:`botgrpo.trainer.tasks.chat_arith` (one user message under the model's chat
  template), training prompts from draw seed :data:`TRAIN_SEED`, held-out prompts from
  :data:`EVAL_SEED`, scored by the ``math`` scorer with ``extraction: boxed``;
* the run's settings (:class:`ChatArith`, the protocol's values by default) and the
  :class:`~botgrpo.trainer.config.TrainConfig` they make;
* the study's arms, seeds and compared pairs (:data:`STUDY_ARMS`, :data:`STUDY_SEEDS`,
  :data:`STUDY_PAIRS`) and its decision rule's gap (:data:`MIN_GAP`; the rule is
  :func:`botgrpo.compare.stats.paired_verdict`);
* the engine choice (:func:`choose_engine`: vLLM when importable, else the transformers loop,
  with the reason) and the curve plot (:func:`plot_runs`).
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

TRAIN_SEED, EVAL_SEED = 21, 22  # prompt draws: the held-out set never shares the training draw's seed
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


@dataclass(frozen=True)
class ChatArith:
    """One run's settings (the protocol's defaults). ``engine``: ``vllm`` or ``hf``; ``bf16``:
    bfloat16 autocast for the update and bfloat16 vLLM (None: the trainer's default, on with CUDA)."""

    model: str
    method: str = "bot_grpo"
    seed: int = 0
    local_weight: Optional[float] = None  # w_s (None: the server's default)
    steps: int = 60
    prompts_per_step: int = 4
    group: int = 8
    lr: float = 1e-5
    temperature: float = 0.7
    max_new_tokens: int = 64
    eval_every: int = 5
    eval_prompts: int = 128
    max_operand: int = 30
    operators: tuple[str, ...] = ("+",)
    extraction: str = "boxed"
    cut_off_answers: str = "refuse"         # the math scorer's option; the CPU study pins "read" (its rewards)
    engine: str = "vllm"
    bf16: Optional[bool] = None
    micro_batch_size: Optional[int] = None  # None: the whole step's rollouts at once
    max_seconds: Optional[float] = None
    save_every: int = 0
    resume: bool = False
    vllm_memory: float = 0.3                # vLLM's gpu_memory_utilization (GPU only)
    vllm_sleep: bool = True
    gradient_checkpointing: bool = False
    lora_r: Optional[int] = None            # LoRA rank (None: full fine-tune)
    lora_alpha: Optional[float] = None      # LoRA alpha (None: the trainer's default)
    vllm_kwargs: dict[str, Any] = field(default_factory=lambda: {"enforce_eager": True})

    def with_arm(self, arm: str, seed: int) -> "ChatArith":
        return replace(self, seed=seed, **STUDY_ARMS[arm])

    def task_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"extraction": self.extraction}
        if self.local_weight is not None:
            options["local_weight"] = self.local_weight
        if self.cut_off_answers != "refuse":
            options["cut_off_answers"] = self.cut_off_answers
        return options

    def write_datasets(self, root: Path) -> tuple[str, str]:
        """``train.jsonl`` and ``eval.jsonl`` under ``root`` (each question one user message)."""
        from botgrpo.trainer.tasks import chat_arith

        difficulty = {"max_operand": self.max_operand, "operators": tuple(self.operators)}
        train = chat_arith.make_prompts(max(256, self.steps * self.prompts_per_step), TRAIN_SEED, **difficulty)
        held_out = chat_arith.make_prompts(self.eval_prompts, EVAL_SEED, **difficulty)
        return conversation_dataset(Path(root) / "train.jsonl", train), conversation_dataset(Path(root) / "eval.jsonl", held_out)

    def train_config(self, output_dir: str | Path, dataset: str, eval_dataset: str, **overrides: Any):
        """The :class:`TrainConfig` of this run (``overrides``: any further field, by its dotted name)."""
        from botgrpo.trainer.config import TrainConfig, merge, nest

        settings = dict(
            model=str(self.model), output_dir=str(output_dir), steps=self.steps, max_seconds=self.max_seconds,
            seed=self.seed,
            data={"dataset": dataset},
            algorithm={"method": self.method},
            rollout={"engine": self.engine, "group_size": self.group, "prompts_per_step": self.prompts_per_step,
                     "sampling": {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature},
                     "vllm": {"max_model_len": 512, "gpu_memory_utilization": self.vllm_memory,
                              "sleep": self.vllm_sleep, "kwargs": dict(self.vllm_kwargs)}},
            reward={"task": "math", "options": self.task_options()},
            optim={"lr": self.lr, "bf16": self.bf16,
                   "micro_batch_size": self.micro_batch_size or self.group * self.prompts_per_step,
                   "gradient_checkpointing": self.gradient_checkpointing,
                   **({} if self.lora_r is None else
                      {"lora": {"r": self.lora_r, **({} if self.lora_alpha is None else {"alpha": self.lora_alpha})}})},
            eval={"dataset": eval_dataset, "every": self.eval_every, "prompts": self.eval_prompts},
            checkpoint={"save_every": self.save_every, "resume": self.resume},
            log={"tensorboard": False, "plot": False, "progress": False})
        return TrainConfig.model_validate(merge(settings, nest(overrides)))

    def describe(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def conversation_dataset(path: Path, tasks) -> str:
    """Each task's question as one user message (the tokenizer's chat template applies)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for t in tasks:
            f.write(json.dumps({"prompt": [{"role": "user", "content": t.prompt.strip()}], "reference": t.reference}) + "\n")
    return str(path)


# ---------------------------------------------------------------------- engines
class EngineUnavailable(RuntimeError):
    """Neither rollout engine can run in this environment (or the one asked for cannot)."""


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a stand-in module in sys.modules without a spec
        import sys
        return name in sys.modules


VLLM_HINT = "make vllm-env, then run from .venv-vllm (e.g. .venv-vllm/bin/botgrpo demo --model smollm2)"
HF_HINT = "the transformers engine needs the train extra: pip install 'botgrpo[train]' (or make install)"


def choose_engine(requested: str = "auto") -> tuple[str, Optional[str]]:
    """``(engine, note)``: ``auto`` takes vLLM when it is importable, else the transformers loop
    (the note says so, and that it is slower); ``vllm``/``hf`` are checked. Raises
    :class:`EngineUnavailable` with what to install when the engine (or, for ``auto``, neither) can run."""
    if requested not in ("auto", "vllm", "hf"):
        raise ValueError(f"engine must be auto, vllm or hf, got {requested!r}")
    hf = _importable("torch") and _importable("transformers")
    vllm = hf and _importable("vllm")
    if requested == "vllm" and not vllm:
        raise EngineUnavailable(f"engine vllm: vLLM is not importable in this environment ({VLLM_HINT})")
    if requested == "hf" and not hf:
        raise EngineUnavailable(f"engine hf: torch/transformers are not importable ({HF_HINT})")
    if requested != "auto":
        return requested, None
    if vllm:
        return "vllm", None
    if hf:
        return "hf", ("vLLM is not importable here, so rollouts use the transformers decode loop, about 2-3x "
                      f"slower on CPU than vLLM ({VLLM_HINT})")
    raise EngineUnavailable(f"neither rollout engine can run here: no vLLM ({VLLM_HINT}) and no torch/transformers "
                            f"({HF_HINT})")


# ---------------------------------------------------------------------- the study's plot
def plot_runs(runs: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Held-out success per step for each run (``{"label", "evals", "curve"}``; runs sharing a
    label's arm get one colour) and, right, the seconds per step split into generation and update."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    colours: dict[str, Any] = {}
    for run in runs:
        arm = run.get("arm", run["label"])
        evals = run.get("evals") or []
        kwargs = {"color": colours[arm]} if arm in colours else {}
        line, = left.plot([e["step"] for e in evals], [e["pass_rate"] for e in evals], marker="o", lw=1.3,
                          label=run["label"] if arm not in colours else None, **kwargs)
        colours.setdefault(arm, line.get_color())
    if len(runs) == 1:
        curve = runs[0].get("curve") or []
        left.plot([r["step"] for r in curve], [r.get("pass_rate") for r in curve], alpha=0.45, color="grey",
                  label="training batch success")
    left.set(xlabel="step", ylabel="held-out success", ylim=(0, 1), title=title)
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    curve = (runs[0].get("curve") or []) if runs else []
    steps = [r["step"] for r in curve]
    gen = [r.get("time_generate") or 0 for r in curve]
    wait = [r.get("time_score_wait") or 0 for r in curve]
    train = [r.get("time_train") or 0 for r in curve]
    right.bar(steps, gen, label="generate")
    right.bar(steps, wait, bottom=gen, label="wait for scores")
    right.bar(steps, train, bottom=[g + w for g, w in zip(gen, wait)], label="update")
    right.plot(steps, [r.get("time_step") for r in curve], color="k", lw=1, label="step total")
    right.set(xlabel="step", ylabel="seconds", title=f"seconds per step ({runs[0]['label'] if runs else ''})")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
