"""What every synthetic task shares: the task record, the prompt format and the dataset file.

Prompt format (chat-free, because the demo policy is a tiny model trained from scratch that has
never seen a chat template): the policy's input is one instruction line followed by
:data:`PROMPT_END` (a newline), and the policy continues with the completion, which the warm
start teaches to end with the tokenizer's eos token::

    Write a React component named TodoList that renders a <ul> with text "Add".\\n
    ```tsx
    ...
    ```<eos>

``Task.prompt`` already ends with the newline, so a trainer feeds it verbatim; the SFT corpus
pairs use the same string, so warm start and RL see identical prompts.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

PROMPT_END = "\n"


def format_prompt(instruction: str) -> str:
    """The policy's input for ``instruction``: the instruction line and :data:`PROMPT_END`."""
    return instruction.rstrip() + PROMPT_END


@dataclass(frozen=True)
class Task:
    """One prompt and what its scorer needs (``{"spec": ...}`` for react, ``{"answer": ...}``
    for math). JSON-able via :meth:`to_json`."""

    prompt: str
    reference: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def write_jsonl(path: str | Path, tasks: Iterable[Task], *, prompt_column: str = "prompt",
                reference_column: str = "reference") -> Path:
    """Write one JSON object per task with the prompt and reference columns the trainer loads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for task in tasks:
            out.write(json.dumps({prompt_column: task.prompt, reference_column: task.reference}) + "\n")
    return path


def read_jsonl(path: str | Path, *, prompt_column: str = "prompt",
               reference_column: str = "reference") -> list[Task]:
    """The tasks of a file written by :func:`write_jsonl`."""
    with Path(path).open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    return [Task(row[prompt_column], row.get(reference_column) or {}) for row in rows]
