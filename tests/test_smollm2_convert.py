"""The GGUF converter (trainer/models/pretrained.py, `botgrpo convert-gguf`) on tiny GGUF files written
here with the `gguf` package (tests/smollm2_tiny.py): every weight and token is known, so the
round trip is checked exactly, in seconds. The real SmolLM2 file: tests/test_smollm2_real.py.

Needs `gguf` and `accelerate` (`make smollm2-install`). Without them the module is skipped on a
developer's machine; in CI (CI=true) or under `make test-smollm2` (BOTGRPO_REQUIRE_SMOLLM2=1) a
missing package is a failure.
"""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from tests.helpers import IN_CI

REQUIRED = IN_CI or bool(os.environ.get("BOTGRPO_REQUIRE_SMOLLM2"))
MISSING = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
if MISSING:
    message = f"{', '.join(MISSING)} not installed (make smollm2-install)"
    if REQUIRED:
        pytest.fail(message + " but required (CI or BOTGRPO_REQUIRE_SMOLLM2)", pytrace=False)
    pytest.skip(message, allow_module_level=True)

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from botgrpo.trainer.models import pretrained  # noqa: E402
from botgrpo.trainer.models.pretrained import ConversionError, convert_gguf  # noqa: E402
from tests.smollm2_tiny import TEXTS, TINY_TEMPLATE, tiny_llama, tiny_tokenizer, write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    tokenizer = tiny_tokenizer()
    return tiny_llama(tokenizer), tokenizer


def _logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits


def test_float32_round_trip_is_exact(tiny, tmp_path):
    model, tokenizer = tiny
    path = write_tiny_gguf(model, tokenizer, tmp_path / "tiny.gguf", "F32")
    record = convert_gguf(path, tmp_path / "ckpt", log=lambda _: None)
    assert record["checks"]["logits_match"] and record["checks"]["logits_max_abs_gap"] == 0.0
    assert record["parameters"] == sum(p.numel() for p in model.parameters())
    assert record["gguf"]["tensor_types"] == {"F32": 2 + 9 * model.config.num_hidden_layers}
    converted = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt")
    assert type(converted).__name__ == "LlamaForCausalLM" and converted.config.tie_word_embeddings
    assert not hasattr(converted.config, "quantization_config")
    ids = tokenizer(TEXTS[0])["input_ids"]
    # the query/key permutation undone, the norms in place, the embedding tied: the very same function
    assert torch.equal(_logits(converted, ids), _logits(model, ids))
    files = {p.name for p in (tmp_path / "ckpt").iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "conversion.json"} <= files
    assert json.loads((tmp_path / "ckpt" / "conversion.json").read_text())["source_sha256"] == pretrained.sha256(path)


def test_tokenizer_chat_template_and_end_tokens_survive(tiny, tmp_path):
    from botgrpo.trainer.rollout.prompts import PromptEncoder, stop_token_ids

    model, tokenizer = tiny
    convert_gguf(write_tiny_gguf(model, tokenizer, tmp_path / "tiny.gguf"), tmp_path / "ckpt", log=lambda _: None)
    converted = AutoTokenizer.from_pretrained(tmp_path / "ckpt")
    for text in TEXTS[:3] + ["  spaces\tand\nnewlines  ", "unseen: zebra 12345"]:
        assert converted(text)["input_ids"] == tokenizer(text)["input_ids"], text
    assert converted.chat_template == TINY_TEMPLATE
    assert (converted.bos_token, converted.eos_token, converted.pad_token) == ("<s>", "</s>", "<pad>")
    generation = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").generation_config
    assert stop_token_ids(converted, generation) == [tokenizer.eos_token_id]
    messages = [{"role": "user", "content": "Write a React component named Counter."}]
    encoder = PromptEncoder(converted)
    assert encoder.render(messages) == "<s>user\nWrite a React component named Counter.</s>\n<s>assistant\n"
    assert encoder.ids(messages) == tokenizer(encoder.render(messages), add_special_tokens=False)["input_ids"]


