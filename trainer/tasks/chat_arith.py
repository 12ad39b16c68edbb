"""One-operation integer arithmetic asked as a chat question, for a real instruct model.

A prompt is one question line, for example::

    What is 17 + 25? Put the final answer in \\boxed{}.

scored by the ``math`` scorer against ``reference={"answer": "42"}``. Unlike :mod:`.arith`
(worked steps for a policy trained from scratch), there is no prescribed format: the prompt is
meant to become a single user message under the model's chat template (``apply_chat_template:
true``), and the model answers as it likes. SmolLM2-135M-Instruct answers 5.5% of 128 held-out
``a + b`` (``a, b`` in 1..30) right in a ``\\boxed{}`` at temperature 0.7 within 64 tokens
(benchmarks/smollm2_rl.py): few groups are mixed at first, and the boxed format is part of what
RL teaches it.

Operands: ``a, b`` uniform in ``1..max_operand``; ``-`` puts the larger first (never negative);
``*`` draws ``b`` from 2..9. Pure and seeded: the same ``(n, seed, options)`` give the same tasks.

:class:`ChatArith` is one run on this task, as ``botgrpo demo --model smollm2``
(:mod:`botgrpo.real_demo`), the CPU study (``benchmarks/smollm2_rl.py``) and the GPU check share
it (``docs/results/smollm2_rl/protocol.md``): training prompts from draw seed :data:`TRAIN_SEED`,
held-out ones from :data:`EVAL_SEED`, the ``math`` scorer with ``extraction: boxed``, and the
:class:`~botgrpo.trainer.config.TrainConfig` its settings make.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from botgrpo.trainer.tasks.base import Task, format_prompt, write_jsonl

OPERATORS = ("+", "-", "*")
SUFFIX = "Put the final answer in \\boxed{}."


def make_question(rng: random.Random, max_operand: int = 30, operators: tuple[str, ...] = ("+",)) -> tuple[str, int]:
    """One ``(question, answer)`` drawn from ``rng``."""
    if max_operand < 1:
        raise ValueError(f"max_operand must be at least 1, got {max_operand}")
    unknown = set(operators) - set(OPERATORS)
    if not operators or unknown:
        raise ValueError(f"operators must be a non-empty subset of {OPERATORS}, got {operators!r}")
    op = rng.choice(tuple(operators))
    a = rng.randint(1, max_operand)
    b = rng.randint(2, 9) if op == "*" else rng.randint(1, max_operand)
    if op == "-" and b > a:
        a, b = b, a
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return f"What is {a} {op} {b}? {SUFFIX}", answer


def make_prompts(n: int, seed: int, **difficulty) -> list[Task]:
    """``n`` tasks, deterministic in ``seed``; ``difficulty``: :func:`make_question`'s options."""
    rng = random.Random(seed)
    tasks = []
    for _ in range(n):
        question, answer = make_question(rng, **difficulty)
        tasks.append(Task(format_prompt(question), {"answer": str(answer)}))
    return tasks


__all__ = ["EVAL_SEED", "OPERATORS", "SUFFIX", "TRAIN_SEED", "ChatArith", "conversation_dataset", "make_prompts",
           "make_question", "write_jsonl"]


# ---------------------------------------------------------------------- one run on this task
TRAIN_SEED, EVAL_SEED = 21, 22  # prompt draws: the held-out set never shares the training draw's seed


@dataclass(frozen=True)
class ChatArith:
    """One run's settings (the protocol's defaults). ``engine``: ``vllm`` or ``hf``; ``bf16``:
    bfloat16 autocast for the update and bfloat16 vLLM (None: the trainer's default, on with CUDA).
    A field that is a :class:`~botgrpo.trainer.config.TrainConfig` setting has its name there, prefixed
    by its section where the name alone would not say which (``group_size`` is ``rollout.group_size``,
    ``eval_every`` ``eval.every``, ``vllm_sleep`` ``rollout.vllm.sleep``, ``lora_r`` ``optim.lora.r``)."""

    model: str
    method: str = "bot_grpo"
    seed: int = 0
    local_weight: Optional[float] = None  # w_s (None: the server's default)
    steps: int = 60
    prompts_per_step: int = 4
    group_size: int = 8
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
    vllm_gpu_memory_utilization: float = 0.3  # GPU only
    vllm_sleep: bool = True
    gradient_checkpointing: bool = False
    lora_r: Optional[int] = None            # LoRA rank (None: full fine-tune)
    lora_alpha: Optional[float] = None      # LoRA alpha (None: the trainer's default)
    vllm_kwargs: dict[str, Any] = field(default_factory=lambda: {"enforce_eager": True})

    def task_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"extraction": self.extraction}
        if self.local_weight is not None:
            options["local_weight"] = self.local_weight
        if self.cut_off_answers != "refuse":
            options["cut_off_answers"] = self.cut_off_answers
        return options

    def write_datasets(self, root: Path) -> tuple[str, str]:
        """``train.jsonl`` and ``eval.jsonl`` under ``root`` (each question one user message)."""
        difficulty = {"max_operand": self.max_operand, "operators": tuple(self.operators)}
        train = make_prompts(max(256, self.steps * self.prompts_per_step), TRAIN_SEED, **difficulty)
        held_out = make_prompts(self.eval_prompts, EVAL_SEED, **difficulty)
        return conversation_dataset(Path(root) / "train.jsonl", train), conversation_dataset(Path(root) / "eval.jsonl", held_out)

    def train_config(self, output_dir: str | Path, dataset: str, eval_dataset: str, **overrides: Any):
        """The :class:`TrainConfig` of this run (``overrides``: any further field, by its dotted name)."""
        from botgrpo.trainer.config import TrainConfig, merge, nest

        settings = dict(
            model=str(self.model), output_dir=str(output_dir), steps=self.steps, max_seconds=self.max_seconds,
            seed=self.seed,
            data={"dataset": dataset},
            algorithm={"method": self.method},
            rollout={"engine": self.engine, "group_size": self.group_size, "prompts_per_step": self.prompts_per_step,
                     "sampling": {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature},
                     "vllm": {"max_model_len": 512, "gpu_memory_utilization": self.vllm_gpu_memory_utilization,
                              "sleep": self.vllm_sleep, "kwargs": dict(self.vllm_kwargs)}},
            reward={"task": "math", "options": self.task_options()},
            optim={"lr": self.lr, "bf16": self.bf16,
                   "micro_batch_size": self.micro_batch_size or self.group_size * self.prompts_per_step,
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
