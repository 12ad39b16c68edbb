"""Chained arithmetic asked as a chat question, one checked step per line, for a real instruct model.

A prompt gives a start value and a few operations in words, and shows the first step as the
layout of a line::

    Start with 7. Add 5. Multiply by 3. Subtract 4. Solve it step by step, one step per line,
    starting with `7 + 5 = 12`. End with the line `The answer is \\boxed{}.` with the final
    number in the box.

The correct working is the chain of step lines ``7 + 5 = 12``, ``12 * 3 = 36``, ``36 - 4 = 32``,
answer 32. The reference is ``{"answer": "32", "chain": ["7 + 5 = 12", ...]}``: the ``math``
scorer's outcome reads the answer; its ``steps`` local signal checks each line's arithmetic (blame
from the first wrong step on); its ``oracle`` signal blames exactly the first line that differs
from ``chain`` (a wrong result, but also a right sum of the wrong numbers; and any line not in the
reference's layout, such as a numbered ``1. Add 5: 7 + 5 = 12``, which is why the prompt shows
the first line as written). Showing the first step also fixes the layout for a 135M model that
otherwise copies a worked example's numbers (docs/results/smollm2_chain/README.md).

Difficulty (:class:`Difficulty`): the number of operations (``min_steps``..``max_steps``), the
start and ``+``/``-`` operand range (``1..max_operand``), the ``*`` factor (``2..max_factor``)
and which operations occur. ``-`` is drawn only when the value stays positive, ``*`` only while
the value is at most ``max_product_base`` (a small model's times table), so every chain's values
stay small positive integers.

Like :mod:`.chat_arith`, the prompt is one user message under the model's chat template
(:func:`botgrpo.trainer.tasks.chat_arith.conversation_dataset`). Training prompts come from draw
seed :data:`TRAIN_SEED`, held-out ones from :data:`EVAL_SEED` (never the same). Pure and seeded.
"""
from __future__ import annotations

import operator
import random
from dataclasses import dataclass

from botgrpo.trainer.tasks.base import Task, format_prompt

OPERATIONS = {"+": "Add {n}.", "-": "Subtract {n}.", "*": "Multiply by {n}."}
INSTRUCTION = ("Solve it step by step, one step per line, starting with `{first}`. "
               "End with the line `The answer is \\boxed{{}}.` with the final number in the box.")
TRAIN_SEED, EVAL_SEED = 31, 32   # prompt draws (chat_arith uses 21/22)


@dataclass(frozen=True)
class Difficulty:
    """How hard a chain is; :func:`make_example` draws from it."""

    min_steps: int = 3
    max_steps: int = 4
    max_operand: int = 10
    max_factor: int = 3
    max_product_base: int = 20
    operators: tuple[str, ...] = ("+", "-", "*")

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"need 1 <= min_steps <= max_steps, got {self.min_steps}, {self.max_steps}")
        if self.max_operand < 1 or self.max_factor < 2:
            raise ValueError("max_operand must be >= 1 and max_factor >= 2")
        unknown = set(self.operators) - set(OPERATIONS)
        if not self.operators or unknown or "+" not in self.operators:
            raise ValueError(f"operators must include '+' and be a subset of {tuple(OPERATIONS)}, got {self.operators!r}")


@dataclass(frozen=True)
class ChatChainExample:
    """A start value and its ``(operator, operand)`` operations."""

    start: int
    operations: tuple[tuple[str, int], ...]

    @property
    def question(self) -> str:
        ops = " ".join(OPERATIONS[op].format(n=n) for op, n in self.operations)
        return f"Start with {self.start}. {ops} {INSTRUCTION.format(first=self.chain[0])}"

    @property
    def chain(self) -> list[str]:
        """The correct step lines ``a op b = c``."""
        value, lines = self.start, []
        for op, n in self.operations:
            result = apply(op, value, n)
            lines.append(f"{value} {op} {n} = {result}")
            value = result
        return lines

    @property
    def answer(self) -> int:
        """The chain's last result (the start itself when there is no operation)."""
        return int(self.chain[-1].rsplit("= ", 1)[1]) if self.operations else self.start

    @property
    def task(self) -> Task:
        return Task(format_prompt(self.question), {"answer": str(self.answer), "chain": self.chain})

    def completion(self, error_at: int | None = None, error: int = 0) -> str:
        """The worked answer in the asked layout: the step lines, then ``The answer is \\boxed{N}.``
        With ``error_at``, that step's result is off by ``error`` and the later steps carry on
        from the wrong value (one slip, worked through), so the answer is wrong."""
        value, lines = self.start, []
        for index, (op, n) in enumerate(self.operations):
            result = apply(op, value, n) + (error if index == error_at else 0)
            lines.append(f"{value} {op} {n} = {result}")
            value = result
        return "\n".join([*lines, f"The answer is \\boxed{{{value}}}."])


