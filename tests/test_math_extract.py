"""Final-answer extraction: boxes, phrases, last numbers, spans, and bounded cost."""
from __future__ import annotations

import time

import pytest

from botgrpo.reward_server.math.extract import extract_final_answer


@pytest.mark.parametrize(
    ("completion", "text", "method"),
    [
        ("so \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", "boxed"),
        ("\\boxed{\\frac{\\sqrt{2}}{\\left(3\\right)}}", "\\frac{\\sqrt{2}}{\\left(3\\right)}", "boxed"),
        ("first \\boxed{3}, then \\boxed{4}", "4", "boxed"),
        ("x \\boxed{3} then \\boxed{4", "3", "boxed"),
        ("\\fbox{7}", "7", "boxed"),
        ("\\boxed{ $12$ }", "12", "boxed"),
        ("The answer is $\\frac{3}{4}$.", "\\frac{3}{4}", "phrase"),
        ("The answer is $$5$$", "5", "phrase"),
        ("Answer: 42", "42", "phrase"),
        ("So the final answer is 3.5. Great.", "3.5", "phrase"),
        ("The answer is 12 apples.", "12", "phrase"),
        ("The answer is x = 5", "x = 5", "phrase"),
        ("we get 3 and then 17.", "17", "last_number"),
        ("It costs 1,250 dollars", "1,250", "last_number"),
        ("The temperature is -4 degrees", "-4", "last_number"),
    ],
)
def test_extracts_text_and_exact_span(completion, text, method):
    found = extract_final_answer(completion)
    assert found is not None
    assert (found.text, found.method) == (text, method)
    assert completion[found.start : found.end] == text


@pytest.mark.parametrize(
    "completion",
    ["", "no numbers here", "\\boxed{", "work \\boxed{17", "\\boxed{}", "\\boxed{" + "x" * 5000 + "}"],
)
def test_no_answer(completion):
    assert extract_final_answer(completion) is None


@pytest.mark.parametrize(
    "completion",
    [
        "word " * 200_000 + "\\boxed{7}",
        "\\boxed{" * 150_000,
        "{" * 1_000_000 + "\\boxed{1}",
        "1 " * 500_000,
        "the answer is " * 70_000,
        "\\boxed{" + "{" * 1_000_000,
    ],
)
def test_megabyte_completions_are_fast(completion):
    started = time.process_time()  # CPU time: the bound holds on a busy machine
    extract_final_answer(completion)
    assert time.process_time() - started < 1.0
