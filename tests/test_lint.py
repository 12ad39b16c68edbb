"""Lint (eslint-plugin-react's and eslint-plugin-react-hooks' rules) in the compile workers, through
the default engine (oxlint): findings at their spans, bounded, and as local signals of the react
scorer (real Node workers). Both engines side by side: tests/test_lint_engines.py."""
from __future__ import annotations

import pytest

from botgrpo.reward_server.spans import compose
from botgrpo.reward_server.react.render import MAX_LINT_SPANS
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.spans import char_scores, default_split
from botgrpo.sandbox.node_pool import NodePool
from tests.node_toolchain import require_node_toolchain

FINDINGS = '''import { useEffect, useState } from "react";

export default function Todo({ items, title }: { items: string[]; title: string }) {
  const [count, setCount] = useState(0);
  useEffect(() => {
    setCount(items.length);
  }, []);
  return (
    <div class="todo">
      <h2>{title}</h2>
      <ul>{items.map((it) => <li>{it}</li>)}</ul>
      <a href="https://example.com" target="_blank">more</a>
    </div>
  );
}
'''
CLEAN = '''export default function Badge({ label }: { label: string }) {
  return <span className="badge">{label}</span>;
}
'''
HOOK_IN_LOOP = '''import { useState } from "react";

export function Grid({ rows }: { rows: number }) {
  for (let i = 0; i < rows; i++) {
    useState(i);
  }
  return <table />;
}
'''


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=15.0) as p:
        yield p


@pytest.fixture(scope="module")
def scorer(pool):
    return ReactScorer(pool)


def by_rule(result):
    return {d.rule: FINDINGS[d.start:d.end] for d in result.lint}


def test_findings_carry_rule_and_span(pool):
    result = pool.compile(FINDINGS, "build", lint=True)
    assert result.ok  # lint never changes the compile verdict by itself
    found = by_rule(result)
    assert found["react/no-unknown-property"] == 'class="todo"'
    assert found["react/jsx-key"] == "<li>{it}</li>"
    assert found["react-hooks/exhaustive-deps"] == "[]"
    assert found["react/jsx-no-target-blank"] == '<a href="https://example.com" target="_blank">'
    severities = {d.rule: d.severity for d in result.lint}
    assert severities["react-hooks/exhaustive-deps"] == "warning" and severities["react/jsx-key"] == "error"
    assert all(d.line == FINDINGS.count("\n", 0, d.start) + 1 for d in result.lint)


def test_rules_of_hooks_and_every_level(pool):
    for level in ("syntax", "build", "typecheck"):
        result = pool.compile(HOOK_IN_LOOP, level, lint=True)
        rules = [d.rule for d in result.lint]
        assert rules == ["react-hooks/rules-of-hooks"], (level, result.lint)
        assert HOOK_IN_LOOP[result.lint[0].start:result.lint[0].end] == "useState"
    assert pool.compile(CLEAN, "build", lint=True).lint == []
    assert pool.compile(FINDINGS, "build").lint == []  # not asked
    assert pool.compile("export const = ;", "build", lint=True).lint == []  # no parse, no lint


def test_findings_are_bounded(pool):
    many = "export default function Many() {\n  return <ul>\n" + "".join(
        f"    {{[{i}].map((x) => <li>{{x}}</li>)}}\n" for i in range(120)) + "  </ul>;\n}\n"
    result = pool.compile(many, "build", lint=True)
    assert 0 < len(result.lint) <= 50


def test_lint_findings_are_local_signals(scorer):
    completion = f"```tsx\n{FINDINGS}```\n"
    offset = completion.index(FINDINGS)
    [signal] = scorer.score_batch([Rollout(completion)], ReactOptions(level="build", lint="signal"))
    assert signal.passed and signal.score == 1.0
    chars = char_scores(signal.local, signal.local_default, len(completion))
    assert chars[offset + FINDINGS.index("class")] == -1.0 and chars[offset + FINDINGS.index("<h2>")] == 0.0
    scores = compose(signal, len(completion), default_split(completion), 0.5)
    assert min(scores) < max(scores) == 1.0  # passing, nudged down where the findings are
    rules = {entry["rule"] for entry in signal.details["lint"]}
    assert {"react/jsx-key", "react/no-unknown-property"} <= rules
    assert all(entry["line"] == completion.count("\n", 0, entry["start"]) + 1 for entry in signal.details["lint"])

    [failing] = scorer.score_batch([Rollout(completion)], ReactOptions(level="build", lint="fail"))
    assert failing.passed is False and failing.score == -1.0 and failing.details["reason"] == "compile error"
    [off] = scorer.score_batch([Rollout(completion)], ReactOptions(level="build"))
    assert off.passed and off.local == [] and "lint" not in off.details
    [none] = scorer.score_batch([Rollout(completion)], ReactOptions(level="build", lint="signal", local="none"))
    assert none.local == []
    [warning_only] = scorer.score_batch([Rollout(f"```tsx\n{CLEAN}```")], ReactOptions(level="build", lint="fail"))
    assert warning_only.passed


def test_lint_spans_are_bounded_in_the_reward(scorer):
    many = "export default function Many() {\n  return <ul>\n" + "".join(
        f"    {{[{i}].map((x) => <li>{{x}}</li>)}}\n" for i in range(60)) + "  </ul>;\n}\n"
    [result] = scorer.score_batch([Rollout(many)], ReactOptions(level="build", lint="signal"))
    assert len(result.local) == MAX_LINT_SPANS


def test_lint_at_render(scorer):
    from botgrpo.sandbox import isolation as iso
    from tests.helpers import require_host
    require_host(iso.render_refusal(iso.detect().layers) is None, "bubblewrap with user namespaces (the render layers)")
    [result] = scorer.score_batch([Rollout(f"```tsx\n{FINDINGS}```")],
                                  ReactOptions(level="render", lint="fail"))
    assert result.details["render"]["status"] == "ok" and result.passed is False
    assert result.details["reason"] == "lint error" and result.score == 0.0  # builds (+1), fails the verdict (-1)
