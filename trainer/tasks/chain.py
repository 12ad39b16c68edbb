"""Step chains: long running-arithmetic solutions whose first wrong step is known exactly.

A prompt gives a start value and 8 to 12 labelled operations (``a: + d``, ``b: - d``, ...; one
digit ``d`` in 1..:data:`MAX_DIGIT` each, the running value kept in ``[KEEP_LOW, KEEP_HIGH]``);
the correct completion applies them one per line, each line a step the math scorer checks
exactly, and ends with a boxed answer::

    Start at 14 and apply in order:
    a: + 4
    b: - 3
    c: + 5
    ...
    a: x = 14 + 4 = 18
    b: x = 18 - 3 = 15
    c: x = 15 + 5 = 20
    ...
    The answer is \\boxed{17}.

The labels make each step's operand a lookup by key (the line's label, the same token at the
start of a prompt line and of a step line) rather than by counting positions, and the small range
keeps the arithmetic to a few hundred facts: both so that a policy of under a million parameters
can learn the steps from a warm start (the first version's, values to 99 and no labels, learned
neither; docs/results/chain/README.md).

The reference holds the answer and the chain of correct step lines (``{"answer": "17", "chain":
["a: x = 14 + 4 = 18", ...]}``), which the math scorer's ``oracle`` local signal compares line by
line: the first line that differs from it is *the* first wrong step. Why this task: every step
is easy, so a warm start is right on most of them, but a chain needs all of them right; a
failing chain is typically one wrong step among many right ones, where per-token credit has the
most to say and a sequence reward the least.

Corruptions of the warm-start corpus (each is one mistake at one step, carried onwards, so the
rest of the chain is locally right arithmetic on a wrong value):

* ``wrong_result``: the step's arithmetic is off by 1-3 (the step checker sees it);
* ``wrong_operand``: the step applies a digit other than the prompt's (arithmetic right, so only
  the chain against the prompt, i.e. the oracle, sees where it broke);
* ``wrong_operator``: ``+`` for ``-`` or the reverse (likewise invisible to the step checker).

Pure and seeded: the same ``seed`` gives the same prompts and corpus.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from botgrpo.trainer.tasks.base import Task, format_prompt, write_jsonl

MAX_DIGIT = 5
KEEP_LOW, KEEP_HIGH = 10, 20   # a correct chain stays here; one mistake moves it by at most 2 * MAX_DIGIT
LOW, HIGH = KEEP_LOW - 2 * MAX_DIGIT, KEEP_HIGH + 2 * MAX_DIGIT   # every value any corpus line holds
LABELS = "abcdefghijkl"
CORRUPTIONS = ("wrong_result", "wrong_operand", "wrong_operator")


@dataclass(frozen=True)
class ChainExample:
    """A start value and its ``(operator, digit)`` operations (at most ``len(LABELS)``)."""

    start: int
    operations: tuple[tuple[str, int], ...]

    @property
    def instruction(self) -> str:
        ops = "".join(f"\n{label}: {op} {d}" for label, (op, d) in zip(LABELS, self.operations))
        return f"Start at {self.start} and apply in order:{ops}"

    def lines(self, error_at: int | None = None, kind: str = "wrong_result", error: int = 1) -> list[str]:
        """The step lines ``<label>: x = a op d = b``; with ``error_at``, step ``error_at`` carries the
        mistake ``kind`` (``error``: the offset of a wrong result or operand) and later steps
        build on its value."""
        value, out = self.start, []
        for index, (op, digit) in enumerate(self.operations):
            if index == error_at and kind == "wrong_operand":
                digit = _other_digit(digit, error)
            if index == error_at and kind == "wrong_operator":
                op = "-" if op == "+" else "+"
            result = value + digit if op == "+" else value - digit
            if index == error_at and kind == "wrong_result":
                result += error
            out.append(f"{LABELS[index]}: x = {value} {op} {digit} = {result}")
            value = result
        return out

    @property
    def chain(self) -> list[str]:
        return self.lines()

    @property
    def answer(self) -> int:
        value = self.start
        for op, digit in self.operations:
            value = value + digit if op == "+" else value - digit
        return value

    @property
    def task(self) -> Task:
        return Task(format_prompt(self.instruction), {"answer": str(self.answer), "chain": self.chain})

    def completion(self, error_at: int | None = None, kind: str = "wrong_result", error: int = 1) -> str:
        lines = self.lines(error_at, kind, error)
        final = int(lines[-1].rsplit("=", 1)[1])
        return "\n".join([*lines, f"The answer is \\boxed{{{final}}}."])


def _other_digit(digit: int, offset: int) -> int:
    """A digit in 1..MAX_DIGIT other than ``digit`` (``offset`` steps away, wrapping)."""
    return (digit - 1 + offset) % MAX_DIGIT + 1 if offset % MAX_DIGIT else digit % MAX_DIGIT + 1


def make_example(rng: random.Random, min_steps: int = 8, max_steps: int = 12) -> ChainExample:
    """``min_steps``..``max_steps`` operations of a digit in 1..MAX_DIGIT from a start in
    ``[KEEP_LOW, KEEP_HIGH]``; each operator is drawn among those that keep the correct value
    there (one always does: the range is wider than a digit), so a chain with one mistake
    stays in ``[LOW, HIGH]``."""
    if not 1 <= min_steps <= max_steps <= len(LABELS):
        raise ValueError(f"steps must satisfy 1 <= min_steps <= max_steps <= {len(LABELS)}")
    start = value = rng.randint(KEEP_LOW, KEEP_HIGH)
    operations = []
    for _ in range(rng.randint(min_steps, max_steps)):
        digit = rng.randint(1, MAX_DIGIT)
        allowed = [op for op in "+-" if KEEP_LOW <= (value + digit if op == "+" else value - digit) <= KEEP_HIGH]
        op = rng.choice(allowed)
        operations.append((op, digit))
        value = value + digit if op == "+" else value - digit
    return ChainExample(start, tuple(operations))


def make_examples(n: int, seed: int, **length) -> list[ChainExample]:
    rng = random.Random(seed)
    return [make_example(rng, **length) for _ in range(n)]


def make_prompts(n: int, seed: int, **length) -> list[Task]:
    """``n`` tasks, deterministic in ``seed``; ``length``: :func:`make_example`'s options."""
    return [example.task for example in make_examples(n, seed, **length)]


