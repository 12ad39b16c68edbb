"""The ``react`` scorer: does the component compile at the requested level, and does it do
what the prompt asked?

For each completion: extract the code (:mod:`botgrpo.reward_server.react.extract`), compile it in the
sandboxed Node pool (:mod:`botgrpo.sandbox.node_pool`), and answer in the recipe's two channels
(:mod:`botgrpo.services.recipe`):

* **outcome** ``R = (1 - spec_weight) * C + spec_weight * S`` with ``C`` = +1 if it compiles
  else -1 and ``S`` = +1 if the spec check passes else -1 (``R = C`` without a spec);
* **local signal** ``l = -1`` where the blame lies (:mod:`botgrpo.reward_server.react.local`: the first
  parse error's window by default, type errors and refused imports at theirs) and on the parts
  that violate the spec (a wrong component name, an element lacking a prop); a missing element
  has no place and costs through the outcome only. No code, truncated output, a compiler
  timeout or crash: ``l = -1`` everywhere (there is nothing to credit).

``passed`` is the compile verdict; ``details["spec_passed"]`` the spec verdict (None without a
spec). The retired token schemes survive as named ablations (``scheme``): ``window`` (every
diagnostic blamed from the line above, failing text at -0.2: affinely ``local_weight`` 4/3)
and ``uniform`` (``local_weight`` 0).

Level ``render`` executes the component in the sandbox and renders it server-side; ``lint``
adds oxlint's or ESLint's findings (``lint_engine``); ``screenshot`` a PNG from headless
Chromium. How their verdicts enter the outcome (``render_weight``) and their findings the local
signal: :mod:`botgrpo.reward_server.react.render`.
Rendering needs the sandbox's filesystem and network layers: without them a request for it is
refused (422, naming what is missing) unless the operator set ``BOTGRPO_RENDER_UNISOLATED=1``.
"""
from __future__ import annotations

import threading
from typing import Any, ClassVar, Literal, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from botgrpo.reward_server.react import render as rr
from botgrpo.reward_server.react.extract import CodeBlock, extract_code
from botgrpo.reward_server.react.local import BLAME, LOCAL_SIGNALS, CompileOutcome, Window
from botgrpo.reward_server.react.spec import Spec, Violation, check_spec, declares_component
from botgrpo.reward_server.references import ReactReference
from botgrpo.reward_server.scorers.base import Rollout, ScoreResult, SpanScore
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox import libraries, toolchain
from botgrpo.sandbox.node_pool import CompileResult, IsolationConfig, NodePool
from botgrpo.services.recipe import RecipeOptions

PASS, FAIL = 1.0, -1.0
# The retired token schemes as presets of the recipe's options (fields a request sets win).
SCHEMES: dict[str, dict[str, Any]] = {
    "window": {"local": "all_errors", "window_unit": "lines", "window": 1, "local_weight": 4 / 3},
    "uniform": {"local_weight": 0.0},
}


class ReactOptions(RecipeOptions, rr.RenderOptions):
    """Per-request options of the ``react`` scorer."""

    model_config = ConfigDict(extra="forbid")

    level: Literal["syntax", "build", "typecheck", "render"] = Field(
        "build", description="how far to check: compile (syntax, build, typecheck) or build and render")
    spec_weight: float = Field(0.5, ge=0, le=1, description="weight of the spec check in the outcome where a rollout has a spec")
    local: str = Field("first_cause", description=f"local signal, one of {sorted(LOCAL_SIGNALS)}")
    window: int = Field(3, ge=0, le=20, description="how far blame reaches back before a reported error")
    window_unit: Literal["tokens", "lines"] = Field("tokens", description="unit of `window`: the code's lexical tokens or lines")
    scheme: Optional[Literal["window", "uniform"]] = Field(
        None, description="a retired token scheme, as an ablation: presets the fields above")

    @model_validator(mode="before")
    @classmethod
    def _apply_scheme(cls, data: Any) -> Any:
        scheme = data.get("scheme") if isinstance(data, dict) else None
        if isinstance(scheme, str) and scheme in SCHEMES:  # a list or dict is left to the field's 422
            return {**SCHEMES[scheme], **data}
        return data

    @field_validator("local")
    @classmethod
    def _known_signal(cls, name: str) -> str:
        if name not in LOCAL_SIGNALS:
            raise ValueError(f"unknown local signal {name!r}; choose one of {sorted(LOCAL_SIGNALS)}")
        return name

    @model_validator(mode="after")
    def _render_needs_isolation(self) -> "ReactOptions":
        if (self.screenshot or self.return_html) and self.level != "render":
            raise ValueError("screenshot and return_html need level render")
        if self.level == "render":
            reason = iso.render_refusal(iso.detect().layers)
            if reason is not None:
                raise ValueError(reason)
        return self


