"""The chain study v3's protocol (issue 36) can show what it asks: every chain fits the cap with
margin, so a passing answer never comes from a chain the cap cut off, and the scorer refuses
cut-off answers. Measured with the tokenizer of the committed warm start the study runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import chain_study
from botgrpo.compare.protocol import load
from botgrpo.reward_server.scorers.math import MathOptions
from botgrpo.trainer.tasks import chain

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
    # and every held-out chain the study evaluates, as its setup writes them
    paths = chain_study.setup(tmp_path, eval_prompts=protocol.evaluation.prompts)
    held_out = chain.make_examples(protocol.evaluation.prompts, 2)
    assert [e.task.prompt for e in held_out] == [t.prompt for t in chain.make_prompts(protocol.evaluation.prompts, 2)]
    assert Path(paths["eval"]["dataset"]).read_text().count("\n") == len(held_out)
    assert max(_tokens(tokenizer, e) for e in held_out) <= cap
    # v2's cap (160) could not hold 11- and 12-step chains: the flaw this protocol fixes
    assert sum(_tokens(tokenizer, e) > chain_study.MAX_NEW_TOKENS for e in held_out) > len(held_out) // 4


def test_the_v3_scorer_refuses_cut_off_answers(protocol):
    options = MathOptions.model_validate(protocol.base.values["reward"]["options"])
    assert options.cut_off_answers == "refuse" and options.local == "steps"
    for overrides in protocol.arms.values():
        assert not any("cut_off_answers" in key or "max_new_tokens" in key for key in overrides)


def test_the_v3_seeds_were_never_used_by_a_chain_study(protocol):
    used = set(chain_study.STUDY_SEEDS) | set(chain_study.PILOT_SEEDS)
    assert not used & (set(protocol.seeds.study) | set(protocol.seeds.pilot))
    assert protocol.gate.a == "oracle" and (protocol.primary.a, protocol.primary.b) == ("bot_grpo", "ws0")
