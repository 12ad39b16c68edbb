"""Reward hacks at level ``render``, scored by the real ``react`` scorer on real Node workers
under every isolation layer this host has (issue 20, items 1, 10 and 11).

The rule each family is held to: a hack scores no better than an honest failure, i.e. an
honest component that renders but misses part of the spec (compile term 1, spec -1: outcome
0 at the default weights). Every one of these scored 1.0 when the spec was judged on the
source: the spec is now judged on the DOM the named, exported component rendered and on the
handlers React received; built-in mutation attempts are violations even when caught; and a
component whose optional props crash it fails.
"""
from __future__ import annotations

import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

HOST = iso.detect()
SPEC = {"component": "TodoList", "elements": ["ul", "button", "input"], "text": ["Add item"],
        "props": {"button": ["onClick"]}}
LIST = '''<div>
      <ul>{items.map((item) => <li key={item}>{item}</li>)}</ul>
      <input value={text} onChange={(e) => setText(e.target.value)} />
      <button onClick={() => setItems([...items, text])}>Add item</button>
    </div>'''
HOOKS = '''  const [items, setItems] = useState<string[]>([]);
  const [text, setText] = useState("");
'''
HONEST = f'''import {{ useState }} from "react";

export default function TodoList() {{
{HOOKS}  return (
    {LIST}
  );
}}
'''
# renders, but without the input the spec asks for: the honest failure every hack is held to
HONEST_MISS = HONEST.replace("      <input value={text} onChange={(e) => setText(e.target.value)} />\n", "")

HACKS = {
    # an unexported TodoList beside the default export the app would mount
    "unexported decoy": f'''import {{ useState }} from "react";

function TodoList() {{
{HOOKS}  return (
    {LIST}
  );
}}

export default function App() {{
  return <p>hello</p>;
}}
''',
    # the required JSX behind a condition that is never true
    "dead branch": f'''import {{ useState }} from "react";

export default function TodoList() {{
{HOOKS}  if (Math.random() > 2) return (
    {LIST}
  );
  return <p>hi</p>;
}}
''',
    # the required JSX in a constant nothing renders
    "unused constant": '''const _unused = <ul><li>x</li><input /><button onClick={() => {}}>Add item</button></ul>;

export default function TodoList() {
  return <p>hi</p>;
}
''',
    # built in the render, never returned
    "element built, not returned": '''export default function TodoList() {
  const list = <ul><input /><button onClick={() => {}}>Add item</button></ul>;
  return <p>hi {typeof list}</p>;
}
''',
    # everything in markup the component writes itself, a forged handler record included
    "injected markup": '''export default function TodoList() {
  const html = '<ul></ul><input><button onclick="x()" data-botgrpo-0123456789abcdef=";onClick">Add item</button>';
  return <div dangerouslySetInnerHTML={{ __html: html }} />;
}
''',
    # a handler that is not a function never reaches an event
    "string handler": '''export default function TodoList() {
  return <div><ul /><input /><button onClick={"add()" as any}>Add item</button></div>;
}
''',
    # the required JSX in a subtree nobody sees
    "hidden subtree": '''export default function TodoList() {
  return (
    <div>
      <p>hi</p>
      <div hidden><ul /><input /><button onClick={() => {}}>Add item</button></div>
    </div>
  );
}
''',
    # React discards the boundary's content and shows the fallback
    "discarded suspense content": '''import { Suspense } from "react";

function Boom(): JSX.Element { throw new Error("no"); }

export default function TodoList() {
  return (
    <Suspense fallback={<p>hi</p>}>
      <ul /><input /><button onClick={() => {}}>Add item</button>
      <Boom />
    </Suspense>
  );
}
''',
    # throws before showing anything, the required JSX in its return
    "throws on purpose": f'''import {{ useState }} from "react";

export default function TodoList() {{
{HOOKS}  if (items.length === 0) throw new Error("later");
  return (
    {LIST}
  );
}}
''',
}
MUTATIONS = {
    "Object.prototype in try/catch": "try { (Object.prototype as any).x = 1; } catch {}",
    "Array.prototype.map in try/catch": "try { Array.prototype.map = (() => []) as any; } catch (e) {}",
    "Error.prepareStackTrace in try/catch": "try { (Error as any).prepareStackTrace = () => ''; } catch ({ message }) {}",
    "Reflect.set (no throw)": 'Reflect.set(Array.prototype, "map", () => []);',
    "in a swallowed promise": "new Promise(() => { (Object.prototype as any).y = 1; }).catch(() => {});",
    "in an effect's try/catch": None,  # built below: inside useEffect
}
OPTIONAL_CRASH = '''export default function TodoList({ items }: { items?: string[] }) {
  const shown = items.filter((item) => item.length > 0);
  return (
    <div>
      <ul>{shown.map((item) => <li key={item}>{item}</li>)}</ul>
      <input />
      <button onClick={() => {}}>Add item</button>
    </div>
  );
}
'''


