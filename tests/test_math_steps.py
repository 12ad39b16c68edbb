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


@pytest.mark.parametrize(
    ("completion", "expected"),
    [  # issue 34 #9: the same steps written with words, full-width signs or in brackets
        ("So, 5 - 2 - 2 equals 3.", [("5 - 2 - 2 equals 3", False)]),   # SmolLM2's (smollm2_failures.jsonl)
        ("So, 19 - 8 is 1.", [("19 - 8 is 1", False)]),
        ("2 + 4 equals 6.", [("2 + 4 equals 6", True)]),
        ("3 * 4 is equal to 12", [("3 * 4 is equal to 12", True)]),
        ("3 times 4 is 12", [("3 times 4 is 12", True)]),
        ("12 divided by 4 makes 3", [("12 divided by 4 makes 3", True)]),
        ("5 minus 2 gives 3", [("5 minus 2 gives 3", True)]),
        ("\uff13 \u00d7 \uff14 \uff1d \uff11\uff12", [("\uff13 \u00d7 \uff14 \uff1d \uff11\uff12", True)]),
        ("3 * 4 \u2192 13", [("3 * 4 \u2192 13", False)]),
        ("3 * 4 => 12", [("3 * 4 => 12", True)]),
        ("so (2 * 3 = 6) and", [("2 * 3 = 6", True)]),   # the brackets belong to the prose
        ("we get 4 * 4 = 2)", [("4 * 4 = 2", False)]),
        ("x = 3 + 4 is 8", [("3 + 4 is 8", False)]),
    ],
)
def test_steps_in_words_and_compatibility_forms_are_read_as_written_with_signs(completion, expected):
    assert verdicts(completion) == expected


@pytest.mark.parametrize(
    "completion",
    [
        "Step 2 is 3 pages long",   # a bare number before the relation: a label, not a computation
        "The answer is 12",
        "12 is 3 * 4",             # the computation is on the right: not read (the left must compute)
        "2x + 3 is 7",
        "It takes 3 times as long",
        "f(2 + 3 = 5)",
    ],
)
def test_relation_words_in_prose_are_not_steps(completion):
    assert find_steps(completion) == []


@pytest.mark.parametrize(
    ("completion", "expected"),
    [  # false negatives found while closing issue 34 #9 (math-verify's suite, test_all.py:216 and :237)
        (r"$f(-2)=\frac{3(-2)-2}{-2-2}=2$", [(r"\frac{3(-2)-2}{-2-2}=2", True)]),
        (r"-\frac{(29 \cdot 8 + 27)(6)(5) \dotsm (1)}{40320} = -\frac{37}{8}", []),   # a side cut out of a \frac
        ("Step 1 (2 + 3 = 5)", [("2 + 3 = 5", True)]),
        ("3(4) = 12", [("3(4) = 12", True)]),
    ],
)
def test_implicit_products_and_brackets_of_the_text_around_a_step(completion, expected):
    assert verdicts(completion) == expected


@pytest.mark.parametrize("error_propagation", [True, False])
def test_an_unverified_step_is_blamed_like_a_wrong_one(error_propagation):
    """Hiding a wrong step where the evaluator cannot value it earns no local credit."""
    from botgrpo.reward_server.math.blame import step_blame

    completion = "2 + 2 = 4. Then 2^{2000} - 2^{2000} + 3 = 4, and 1 + 1 = 2."
    steps = find_steps(completion)
    assert [s.ok for s in steps] == [True, None, True]
    spans = step_blame(steps, len(completion), error_propagation)
    end = len(completion) if error_propagation else steps[1].end
    assert [(s.start, s.end, s.score) for s in spans] == [(steps[1].start, end, -1.0)]


def test_a_label_before_a_relation_word_does_not_join_the_step():
    assert verdicts("Step 2 is 3 + 4 = 7") == [("3 + 4 = 7", True)]


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
        ("3(-2)", -6),   # a bracket right after an operand multiplies
        ("(6)(5)", 30),
        ("2^3(4)", 32),
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
    started = time.process_time()  # CPU time: the bound holds on a busy machine
    with pytest.raises(UnevaluableError):
        evaluate(text)
    assert time.process_time() - started < 0.05


@pytest.mark.parametrize(
    "completion",
    [
        "1 + 1 = 2\n" * 100_000,
        "=" * 1_000_000,
        "1=" * 500_000,
        ("9^{9^{9^{9}}} = 1 " * 1000 + "\n") * 50,
        ("\uff11\uff0b\uff11\uff1d\uff12 " * 800 + "\n") * 300,   # every line NFKC-read
        ("1 + 1 is 2 " * 450 + "\n") * 300,   # relation words to read on every line
        ("3 times 4 times 5 is 60 " * 200 + "\n") * 300,
        ("1 is " * 1000 + "\n") * 300,
        ("\u00bd" * 4999 + "=\n") * 300,   # a character NFKC expands (1/2 with a fraction slash)
        "1" * 1_000_000,   # a digit everywhere a relation word could follow
        ("1->" * 1666 + "\n") * 300,   # arrows to read on every line
    ],
)
def test_adversarial_completions_are_bounded(completion):
    started = time.process_time()   # CPU time: the bound holds on a busy machine
    find_steps(completion)
    assert time.process_time() - started < 1.0


def test_the_committed_completions_hold_no_unverified_step_and_their_wrong_steps_in_words_are_found():
    """Real solutions (math-verify's suite, SmolLM2's failures, the math corpus): the reading finds
    every step found before, 8 wrong and 2 right ones written in words, and values two of the three
    it could not value (``4 * 4 = 2)``: wrong; ``\\frac{3(-2)-2}{-2-2}``: right; the third, a side
    cut out of a ``\\frac``, is no step). No step is left unverified: an unverified step is blamed,
    so a spurious one would blame honest text. Before issue 34 #9: 121 right, 125 wrong, 3 unverified."""
    import json
    from collections import Counter
    from pathlib import Path

    data = Path(__file__).parent / "data"
    texts = []
    for name, keys in (("math_verify_cases.jsonl", ("gold", "pred")), ("smollm2_failures.jsonl", ("completion",)),
                       ("math_corpus.jsonl", ("completion",))):
        for line in (data / name).open(encoding="utf-8"):
            row = json.loads(line)
            texts += [row[k] for k in keys if isinstance(row.get(k), str)]
    verdicts_seen = Counter(step.ok for text in texts for step in find_steps(text))
    assert verdicts_seen == Counter({True: 124, False: 134})
