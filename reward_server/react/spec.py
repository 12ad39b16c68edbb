"""Prompt adherence: does the component do what the prompt asked?

A compile-only reward is hacked: the policy drops the prompt and emits one component that
always compiles. A :class:`Spec` (from the rollout's ``reference["spec"]``) names what the prompt
asked for; :func:`check_spec` evaluates it on the compiler's structural summary of the parsed
code and says which characters violate it (where a violation has a place).

What counts is what the user would see (docs/rewards.md): the component must be the named one
*and* exported (``export function X``, ``export default X``, ``export { X }``,
``export default memo(X)``), and only the JSX (or React ``createElement`` elements) its live
output reaches counts: its own returns, the locals and helpers they use, and the same-file
components and constants it renders, transitively (the summary's ``owners`` and ``graph``,
built by ``sandbox/node/lib/reach.mjs``). An unexported decoy, an unused constant, a branch a
decidable condition rules out (``if (Math.random() > 2)``, ``switch`` on a constant, state
never set: ``lib/conditions.mjs``) and other components count for nothing. Without a
``component`` the default export is the root (else every exported component). A summary
without ``graph`` (an older worker) is judged the old way, on every JSX node of the file. When
no declaration has the component's name (itself a violation), the rest is judged on the
default export.
"""
from __future__ import annotations

from dataclasses import dataclass
import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_RENDER_PROPS_CHARS = 20_000


class Spec(BaseModel):
    """What the prompt asked for. Every field is optional; an empty spec always passes."""

    model_config = ConfigDict(extra="forbid")

    component: Optional[str] = Field(None, description="name of the component to declare")
    elements: list[str] = Field(default_factory=list, description="JSX tags that must appear, e.g. ['button', 'ul']")
    text: list[str] = Field(default_factory=list, description="text that must appear in JSX text or string literals")
    props: dict[str, list[str]] = Field(default_factory=dict, description="tag -> prop names it must receive")
    render_props: dict[str, Any] = Field(default_factory=dict, description="props to render the component with at "
                                         "level render (JSON; {\"$fn\": name} is a function that does nothing), "
                                         "over the defaults the sandbox infers from the prop types")

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        """Columnar datasets (Arrow and Parquet: Hugging Face ``datasets``, verl's files) give every
        row every key of every other row, null where it had none: a null field, or a null entry of
        ``props``, is a requirement the row does not make (a wrong type is still refused)."""
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if v is not None}
        if isinstance(data.get("props"), dict):
            data["props"] = {tag: names for tag, names in data["props"].items() if names is not None}
        return data

    @field_validator("render_props")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(value)) > MAX_RENDER_PROPS_CHARS:
            raise ValueError(f"render_props is over {MAX_RENDER_PROPS_CHARS} characters of JSON")
        return value


@dataclass(frozen=True)
class Violation:
    """One unmet requirement; ``span`` is where it shows in the code, if anywhere."""

    message: str
    span: tuple[int, int] | None = None


def _reachable(roots: set[str], graph: dict[str, Any]) -> set[str]:
    """Every top-level name the output of ``roots`` uses, transitively (roots included)."""
    seen, todo = set(roots), list(roots)
    while todo:
        for used in graph.get(todo.pop()) or []:
            if isinstance(used, str) and used not in seen:
                seen.add(used)
                todo.append(used)
    return seen


def _roots(spec: Spec, summary: dict[str, Any], graph: dict[str, Any]) -> set[str]:
    """The named component; else (or when no declaration has that name, which is a violation of
    its own) the default export, else every exported component."""
    if spec.component and spec.component in graph:
        return {spec.component}
    if summary.get("default_export"):
        return {"default"}
    return {c["name"] for c in summary.get("components") or [] if c.get("exported") and c.get("name")}


def _is_exported(name: str, summary: dict[str, Any]) -> bool:
    default = summary.get("default_export") or {}
    return default.get("name") == name or any(c.get("name") == name and c.get("exported")
                                              for c in summary.get("components") or [])


def shown(spec: Spec, summary: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The summary's elements and texts the spec is judged on: those the root's output reaches."""
    elements = summary.get("elements") or []
    texts = summary.get("texts") or []
    graph = summary.get("graph")
    if not isinstance(graph, dict):
        return elements, texts
    live = _reachable(_roots(spec, summary, graph), graph)

    def keep(entry: dict[str, Any]) -> bool:
        return any(owner in live for owner in entry.get("owners") or [])

    return [e for e in elements if keep(e)], [t for t in texts if keep(t)]


def declares_component(spec: Spec, summary: dict[str, Any]) -> bool | None:
    """Whether the code declares the spec's component under its name and exports it (None: the
    spec names none). What "compiles and declares the named component" counts: a compiling
    fragment or a component under another name is not the task done, whatever it compiles to."""
    if not spec.component:
        return None
    declared = any(c.get("name") == spec.component for c in summary.get("components") or [])
    return declared and _is_exported(spec.component, summary)


def check_spec(spec: Spec, summary: dict[str, Any]) -> list[Violation]:
    """All violations of ``spec`` by the code whose summary (see ``sandbox/README.md``) is given."""
    components = summary.get("components") or []
    elements, shown_texts = shown(spec, summary)
    texts = [t.get("text", "") for t in shown_texts]
    out: list[Violation] = []
    named = [c for c in components if c.get("name") == spec.component] if spec.component else []
    if spec.component and not named:
        wrong = [c for c in components if c.get("name")]
        message = f"expected a component named {spec.component!r}, found {[c['name'] for c in wrong] or 'none'}"
        out += [Violation(message, (c["start"], c["end"])) for c in wrong] or [Violation(message)]
    elif spec.component and "graph" in summary and not _is_exported(spec.component, summary):
        message = f"component {spec.component!r} is not exported (export it, or export default it)"
        out += [Violation(message, (c["start"], c["end"])) for c in named]
    tags = {e.get("tag") for e in elements}
    out += [Violation(f"missing element <{tag}>") for tag in spec.elements if tag not in tags]
    out += [Violation(f"missing text {needle!r}") for needle in spec.text if not any(needle in t for t in texts)]
    for tag, required in spec.props.items():
        carriers = [e for e in elements if e.get("tag") == tag]
        for prop in required:
            if carriers and not any(prop == p.get("name") for e in carriers for p in e.get("props") or []):
                out += [Violation(f"<{tag}> lacks prop {prop!r}", (e["start"], e["end"])) for e in carriers]
            elif not carriers:
                out.append(Violation(f"missing element <{tag}> with prop {prop!r}"))
    return out