def corrupt(kind: str, example: ChainExample, rng: random.Random) -> str:
    """A completion of ``example`` with one mistake of ``kind`` at a random step."""
    if kind not in CORRUPTIONS:
        raise ValueError(f"unknown corruption {kind!r}; choose one of {CORRUPTIONS}")
    error = rng.choice([-3, -2, -1, 1, 2, 3]) if kind == "wrong_result" else rng.randint(1, MAX_DIGIT - 1)
    return example.completion(error_at=rng.randrange(len(example.operations)), kind=kind, error=error)


def make_sft_corpus(n: int, seed: int, broken_share: float = 0.5, **length) -> list[tuple[str, str]]:
    """``n`` (prompt, completion) pairs; a ``broken_share`` of them carry one mistake."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        example = make_example(rng, **length)
        broken = rng.random() < broken_share
        completion = corrupt(rng.choice(CORRUPTIONS), example, rng) if broken else example.completion()
        pairs.append((example.task.prompt, completion))
    return pairs


def first_wrong_step(chain: list[str], completion: str) -> int | None:
    """Index of the first line of ``completion`` that differs from the reference ``chain``
    (spaces ignored); ``len(chain)`` when every step line is right but what follows them is not
    exactly ``The answer is \\boxed{<last value>}.``; None when the whole completion is right."""
    lines = completion.split("\n")
    for index, expected in enumerate(chain):
        if index >= len(lines) or _squash(lines[index]) != _squash(expected):
            return index
    final = chain[-1].rsplit("=", 1)[1].strip() if chain else ""
    tail = "\n".join(lines[len(chain):])
    return None if _squash(tail) == _squash(f"The answer is \\boxed{{{final}}}.") else len(chain)


def _squash(text: str) -> str:
    return "".join(text.split())


__all__ = ["CORRUPTIONS", "LABELS", "ChainExample", "corrupt", "first_wrong_step", "make_example", "make_examples",
           "make_prompts", "make_sft_corpus", "write_jsonl"]
