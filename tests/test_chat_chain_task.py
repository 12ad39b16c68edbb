"""The chat step-chain task (botgrpo.trainer.tasks.chat_chain) and the real math scorer on its lines."""
from __future__ import annotations

import random

import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.trainer.tasks import chat_chain

EXAMPLE = chat_chain.ChatChainExample(7, (("+", 5), ("*", 3), ("-", 4)))
REFERENCE = {"answer": "32", "chain": ["7 + 5 = 12", "12 * 3 = 36", "36 - 4 = 32"]}
RIGHT = "7 + 5 = 12\n12 * 3 = 36\n36 - 4 = 32\nThe answer is \\boxed{32}."
WRONG_RESULT = "7 + 5 = 12\n12 * 3 = 35\n35 - 4 = 31\nThe answer is \\boxed{31}."    # line 1: arithmetic off
WRONG_OPERAND = "7 + 5 = 12\n12 * 2 = 24\n24 - 4 = 20\nThe answer is \\boxed{20}."   # line 1: right sum, wrong factor
NUMBERED = "1. Add 5: 7 + 5 = 12\n2. Multiply by 3: 12 * 3 = 36\n3. Subtract 4: 36 - 4 = 32\nThe answer is \\boxed{32}."


def score(completion: str, local: str, truncated: bool = False):
    [result] = MathScorer().score_batch([Rollout(completion, reference=REFERENCE, truncated=truncated)],
                                        MathOptions(extraction="boxed", local=local))
    return result


def line_of(completion: str, position: int) -> int:
    return completion.count("\n", 0, position)


def test_a_hand_computed_prompt_and_reference():
    task = EXAMPLE.task
    assert task.prompt == ("Start with 7. Add 5. Multiply by 3. Subtract 4. Solve it step by step, one step per "
                           "line, starting with `7 + 5 = 12`. End with the line `The answer is \\boxed{}.` with the "
                           "final number in the box.\n")
    assert task.reference == REFERENCE
    assert EXAMPLE.answer == 32


def test_draws_are_seeded_and_keep_values_small_and_positive():
    difficulty = chat_chain.Difficulty(min_steps=2, max_steps=5, max_operand=9, max_factor=4, max_product_base=15)
    first, again = (chat_chain.make_examples(300, 5, difficulty) for _ in range(2))
    assert first == again
    for example in first:
        assert 2 <= len(example.operations) <= 5 and 1 <= example.start <= 9
        value = example.start
        for op, n in example.operations:
            assert (2 <= n <= 4) if op == "*" else (1 <= n <= 9)
            assert op != "*" or value <= 15
            value = chat_chain.apply(op, value, n)
            assert value >= 1
        assert example.answer == value and example.chain[-1].endswith(f"= {value}")
    assert {op for e in first for op, _ in e.operations} == {"+", "-", "*"}


def test_only_the_named_operators_occur():
    examples = chat_chain.make_examples(200, 1, chat_chain.Difficulty(operators=("+", "-")))
    assert {op for e in examples for op, _ in e.operations} == {"+", "-"}
    with pytest.raises(ValueError):
        chat_chain.Difficulty(operators=("*",))


def test_held_out_and_training_prompts_share_neither_seed_nor_question():
    assert chat_chain.TRAIN_SEED != chat_chain.EVAL_SEED
    small = chat_chain.Difficulty(min_steps=2, max_steps=2, max_operand=3, operators=("+", "-"))
    # so small a space repeats chains: drawn naively, the two seeds share questions
    naive = {t.prompt for t in chat_chain.make_prompts(300, chat_chain.TRAIN_SEED, small)}
    assert naive & {t.prompt for t in chat_chain.make_prompts(32, chat_chain.EVAL_SEED, small)}
    train, held_out = chat_chain.make_split(300, 32, small)
    assert len(train) == 300 and held_out == chat_chain.make_prompts(32, chat_chain.EVAL_SEED, small)
    assert not {t.prompt for t in train} & {t.prompt for t in held_out}


