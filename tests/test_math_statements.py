"""Statement answers, multi-part references, several boxes and the transcendental-nesting guard:
the pure rules, without sympy (the scorer-level checks are in test_hacks_math.py)."""
from __future__ import annotations

import time

import pytest

from botgrpo.reward_server.math.equivalence import quick_verdict
from botgrpo.reward_server.math.extract import extract_answer
from botgrpo.reward_server.math.guard import guard_reason
from botgrpo.reward_server.math.statements import context_reason, reference_parts, statement_reason


@pytest.mark.parametrize("answer", [
    r"13 \lor 12", r"13 \land 12", r"13 \implies 12", r"13 \iff 12", r"13 \mid 12", r"\neg 12", "0 = 12",
    "13 = 12", r"13 \to 12", r"13 \Rightarrow 12", r"13 \Leftrightarrow 12", r"13 \vee 12", r"13 \wedge 12",
    "x = 13 = 12", r"13 \approx 12", "13 \u2228 12", r"\forall n, 12", r"12 \nmid 13", r"x = 5+5+1 = 1/3",
])
def test_statements_against_a_value_are_refused(answer):
    assert statement_reason(answer, "12") is not None
    assert quick_verdict(answer, "12").equal is False


def test_an_equation_whose_left_side_is_not_a_name_is_refused_against_an_expression():
    assert statement_reason("7 = x+1", "x+1") is not None


@pytest.mark.parametrize(("answer", "reference"), [
    ("x = 12", "12"), ("(p,q)=(3,2)", "(3,2)"), ("k = 45, n = 2", "k = 45, n = 2"), ("f(x) = 2x", "2x"),
    (r"x_{1}=10^{2}", "100"), (r"x \approx 11", "11"), (r"AB = 4", "4"), (r"2x + 4y = 3", "y = 3/4 - x/2"),
    (r"x \le 5", "x <= 5"), (r"(x, y) = (5, 8) \quad \text{and} \quad (8, 5)", "(5, 8), (8, 5)"),
])
def test_name_equals_value_and_equations_against_equations_are_compared(answer, reference):
    assert statement_reason(answer, reference) is None


@pytest.mark.parametrize(("reference", "parts"), [
    ("12", 1), ("(98, 2), (99, 503)", 2), (r"\{1,2,3\}", 3), ("k = 45, n = 2", 2), ("[0,1)", 1),
    (r"so $n = \boxed{1,-2}.$", 2), (r"\boxed{2}, \boxed{3}, \boxed{5}", 3),
])
def test_reference_parts(reference, parts):
    assert reference_parts(reference) == parts


def test_several_boxes_are_one_answer_only_when_the_reference_has_that_many_parts():
    two = r"\boxed{(98, 2)} \quad \text{and} \quad \boxed{(99, 503)}"
    assert extract_answer(two, "boxed", 2).method == "boxes"
    assert extract_answer(two, "boxed", 2).text == "(98, 2), (99, 503)"
    assert extract_answer(two, "boxed", 1).method == "hedge"
    assert quick_verdict("(98, 2), (99, 503)", "(98, 2)", "hedge").equal is False
    assert extract_answer(r"\boxed{12} again \boxed{ 12 }", "boxed", 1).method == "boxed"


def test_the_extraction_policy_decides_what_an_unboxed_completion_answers():
    completion = "So the interval is $[0,1)$ and we are done"
    assert extract_answer(completion, "boxed", 1).method in ("phrase", "last_number")
    latex = extract_answer(completion, "latex", 1)
    assert latex.method == "latex" and latex.text == completion
    assert extract_answer("I give up.", "latex", 1) is None  # nothing to read: no answer
    assert extract_answer(r"\boxed{12", "latex", 1) is None  # a box cut off by the length limit


@pytest.mark.parametrize(("completion", "refused"), [
    (r"So $13 \lor 12$.", True), ("hence 13 = 12", True), ("so x = 12", False), ("The answer is 12.", False),
    (r"We get $x \approx 12$", False), (r"$13 \approx 12$", True),
])
def test_an_answer_read_from_running_text_is_checked_in_its_line(completion, refused):
    answer = extract_answer(completion, "boxed", 1)
    assert (context_reason(completion, answer.start, answer.end) is not None) is refused


@pytest.mark.parametrize("answer", [
    r"\tan(\tan(\tan(\tan(\tan(\tan(12))))))", r"\sin(\sin(\sin(\sin(\sin(\sin(\sin(\sin(1))))))))",
    r"\tan \tan \tan 12", r"\ln(\ln(\ln 5))", r"e^{e^{\sin 1}}", r"\sqrt{\sin(\cos(\tan(1)))}",
    r"\left. \sin\left(\cos\left(\tan 1\right)\right)\right.", r"\sin^{2}(\cos(\exp(1)))",
])
def test_nested_transcendental_functions_are_refused(answer):
    assert "transcendental" in (guard_reason(answer) or "")


@pytest.mark.parametrize("answer", [r"\sin(\cos x)", r"e^{\sin x}", r"\sin^2(x)+\cos^2(x)", r"\log_2(8)",
                                    r"\sin(\sin(1))", r"\frac{\sqrt{3}}{2}", r"\ln 2 + \ln 3 + \sin 4"])
def test_shallow_transcendental_answers_pass(answer):
    assert guard_reason(answer) is None


def test_the_transcendental_check_is_cheap_on_hostile_input():
    hostile = r"\sin(" * 15 + "1" + ")" * 15 + r" + \sin\sin" * 60
    started = time.perf_counter()
    assert guard_reason(hostile[:1000]) is not None
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(("text", "expected"), [
    ("Answer $ \n 9 \n $", "Answer  "), ("Answer \\( \n 9 \n \\)", "Answer  "),
    ("Answer $$ \n 9 \n $$", "Answer $$ \n 9 \n $$"), ("So $x$ and\n then $9$", "So $x$ and\n then $9$"),
    ("a \\$5 and \n $9$", "a \\$5 and \n $9$"),
])
def test_inline_math_broken_across_lines_is_not_read(text, expected):
    from botgrpo.reward_server.math.equivalence import drop_broken_inline_math

    assert drop_broken_inline_math(text) == expected
