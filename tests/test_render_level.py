"""Level ``render``: the component is executed and rendered server-side in the sandbox (real
Node workers under every isolation layer this host has). A throw, an invalid element, an empty
render and a broken rule of hooks fail, with the blame on the line at fault; props get safe
defaults from the prop types, or from the spec."""
from __future__ import annotations

import pytest

from botgrpo.reward_server.spans import compose
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.spans import default_split
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

HOST = iso.detect()

CARD = '''import { useState } from "react";

type Item = { id: number; label: string };

export default function Card({ title, items }: { title: string; items: Item[] }) {
  const [open, setOpen] = useState(true);
  return (
    <section>
      <h2>{title}</h2>
      <button onClick={() => setOpen(!open)}>{open ? "Hide" : "Show"}</button>
      {open && <ul>{items.map((it) => <li key={it.id}>{it.label}</li>)}</ul>}
    </section>
  );
}
'''
THROWS = '''export default function Profile({ settings }: { settings: string }) {
  const greeting = "Hello";
  const parsed = JSON.parse(settings);
  return <p>{greeting} {parsed.name}</p>;
}
'''
INVALID = '''import { Fragment } from "react";
const Missing: any = undefined;

export default function Layout() {
  return (
    <main>
      <Missing title="x" />
    </main>
  );
}
'''
OBJECT_CHILD = '''export default function Data() {
  const value = { count: 3 };
  return (
    <div>
      <span>{value as any}</span>
    </div>
  );
}
'''
EMPTY = '''export default function Blank() {
  return <div className="wrapper"><section></section><span></span></div>;
}
'''
ONLY_INPUT = '''export default function Search() {
  return <div><input placeholder="" /></div>;
}
'''
HOOKS = '''import { useState, useEffect } from "react";

export default function Toggle({ on }: { on: boolean }) {
  if (on) {
    const [count, setCount] = useState(0);
  }
  return <p>toggle</p>;
}
'''
HOOK_AFTER_RETURN = '''import { useState } from "react";

export default function Early({ ready }: { ready: boolean }) {
  if (!ready) return <p>loading</p>;
  const [value] = useState(1);
  return <p>{value}</p>;
}
'''


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1, timeout_s=10.0) as p:
        yield p


@pytest.fixture(scope="module")
def scorer(pool):
    return ReactScorer(pool)


def line_text(code: str, diagnostic) -> str:
    return code.splitlines()[diagnostic.line - 1].strip()


def test_a_component_renders_with_props_from_its_types(pool):
    result = pool.compile(CARD, "render")
    assert result.ok, result.diagnostics
    render = result.render
    assert render.status == "ok" and render.component == "Card" and render.props_from == "types"
    assert "<h2>Sample title</h2>" in render.html and render.html.count("<li>") == 2
    assert render.text.startswith("Sample title Hide") and render.tags["li"] == 2


def test_a_throw_is_blamed_on_the_throwing_line(pool):
    result = pool.compile(THROWS, "render")
    assert not result.ok and result.render.status == "error"
    (diagnostic,) = result.diagnostics
    assert diagnostic.rule == "render/throw" and "SyntaxError" in diagnostic.message
    assert line_text(THROWS, diagnostic) == "const parsed = JSON.parse(settings);"
    assert THROWS[diagnostic.start:diagnostic.end] == "const parsed = JSON.parse(settings);"


def test_an_invalid_element_is_blamed_on_the_element(pool):
    result = pool.compile(INVALID, "render")
    assert result.render.status == "error" and "Element type is invalid" in result.render.message
    (diagnostic,) = result.diagnostics
    assert line_text(INVALID, diagnostic) == '<Missing title="x" />'


def test_an_object_child_is_blamed_on_its_element(pool):
    result = pool.compile(OBJECT_CHILD, "render")
    assert result.render.status == "error" and "Objects are not valid as a React child" in result.render.message
    assert line_text(OBJECT_CHILD, result.diagnostics[0]) == "<span>{value as any}</span>"


def test_an_empty_render_fails_and_is_configurable(pool):
    result = pool.compile(EMPTY, "render")
    assert not result.ok and result.render.status == "empty"
    assert result.render.html == '<div class="wrapper"><section></section><span></span></div>'
    (diagnostic,) = result.diagnostics  # blamed on the return that rendered nothing
    assert diagnostic.rule == "render/empty" and line_text(EMPTY, diagnostic).startswith("return <div className=")
    assert pool.compile(EMPTY, "render", render={"empty": "allow"}).ok
    several = "export default function S({ a }: { a: boolean }) {\n  if (a) return <div />;\n  return <span />;\n}\n"
    (unplaced,) = pool.compile(several, "render").diagnostics
    assert unplaced.rule == "render/empty" and not unplaced.located  # two returns: no one place
    assert pool.compile(ONLY_INPUT, "render").ok  # an input is content
    assert not pool.compile(ONLY_INPUT, "render", render={"wrappers": ["div", "input"]}).ok


def test_broken_rules_of_hooks_fail_at_the_hook(pool):
    for code, line in ((HOOKS, "const [count, setCount] = useState(0);"), (HOOK_AFTER_RETURN, "const [value] = useState(1);")):
        result = pool.compile(code, "render")
        assert not result.ok and result.render.status == "hooks", result.render
        (diagnostic,) = result.diagnostics
        assert diagnostic.rule == "react-hooks/rules-of-hooks"
        assert line_text(code, diagnostic) == line and code[diagnostic.start:diagnostic.end] == "useState"