def test_the_right_chain_passes_with_no_blame_under_either_signal():
    for local in ("steps", "oracle"):
        result = score(RIGHT, local)
        assert result.passed is True and result.score == 1.0 and result.local == []


def test_a_wrong_result_is_blamed_from_its_line_by_steps_and_on_its_line_alone_by_the_oracle():
    steps, oracle = score(WRONG_RESULT, "steps"), score(WRONG_RESULT, "oracle")
    assert steps.passed is False and oracle.passed is False
    [s] = steps.local
    assert line_of(WRONG_RESULT, s.start) == 1 and s.end == len(WRONG_RESULT) and s.score == -1.0
    [o] = oracle.local
    assert WRONG_RESULT[o.start:o.end] == "12 * 3 = 35"


def test_a_right_sum_of_the_wrong_numbers_is_seen_by_the_oracle_alone():
    steps, oracle = score(WRONG_OPERAND, "steps"), score(WRONG_OPERAND, "oracle")
    assert steps.passed is False and steps.local == []          # every line's arithmetic is right
    [o] = oracle.local
    assert WRONG_OPERAND[o.start:o.end] == "12 * 2 = 24"


def test_the_line_exact_oracle_blames_a_numbered_layout_that_steps_accepts():
    """SmolLM2's own habit ("1. Add 5: 7 + 5 = 12"): right, and passed, but not the reference's lines."""
    steps, oracle = score(NUMBERED, "steps"), score(NUMBERED, "oracle")
    assert steps.passed and oracle.passed and steps.local == []
    [o] = oracle.local
    assert line_of(NUMBERED, o.start) == 0


def test_no_answer_an_early_stop_and_a_cut_line():
    missing = score("Let me think about it.", "oracle")
    assert missing.passed is False and missing.local_default == -1.0 and missing.details["reason"] == "no final answer found"
    stopped = "7 + 5 = 12\n12 * 3 = 36"   # ended two lines in: the last number read, wrong; blamed where it stopped
    [o] = score(stopped, "oracle").local
    assert stopped[o.start:o.end] == "12 * 3 = 36"
    cut = score("7 + 5 = 12\n12 * 3 = 36\n36 - 4 = 3", "oracle", truncated=True)
    assert cut.passed is False and cut.local == []


def test_a_random_wrong_line_is_where_the_oracle_blames():
    rng = random.Random(0)
    for example in chat_chain.make_examples(50, 3, chat_chain.Difficulty(min_steps=3, max_steps=6)):
        lines = list(example.chain)
        at = rng.randrange(len(lines))
        left, right = lines[at].rsplit("= ", 1)
        lines[at] = f"{left}= {int(right) + 1}"
        completion = "\n".join([*lines, f"The answer is \\boxed{{{example.answer}}}."])
        [result] = MathScorer().score_batch([Rollout(completion, reference=example.task.reference)],
                                            MathOptions(extraction="boxed", local="oracle"))
        [span] = result.local
        assert line_of(completion, span.start) == at


def test_a_real_smollm2_completion_that_recursed_forever_is_refused():
    """SmolLM2 wrote this (v7 base rate, README.md); the answer's checked chain ``3 + 5 = 8`` is itself
    the right side of an ``=`` the reader cannot check, and the guard re-read it without end."""
    [result] = MathScorer().score_batch([Rollout("2. + 1. = 3 + 5 = 8", reference={"answer": "8"})],
                                        MathOptions(extraction="boxed"))
    assert result.passed is False
    assert result.details["reason"] == "refused by guard: the answer ends an equation whose left side is not a variable"
    [checked] = MathScorer().score_batch([Rollout("x = 3 + 5 = 8", reference={"answer": "8"})],
                                         MathOptions(extraction="boxed"))
    assert checked.passed is True   # a chain after a named left side still reads


