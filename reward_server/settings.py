"""Settings of the reward server and its workers (defaults < YAML < ``BOTGRPO_*`` env < flags)."""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from botgrpo.settings import load


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8000, ge=0, le=65535, description="port to listen on (0: any free port)")
    redis_url: Optional[str] = Field(None, description="Redis for the rollout queue (also read from REDIS_URL); "
                                                       "unset: in-process queue and workers")
    api_key: Optional[SecretStr] = Field(None, description="require `Authorization: Bearer <key>` on /v1/*")
    bounds: tuple[float, float] = Field((-1.0, 1.0), description="every score is clipped into [low, high]")
    max_request_bytes: int = Field(16 << 20, gt=0, description="largest request body accepted (413 above)")
    max_rollouts: int = Field(1024, gt=0, description="most rollouts in one request (413 above)")
    max_completion_chars: int = Field(200_000, gt=0, description="longest completion accepted (413 above)")
    max_tokens: int = Field(65_536, gt=0, description="most token_offsets for one rollout (413 above)")
    queue_max_depth: int = Field(10_000, gt=0, description="unfinished rollouts above which requests get 503")
    result_timeout_s: float = Field(300.0, gt=0, description="a rollout not scored by then gets an error result")
    workers: int = Field(2, ge=1, description="in-process scoring tasks (embedded mode)")
    score_batch: int = Field(8, ge=1, description="rollouts a worker scores at once: smaller gives earlier "
                                                  "streamed results, larger better compiler batching")
    react_pool_size: int = Field(2, ge=1, description="Node compiler workers per process")
    react_allow: list[str] = Field(default_factory=list, description="bare imports allowed besides react/react-dom")
    sandbox_require: list[str] = Field(default_factory=list, description="isolation layers the compiler sandbox must "
                                       "have or refuse to start, e.g. [no_network, fs_view] (see sandbox/README.md)")
    compile_timeout_s: float = Field(10.0, gt=0, description="wall-clock limit of one compile")
    model_path: Optional[str] = Field(None, description="local checkpoint of a token reward model; enables task 'model'")
    model_max_batch: int = Field(32, ge=1, description="completions per forward pass of the reward model")
    model_device: str = Field("cpu", description="device of the reward model, e.g. cuda:0")
    warm_scorers: bool = Field(True, description="start scorer pools at startup rather than on first request")

    @model_validator(mode="after")
    def _check(self) -> "ServerSettings":
        low, high = self.bounds
        if not low < high:
            raise ValueError(f"bounds must be [low, high] with low < high, got {list(self.bounds)}")
        return self


def load_server_settings(yaml_path=None, overrides: Optional[Mapping[str, Any]] = None,
                         environ: Optional[Mapping[str, str]] = None) -> ServerSettings:
    """:func:`botgrpo.settings.load` for the server, plus the conventional ``REDIS_URL``
    (used when ``BOTGRPO_REDIS_URL`` and ``--redis-url`` are both absent)."""
    env = dict(os.environ if environ is None else environ)
    if "BOTGRPO_REDIS_URL" not in env and env.get("REDIS_URL"):
        env["BOTGRPO_REDIS_URL"] = env["REDIS_URL"]
    return load(ServerSettings, yaml_path, section="server", overrides=overrides, environ=env)
