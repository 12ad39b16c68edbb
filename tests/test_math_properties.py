"""Property tests: the pure math functions never raise and keep their span promises."""
from __future__ import annotations

import contextlib
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from botgrpo.reward_server.math.arith import UnevaluableError, evaluate
from botgrpo.reward_server.math.equivalence import quick_verdict
from botgrpo.reward_server.math.extract import extract_final_answer
from botgrpo.reward_server.math.guard import guard_reason
from botgrpo.reward_server.math.steps import find_steps

MATHY = st.text(alphabet="0123456789+-*/^=(){}.,! x\n\\boxedfrac$answer is:", max_size=300)
ARITHMETIC = st.text(alphabet="0123456789+-*/^(){}. ", max_size=80)


@settings(max_examples=300, deadline=None)
@given(MATHY)
def test_extraction_span_matches_text(completion):
    found = extract_final_answer(completion)
    if found is not None:
        assert completion[found.start : found.end] == found.text != ""


@settings(max_examples=300, deadline=None)
@given(MATHY)
def test_steps_spans_match_text(completion):
    for step in find_steps(completion):
        assert completion[step.start : step.end] == step.text
        assert step.ok in (True, False, None)


@settings(max_examples=500, deadline=None)
@given(ARITHMETIC)
def test_evaluate_returns_a_fraction_or_refuses(text):
    with contextlib.suppress(UnevaluableError):
        assert isinstance(evaluate(text), Fraction)


@settings(max_examples=300, deadline=None)
@given(MATHY, MATHY)
def test_guard_and_quick_verdict_never_raise(candidate, reference):
    guard_reason(candidate)
    assert quick_verdict(candidate, reference).equal in (True, False, None)
