"""Synthetic multi-step arithmetic, scored by the ``math`` scorer (``reference={"answer": ...}``).

A prompt asks for an expression of two to four integers; the correct completion evaluates it
one operation per line, each line a step the math scorer checks exactly, and ends with a boxed
answer::

    Compute (3 + 4) * 5 step by step.\\n
    3 + 4 = 7
    7 * 5 = 35
    The answer is \\boxed{35}.

Operations are applied left to right, so the expression is parenthesised where precedence
would otherwise change the order. Subtraction never goes below zero, so every step is
plain non-negative arithmetic. Prompt format: see :mod:`botgrpo.trainer.tasks.base`.

Corruptions: ``wrong_step`` (one step's result is off and the rest carries the error through,
so that step is wrong and the answer too), ``wrong_answer`` (correct steps, wrong final answer).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from botgrpo.trainer.tasks.base import Task, format_prompt, write_jsonl

OPERATORS = ("+", "-", "*")


@dataclass(frozen=True)
class ArithExample:
    """An expression as its first number and its (operator, operand) operations."""

    first: int
    operations: tuple[tuple[str, int], ...]

    @property
    def expression(self) -> str:
        text, low_precedence = str(self.first), False
        for op, operand in self.operations:
            if op == "*" and low_precedence:
                text = f"({text})"
            text = f"{text} {op} {operand}"
            low_precedence = op != "*"
        return text

    @property
    def answer(self) -> int:
        return self.results()[-1]

    def results(self, error_at: int | None = None, error: int = 0) -> list[int]:
        """Each step's result; ``error`` is added to step ``error_at`` and carried onwards."""
        value, out = self.first, []
        for index, (op, operand) in enumerate(self.operations):
            value = _apply(value, op, operand) + (error if index == error_at else 0)
            out.append(value)
        return out

    @property
    def task(self) -> Task:
        return Task(format_prompt(f"Compute {self.expression} step by step."), {"answer": str(self.answer)})

    def completion(self, error_at: int | None = None, error: int = 0, final: int | None = None) -> str:
        """The worked solution, optionally with a wrong step or a wrong final answer."""
        lines, value = [], self.first
        for (op, operand), result in zip(self.operations, self.results(error_at, error)):
            lines.append(f"{value} {op} {operand} = {result}")
            value = result
        lines.append(f"The answer is \\boxed{{{value if final is None else final}}}.")
        return "\n".join(lines)


def _apply(value: int, op: str, operand: int) -> int:
    return value + operand if op == "+" else value - operand if op == "-" else value * operand


def make_example(rng: random.Random, max_operand: int = 20, max_operations: int = 3,
                 operators: tuple[str, ...] = OPERATORS) -> ArithExample:
    """One to ``max_operations`` operations on integers up to ``max_operand``, drawn from ``rng``.

    A tiny policy learns single-digit addition and subtraction in a short warm start but not
    multiplication of two-digit numbers; the convergence study uses the easy setting.
    """
    first = value = rng.randint(1, max_operand)
    operations = []
    for _ in range(rng.randint(1, max_operations)):
        allowed = tuple(op for op in operators if op != "-" or value > 0)  # never below zero
        op = rng.choice(allowed)
        operand = rng.randint(2, 9) if op == "*" else rng.randint(1, value) if op == "-" else rng.randint(1, max_operand)
        operations.append((op, operand))
        value = _apply(value, op, operand)
    return ArithExample(first, tuple(operations))


def make_examples(n: int, seed: int, **difficulty) -> list[ArithExample]:
    rng = random.Random(seed)
    return [make_example(rng, **difficulty) for _ in range(n)]


def make_prompts(n: int, seed: int, **difficulty) -> list[Task]:
    """``n`` tasks, deterministic in ``seed``; ``difficulty``: :func:`make_example`'s options."""
    return [example.task for example in make_examples(n, seed, **difficulty)]


def corrupt(kind: str, example: ArithExample, rng: random.Random) -> str:
    """A wrong completion of ``example``: ``"wrong_step"`` or ``"wrong_answer"``."""
    error = rng.choice([-3, -2, -1, 1, 2, 3])
    if kind == "wrong_step":
        return example.completion(error_at=rng.randrange(len(example.operations)), error=error)
    if kind == "wrong_answer":
        return example.completion(final=example.answer + error)
    raise ValueError(f"unknown corruption {kind!r}; choose one of {CORRUPTIONS}")


CORRUPTIONS = ("wrong_step", "wrong_answer")


def make_sft_corpus(n: int, seed: int, broken_share: float = 0.5, **difficulty) -> list[tuple[str, str]]:
    """``n`` (prompt, completion) pairs; a ``broken_share`` of them are wrong (see the module)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        example = make_example(rng, **difficulty)
        broken = rng.random() < broken_share
        completion = corrupt(rng.choice(CORRUPTIONS), example, rng) if broken else example.completion()
        pairs.append((example.task.prompt, completion))
    return pairs


__all__ = ["ArithExample", "CORRUPTIONS", "corrupt", "make_example", "make_examples", "make_prompts",
           "make_sft_corpus", "write_jsonl"]
