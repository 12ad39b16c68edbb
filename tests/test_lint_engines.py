"""The two lint engines of the ``lint`` option (oxlint, the default, and ESLint) through real Node
workers: every rule of ESLint's set is either found by oxlint on the same characters or listed
as not covered with its reason; both engines agree on a corpus; one oxlint batch never mixes its
rollouts' findings; no comment switches a rule off; a broken oxlint run costs only its file's
findings; a bad engine name is a clear error."""
from __future__ import annotations

import json
import subprocess

import pytest
from pydantic import ValidationError

from benchmarks.compile_throughput import component
from benchmarks.lint_engines import DEFECTS, ESLINT_ONLY, findings, lint_corpus
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.service import RequestRejected, ScoringService
from botgrpo.sandbox.launcher import NODE_DIR, node_binary
from botgrpo.sandbox.node_pool import LINT_ENGINES, NodePool
from tests.node_toolchain import require_node_toolchain

ENGINES = tuple(LINT_ENGINES)

#: One hand-written case per rule: (code, the characters ESLint's finding covers, severity).
CASES = {
    "react/jsx-key": ("export const L = ({ xs }: { xs: string[] }) => <ul>{xs.map((x) => <li>{x}</li>)}</ul>;\n",
                      "<li>{x}</li>", "error"),
    "react/jsx-no-comment-textnodes": ("export const C = () => <div>// a note</div>;\n", "// a note", "error"),
    "react/jsx-no-duplicate-props": ('export const D = () => <div id="a" id="b" />;\n', 'id="b"', "error"),
    "react/jsx-no-target-blank": ('export const T = () => <a href="https://example.com" target="_blank">out</a>;\n',
                                  '<a href="https://example.com" target="_blank">', "error"),
    "react/jsx-no-undef": ('export const U = () => <Missing label="x" />;\n', "Missing", "error"),
    "react/no-children-prop": ('export const P = () => <div children="text" />;\n', 'children="text"', "error"),
    "react/no-danger-with-children": (
        'export const G = () => <div dangerouslySetInnerHTML={{ __html: "x" }}>child</div>;\n',
        '<div dangerouslySetInnerHTML={{ __html: "x" }}>child</div>', "error"),
    "react/no-direct-mutation-state": (
        'import React from "react";\nexport class S extends React.Component<{}, { n: number }> {\n'
        "  state = { n: 0 };\n  bump() {\n    this.state.n = 1;\n  }\n"
        "  render() {\n    return <p>{this.state.n}</p>;\n  }\n}\n", "this.state", "error"),
    "react/no-find-dom-node": (
        'import React from "react";\nimport ReactDOM from "react-dom";\nexport class F extends React.Component {\n'
        "  componentDidMount() {\n    ReactDOM.findDOMNode(this);\n  }\n  render() {\n    return <p />;\n  }\n}\n",
        "ReactDOM.findDOMNode", "error"),
    "react/no-is-mounted": (
        'import React from "react";\nexport class M extends React.Component {\n'
        "  tick() {\n    if (this.isMounted()) return;\n  }\n  render() {\n    return <p />;\n  }\n}\n",
        "this.isMounted", "error"),
    "react/no-render-return-value": (
        'import ReactDOM from "react-dom";\nconst App = () => <p />;\n'
        "export const inst = ReactDOM.render(<App />, document.body);\n", "ReactDOM.render", "error"),
    "react/no-string-refs": ('import React from "react";\nexport class R extends React.Component {\n'
                             '  render() {\n    return <div ref="box" />;\n  }\n}\n', 'ref="box"', "error"),
    "react/no-unescaped-entities": ("export const E = () => <p>it's here</p>;\n", "'", "error"),
    "react/no-unknown-property": ('export const K = () => <div class="x" />;\n', 'class="x"', "error"),
    "react-hooks/rules-of-hooks": ('import { useState } from "react";\nexport function H({ on }: { on: boolean }) {\n'
                                   "  if (on) {\n    useState(0);\n  }\n  return <p />;\n}\n", "useState", "error"),
    "react-hooks/exhaustive-deps": (
        'import { useEffect, useState } from "react";\nexport function X({ id }: { id: number }) {\n'
        "  const [n, setN] = useState(0);\n  useEffect(() => {\n    setN(id);\n  }, []);\n  return <p>{n}</p>;\n}\n",
        "[]", "warning"),
}
#: ESLint's rules that oxlint does not have, and why that is acceptable.
NOT_COVERED = {
    "react/no-deprecated": "oxlint has no such rule (React APIs deprecated or removed in React 18/19: "
                           "ReactDOM.render, componentWillMount, ...); only lint_engine=eslint reports it",
    "react/jsx-uses-vars": "reports nothing by itself: it marks JSX names as used for no-unused-vars, "
                           "which neither engine turns on",
}
DEPRECATED = ('import React from "react";\nexport class W extends React.Component {\n'
              "  componentWillMount() {}\n  render() {\n    return <p />;\n  }\n}\n")


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=15.0) as p:
        yield p


