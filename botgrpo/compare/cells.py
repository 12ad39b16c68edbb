"""A cell: one arm on one seed, trained by ``botgrpo train`` in its own process, and its record.

Where a study's files go (``results`` is committed, ``runs`` is not)::

    <results>/cells/<arm>-s<seed>.json     a finished study cell's record: its curves, no checkpoints
    <results>/pilots/<arm>-s<seed>.json    a finished pilot cell's record
    <runs>/<role>/<arm>-s<seed>/           the trainer's directory: config.yaml, train.log, checkpoints
    <runs>/<role>/launches.jsonl           one line per process started (cell, attempt, resumed from)
    <runs>/setup/                          the setup hook's folder

A cell's config is the shared start (:func:`shared_start`) with the instrument's keys set
(:func:`cell_values`, names from :mod:`botgrpo.compare.keys`), written to the cell's
``config.yaml``; the arm's overrides go on the command line as ``--set key=value``. A cell is
finished when its record exists: it never runs again. An interrupted cell restarts, from its
latest checkpoint when it saved one.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import multiprocessing
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

from botgrpo.compare.keys import METRIC_FIELDS, START_FILES, key
from botgrpo.compare.protocol import Protocol, digest, flatten, merged, set_dotted
from botgrpo.services.settings import SettingsError
from botgrpo.trainer.models.pretrained import RECORD as PROVENANCE

RECORD_DIRS = {"study": "cells", "pilot": "pilots"}
BUILT_FROM = "built-from.json"   # in a start folder a recipe trained: what identifies it (:func:`fingerprint`)
RECORDS = (PROVENANCE, BUILT_FROM)   # a start folder's records of how it was made, not part of its bytes' print


@dataclass(frozen=True)
class Cell:
    arm: str
    seed: int
    role: str   # "study" or "pilot"

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}"


@dataclass(frozen=True)
class Layout:
    """The folders of one study."""

    results: Path
    runs: Path

    def record(self, cell: Cell) -> Path:
        return self.results / RECORD_DIRS[cell.role] / f"{cell.name}.json"

    def workdir(self, cell: Cell) -> Path:
        return self.runs / cell.role / cell.name

    def launches(self, role: str) -> Path:
        return self.runs / role / "launches.jsonl"

    @property
    def setup(self) -> Path:
        return self.runs / "setup"


def plan(protocol: Protocol, role: str, arms: Optional[Iterable[str]] = None) -> list[Cell]:
    """The cells of ``role`` in run order. Study: the arms of the gate and the tested comparisons
    seed by seed (a study stopped early has them all on the same seeds), then the other arms seed
    by seed. Pilot: the pilot seeds of the primary's and the gate's arms. ``arms``: only these
    (for a pilot, any arms)."""
    gate = [protocol.gate] if protocol.gate else []
    arms = None if arms is None else list(arms)
    if arms is not None:
        unknown = sorted(set(arms) - set(protocol.arms))
        if unknown:
            raise SettingsError(f"--arms: no arm {unknown} (arms: {', '.join(protocol.arms)})")
    if role == "pilot":
        groups = [_arms_of([protocol.primary, *gate]) if arms is None else [a for a in protocol.arms if a in arms]]
        seeds = protocol.seeds.pilot
    else:
        first = _arms_of([*gate, *protocol.tested()])
        groups = [[a for a in group if arms is None or a in arms]
                  for group in (first, [a for a in protocol.arms if a not in first])]
        seeds = protocol.seeds.study
    return [Cell(arm, seed, role) for group in groups for seed in seeds for arm in group]


def _arms_of(comparisons: list) -> list[str]:
    return list(dict.fromkeys(arm for c in comparisons for arm in (c.a, c.b)))


# --------------------------------------------------------------------------- the shared start
def call_setup(protocol: Protocol, root: Path) -> dict[str, Any]:
    """The setup hook's training config values (none without a hook). The hook runs in a process
    of its own, so what it loads is gone before the cells start beside this one (a warm start's
    SFT, run in this process, held 4.3 GB here for the whole study)."""
    if protocol.setup is None:
        return {}
    root.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_setup_values, protocol.setup.function, str(root), dict(protocol.setup.options),
                           str(Path.cwd())).result()


def _setup_values(function: str, root: str, options: dict[str, Any], cwd: str) -> dict[str, Any]:
    """In the setup's process: import ``module:function`` (a study's module is found from ``cwd``,
    as ``python -m`` would find it), call it on ``root``, check what it returns."""
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    module, _, name = function.partition(":")
    try:
        hook = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise SettingsError(f"setup.function {function!r}: {exc}") from None
    values = hook(Path(root), **options)
    if not isinstance(values, dict):
        raise SettingsError(f"setup.function {function!r} returned {type(values).__name__}, "
                            "not a mapping of training config values")
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in values.items()}


def shared_start(protocol: Protocol, layout: Layout) -> dict[str, Any]:
    """The training config every cell starts from: the base, the setup's values over it and the
    protocol's held-out set (a nested mapping)."""
    start = merged(protocol.base_values(), call_setup(protocol, layout.setup))
    if protocol.evaluation.dataset is not None:
        set_dotted(start, key("eval_dataset"), protocol.evaluation.dataset)
    if get_dotted(start, key("eval_dataset")) is None:
        raise SettingsError("evaluation.dataset: no held-out set (set it here, in the base config or from the setup)")
    return start


