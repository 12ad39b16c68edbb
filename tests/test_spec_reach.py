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
    # issue 34, item 10: no JSX at all; every part an element of React's createElement
    "create-element": """import React from "react";
function Row({ t }: { t: string }) { return React.createElement("li", null, t); }
export function TodoList() {
  return React.createElement("ul", { className: "list" }, React.createElement(Row, { t: "a" }),
    React.createElement("li", null, "b"), React.createElement("button", { onClick: () => {} }, "Add item"));
}
""",
    "create-element-named-import": """import { createElement as h, useState } from "react";
export default function TodoList() {
  const [items] = useState(["a"]);
  return h("ul", null, items.map((it) => h("li", { key: it }, it)), h("button", { onClick: () => {} }, "Add item"));
}
""",
    # issue 34, item 7: the decidable forms stay live when they are live
    "state-with-a-setter": """import { useState } from "react";
export function TodoList() {
  const [open, setOpen] = useState(false);
  if (!open) return <button onClick={() => setOpen(true)}>Add item</button>;
  return <ul><li>a</li></ul>;
}
""",
    "switch-on-a-prop": """export function TodoList({ mode }: { mode: string }) {
  switch (mode) {
    case "list": return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;
    default: return <p>none</p>;
  }
}
""",
    "switch-falls-through": """const MODE: string = "full";
export function TodoList() {
  switch (MODE) {
    case "short":
      return <p>short</p>;
    case "full":
    case "long":
      return <ul><li>a</li><button onClick={() => {}}>Add item</button></ul>;
  }
  return null;
}
""",
    "constant-flag-on": """const FLAGS = { list: true, debug: false } as const;
export function TodoList() {
  if (FLAGS.debug) return <pre>debug</pre>;
  return FLAGS.list ? <ul><li>a</li><button onClick={() => {}}>Add item</button></ul> : null;
}
""",
    "loop-over-state": """import { useState } from "react";
export function TodoList() {
  const [items, setItems] = useState<string[]>(["a"]);
  const rows = [];
  for (let i = 0; i < items.length; i++) rows.push(<li key={i}>{items[i]}</li>);
  return <ul>{rows}<button onClick={() => setItems([...items, "b"])}>Add item</button></ul>;
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
    lambda: "const c0 = 1;\n" + "".join(f"const c{i + 1} = c{i} + c{i};\n" for i in range(60))
            + "export function A() {\n  const rows = [];\n  for (let i = 0; i < c60 - c60; i++) rows.push(<b />);\n"
            + "  return <i>{rows}</i>;\n}\n",
], ids=["ternary-chain-2000", "nested-dead-ifs", "destructure-3000-names", "constants-doubling-in-a-for-head"])
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


# ---- issue 34, item 7: what the static check decides ----------------------------------------------

# each case: a component whose <ul> is live or dead; the <ul> is the only one in the file
DECIDED = {
    # dead: a decidable condition rules the <ul> out
    "switch-on-a-constant": ("switch (1) { case 2: return <ul />; default: return <p />; }", False),
    "switch-string-no-match": ('switch ("a" as string) { case "b": return <ul />; }\n  return <p />;', False),
    "switch-after-break": ("switch (2) { case 2: break; case 3: return <ul />; }\n  return <p />;", False),
    "for-never-runs": ("const rows = [];\n  for (let i = 0; i < 0; i++) rows.push(<ul />);\n  return <p>{rows}</p>;", False),
    "for-of-empty": ("for (const _x of []) { return <ul />; }\n  return <p />;", False),
    "for-in-empty": ("for (const _k in {}) { return <ul />; }\n  return <p />;", False),
    "while-let": ("let go = false;\n  while (go) { return <ul />; }\n  return <p />;", False),
    "map-constant-empty": ("return <p>{EMPTY.map(() => <ul />)}</p>;", False),
    "map-after-filter": ("return <p>{[1, 2].filter(() => false).map(() => <ul />)}</p>;", False),
    "map-after-slice": ('return <p>{["a"].slice(1).map(() => <ul />)}</p>;', False),
    "length-of-constant": ("return <p>{EMPTY.length > 0 && <ul />}</p>;", False),
    "flag-on-constant-object": ("if (FLAGS.show) return <ul />;\n  return <p />;", False),
    "frozen-object": ("if (FROZEN.show) return <ul />;\n  return <p />;", False),
    "let-never-reassigned": ("let show = false;\n  if (show) return <ul />;\n  return <p />;", False),
    "const-from-const": ("const a = 1;\n  const b = a + 1;\n  if (b > 5) return <ul />;\n  return <p />;", False),
    "state-never-set": ("const [open] = useState(false);\n  if (!open) return <p />;\n  return <ul />;", False),
    "state-setter-unused": ("const [n, _setN] = useState(() => 0);\n  return n > 0 ? <ul /> : <p />;", False),
    "state-array-never-set": ("const [items] = useState<string[]>([]);\n  return <p>{items.map(() => <ul />)}</p>;", False),
    "after-break-in-loop": ("for (;;) { break; return <ul />; }\n  return <p />;", False),
    # live: the same shapes where something can change the value
    "switch-on-a-prop": ("switch (props.n) { case 2: return <ul />; }\n  return <p />;", True),
    "switch-undecidable-case": ("switch (1) { case props.n: return <p />; case 1: return <ul />; }\n  return null;", True),
    "for-runs": ("const rows = [];\n  for (let i = 0; i < 2; i++) rows.push(<ul key={i} />);\n  return <p>{rows}</p>;", True),
    "let-written-in-a-handler": ("let show = false;\n  const on = () => { show = true; };\n  if (show) return <ul onClick={on} />;\n  return <p onClick={on} />;", True),
    "let-written-by-destructuring": ("let show = false;\n  [show] = [props.n > 1];\n  if (show) return <ul />;\n  return <p />;", True),
    "let-with-eval": ("let show = false;\n  (0, eval)(\"\");\n  if (show) return <ul />;\n  return <p />;", True),
    "param-shadows-a-constant": ("const f = (SHOW: boolean) => (SHOW ? <ul /> : <p />);\n  return f(props.n > 1);", True),
    "object-changed": ("MUTABLE.show = true;\n  if (MUTABLE.show) return <ul />;\n  return <p />;", True),
    "object-passed-away": ("Object.assign(PASSED, { show: true });\n  if (PASSED.show) return <ul />;\n  return <p />;", True),
    "array-pushed": ("PUSHED.push(1);\n  return <p>{PUSHED.map(() => <ul />)}</p>;", True),
    "array-named-callback": ("return <p>{NAMED.map(keep).map(() => <ul />)}</p>;", True),
    "state-setter-used": ("const [open, setOpen] = useState(false);\n  if (!open) return <p onClick={() => setOpen(true)} />;\n  return <ul />;", True),
    "local-useState": ("const [open] = myState(false);\n  if (!open) return <p />;\n  return <ul />;", True),
    "var-is-not-decided": ("var show = false;\n  if (show) return <ul />;\n  return <p />;", True),
    "random": ("if (Math.random() > 0.99) return <ul />;\n  return <p />;", True),
    # names resolve by scope: an inner declaration is not the outer constant
    "block-const-shadows": ("{\n    const SHOW = true;\n    if (SHOW) return <ul />;\n  }\n  return <p />;", True),
    "outer-constant-in-a-block": ("{\n    const other = 1;\n    if (SHOW) return <ul key={other} />;\n  }\n  return <p />;", False),
    "hoisted-var-shadows": ("function inner() {\n    if (!ON) return <ul />;\n    var ON = 1;\n    return ON;\n  }\n"
                            "  return <p>{inner()}</p>;", True),
    "catch-shadows": ("try { throw props.n; } catch (ON) { if (!ON) return <ul />; }\n  return <p />;", True),
}
PRELUDE = """import { useState } from "react";
const SHOW = false;
const ON = true;
const EMPTY: number[] = [];
const FLAGS = { show: false, label: "x" };
const FROZEN = Object.freeze({ show: false });
const MUTABLE = { show: false };
const PASSED = { show: false };
const PUSHED: number[] = [];
const NAMED = [1];
const keep = (x: number, _i: number, all: number[]) => { all.length = 0; return x; };
function myState<T>(v: T): [T] { return [v]; }
"""


@pytest.mark.parametrize("name", sorted(DECIDED))
def test_what_the_static_check_decides(pool, name):
    body, live = DECIDED[name]
    code = f"{PRELUDE}export function T(props: {{ n: number }}) {{\n  {body}\n}}\n"
    result = pool.compile(code, level="build")
    assert result.ok, result.diagnostics
    [ul] = [e for e in result.summary["elements"] if e["tag"] == "ul"]
    assert (ul["owners"] == ["T"]) is live, (name, ul)
