"""The sorting of a policy's failures (benchmarks/failures.py) and their heat rendering
(benchmarks/heat.py), on verdicts written here (no model, no server), and the committed corpus
of SmolLM2's failing completions: the file the blame benchmark (--corpus) and
tests/test_fuzz_hostile.py read."""
from __future__ import annotations

import json

from benchmarks import failures, heat
from benchmarks.real_model import CORPUS


def _verdict(passed=False, reason=None, errors=(), spec_passed=None, render=None, score=-1.0, token_scores=()):
    return {"score": score, "passed": passed, "error": None, "reason": reason, "spec_passed": spec_passed,
            "spec_violations": [] if spec_passed is not False else ["no <ul> element"],
            "errors": [{"line": 3, "message": m} for m in errors], "render": render, "answer": None,
            "steps": None, "token_scores": list(token_scores)}


def _react(**levels):
    ok = _verdict(passed=True, reason="compiled", spec_passed=True, score=1.0)
    return {"task": "react", "truncated": False, "scored": {level: levels.get(level, ok) for level in failures.REACT_LEVELS}}


def test_a_react_completion_is_placed_at_the_first_level_it_fails():
    typed = _react(typecheck=_verdict(reason="type errors", errors=['Property "x" does not exist on type "{}" (2339)']))
    assert failures.react_failure(typed) == {"level": "typecheck", "kind": "typecheck: Property … does not exist on type … (N)",
                                       "reason": "type errors",
                                       "first_error": 'Property "x" does not exist on type "{}" (2339)'}
    cut = _react(build=_verdict(reason="unterminated code block (truncated?)"))
    assert failures.react_failure(cut)["kind"] == "truncated inside the code block"
    assert failures.react_failure(_react(build=_verdict(reason="no code in the completion")))["kind"] == "no code block"
    crashed = _react(render=_verdict(reason="render failed", render={"status": "error", "message": "x is not defined\nat"}))
    assert failures.react_failure(crashed)["kind"] == "render error: x is not defined"
    off_spec = _react(render=_verdict(passed=True, reason="rendered", spec_passed=False, score=0.0))
    assert failures.react_failure(off_spec)["level"] == "spec"
    assert failures.react_failure(_react()) is None


def test_math_failures_say_whether_a_step_was_wrong():
    def sample(reason, steps, truncated=False):
        verdict = {**_verdict(reason=reason), "steps": steps, "answer": "7"}
        return {"task": "math", "truncated": truncated, "scored": {"math": verdict}}

    wrong = [{"text": "3 + 4 = 8", "ok": False, "start": 0, "end": 9}]
    right = [{"text": "3 + 4 = 7", "ok": True, "start": 0, "end": 9}]
    assert failures.math_failure(sample("wrong answer", wrong))["kind"] == "wrong answer after a wrong step"
    assert failures.math_failure(sample("wrong answer", right))["kind"] == "wrong answer, every checked step right"
    assert failures.math_failure(sample("wrong answer", []))["kind"] == "wrong answer, no checkable step"
    assert failures.math_failure(sample("no final answer found", [], True))["kind"] == "no final answer (truncated)"


def test_heat_lines_mark_the_blamed_characters():
    completion = "const a = 1;\nconst b = ;"
    offsets = [[0, 13], [13, 19], [19, 23], [23, 24]]
    sample = {"completion": completion, "token_offsets": offsets,
              "scored": {"build": _verdict(token_scores=[-0.5, -0.5, -1.0, -1.0])}}
    assert heat.heat_lines(sample, "build").splitlines() == ["-0.50  const a = 1;", "-1.00  const ⟦b = ;⟧"]


def test_the_committed_corpus_is_text_only_and_failing():
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert 100 <= len(rows) <= 1000 and CORPUS.stat().st_size < 2_000_000
    assert len({r["id"] for r in rows}) == len(rows)
    keys = {"id", "set", "task", "shape", "prompt", "completion", "reference", "finish_reason", "sampling", "level",
            "kind", "first_error"}
    for r in rows:
        assert set(r) == keys, r["id"]  # no token ids or scores: text and verdicts
        assert r["task"] in ("react", "math") and r["finish_reason"] in ("stop", "length")
        assert r["level"] in ((*failures.REACT_LEVELS, "spec") if r["task"] == "react" else ("math",))
        assert isinstance(r["completion"], str)
    assert {r["task"] for r in rows} == {"react", "math"}