def get_dotted(values: dict[str, Any], dotted: str) -> Any:
    for name in dotted.split("."):
        if not isinstance(values, dict) or name not in values:
            return None
        values = values[name]
    return values


def fingerprint(path: str | Path) -> str:
    """A digest of a file, or of every file under a folder (relative names and bytes): which
    policy or dataset a run started from. A converted checkpoint's provenance record (its source
    path and timings: how it was made, not what it is) is left out, so the same start converted
    again in another session keeps its print and a study resumes on it.

    A folder holding :data:`BUILT_FROM` is identified by that file alone: a start that a recipe
    trains (an SFT warm start) is what it was trained from and how, because trained again on
    another CPU its float32 weights differ in the last bits (seen: one recipe on one base gave two
    prints on two machines, with the same loss curve to four decimals). Its bytes: :func:`byte_print`."""
    root = Path(path)
    if (root / BUILT_FROM).is_file():
        return hashlib.sha256((root / BUILT_FROM).read_bytes()).hexdigest()[:16]
    return byte_print(root)


def byte_print(path: str | Path) -> str:
    """:func:`fingerprint` of the bytes alone: the start's files less its records of how it was
    made (a conversion's, :data:`BUILT_FROM`), so a build has the same one before and after its
    ``built-from.json`` is written."""
    root, h = Path(path), hashlib.sha256()
    if root.is_file():
        h.update(root.read_bytes())
        return h.hexdigest()[:16]
    for file in sorted(p for p in root.rglob("*") if p.is_file() and p.relative_to(root).as_posix() not in RECORDS):
        h.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return h.hexdigest()[:16]


def start_fingerprints(start: dict[str, Any]) -> dict[str, str]:
    """Fingerprints of the shared start's files (the model, the datasets) that exist locally."""
    return {dotted: fingerprint(path) for dotted, path in _start_paths(start).items()}


def built_prints(start: dict[str, Any]) -> dict[str, str]:
    """The bytes' print of each start file identified by its :data:`BUILT_FROM` (which build of
    the recipe a cell trained from: a record's ``built``)."""
    return {dotted: byte_print(path) for dotted, path in _start_paths(start).items()
            if (path / BUILT_FROM).is_file()}


def _start_paths(start: dict[str, Any]) -> dict[str, Path]:
    paths = {key(name): get_dotted(start, key(name)) for name in START_FILES}
    return {dotted: Path(value) for dotted, value in paths.items() if isinstance(value, str) and Path(value).exists()}


# --------------------------------------------------------------------------- one cell's config
def overrides(protocol: Protocol, arm: str) -> list[str]:
    """The arm's overrides as ``botgrpo train --set`` arguments (JSON values: valid YAML)."""
    return [f"{dotted}={json.dumps(value)}" for dotted, value in flatten(protocol.arms[arm]).items()]


def cell_values(protocol: Protocol, start: dict[str, Any], cell: Cell, workdir: Path, resume: bool = False,
                save_every: Optional[int] = None) -> dict[str, Any]:
    """The cell's ``config.yaml``: the shared start with the instrument's keys set."""
    values = merged(start, {})
    settings = {"seed": cell.seed, "steps": protocol.steps, "eval_every": protocol.evaluation.every,
                "eval_prompts": protocol.evaluation.prompts, "output_dir": str(workdir), "progress": False,
                "resume": resume}
    if save_every is not None:
        settings["save_every"] = save_every
    for name, value in settings.items():
        set_dotted(values, key(name), value)
    return values


