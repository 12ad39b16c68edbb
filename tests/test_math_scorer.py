"""The ``math`` scorer end to end: corpus verdicts, blame placement, bounds, adversarial input."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from botgrpo.reward_server.spans import compose
from botgrpo.reward_server.math.equivalence import warm_up
from botgrpo.reward_server.scorers.base import Rollout, ScoreResult
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.reward_server.spans import default_split
from botgrpo.sandbox.process_pool import ProcessPool

CORPUS = [json.loads(line) for line in (Path(__file__).parent / "data" / "math_corpus.jsonl").open()]


def math_libraries_loaded() -> bool:
    """Runs in a worker: were sympy and latex2sympy imported by the initializer?"""
    import sys

    return {"sympy", "latex2sympy2_extended", "math_verify"} <= set(sys.modules)


class RecordingPool:
    """A real pool that also records what the scorer sent to it."""

    def __init__(self, pool: ProcessPool) -> None:
        self.pool, self.jobs = pool, []

    def map(self, fn, arg_tuples, timeout_s=None):
        arg_tuples = list(arg_tuples)
        self.jobs.extend(arg_tuples)
        return self.pool.map(fn, arg_tuples, timeout_s=timeout_s)


@pytest.fixture(scope="module")
def pool():
    with ProcessPool(2, initializer=warm_up) as p:
        yield p


@pytest.fixture()
def scorer(pool):
    return MathScorer(pool)


def rollout(completion: str, answer: str | None = "17") -> Rollout:
    return Rollout(completion, reference=None if answer is None else {"answer": answer})


def local_at(result: ScoreResult, start: int, end: int) -> float:
    """The local signal the contract assigns to ``[start, end)``: the lowest covering span, else default."""
    covering = [s.score for s in result.local if s.start <= start and end <= s.end]
    return min(covering) if covering else result.local_default


def composed(result: ScoreResult, completion: str, local_weight: float = 0.5) -> list[float]:
    return compose(result, len(completion), default_split(completion), local_weight)


def test_corpus_is_large_and_balanced():
    assert len(CORPUS) >= 40
    assert sum(row["passed"] for row in CORPUS) >= 15
    assert sum(not row["passed"] for row in CORPUS) >= 15
    assert sum(row["wrong_step"] is not None for row in CORPUS) >= 5


@pytest.fixture(scope="module")
def corpus_results(pool):
    rollouts = [rollout(row["completion"], row["reference"]) for row in CORPUS]
    return MathScorer(pool).score_batch(rollouts, MathOptions())


@pytest.mark.parametrize("index", range(len(CORPUS)), ids=[row["id"] for row in CORPUS])
def test_corpus_verdicts(corpus_results, index):
    row, result = CORPUS[index], corpus_results[index]
    assert result.passed is row["passed"], result.details
    assert result.score == (1.0 if row["passed"] else -1.0)


@pytest.mark.parametrize(
    "index",
    [i for i, row in enumerate(CORPUS) if row["wrong_step"]],
    ids=[row["id"] for row in CORPUS if row["wrong_step"]],
)
def test_blame_starts_at_the_first_wrong_step_and_propagates(corpus_results, index):
    row, result = CORPUS[index], corpus_results[index]
    completion = row["completion"]
    start = completion.index(row["wrong_step"])
    assert local_at(result, start, start + len(row["wrong_step"])) == -1.0
    assert local_at(result, start, len(completion)) == -1.0       # error propagation: nothing after earns credit
    assert start == 0 or local_at(result, 0, start) == 0.0        # what came before is not blamed


def test_without_propagation_only_wrong_steps_are_blamed(scorer):
    completion = "First 3 * 4 = 13. Then 13 + 5 = 18. So \\boxed{18}"
    (result,) = scorer.score_batch([rollout(completion, "17")], MathOptions(error_propagation=False))
    assert [completion[s.start:s.end] for s in result.local] == ["3 * 4 = 13"]
    (propagated,) = scorer.score_batch([rollout(completion, "17")], MathOptions())
    assert [(s.start, s.end) for s in propagated.local] == [(completion.index("3 * 4"), len(completion))]


def test_recipe_invariants(corpus_results):
    """Local signals lie in [-1, 0]; with w_s <= 1 the outcome dominates: every token of a correct
    completion scores above every token of a wrong one."""
    for result in corpus_results:
        assert all(-1.0 <= s.score <= 0.0 and 0 <= s.start <= s.end for s in result.local)
        assert result.local_default in (0.0, -1.0)
    texts = {id(r): row["completion"] for r, row in zip(corpus_results, CORPUS)}
    for w in (0.1, 0.5, 1.0):
        lowest_correct = min(min(composed(r, texts[id(r)], w)) for r in corpus_results if r.passed)
        highest_wrong = max(max(composed(r, texts[id(r)], w)) for r in corpus_results if r.passed is False)
        assert highest_wrong < lowest_correct


def test_details_describe_answer_and_steps(scorer):
    completion = "First 3 * 4 = 12. Then 12 + 5 = 18. So \\boxed{18}"
    (result,) = scorer.score_batch([rollout(completion)], MathOptions())
    details = result.details
    assert details["answer"] == "18"
    assert completion[slice(*details["answer_span"])] == "18"
    assert details["reason"] == "different numbers"
    assert [(s["text"], s["ok"]) for s in details["steps"]] == [("3 * 4 = 12", True), ("12 + 5 = 18", False)]


def test_check_steps_can_be_turned_off(scorer):
    (result,) = scorer.score_batch([rollout("12 + 5 = 18. \\boxed{18}")], MathOptions(check_steps=False))
    assert result.details["steps"] == [] and result.local == []


def test_no_answer_is_blamed_throughout(scorer):
    (result,) = scorer.score_batch([rollout("I give up.")], MathOptions())
    assert (result.score, result.passed, result.local_default, result.local) == (-1.0, False, -1.0, [])


@pytest.mark.parametrize("reference", [None, {}, {"answer": ""}, {"answer": None}, {"solution": "17"}])
def test_missing_reference_is_unscorable_not_a_failure(scorer, reference):
    """The data is at fault, not the policy: an error result, which trainers leave out of the loss."""
    (result,) = scorer.score_batch([Rollout("\\boxed{17}", reference=reference)], MathOptions())
    assert result.passed is None and "missing reference" in result.error
    assert "missing reference" in result.details["reason"]


def test_numeric_reference_is_accepted(scorer):
    (result,) = scorer.score_batch([Rollout("\\boxed{17}", reference={"answer": 17})], MathOptions())
    assert result.passed is True


@pytest.mark.parametrize(("completion", "reference"), [
    ("We get 3 + 9 = 12.", "12"), ("Total: 5 + 7 = 12", "12"),   # a chain the steps check true ends in its value
    (r"The result is $\frac{1}{2}$", "1/2"), (r"The interval is $[0, 1)$.", "[0,1)"),   # the math span, whole
    (r"so $x \in (1, 2)$", "(1,2)"),
])
def test_extraction_boxed_reads_an_unboxed_answer_whole(scorer, completion, reference):
    """False negatives of ``extraction: boxed`` found while closing issue 34 #4: its last-number
    reading took the ``2`` of ``\\frac{1}{2}`` and refused ``3 + 9 = 12`` for its left side."""
    (result,) = scorer.score_batch([rollout(completion, reference)], MathOptions(extraction="boxed"))
    assert result.passed is True, result.details


def test_symbolic_comparisons_run_in_the_pool_not_in_process(pool):
    recording = RecordingPool(pool)
    rollouts = [rollout("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"), rollout("\\boxed{17}")]
    results = MathScorer(recording).score_batch(rollouts, MathOptions())
    assert [r.passed for r in results] == [True, True]
    assert recording.jobs == [("\\sqrt{8}", "2\\sqrt{2}", False)]  # 17 == 17 never left this process


def test_workers_are_warm(pool):
    assert all(o.value is True for o in pool.map(math_libraries_loaded, [()] * 4))


def test_deterministic(scorer):
    rollouts = [rollout(row["completion"], row["reference"]) for row in CORPUS[:20]]
    first = scorer.score_batch(rollouts, MathOptions())
    second = scorer.score_batch(rollouts, MathOptions())
    assert first == second


def test_options_forbid_unknown_keys():
    with pytest.raises(ValidationError):
        MathOptions.model_validate({"check_step": False})
    with pytest.raises(ValidationError):
        MathOptions(timeout_s=0)


ADVERSARIAL = {
    "megabyte": "x" * 1_000_000 + " \\boxed{18}",
    "megabyte_of_steps": "1 + 1 = 3\n" * 100_000 + "\\boxed{18}",
    "power_tower": "Clearly \\boxed{9^{9^{9^9}}}",
    "huge_exponent": "\\boxed{2^{999999999}}",
    "huge_factorial": "\\boxed{1000000!}",
    "factorial_of_power": "\\boxed{(10^{6})!}",
    "nested_braces": "\\boxed{" + "{" * 500 + "1" + "}" * 500 + "}",
    "unterminated": "So \\boxed{",
    "many_unterminated": "\\boxed{" * 100_000,
    "huge_binomial": "\\boxed{\\binom{10^{6}}{5 \\cdot 10^{5}}}",
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_completions_fail_fast_and_leave_the_pool_healthy(pool, scorer, name):
    started = time.perf_counter()
    (result,) = scorer.score_batch([rollout(ADVERSARIAL[name])], MathOptions())
    elapsed = time.perf_counter() - started
    assert result.passed is False and result.score == -1.0
    # refused before the comparison's 5 s CPU budget (MathOptions.timeout_s) could be spent: at
    # half of it in wall time, the margin holds at a load of 4 on 2 cores and a timeout still fails
    assert elapsed < MathOptions().timeout_s / 2, f"{name} took {elapsed:.3f}s"
    assert pool.stats()["restarts"] == 0
    (healthy,) = scorer.score_batch([rollout("\\boxed{\\sqrt{8}}", "2\\sqrt{2}")], MathOptions())
    assert healthy.passed is True


def test_symbolic_timeout_is_a_failing_verdict_and_the_pool_recovers(pool, scorer):
    (result,) = scorer.score_batch([rollout("\\boxed{x^2+2x+1}", "(x+1)^2")], MathOptions(timeout_s=0.001))
    assert result.passed is False and result.details["reason"] == "symbolic comparison timed out"
    (healthy,) = scorer.score_batch([rollout("\\boxed{x^2+2x+1}", "(x+1)^2")], MathOptions())
    assert healthy.passed is True
