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
"""
from __future__ import annotations

import random

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


__all__ = ["OPERATORS", "SUFFIX", "make_prompts", "make_question", "write_jsonl"]