class ReactScorer:
    """Scores React/TSX completions; see the module docstring."""

    name: ClassVar[str] = "react"
    Options: ClassVar[type[BaseModel]] = ReactOptions
    Reference: ClassVar[type[BaseModel]] = ReactReference  # checked at request time (reward_server.references)
    eval_levels: ClassVar[tuple[str, ...]] = ("syntax", "build", "typecheck")  # `botgrpo eval`'s default

    def __init__(self, pool: Optional[NodePool] = None, *, allow: Optional[Sequence[str]] = None, pool_size: int = 2,
                 timeout_s: float = 5.0, isolation: Optional[IsolationConfig] = None, render_unisolated: bool = False,
                 screenshots: Any = None, screenshot_pool_size: int = 1) -> None:
        self._pool = pool
        self._pool_args = dict(size=pool_size, timeout_s=timeout_s, isolation=isolation,
                               render_unisolated=render_unisolated)
        self._allow = libraries.curated() if allow is None else tuple(allow)
        if pool is None and toolchain.installed(toolchain.node_dir()):  # refused at start-up, not at a render
            libraries.check_installed(self._allow, toolchain.node_dir())
        self._lock = threading.Lock()
        self._screenshots = screenshots
        self._screenshot_args = dict(size=screenshot_pool_size, isolation=isolation)

    @staticmethod
    def settings_kwargs(settings: Any) -> dict[str, Any]:
        """The constructor's arguments from the server's settings (``ServerSettings``)."""
        return {"allow": settings.react_allow, "pool_size": settings.react_pool_size,
                "timeout_s": settings.compile_timeout_s,
                "isolation": IsolationConfig(require=frozenset(settings.sandbox_require))}

    @classmethod
    def from_settings(cls, settings: Any) -> "ReactScorer":
        return cls(**cls.settings_kwargs(settings))

    @staticmethod
    def describe(settings: Any) -> dict[str, Any]:
        """What ``GET /v1/scorers`` says of this scorer beyond its options: the imports it allows."""
        return {"allowed_imports": list(settings.react_allow)}

    def warm_up(self) -> None:
        self.pool  # noqa: B018 - starting the Node pool is the point

    @property
    def pool(self) -> NodePool:
        with self._lock:
            if self._pool is None:
                libraries.check_installed(self._allow, toolchain.ensure())
                self._pool = NodePool(**self._pool_args).start()
            return self._pool

    @property
    def screenshots(self):
        """The Chromium pool, started on the first screenshot."""
        with self._lock:
            if self._screenshots is None:
                from botgrpo.sandbox.screenshot import ScreenshotPool
                self._screenshots = ScreenshotPool(**self._screenshot_args)
            return self._screenshots

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._screenshots is not None:
            self._screenshots.close()

    def healthy(self) -> bool:
        return self._pool is None or self._pool.healthy()

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]:
        opts = options if isinstance(options, ReactOptions) else ReactOptions.model_validate(options)
        blocks = [extract_code(r.completion, r.truncated) for r in rollouts]
        todo = [i for i, b in enumerate(blocks) if b is not None and b.terminated]
        specs = [_spec_of(rollouts[i]) for i in todo]
        render = None
        if opts.level == "render":
            render = [rr.sandbox_render_options(opts, spec if isinstance(spec, Spec) else None) for spec in specs]
        # only a spec reads the summary (_violations, component_declared): without one the worker skips it
        results = self.pool.compile_many([blocks[i].code for i in todo], opts.level, self._allow,
                                         lint=rr.sandbox_lint(opts), render=render,
                                         summary=[isinstance(spec, Spec) for spec in specs])
        compiled = dict(zip(todo, results))
        scored = [self._score_one(r, blocks[i], compiled.get(i), opts) for i, r in enumerate(rollouts)]
        if opts.screenshot and opts.level == "render":
            self._attach_screenshots(scored, [compiled.get(i) for i in range(len(rollouts))], opts)
        return scored

    def _attach_screenshots(self, scored: list[ScoreResult], compiled: list[Optional[CompileResult]],
                            opts: ReactOptions) -> None:
        """details.screenshot_png for every rollout that rendered (an empty render included)."""
        jobs = [(i, rr.styled_page(c.render)) for i, c in enumerate(compiled)
                if c is not None and c.render is not None and c.render.status in ("ok", "empty", "hooks")]
        if not jobs:
            return
        shots = self.screenshots.shoot_many([html for _, html in jobs], opts.screenshot_width, opts.screenshot_height)
        for (i, _), shot in zip(jobs, shots):
            if shot.png is not None:
                scored[i].details["screenshot_png"] = rr.encode_png(shot.png)
            else:
                scored[i].details["screenshot_error"] = shot.error

    def _score_one(self, rollout: Rollout, block: Optional[CodeBlock], compiled: Optional[CompileResult],
                   opts: ReactOptions) -> ScoreResult:
        outcome = _outcome(rollout.completion, block, compiled, opts)
        details = _details(rollout.completion, outcome, block, compiled, opts)
        compile_score, _ = rr.verdicts(opts.level, compiled, opts)
        if outcome.fatal:
            local, local_default = [], BLAME
        elif outcome.passed:
            local, local_default = [], 0.0
        else:
            reference = (rollout.reference or {}).get("code")
            signal = LOCAL_SIGNALS[opts.local]
            local = signal(outcome, Window(opts.window, opts.window_unit), reference if isinstance(reference, str) else None)
            local_default = 0.0
        offset = block.start if block else 0
        if not outcome.fatal and opts.local != "none":
            local = local + rr.lint_spans(compiled, offset, opts)
        spec = _spec_of(rollout)
        if isinstance(spec, str):  # a malformed spec is the data's fault: say so, judge compile only
            details["spec_error"] = spec
            spec = None
        if spec is None:
            details["spec_passed"] = None
            return ScoreResult(FAIL if outcome.fatal else compile_score, outcome.passed, local, local_default, details)
        violations = _violations(spec, block, compiled)
        local = local + [SpanScore(offset + v.span[0], offset + v.span[1], BLAME) for v in violations if v.span]
        w = opts.spec_weight
        # a fatal outcome (no code, truncated, a compiler or render the sandbox stopped) is the lowest there is
        score = FAIL if outcome.fatal else (1 - w) * compile_score + w * (FAIL if violations else PASS)
        details.update(spec_passed=not violations, spec_violations=[v.message for v in violations],
                       component_declared=(declares_component(spec, compiled.summary)
                                           if compiled is not None and compiled.summary else (False if spec.component else None)))
        return ScoreResult(score, outcome.passed, local, local_default, details)