def test_props_by_name_without_types_and_from_the_spec(pool):
    untyped = ("export default function List({ title, items, onSelect, count }) {\n"
               "  return <div><h3>{title}</h3><p>{count + 1} of {items.length}</p>"
               "<button onClick={() => onSelect(1)}>go</button></div>;\n}\n")
    result = pool.compile(untyped, "render")
    assert result.ok, result.diagnostics
    assert result.render.props == {"title": "Sample title", "items": [], "onSelect": {"$fn": "onSelect"}, "count": 1}
    given = pool.compile(untyped, "render", render={"props": {"title": "Groceries", "count": 4, "items": [1, 2]}})
    assert "<h3>Groceries</h3>" in given.render.html and "5<!-- --> of <!-- -->2" in given.render.html


def test_the_spec_component_renders_only_when_exported(pool):
    code = ("function Helper() { return <i>help</i>; }\n"
            "export function Panel() { return <aside>panel</aside>; }\n"
            "function Decoy() { return <nav>decoy</nav>; }\n"
            "export default function App() { return <main>app</main>; }\n")
    assert "<main>app</main>" in pool.compile(code, "render").render.html
    panel = pool.compile(code, "render", render={"component": "Panel"})
    assert panel.render.component == "Panel" and "<aside>panel</aside>" in panel.render.html
    decoy = pool.compile(code, "render", render={"component": "Decoy"})  # unexported: the app's default export is mounted
    assert decoy.render.component == "App" and "<main>app</main>" in decoy.render.html
    assert [c["name"] for c in decoy.summary["rendered"]["components"]] == ["App"]
    # no export at all: the only component still renders (the build verdict), but is not a spec'd component
    lone = pool.compile("const Named = () => <b>named</b>;\n", "render")
    assert lone.render.html == "<b>named</b>" and lone.summary["rendered"]["components"] == []


def test_nothing_to_render_and_build_errors(pool):
    nothing = pool.compile("export const answer = 42;\n", "render")
    assert not nothing.ok and "Nothing to render" in nothing.diagnostics[0].message
    broken = pool.compile('export default function A() { return <p className="x"Back</p>; }\n', "render")
    assert not broken.ok and broken.render.status == "not_built" and broken.diagnostics[0].rule is None


def test_positions_survive_astral_characters(pool):
    code = 'export default function E() {\n  const s = "🙂🙂";\n  const n = (null as any).x;\n  return <p>{s}</p>;\n}\n'
    (diagnostic,) = pool.compile(code, "render").diagnostics
    assert code[diagnostic.start:diagnostic.end] == "const n = (null as any).x;"


def test_effects_and_timers_run_and_their_errors_do_not_fail(pool):
    code = '''import { useEffect, useRef, useState } from "react";
export default function Clock() {
  const ref = useRef<HTMLDivElement>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const id = setInterval(() => setTick((t) => t + 1), 100);
    ref.current!.focus();
    return () => clearInterval(id);
  }, []);
  return <div ref={ref}>tick {tick}</div>;
}
'''
    result = pool.compile(code, "render")
    assert result.ok, result.render
    assert result.render.effects == 1 and result.render.effect_errors  # a null ref on the server: noted, not failed


# ---------------------------------------------------------------- the scorer


def test_scorer_outcome_weights_and_blame(scorer):
    rollouts = [Rollout(f"```tsx\n{code}```") for code in (CARD, THROWS, EMPTY, "export default function X() {")]
    opts = ReactOptions(level="render")
    renders, throws, empty, broken = scorer.score_batch(rollouts, opts)
    assert (renders.score, renders.passed) == (1.0, True) and renders.details["reason"] == "renders"
    assert (throws.score, throws.passed) == (0.0, False) and throws.details["reason"] == "render error"
    assert empty.score == 0.0 and empty.details["render"]["status"] == "empty"
    blamed = {i for span in empty.local for i in range(span.start, span.end)}
    assert rollouts[2].completion.index("return <div") in blamed
    assert broken.score == -1.0
    weighted = scorer.score_batch(rollouts[1:2], ReactOptions(level="render", render_weight=1.0))[0]
    assert weighted.score == -1.0
    completion = rollouts[1].completion
    offsets = default_split(completion)
    scores = compose(throws, len(completion), offsets, 0.5)
    blamed = {completion[s:e].strip() for (s, e), v in zip(offsets, scores) if v == min(scores)}
    assert "JSON.parse(settings);" in blamed and "greeting" not in " ".join(blamed)


def test_scorer_spec_props_and_details(scorer):
    spec = {"component": "Card", "render_props": {"title": "Todo", "items": [{"id": 1, "label": "milk"}]}}
    [result] = scorer.score_batch([Rollout(f"```tsx\n{CARD}```", reference={"spec": spec})],
                                  ReactOptions(level="render", return_html=True))
    assert result.passed and result.details["render"]["props_from"] == "spec"
    assert "<li>milk</li>" in result.details["render"]["html"] and result.details["spec_passed"] is True
