"""Realistic mistakes in React completions, each failing in one known way.

Every corruption takes a correct example and returns a broken completion. Its ``fails`` says
how the ``react`` scorer must judge the result:

* ``"build"``: does not compile at ``build`` (syntax error, disallowed import, truncation);
* ``"spec"``: compiles, but misses the prompt's spec (wrong name, missing element or text);
* ``"typecheck"``: compiles at ``build`` and meets the spec, fails only at ``typecheck``
  (esbuild does not resolve names, so an undeclared variable slips through ``build``).

The tests check each promise against the real scorer. The mistakes are the ones small models
make: a tag left open, a closing bracket dropped, an attribute glued to text, a package the
sandbox forbids, a generic component name, output cut off by the token limit.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

if TYPE_CHECKING:
    from botgrpo.trainer.tasks.react import ReactExample

FENCE = "```"
GENERIC_NAMES = ["App", "MyComponent", "Component", "Main", "Widget"]
# (import, a line using it): TypeScript elides unused imports, so a forbidden one must be used.
FORBIDDEN_IMPORTS = [
    ('import _ from "lodash";', "  const sorted = _.sortBy([3, 1, 2]);"),
    ('import axios from "axios";', '  const request = axios.get("/api");'),
    ('import moment from "moment";', '  const today = moment().format("LL");'),
    ('import clsx from "classnames";', '  const classes = clsx("card", "active");'),
    ('import "./styles.css";', None),
]
UNDECLARED_USES = ["props.title", "title.toUpperCase()", "items.length", "user.name", "data[0]"]
FILLER_WORDS = ["Foo", "Item", "Text", "Button", "Title", "Label"]


@dataclass(frozen=True)
class Corruption:
    """A named mistake: ``apply(code, spec, rng)`` returns broken code (or, for truncation,
    a broken completion), ``fails`` how the scorer must judge it (see the module docstring)."""

    name: str
    fails: Literal["build", "spec", "typecheck"]
    apply: Callable[[str, dict, random.Random], str]
    whole_completion: bool = False  # apply to the fenced completion, not the code


def _unclosed_tag(code: str, spec: dict, rng: random.Random) -> str:
    """Drop one inner closing tag: ``<p>{count}</p>`` -> ``<p>{count}``."""
    closings = list(re.finditer(r"</[a-z0-9]+>", code))[:-1]  # keep the wrapper's: the error stays inside
    match = rng.choice(closings)
    return code[:match.start()] + code[match.end():]


def _missing_close(code: str, spec: dict, rng: random.Random) -> str:
    """Drop the ``)`` closing ``return (`` or the ``}`` closing the function."""
    if rng.random() < 0.5:
        return code.replace("\n  );\n", "\n  ;\n", 1)
    head, _, _ = code.rstrip().rpartition("}")
    return head.rstrip() + "\n"


def _glued_attribute(code: str, spec: dict, rng: random.Random) -> str:
    """Drop the ``>`` after a string attribute, gluing what follows to it:
    ``<a href="/help">Back</a>`` -> ``<a href="/help"Back</a>``."""
    match = rng.choice(list(re.finditer(r'="[^"]*">', code)))
    return code[:match.end() - 1] + code[match.end():]


def _undeclared_variable(code: str, spec: dict, rng: random.Random) -> str:
    """Read a name nobody declared; ``build`` cannot tell, ``typecheck`` can."""
    return _after_header(code, spec, f"  const label = {rng.choice(UNDECLARED_USES)};")


def _disallowed_import(code: str, spec: dict, rng: random.Random) -> str:
    """Import and use a module the sandbox does not allow (only ``react`` is)."""
    statement, use = rng.choice(FORBIDDEN_IMPORTS)
    if use is not None:
        code = _after_header(code, spec, use)
    return statement + "\n" + code


def _after_header(code: str, spec: dict, line: str) -> str:
    """``code`` with ``line`` inserted as the first statement of the component."""
    header = f"export function {spec['component']}() {{\n"
    return code.replace(header, header + line + "\n", 1)


def _wrong_name(code: str, spec: dict, rng: random.Random) -> str:
    """Declare a generic name instead of the one the prompt asked for."""
    return code.replace(f"function {spec['component']}(", f"function {rng.choice(GENERIC_NAMES)}(", 1)


def _missing_element(code: str, spec: dict, rng: random.Random) -> str:
    """Render one required tag as another tag; the code still compiles at ``build``."""
    tag = rng.choice(spec["elements"])
    substitute = next(t for t in ("div", "span", "p", "section") if t != tag and t not in spec["elements"])
    code = re.sub(rf"<{tag}(?=[\s>/])", f"<{substitute}", code)
    return code.replace(f"</{tag}>", f"</{substitute}>")


def _wrong_text(code: str, spec: dict, rng: random.Random) -> str:
    """Write another text than the one the prompt asked for."""
    wanted = spec["text"][0]
    return code.replace(f">{wanted}<", f">{rng.choice([w for w in FILLER_WORDS if w != wanted])}<")


def _truncated(completion: str, spec: dict, rng: random.Random) -> str:
    """Cut the output off inside the code block, as a token limit does."""
    body = completion.index("\n") + 1
    cut = rng.randint(body + (len(completion) - body) // 4, len(completion) - len(FENCE) - 2)
    return completion[:cut]


CORRUPTIONS: dict[str, Corruption] = {c.name: c for c in [
    Corruption("unclosed_tag", "build", _unclosed_tag),
    Corruption("missing_close", "build", _missing_close),
    Corruption("glued_attribute", "build", _glued_attribute),
    Corruption("disallowed_import", "build", _disallowed_import),
    Corruption("truncated", "build", _truncated, whole_completion=True),
    Corruption("wrong_name", "spec", _wrong_name),
    Corruption("missing_element", "spec", _missing_element),
    Corruption("wrong_text", "spec", _wrong_text),
    Corruption("undeclared_variable", "typecheck", _undeclared_variable),
]}

# The warm-start mix: mostly compile failures (the RL target), some spec misses (the adherence
# term), a few typecheck-only ones (invisible at ``build``: realistic noise).
SFT_MIX: dict[str, float] = {
    "unclosed_tag": 1.0, "missing_close": 1.0, "glued_attribute": 1.0, "disallowed_import": 1.0,
    "truncated": 0.5, "wrong_name": 0.5, "missing_element": 0.5, "wrong_text": 0.5, "undeclared_variable": 0.5,
}


def corrupt(kind: str, example: "ReactExample", rng: random.Random) -> str:
    """The completion of ``example`` with the mistake ``kind``."""
    corruption = CORRUPTIONS[kind]
    spec = example.task.reference["spec"]
    if corruption.whole_completion:
        return corruption.apply(example.completion, spec, rng)
    return FENCE + "tsx\n" + corruption.apply(example.component.code, spec, rng) + FENCE