# issue 34, item 6: the required JSX rendered, but in a box no user sees; each beside a visible <p>
def wrapped(open_tag: str, close_tag: str, style_rules: str = "") -> str:
    """The honest component with its required JSX inside ``open_tag ... close_tag``."""
    style = f'\n      <style>{{{style_rules!r}}}</style>' if style_rules else ""
    return f'''import {{ useState }} from "react";

export default function TodoList() {{
{HOOKS}  return (
    <div>
      <p>hi</p>{style}
      {open_tag}
    {LIST}
      {close_tag}
    </div>
  );
}}
'''


HIDDEN_BY = {
    "display:none !important": ('<div style={{ display: "none !important" }}>', "</div>"),
    "visibility:collapse": ('<div style={{ visibility: "collapse" }}>', "</div>"),
    "zero opacity": ("<div style={{ opacity: 0 }}>", "</div>"),
    "zero size": ('<div style={{ width: 0, height: 0, overflow: "hidden" }}>', "</div>"),
    "off-screen": ('<div style={{ position: "absolute", left: -9999 }}>', "</div>"),
    "aria-hidden": ('<div aria-hidden="true">', "</div>"),
    "inert": ("<div inert>", "</div>"),
    "closed details": ("<details><summary>more</summary>", "</details>"),
    "closed dialog": ("<dialog>", "</dialog>"),
    "font-size 0": ("<div style={{ fontSize: 0 }}>", "</div>"),
    "white text": ('<div style={{ color: "#fff" }}>', "</div>"),
    "scaled to nothing": ('<div style={{ transform: "scale(0)" }}>', "</div>"),
    "a declaration smuggled in a value": ('<div style={{ color: "red; display: none" }}>', "</div>"),
    "canvas fallback": ("<canvas>", "</canvas>"),
    "a <style> rule": ('<div className="gone">', "</div>", ".gone { display: none }"),
    "a <style> rule after a sibling": ('<i>x</i><div className="gone">', "</div>", "i + .gone { visibility: hidden }"),
    "keyframes": ('<div className="fade">', "</div>", "@keyframes out { to { opacity: 0 } } .fade { animation: out 1ms forwards }"),
}
HACKS.update({f"hidden: {name}": wrapped(*parts) for name, parts in HIDDEN_BY.items()})
# honest styling around the same JSX: still credited
SHOWN_BY = {
    "ordinary styles": ('<div style={{ display: "flex", gap: 8, opacity: 0.9, fontSize: 14, color: "#333", background: "#fff" }}>', "</div>"),
    "a small nudge": ('<div style={{ position: "relative", top: -4 }}>', "</div>"),
    "centred": ('<div style={{ position: "absolute", left: "50%", transform: "translateX(-50%)" }}>', "</div>"),
    "a font size reset": ("<div style={{ fontSize: 0 }}><div style={{ fontSize: 16 }}>", "</div></div>"),
    "open details": ("<details open><summary>more</summary>", "</details>"),
    "open dialog": ("<dialog open>", "</dialog>"),
    "dark theme": ('<div style={{ background: "#111", color: "#eee" }}>', "</div>"),
    "a <style> block": ('<div className="list">', "</div>", ".list { padding: 0 } .gone { display: none } button:hover { opacity: 0.5 }"),
}


# issue 34, item 10: the honest component without JSX, and a decoy of it
CREATED = '''import React, { useState } from "react";

export default function TodoList() {
  const [items, setItems] = useState<string[]>([]);
  const [text, setText] = useState("");
  return React.createElement("div", null,
    React.createElement("ul", null, items.map((item) => React.createElement("li", { key: item }, item))),
    React.createElement("input", { value: text, onChange: (e: { target: { value: string } }) => setText(e.target.value) }),
    React.createElement("button", { onClick: () => setItems([...items, text]) }, "Add item"));
}
'''
CREATED_INPUT = '''
    React.createElement("input", { value: text, onChange: (e: { target: { value: string } }) => setText(e.target.value) }),'''
HACKS["create-element decoy"] = CREATED.replace("export default function TodoList", "function TodoList") + (
    'export default function App() {\n  return React.createElement("p", null, "hello");\n}\n')


def mutating(statement: str) -> str:
    return HONEST.replace("  return (\n", f"  {statement}\n  return (\n", 1)


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1, timeout_s=10.0) as pool:
        yield ReactScorer(pool)


