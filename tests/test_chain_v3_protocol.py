"""The chain study v3's protocol (issue 36) can show what it asks: every chain fits the cap with
margin, so a passing answer never comes from a chain the cap cut off, and the scorer refuses
cut-off answers. Measured with the tokenizer of the committed warm start the study runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import chain_study
from botgrpo.compare.protocol import load
from botgrpo.reward_server.math.blame import expected_answer_line
from botgrpo.reward_server.scorers.math import MathOptions
from botgrpo.trainer.tasks import chain
from botgrpo.trainer.tasks.base import read_jsonl

PROTOCOL = Path(__file__).resolve().parents[1] / "docs/results/chain_v3/protocol.yaml"
MARGIN = 1.15   # the cap holds the longest chain and its end token with 15% to spare


@pytest.fixture(scope="module")
def protocol():
    return load(PROTOCOL)


def _tokens(tokenizer, example: chain.ChainExample) -> int:
    return len(tokenizer(example.completion()).input_ids) + 1   # and the end token


def test_the_v3_cap_fits_every_chain_with_margin(protocol, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(chain_study.WARM_START)
    cap = protocol.base.values["rollout"]["sampling"]["max_new_tokens"]
    # the longest chain the generator can draw: every step, every value two digits
    longest = chain.ChainExample(chain.KEEP_HIGH, (("-", chain.MAX_DIGIT), ("+", chain.MAX_DIGIT)) * 6)
    assert len(longest.operations) == len(chain.LABELS)
    assert _tokens(tokenizer, longest) * MARGIN <= cap
    # and every held-out chain the study evaluates, read back from the file its setup writes
    paths = chain_study.setup(tmp_path, eval_prompts=protocol.evaluation.prompts)
    held_out = [_reference_tokens(tokenizer, task.reference) for task in read_jsonl(paths["eval"]["dataset"])]
    assert len(held_out) == protocol.evaluation.prompts and max(held_out) <= cap
    # v2's cap (160) could not hold 11- and 12-step chains: the flaw this protocol fixes
    assert sum(n > chain_study.MAX_NEW_TOKENS for n in held_out) > len(held_out) // 4


def _reference_tokens(tokenizer, reference: dict) -> int:
    """Tokens of the full worked answer a task's reference stands for, end token included."""
    text = "\n".join([*reference["chain"], expected_answer_line(reference["chain"])])
    assert expected_answer_line(reference["chain"]) == f"The answer is \\boxed{{{reference['answer']}}}."
    return len(tokenizer(text).input_ids) + 1


def test_the_v3_scorer_refuses_cut_off_answers(protocol):
    options = MathOptions.model_validate(protocol.base.values["reward"]["options"])
    assert options.cut_off_answers == "refuse" and options.local == "steps"
    for overrides in protocol.arms.values():
        assert not any("cut_off_answers" in key or "max_new_tokens" in key for key in overrides)


def test_the_v3_seeds_were_never_used_by_a_chain_study(protocol):
    used = set(chain_study.STUDY_SEEDS) | set(chain_study.PILOT_SEEDS)
    assert not used & (set(protocol.seeds.study) | set(protocol.seeds.pilot))
    assert protocol.gate.a == "oracle" and (protocol.primary.a, protocol.primary.b) == ("bot_grpo", "ws0")
