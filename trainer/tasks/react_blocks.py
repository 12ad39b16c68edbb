"""Long React components assembled from blocks: the hard setting of the convergence study.

A component holds several blocks (a counter, a list, a form, ...) inside one wrapper, 15-30
lines of code, and the prompt names the blocks, so the structure of the answer is fixed and the
reference component is the unique correct one up to free choices the prompt leaves open (class
names, numbers, list nouns, link paths, the words not asked for)::

    Write a React component named Timer with a counter, a list and a link that renders a <ul>
    and a <button> with text "Add".

    import { useState } from "react";

    export function Timer() {
      const [count, setCount] = useState(3);
      const items = ["plum", "fig", "kiwi"];
      return (
        <div className="card">
          <p>{count}</p>
          <button onClick={() => setCount(count + 2)}>Add</button>
          <ul>
            {items.map((item) => (
              <li key={item}>{item}</li>
            ))}
          </ul>
          <a href="/help">Next</a>
        </div>
      );
    }

Why long components: token-level credit should pay where one local mistake sits among many
right tokens; in an 8-line component most tokens are near any mistake anyway. Every block is
``typecheck``-clean and uses a distinct state variable, so a corruption is the only reason a
component fails. The first JSX text is the one a prompt names (as in :mod:`.react_templates`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from botgrpo.trainer.tasks.react_templates import CLASS_NAMES, NOUNS, PATHS, Component


@dataclass(frozen=True)
class Part:
    """What one block contributes: statements before ``return``, JSX lines, and its inventory
    (``texts`` in the order they appear in the JSX)."""

    setup: tuple[str, ...]
    jsx: tuple[str, ...]
    elements: tuple[str, ...]
    texts: tuple[str, ...]
    props: dict[str, tuple[str, ...]] = field(default_factory=dict)
    uses_state: bool = False


Block = Callable[[random.Random, list[str]], Part]


def _counter(rng: random.Random, words: list[str]) -> Part:
    label = words.pop()
    return Part((f"const [count, setCount] = useState({rng.randint(0, 9)});",),
                ("<p>{count}</p>", f"<button onClick={{() => setCount(count + {rng.randint(1, 5)})}}>{label}</button>"),
                ("p", "button"), (label,), {"button": ("onClick",)}, uses_state=True)


def _toggle(rng: random.Random, words: list[str]) -> Part:
    shown = rng.choice(["span", "em"])
    label, detail = words.pop(), words.pop()
    return Part(("const [open, setOpen] = useState(false);",),
                (f"<button onClick={{() => setOpen(!open)}}>{label}</button>", f"{{open && <{shown}>{detail}</{shown}>}}"),
                ("button", shown), (label, detail), {"button": ("onClick",)}, uses_state=True)


def _list(rng: random.Random, words: list[str]) -> Part:
    items = ", ".join(f'"{noun}"' for noun in rng.sample(NOUNS, 3))
    return Part((f"const items = [{items}];",),
                ("<ul>", "  {items.map((item) => (", "    <li key={item}>{item}</li>", "  ))}", "</ul>"),
                ("ul", "li"), ())


def _form(rng: random.Random, words: list[str]) -> Part:
    label = words.pop()
    return Part(('const [value, setValue] = useState("");',),
                (f"<label>{label}</label>", "<input value={value} onChange={(e) => setValue(e.target.value)} />"),
                ("label", "input"), (label,), {"input": ("value", "onChange")}, uses_state=True)


def _link(rng: random.Random, words: list[str]) -> Part:
    text = words.pop()
    return Part((), (f'<a href="{rng.choice(PATHS)}">{text}</a>',), ("a",), (text,), {"a": ("href",)})


def _heading(rng: random.Random, words: list[str]) -> Part:
    tag, text = rng.choice(["h1", "h2", "h3"]), words.pop()
    return Part((), (f"<{tag}>{text}</{tag}>",), (tag,), (text,))


def _image(rng: random.Random, words: list[str]) -> Part:
    noun = rng.choice(NOUNS)
    return Part((), (f'<img src="/{noun}.png" alt="{noun}" />',), ("img",), (), {"img": ("src", "alt")})


BLOCKS: dict[str, Block] = {"counter": _counter, "toggle": _toggle, "list": _list, "form": _form,
                            "link": _link, "heading": _heading, "image": _image}
_NEEDS_TEXT = ("counter", "toggle", "form", "link", "heading")


def assemble(rng: random.Random, name: str, blocks: list[str], words: list[str]) -> Component:
    """The component ``name`` holding ``blocks`` in order (``words`` feed their texts)."""
    pool = list(reversed(words))
    parts = [BLOCKS[b](rng, pool) for b in blocks]
    wrapper = rng.choice(["div", "section", "main"])
    lines = ['import { useState } from "react";', ""] if any(p.uses_state for p in parts) else []
    lines.append(f"export function {name}() {{")
    lines += [f"  {s}" for p in parts for s in p.setup]
    lines += ["  return (", f'    <{wrapper} className="{rng.choice(CLASS_NAMES)}">']
    lines += [f"      {j}" for p in parts for j in p.jsx]
    lines += [f"    </{wrapper}>", "  );", "}", ""]
    props: dict[str, tuple[str, ...]] = {wrapper: ("className",)}
    for p in parts:
        for tag, names in p.props.items():
            props[tag] = tuple(dict.fromkeys(props.get(tag, ()) + names))
    texts = tuple(t for p in parts for t in p.texts)
    return Component("\n".join(lines), (wrapper,) + tuple(e for p in parts for e in p.elements), texts, props)


def draw_blocks(rng: random.Random, low: int = 3, high: int = 4) -> list[str]:
    """``low``-``high`` distinct blocks, at least one of them with a text to ask for."""
    while True:
        blocks = rng.sample(sorted(BLOCKS), rng.randint(low, high))
        if any(b in _NEEDS_TEXT for b in blocks):
            return blocks


def listing(blocks: list[str]) -> str:
    """``a counter, a list and a link``."""
    named = [f"a {b}" if b[0] not in "aeiou" else f"an {b}" for b in blocks]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
