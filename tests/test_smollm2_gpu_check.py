"""benchmarks/gpu_check.py's part 4 (the pre-registered comparison of docs/results/smollm2_rl/
protocol.md on a real model: chat_arith, `math` with `extraction: boxed`, arms bot_grpo, grpo and
ws0, seeds 1-3) small on CPU: a tiny SmolLM2-shaped GGUF converted by `botgrpo convert-gguf`'s
code, every cell through the trainer with the vLLM stand-in in this process, and in processes of
their own with the transformers engine (the GPU's default path), so that the first GPU run fails
only on what a GPU can show. Needs gguf and accelerate, as tests/test_smollm2_convert.py."""
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
    from botgrpo.trainer.models.pretrained import convert_gguf

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


def test_the_protocols_arms_and_seeds_run_in_this_process_with_the_vllm_engine(checkpoint, tmp_path, monkeypatch):
    args = [*SMALL, "--real-model", str(checkpoint), "--real-seeds", "1", "2", "--real-parallel", "0",
            "--real-engine", "auto", "--out", str(tmp_path)]
    assert _run(args, monkeypatch, True) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text())["real_model"]
    assert result["task"] == "chat_arith" and result["task_options"] == {"extraction": "boxed"}
    assert result["engine"] == "vllm" and result["engine_note"] is None and not result["bf16"]
    assert result["arms"] == {"bot_grpo": {"method": "bot_grpo"}, "grpo": {"method": "grpo"},
                              "ws0": {"method": "bot_grpo", "local_weight": 0.0}}
    cells = {(c["arm"], c["seed"]): c for c in result["cells"]}
    assert list(cells) == [("bot_grpo", 1), ("grpo", 1), ("ws0", 1), ("bot_grpo", 2), ("grpo", 2), ("ws0", 2)]
    for cell in cells.values():
        assert cell["steps"] == 2 and [r["step"] for r in cell["curve"]] == [1, 2]
        assert [e["step"] for e in cell["evals"]] == [0, 1, 2] and all(e["prompts"] == 2 for e in cell["evals"])
    assert cells[("ws0", 1)]["method"] == "bot_grpo" and cells[("ws0", 1)]["task_options"]["local_weight"] == 0.0
    assert "local_weight" not in cells[("grpo", 2)]["task_options"] and cells[("grpo", 2)]["method"] == "grpo"
    # the same start, prompts and seed: every arm samples the same first batch; the held-out set is shared
    for seed in (1, 2):
        first = {cells[(arm, seed)]["curve"][0]["reward_mean"] for arm in ("bot_grpo", "grpo")}
        assert len(first) == 1
        assert len({cells[(arm, seed)]["evals"][0]["pass_rate"] for arm in ("bot_grpo", "grpo", "ws0")}) == 1
    assert result["complete"] and result["compared_at_step"] == 2
    assert set(result["final_pass_rate"]) == {"bot_grpo", "grpo", "ws0"}
    assert [(v["a"], v["b"]) for v in result["verdicts"]] == [("bot_grpo", "grpo"), ("bot_grpo", "ws0"), ("ws0", "grpo")]
    assert all(v["seeds"] == [1, 2] for v in result["verdicts"])
    assert len(result["fingerprint"]) == 64
    assert (tmp_path / "real_model_curves.png").stat().st_size > 10_000
    prompt = json.loads((tmp_path / "work" / "real" / "train.jsonl").read_text().splitlines()[0])["prompt"]
    assert prompt[0]["role"] == "user" and prompt[0]["content"].startswith("What is ")
    assert fake_vllm.LLM.instances[-1].kwargs["model"] == str(checkpoint)


def test_cells_run_in_processes_of_their_own_with_the_transformers_engine(checkpoint, tmp_path, monkeypatch):
    """The GPU's default path (one process per cell, several at once) with the engine that needs no
    stand-in; any local checkpoint directory is taken as it is (a 3B model's the same way)."""
    args = [*SMALL, "--real-model", str(checkpoint), "--real-arms", "bot_grpo", "grpo", "--real-seeds", "3",
            "--real-parallel", "2", "--real-engine", "hf", "--out", str(tmp_path)]
    assert _run(args, monkeypatch, False) == 0
    result = json.loads((tmp_path / "gpu_check.json").read_text())["real_model"]
    assert result["engine"] == "hf" and result["parallel"] == 2 and result["complete"]
    assert sorted((c["arm"], c["seed"], c["steps"]) for c in result["cells"]) == [("bot_grpo", 3, 2), ("grpo", 3, 2)]
    assert result["verdicts"][0]["seeds"] == [3] and result["compared_at_step"] == 2
    logs = tmp_path / "work" / "real" / "logs"
    assert sorted(p.name for p in logs.iterdir()) == ["bot_grpo-s3.log", "grpo-s3.log"]


def test_a_cell_that_fails_is_reported_not_hidden(checkpoint, tmp_path, monkeypatch):
    from benchmarks import gpu_check

    specs = [{"arm": "grpo", "seed": 1, "result": str(tmp_path / "never.json"), "arith_run": {"model": "absent"}}]
    results = gpu_check._cells_in_processes(specs, 1, 120, tmp_path / "logs")
    assert results[0]["failed"] and results[0]["returncode"] != 0 and "Traceback" in results[0]["log_tail"]
    assert gpu_check.common_eval_step(results) is None
    cells = [{"evals": [{"step": s} for s in (0, 5, 10)]}, {"evals": [{"step": s} for s in (0, 5, 7)]}, results[0]]
    assert gpu_check.common_eval_step(cells) == 5


def test_a_missing_checkpoint_is_named(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="no checkpoint there"):
        _run([*SMALL, "--real-model", str(tmp_path / "absent"), "--out", str(tmp_path)], monkeypatch, False)


def test_engines_sharing_the_gpu_get_a_fixed_kv_cache_and_no_sleep():
    import argparse

    from benchmarks import gpu_check

    ns = argparse.Namespace(real_parallel=9, real_kv_cache_gib=2.0, real_steps=60, real_prompts_per_step=4,
                            real_group=8, real_lr=1e-5, real_temperature=0.7, real_new_tokens=64, real_eval_every=5,
                            real_eval_prompts=128, real_seconds=330.0, real_vllm_memory=None)
    shared = gpu_check.real_run(ns, "cuda", "vllm", "/models/qwen2.5-3b-instruct")
    assert shared.vllm_kwargs == {"enforce_eager": True, "kv_cache_memory_bytes": 2 * 2**30}
    assert not shared.vllm_sleep and shared.vllm_gpu_memory_utilization == pytest.approx(0.04)
    assert shared.bf16 and shared.gradient_checkpointing and shared.model == "/models/qwen2.5-3b-instruct"
    assert (shared.steps, shared.prompts_per_step, shared.group_size, shared.lr, shared.eval_every, shared.eval_prompts) == \
        (60, 4, 8, 1e-5, 5, 128)  # protocol.md's budget
    ns.real_parallel = 1
    alone = gpu_check.real_run(ns, "cuda", "vllm", "m")
    assert alone.vllm_kwargs == {"enforce_eager": True} and alone.vllm_sleep and alone.vllm_gpu_memory_utilization == 0.3
    ns.real_parallel = 9
    assert "kv_cache_memory_bytes" not in gpu_check.real_run(ns, "cuda", "hf", "m").vllm_kwargs
    assert not gpu_check.real_run(ns, "cpu", "hf", "m").bf16
