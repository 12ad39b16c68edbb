"""The chat arithmetic prompts: seeded, correct references, the math scorer agrees with them."""
import random

import pytest

from botgrpo.trainer.tasks import chat_arith


def test_same_seed_same_tasks_other_seed_other_tasks():
    assert chat_arith.make_prompts(20, 3) == chat_arith.make_prompts(20, 3)
    assert chat_arith.make_prompts(20, 3) != chat_arith.make_prompts(20, 4)


@pytest.mark.parametrize("operators", [("+",), ("-",), ("*",), ("+", "-", "*")])
def test_reference_is_the_value_of_the_question(operators):
    for task in chat_arith.make_prompts(200, 0, max_operand=30, operators=operators):
        assert task.prompt.endswith(chat_arith.SUFFIX + "\n")
        expression = task.prompt.removeprefix("What is ").split("?")[0]
        a, op, b = expression.split()
        assert op in operators and 1 <= int(a) and 1 <= int(b)
        assert int(task.reference["answer"]) == eval(expression) >= 0
        if op == "*":
            assert 2 <= int(b) <= 9
        else:
            assert int(a) <= 30 and int(b) <= 30


@pytest.mark.parametrize("bad", [{"max_operand": 0}, {"operators": ()}, {"operators": ("/",)}])
def test_bad_difficulty_is_refused(bad):
    with pytest.raises(ValueError):
        chat_arith.make_question(random.Random(0), **bad)


def test_math_scorer_judges_a_right_and_a_wrong_answer():
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.math import MathOptions, MathScorer

    task = chat_arith.make_prompts(1, 5)[0]
    answer = int(task.reference["answer"])
    rollouts = [Rollout(prompt=task.prompt, completion=text, reference=task.reference)
                for text in (f"The sum is \\boxed{{{answer}}}.", f"The sum is \\boxed{{{answer + 1}}}.")]
    right, wrong = MathScorer().score_batch(rollouts, MathOptions(extraction="boxed"))
    assert (right.passed, wrong.passed) == (True, False)
