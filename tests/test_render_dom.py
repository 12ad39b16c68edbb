"""What level ``render`` reads of a server render for the spec (``summary["rendered"]``): the
visible host elements React emitted, where their JSX is, the props React received on them (a
handler only as a function), and the visible text; the per-element records it reads are never
in the markup that leaves the sandbox. Also: caught built-in writes, the catch instrumentation
leaving honest code alone, and the second render without the optional props. Real Node
workers under every isolation layer this host has."""
from __future__ import annotations

import pytest

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host

HOST = iso.detect()

FORM = '''import { useState } from "react";

export default function Form() {
  const [v, setV] = useState("");
  return (
    <form onSubmit={(e) => e.preventDefault()} className="f">
      <input value={v} onChange={(e) => setV(e.target.value)} placeholder="Search &amp; find" />
      <textarea onChange={() => {}} defaultValue="notes" />
      <select onChange={() => {}} value="b"><option value="a">A</option><option value="b">B</option></select>
      <a href="#x" onClick={() => {}}>link</a>
      <img alt="pic" src="p.png" onLoad={() => {}} />
      <ul><li onClick={() => {}}>one</li></ul>
      <button type="submit" onClick={() => {}} disabled={false}>Add <b>new</b> item</button>
      <input type="submit" value="Save all" />
    </form>
  );
}
'''


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    require_host(not iso.render_refusal(HOST.layers), "bubblewrap with user namespaces (the render layers)")
    with NodePool(size=1, timeout_s=10.0) as p:
        yield p


def props_of(rendered: dict, tag: str) -> set[str]:
    return {p["name"] for e in rendered["elements"] if e["tag"] == tag for p in e["props"]}


def test_handlers_and_props_are_read_from_what_react_received(pool):
    result = pool.compile(FORM, "render")
    assert result.ok, result.diagnostics
    rendered = result.summary["rendered"]
    expected = {"form": {"onSubmit", "className"}, "input": {"value", "onChange", "placeholder", "type"},
                "textarea": {"onChange", "defaultValue"}, "select": {"onChange", "value"}, "a": {"href", "onClick"},
                "img": {"alt", "src", "onLoad"}, "li": {"onClick"}, "button": {"type", "onClick", "disabled"}}
    for tag, props in expected.items():
        assert props <= props_of(rendered, tag), (tag, props_of(rendered, tag))
    assert "data-botgrpo" not in result.render.html and "onclick" not in result.render.html.lower()
    texts = [t["text"] for t in rendered["texts"]]
    assert "Search & find" in texts and "Save all" in texts and "notes" in texts
    assert any("Add new item" in t for t in texts)  # across an inline element: the last entry joins it all
    # each element is placed on its tag name in the source
    for element in rendered["elements"]:
        assert FORM[element["start"]:element["end"]] == element["tag"], element


def test_positions_survive_astral_characters(pool):
    code = 'export default function E() {\n  const s = "🙂🙂"; return <p title={s}><b>{s}</b></p>;\n}\n'
    rendered = pool.compile(code, "render").summary["rendered"]
    assert [code[e["start"]:e["end"]] for e in rendered["elements"]] == ["p", "b"]


def test_a_forged_record_in_injected_markup_counts_for_nothing(pool):
    code = ('export default function X() {\n  return <div dangerouslySetInnerHTML={{ __html: '
            '\'<button data-botgrpo-00112233445566778899aabbccddeeff=";onClick">Add</button>\' }} />;\n}\n')
    result = pool.compile(code, "render")
    buttons = [e for e in result.summary["rendered"]["elements"] if e["tag"] == "button"]
    assert buttons and all(e["props"] == [] for e in buttons)  # shown (it is in the DOM), but with no handler
    assert "data-botgrpo-00112233445566778899aabbccddeeff" in result.render.html  # not ours: left as written


def test_a_failed_render_shows_nothing_to_the_spec(pool):
    code = 'export default function T() {\n  const x: any = null;\n  return <ul><li>{x.y}</li></ul>;\n}\n'
    result = pool.compile(code, "render")
    assert result.render.status == "error"
    assert result.summary["rendered"]["elements"] == [] and result.summary["rendered"]["texts"] == []
    assert {e["tag"] for e in result.summary["elements"]} == {"ul", "li"}  # the static summary still has the source's


def test_honest_try_catch_is_left_alone(pool):
    code = '''export default function Safe({ raw }: { raw: string }) {
  let name = "none";
  try { name = JSON.parse(raw).name; } catch (e) { name = `bad: ${(e as Error).name}`; }
  try { JSON.parse("{"); } catch { name += "!"; }
  try { JSON.parse("["); } catch ({ message }) { name += typeof message; }
  return <p>{name}</p>;
}
'''
    result = pool.compile(code, "render")
    assert result.ok and result.render.status == "ok", result.render
    assert "bad: SyntaxError!string" in result.render.html


def test_a_caught_write_in_a_suspense_boundary_is_a_violation(pool):
    code = '''import { Suspense } from "react";
function Evil(): JSX.Element { (Object.prototype as any).x = 1; return <b />; }
export default function P() {
  return <Suspense fallback={<p>wait</p>}><Evil /></Suspense>;
}
'''
    result = pool.compile(code, "render")
    assert result.render.status == "violation" and "built-in" in result.render.message, result.render


def test_optional_props_are_also_left_out(pool):
    crashes = {
        "question mark": "type P = { title: string; items?: string[] };\nexport default function L({ title, items }: P)",
        "undefined in the union": "interface P { items: string[] | undefined }\nexport default function L({ items }: P)",
        "partial": "interface Q { items: string[] }\nexport default function L({ items }: Partial<Q>)",
        "inherited": "interface B { items?: string[] }\ninterface P extends B { title: string }\nexport default function L({ items }: P)",
    }
    body = " {\n  return <ul>{items.map((i) => <li key={i}>{i}</li>)}</ul>;\n}\n"
    for name, head in crashes.items():
        result = pool.compile(head + body, "render")
        assert result.render.status == "error", (name, result.render)
        assert "without the optional props items" in result.render.message, (name, result.render.message)
        (diagnostic,) = result.diagnostics
        assert "items.map" in (head + body)[diagnostic.start:diagnostic.end]
    # the spec's props do not make an optional prop required
    spec = pool.compile(crashes["question mark"] + body, "render", render={"props": {"items": ["a"]}})
    assert spec.render.status == "error"
    fine = [
        "export default function L({ items = [\"a\"] }: { items?: string[] })",  # the author's default
        "export default function L({ items }: { items: string[] })",        # required
    ]
    for head in fine:
        result = pool.compile(head + body, "render")
        assert result.ok and "<li>" in result.render.html, (head, result.render)
