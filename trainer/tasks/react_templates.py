"""Correct React function components, rendered from a handful of templates with variation.

A template returns a :class:`Component`: the code plus what it provably contains (the JSX tags,
the JSX texts, the props of each tag). The prompt generator picks its spec *from* that
inventory, so every spec is satisfiable by its own reference code by construction. Every
template stays within what ``build`` accepts (imports from ``react`` only) and is also
``typecheck``-clean, so a corruption is the only reason a variant fails.

The text a prompt names (``texts[0]``) is always the first JSX text of the code: one rule for
where to copy it, which a tiny policy learns far sooner than a rule per template.

Templates are multi-line (8-15 lines of code) so that a compile error sits on one line among
several and token-level blame has something to point at.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

CLASS_NAMES = ["card", "panel", "box", "row", "stack", "header", "footer", "item", "main", "wrapper"]
PATHS = ["/home", "/about", "/help", "/docs", "/profile", "/settings", "/blog", "/contact"]
NOUNS = ["apple", "pear", "plum", "kiwi", "lime", "fig", "cherry", "grape", "melon", "peach"]


@dataclass(frozen=True)
class Component:
    """A rendered component: ``code`` declares ``export function <name>`` and contains exactly
    ``elements`` (tag names), ``texts`` (JSX texts; ``texts[0]`` is the one a prompt names)
    and ``props`` (tag -> props given to it)."""

    code: str
    elements: tuple[str, ...]
    texts: tuple[str, ...]
    props: dict[str, tuple[str, ...]] = field(default_factory=dict)


Template = Callable[[random.Random, str, list[str]], Component]


def _counter(rng: random.Random, name: str, words: list[str]) -> Component:
    wrapper = rng.choice(["div", "section"])
    label = rng.choice(["p", "span"])
    step = rng.randint(1, 5)
    code = f"""import {{ useState }} from "react";

export function {name}() {{
  const [count, setCount] = useState({rng.randint(0, 9)});
  return (
    <{wrapper} className="{rng.choice(CLASS_NAMES)}">
      <{label}>{{count}}</{label}>
      <button onClick={{() => setCount(count + {step})}}>{words[0]}</button>
    </{wrapper}>
  );
}}
"""
    return Component(code, (wrapper, label, "button"), (words[0],),
                     {wrapper: ("className",), "button": ("onClick",)})


def _toggle(rng: random.Random, name: str, words: list[str]) -> Component:
    wrapper = rng.choice(["div", "section"])
    shown = rng.choice(["p", "span"])
    code = f"""import {{ useState }} from "react";

export function {name}() {{
  const [open, setOpen] = useState(false);
  return (
    <{wrapper} className="{rng.choice(CLASS_NAMES)}">
      <button onClick={{() => setOpen(!open)}}>{words[0]}</button>
      {{open && <{shown}>{words[1]}</{shown}>}}
    </{wrapper}>
  );
}}
"""
    return Component(code, (wrapper, "button", shown), (words[0], words[1]),
                     {wrapper: ("className",), "button": ("onClick",)})


def _list(rng: random.Random, name: str, words: list[str]) -> Component:
    heading = rng.choice(["h1", "h2"])
    items = ", ".join(f'"{noun}"' for noun in rng.sample(NOUNS, 3))
    code = f"""export function {name}() {{
  const items = [{items}];
  return (
    <section className="{rng.choice(CLASS_NAMES)}">
      <{heading}>{words[0]}</{heading}>
      <ul>
        {{items.map((item) => (
          <li key={{item}}>{{item}}</li>
        ))}}
      </ul>
    </section>
  );
}}
"""
    return Component(code, ("section", heading, "ul", "li"), (words[0],),
                     {"section": ("className",)})


def _form(rng: random.Random, name: str, words: list[str]) -> Component:
    code = f"""import {{ useState }} from "react";

export function {name}() {{
  const [value, setValue] = useState("");
  return (
    <form className="{rng.choice(CLASS_NAMES)}">
      <label>{words[0]}</label>
      <input value={{value}} onChange={{(e) => setValue(e.target.value)}} />
      <button type="submit">{words[1]}</button>
    </form>
  );
}}
"""
    return Component(code, ("form", "label", "input", "button"), (words[0], words[1]),
                     {"form": ("className",), "input": ("value", "onChange"), "button": ("type",)})


def _layout(rng: random.Random, name: str, words: list[str]) -> Component:
    wrapper = rng.choice(["div", "section"])
    heading = rng.choice(["h1", "h2"])
    code = f"""export function {name}() {{
  return (
    <{wrapper} className="{rng.choice(CLASS_NAMES)}">
      <{heading}>{words[0]}</{heading}>
      <p>{words[1]}</p>
      <a href="{rng.choice(PATHS)}">{words[2]}</a>
    </{wrapper}>
  );
}}
"""
    return Component(code, (wrapper, heading, "p", "a"), (words[0], words[1], words[2]),
                     {wrapper: ("className",), "a": ("href",)})


def _card(rng: random.Random, name: str, words: list[str]) -> Component:
    noun = rng.choice(NOUNS)
    code = f"""export function {name}() {{
  return (
    <div className="{rng.choice(CLASS_NAMES)}">
      <img src="/{noun}.png" alt="{noun}" />
      <h2>{words[0]}</h2>
      <span>{words[1]}</span>
    </div>
  );
}}
"""
    return Component(code, ("div", "img", "h2", "span"), (words[0], words[1]),
                     {"div": ("className",), "img": ("src", "alt")})


TEMPLATES: dict[str, Template] = {
    "counter": _counter, "toggle": _toggle, "list": _list, "form": _form, "layout": _layout, "card": _card,
}