def identity(protocol: Protocol, start_prints: dict[str, str], start: dict[str, Any], cell: Cell) -> str:
    """What makes a cell's result: the shared start (its files by fingerprint), the seed, the budget,
    the evaluation grid and the arm's overrides. Two cells with the same identity train alike."""
    start = merged(start, {})
    for dotted, print_ in start_prints.items():
        set_dotted(start, dotted, f"fingerprint:{print_}")
    return digest({"start": start, "seed": cell.seed, "steps": protocol.steps,
                   "evaluation": [protocol.evaluation.every, protocol.evaluation.prompts],
                   "arm": flatten(protocol.arms[cell.arm])})[:16]


def command(config: Path, arm_overrides: list[str]) -> list[str]:
    """``botgrpo train`` for a cell, through this interpreter."""
    return [sys.executable, "-m", "botgrpo.cli", "train", "--config", str(config),
            *(part for pair in arm_overrides for part in ("--set", pair))]


def write_config(path: Path, values: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return path


def validate(protocol: Protocol, start: dict[str, Any], scratch: Path) -> None:
    """Every arm's config as ``botgrpo train`` would read it, before any cell starts (a bad
    override fails now, not hours into a study)."""
    import argparse

    from botgrpo.commands.train import FLAGS, build_config

    for arm in protocol.arms:
        cell = Cell(arm, protocol.seeds.study[0], "study")
        config = write_config(scratch / f"{arm}.yaml", cell_values(protocol, start, cell, scratch / arm))
        args = argparse.Namespace(config=str(config), resume=None, set=overrides(protocol, arm),
                                  **{name: None for name in FLAGS})
        try:
            build_config(args)
        except SettingsError as exc:
            raise SettingsError(f"arm {arm!r}: {exc}") from None


def latest_checkpoint(workdir: Path) -> Optional[Path]:
    from botgrpo.trainer.run.checkpoint import latest

    return latest(workdir) if workdir.exists() else None


def drop_checkpoints(workdir: Path) -> int:
    """Remove a finished cell's checkpoints (and the ``latest`` link to one): its record is what
    the study keeps, and a SmolLM2 cell's four checkpoints are 6 GB. The bytes freed."""
    freed = 0
    for path in workdir.glob("checkpoint-*"):
        if path.is_dir() and not path.is_symlink():
            freed += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path)
    link = workdir / "latest"
    if link.is_symlink():
        link.unlink()
    return freed


# --------------------------------------------------------------------------- records
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The lines of a JSONL file the trainer appends to, one per step, the last line for a step
    winning (a resumed run evaluates again the steps after its checkpoint); a torn last line is skipped."""
    by_step: dict[int, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            by_step[row["step"]] = row
    return [by_step[s] for s in sorted(by_step)]


def finished(evals: list[dict[str, Any]], steps: int) -> bool:
    return bool(evals) and evals[0]["step"] == 0 and evals[-1]["step"] == steps


def make_record(cell: Cell, workdir: Path, *, protocol_hash: str, cell_id: str, start_prints: dict[str, str],
                commit: str, argv: list[str], attempts: int, seconds: float,
                built: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """A finished cell's record: who it is, what it ran (``built``: :func:`built_prints`, when a
    start was identified by its recipe), and its curves (evaluations, per-step metrics)."""
    metrics = [{k: row.get(k) for k in METRIC_FIELDS} for row in read_jsonl(workdir / "metrics.jsonl")]
    config = workdir / "config.json"   # the trainer's resolved config
    return {"arm": cell.arm, "seed": cell.seed, "role": cell.role, "protocol": protocol_hash, "cell": cell_id,
            "start": start_prints, **({"built": built} if built else {}), "commit": commit, "command": argv,
            "attempts": attempts, "seconds": round(seconds, 1), "evals": read_jsonl(workdir / "evals.jsonl"),
            "metrics": metrics, "train_config": json.loads(config.read_text()) if config.exists() else None}


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Written whole or not at all (a finished cell is one whose record exists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)


def load_records(layout: Layout, role: str) -> dict[tuple[str, int], dict[str, Any]]:
    """``{(arm, seed): record}`` of the finished cells of ``role``."""
    folder = layout.results / RECORD_DIRS[role]
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.exists() else []
    return {(r["arm"], r["seed"]): r for r in records}
