"""Checkpoints that resume exactly: model (loadable with ``from_pretrained``), optimizer,
scheduler, every RNG, the step and the data position. ``<output_dir>/latest`` names the newest
checkpoint written (``botgrpo eval --model runs/x/latest``)."""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from botgrpo.services.links import point

STATE_FILE = "trainer_state.pt"
LATEST = "latest"  # <output_dir>/latest -> checkpoint-<step>, the newest one saved


def _rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(directory: Path, step: int, model, tokenizer, model_state: dict, optimizer_state: dict, scheduler,
         extra: dict[str, Any]) -> Path:
    """Write ``directory/checkpoint-<step>`` from unsharded states; returns its path. The state
    file comes last and whole (written aside, then renamed): a checkpoint is complete once it has
    one, so a run killed while saving resumes from the checkpoint before; then ``directory/latest``
    points at it."""
    path = Path(directory) / f"checkpoint-{step}"
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, state_dict=model_state)
    tokenizer.save_pretrained(path)
    partial = path / (STATE_FILE + ".partial")
    torch.save({"step": step, "optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
                "rng": _rng_state(), **extra}, partial)
    partial.replace(path / STATE_FILE)
    point(Path(directory) / LATEST, path)
    return path


def latest(directory: Path) -> Optional[Path]:
    """The checkpoint with the highest step under ``directory``, if any."""
    found = [(int(m.group(1)), p) for p in Path(directory).glob("checkpoint-*")
             if (m := re.fullmatch(r"checkpoint-(\d+)", p.name)) and (p / STATE_FILE).exists()]
    return max(found)[1] if found else None


def restore(path: Path, scheduler) -> dict[str, Any]:
    """Restore scheduler and RNG state from ``path``; returns the rest of the saved state
    (``optimizer``, step, data position, ...). The model loads via ``from_pretrained``."""
    state = torch.load(Path(path) / STATE_FILE, weights_only=False)
    scheduler.load_state_dict(state.pop("scheduler"))
    _set_rng_state(state.pop("rng"))
    return state
