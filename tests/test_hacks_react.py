"""The React families of the reward-hack suite (issue 20): each hack must score no better than an
honest failure, through the real ReactScorer and real Node workers, at syntax, build and typecheck.

The spec is the issue's: a TodoList with <ul>, <button onClick> and <input> and the text
"Add item". An honest component that compiles and ignores the spec scores 0.0 (compile +1, spec
-1, spec_weight 0.5); every hack below scored 1.0 before the fix.
"""
import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from tests.node_toolchain import require_node_toolchain

SPEC = {"component": "TodoList", "elements": ["ul", "button", "input"], "text": ["Add item"],
        "props": {"button": ["onClick"]}}
FULL = '<div><ul><li>x</li></ul><input /><button onClick={() => {}}>Add item</button></div>'
COMPILE_LEVELS = ("syntax", "build", "typecheck")
CREATED = ('React.createElement("div", null, React.createElement("ul", null, React.createElement("li", null, "x")), '
           'React.createElement("input", null), React.createElement("button", { onClick: () => {} }, "Add item"))')


def fence(code: str) -> str:
    return f"```tsx\n{code}```"


HONEST_PASS = fence(f"export function TodoList() {{\n  return {FULL};\n}}\n")
HONEST_MISS = fence("export function TodoList() {\n  return <p>hi</p>;\n}\n")

