"""The synthetic arithmetic task, judged by the real math scorer."""
import random

import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.trainer.tasks import arith

N = 40


@pytest.fixture(scope="module")
def scorer():
    return MathScorer()


def judge(scorer, completions, tasks):
    return scorer.score_batch([Rollout(c, t.prompt, t.reference) for c, t in zip(completions, tasks)], MathOptions())


def test_same_seed_same_tasks():
    assert arith.make_prompts(20, seed=1) == arith.make_prompts(20, seed=1)
    assert arith.make_prompts(20, seed=1) != arith.make_prompts(20, seed=2)
    assert arith.make_sft_corpus(20, seed=1) == arith.make_sft_corpus(20, seed=1)


def test_expression_respects_left_to_right_order():
    example = arith.ArithExample(3, (("+", 4), ("*", 5), ("-", 2)))
    assert example.expression == "(3 + 4) * 5 - 2"
    assert eval(example.expression) == example.answer == 33
    assert example.completion() == "3 + 4 = 7\n7 * 5 = 35\n35 - 2 = 33\nThe answer is \\boxed{33}."
    for e in arith.make_examples(200, seed=0):
        assert eval(e.expression) == e.answer and min(e.results()) >= 0


def test_correct_completions_pass_with_every_step_right(scorer):
    examples = arith.make_examples(N, seed=0)
    for e, result in zip(examples, judge(scorer, [e.completion() for e in examples], [e.task for e in examples])):
        assert result.passed, result.details
        assert len(result.details["steps"]) == len(e.operations)
        assert all(step["ok"] for step in result.details["steps"])


def test_wrong_step_fails_and_the_step_is_found(scorer):
    examples, rng = arith.make_examples(N, seed=1), random.Random(0)
    broken = [arith.corrupt("wrong_step", e, rng) for e in examples]
    for result in judge(scorer, broken, [e.task for e in examples]):
        assert not result.passed
        assert [s["ok"] for s in result.details["steps"]].count(False) == 1


def test_wrong_answer_fails_with_correct_steps(scorer):
    examples, rng = arith.make_examples(N, seed=2), random.Random(0)
    broken = [arith.corrupt("wrong_answer", e, rng) for e in examples]
    for result in judge(scorer, broken, [e.task for e in examples]):
        assert not result.passed and all(s["ok"] for s in result.details["steps"])
