"""Finding 3 of the hostile-input issue (tests/test_hostile_server.py): the text handling on the
request path was superlinear (the code-fence regex backtracked). Each check times ``f(n)`` and
``f(4n)`` (CPU time) for inputs up to the configured limits and asserts the ratio stays well under
16 (quadratic), not a wall time; no server is involved."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def best_time(fn, arg, repeats: int = 3) -> float:
    """The least CPU time (this process's) of ``repeats`` calls: a busy neighbour does not count."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - started)
    return best


def assert_linear(fn, make, n: int, label: str) -> None:
    """``fn(make(n))`` costs about 4x ``fn(make(n / 4))``: quadratic would be 16x.

    A linear pass over ``n / 4`` characters takes milliseconds; when it takes over a second the
    function is not linear and ``n`` could take minutes, so that fails at once."""
    small_input, large_input = make(n // 4), make(n)
    small = best_time(fn, small_input, repeats=1)
    assert small < 1.0, f"{label}: {n // 4} characters took {small:.1f} s"
    floor = 1e-3  # below this the timer, the allocator and a busy machine dominate; count it as this much
    for _ in range(3):  # a busy machine can stall one measurement; superlinear code fails all three
        small, large = best_time(fn, small_input), best_time(fn, large_input)
        ratio = max(large, floor) / max(small, floor)
        if ratio < 8:
            return
    raise AssertionError(f"{label}: {n // 4} -> {small * 1e3:.2f} ms, {n} -> {large * 1e3:.2f} ms (x{ratio:.1f})")


LIMIT = 200_000  # max_completion_chars, the default


def _fence_inputs():
    return {
        "open fence, one long line": lambda n: "```" + "a" * n,
        "open fence with tag": lambda n: "```tsx" + "-" * n,
        "fences, no newline": lambda n: "```a" * (n // 4),
        "backticks": lambda n: "`" * n,
        "fence then spaces": lambda n: "```" + " " * n,
        "many short blocks": lambda n: "```tsx\nx\n```\n" * (n // 14),
    }


@pytest.mark.parametrize("label", list(_fence_inputs()))
def test_code_extraction_is_linear_up_to_the_limit(label):
    from botgrpo.reward_server.react.extract import extract_code
    assert_linear(extract_code, _fence_inputs()[label], LIMIT, label)


@pytest.mark.parametrize("label,make", [
    ("spaces", lambda n: " " * n), ("words", lambda n: "a " * (n // 2)), ("one word", lambda n: "a" * n),
    ("newlines", lambda n: "\n" * n), ("nbsp and marks", lambda n: "\u00a0a\u0301" * (n // 3)),
])
def test_default_split_is_linear_up_to_the_limit(label, make):
    from botgrpo.reward_server.spans import default_split
    assert_linear(default_split, make, LIMIT, label)


MATH_INPUTS = {
    "boxes": lambda n: "\\boxed{" * (n // 7),
    "braces in a box": lambda n: "\\boxed{" + "{" * (n - 7),
    "closed boxes": lambda n: "\\boxed{1}" * (n // 9),
    "answer phrases": lambda n: "the answer is " * (n // 14),
    "answer then spaces": lambda n: "answer" + " " * (n - 6),
    "answer colon spaces": lambda n: ("answer:" + " " * 50) * (n // 57),
    "digits": lambda n: "9" * n,
    "digits and commas": lambda n: "1," * (n // 2),
    "number then words": lambda n: "answer is 1" + "1" * (n - 20) + " apples",
    "equals": lambda n: "=" * n,
    "equals lines": lambda n: "1+1=2\n" * (n // 6),
    "long equals line": lambda n: "1+" * (n // 2 - 2) + "=2",
    "operators": lambda n: "+-*/^" * (n // 5),
    "fracs": lambda n: "\\frac{1}{2}=" * (n // 12),
    "dots and commas": lambda n: "1 = 1, " * (n // 7),
    "spaces after an equals": lambda n: "= " + " " * (n - 10) + "x so 12",
    "spaces before a number": lambda n: "x" + " " * (n - 10) + "| 12",
    "markdown before a number": lambda n: "**" * (n // 2 - 2) + " 12",
    "relation words": lambda n: "1 + 1 is 2 " * (n // 11),
    "operator words": lambda n: "3 times " * (n // 8) + "4 is 12",
    "negations": lambda n: "not " * (n // 4) + "12",
    "math spans": lambda n: "$1$ " * (n // 4) + "$12$",
    "full-width": lambda n: "\uff11\uff0b\uff11\uff1d\uff12\n" * (n // 6),
}


@pytest.mark.parametrize("label", list(MATH_INPUTS))
def test_math_prejudging_is_linear_up_to_the_limit(label):
    """Everything the math scorer does in the server's thread: answer extraction (both policies),
    step finding, normalisation, the guard and the reading of an answer in its context (the
    symbolic comparison runs in the killable pool)."""
    from botgrpo.reward_server.math.equivalence import quick_verdict
    from botgrpo.reward_server.math.extract import extract_answer, extract_final_answer
    from botgrpo.reward_server.math.statements import reading_reason
    from botgrpo.reward_server.math.steps import find_steps

    def prejudge(completion):
        find_steps(completion)
        answers = [extract_final_answer(completion)] + [extract_answer(completion, p) for p in ("boxed", "latex")]
        for answer in filter(None, answers):
            quick_verdict(answer.text, "12", answer.method)
            reading_reason(completion, answer.method, answer.start, answer.end)

    assert_linear(prejudge, MATH_INPUTS[label], LIMIT, label)


_WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000\u200b\ufeff"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(_WHITESPACE) + ["a", "\u0301", "\U0001f600", "\ufffd"]), max_size=40))
def test_the_token_cap_counts_exactly_the_servers_split(text):
    from botgrpo.reward_server.limits import default_split_count
    from botgrpo.reward_server.spans import default_split
    assert default_split_count(text) == len(default_split(text))


def test_request_sanitising_is_linear():
    from botgrpo.services.schemas import RewardRequest

    def build(n):
        return {"task": "math", "rollouts": [{"id": "a", "completion": "\ud800\u00e9" * (n // 2)}]}
    assert_linear(RewardRequest.model_validate, build, LIMIT, "surrogates")