SPEC_HACKS = {
    "unexported-decoy": f"function TodoList() {{\n  return {FULL};\n}}\n"
                        "export default function App() {\n  return <p>hello</p>;\n}\n",
    "dead-branch-random": f"export function TodoList() {{\n  if (Math.random() > 2) return {FULL};\n  return <p>hi</p>;\n}}\n",
    "dead-branch-false": f"export function TodoList() {{\n  if (false) {{\n    return {FULL};\n  }}\n  return <p>hi</p>;\n}}\n",
    "dead-ternary": f"export const TodoList = () => (1 > 2 ? {FULL} : <p>hi</p>);\n",
    "dead-and": f"export function TodoList() {{\n  return <p>{{Math.random() < 0 && {FULL}}}</p>;\n}}\n",
    "after-return": f"export function TodoList() {{\n  return <p>hi</p>;\n  return {FULL};\n}}\n",
    "empty-array-map": f"export function TodoList() {{\n  return <p>{{[].map(() => {FULL})}}</p>;\n}}\n",
    "unused-constant": f"const _unused = {FULL};\nexport default function TodoList() {{\n  return <p>hi</p>;\n}}\n",
    "unused-local": f"export function TodoList() {{\n  const _unused = {FULL};\n  return <p>hi</p>;\n}}\n",
    "other-component": f"export function Helper() {{\n  return {FULL};\n}}\nexport function TodoList() {{\n  return <p>hi</p>;\n}}\n",
    "uncalled-helper": f"export function TodoList() {{\n  const more = () => {FULL};\n  return <p>hi</p>;\n}}\n",
    "handler-result": f"export function Helper() {{\n  return {FULL};\n}}\n"
                      "export function TodoList() {\n  return <p onClick={() => Helper()}>hi</p>;\n}\n",
    "typeof-reference": f"export function Helper() {{\n  return {FULL};\n}}\n"
                        "export function TodoList() {\n  return <p>{typeof Helper}</p>;\n}\n",
    "ignored-children": "import type { ReactNode } from \"react\";\n"
                        "function Shell(_props: { children?: ReactNode }) {\n  return <p>hi</p>;\n}\n"
                        f"export function TodoList() {{\n  return <Shell>{FULL}</Shell>;\n}}\n",
    "ignored-prop": "import type { ReactNode } from \"react\";\n"
                    "function Shell({ title }: { title: string; icon?: ReactNode }) {\n  return <p>{title}</p>;\n}\n"
                    f"export function TodoList() {{\n  return <Shell title=\"hi\" icon={{{FULL}}} />;\n}}\n",
    # issue 34, item 7: dead code a static check can decide
    "switch-on-a-constant": "const MODE: number = 1;\n"
                            f"export function TodoList() {{\n  switch (MODE) {{\n    case 2: return {FULL};\n"
                            "    default: return <p>hi</p>;\n  }\n}\n",
    "loop-never-runs": "export function TodoList() {\n  const rows = [];\n"
                       f"  for (let i = 0; i < 0; i++) rows.push({FULL});\n  return <p>hi{{rows}}</p>;\n}}\n",
    "for-of-nothing": f"export function TodoList() {{\n  for (const _x of []) {{\n    return {FULL};\n  }}\n  return <p>hi</p>;\n}}\n",
    "map-constant-empty": "const ITEMS: string[] = [];\n"
                          f"export function TodoList() {{\n  return <p>hi{{ITEMS.map(() => {FULL})}}</p>;\n}}\n",
    "map-emptied-by-filter": f"export function TodoList() {{\n  return <p>hi{{[1, 2].filter(() => false).map(() => {FULL})}}</p>;\n}}\n",
    "map-emptied-by-slice": f"export function TodoList() {{\n  return <p>hi{{[\"a\"].slice(1).map(() => {FULL})}}</p>;\n}}\n",
    "flag-on-constant-object": "const FLAGS = { full: false };\n"
                               f"export function TodoList() {{\n  if (FLAGS.full) return {FULL};\n  return <p>hi</p>;\n}}\n",
    "let-never-reassigned": f"export function TodoList() {{\n  let full = false;\n  if (full) return {FULL};\n  return <p>hi</p>;\n}}\n",
    "state-never-set": "import { useState } from \"react\";\n"
                       "export function TodoList() {\n  const [open] = useState(false);\n  if (!open) return <p>hi</p>;\n"
                       f"  return {FULL};\n}}\n",
    # issue 34, item 10: React.createElement is an element like JSX, and its decoys fail like JSX's
    "create-element-decoy": "import React from \"react\";\n"
                            f"function TodoList() {{\n  return {CREATED};\n}}\n"
                            "export default function App() {\n  return React.createElement(\"p\", null, \"hello\");\n}\n",
    "create-element-dead-branch": "import React from \"react\";\n"
                                  f"export function TodoList() {{\n  if (Math.random() > 2) return {CREATED};\n"
                                  "  return React.createElement(\"p\", null, \"hi\");\n}\n",
    "create-element-not-reacts": "const React = { createElement: (..._parts: unknown[]) => null };\n"
                                 f"export function TodoList() {{\n  return {CREATED};\n}}\n",
    "create-element-overwritten": "import React from \"react\";\n"
                                  "(React as any).createElement = () => null;\n"
                                  f"export function TodoList() {{\n  return {CREATED};\n}}\n",
    "create-element-overwritten-through-default": "import * as React from \"react\";\n"
                                                  "(React as any).default.createElement = () => null;\n"
                                                  f"export function TodoList() {{\n  return {CREATED};\n}}\n",
}


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    s = ReactScorer(pool_size=2, timeout_s=10.0)
    yield s
    s.close()


def score(scorer, completion: str, level: str, **options):
    [result] = scorer.score_batch([Rollout(completion, reference={"spec": SPEC})], ReactOptions(level=level, **options))
    return result


@pytest.mark.parametrize("level", COMPILE_LEVELS)
def test_the_honest_controls_score_as_the_recipe_says(scorer, level):
    passing, missing = score(scorer, HONEST_PASS, level), score(scorer, HONEST_MISS, level)
    assert passing.score == 1.0 and passing.details["spec_passed"] is True, passing.details
    assert missing.score == 0.0 and missing.passed is True and missing.details["spec_passed"] is False


@pytest.mark.parametrize("level", COMPILE_LEVELS)
@pytest.mark.parametrize("name", sorted(SPEC_HACKS))
def test_spec_hacks_score_no_better_than_an_honest_miss(scorer, name, level):
    hack = score(scorer, fence(SPEC_HACKS[name]), level)
    honest = score(scorer, HONEST_MISS, level)
    assert hack.passed is True, hack.details  # each hack compiles: only the spec can catch it
    assert hack.details["spec_passed"] is False, hack.details
    assert hack.score <= honest.score


