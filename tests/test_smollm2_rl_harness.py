"""The SmolLM2 study's bookkeeping (benchmarks/smollm2_rl.py): what makes its cells resumable across
sessions whose machines share nothing but the repository."""
from __future__ import annotations

import json

import pytest

from benchmarks import smollm2_rl


def _checkpoint(path, weights: bytes, seconds: float):
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.safetensors").write_bytes(weights)
    (path / "config.json").write_text("{}")
    (path / "conversion.json").write_text(json.dumps({"seconds": seconds}))
    return path


def test_fingerprint_is_the_model_not_how_long_its_conversion_took(tmp_path):
    a = smollm2_rl.fingerprint(_checkpoint(tmp_path / "a", b"w", 34.1))
    b = smollm2_rl.fingerprint(_checkpoint(tmp_path / "b", b"w", 35.9))
    c = smollm2_rl.fingerprint(_checkpoint(tmp_path / "c", b"x", 34.1))
    assert a == b != c


def test_a_committed_record_finishes_its_cell_and_another_start_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(smollm2_rl, "RESULTS", tmp_path)
    assert not smollm2_rl.committed("grpo-s1", "f" * 64)
    (tmp_path / "grpo-s1.json").write_text(json.dumps({"manifest": {"fingerprint": "f" * 64}, "finished": True}))
    (tmp_path / "ws0-s1.json").write_text(json.dumps({"manifest": {"fingerprint": "f" * 64}, "finished": False}))
    assert smollm2_rl.committed("grpo-s1", "f" * 64)
    assert not smollm2_rl.committed("ws0-s1", "f" * 64)
    with pytest.raises(SystemExit, match="another checkpoint"):
        smollm2_rl.committed("grpo-s1", "e" * 64)


def test_the_study_is_three_arms_by_three_seeds_seed_major_and_never_the_pilot():
    cells = list(smollm2_rl.study_cells())
    assert cells == [f"{arm}-s{seed}" for seed in (1, 2, 3) for arm in ("bot_grpo", "grpo", "ws0")]
    assert all(not c.endswith("-s0") for c in cells)


def test_lora_flags_reach_the_trainer_config_and_a_full_fine_tune_record_is_unchanged():
    import argparse

    from benchmarks import smollm2_rl
    from botgrpo.trainer.tasks.chat_arith import ChatArith

    full = argparse.Namespace(
        method="bot_grpo", seed=1, local_weight=None, steps=60, prompts_per_step=4, group_size=8, lr=1e-5,
        temperature=0.7, max_new_tokens=64, eval_every=5, eval_prompts=128, max_operand=30, operators=["+"],
        extraction="boxed", lora_r=None, lora_alpha=None)
    assert "lora_r" not in smollm2_rl.settings_of(full)   # the committed cells' manifests still match
    lora = smollm2_rl.settings_of(type(full)(**{**vars(full), "lora_r": 8, "lora_alpha": 16.0}))
    assert (lora["lora_r"], lora["lora_alpha"]) == (8, 16.0)
    arith_run = ChatArith(model="m", **{k: tuple(v) if k == "operators" else v for k, v in lora.items()})
    cfg = arith_run.train_config("out", "train.jsonl", "eval.jsonl")
    assert (cfg.optim.lora.r, cfg.optim.lora.alpha) == (8, 16.0)
    assert ChatArith(model="m").train_config("out", "train.jsonl", "eval.jsonl").optim.lora is None


def _record(final: float, evals: list[float], finished: bool = True) -> dict:
    steps = [0, *range(5, 5 * len(evals), 5)]
    return {"finished": finished, "final_pass_rate": final,
            "evals": [{"step": s, "pass_rate": r} for s, r in zip(steps, evals)]}


def test_the_verdict_calls_only_what_every_seed_agrees_on_and_never_before_every_seed_finished():
    # bot_grpo beats grpo by 6, 7 and 8 points at the end (mean 7 >= 5: called); ws0 differs by
    # +10, -2, +10 (signs disagree: not called). Step 0 is left out of the secondary mean.
    records = {}
    for seed, (b, g, w) in {1: (0.60, 0.54, 0.50), 2: (0.70, 0.63, 0.72), 3: (0.80, 0.72, 0.70)}.items():
        records[f"bot_grpo-s{seed}"] = _record(b, [0.9, 0.4, b])
        records[f"grpo-s{seed}"] = _record(g, [0.0, 0.4, g])
        records[f"ws0-s{seed}"] = _record(w, [0.0, 0.4, w])
    verdict = smollm2_rl.study_verdict(records)
    assert verdict["complete"] and verdict["cells_finished"] == 9
    vs_grpo, vs_ws0, ws0_vs_grpo = verdict["primary"]
    assert vs_grpo["verdict"] == "bot_grpo > grpo" and vs_grpo["mean_difference"] == pytest.approx(0.07)
    assert vs_ws0["verdict"] == "no difference detected at this size"
    assert ws0_vs_grpo["differences"] == pytest.approx([-0.04, 0.09, -0.02])
    assert verdict["mean_pass_rate_5_60"]["bot_grpo"][1] == pytest.approx(0.5)    # (0.4 + 0.6) / 2
    assert verdict["secondary"][0]["differences"] == pytest.approx([0.03, 0.035, 0.04])

    records["grpo-s3"] = _record(0.10, [0.0, 0.1, 0.1], finished=False)   # an unfinished cell is no seed
    partial = smollm2_rl.study_verdict(records)
    assert not partial["complete"] and partial["cells_finished"] == 8
    assert partial["primary"][0]["verdict"] == "not yet: 2 of 3 seeds"


def test_report_writes_the_verdict_and_its_figure_from_the_committed_records(tmp_path, monkeypatch):
    monkeypatch.setattr(smollm2_rl, "RESULTS", tmp_path)
    for seed in (1, 2, 3):
        for arm, final in {"bot_grpo": 0.7, "grpo": 0.6, "ws0": 0.65 + 0.1 * (seed == 2)}.items():
            (tmp_path / f"{arm}-s{seed}.json").write_text(json.dumps(_record(final, [0.05, 0.3, final])))
    written = smollm2_rl.write_verdict()
    assert json.loads((tmp_path / "verdict.json").read_text()) == json.loads(json.dumps(written))
    assert [v["verdict"] for v in written["primary"]] == [
        "bot_grpo > grpo", "no difference detected at this size", "ws0 > grpo"]
    assert (tmp_path / "study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
