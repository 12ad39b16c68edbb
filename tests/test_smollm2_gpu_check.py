"""benchmarks/gpu_check.py's part 4 (BoT-GRPO against GRPO on a real model) small on CPU: a tiny
SmolLM2-shaped GGUF converted by `botgrpo convert-gguf`'s code, both methods through the trainer
with the vLLM stand-in (and the transformers engine), so that the first GPU run fails only on
what a GPU can show. Needs gguf and accelerate, as tests/test_smollm2_convert.py."""
from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

from tests.helpers import IN_CI

MISSING = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
if MISSING:
    message = f"{', '.join(MISSING)} not installed (make smollm2-install)"
    if IN_CI or os.environ.get("BOTGRPO_REQUIRE_SMOLLM2"):
        pytest.fail(message + " but required (CI or BOTGRPO_REQUIRE_SMOLLM2)", pytrace=False)
    pytest.skip(message, allow_module_level=True)

from tests import fake_vllm  # noqa: E402
from tests.smollm2_tiny import tiny_llama, tiny_tokenizer, write_tiny_gguf  # noqa: E402

SMALL = ["--device", "cpu", "--skip", "hf", "vllm", "advantages", "--real-steps", "2", "--real-prompts-per-step", "2",
         "--real-group", "2", "--real-new-tokens", "8", "--real-eval-every", "1", "--real-eval-prompts", "2"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from botgrpo.trainer.pretrained import convert_gguf

    root = tmp_path_factory.mktemp("tiny-smollm2")
    tokenizer = tiny_tokenizer()
    path = write_tiny_gguf(tiny_llama(tokenizer), tokenizer, root / "tiny.gguf", "Q4_1")
    convert_gguf(path, root / "ckpt", log=lambda _: None)
    return root / "ckpt"


def _run(args, monkeypatch, use_fake_vllm: bool) -> int:
    from benchmarks.gpu_check import main

    if use_fake_vllm:
        monkeypatch.setitem(sys.modules, "vllm", fake_vllm.install())
    saved = dict(os.environ)
    try:
        return main(args)
    finally:  # the external launcher sets torchrun's variables
        os.environ.clear()
        os.environ.update(saved)


def test_real_model_comparison_runs_both_methods_with_the_vllm_engine(checkpoint, tmp_path, monkeypatch):
    from tests.node_toolchain import require_node_toolchain

    require_node_toolchain()
    assert _run([*SMALL, "--real-model", str(checkpoint), "--out", str(tmp_path)], monkeypatch, True) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text())["real_model"]
    assert result["task"] == "react" and result["engine"] == "vllm" and result["same_steps"]
    assert set(result["runs"]) == {"bot_grpo", "grpo"}
    for run in result["runs"].values():
        assert run["steps"] == 2 and [r["step"] for r in run["curve"]] == [1, 2]
        assert [e["step"] for e in run["evals"]] == [0, 1, 2]
        assert all(0.0 <= e["pass_rate"] <= 1.0 for e in run["evals"])
        assert all(-1.0 <= r["reward_mean"] <= 1.0 for r in run["curve"])
    # the same checkpoint, prompts and seeds: both methods sample the same first batch
    first = [run["curve"][0]["reward_mean"] for run in result["runs"].values()]
    assert first[0] == first[1]
    assert (tmp_path / "real_model_curves.png").stat().st_size > 10_000
    prompt = json.loads((tmp_path / "work" / "real" / "train.jsonl").read_text().splitlines()[0])["prompt"]
    assert prompt[0]["role"] == "user" and prompt[0]["content"].startswith("Write a React component named")
    assert any(e.startswith("sleep") for e in fake_vllm.LLM.instances[-1].events)


def test_real_model_comparison_with_the_transformers_engine_on_math(checkpoint, tmp_path, monkeypatch):
    args = [*SMALL, "--real-model", str(checkpoint), "--real-engine", "hf", "--real-task", "math", "--out", str(tmp_path)]
    assert _run(args, monkeypatch, False) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text())["real_model"]
    assert result["task"] == "math" and result["engine"] == "hf"
    assert all(run["steps"] == 2 for run in result["runs"].values())


def test_a_missing_checkpoint_is_named(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="no checkpoint there"):
        _run([*SMALL, "--real-model", str(tmp_path / "absent"), "--out", str(tmp_path)], monkeypatch, False)