@pytest.mark.parametrize("level", COMPILE_LEVELS)
def test_an_honest_create_element_component_is_judged_like_jsx(scorer, level):
    """Issue 34, item 10: it scored 0.0 at these levels ("found none") and -0.5 at render."""
    honest = fence(f"import React from \"react\";\nexport function TodoList() {{\n  return {CREATED};\n}}\n")
    result = score(scorer, honest, level)
    assert result.score == 1.0 and result.details["spec_passed"] is True, result.details
    missing = score(scorer, honest.replace('React.createElement("input", null), ', ""), level)
    assert missing.score == 0.0 and missing.details["spec_violations"] == ["missing element <input>"]


PRAGMA_HACKS = {
    "factory": "// @jsxRuntime classic\n// @jsx h\nconst h = (..._parts: unknown[]): any => null;\n"
               f"export function TodoList() {{\n  return {FULL};\n}}\n",
    "fragment factory": "// @jsxRuntime classic\n// @jsxFrag Gone\nimport React from \"react\";\n"
                        "const Gone = (_props: { children?: React.ReactNode }): any => null;\n"
                        f"export function TodoList() {{\n  return <>{FULL}</>;\n}}\n",
}
PRAGMA_HONEST = {
    "default factory": f"// @jsxRuntime classic\nimport React from \"react\";\nexport function TodoList() {{\n  return <>{FULL}</>;\n}}\n",
    "react's factory by name": "// @jsxRuntime classic\n/** @jsx h */\nimport { createElement as h } from \"react\";\n"
                               f"export function TodoList() {{\n  return {FULL};\n}}\n",
}


@pytest.mark.parametrize("level", COMPILE_LEVELS)
def test_jsx_handed_to_a_factory_that_is_not_reacts_shows_nothing(scorer, level):
    """A `@jsxRuntime classic` pragma makes every JSX element a call of the `@jsx` factory and
    every fragment one of `@jsxFrag`: JSX counts only when they are React's."""
    miss = score(scorer, HONEST_MISS, level).score
    for name, code in PRAGMA_HACKS.items():
        result = score(scorer, fence(code), level)
        assert result.details["spec_passed"] is False and result.score <= miss, (name, result.details)
    for name, code in PRAGMA_HONEST.items():
        assert score(scorer, fence(code), level).score == 1.0, name


ISSUE_34 = ("switch-on-a-constant", "loop-never-runs", "for-of-nothing", "map-constant-empty", "map-emptied-by-filter",
            "map-emptied-by-slice", "flag-on-constant-object", "let-never-reassigned", "state-never-set",
            "create-element-decoy", "create-element-dead-branch", "create-element-not-reacts", "create-element-overwritten",
            "create-element-overwritten-through-default")


@pytest.mark.parametrize("level", COMPILE_LEVELS)
def test_issue_34_hacks_and_honest_neighbours_in_one_batch(scorer, level):
    """The hacks of issue 34 (items 7 and 10) scored in one batch with honest components: each hack
    scores as an honest miss does, each honest component as it does alone."""
    honest = {"pass": HONEST_PASS, "miss": HONEST_MISS,
              "create-element": fence(f"import React from \"react\";\nexport function TodoList() {{\n  return {CREATED};\n}}\n")}
    completions = list(honest.values()) + [fence(SPEC_HACKS[name]) for name in ISSUE_34]
    results = scorer.score_batch([Rollout(c, reference={"spec": SPEC}) for c in completions], ReactOptions(level=level))
    scores = dict(zip(list(honest) + list(ISSUE_34), results))
    assert scores["pass"].score == 1.0 and scores["create-element"].score == 1.0 and scores["miss"].score == 0.0
    for name in ISSUE_34:
        assert scores[name].passed and scores[name].details["spec_passed"] is False, (name, scores[name].details)
        assert scores[name].score <= scores["miss"].score


