"""Arithmetic steps: finding them with spans, checking them exactly, and never eval-ing."""
from __future__ import annotations

import time
from fractions import Fraction

import pytest

from botgrpo.reward_server.math.arith import UnevaluableError, evaluate
from botgrpo.reward_server.math.steps import find_steps


def verdicts(completion: str) -> list[tuple[str, bool | None]]:
    return [(step.text, step.ok) for step in find_steps(completion)]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("First, 3 * 4 = 12.", [("3 * 4 = 12", True)]),
        ("Then 12 + 5 = 18.", [("12 + 5 = 18", False)]),
        ("We have \\frac{6}{3} = 2 here", [("\\frac{6}{3} = 2", True)]),
        ("Chain: 2 + 3 = 5 = 10/2", [("2 + 3 = 5 = 10/2", True)]),
        ("Chain: 2 + 3 = 5 = 6", [("2 + 3 = 5 = 6", False)]),
        ("So $2^{10} = 1024$.", [("2^{10} = 1024", True)]),
        ("Then -3 + 5 = 2.", [("-3 + 5 = 2", True)]),
        ("and 5 - 8 = -3", [("5 - 8 = -3", True)]),
        ("1,000 + 2,000 = 3,000", [("1,000 + 2,000 = 3,000", True)]),
        ("0.1 + 0.2 = 0.3", [("0.1 + 0.2 = 0.3", True)]),
        ("2 \\times 3 = 6, 7 \\div 2 = 3.5", [("2 \\times 3 = 6", True), ("7 \\div 2 = 3.5", True)]),
        ("6 \u00d7 7 = 42 and 8 \u2212 3 = 5", [("6 \u00d7 7 = 42", True), ("8 \u2212 3 = 5", True)]),
        ("pi is 22/7 = 3.14 roughly", [("22/7 = 3.14", True)]),
        ("but 22/7 = 3.15 is off", [("22/7 = 3.15", False)]),
        ("so x = 3 + 4 = 7", [("3 + 4 = 7", True)]),
        ("f(3) = 3 * 3 = 9", [("3 * 3 = 9", True)]),
        ("Total: 3 + 4 = 7 apples", [("3 + 4 = 7", True)]),
        ("huge 9^{99999} = 3", [("9^{99999} = 3", None)]),
        ("divide 1/0 = 5", [("1/0 = 5", None)]),
    ],
)
def test_finds_and_checks_steps(completion, expected):
    assert verdicts(completion) == expected


@pytest.mark.parametrize(
    "completion",
    [
        "2x + 3 = 7",  # the run starts mid-expression: not arithmetic
        "2x - 3 = 7",
        "x^2 = 9",
        "\\sqrt{16} = 4",
        "x = 5, y = 3",
        "4 = 4",  # nothing is computed
        "3 + 4 = 7x",  # the right side continues into a symbol
        "no math here",
    ],
)
def test_ignores_what_is_not_plain_arithmetic(completion):
    assert find_steps(completion) == []


def test_spans_point_at_the_step_text():
    completion = "Line one.\nNow 6 * 7 = 41, oops.\n"
    (step,) = find_steps(completion)
    assert completion[step.start : step.end] == "6 * 7 = 41" and step.ok is False


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-3^2", -9),
        ("2^{-2}", Fraction(1, 4)),
        ("\\frac{1}{3} + \\frac{1}{6}", Fraction(1, 2)),
        ("0.1 + 0.2", Fraction(3, 10)),
        ("2^3^2", 512),
    ],
)
def test_evaluate_is_exact(text, value):
    assert evaluate(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "2 ** 3",  # Python syntax is not whitelisted: ** is two multiplications
        "9^{9^{9^9}}",
        "2^{100000}",
        "2^{1/2}",
        "1/0",
        "(" * 100 + "1" + ")" * 100,
        "1 +" * 300 + " 1",
        "x + 1",
        "",
    ],
)
def test_evaluate_refuses_unsafe_or_costly_input(text):
    started = time.perf_counter()
    with pytest.raises(UnevaluableError):
        evaluate(text)
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(
    "completion",
    [
        "1 + 1 = 2\n" * 100_000,
        "=" * 1_000_000,
        "1=" * 500_000,
        ("9^{9^{9^{9}}} = 1 " * 1000 + "\n") * 50,
    ],
)
def test_adversarial_completions_are_bounded(completion):
    started = time.perf_counter()
    find_steps(completion)
    assert time.perf_counter() - started < 1.0