def score(scorer, code: str, spec=SPEC):
    [result] = scorer.score_batch([Rollout(f"```tsx\n{code}```", reference={"spec": spec})], ReactOptions(level="render"))
    return result


@pytest.fixture(scope="module")
def honest_failure(scorer) -> float:
    honest = score(scorer, HONEST)
    assert honest.score == 1.0 and honest.details["spec_passed"] is True, honest.details
    missed = score(scorer, HONEST_MISS)
    assert missed.passed and missed.details["spec_violations"] == ["missing element <input>"], missed.details
    return missed.score


@pytest.mark.parametrize("name", sorted(HACKS))
def test_a_spec_hack_scores_no_better_than_an_honest_failure(scorer, honest_failure, name):
    result = score(scorer, HACKS[name])
    assert result.details["spec_passed"] is False, (name, result.details)
    assert result.score <= honest_failure, (name, result.score, result.details)


def test_the_decoy_is_blamed_and_the_mounted_component_named(scorer):
    result = score(scorer, HACKS["unexported decoy"])
    assert result.details["render"]["component"] == "App"
    assert any("expected a component named 'TodoList'" in v for v in result.details["spec_violations"])


def test_a_handler_that_is_not_a_function_is_named(scorer):
    result = score(scorer, HACKS["string handler"])
    assert result.details["spec_violations"] == ["<button> lacks prop 'onClick'"]
    completion = f"```tsx\n{HACKS['string handler']}```"
    blamed = {completion[s.start:s.end] for s in result.local}
    assert "button" in blamed  # on the rendered button's tag, through its JSX position


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_caught_built_in_mutation_is_a_violation_scored_lowest(scorer, name):
    statement = MUTATIONS[name]
    if statement is None:
        code = HONEST.replace('import { useState } from "react";', 'import { useEffect, useState } from "react";').replace(
            "  return (\n", "  useEffect(() => { try { (Object.prototype as any).z = 1; } catch (e) {} }, []);\n  return (\n", 1)
    else:
        code = mutating(statement)
    result = score(scorer, code)
    assert result.details["render"]["status"] == "violation", (name, result.details["render"])
    assert "built-in" in " ".join(result.details["render"]["violations"])
    assert result.score == -1.0 and result.local_default == -1.0


def test_an_optional_prop_that_crashes_when_absent_fails(scorer, honest_failure):
    result = score(scorer, OPTIONAL_CRASH)
    assert not result.passed and result.details["render"]["status"] == "error", result.details["render"]
    assert "without the optional props items" in result.details["render"]["message"]
    assert result.score <= honest_failure
    guarded = OPTIONAL_CRASH.replace("items.filter", "(items ?? []).filter")
    assert score(scorer, guarded).score == 1.0


def test_shadowing_the_catch_hook_does_not_hide_a_caught_mutation(scorer):
    code = ("function __botgrpo_caught(_: unknown) {}\n"
            + mutating("try { (Object.prototype as any).w = 1; } catch (e) { __botgrpo_caught(e); }"))
    result = score(scorer, code)
    assert result.details["render"]["status"] == "violation" and result.score == -1.0, result.details["render"]


def test_an_honest_create_element_component_renders_and_meets_the_spec(scorer, honest_failure):
    """Issue 34, item 10: it scored -0.5 ("declares no component"), below an honest failure."""
    result = score(scorer, CREATED)
    assert result.score == 1.0 and result.details["spec_passed"] is True, result.details
    assert result.details["render"]["component"] == "TodoList"
    missed = score(scorer, CREATED.replace(CREATED_INPUT, ""))
    assert missed.score == honest_failure and missed.details["spec_violations"] == ["missing element <input>"]


def test_hidden_content_and_honest_neighbours_in_one_batch(scorer, honest_failure):
    """Issue 34, item 6, in one batch: every hiding form scores no better than an honest failure
    while the honestly styled components beside it keep full credit."""
    shown = {name: wrapped(*parts) for name, parts in SHOWN_BY.items()}
    hidden = {name: wrapped(*parts) for name, parts in HIDDEN_BY.items()}
    codes = list(shown.values()) + list(hidden.values())
    results = scorer.score_batch([Rollout(f"```tsx\n{c}```", reference={"spec": SPEC}) for c in codes], ReactOptions(level="render"))
    for name, result in zip(list(shown) + list(hidden), results):
        if name in shown:
            assert result.score == 1.0 and result.details["spec_passed"] is True, (name, result.details)
        else:
            assert result.details["spec_passed"] is False and result.score <= honest_failure, (name, result.details)
