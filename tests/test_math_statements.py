"""Statement answers, multi-part references, several boxes and the transcendental-nesting guard:
the pure rules, without sympy (the scorer-level checks are in test_hacks_math.py)."""
from __future__ import annotations

import time

import pytest

from botgrpo.reward_server.math.equivalence import quick_verdict
from botgrpo.reward_server.math.extract import extract_answer
from botgrpo.reward_server.math.guard import guard_reason
from botgrpo.reward_server.math.extract import math_spans
from botgrpo.reward_server.math.statements import (
    context_reason, negation_reason, operand_reason, reading_reason, reference_parts, statement_reason,
    understood_relations,
)


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
    """Checked in its line, or (a number inside a math span) judged as the whole span."""
    answer = extract_answer(completion, "boxed", 1)
    by_context = context_reason(completion, answer.start, answer.end) is not None
    assert (by_context or quick_verdict(answer.text, "12", answer.method).equal is False) is refused


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
    started = time.process_time()  # CPU time: the bound holds on a busy machine
    assert guard_reason(hostile[:1000]) is not None
    assert time.process_time() - started < 0.5


@pytest.mark.parametrize(("text", "expected"), [
    ("Answer $ \n 9 \n $", "Answer  "), ("Answer \\( \n 9 \n \\)", "Answer  "),
    ("Answer $$ \n 9 \n $$", "Answer $$ \n 9 \n $$"), ("So $x$ and\n then $9$", "So $x$ and\n then $9$"),
    ("a \\$5 and \n $9$", "a \\$5 and \n $9$"),
])
def test_inline_math_broken_across_lines_is_not_read(text, expected):
    from botgrpo.reward_server.math.equivalence import drop_broken_inline_math

    assert drop_broken_inline_math(text) == expected


def _last_value(text: str) -> tuple[int, int]:
    import re

    last = list(re.finditer(r"-?\d+(?:[.,]\d+)*", text))[-1]
    return last.start(), last.end()


@pytest.mark.parametrize(("text", "refused"), [
    ("so 13 | 12", True), (r"so 13 \equiv 12", True), ("13 \u2261 12", True), (r"$\cancel{13} 12$", True),
    (r"$13 \\ 12$", True), ("so 13 - 12", True), ("It is 11 or 12", True), ("It is 11, 12", True),
    ("so 11 \u2013 12", True), (r"It is $11$ or 12", True), ("x = 7 or x = 12", True), (r"It is 12 \pmod 5", True),
    ("The answer is 12", False), ("Answer: 12", False), ("**Answer:** 12", False), ("(12)", False), ("1) 12", False),
    ("Result \u2014 12", False), ("Step 3. 12", False), ("so x = 12", False), ("so 12 cm", False),
    (r"12 \text{ cm}", False),
    ("In total 3 apples and 12", False), ("12", False), ("Thus, 12", False),
])
def test_a_value_from_prose_must_stand_alone(text, refused):
    """What touches a value read from prose is read positively (a word, ``:``, an opening bracket,
    a list label, ``name =``); any other sign makes the value an operand of something unread."""
    start, end = _last_value(text)
    assert (context_reason(text, start, end) is not None) is refused


@pytest.mark.parametrize(("text", "first", "refused"), [
    ("so 11\u201312 days", True, True), ("so 12 \u2014 done", True, False), ("12 + x", True, True),
    ("12\u20ac", True, False), ("12 m\u00b2", True, False), ("12^\\circ", True, False),
])
def test_what_follows_a_value_may_be_a_unit_not_an_operator(text, first, refused):
    import re

    match = re.search(r"\d+", text)
    assert (operand_reason(text, match.start(), match.end()) is not None) is refused


@pytest.mark.parametrize(("text", "negated"), [
    ("The answer is not 12", True), ("certainly not \\boxed{12}", True), ("The answer isn't 12", True),
    ("It can never be 12", True), ("It cannot be 12", True), ("It is not equal to 12", True),
    ("\\boxed{12} is not the answer", True), ("12 isn't right", True), ("It is not $12$", True),
    ("not it's not 10 it's 12", False), ("the number is not 10 which is 12", False), ("Since x is not 0, 12", False),
    ("Since x is not zero the answer is 12", False), ("The answer is 12 and not 13", False), ("12, not 13", False),
    ("It's not hard to see that 12", False),
])
def test_a_negation_governs_the_value_it_stands_before(text, negated):
    """A negation governs the answer when it is among the few words before it in its clause with
    no value between, or when ``is not`` follows it."""
    import re

    match = re.search(r"12", text)
    assert (negation_reason(text, match.start(), match.end()) is not None) is negated


@pytest.mark.parametrize(("text", "count"), [
    ("13 = 12", 1), (r"13 \equiv 12", 0), (r"x \le 5 < y", 2), ("x <= 5", 1), (r"x \neq 5", 1), (r"x \in [1, 2]", 1),
    (r"13 \leftarrow 12", 0), (r"x \approx 5", 1), ("a := 5", 0), ("x != 3", 1),
])
def test_understood_relations_are_counted_by_spelling(text, count):
    assert understood_relations(text) == count


def test_the_method_decides_how_an_answer_is_read_in_context():
    assert reading_reason("certainly not \\boxed{12}", "boxed", 21, 23) == "the answer is negated"
    assert reading_reason("so 13 | 12", "last_number", 8, 10) is not None
    assert reading_reason("so 13 | 12", "latex", 0, 10) is None  # read in the worker, which sees the library's reading


def test_a_box_straddling_math_delimiters_is_no_answer_under_boxed_and_read_as_written_under_latex():
    completion = r"So it is $\boxed{13$ or $12}$"
    assert extract_answer(completion, "boxed", 1).method == "straddling"
    assert quick_verdict("13$ or $12", "12", "straddling").equal is False
    assert extract_answer(completion, "latex", 1).method == "latex"


@pytest.mark.parametrize(("completion", "answer"), [
    (r"So $13 \equiv 12$.", r"13 \equiv 12"), (r"It is $12\pi$.", r"12\pi"), (r"Then $x = 12$ and done", "x = 12"),
    (r"So \[ 2^{10} \]", "2^{10}"), ("so 13 | 12", "12"),
])
def test_the_last_number_inside_a_math_span_is_the_whole_span(completion, answer):
    assert extract_answer(completion, "boxed", 1).text == answer


def test_math_spans_pair_delimiters_in_reading_order():
    text = r"a $x$ b $$y$$ c \(z\) d \[w\] e \$5 $v"
    assert [text[s.content_start:s.content_end] for s in math_spans(text)] == ["x", "y", "z", "w"]
    assert [s.display for s in math_spans(text)] == [False, True, False, True]
