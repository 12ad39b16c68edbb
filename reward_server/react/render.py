"""The render and lint checks of the ``react`` scorer: their options, what the sandbox is asked
for, and how their findings enter the reward recipe (:mod:`botgrpo.services.recipe`).

Outcome. At level ``render`` the compile term of ``R = (1 - spec_weight) * C + spec_weight * S`` is

    C = (1 - render_weight) * B + render_weight * V

with ``B`` = +1 if the component builds else -1 and ``V`` = +1 if it renders (no throw, no
invalid element, something visible, the rules of hooks kept) else -1: with the default
``render_weight`` 0.5 a component that builds and renders scores C = 1, one that builds but
throws 0, one that does not build -1. With ``lint: fail`` a lint error fails the verdict
(``V``, or ``C`` itself at the compile levels). Anything the sandbox refuses (a timeout, memory,
runaway recursion, a violation of the sandbox, an output flood) is the lowest reward there is:
``R = -1`` whatever the spec says, and ``l = -1`` on every character.

Spec. At level ``render`` the spec is judged on what the mounted component showed
(:func:`rendered_summary`; ``sandbox/README.md``, "What the spec is judged on"): the named
component is mounted only if the module exports it, and only the host elements surely shown
(CSS, attributes and elements that hide decided from the markup: ``sandbox/README.md``, "What is
shown at render"), their text and the props React received (a handler only as a function)
count. A render that showed nothing (a throw) has no elements and no text, so it fails the spec
as well as the render.
A component whose prop types make props optional is also rendered without them; a throw there
fails the render. Built-in mutation attempts are violations (fatal) even when the component
catches the error.

Local signal. Render failures with a place (the throwing line, the invalid element, each hook
called out of order, the ``return`` of a component that rendered nothing) are diagnostics the
``local`` signal blames like any other finding; an empty render from a component with several
returns has no one place and costs through the outcome only. Lint findings (``lint: signal``
or ``fail``) are ``l = -1`` on each finding's span, at most :data:`MAX_LINT_SPANS` of them,
whether or not the rollout passes. ``lint_engine`` picks the linter (:data:`LINT_ENGINES`):
oxlint (the default, about 4x ESLint's throughput) or ESLint; both report the same rule ids
and spans, except ``react/no-deprecated``, which only ESLint has (``sandbox/README.md``).
"""
from __future__ import annotations

import base64
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from botgrpo.reward_server.scorers.base import SpanScore
from botgrpo.sandbox.node_pool import LINT_ENGINES, LintEngine
from botgrpo.sandbox.results import CompileResult, Diagnostic

MAX_LINT_SPANS = 20
MAX_WRAPPERS = 200
BLAME = -1.0


class RenderOptions(BaseModel):
    """The ``react`` options of the render level, lint and screenshots."""

    render_weight: float = Field(0.5, ge=0, le=1, description="at level render: weight of the render verdict V against "
                                 "the build verdict B in the compile term C = (1 - w) B + w V")
    empty_render: Literal["fail", "allow"] = Field("fail", description="at level render: whether a render that shows "
                                                   "nothing (no visible text, no elements beyond wrappers) fails")
    wrapper_tags: Optional[list[str]] = Field(None, max_length=MAX_WRAPPERS, description="tags that do not count as "
                                              "content when they hold no text (default: div, span, p, section, "
                                              "headings, lists, tables, ...: sandbox/README.md)")
    render_timeout_ms: int = Field(1000, ge=50, le=5000, description="wall-clock limit of one render, effects and timers included")
    lint: Literal["off", "signal", "fail"] = Field("off", description="lint (react, react-hooks rules): off; signal "
                                                   "(findings are local blame); fail (errors also fail the rollout)")
    lint_engine: LintEngine = Field("oxlint", description="the linter of `lint`: " + "; ".join(
        f"{name}: {what}" for name, what in LINT_ENGINES.items()) + " (same rule ids and spans; "
        "react/no-deprecated is ESLint's only)")
    screenshot: bool = Field(False, description="at level render: a PNG of the rendered markup in headless Chromium, "
                             "in details.screenshot_png (base64)")
    screenshot_tailwind: bool = Field(True, description="at level render with screenshot: style the page with the "
                                      "Tailwind v4 CSS its class names compile to (offline, from the sandbox's lockfile)")
    screenshot_width: int = Field(800, ge=200, le=1600, description="screenshot viewport width in CSS pixels")
    screenshot_height: int = Field(600, ge=100, le=2000, description="screenshot viewport height in CSS pixels")
    return_html: bool = Field(False, description="at level render: the server-rendered markup in details.render.html")


