"""Prompt adherence: does the component do what the prompt asked?

A compile-only reward is hacked: the policy drops the prompt and emits one component that
always compiles. A :class:`Spec` (from the rollout's ``reference["spec"]``) names what the prompt
asked for; :func:`check_spec` evaluates it on the compiler's structural summary of the parsed
code and says which characters violate it (where a violation has a place).
"""
from __future__ import annotations

from dataclasses import dataclass
import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

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


def check_spec(spec: Spec, summary: dict[str, Any]) -> list[Violation]:
    """All violations of ``spec`` by the code whose summary (see ``sandbox/README.md``) is given."""
    components = summary.get("components") or []
    elements = summary.get("elements") or []
    texts = [t.get("text", "") for t in summary.get("texts") or []]
    out: list[Violation] = []
    if spec.component and not any(c.get("name") == spec.component for c in components):
        wrong = [c for c in components if c.get("name")]
        message = f"expected a component named {spec.component!r}, found {[c['name'] for c in wrong] or 'none'}"
        out += [Violation(message, (c["start"], c["end"])) for c in wrong] or [Violation(message)]
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