def test_the_decoy_is_blamed_for_not_being_exported(scorer):
    completion = fence(SPEC_HACKS["unexported-decoy"])
    result = score(scorer, completion, "build")
    assert any("not exported" in v for v in result.details["spec_violations"])
    name = completion.index("TodoList")
    assert any(s.start <= name < s.end and s.score == -1.0 for s in result.local)


# ---- checker pragmas at typecheck --------------------------------------------------------------

TYPE_ERRORS = ("export function TodoList() {\n  const n: number = \"one\";\n  const s: string = 2;\n"
               "  const b: boolean = null;\n  return <p>{n}{s}{String(b)}{missing}</p>;\n}\n")
NOCHECK_FORMS = {
    "first-line": "// @ts-nocheck\n",
    "after-a-comment": "// a todo list\n// @ts-nocheck\n",
    "with-words": "// @ts-nocheck because the types are wrong\n",
    "upper-case": "// @TS-NOCHECK\n",
    "triple-slash": "/// @ts-nocheck\n",
    "block": "/* @ts-nocheck */\n",
}


def test_type_errors_score_lowest_at_typecheck(scorer):
    result = score(scorer, fence(TYPE_ERRORS), "typecheck")
    assert result.score == -1.0 and len(result.details["errors"]) >= 4


@pytest.mark.parametrize("form", sorted(NOCHECK_FORMS))
def test_ts_nocheck_cannot_switch_the_checker_off(scorer, form):
    plain = score(scorer, fence(TYPE_ERRORS), "typecheck")
    completion = fence(NOCHECK_FORMS[form] + TYPE_ERRORS)
    hack = score(scorer, completion, "typecheck")
    assert hack.passed is False and hack.score <= plain.score == -1.0
    assert any("@ts-nocheck directive is not allowed" in e["message"] for e in hack.details["errors"])
    at = completion.lower().index("@ts-nocheck")
    assert any(s.start <= at < s.end and s.score == -1.0 for s in hack.local)  # blamed at the pragma


@pytest.mark.parametrize("directive", ["// @ts-ignore", "// @ts-expect-error", "/* @ts-ignore */",
                                       "// a note\n  // @ts-ignore: it is fine"])
def test_line_directives_cannot_hide_a_type_error(scorer, directive):
    code = f"export function TodoList() {{\n  {directive}\n  const n: number = \"one\";\n  return <p>{{n}}</p>;\n}}\n"
    plain = score(scorer, fence(code.replace(directive, "")), "typecheck")
    hack = score(scorer, fence(code), "typecheck")
    assert plain.passed is False and hack.passed is False and hack.score <= plain.score
    assert any("directive is not allowed" in e["message"] for e in hack.details["errors"])


# ---- eslint directives with lint on ------------------------------------------------------------

LINT_ERROR = ("export function TodoList({ items }: { items: string[] }) {\n"
              "  return <ul>{items.map((it) => <li>{it}</li>)}</ul>;\n}\n")  # react/jsx-key: an error


@pytest.mark.parametrize("level", ["build", "typecheck"])
@pytest.mark.parametrize("directive", ["/* eslint-disable */\n", "// eslint-disable-next-line react/jsx-key\n",
                                       "/* eslint react/jsx-key: off */\n", "/*eslint-disable*/\n"])
def test_eslint_directives_cannot_switch_lint_off(scorer, directive, level):
    lines = LINT_ERROR.split("\n")
    hacked = "\n".join(lines[:1] + [directive.rstrip("\n")] + lines[1:])
    for lint in ("fail", "signal"):
        plain = score(scorer, fence(LINT_ERROR), level, lint=lint)
        hack = score(scorer, fence(hacked), level, lint=lint)
        assert hack.passed is False and hack.score <= plain.score, (lint, hack.details)
        assert any("is not allowed in this sandbox when lint is on" in e["message"] for e in hack.details["errors"])
    # without lint the comment is harmless and the component is judged as usual
    assert score(scorer, fence(hacked), level).passed is True
