"""Settings of the reward server and its workers (defaults < YAML < ``BOTGRPO_*`` env < flags)."""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from botgrpo.sandbox.libraries import curated as curated_libraries
from botgrpo.services.settings import load

AUTO = "auto"
# what `sandbox_require: auto` requires where the host can provide it (bubblewrap, unshare)
AUTO_LAYERS = ("no_network", "fs_view", "drop_privileges")


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(8000, ge=0, le=65535, description="port to listen on (0: any free port)")
    redis_url: Optional[str] = Field(None, description="Redis for the rollout queue (also read from REDIS_URL); "
                                                       "unset: in-process queue and workers")
    api_key: Optional[SecretStr] = Field(None, description="require `Authorization: Bearer <key>` on /v1/*")
    bounds: tuple[float, float] = Field((-1.0, 1.0), description="every score is clipped into [low, high]")
    max_request_bytes: int = Field(16 << 20, gt=0, description="largest request body accepted (413 above)")
    body_timeout_s: float = Field(30.0, gt=0, description="time a client has to send the whole request body "
                                                          "(408 and the connection closed after it)")
    max_rollouts: int = Field(1024, gt=0, description="most rollouts in one request (413 above)")
    max_completion_chars: int = Field(200_000, gt=0, description="longest completion accepted (413 above)")
    max_tokens: int = Field(65_536, gt=0, description="most token_offsets for one rollout (413 above)")
    max_request_tokens: int = Field(4_194_304, gt=0, description="most tokens in one request over all rollouts: "
                                    "their token_offsets, or the server's own split where omitted (413 above)")
    queue_max_depth: int = Field(10_000, gt=0, description="unfinished rollouts above which requests get 503")
    result_timeout_s: float = Field(300.0, gt=0, description="a rollout not scored by then gets an error result")
    max_unsent_tokens: int = Field(262_144, gt=0, description="per request (in-process queue): tokens of results "
                                   "scored but not yet sent above which the request's scoring pauses until its "
                                   "client reads (a client that does not read costs no more memory or CPU)")
    send_timeout_s: float = Field(60.0, gt=0, description="time a client has to accept each chunk of its response; "
                                  "a client that stops reading longer is disconnected and its rollouts dropped")
    workers: int = Field(2, ge=1, description="in-process scoring tasks (embedded mode)")
    score_batch: int = Field(8, ge=1, description="rollouts a worker scores at once: smaller gives earlier "
                                                  "streamed results, larger better compiler batching")
    score_chunk_s: float = Field(0.5, gt=0, description="seconds of work a worker takes from one request at once "
                                 "(in-process queue and `botgrpo worker`): slow rollouts go one at a time, so "
                                 "another client waits for about one rollout, not a batch (see services/queue/fair.py)")
    react_pool_size: int = Field(2, ge=1, description="Node compiler workers per process")
    react_allow: list[str] = Field(default_factory=lambda: list(curated_libraries()),
                                   description="bare imports a React component may use besides react/react-dom: the "
                                   "curated UI libraries pinned in the sandbox's lockfile by default (docs/rewards.md); "
                                   "[] allows React only, `pkg/*` plain subpaths; each must be installed in the sandbox "
                                   "(checked at start-up)")
    sandbox_require: list[str] = Field(default_factory=lambda: [AUTO], description="isolation layers the compiler "
                                       "sandbox must have or refuse to start, e.g. [no_network, fs_view] (see "
                                       "sandbox/README.md); `auto`: no_network, fs_view and drop_privileges where this "
                                       "host supports them, a loud warning at start-up where it does not; [] requires "
                                       "nothing (every available layer is still used)")
    compile_timeout_s: float = Field(10.0, gt=0, description="limit of one compile (wall clock); its tsgo and oxlint runs get 0.45 x this in CPU time")
    model_path: Optional[str] = Field(None, description="local checkpoint of a token reward model; enables task 'model'")
    model_max_batch: int = Field(32, ge=1, description="completions per forward pass of the reward model")
    model_device: str = Field("cpu", description="device of the reward model, e.g. cuda:0")
    warm_scorers: bool = Field(True, description="start scorer pools at startup rather than on first request")
    inspector: bool = Field(True, description="serve the reward inspector page at /inspector: the last scored "
                            "rollouts token by token, behind api_key (docs/deployment.md); false: no page, nothing kept")
    inspector_rollouts: int = Field(50, ge=1, le=1000, description="scored rollouts the inspector keeps in memory, "
                                    "each cut to its first 4000 characters and 2000 tokens (0.5 MB at most)")

    @field_validator("api_key")
    @classmethod
    def _key_can_be_sent(cls, key: Optional[SecretStr]) -> Optional[SecretStr]:
        """A key is visible ASCII: anything else can never arrive intact in an HTTP header (its
        bytes are read as Latin-1) nor in aiohttp's Basic auth, so it could never authenticate."""
        bad = next(((i, c) for i, c in enumerate(key.get_secret_value()) if not "!" <= c <= "~"), None) if key else None
        if bad is not None:
            i, c = bad
            kind = "a space" if c == " " else "a control character" if c.isascii() else "a non-ASCII character"
            raise ValueError(f"api_key has {kind} at position {i}: a key must be visible ASCII (33-126) to be sent in "
                             f"an HTTP header; e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'")
        return key

    @field_validator("sandbox_require", mode="before")
    @classmethod
    def _one_layer_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # BOTGRPO_SANDBOX_REQUIRE=auto

    @model_validator(mode="after")
    def _check(self) -> "ServerSettings":
        low, high = self.bounds
        if not low < high:
            raise ValueError(f"bounds must be [low, high] with low < high, got {list(self.bounds)}")
        from botgrpo.sandbox.isolation import ALL_LAYERS, detect
        rest = [layer for layer in self.sandbox_require if layer != AUTO]
        unknown = sorted(set(rest) - set(ALL_LAYERS))
        if unknown:
            raise ValueError(f"unknown isolation layer(s) in sandbox_require: {unknown}; known: {list(ALL_LAYERS)} "
                             f"or {AUTO!r}")
        if AUTO in self.sandbox_require:
            available = detect().layers
            self.sandbox_require = rest + [layer for layer in AUTO_LAYERS if layer in available and layer not in rest]
        return self


