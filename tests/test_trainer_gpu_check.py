"""benchmarks/gpu_check.py's code paths, small on CPU with the vLLM stand-in, so that its first
run on a GPU machine fails only on what a GPU can show (it runs real vLLM there)."""
import json
import os
import sys

from tests import fake_vllm


def test_gpu_check_runs_end_to_end_on_cpu_with_the_vllm_stand_in(tmp_path, monkeypatch):
    from benchmarks.gpu_check import main
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm.install())
    saved = dict(os.environ)
    try:
        code = main(["--device", "cpu", "--tiny", "--steps", "2", "--prompts", "2", "--group", "2",
                     "--prompt-tokens", "4", "--new-tokens", "6", "--out", str(tmp_path)])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert code == 0, result["vllm"]["checks"]
    assert len(result["hf_steps"]) == 2 and len(result["vllm"]["steps"]) == 3
    assert set(result["vllm"]["checks"]) == {"master_weights_float32", "weights_equal_policy_after_every_load",
                                            "behaviour_logprobs_match_first_step", "first_ratio_is_one"}
    assert "bot_grpo" in result["advantages_ms"]
    events = fake_vllm.LLM.instances[-1].events
    assert events[:2] == ["init", "sleep:2"] and "wake:all" not in events
