"""The protocol file of a study: what ``botgrpo compare`` runs, tests and calls, written before the runs.

A YAML mapping, validated here field by field (a bad file is a :class:`SettingsError` naming the
field). The shared start (``base``) is one ``botgrpo train`` config for every arm; each arm is a
few overrides of it (dotted keys); seeds, budget, evaluation grid, endpoint, the comparisons and
their roles and the alpha are fixed here, and :mod:`botgrpo.compare.lock` refuses to run study
cells once anything in it changed. A worked example: ``docs/examples/compare_react.yaml``;
the method: ``docs/compare.md``.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from botgrpo.compare.keys import SET_BY_COMPARE, key
from botgrpo.compare.stats import MAX_EXACT_SEEDS
from botgrpo.services.settings import SettingsError, read_yaml

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")  # a file name on every system


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Comparison(_Strict):
    """Arm ``a`` against arm ``b`` on the same seeds. Per seed the difference is a's advantage
    over b on the endpoint (positive: a is better)."""

    a: str = Field(..., description="the arm under test")
    b: str = Field(..., description="the arm it is compared with (the reference)")

    def label(self) -> str:
        return f"{self.a} vs {self.b}"


class Gate(Comparison):
    """The positive control: a comparison where the effect is known to be possible (an oracle
    signal against none). Tested alone, at its own alpha, and reported first: when it fails, the
    study cannot show the effect at all, and a null primary is no evidence against it."""

    alpha: float = Field(0.05, gt=0, lt=1, description="the gate's own level (no correction: it is one test)")


class Base(_Strict):
    """The shared start: one training config, identical for every arm and seed."""

    config: Optional[str] = Field(None, description="a `botgrpo train` YAML file (path relative to the protocol file)")
    values: dict[str, Any] = Field(default_factory=dict, description="training config values over the file's; "
                                   "dotted keys set one nested field (`sampling.max_new_tokens: 96`)")


class Setup(_Strict):
    """Code that prepares the shared start (datasets, a warm start) and returns its paths, so a
    study's task code stays in the study's own module."""

    function: str = Field(..., pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
                          description="`module:function`, called as `function(root, **options)` before any cell "
                                      "(root: a folder under the runs directory); returns training config values "
                                      "(dotted keys allowed) merged over the base. It must be idempotent: it runs "
                                      "on every `botgrpo compare` invocation")
    options: dict[str, Any] = Field(default_factory=dict, description="keyword arguments of the function")


def _seed_list(value: Any) -> Any:
    """``[1, 2, 3]`` or the inclusive range ``"100-129"``."""
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", value)
        if not match or int(match[1]) > int(match[2]):
            raise ValueError(f"a seed range is written 'FIRST-LAST' (e.g. '100-129'), got {value!r}")
        return list(range(int(match[1]), int(match[2]) + 1))
    return value


class Seeds(_Strict):
    """Seeds set the prompt order, sampling and initialisation of a cell; every arm runs every seed,
    and the comparisons pair the arms by seed."""

    study: list[int] = Field(..., min_length=2, max_length=MAX_EXACT_SEEDS,
                             description=f"the study's seeds: a list or 'FIRST-LAST' (2 to {MAX_EXACT_SEEDS}: the "
                                         "exact test is computed up to that many)")
    pilot: list[int] = Field(default_factory=list, description="seeds for pilots and the power estimate only; "
                             "disjoint from the study's, never reused by it")

    _ranges = field_validator("study", "pilot", mode="before")(_seed_list)

    @model_validator(mode="after")
    def _distinct(self) -> "Seeds":
        for name in ("study", "pilot"):
            seeds = getattr(self, name)
            if len(set(seeds)) != len(seeds):
                raise ValueError(f"{name}: a seed is listed twice")
        shared = sorted(set(self.study) & set(self.pilot))
        if shared:
            raise ValueError(f"study and pilot seeds overlap ({shared}): a pilot's seed is never a study seed")
        return self


class Evaluation(_Strict):
    """The held-out evaluation grid, the same for every cell (the trainer evaluates at step 0,
    every ``every`` steps and at the end)."""

    every: int = Field(..., ge=1, description="steps between held-out evaluations")
    prompts: int = Field(..., ge=1, description="held-out prompts per evaluation")
    dataset: Optional[str] = Field(None, description="the held-out prompts (unset: the base config's, or the setup's)")


ENDPOINTS = ("steps_to_threshold", "auc")


class Endpoint(_Strict):
    """What a run is measured by. Both endpoints are computed for every run; the primary one is
    tested and called, the other reported."""

    primary: Literal["steps_to_threshold", "auc"] = Field(
        ..., description="steps_to_threshold: the step at which held-out pass rate first reaches `threshold`, "
                         "interpolated linearly between evaluations (compared as the log of the steps ratio); "
                         "auc: the area under the held-out curve over the budget, divided by the steps (a mean "
                         "pass rate, compared as a difference)")
    threshold: Optional[float] = Field(None, gt=0, le=1, description="held-out pass rate of steps_to_threshold "
                                       "(above every run's start)")
    censor_at: Optional[float] = Field(None, gt=0, description="steps counted for a run that never reaches the "
                                       "threshold (unset: steps + evaluation.every, one evaluation past the budget; "
                                       "a lower bound of its true value, so a ratio with it is conservative)")


class Power(_Strict):
    """The effect the study is sized for (the power estimate: ``botgrpo compare --power``)."""

    target: float = Field(..., gt=0, description="the effect to detect: for steps_to_threshold a speed ratio "
                          "(1.2: a reaches the threshold in 1/1.2 of b's steps), for auc a difference in mean pass rate")
    level: float = Field(0.8, gt=0, lt=1, description="the power asked for")
    draws: int = Field(4000, ge=100, description="Monte Carlo draws per power evaluation")
    seed: int = Field(0, description="the draws' seed (the estimate is deterministic)")


class Bootstrap(_Strict):
    """The paired bootstrap interval of each comparison (seeds resampled, pairs kept)."""

    resamples: int = Field(10_000, ge=100, description="bootstrap draws")
    level: float = Field(0.95, gt=0, lt=1, description="interval coverage")
    seed: int = Field(0, description="the draws' seed (the report is deterministic)")


class Outcomes(_Strict):
    """What each outcome of the primary comparison means, in the protocol's own words (printed
    under the computed verdict). Unset: the verdict alone."""

    a_better: Optional[str] = Field(None, description="the primary's a is better than b")
    b_better: Optional[str] = Field(None, description="the primary's b is better than a")
    no_difference: Optional[str] = Field(None, description="no difference detected (with the power stated)")
    gate_failed: Optional[str] = Field(None, description="the positive control did not show the effect")


class Protocol(_Strict):
    """A study: one shared start, arms as overrides of it, seeds, a budget, an endpoint and the
    comparisons with their roles, all fixed before the first study run."""

    name: str = Field(..., pattern=NAME.pattern, description="the study's name (results go to a folder of this name)")
    question: str = Field("", description="the question, in words (part of the protocol's hash)")
    results: Optional[str] = Field(None, description="folder of the lock, the records, the power estimate and the "
                                   "report (relative to the protocol file; unset: a folder named `name` beside it). "
                                   "Not part of the hash: the folder may move")
    setup: Optional[Setup] = Field(None, description="code that prepares the shared start; "
                                   "a string `module:function` is short for {function: ...}")
    base: Base = Field(..., description="the shared start")
    arms: dict[str, dict[str, Any]] = Field(..., min_length=2, description="arm name -> training config overrides "
                                            "over the base (dotted keys; nested mappings merge key by key)")
    seeds: Seeds
    steps: int = Field(..., ge=1, description="the budget: training steps of every cell")
    evaluation: Evaluation
    endpoint: Endpoint
    alpha: float = Field(0.05, gt=0, lt=1, description="level of the tested comparisons (primary and secondary, "
                         "Holm-corrected together)")
    primary: Comparison = Field(..., description="the one comparison the study is for")
    secondary: list[Comparison] = Field(default_factory=list, description="further tested comparisons (each one "
                                        "lowers the primary's power: Holm runs over primary + secondary)")
    gate: Optional[Gate] = Field(None, description="the positive control, tested alone first")
    exploratory: list[Comparison] = Field(default_factory=list, description="reported with raw p-values, never called")
    collapse_drop: float = Field(0.1, gt=0, le=1, description="a run collapsed when any held-out evaluation falls "
                                 "more than this below its step-0 pass rate (counted per arm)")
    power: Power
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    outcomes: Outcomes = Field(default_factory=Outcomes)

    _path: Optional[Path] = PrivateAttr(None)

    @field_validator("setup", mode="before")
    @classmethod
    def _setup_shorthand(cls, value: Any) -> Any:
        return {"function": value} if isinstance(value, str) else value

    @field_validator("arms")
    @classmethod
    def _arms(cls, arms: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for arm, overrides in arms.items():
            if not NAME.match(arm):
                raise ValueError(f"arm name {arm!r}: letters, digits and _ . = + - only (it names files)")
            for dotted in flatten(overrides or {}):
                owner = _owner(dotted)
                if owner is not None or _is_key(dotted, "eval_dataset"):
                    raise ValueError(f"arm {arm!r} sets {dotted!r}, which is "
                                     + (f"the protocol's ({owner})" if owner else "the shared held-out set"))
        return {arm: overrides or {} for arm, overrides in arms.items()}

    @field_validator("base")
    @classmethod
    def _base(cls, base: Base) -> Base:
        for dotted in flatten(base.values):
            owner = _owner(dotted)
            if owner:
                raise ValueError(f"values sets {dotted!r}, which is the protocol's ({owner})")
        return base

    @model_validator(mode="after")
    def _consistent(self) -> "Protocol":
        roles = [("primary", self.primary)] + [(f"secondary[{i}]", c) for i, c in enumerate(self.secondary)]
        roles += [("gate", self.gate)] if self.gate else []
        roles += [(f"exploratory[{i}]", c) for i, c in enumerate(self.exploratory)]
        seen: dict[frozenset, str] = {}
        for role, c in roles:
            for arm in (c.a, c.b):
                if arm not in self.arms:
                    raise ValueError(f"{role}: no arm {arm!r} (arms: {', '.join(self.arms)})")
            if c.a == c.b:
                raise ValueError(f"{role}: compares {c.a!r} with itself")
            pair = frozenset((c.a, c.b))
            if pair in seen:
                raise ValueError(f"{role}: {c.label()} is already {seen[pair]}: one role per pair")
            seen[pair] = role
        if self.endpoint.primary == "steps_to_threshold" and self.endpoint.threshold is None:
            raise ValueError("endpoint.threshold: steps_to_threshold needs a threshold")
        if self.endpoint.censor_at is not None and self.endpoint.censor_at <= self.steps:
            raise ValueError(f"endpoint.censor_at ({self.endpoint.censor_at}) must be past the budget ({self.steps} steps)")
        if self.endpoint.primary == "steps_to_threshold" and self.power.target <= 1:
            raise ValueError("power.target: for steps_to_threshold a speed ratio above 1 (e.g. 1.2)")
        if self.endpoint.primary == "auc" and self.power.target > 1:
            raise ValueError("power.target: for auc a difference in mean pass rate (e.g. 0.05)")
        return self

    # ----------------------------------------------------------------- derived
    @property
    def folder(self) -> Path:
        """The protocol file's folder (relative paths in the file start here)."""
        return self._path.parent if self._path else Path(".")

    @property
    def results_dir(self) -> Path:
        return self.folder / (self.results or self.name)

    def censor_steps(self) -> float:
        return self.endpoint.censor_at if self.endpoint.censor_at is not None else float(self.steps + self.evaluation.every)

    def tested(self) -> list[Comparison]:
        """The comparisons Holm runs over: the primary, then the secondary ones."""
        return [self.primary, *self.secondary]

    def comparisons(self) -> list[tuple[str, Comparison]]:
        """``(role, comparison)`` in report order: gate, primary, secondary, exploratory."""
        out: list[tuple[str, Comparison]] = [("gate", self.gate)] if self.gate else []
        return out + [("primary", self.primary)] + [("secondary", c) for c in self.secondary] + \
            [("exploratory", c) for c in self.exploratory]

    def base_values(self) -> dict[str, Any]:
        """The shared start as a nested mapping: the base file's values, the inline values over them."""
        values = read_yaml(self.folder / self.base.config) if self.base.config else {}
        for dotted in flatten(values):
            if _owner(dotted):
                raise SettingsError(f"base.config {self.base.config}: sets {dotted!r}, which is the protocol's "
                                    f"({_owner(dotted)})")
        return merged(values, self.base.values)