def load_server_settings(yaml_path=None, overrides: Optional[Mapping[str, Any]] = None,
                         environ: Optional[Mapping[str, str]] = None) -> ServerSettings:
    """:func:`botgrpo.services.settings.load` for the server, plus the conventional ``REDIS_URL``
    (used when ``BOTGRPO_REDIS_URL`` and ``--redis-url`` are both absent)."""
    env = dict(os.environ if environ is None else environ)
    if "BOTGRPO_REDIS_URL" not in env and env.get("REDIS_URL"):
        env["BOTGRPO_REDIS_URL"] = env["REDIS_URL"]
    return load(ServerSettings, yaml_path, section="server", overrides=overrides, environ=env)


def isolation_report(settings: ServerSettings) -> dict[str, Any]:
    """The compiler sandbox's isolation on this host under ``settings`` (for /readyz and the
    start-up log): ``active`` layers (what :meth:`botgrpo.sandbox.node_pool.NodePool.active_layers`
    returns for the same configuration), ``missing`` ones (every known layer not active),
    ``required`` ones, a ``hint`` saying what the missing ones leave open and what gives them
    (:func:`botgrpo.sandbox.isolation.missing_hint`), and ``error`` when a required layer is
    unavailable (the compiler pool then refuses to start)."""
    from botgrpo.sandbox import isolation as iso

    config = iso.IsolationConfig(require=frozenset(settings.sandbox_require))
    host = iso.detect()
    error = None
    try:
        active = iso.resolve_layers(config, host)
    except iso.IsolationUnavailable as exc:
        active, error = frozenset(host.layers - config.disable), str(exc)
    missing = [layer for layer in iso.ALL_LAYERS if layer not in active]
    hint, how = None, iso.missing_hint(missing, host)
    if how and {iso.FS_VIEW, iso.DROP_PRIVILEGES} & set(missing):
        user = "root" if hasattr(os, "geteuid") and os.geteuid() == 0 else "this server's user"
        hint = f"without bubblewrap's layers the compilers run as {user} and see the whole host filesystem; {how}"
    elif how:
        hint = f"the compilers can reach the network; {how}"
    return {"active": [layer for layer in iso.ALL_LAYERS if layer in active], "missing": missing,
            "required": sorted(config.require, key=iso.ALL_LAYERS.index), "hint": hint, "error": error}
