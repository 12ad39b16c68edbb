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

# hand-written: start 12, apply + 3, - 5, + 4 (so 15, 10, 14)
EXAMPLE = chain.ChainExample(12, (("+", 3), ("-", 5), ("+", 4)))
RIGHT = "a: x = 12 + 3 = 15\nb: x = 15 - 5 = 10\nc: x = 10 + 4 = 14\nThe answer is \\boxed{14}."
# step b applies - 4 for the prompt's - 5: its arithmetic is right, so only the chain sees it
WRONG_OPERAND = "a: x = 12 + 3 = 15\nb: x = 15 - 4 = 11\nc: x = 11 + 4 = 15\nThe answer is \\boxed{15}."
# step b's arithmetic is off by one
WRONG_RESULT = "a: x = 12 + 3 = 15\nb: x = 15 - 5 = 11\nc: x = 11 + 4 = 15\nThe answer is \\boxed{15}."


def test_generator_is_seeded_and_in_range():
    a, b = chain.make_examples(50, 7), chain.make_examples(50, 7)
    assert a == b and a != chain.make_examples(50, 8)
    for example in a:
        assert 8 <= len(example.operations) <= 12
        assert all(op in "+-" and 1 <= d <= chain.MAX_DIGIT for op, d in example.operations)
        values = [int(line.rsplit("=", 1)[1]) for line in example.chain]
        assert all(chain.KEEP_LOW <= v <= chain.KEEP_HIGH for v in values) and values[-1] == example.answer
        assert [line[0] for line in example.chain] == list(chain.LABELS[:len(example.operations)])
        assert 150 <= len(example.completion()) <= 260  # 8-12 lines of 18 characters and the answer
        task = example.task
        assert task.prompt.endswith("\n") and task.reference == {"answer": str(example.answer), "chain": example.chain}
        for label, (op, digit) in zip(chain.LABELS, example.operations):   # each operand found by its label
            assert f"{label}: {op} {digit}" in task.prompt


def test_one_mistake_keeps_every_value_in_range():
    rng = random.Random(1)
    for example in chain.make_examples(200, 4):
        for kind in chain.CORRUPTIONS:
            lines = chain.corrupt(kind, example, rng).split("\n")[:-1]
            assert all(chain.LOW <= int(line.rsplit("=", 1)[1]) <= chain.HIGH for line in lines)


@pytest.mark.parametrize("length", [{"min_steps": 0}, {"min_steps": 5, "max_steps": 4}, {"max_steps": 13}])
def test_an_impossible_length_is_refused(length):
    with pytest.raises(ValueError, match="min_steps"):
        chain.make_example(random.Random(0), **length)


def test_every_right_step_checks_and_a_corpus_has_its_share_of_mistakes():
    for example in chain.make_examples(20, 3):
        steps = find_steps(example.completion())
        assert len(steps) == len(example.operations) and all(s.ok for s in steps)
    pairs = chain.make_sft_corpus(400, 0, broken_share=0.75)
    right = sum(chain.first_wrong_step(_chain_of(p), c) is None for p, c in pairs)
    assert 0.15 < right / len(pairs) < 0.35  # broken_share 0.75 (a mistake of 0 never happens)


def _chain_of(prompt: str) -> list[str]:
    """The reference chain of a corpus prompt, re-derived from its text."""
    start = int(prompt.split()[2])
    ops = prompt.strip().split("\n")[1:]   # "a: + 3"
    return chain.ChainExample(start, tuple((o[3], int(o[5:])) for o in ops)).chain


def test_first_wrong_step_by_hand():
    assert EXAMPLE.completion() == RIGHT
    assert chain.first_wrong_step(EXAMPLE.chain, RIGHT) is None
    assert chain.first_wrong_step(EXAMPLE.chain, WRONG_OPERAND) == 1
    assert chain.first_wrong_step(EXAMPLE.chain, WRONG_RESULT) == 1
    assert chain.first_wrong_step(EXAMPLE.chain, RIGHT.replace("{14}", "{15}")) == 3  # the answer line
    assert chain.first_wrong_step(EXAMPLE.chain, "a: x = 12 + 3 = 15") == 1            # stopped early
    assert EXAMPLE.completion(error_at=1, kind="wrong_operand", error=4) == WRONG_OPERAND  # 5 -> (4+4)%5+1 = 4
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
    assert WRONG_OPERAND[span.start:span.end] == "b: x = 15 - 4 = 11"
    assert oracle_blame(RIGHT, EXAMPLE.chain) == []
    [tail] = oracle_blame(RIGHT.replace("{14}", "{15}"), EXAMPLE.chain)
    assert RIGHT[tail.start:tail.end] == "The answer is \\boxed{14}."


def _score(completion: str, **options):
    reference = EXAMPLE.task.reference
    [result] = MathScorer().score_batch([Rollout(completion, reference=reference)], MathOptions(**options))
    return result


