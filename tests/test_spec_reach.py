"""The spec judged on what the named, exported component shows (real Node summary + check_spec):
honest shapes of a component keep passing; what it never shows does not count."""
import pytest

from botgrpo.reward_server.react.spec import Spec, check_spec
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain

SPEC = Spec(component="TodoList", elements=["ul", "li", "button"], text=["Add item"], props={"button": ["onClick"]})

HONEST = {
    "locals-and-push": """import { useState } from "react";
export function TodoList() {
  const [items, setItems] = useState<string[]>([]);
  const rows = [];
  for (const it of items) rows.push(<li key={it}>{it}</li>);
  return <div><ul>{rows}</ul><button onClick={() => setItems([...items, "x"])}>Add item</button></div>;
}
""",
    "map-callback": """export function TodoList({ items }: { items: string[] }) {
  return <ul>{items.map((it) => <li key={it}>{it}</li>)}<button onClick={() => {}}>Add item</button></ul>;
}
""",
    "child-component-and-constant": """const label = "Add item";
const Footer = () => <button onClick={() => {}}>{"Add item"}</button>;
function Row({ t }: { t: string }) { return <li>{t}</li>; }
export default function TodoList() { return <ul><Row t="a" /><Footer /></ul>; }
""",
    "class-with-helper": """import React from "react";
export class TodoList extends React.Component {
  renderRows() { return [<li key="a">a</li>]; }
  render() { return <ul>{this.renderRows()}<button onClick={() => {}}>Add item</button></ul>; }
}
""",
    "memo-default": """import { memo } from "react";
const TodoList = () => <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;
export default memo(TodoList);
""",
    "loading-branch": """export function TodoList({ loading }: { loading: boolean }) {
  if (loading) return <p>Loading</p>;
  return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;
}
""",
    "export-list": """function TodoList() { return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>; }
export { TodoList };
""",
    "children-and-element-props": """import type { ReactNode } from "react";
function Layout({ children }: { children: ReactNode }) { return <main>{children}</main>; }
function Slot(props: { body: ReactNode }) { return <section>{props.body}</section>; }
export function TodoList() {
  return <Layout><Slot body={<ul><li>a</li></ul>} /><button onClick={() => {}}>Add item</button></Layout>;
}
""",
    "live-constant-condition": """export function TodoList() {
  if (true) return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;
  return null;
}
""",
}


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=10.0) as p:
        yield p


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_shapes_meet_the_spec(pool, name):
    result = pool.compile(HONEST[name], level="build")
    assert result.ok, result.diagnostics
    assert check_spec(SPEC, result.summary) == [], result.summary


def test_the_summary_says_who_shows_what(pool):
    code = "const _x = <ol />;\nfunction Dead() { return <table />; }\nexport default function App() { return <main><Used /></main>; }\nconst Used = () => <b />;\n"
    summary = pool.compile(code, level="build").summary
    owners = {e["tag"]: e["owners"] for e in summary["elements"]}
    assert owners == {"ol": ["_x"], "table": ["Dead"], "main": ["App"], "Used": ["App"], "b": ["Used"]}
    assert summary["graph"]["default"] == ["App"] and summary["graph"]["App"] == ["Used"]
    # the old fields keep their shape: every element of the file is listed, with its span
    assert all(code[e["start"]:e["end"]] == e["tag"] for e in summary["elements"])


def test_without_a_component_the_default_export_is_judged(pool):
    code = "const _x = <ul><li>a</li></ul>;\nexport default function App() { return <p>hi</p>; }\n"
    summary = pool.compile(code, level="build").summary
    missing = {v.message for v in check_spec(Spec(elements=["ul"]), summary)}
    assert missing == {"missing element <ul>"}


def test_an_undecidable_condition_counts_both_branches(pool):
    """The documented limit of the static check: a branch on props or chance is taken as live."""
    code = ("export function TodoList() {\n  if (Math.random() > 0.99) return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;\n"
            "  return <p>hi</p>;\n}\n")
    assert check_spec(SPEC, pool.compile(code, level="build").summary) == []


def test_an_older_summary_without_a_graph_is_judged_on_the_whole_file():
    summary = {"components": [{"name": "TodoList", "start": 0, "end": 8, "exported": False}],
               "elements": [{"tag": t, "start": 0, "end": 1, "props": [{"name": "onClick"}] if t == "button" else []}
                            for t in ("ul", "li", "button")], "texts": [{"text": "Add item"}]}
    assert check_spec(SPEC, summary) == []


@pytest.mark.parametrize("make", [
    lambda: "export const A = (x: number) => " + "x ? <b /> : " * 2000 + "<i />;\n",
    lambda: "export function A() {\n" + "if (Math.random() > 2) {\n" * 60 + "return <b />;\n" + "}\n" * 60 + "return <i />;\n}\n",
    lambda: "const { " + ", ".join(f"n{i}" for i in range(3000)) + " } = (() => <div>" + "<p>x</p>" * 3000
            + "</div>)();\nexport const A = () => <b>{n1}</b>;\n",
], ids=["ternary-chain-2000", "nested-dead-ifs", "destructure-3000-names"])
def test_deep_and_wide_files_are_summarised_whole(pool, make):
    """Iterative walks, each condition evaluated once, one walk per initializer: these finish and
    the summary stays linear in the file (a 3,000-name destructuring owns its JSX once)."""
    code = make()
    result = pool.compile(code, level="build")
    assert result.ok and result.elapsed_s < 10.0, result.diagnostics
    owners = [e["owners"] for e in result.summary["elements"]]
    assert all(len(o) <= 1 for o in owners)
    if "Math.random" in code:
        assert owners == [[], ["A"]]  # the <b> behind 60 dead ifs is not shown
