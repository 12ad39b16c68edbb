"""Prompt datasets on disk and a resumable, seeded order over them."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import torch


@dataclass(frozen=True)
class Example:
    prompt: Union[str, list[dict[str, Any]]]   # text, or chat messages (see trainer.rollout.prompts)
    reference: Optional[dict[str, Any]]


MESSAGES_COLUMN = "messages"


def load_examples(path: str | Path, prompt_column: str = "prompt", reference_column: str = "reference") -> list[Example]:
    """Examples from JSONL, Parquet or a ``datasets`` directory (``save_to_disk``).

    The prompt column holds text or a list of ``{"role", "content"}`` messages; a row without it
    may hold a conversation under ``messages`` (chat datasets), whose final assistant turns are
    dropped: they are the answer the policy is to write. A reference column holding a string is
    wrapped as ``{"answer": value}`` (math datasets).
    """
    path = Path(path)
    if path.is_dir():
        from datasets import load_from_disk  # optional dependency, only for this format
        rows = list(load_from_disk(str(path)))
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq  # optional dependency, only for this format
        rows = pq.read_table(path).to_pylist()
    else:
        rows = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
    if not rows:
        raise ValueError(f"{path}: no examples")
    missing = [i for i, r in enumerate(rows) if prompt_column not in r and MESSAGES_COLUMN not in r]
    if missing:
        raise ValueError(f"{path}: row {missing[0]} has no column {prompt_column!r} nor {MESSAGES_COLUMN!r} "
                         f"(columns: {sorted(rows[missing[0]])})")
    return [Example(_prompt(r, prompt_column), _reference(r.get(reference_column))) for r in rows]


def _prompt(row: dict[str, Any], column: str) -> Union[str, list[dict[str, Any]]]:
    value = row[column] if column in row else row[MESSAGES_COLUMN]
    if not isinstance(value, list):
        return str(value)
    messages = [dict(m) for m in value]
    while column not in row and messages and messages[-1].get("role") == "assistant":
        messages.pop()
    return messages


def _reference(value: Any) -> Optional[dict[str, Any]]:
    if value is None or isinstance(value, dict):
        return value
    return {"answer": str(value)}


class PromptOrder:
    """Visits examples in a fresh seeded permutation each epoch; its state resumes exactly."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed, self.epoch, self.position = size, seed, 0, 0
        self._order = self._permutation()

    def _permutation(self) -> list[int]:
        return torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch)).tolist()

    def take(self, n: int) -> list[int]:
        out = []
        while len(out) < n:
            if self.position == self.size:
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._permutation()
            out.append(self._order[self.position])
            self.position += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = state["epoch"], state["position"]
        self._order = self._permutation()