def test_the_protocol_setup_names_the_make_target_when_the_start_is_missing(tmp_path):
    from benchmarks.smollm2_chain import setup
    with pytest.raises(SystemExit, match="make smollm2"):
        setup(tmp_path, model=str(tmp_path / "absent"))


def test_the_base_rate_counts_right_answers_each_signal_still_blames():
    """benchmarks.smollm2_chain_base on a hand-made group of 5: right, right but numbered (the
    oracle alone blames it), an arithmetic slip (both blame line 1), a right sum of a wrong factor
    (the oracle alone), a bare right answer (the oracle alone)."""
    from benchmarks.smollm2_chain_base import score as base_rate
    completions = [(RIGHT, False), (NUMBERED, False), (WRONG_RESULT, False), (WRONG_OPERAND, False),
                   ("The answer is 32.", False)]   # a bare right answer: passes, no step, the oracle blames it
    record = base_rate([EXAMPLE.task], completions, samples=5)
    assert record["pass_rate"] == 0.6 and record["mixed_groups"] == 1.0
    assert record["right_blamed"] == {"steps": 0, "oracle": 2}
    assert record["right_written"] == {"no step": 1, "the whole reference chain": 2}
    assert record["steps_vs_oracle"] == {"both_blame": 1, "same_line": 1.0, "only_steps": 0, "only_oracle": 3}


def test_a_worked_completion_is_the_reference_layout_and_a_slip_carries_on():
    assert EXAMPLE.completion() == RIGHT
    assert EXAMPLE.completion(error_at=1, error=-1) == WRONG_RESULT    # 36 -> 35, then 35 - 4 = 31
    assert score(EXAMPLE.completion(), "oracle").passed and score(EXAMPLE.completion(), "oracle").local == []


def test_the_sft_corpus_is_seeded_excludes_held_out_prompts_and_slips_once_where_it_says():
    difficulty = chat_chain.Difficulty(3, 3, 5, 3, operators=("+", "-"))
    held_out = {t.prompt for t in chat_chain.make_prompts(64, chat_chain.EVAL_SEED, difficulty)}
    corpus = chat_chain.make_sft_corpus(400, 5, difficulty, broken_share=0.5, exclude=held_out)
    assert corpus == chat_chain.make_sft_corpus(400, 5, difficulty, broken_share=0.5, exclude=held_out)
    assert not any(example.task.prompt in held_out for example, _ in corpus)
    slipped = 0
    for example, completion in corpus:
        lines = completion.split("\n")
        wrong = [i for i, (line, right) in enumerate(zip(lines, example.chain)) if line != right]
        assert lines[-1].startswith("The answer is \\boxed{") and len(lines) == len(example.chain) + 1
        if wrong:   # one slip: its result off by 1-3, every later line carried on from it
            slipped += 1
            first = wrong[0]
            off = int(lines[first].rsplit("= ", 1)[1]) - int(example.chain[first].rsplit("= ", 1)[1])
            assert off in chat_chain.SLIPS and int(lines[first].rsplit("= ", 1)[1]) >= 1
            assert completion == example.completion(first, off)
            assert not score_reference(completion, example).passed
        else:
            assert completion == example.completion()
    assert 150 < slipped < 250   # about half of 400


def score_reference(completion: str, example: chat_chain.ChatChainExample):
    [result] = MathScorer().score_batch([Rollout(completion, reference=example.task.reference)],
                                        MathOptions(extraction="boxed", local="steps"))
    return result


def test_the_warm_start_is_named_by_its_recipe_and_needs_the_smollm2_start(tmp_path):
    from benchmarks.smollm2_chain import WarmRecipe, warm_start
    assert WarmRecipe().name != WarmRecipe(broken_share=0.7).name != WarmRecipe(threads=1).name
    with pytest.raises(SystemExit, match="make smollm2"):
        warm_start(chat_chain.Difficulty(), WarmRecipe(), base=tmp_path / "absent", cache=tmp_path)
    assert not any(tmp_path.iterdir())   # nothing half-built left behind
