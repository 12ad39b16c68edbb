"""BoT-GRPO: token-level reward RL for LLM reasoning.

The public API, imported on first use (``import botgrpo`` itself loads neither torch nor the
server)::

    from botgrpo import compute_advantages, RewardClient, AsyncRewardClient, TrainConfig, Trainer

``__version__`` is the one version string: the package metadata, the server's OpenAPI document
and the deploy manifests' image tags read it (``tests/test_deploy_*.py`` check the manifests).
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "compute_advantages": "botgrpo.trainer.algo.advantages",
    "ESTIMATORS": "botgrpo.trainer.algo.advantages",
    "POLICY_LOSSES": "botgrpo.trainer.algo.losses",
    "KL_ESTIMATORS": "botgrpo.trainer.algo.losses",
    "aggregate": "botgrpo.trainer.algo.losses",
    "PRESETS": "botgrpo.trainer.algo.presets",
    "preset": "botgrpo.trainer.algo.presets",
    "TrainConfig": "botgrpo.trainer.config",
    "Trainer": "botgrpo.trainer.run.loop",
    "RewardClient": "botgrpo.services.client",
    "AsyncRewardClient": "botgrpo.services.client",
    "create_app": "botgrpo.reward_server.app",
    "ServerSettings": "botgrpo.reward_server.settings",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    try:
        module = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'botgrpo' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