def _is_key(dotted: str, name: str) -> bool:
    target = key(name)
    return dotted == target or dotted.startswith(target + ".")


PROTOCOL_FIELD = {"seed": "seeds", "steps": "steps", "eval_every": "evaluation.every",
                  "eval_prompts": "evaluation.prompts"}


def _owner(dotted: str) -> Optional[str]:
    """The protocol field (or the instrument) that owns a trainer key a base or an arm may not set."""
    for name in SET_BY_COMPARE:
        if _is_key(dotted, name):
            return PROTOCOL_FIELD.get(name, "set by botgrpo compare for every cell")
    return None


# --------------------------------------------------------------------------- mappings
def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c.d": 2}`` -> ``{"a.b": 1, "c.d": 2}`` (an empty mapping stays a leaf)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def set_dotted(values: dict[str, Any], dotted: str, value: Any) -> None:
    """``values[a][b][c] = value`` for ``"a.b.c"``, creating the mappings on the way."""
    *parents, leaf = dotted.split(".")
    for name in parents:
        child = values.get(name)
        if not isinstance(child, dict):
            child = values[name] = {}
        values = child
    values[leaf] = value


def merged(values: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``values`` with every leaf of ``overrides`` set (nested mappings merge key by key)."""
    out = json.loads(json.dumps(values))
    for dotted, value in flatten(overrides).items():
        set_dotted(out, dotted, value)
    return out


# --------------------------------------------------------------------------- identity
def canonical(protocol: Protocol) -> dict[str, Any]:
    """What the protocol fixes, as plain data: every field but ``results`` (a location), with the
    base file replaced by the shared start it makes and every arm's overrides flattened, so the
    file's formatting, comments and key order do not matter but any value does."""
    data = protocol.model_dump(mode="json", exclude={"results"})
    data["base"] = protocol.base_values()
    data["arms"] = {arm: flatten(overrides) for arm, overrides in protocol.arms.items()}
    return data


def digest(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What changed between two canonical protocols, one line per changed leaf (dotted path)."""
    before, after = flatten(old), flatten(new)
    lines = []
    for dotted in sorted(set(before) | set(after)):
        if dotted not in after:
            lines.append(f"{dotted}: {json.dumps(before[dotted])} -> (removed)")
        elif dotted not in before:
            lines.append(f"{dotted}: (absent) -> {json.dumps(after[dotted])}")
        elif before[dotted] != after[dotted]:
            lines.append(f"{dotted}: {json.dumps(before[dotted])} -> {json.dumps(after[dotted])}")
    return lines


def load(path: str | Path) -> Protocol:
    """The protocol in ``path``, validated; a :class:`SettingsError` naming each bad field."""
    path = Path(path)
    data = read_yaml(path)
    try:
        protocol = Protocol.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(part) for part in e['loc']) or '(top level)'}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise SettingsError(f"protocol {path}: {problems}") from None
    protocol._path = path
    if protocol.base.config and not (protocol.folder / protocol.base.config).exists():
        raise SettingsError(f"protocol {path}: base.config: no file {protocol.folder / protocol.base.config}")
    return protocol
