"""Answer equivalence: the sympy-free fast path, the guard, and math-verify's semantics."""
from __future__ import annotations

import time

import pytest

from botgrpo.reward_server.math.equivalence import quick_verdict, symbolic_equal
from botgrpo.reward_server.math.guard import guard_reason
from botgrpo.reward_server.math.normalize import normalize_answer
from botgrpo.reward_server.math.numbers import read_number


@pytest.mark.parametrize(
    ("candidate", "reference", "equal"),
    [
        ("17", "17", True),
        ("1/2", "0.5", True),
        ("\\frac{3}{4}", "0.75", True),
        ("-\\frac{1}{2}", "-0.5", True),
        ("1,000", "1000", True),
        ("12.0", "12", True),
        ("\\dfrac{\\pi}{2}", "\\frac{\\pi}{2}", True),
        ("$ 3 $", "3", True),
        ("\\left( 1, 2 \\right)", "(1,2)", True),
        ("3", "-3", False),
        ("\\frac{4}{3}", "3/4", False),
        ("2.5", "2.4", False),
        ("0.33", "1/3", False),
        ("", "3", False),
    ],
)
def test_quick_verdict_decides_plain_answers(candidate, reference, equal):
    assert quick_verdict(candidate, reference).equal is equal


@pytest.mark.parametrize(
    ("candidate", "reference"),
    [("\\sqrt{8}", "2\\sqrt{2}"), ("25\\%", "0.25"), ("x^2+2x+1", "(x+1)^2"), ("0.333333", "1/3")],
)
def test_quick_verdict_defers_what_needs_sympy(candidate, reference):
    assert quick_verdict(candidate, reference).equal is None


@pytest.mark.parametrize(
    ("candidate", "reference", "equal"),
    [
        ("\\sqrt{8}", "2\\sqrt{2}", True),
        ("\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}", True),
        ("\\sqrt{2}", "\\sqrt{3}", False),
        ("x^2 + 2x + 1", "(x+1)^2", True),
        ("x^2 + 1", "(x+1)^2", False),
        ("25\\%", "0.25", True),
        ("30\\%", "25\\%", False),
        ("0.333333", "1/3", True),
        ("[1, 2)", "[1,2)", True),
        ("(1, 2]", "[1,2)", False),
        ("\\{1, 2, 3\\}", "\\{3,2,1\\}", True),
        ("x = 5", "5", True),
        ("2^{10}", "1024", True),
        ("not math at all", "5", False),
    ],
)
def test_symbolic_equal_has_math_verify_semantics(candidate, reference, equal):
    assert symbolic_equal(candidate, reference) is equal


PATHOLOGICAL = [
    ("9^{9^{9^9}}", "power tower"),
    ("\\pi^{\\pi^{\\pi^{\\pi}}}", "power tower"),
    ("2**3**4**5", "power tower"),
    ("2^{99999999}", "exponent above"),
    ("1000000!", "factorial above"),
    ("(10^5)!", "factorial of a large"),
    ("\\binom{1000000}{500000}", "binomial argument above"),
    ("\\sum_{k=1}^{10^{9}} k", "unevaluated operator"),
    ("{" * 40 + "1" + "}" * 40, "nesting deeper"),
    ("1" * 2000, "longer than"),
]


@pytest.mark.parametrize(("answer", "reason"), PATHOLOGICAL)
def test_guard_refuses_pathological_answers_quickly(answer, reason):
    started = time.process_time()  # CPU time: the bound holds on a busy machine
    verdict = quick_verdict(answer, "3")
    elapsed = time.process_time() - started
    assert verdict.equal is False and reason in verdict.reason
    assert elapsed < 0.05


@pytest.mark.parametrize(
    "answer",
    ["x^{2}", "e^{x^2}", "2^{1/2}", "2^{100}", "(n+1)!", "10!", "\\binom{10}{3}", "\\frac{\\sqrt{2}}{2}"],
)
def test_guard_allows_ordinary_answers(answer):
    assert guard_reason(answer) is None


def test_pathological_answer_equal_to_reference_literally_passes():
    assert quick_verdict("9^{9^{9^9}}", "9^{ 9^{9^9} }").equal is True


def test_normalize_drops_only_presentation():
    assert normalize_answer(" $\\dfrac{1}{2}$. ") == "\\frac{1}{2}"
    assert normalize_answer("\\left(1,\\,2\\right)") == "(1,2)"
    assert normalize_answer("90^\\circ") == "90"


@pytest.mark.parametrize(
    ("text", "value"), [("3", 3), ("-2.5", -2.5), ("1,000", 1000), ("3/4", 0.75), ("-\\frac{1}{4}", -0.25)]
)
def test_read_number_is_exact(text, value):
    number = read_number(text)
    assert number is not None and number.value == value


@pytest.mark.parametrize("text", ["x", "\\sqrt{2}", "1/0", "1,2,3", "2^3"])
def test_read_number_refuses_non_plain(text):
    assert read_number(text) is None


@pytest.mark.parametrize(("text", "value"), [("1,22", "1.22"), ("1000,99", "1000.99"), ("0,111", "0.111"),
                                             ("1,00", "1"), ("7,425,000", "7425000"), ("-2,5", "-2.5")])
def test_a_comma_that_cannot_group_thousands_is_a_decimal_comma(text, value):
    from fractions import Fraction

    assert read_number(text).value == Fraction(value)
