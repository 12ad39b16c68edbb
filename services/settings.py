"""Typed settings, layered: defaults < YAML file < environment (``BOTGRPO_*``) < flags.

Each component declares a pydantic model; :func:`load` fills it from the layers and reports
every bad value at once with the layer it came from, instead of failing deep inside a run.
"""
from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Optional, TypeVar

import yaml
from pydantic import BaseModel, SecretStr, ValidationError


M = TypeVar("M", bound=BaseModel)
ENV_PREFIX = "BOTGRPO_"


class SettingsError(ValueError):
    """Settings that cannot be used, with every problem named."""


def _is_text(annotation: Any) -> bool:
    """A ``str`` or ``SecretStr`` field, Optional or not."""
    if annotation in (str, SecretStr):
        return True
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and all(
        a is type(None) or _is_text(a) for a in typing.get_args(annotation))


def _from_env(model: type[BaseModel], environ: Mapping[str, str]) -> dict[str, Any]:
    """Values for ``model``'s fields from ``BOTGRPO_<FIELD>`` variables (YAML syntax, so
    ``BOTGRPO_KL_COEF=0.1`` is a float and ``BOTGRPO_ESTIMATOR_OPTIONS='{eps: 1e-4}'`` a dict),
    except that a text field takes the value as written: YAML would read an API key ``#k3y``
    as a comment (no key: auth off), ``null`` as none and ``12345`` as a number."""
    values = {}
    for name, info in model.model_fields.items():
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = yaml.safe_load(raw) if raw.strip() and not _is_text(info.annotation) else raw
    return values


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    """A YAML mapping from ``path``, or a SettingsError saying what is wrong with the file."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"settings file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path} must hold a mapping, not {type(data).__name__}")
    return data


def load(model: type[M], yaml_path: Optional[str | os.PathLike] = None, *,
         section: Optional[str] = None, overrides: Optional[Mapping[str, Any]] = None,
         environ: Optional[Mapping[str, str]] = None) -> M:
    """Build ``model`` from defaults < YAML (``section`` of it, if given) < env < ``overrides``.

    ``overrides`` entries that are None are ignored, so unset flags do not mask other layers.
    """
    values: dict[str, Any] = {}
    if yaml_path is not None:
        data = read_yaml(yaml_path)
        values.update(data.get(section, {}) if section else data)
    values.update(_from_env(model, os.environ if environ is None else environ))
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise SettingsError(f"invalid {model.__name__}: {problems}") from None