def sandbox_render_options(opts: RenderOptions, spec: Any) -> dict[str, Any]:
    """What the sandbox is asked for one rollout (the spec's component and props, if any)."""
    options: dict[str, Any] = {"empty": opts.empty_render, "timeout_ms": opts.render_timeout_ms}
    if opts.wrapper_tags is not None:
        options["wrappers"] = [str(t).lower() for t in opts.wrapper_tags]
    if opts.screenshot and opts.screenshot_tailwind:
        options["tailwind"] = True
    if spec is not None:
        if getattr(spec, "component", None):
            options["component"] = spec.component
        if getattr(spec, "render_props", None):
            options["props"] = spec.render_props
    return options


def styled_page(render: Any) -> str:
    """The markup a screenshot shoots: the render's HTML after its Tailwind stylesheet, if any."""
    return f"<style>{render.css}</style>{render.html}" if render.css else render.html


def rendered_summary(compiled: Optional[CompileResult]) -> Optional[dict[str, Any]]:
    """At level ``render``, what the spec is judged on: the summary (same shape as the static one)
    of what the mounted component showed, i.e. its visible host elements and text and the props
    React received on them (a handler only when it was a function). ``components`` holds the
    mounted component only if the module exports it, so a spec naming an unexported decoy fails;
    a render that showed nothing (a throw, a refused render) has no elements and no text. None
    at the other levels (the static summary is judged there)."""
    if compiled is None or compiled.render is None:
        return None
    rendered = compiled.summary.get("rendered")
    return rendered if isinstance(rendered, dict) else {"components": [], "elements": [], "texts": []}


def sandbox_lint(opts: RenderOptions) -> bool | str:
    """What the sandbox is asked for lint: no lint, or the engine's name."""
    return False if opts.lint == "off" else opts.lint_engine


def lint_errors(compiled: Optional[CompileResult]) -> list[Diagnostic]:
    return [d for d in (compiled.lint if compiled else []) if d.severity == "error"]


def verdicts(level: str, compiled: Optional[CompileResult], opts: RenderOptions) -> tuple[float, bool]:
    """``(C, passed)``: the compile term of the outcome and the verdict (module docstring)."""
    if compiled is None:
        return -1.0, False
    lint_ok = opts.lint != "fail" or not lint_errors(compiled)
    if level != "render":
        passed = compiled.ok and lint_ok
        return (1.0 if passed else -1.0), passed
    render = compiled.render
    built = render is not None and render.status != "not_built" and not (compiled.timed_out or compiled.crashed)
    rendered = compiled.ok and render is not None and render.rendered and lint_ok
    w = opts.render_weight
    return (1 - w) * (1.0 if built else -1.0) + w * (1.0 if rendered else -1.0), rendered


def fatal_reason(compiled: Optional[CompileResult]) -> Optional[str]:
    """The reason a render is scored lowest (a timeout, memory, a violation, ...), if it is."""
    render = compiled.render if compiled else None
    if render is None or not render.fatal:
        return None
    return render.message or f"render {render.status}"


def located(diagnostics: list[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Diagnostics the local signal can place (an empty render has no place)."""
    return tuple(d for d in diagnostics if d.located)


def lint_spans(compiled: Optional[CompileResult], offset: int, opts: RenderOptions) -> list[SpanScore]:
    if opts.lint == "off" or compiled is None:
        return []
    return [SpanScore(offset + d.start, offset + max(d.end, d.start + 1), BLAME) for d in compiled.lint[:MAX_LINT_SPANS]]


def render_details(compiled: Optional[CompileResult], opts: RenderOptions) -> Optional[dict[str, Any]]:
    render = compiled.render if compiled else None
    if render is None:
        return None
    out = {"status": render.status, "message": render.message, "component": render.component,
           "props_from": render.props_from, "text": render.text[:200], "text_chars": render.text_chars,
           "elements": render.elements, "effects": render.effects, "timers": render.timers,
           "effect_errors": render.effect_errors, "violations": render.violations, "ms": render.ms}
    if opts.return_html:
        out["html"] = render.html
    return out


def lint_details(compiled: Optional[CompileResult], offset: int, lines_before: int) -> list[dict[str, Any]]:
    return [{"start": offset + d.start, "end": offset + d.end, "line": d.line + lines_before, "rule": d.rule,
             "severity": d.severity, "message": d.message} for d in (compiled.lint if compiled else [])]


def encode_png(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")
