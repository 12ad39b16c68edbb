"""Synthetic React prompts with a spec, their correct components, and a warm-start corpus.

A prompt names a component and what it must contain; its reference is the spec the ``react``
scorer checks (:class:`reward_server.react.spec.Spec`)::

    Write a React component named TodoList that renders a <ul> and a <li> with text "Add".
    {"spec": {"component": "TodoList", "elements": ["ul", "li"], "text": ["Add"], "props": {}}}

Prompt format: see :mod:`trainer.tasks.base` (``Task.prompt`` is the policy input verbatim:
the instruction line plus ``"\\n"``). A completion is a fenced ```tsx block holding one
function component (:mod:`.react_templates`); broken completions come from
:mod:`.react_corruptions`.

Everything is drawn from ``random.Random(seed)``: the same seed gives the same tasks.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from .base import Task, format_prompt, write_jsonl
from .react_corruptions import CORRUPTIONS, SFT_MIX, corrupt
from .react_templates import TEMPLATES, Component

COMPONENT_NAMES = [
    "TodoList", "Counter", "LoginForm", "SearchBar", "UserCard", "NavBar", "Footer", "Header", "Sidebar",
    "ProfilePage", "ContactForm", "ProductList", "CartButton", "Modal", "Banner", "Greeting", "Toolbar",
    "MenuToggle", "NewsFeed", "PhotoCard", "Settings", "Dashboard", "WeatherBox", "TaskItem", "ScoreBoard",
    "SignupForm", "HelpPanel", "Timer", "Gallery", "StatusBar",
]
WORDS = [
    "Add", "Save", "Submit", "Next", "Back", "Open", "Close", "Send", "Search", "Login", "Reset", "Clear",
    "Delete", "Edit", "More", "Start", "Stop", "Hello", "Welcome", "Menu", "Home", "Help", "Profile", "Cancel",
    "Done", "Share", "Like", "Follow", "Upload", "Refresh",
]
# Props worth asking for: each is visible in the code and meaningful to a reader of the prompt.
ASKABLE_PROPS = {"className", "onClick", "onChange", "value", "href", "src", "alt", "type"}
FENCE = "```"


@dataclass(frozen=True)
class ReactExample:
    """A task and the component its reference completion was rendered from."""

    task: Task
    component: Component
    template: str

    @property
    def completion(self) -> str:
        return fence(self.component.code)


def fence(code: str) -> str:
    """A completion holding ``code``: a fenced ```tsx block, nothing else."""
    return f"{FENCE}tsx\n{code}{FENCE}"


def make_example(rng: random.Random, vocabulary: int | None = None) -> ReactExample:
    """One task, drawn from ``rng``: a template, a name, texts, and a spec picked from what
    the rendered component contains (so the reference completion satisfies it).

    ``vocabulary`` limits names and words to the first N of each: a tiny policy learns to copy
    a name or a word from the prompt far sooner when it has seen each one many times.
    """
    names, words = COMPONENT_NAMES[:vocabulary], WORDS[: max(3, vocabulary or len(WORDS))]
    template = rng.choice(sorted(TEMPLATES))
    name = rng.choice(names)
    component = TEMPLATES[template](rng, name, rng.sample(words, 3))
    distinct = sorted(set(component.elements))
    elements = sorted(rng.sample(distinct, rng.choice([1, 2, 2, 3])), key=component.elements.index)
    text = component.texts[0]
    props: dict[str, list[str]] = {}
    askable = [(tag, p) for tag, names in sorted(component.props.items()) for p in names if p in ASKABLE_PROPS]
    if askable and rng.random() < 0.5:
        tag, prop = rng.choice(askable)
        props[tag] = [prop]
    spec = {"component": name, "elements": elements, "text": [text], "props": props}
    return ReactExample(Task(format_prompt(instruction(spec)), {"spec": spec}), component, template)


def instruction(spec: dict) -> str:
    """The English instruction for ``spec``, e.g. ``Write a React component named X that
    renders a <ul> and a <li> with text "Add". Give the <a> a href prop.``"""
    tags = [f"<{tag}>" for tag in spec["elements"]]
    listed = tags[0] if len(tags) == 1 else ", ".join(tags[:-1]) + " and " + tags[-1]
    text = f' with text "{spec["text"][0]}"' if spec["text"] else ""
    out = f"Write a React component named {spec['component']} that renders a {listed}{text}."
    for tag, props in spec["props"].items():
        out += f" Give the <{tag}> a {props[0]} prop."
    return out


def make_examples(n: int, seed: int, vocabulary: int | None = None) -> list[ReactExample]:
    rng = random.Random(seed)
    return [make_example(rng, vocabulary) for _ in range(n)]


def make_prompts(n: int, seed: int, vocabulary: int | None = None) -> list[Task]:
    """``n`` tasks for RL or evaluation, deterministic in ``seed``."""
    return [example.task for example in make_examples(n, seed, vocabulary)]


def make_sft_corpus(n: int, seed: int, broken_share: float = 0.5,
                    mix: dict[str, float] | None = None, vocabulary: int | None = None) -> list[tuple[str, str]]:
    """``n`` (prompt, completion) pairs; a ``broken_share`` of the completions are corrupted,
    with corruptions drawn by weight from ``mix`` (default :data:`SFT_MIX`).

    Why broken examples at all: a warm start on perfect code would leave a policy that already
    compiles almost always, and RL would have nothing to show. Mistakes in the corpus are the
    realistic ones (see :mod:`.react_corruptions`), so the policy learns to make them at a
    controlled rate and RL has to learn to stop.
    """
    rng = random.Random(seed)
    weights = mix or SFT_MIX
    kinds = sorted(weights)
    pairs = []
    for _ in range(n):
        example = make_example(rng, vocabulary)
        completion = example.completion
        if rng.random() < broken_share:
            kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
            completion = corrupt(kind, example, rng)
        pairs.append((example.task.prompt, completion))
    return pairs


__all__ = ["COMPONENT_NAMES", "CORRUPTIONS", "ReactExample", "WORDS", "fence", "instruction", "make_example",
           "make_examples", "make_prompts", "make_sft_corpus", "write_jsonl"]
