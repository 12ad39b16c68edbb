"""The step-chain task (issue 22): generator properties, the exact first wrong step, and the math
scorer's ``oracle`` local signal, through the real scorer and the service's option validation."""
from __future__ import annotations

import random

import pytest

from botgrpo.reward_server.math.blame import oracle_blame
from botgrpo.reward_server.math.steps import find_steps
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.reward_server.service import RequestRejected, ScoringService
from botgrpo.trainer.tasks import chain

# hand-written: start 20, apply + 3, - 5, + 9 (so 23, 18, 27)
EXAMPLE = chain.ChainExample(20, (("+", 3), ("-", 5), ("+", 9)))
RIGHT = "x = 20 + 3 = 23\nx = 23 - 5 = 18\nx = 18 + 9 = 27\nThe answer is \\boxed{27}."
# step 2 applies - 4 for the prompt's - 5: its arithmetic is right, so only the chain sees it
WRONG_OPERAND = "x = 20 + 3 = 23\nx = 23 - 4 = 19\nx = 19 + 9 = 28\nThe answer is \\boxed{28}."
# step 2's arithmetic is off by one
WRONG_RESULT = "x = 20 + 3 = 23\nx = 23 - 5 = 19\nx = 19 + 9 = 28\nThe answer is \\boxed{28}."


def test_generator_is_seeded_and_in_range():
    a, b = chain.make_examples(50, 7), chain.make_examples(50, 7)
    assert a == b and a != chain.make_examples(50, 8)
    for example in a:
        assert 8 <= len(example.operations) <= 12
        assert all(op in "+-" and 1 <= d <= 9 for op, d in example.operations)
        values = [int(line.rsplit("=", 1)[1]) for line in example.chain]
        assert all(chain.LOW <= v <= chain.HIGH for v in values) and values[-1] == example.answer
        assert 100 <= len(example.completion()) <= 260  # 8-12 lines of ~16 characters and the answer
        task = example.task
        assert task.prompt.endswith("\n") and task.reference == {"answer": str(example.answer), "chain": example.chain}


def test_every_right_step_checks_and_a_corpus_has_its_share_of_mistakes():
    for example in chain.make_examples(20, 3):
        steps = find_steps(example.completion())
        assert len(steps) == len(example.operations) and all(s.ok for s in steps)
    pairs = chain.make_sft_corpus(400, 0, broken_share=0.75)
    right = sum(chain.first_wrong_step(_chain_of(p), c) is None for p, c in pairs)
    assert 0.15 < right / len(pairs) < 0.35  # broken_share 0.75 (a mistake of 0 never happens)


def _chain_of(prompt: str) -> list[str]:
    """The reference chain of a corpus prompt, re-derived from its text."""
    words = prompt.split()
    start = int(words[2])
    ops = prompt.split("apply ", 1)[1].rsplit(" in order", 1)[0].split(", ")
    return chain.ChainExample(start, tuple((o[0], int(o[2:])) for o in ops)).chain


def test_first_wrong_step_by_hand():
    assert EXAMPLE.completion() == RIGHT
    assert chain.first_wrong_step(EXAMPLE.chain, RIGHT) is None
    assert chain.first_wrong_step(EXAMPLE.chain, WRONG_OPERAND) == 1
    assert chain.first_wrong_step(EXAMPLE.chain, WRONG_RESULT) == 1
    assert chain.first_wrong_step(EXAMPLE.chain, RIGHT.replace("{27}", "{28}")) == 3  # the answer line
    assert chain.first_wrong_step(EXAMPLE.chain, "x = 20 + 3 = 23") == 1                # stopped early
    assert EXAMPLE.completion(error_at=1, kind="wrong_operand", error=8) == WRONG_OPERAND  # 5 -> (4+8)%9+1 = 4
    assert EXAMPLE.completion(error_at=1, kind="wrong_result", error=1) == WRONG_RESULT
    rng = random.Random(0)
    for example in chain.make_examples(30, 5):
        for kind in chain.CORRUPTIONS:
            broken = chain.corrupt(kind, example, rng)
            assert chain.first_wrong_step(example.chain, broken) is not None


def test_oracle_blames_exactly_the_first_wrong_line():
    line2 = (WRONG_OPERAND.index("\n") + 1, WRONG_OPERAND.index("\n", WRONG_OPERAND.index("\n") + 1))
    [span] = oracle_blame(WRONG_OPERAND, EXAMPLE.chain)
    assert (span.start, span.end, span.score) == (*line2, -1.0)
    assert WRONG_OPERAND[span.start:span.end] == "x = 23 - 4 = 19"
    assert oracle_blame(RIGHT, EXAMPLE.chain) == []
    [tail] = oracle_blame(RIGHT.replace("{27}", "{28}"), EXAMPLE.chain)
    assert RIGHT[tail.start:tail.end] == "The answer is \\boxed{27}."


def _score(completion: str, **options):
    reference = EXAMPLE.task.reference
    [result] = MathScorer().score_batch([Rollout(completion, reference=reference)], MathOptions(**options))
    return result


def test_the_scorer_outcome_is_the_chain_and_the_signals_differ_where_they_should():
    assert _score(RIGHT, local="oracle").passed is True and _score(RIGHT, local="oracle").local == []
    # a wrong operand: the steps' own arithmetic is right, so the real signal blames nothing
    assert _score(WRONG_OPERAND).passed is False and _score(WRONG_OPERAND).local == []
    [oracle] = _score(WRONG_OPERAND, local="oracle").local
    assert WRONG_OPERAND[oracle.start:oracle.end] == "x = 23 - 4 = 19"
    # a wrong result: the real signal blames from that step to the end, the oracle that step alone
    [steps] = _score(WRONG_RESULT).local
    assert (steps.start, steps.end) == (WRONG_RESULT.index("23 - 5"), len(WRONG_RESULT))
    [oracle] = _score(WRONG_RESULT, local="oracle").local
    assert WRONG_RESULT[oracle.start:oracle.end] == "x = 23 - 5 = 19"
    # without a chain in the reference the oracle falls back to the steps signal
    [result] = MathScorer().score_batch([Rollout(WRONG_RESULT, reference={"answer": "27"})], MathOptions(local="oracle"))
    assert [(s.start, s.end) for s in result.local] == [(steps.start, steps.end)]


def test_the_default_local_signal_is_unchanged():
    assert MathOptions().local == "steps"
    assert _score(WRONG_RESULT).local == _score(WRONG_RESULT, local="steps").local


@pytest.mark.parametrize("value", ["orcale", "", "first_cause", 3, None, ["oracle"]])
def test_a_bad_local_option_is_a_422_naming_it(value):
    with pytest.raises(RequestRejected) as caught:
        ScoringService._options("math", {"local": value})
    assert caught.value.status == 422 and "local" in caught.value.detail


def test_the_oracle_option_is_accepted_by_the_service():
    assert ScoringService._options("math", {"local": "oracle"}).local == "oracle"