def _outcome(completion: str, block: Optional[CodeBlock], compiled: Optional[CompileResult],
             opts: ReactOptions) -> CompileOutcome:
    if block is None:
        return CompileOutcome(len(completion), fatal="no code in the completion")
    if not block.terminated:
        return CompileOutcome(len(completion), block.start, block.code, fatal="unterminated code block (truncated output)")
    assert compiled is not None
    # a rollout over its compile budget with the cost located (a type-instantiation bomb: the
    # aliases and their uses) is a compile error blamed there, not a sandbox failure of the whole text
    fatal = (None if compiled.budget_blamed else "compiler timed out" if compiled.timed_out
             else "compiler crashed" if compiled.crashed else rr.fatal_reason(compiled))
    _, passed = rr.verdicts(opts.level, compiled, opts)
    diagnostics = rr.located(compiled.diagnostics)
    if opts.lint == "fail" and not compiled.diagnostics:
        diagnostics = tuple(rr.lint_errors(compiled))  # a lint error is then the failure to blame
    return CompileOutcome(len(completion), block.start, block.code, passed=passed and not fatal, fatal=fatal,
                          diagnostics=diagnostics)


def _details(completion: str, outcome: CompileOutcome, block, compiled, opts: ReactOptions) -> dict[str, Any]:
    """Diagnostics located in the completion (offsets and 1-based lines), not in the code."""
    lines_before = completion.count("\n", 0, outcome.code_start)
    reason = outcome.fatal or ("compiles" if outcome.passed else "compile error")
    if compiled is not None and compiled.budget_blamed:
        reason = f"over the compile budget ({compiled.over_budget})"
    if opts.level == "render" and not outcome.fatal and compiled is not None and compiled.render is not None:
        reason = "renders" if outcome.passed else _render_reason(compiled)
    details = {
        "level": opts.level,
        "reason": reason,
        "code_span": [block.start, block.end] if block else None,
        "errors": [{"start": outcome.code_start + d.start, "end": outcome.code_start + d.end, "line": d.line + lines_before,
                    "message": d.message} for d in (compiled.diagnostics if compiled else outcome.diagnostics)],
        "compile_s": compiled.elapsed_s if compiled else 0.0,
    }
    render = rr.render_details(compiled, opts)
    if render is not None:
        details["render"] = render
    if opts.lint != "off":
        details["lint"] = rr.lint_details(compiled, outcome.code_start, lines_before)
    return details


def _render_reason(compiled: CompileResult) -> str:
    status = compiled.render.status if compiled.render else "not_built"
    if status == "not_built":
        return "compile error"
    if status == "ok":  # rendered, but lint failed it
        return "lint error"
    return {"error": "render error", "empty": "empty render", "hooks": "breaks the rules of hooks",
            "no_component": "no component to render"}.get(status, f"render {status}")


def _spec_of(rollout: Rollout) -> Spec | str | None:
    raw = (rollout.reference or {}).get("spec")
    if raw is None:
        return None
    try:
        return Spec.model_validate(raw)
    except ValidationError as exc:
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


def _violations(spec: Spec, block: Optional[CodeBlock], compiled: Optional[CompileResult]) -> list[Violation]:
    if block is None or compiled is None or not compiled.summary:
        return [Violation("the code could not be parsed, so the spec cannot be checked")]
    rendered = rr.rendered_summary(compiled)  # level render: judged on what the component showed
    return check_spec(spec, compiled.summary if rendered is None else rendered)
