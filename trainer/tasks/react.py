"""Synthetic React prompts with a spec, their correct components, and a warm-start corpus.

A prompt names a component and what it must contain; its reference is the spec the ``react``
scorer checks (:class:`botgrpo.reward_server.react.spec.Spec`)::

    Write a React component named TodoList that renders a <ul> and a <li> with text "Add".
    {"spec": {"component": "TodoList", "elements": ["ul", "li"], "text": ["Add"], "props": {}}}

Prompt format: see :mod:`botgrpo.trainer.tasks.base` (``Task.prompt`` is the policy input verbatim:
the instruction line plus ``"\\n"``). A completion is a fenced ```tsx block holding one
function component (:mod:`.react_templates`); broken completions come from
:mod:`.react_corruptions`.

Everything is drawn from ``random.Random(seed)``: the same seed gives the same tasks.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from botgrpo.trainer.tasks import react_blocks
from botgrpo.trainer.tasks.base import Task, format_prompt, write_jsonl
from botgrpo.trainer.tasks.react_corruptions import CORRUPTIONS, FENCE, SFT_MIX, corrupt
from botgrpo.trainer.tasks.react_templates import TEMPLATES, Component

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
SHAPES = ("template", "blocks")


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


def make_example(rng: random.Random, vocabulary: int | None = None, shape: str = "template") -> ReactExample:
    """One task, drawn from ``rng``: a component, and a spec picked from what it contains (so
    the reference completion satisfies it). The reference also carries the component's code,
    for the study's oracle local signal.

    ``shape``: ``template`` (8-15 lines, :mod:`.react_templates`) or ``blocks`` (15-30 lines of
    named blocks, :mod:`.react_blocks`; the prompt lists the blocks). ``vocabulary`` limits
    names and words to the first N of each: a tiny policy learns to copy a name or a word from
    the prompt far sooner when it has seen each one many times.
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of {SHAPES}")
    names = COMPONENT_NAMES[:vocabulary]
    blocks: list[str] = []
    if shape == "blocks":  # five blocks of one or two texts need up to six words
        words = WORDS[: max(6, vocabulary or len(WORDS))]
        name, blocks, template = rng.choice(names), react_blocks.draw_blocks(rng, 3, 5), "blocks"
        component = react_blocks.assemble(rng, name, blocks, rng.sample(words, 6))
    else:
        words = WORDS[: max(3, vocabulary or len(WORDS))]
        template, name = rng.choice(sorted(TEMPLATES)), rng.choice(names)
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
    reference = {"spec": spec, "code": component.code}
    return ReactExample(Task(format_prompt(instruction(spec, blocks)), reference), component, template)


def instruction(spec: dict, blocks: list[str] = ()) -> str:
    """The English instruction for ``spec``, e.g. ``Write a React component named X that
    renders a <ul> and a <li> with text "Add". Give the <a> a href prop.`` (with blocks:
    ``... named X with a counter and a list that renders ...``)."""
    tags = [f"<{tag}>" for tag in spec["elements"]]
    listed = tags[0] if len(tags) == 1 else ", ".join(tags[:-1]) + " and " + tags[-1]
    text = f' with text "{spec["text"][0]}"' if spec["text"] else ""
    holding = f" with {react_blocks.listing(list(blocks))}" if blocks else ""
    out = f"Write a React component named {spec['component']}{holding} that renders a {listed}{text}."
    for tag, props in spec["props"].items():
        out += f" Give the <{tag}> a {props[0]} prop."
    return out


def make_examples(n: int, seed: int, vocabulary: int | None = None, shape: str = "template") -> list[ReactExample]:
    rng = random.Random(seed)
    return [make_example(rng, vocabulary, shape) for _ in range(n)]


def make_prompts(n: int, seed: int, vocabulary: int | None = None, shape: str = "template") -> list[Task]:
    """``n`` tasks for RL or evaluation, deterministic in ``seed``."""
    return [example.task for example in make_examples(n, seed, vocabulary, shape)]


def make_sft_corpus(n: int, seed: int, broken_share: float = 0.5, mix: dict[str, float] | None = None,
                    vocabulary: int | None = None, shape: str = "template",
                    max_mistakes: int = 1) -> list[tuple[str, str]]:
    """``n`` (prompt, completion) pairs; a ``broken_share`` of the completions are corrupted,
    with corruptions drawn by weight from ``mix`` (default :data:`SFT_MIX`), 1 to
    ``max_mistakes`` of them in one completion (each at its own site).

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
        example = make_example(rng, vocabulary, shape)
        completion = example.completion
        if rng.random() < broken_share:
            chosen = rng.choices(kinds, [weights[k] for k in kinds], k=rng.randint(1, max_mistakes))
            completion = corrupt_many(chosen, example, rng)
        pairs.append((example.task.prompt, completion))
    return pairs


def corrupt_many(kinds: list[str], example: ReactExample, rng: random.Random) -> str:
    """``example``'s completion with each mistake of ``kinds`` that applies (a mistake whose
    site the component lacks is skipped; truncation, which cuts the rest off, goes last)."""
    kinds = sorted(dict.fromkeys(kinds), key=lambda k: CORRUPTIONS[k].whole_completion)
    code = example.component.code
    for kind in kinds:
        corruption = CORRUPTIONS[kind]
        if corruption.whole_completion:
            return corruption.apply(fence(code), example.task.reference["spec"], rng)
        try:
            code = corruption.apply(code, example.task.reference["spec"], rng)
        except (IndexError, ValueError, StopIteration):
            continue
    return fence(code)


__all__ = ["COMPONENT_NAMES", "CORRUPTIONS", "ReactExample", "SHAPES", "WORDS", "corrupt", "corrupt_many", "fence",
           "instruction", "make_example", "make_examples", "make_prompts", "make_sft_corpus", "write_jsonl"]
