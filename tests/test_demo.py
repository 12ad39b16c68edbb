"""The demo pipeline end to end at a tiny size (the full demo runs from `make demo`)."""
import json
from pathlib import Path

from tests.node_toolchain import require_node_toolchain
from botgrpo.demo import DemoSettings, run


def test_demo_pipeline_small(tmp_path):
    require_node_toolchain()
    s = DemoSettings(out_dir=str(tmp_path), corpus=120, sft_steps=15, train_prompts=32, eval_prompts=8, steps=2,
                     group_size=4, prompts_per_step=2, max_new_tokens=48, eval_every=0)
    summary = run(s, log=lambda msg: None)
    assert summary["steps"] == 2 and len(summary["compile_rate"]) == 2
    out = tmp_path / "bot_grpo"
    assert (out / "curves.png").exists() and (out / "checkpoint-2" / "config.json").exists()
    # the stable names docs use: the warm start and the newest checkpoint, whatever their real names
    assert (tmp_path / "warm").resolve() == (tmp_path / f"warm-{s.warm_key()}").resolve()
    assert (tmp_path / "warm" / "model" / "config.json").exists() and not (tmp_path / "warm").readlink().is_absolute()
    assert (out / "latest").readlink() == Path("checkpoint-2")
    assert json.loads((out / "summary.json").read_text())["method"] == "bot_grpo"
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and "spec_rate" in json.loads(lines[0])
    again = run(s, log=lambda msg: None)  # the warm start is reused, not rebuilt; records start over
    assert again["evals"][0] == summary["evals"][0]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