#: ``a op b`` by operator
APPLY = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def apply(op: str, a: int, b: int) -> int:
    """``a op b`` for ``op`` in ``+ - *``."""
    return APPLY[op](a, b)


def make_example(rng: random.Random, difficulty: Difficulty = Difficulty()) -> ChatChainExample:
    """A start in ``1..max_operand`` and ``min_steps..max_steps`` operations; each operator is
    drawn among those allowed at the running value (``-`` keeps it >= 1, ``*`` needs it at most
    ``max_product_base``; ``+`` is always allowed)."""
    d = difficulty
    start = value = rng.randint(1, d.max_operand)
    operations = []
    for _ in range(rng.randint(d.min_steps, d.max_steps)):
        allowed = [op for op in d.operators
                   if op == "+" or (op == "-" and value > 1) or (op == "*" and value <= d.max_product_base)]
        op = rng.choice(allowed)
        n = rng.randint(2, d.max_factor) if op == "*" else rng.randint(1, min(d.max_operand, value - 1) if op == "-" else d.max_operand)
        operations.append((op, n))
        value = apply(op, value, n)
    return ChatChainExample(start, tuple(operations))


def make_examples(n: int, seed: int, difficulty: Difficulty = Difficulty()) -> list[ChatChainExample]:
    rng = random.Random(seed)
    return [make_example(rng, difficulty) for _ in range(n)]


def make_prompts(n: int, seed: int, difficulty: Difficulty = Difficulty()) -> list[Task]:
    """``n`` tasks, deterministic in ``(seed, difficulty)``."""
    return [example.task for example in make_examples(n, seed, difficulty)]




SLIPS = (-3, -2, -1, 1, 2, 3)  # how far a slipped step's result is off


def make_sft_corpus(n: int, seed: int, difficulty: Difficulty = Difficulty(), broken_share: float = 0.5,
                    exclude: frozenset[str] | set[str] = frozenset()) -> list[tuple[ChatChainExample, str]]:
    """``n`` worked examples ``(example, completion)`` drawn with ``seed`` (none whose prompt is in
    ``exclude``: the held-out set), a ``broken_share`` of them with one slip at a random step
    (:meth:`ChatChainExample.completion`; the slipped result is at least 1). A warm start trained on
    them writes the chain in the asked layout and slips about as often as it has seen."""
    rng, pairs = random.Random(seed), []
    for _ in range(100 * n):
        if len(pairs) == n:
            break
        example = make_example(rng, difficulty)
        if example.task.prompt in exclude:
            continue
        if rng.random() < broken_share:
            at = rng.randrange(len(example.operations))
            correct = example.chain[at].rsplit("= ", 1)[1]
            error = rng.choice([e for e in SLIPS if int(correct) + e >= 1])
            pairs.append((example, example.completion(at, error)))
        else:
            pairs.append((example, example.completion()))
    if len(pairs) < n:
        raise ValueError(f"only {len(pairs)} worked examples outside the excluded prompts at {difficulty}")
    return pairs


def make_split(n_train: int, n_eval: int, difficulty: Difficulty = Difficulty()) -> tuple[list[Task], list[Task]]:
    """Training prompts (draw seed :data:`TRAIN_SEED`) and held-out ones (:data:`EVAL_SEED`), with
    every training prompt whose question is also held out skipped: a small difficulty has few
    distinct chains, and two seeds alone would share some."""
    held_out = make_prompts(n_eval, EVAL_SEED, difficulty)
    seen = {task.prompt for task in held_out}
    rng, train = random.Random(TRAIN_SEED), []
    for _ in range(100 * n_train):
        if len(train) == n_train:
            break
        task = make_example(rng, difficulty).task
        if task.prompt not in seen:
            train.append(task)
    if len(train) < n_train:
        raise ValueError(f"only {len(train)} training chains outside the held-out set at {difficulty}")
    return train, held_out


__all__ = ["EVAL_SEED", "INSTRUCTION", "OPERATIONS", "SLIPS", "TRAIN_SEED", "ChatChainExample", "Difficulty", "apply",
           "make_example", "make_examples", "make_prompts", "make_sft_corpus", "make_split"]
