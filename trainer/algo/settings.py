"""What a method is: the update rule's three axes and the sampling-side behaviour, as settings.

A method preset (:mod:`botgrpo.trainer.algo.presets`) is one :class:`AlgorithmSettings`; a training config
overrides any field of it. Every behaviour a method has is a field here, so nothing in the
trainer asks which method it is running (DAPO's dynamic sampling and overlong penalty included).

Some fields are options of another one (an *axis*): the estimator's keyword options belong to
the estimator, the clip range to the policy loss. Overriding the head of an axis with a
different value drops the preset's options for it (they were chosen for the preset's choice),
unless the override sets them too: ``--method pure --estimator grpo`` does not hand PURE's
softmin temperature to GRPO.

Imports no torch at module level: settings are validated before anything heavy loads.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator


class AlgorithmSettings(BaseModel):
    """The three independent axes of a policy update, each a registry name, plus its knobs."""

    model_config = ConfigDict(extra="forbid")

    estimator: str = Field("bot_grpo", description="advantage estimator (trainer.algo.advantages.ESTIMATORS)")
    estimator_options: dict[str, Any] = Field(default_factory=dict, description="keyword options of the estimator, e.g. {eps: 1e-6}")
    policy_loss: str = Field("ppo_clip", description="policy loss (trainer.algo.losses.POLICY_LOSSES)")
    eps_low: float = Field(0.2, ge=0, lt=1, description="lower clip range: ratio >= 1 - eps_low")
    eps_high: float = Field(0.2, ge=0, description="upper clip range: ratio <= 1 + eps_high")
    aggregation: str = Field("token-mean", description="loss aggregation (trainer.algo.losses.AGGREGATIONS)")
    kl_estimator: str = Field("k3", description="KL estimator (trainer.algo.losses.KL_ESTIMATORS)")
    kl_coef: float = Field(0.0, ge=0, description="weight of the KL penalty; 0 loads no reference model")
    dynamic_sampling: bool = Field(False, description="drop groups whose rewards are all equal from the loss (DAPO)")
    overlong_buffer: float = Field(0.0, ge=0, le=1, description="soft overlong penalty zone, as a share of "
                                   "max_new_tokens before the cap (DAPO: 0.25); 0 turns the penalty off")
    overlong_penalty: float = Field(1.0, ge=0, description="overlong penalty at and beyond max_new_tokens")

    @field_validator("estimator", "policy_loss", "aggregation", "kl_estimator")
    @classmethod
    def _registered(cls, name: str, info: ValidationInfo) -> str:
        registry, kind = _registries()[info.field_name]
        if name not in registry:
            raise ValueError(f"unknown {kind} {name!r}; choose one of {sorted(registry)}")
        return name

    @model_validator(mode="after")
    def _estimator_takes_its_options(self) -> "AlgorithmSettings":
        from botgrpo.trainer.algo.advantages import ESTIMATORS
        accepted = keyword_options(ESTIMATORS[self.estimator])
        for option in self.estimator_options:
            if option not in accepted:
                raise ValueError(f"estimator {self.estimator!r} takes no option {option!r}; "
                                 f"its options: {sorted(accepted) or 'none'}")
        return self


# axis head -> the fields that are its options (dropped when the head is overridden alone)
AXES: dict[str, tuple[str, ...]] = {
    "estimator": ("estimator_options",),
    "policy_loss": ("eps_low", "eps_high"),
}
FIELDS = tuple(AlgorithmSettings.model_fields)


def keyword_options(fn) -> set[str]:
    """The keyword-only parameters of a registry function (its options)."""
    return {p.name for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}


def resolve(base: AlgorithmSettings, overrides: Mapping[str, Any]) -> AlgorithmSettings:
    """``base`` (a preset) with ``overrides`` applied, axis by axis (see the module docstring)."""
    values = base.model_dump()
    defaults = AlgorithmSettings.model_fields
    for head, options in AXES.items():
        if head in overrides and overrides[head] != values[head]:
            for option in options:
                field = defaults[option]
                values[option] = field.default_factory() if field.default_factory else field.default
    values.update(overrides)
    return AlgorithmSettings.model_validate(values)


def _registries() -> dict[str, tuple[Mapping[str, Any], str]]:
    """Field -> (registry, what it holds). Imported late: settings load before torch is needed."""
    from botgrpo.trainer.algo.advantages import ESTIMATORS
    from botgrpo.trainer.algo.losses import AGGREGATIONS, KL_ESTIMATORS, POLICY_LOSSES
    return {"estimator": (ESTIMATORS, "advantage estimator"), "policy_loss": (POLICY_LOSSES, "policy loss"),
            "aggregation": (AGGREGATIONS, "loss aggregation"), "kl_estimator": (KL_ESTIMATORS, "KL estimator")}
