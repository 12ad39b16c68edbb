"""benchmarks/what_compiles.py sorts compiling completions by the spec check's verdict on the
component's name: checked here through the real React scorer (Node, esbuild), since the sort
reads the scorer's own violation messages."""
from __future__ import annotations

import pytest

from benchmarks.what_compiles import KINDS, kind_of
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from tests.node_toolchain import require_node_toolchain

REFERENCE = {"spec": {"component": "TodoList", "elements": ["p", "label"], "text": ["Back"], "props": {}}}
CASES = {
    'export function TodoList() {\n  return <label><p>Back</p></label>;\n}\n': KINDS[0],
    'export function TodoList() {\n  return <p>Back</p>;\n}\n': KINDS[1],
    'export function Foo() {\n  return <label><p>Back</p></label>;\n}\n': KINDS[2],
    '      <img src="/grape.png" alt="grape" />\n': KINDS[3],   # what a run of the study ended on
    'export function TodoList() {\n  return <p>Back</label>;\n}\n': None,   # does not compile
}


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    s = ReactScorer(pool_size=1, timeout_s=10.0)
    yield s
    s.close()


def test_each_kind_of_compiling_completion_is_told_apart(scorer):
    results = scorer.score_batch([Rollout(c, "Write TodoList.", REFERENCE) for c in CASES],
                                 ReactOptions(level="build", spec_weight=0.5))
    kinds = [kind_of(r.passed, r.details.get("spec_violations") or []) for r in results]
    assert kinds == list(CASES.values())
    # the reward does not prefer the fragment: it scores as a compiling component off the spec does
    assert results[3].score == results[1].score == 0.0 and results[0].score == 1.0