def node_json(script: str):
    out = subprocess.run([node_binary(), "--input-type=module", "-e", script], cwd=NODE_DIR,
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def spans(code: str, result) -> list[tuple[str, str, str]]:
    return sorted((d.rule, code[d.start:d.end], d.severity) for d in result.lint)


def test_every_eslint_rule_is_covered_or_listed():
    require_node_toolchain()
    sets = node_json('const [l, o] = await Promise.all([import("./lib/lint.mjs"), import("./lib/oxlint.mjs")]);'
                     "console.log(JSON.stringify({ eslint: l.ruleIds('all'), oxlint: Object.keys(o.RULES),"
                     " unmapped: o.UNMAPPED }));")
    assert set(sets["eslint"]) == set(CASES) | set(NOT_COVERED)
    assert set(sets["oxlint"]) == set(CASES) and set(sets["unmapped"]) == set(NOT_COVERED) == ESLINT_ONLY
    assert not set(CASES) & set(NOT_COVERED)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_rule_is_found_on_the_same_characters(pool, engine, rule):
    code, text, severity = CASES[rule]
    result = pool.compile(code, "syntax", lint=engine)
    assert result.ok
    found = [f for f in spans(code, result) if f[0] not in ESLINT_ONLY]
    assert found == [(rule, text, severity)], (engine, result.lint)


def test_what_oxlint_does_not_cover_is_eslint_only(pool):
    assert [d.rule for d in pool.compile(DEPRECATED, "syntax", lint="eslint").lint] == ["react/no-deprecated"]
    assert pool.compile(DEPRECATED, "syntax", lint="oxlint").lint == []


def test_engines_agree_on_a_corpus(pool):
    codes = lint_corpus(160, seed=7)
    ox = pool.compile_many(codes, "syntax", lint="oxlint")
    es = pool.compile_many(codes, "syntax", lint="eslint")
    differ = [(i, findings(a), findings(b)) for i, (a, b) in enumerate(zip(ox, es)) if findings(a) != findings(b)]
    assert not differ, differ[:2]
    rules = {f[0] for r in es for f in findings(r)}
    assert len(rules) >= 9 and sum(len(findings(r)) for r in es) > 150  # the corpus exercises the rules
    unicode = [i for i, c in enumerate(codes) if "🚀" in c and findings(es[i])]
    assert unicode  # offsets after non-ASCII text (oxlint counts UTF-8 bytes, the results UTF-16 units)


def test_default_engine_is_oxlint(pool):
    code = DEPRECATED.replace("<p />", "<p class=\"x\" />")
    assert [d.rule for d in pool.compile(code, "build", lint=True).lint] == ["react/no-unknown-property"]
    assert ReactOptions().lint_engine == "oxlint"


def test_one_batch_never_mixes_its_rollouts_findings():
    require_node_toolchain()
    rules = [r for r in DEFECTS if r != "unicode"]
    codes = []
    for i, rule in enumerate(rules):  # each file its own defect, a clean file after each
        codes += [DEFECTS[rule](component(1000 + i)), component(2000 + i)]
    with NodePool(size=1, timeout_s=15.0, max_batch=64) as one:  # one worker: the lot in one oxlint run
        alone = [one.compile(c, "syntax", lint="oxlint") for c in codes]
        together = one.compile_many(codes, "syntax", lint="oxlint")
    for i, rule in enumerate(rules):
        assert {d.rule for d in alone[2 * i].lint} == {rule}, (rule, alone[2 * i].lint)
        assert alone[2 * i + 1].lint == []
    for code, a, t in zip(codes, alone, together):
        assert spans(code, a) == spans(code, t)


def test_a_short_file_after_a_long_one_sees_none_of_it(pool):
    short = "export const A = () => <p>ok</p>;\n"
    keyed = "".join(CASES["react/jsx-key"][0].replace("const L", f"const L{i}") for i in range(30))
    long = "//" + "-" * (len(short) - 3) + "\n" + keyed  # what follows `short`'s length: 30 findings
    assert len(pool.compile(long, "syntax", lint="oxlint").lint) == 30
    assert pool.compile(short, "syntax", lint="oxlint").lint == []  # the same slot file, rewritten
    assert len(pool.compile(short + keyed, "syntax", lint="oxlint").lint) == 30
    huge = "//" + "-" * 70_000 + "\n" + keyed  # too much to pad later: the slot file is truncated instead
    assert len(pool.compile(huge, "syntax", lint="oxlint").lint) == 30
    assert pool.compile(short, "syntax", lint="oxlint").lint == []


DIRECTIVES = ["// oxlint-disable-next-line react/jsx-key\n", "/* oxlint-disable */\n", "//oxlint-disable-next-line\n",
              "/** OXLINT-disable */\n", "// eslint-disable-next-line react/jsx-key\n", "/* eslint-disable */\n",
              "/* eslint react/jsx-key: off */\n", "//eslint-disable-next-line\n"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("directive", DIRECTIVES)
def test_no_comment_switches_a_rule_off(pool, engine, directive):
    code = CASES["react/jsx-key"][0]
    hacked = directive + code
    line_directive = code.replace("<li>{x}</li>)}", "<li>{x}</li>)}{/* " + directive.strip("/*\n ") + " */}")
    for text in (hacked, line_directive):
        result = pool.compile(text, "syntax", lint=engine)
        assert ("react/jsx-key", "<li>{x}</li>", "error") in spans(text, result), (engine, text, result.lint)


@pytest.fixture(scope="module")
def debug_pool():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=8.0, enable_debug_levels=True) as p:  # one oxlint run: 3.6 s of CPU
        yield p


@pytest.mark.parametrize("how", ["spin", "crash"])  # over its CPU budget, dead (a stall: tests/test_cpu_budget.py)
def test_a_broken_oxlint_run_costs_only_its_files_findings(debug_pool, how):
    code, text, _ = CASES["react/jsx-key"]
    broken = debug_pool._debug("syntax", code, lint="oxlint", debug_oxlint=how)
    mates = [debug_pool.submit(c, "syntax", lint="oxlint") for c in (code, CASES["react/no-unknown-property"][0])]
    result = broken.result(timeout=60)
    assert result.ok and result.lint == [] and not result.timed_out  # no findings, never a failed compile
    assert spans(code, mates[0].result()) == [("react/jsx-key", text, "error")]
    assert [d.rule for d in mates[1].result().lint] == ["react/no-unknown-property"]
    after = debug_pool.compile(code, "syntax", lint="oxlint")  # a fresh oxlint host
    assert spans(code, after) == [("react/jsx-key", text, "error")]
    assert debug_pool.stats()["restarts"] == 0  # the worker itself never stalled


def test_a_bad_engine_name_is_a_clear_error(pool):
    with pytest.raises(ValueError, match="lint must be a bool or one of \\('oxlint', 'eslint'\\)"):
        pool.compile(CASES["react/jsx-key"][0], "syntax", lint="jshint")
    with pytest.raises(ValidationError, match="lint_engine"):
        ReactOptions(lint="signal", lint_engine="jshint")
    with pytest.raises(RequestRejected) as rejected:
        ScoringService._options("react", {"lint": "signal", "lint_engine": "jshint"})
    assert rejected.value.status == 422 and "lint_engine" in rejected.value.detail
    schema = ReactOptions.model_json_schema()["properties"]["lint_engine"]
    assert schema["enum"] == ["oxlint", "eslint"] and schema["default"] == "oxlint"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_scorer_lints_with_the_chosen_engine(pool, engine):
    completion = f"```tsx\n{DEPRECATED}```\n"
    [result] = ReactScorer(pool).score_batch([Rollout(completion)],
                                             ReactOptions(level="build", lint="fail", lint_engine=engine))
    rules = [entry["rule"] for entry in result.details.get("lint", [])]
    assert rules == (["react/no-deprecated"] if engine == "eslint" else [])
    assert result.passed is (engine == "oxlint")


@pytest.mark.parametrize("engine", ENGINES)
def test_render_level_takes_the_hooks_verdict_from_the_engine(pool, engine):
    from botgrpo.sandbox import isolation as iso
    from tests.helpers import require_host
    require_host(iso.render_refusal(iso.detect().layers) is None, "bubblewrap with user namespaces (the render layers)")
    # something visible: an empty render is its own verdict, which "hooks" does not replace
    code = (CASES["react-hooks/rules-of-hooks"][0].replace("export function H", "export default function H")
            .replace("<p />", "<p>on</p>"))
    result = pool.compile(code, "render", lint=engine, render={"props": {"on": True}})
    assert result.render.status == "hooks", result.render
    assert [d.rule for d in result.lint] == ["react-hooks/rules-of-hooks"]