def test_the_scorer_outcome_is_the_chain_and_the_signals_differ_where_they_should():
    assert _score(RIGHT, local="oracle").passed is True and _score(RIGHT, local="oracle").local == []
    # a wrong operand: the steps' own arithmetic is right, so the real signal blames nothing
    assert _score(WRONG_OPERAND).passed is False and _score(WRONG_OPERAND).local == []
    [oracle] = _score(WRONG_OPERAND, local="oracle").local
    assert WRONG_OPERAND[oracle.start:oracle.end] == "b: x = 15 - 4 = 11"
    # a wrong result: the real signal blames from that step to the end, the oracle that step alone
    [steps] = _score(WRONG_RESULT).local
    assert (steps.start, steps.end) == (WRONG_RESULT.index("15 - 5"), len(WRONG_RESULT))
    [oracle] = _score(WRONG_RESULT, local="oracle").local
    assert WRONG_RESULT[oracle.start:oracle.end] == "b: x = 15 - 5 = 11"
    # without a chain in the reference the oracle falls back to the steps signal
    [result] = MathScorer().score_batch([Rollout(WRONG_RESULT, reference={"answer": "14"})], MathOptions(local="oracle"))
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


def test_the_sft_diagnostic_splits_each_step_line_into_its_roles():
    from benchmarks.chain_sft_roles import role_spans

    spans = role_spans(RIGHT)
    assert [(RIGHT[s:e], role) for s, e, role in spans[:4]] == [("a", "label"), ("12", "value"), ("+ 3", "op"),
                                                                 ("15", "result")]
    assert len(spans) == 4 * len(EXAMPLE.operations)   # the answer line has no roles


def test_a_pilot_with_other_settings_is_its_own_row():
    from benchmarks import chain_study

    [plain] = chain_study.plan(["grpo"], (100,))
    [tuned] = chain_study.plan(["grpo"], (100,), {"optim.lr": 3e-4})
    assert plain.label == "grpo" and tuned.label == "grpo optim.lr=0.0003" and plain.key != tuned.key
    assert tuned.config["optim.lr"] == 3e-4 and plain.config["optim.lr"] == chain_study.RL["optim.lr"]


# --------------------------------------------------------------------------- what the cap cut (issue 36)
# RIGHT cut off by the token limit inside step c's result: "c: x = 10 + 4 = 1" of "= 14"
CUT_IN_A_STEP = RIGHT[:RIGHT.index("= 14") + 3]
# the cap fell inside the answer line, every step right
CUT_IN_THE_ANSWER = RIGHT[:RIGHT.index("{14}")]


def test_the_oracle_never_blames_the_line_the_cap_cut():
    assert CUT_IN_A_STEP.endswith("c: x = 10 + 4 = 1")
    assert oracle_blame(CUT_IN_A_STEP, EXAMPLE.chain, truncated=True) == []
    assert oracle_blame(CUT_IN_THE_ANSWER, EXAMPLE.chain, truncated=True) == []
    cut_after_a_newline = RIGHT[:RIGHT.index("c:")]   # the cap fell right after line b: no line was cut
    assert oracle_blame(cut_after_a_newline, EXAMPLE.chain, truncated=True) == []
    # a complete wrong line before the cut is still the first wrong step
    cut_after_a_mistake = WRONG_OPERAND[:WRONG_OPERAND.index("= 15\nThe")]
    [span] = oracle_blame(cut_after_a_mistake, EXAMPLE.chain, truncated=True)
    assert cut_after_a_mistake[span.start:span.end] == "b: x = 15 - 4 = 11"
    # the same text ended by the policy (its end token) is blamed where it stopped, as before
    [stopped] = oracle_blame(CUT_IN_A_STEP, EXAMPLE.chain)
    assert CUT_IN_A_STEP[stopped.start:stopped.end] == "c: x = 10 + 4 = 1"


def test_a_complete_wrong_tail_before_the_cut_is_still_blamed():
    rambling = RIGHT.replace("{14}", "{15}") + "\nand then some"
    [tail] = oracle_blame(rambling, EXAMPLE.chain, truncated=True)
    assert rambling[tail.start:tail.end] == "The answer is \\boxed{15}."


@pytest.mark.parametrize("local", ["steps", "oracle"])
def test_the_scorer_blames_the_cap_on_no_step(local):
    """Through the scorer: a rollout cut inside a step's result earns no local blame from either
    signal (the outcome is still -1: no answer was committed before the cut)."""
    reference = EXAMPLE.task.reference
    options = MathOptions(local=local)
    [cut] = MathScorer().score_batch([Rollout(CUT_IN_A_STEP, reference=reference, truncated=True)], options)
    assert cut.passed is False and cut.local == []
    # ended by the policy, the same text is a wrong step ("10 + 4 = 1") and is blamed
    [ended] = MathScorer().score_batch([Rollout(CUT_IN_A_STEP, reference=reference)], options)
    first_blamed = CUT_IN_A_STEP.index("c:" if local == "oracle" else "10 + 4")
    assert ended.passed is False and [s.start for s in ended.local] == [first_blamed]
    # a step wrong before the cut is blamed from there on by the steps signal, cut or not
    broken = WRONG_RESULT[:WRONG_RESULT.index("= 15\nThe") + 3]
    [result] = MathScorer().score_batch([Rollout(broken, reference=reference, truncated=True)], options)
    assert [s.start for s in result.local] == [broken.index("15 - 5" if local == "steps" else "b:")]
