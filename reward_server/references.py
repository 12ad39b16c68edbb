"""What a rollout's ``reference`` must look like for each scorer, checked when a request arrives.

A scorer declares ``Reference`` (a pydantic model) next to ``Options``; the service validates
every rollout's ``reference`` against it before anything is queued, so a malformed spec or
answer is a 422 naming the field (``rollouts[3].reference.spec.component``), never a rollout
scored as if the reference were absent. Keys a scorer does not read are allowed (datasets carry
their own metadata); the keys it reads must be well-formed. An absent key is not an error here:
the scorer decides what a missing reference means (math: an unscored rollout, said so).
"""
from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator

from botgrpo.reward_server.react.spec import Spec


class ReactReference(BaseModel):
    """``reference`` of the react (and judge) scorer."""

    model_config = ConfigDict(extra="allow")

    spec: Optional[Spec] = Field(None, description="what the prompt asked for (see reward_server.react.spec.Spec)")
    code: Optional[StrictStr] = Field(None, description="the prompt's reference component (local signal `oracle`)")
    instruction: Optional[StrictStr] = Field(None, description="the prompt, for the judge, where `prompt` is not sent")


class MathReference(BaseModel):
    """``reference`` of the math scorer."""

    model_config = ConfigDict(extra="allow")

    answer: Optional[Union[str, int, float]] = Field(None, description="the reference answer (LaTeX or a number)")

    @field_validator("answer", mode="before")
    @classmethod
    def _string_or_number(cls, value: Any) -> Any:
        if value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool)):
            return value
        raise ValueError(f"must be a string or a number, not {type(value).__name__}")


def reference_problems(model: type[BaseModel], reference: Any, where: str) -> list[str]:
    """Every problem of ``reference`` under ``model``, each naming its field from ``where``
    (e.g. ``rollouts[3].reference.spec.component: Input should be a valid string``); [] if valid."""
    try:
        model.model_validate(reference)
    except ValidationError as exc:
        return [".".join([where, *map(str, e["loc"])]) + f": {e['msg']}" for e in exc.errors(include_url=False)]
    return []