def test_quantised_weights_are_the_files_dequantised(tiny, tmp_path):
    """Q4_1 blocks (Q8_0 embedding, as in the SmolLM2 file): the checkpoint computes exactly what
    transformers' own GGUF load computes, and stays near the unquantised model."""
    model, tokenizer = tiny
    path = write_tiny_gguf(model, tokenizer, tmp_path / "tiny-q4.gguf", "Q4_1")
    record = convert_gguf(path, tmp_path / "ckpt", log=lambda _: None)
    assert record["gguf"]["tensor_types"]["Q4_1"] == 7 * model.config.num_hidden_layers
    assert record["gguf"]["tensor_types"]["Q8_0"] == 1
    direct = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, dtype=torch.float32).eval()
    converted = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").eval()
    ids = tokenizer(TEXTS[1])["input_ids"]
    assert torch.equal(_logits(converted, ids), _logits(direct, ids))
    gap = (_logits(converted, ids) - _logits(model, ids)).abs().max().item()
    assert 0 < gap < 0.5, gap  # 4-bit weights: not the original, but close


def test_bfloat16_output_and_cache(tiny, tmp_path, monkeypatch):
    model, tokenizer = tiny
    path = write_tiny_gguf(model, tokenizer, tmp_path / "tiny.gguf")
    record = convert_gguf(path, tmp_path / "ckpt", dtype="bfloat16", log=lambda _: None)
    assert record["dtype"] == "bfloat16" and record["checks"]["logits_match"]
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt", dtype="auto")
    assert loaded.dtype == torch.bfloat16
    # the same source again: cached, nothing is loaded
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: pytest.fail("reloaded"))
    lines = []
    assert convert_gguf(path, tmp_path / "ckpt", dtype="bfloat16", log=lines.append) == record
    assert lines[0].startswith("cached:")
    monkeypatch.undo()
    # another file at the same place, or another dtype: converted again
    other = write_tiny_gguf(tiny_llama(tokenizer, seed=1), tokenizer, tmp_path / "tiny.gguf")
    assert convert_gguf(other, tmp_path / "ckpt", dtype="bfloat16", log=lambda _: None)["source_sha256"] != record["source_sha256"]
    assert convert_gguf(other, tmp_path / "ckpt", log=lambda _: None)["dtype"] == "float32"


def test_an_interrupted_conversion_leaves_nothing_that_looks_finished(tiny, tmp_path, monkeypatch):
    model, tokenizer = tiny
    path = write_tiny_gguf(model, tokenizer, tmp_path / "tiny.gguf")

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(type(tokenizer), "save_pretrained", broken)
    with pytest.raises(OSError, match="disk full"):
        convert_gguf(path, tmp_path / "ckpt", log=lambda _: None)
    assert not (tmp_path / "ckpt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.gguf"]  # no staging directory left behind


def test_clear_errors_for_what_is_missing(tmp_path):
    with pytest.raises(ConversionError, match="no GGUF file"):
        convert_gguf(tmp_path / "absent.gguf", tmp_path / "ckpt")
    missing = pretrained.BundledGGUF("x", "no-such-distribution-botgrpo", "1.0", "x/model.gguf")
    with pytest.raises(ConversionError, match=r"not installed; install it with `make smollm2`"):
        pretrained.bundled_gguf(missing)


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BOTGRPO_MODEL_CACHE", str(tmp_path / "models"))
    assert pretrained.default_checkpoint() == tmp_path / "models" / "smollm2-135m-instruct"
    monkeypatch.delenv("BOTGRPO_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pretrained.cache_dir() == tmp_path / "xdg" / "botgrpo" / "models"


def test_the_command_converts_and_the_trainer_samples_from_the_result(tiny, tmp_path, capsys):
    from botgrpo.cli import main
    from botgrpo.trainer.models.precision import load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder

    model, tokenizer = tiny
    path = write_tiny_gguf(model, tokenizer, tmp_path / "tiny.gguf", "Q4_1")
    assert main(["convert-gguf", str(path), "--out", str(tmp_path / "ckpt"), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"checkpoint: {tmp_path / 'ckpt'}") and '"logits_match": true' in out
    assert main(["convert-gguf", str(tmp_path / "absent.gguf"), "--out", str(tmp_path / "x")]) == 1
    # as `botgrpo train/eval --model DIR` load it: float32 master weights, chat prompts, end tokens
    converted = AutoTokenizer.from_pretrained(tmp_path / "ckpt")
    engine = HFEngine(load_causal_lm(str(tmp_path / "ckpt"), "cpu").eval(), converted,
                      encoder=PromptEncoder(converted))
    batch = engine.generate([[{"role": "user", "content": "Compute 3 + 4 step by step."}]], 2,
                            SamplingParams(max_new_tokens=8), seeds=[0])
    assert batch.completion_ids.shape[0] == 2 and batch.lengths.min() >= 1
    assert [len(spans) for spans in batch.spans] == batch.lengths.tolist()  # one character span per token
