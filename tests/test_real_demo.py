"""``botgrpo demo --model smollm2`` (botgrpo/real_demo.py), the shared real-model run
(botgrpo/trainer/tasks/chat_arith.py) and the engine choice (botgrpo/trainer/rollout/choice.py): argument handling, the clear failures (no checkpoint, no engine),
the live progress line, the study's decision rule, and the demo end to end on a tiny
SmolLM2-shaped checkpoint with both engines (the transformers loop, and the vLLM engine on the
stand-in). The real model's run is the user's (about 15 minutes), not the suite's."""
from __future__ import annotations

import json
import sys

import pytest

from benchmarks import smollm2_rl
from botgrpo.cli import build_parser
from botgrpo.commands import demo as demo_command
from botgrpo.compare.stats import paired_verdict
from botgrpo.trainer.rollout import choice
from botgrpo.trainer.tasks.chat_arith import ChatArith


def _args(*argv):
    return build_parser("demo").parse_args(["demo", *argv])


# ---------------------------------------------------------------- arguments
def test_the_model_flag_picks_a_demo_and_its_settings():
    from botgrpo.demo import DemoSettings
    from botgrpo.real_demo import SmolLM2DemoSettings

    tiny = demo_command.settings_from(_args("--steps", "5"))
    assert type(tiny) is DemoSettings and tiny.steps == 5 and tiny.out_dir == "runs/demo"
    real = demo_command.settings_from(_args("--model", "smollm2", "--steps", "3", "--eval-prompts", "16", "--no-bf16",
                                            "--engine", "hf", "--method", "grpo", "--out", "elsewhere"))
    assert type(real) is SmolLM2DemoSettings
    assert (real.steps, real.eval_prompts, real.bf16, real.engine, real.method, real.out_dir) == \
        (3, 16, False, "hf", "grpo", "elsewhere")
    defaults = demo_command.settings_from(_args("--model", "smollm2"))
    assert defaults == SmolLM2DemoSettings()
    assert (defaults.steps, defaults.prompts_per_step, defaults.group_size, defaults.lr, defaults.bf16) == (30, 4, 8, 1e-5, True)


@pytest.mark.parametrize("argv, refused", [(["--model", "smollm2", "--corpus", "10"], "--corpus"),
                                           (["--model", "tiny", "--engine", "vllm"], "--engine"),
                                           (["--model", "tiny", "--no-bf16"], "--bf16"),
                                           (["--model", "smollm2", "--fresh"], "--fresh")])
def test_a_flag_of_another_demo_is_refused(argv, refused):
    with pytest.raises(SystemExit, match=refused):
        demo_command.settings_from(_args(*argv))


def test_an_unknown_model_is_an_argument_error(capsys):
    with pytest.raises(SystemExit):
        _args("--model", "llama-70b")
    assert "invalid choice" in capsys.readouterr().err


def test_a_missing_checkpoint_says_make_smollm2(tmp_path):
    with pytest.raises(SystemExit, match="make smollm2"):
        demo_command.run(_args("--model", "smollm2", "--checkpoint", str(tmp_path / "absent"), "--out", str(tmp_path)))
    assert not (tmp_path / "train.jsonl").exists()  # nothing ran


# ---------------------------------------------------------------- engines
def _only(monkeypatch, *present):
    monkeypatch.setattr(choice, "_importable", lambda name: name in present)


def test_auto_takes_vllm_when_importable_and_says_when_it_falls_back(monkeypatch):
    _only(monkeypatch, "torch", "transformers", "vllm")
    assert choice.choose_engine("auto") == ("vllm", None)
    _only(monkeypatch, "torch", "transformers")
    engine, note = choice.choose_engine("auto")
    assert engine == "hf" and "slower" in note and "make vllm-env" in note
    assert choice.choose_engine("hf") == ("hf", None)


def test_an_engine_that_cannot_run_is_named_with_what_to_install(monkeypatch):
    _only(monkeypatch, "torch", "transformers")
    with pytest.raises(choice.EngineUnavailable, match="make vllm-env"):
        choice.choose_engine("vllm")
    _only(monkeypatch)
    with pytest.raises(choice.EngineUnavailable, match="neither rollout engine"):
        choice.choose_engine("auto")
    with pytest.raises(ValueError):
        choice.choose_engine("sglang")


def test_the_demo_fails_clearly_when_no_engine_can_run(monkeypatch, checkpoint, tmp_path):
    _only(monkeypatch)
    with pytest.raises(SystemExit, match="neither rollout engine"):
        demo_command.run(_args("--model", "smollm2", "--checkpoint", str(checkpoint), "--out", str(tmp_path)))
    _only(monkeypatch, "torch", "transformers")
    with pytest.raises(SystemExit, match="vLLM is not importable"):
        demo_command.run(_args("--model", "smollm2", "--checkpoint", str(checkpoint), "--engine", "vllm",
                               "--out", str(tmp_path)))


# ---------------------------------------------------------------- progress and the study's rule
def test_the_progress_line_has_steps_held_out_success_rate_and_eta():
    from botgrpo.real_demo import evaluations_left, progress_text

    assert progress_text(0, 30, [], [], 0.0, 4) == "step 0/30"
    evals = [{"step": 0, "pass_rate": 0.055}, {"step": 10, "pass_rate": 0.0703}]
    line = progress_text(12, 30, [20.0, 22.0], evals, 15.0, 2)
    # 18 steps x 21 s + 2 evaluations x 15 s = 408 s
    assert line == "step 12/30  held-out 5.5% -> 7.0% (step 10)  21.0 s/step  ETA 6:48"
    assert progress_text(1, 30, [5.0], evals[:1], 3.0, 3) == "step 1/30  held-out 5.5%  5.0 s/step  ETA 2:34"
    # evaluations still to come after a step: every eval_every before the end, then the last one
    assert [evaluations_left(s, 30, 10) for s in (0, 9, 10, 19, 20, 29, 30)] == [3, 3, 2, 2, 1, 1, 0]
    assert evaluations_left(0, 3, 0) == 1


def test_the_paired_rule_calls_a_difference_only_when_every_seed_agrees_by_five_points():
    final = {"bot_grpo": {1: 0.60, 2: 0.55, 3: 0.70}, "grpo": {1: 0.50, 2: 0.52, 3: 0.58}, "ws0": {1: 0.65, 2: 0.50}}
    called = paired_verdict(final, "bot_grpo", "grpo", smollm2_rl.MIN_GAP)
    assert called["verdict"] == "bot_grpo > grpo" and called["seeds"] == [1, 2, 3]
    assert called["mean_difference"] == pytest.approx((0.10 + 0.03 + 0.12) / 3)
    mixed = paired_verdict(final, "bot_grpo", "ws0", smollm2_rl.MIN_GAP)  # seeds 1, 2 only: -0.05, +0.05
    assert mixed["verdict"] == "no difference detected at this size" and mixed["seeds"] == [1, 2]
    small = paired_verdict({"a": {1: 0.52, 2: 0.53}, "b": {1: 0.50, 2: 0.50}}, "a", "b", smollm2_rl.MIN_GAP)
    assert small["verdict"] == "no difference detected at this size"  # same sign, mean 2.5 points
    assert paired_verdict({"a": {}, "b": {}}, "a", "b", smollm2_rl.MIN_GAP)["mean_difference"] is None


def test_the_run_writes_the_protocols_prompts_and_config(tmp_path):
    run = smollm2_rl.with_arm(ChatArith(model="m"), "ws0", 2)
    assert (run.method, run.seed, run.local_weight) == ("bot_grpo", 2, 0.0)
    train, held_out = run.write_datasets(tmp_path)
    rows = [json.loads(line) for line in open(train)]
    assert len(rows) == 256 and len([1 for _ in open(held_out)]) == 128
    first = rows[0]["prompt"]
    assert first[0]["role"] == "user" and first[0]["content"].endswith("Put the final answer in \\boxed{}.")
    assert rows[0]["reference"]["answer"].isdigit()
    cfg = run.train_config(tmp_path / "out", train, held_out, steps=7)
    assert cfg.reward.task == "math" and cfg.reward.options == {"extraction": "boxed", "local_weight": 0.0}
    assert (cfg.steps, cfg.rollout.group_size, cfg.rollout.prompts_per_step, cfg.optim.lr, cfg.seed) == (7, 8, 4, 1e-5, 2)
    assert cfg.rollout.sampling.max_new_tokens == 64 and cfg.rollout.sampling.temperature == 0.7
    # another arm, the same prompts
    other = smollm2_rl.with_arm(ChatArith(model="m"), "grpo", 2)
    again, _ = other.write_datasets(tmp_path / "grpo")
    assert open(again).read() == open(train).read()


# ---------------------------------------------------------------- end to end, tiny
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny SmolLM2-shaped Llama with a chat template, saved as a checkpoint directory."""
    from tests.smollm2_tiny import tiny_llama, tiny_tokenizer

    root = tmp_path_factory.mktemp("tiny-smollm2-demo") / "ckpt"
    tokenizer = tiny_tokenizer()
    tiny_llama(tokenizer).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


SMALL = ["--model", "smollm2", "--steps", "2", "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens", "6",
         "--eval-every", "1", "--eval-prompts", "3", "--threads", "1"]


def _run_demo(args, capsys):
    import os

    saved = dict(os.environ)
    try:
        assert demo_command.run(args) == 0
    finally:  # the vLLM engine's launcher and thread variables
        os.environ.clear()
        os.environ.update(saved)
    return capsys.readouterr().out


@pytest.mark.parametrize("engine", ["hf", "vllm"])
def test_the_demo_runs_end_to_end_on_a_tiny_checkpoint(engine, checkpoint, tmp_path, monkeypatch, capsys):
    if engine == "vllm":
        from tests import fake_vllm
        monkeypatch.setitem(sys.modules, "vllm", fake_vllm.install())
    out = _run_demo(_args(*SMALL, "--checkpoint", str(checkpoint), "--engine", engine, "--out", str(tmp_path)), capsys)
    summary = json.loads((tmp_path / "bot_grpo" / "summary.json").read_text())
    assert summary["engine"] == engine and summary["steps"] == 2 and summary["threads"] == 1 and summary["bf16"]
    assert [e["step"] for e in summary["evals"]] == [0, 1, 2]
    assert all(0.0 <= e["pass_rate"] <= 1.0 and e["prompts"] == 3 for e in summary["evals"])
    assert summary["held_out_success"] == [summary["evals"][0]["pass_rate"], summary["evals"][-1]["pass_rate"]]
    assert [r["step"] for r in summary["curve"]] == [1, 2] and summary["mean_step_seconds"] > 0
    assert summary["run"]["extraction"] == "boxed" and summary["run"]["engine"] == engine
    assert (tmp_path / "bot_grpo" / "demo.png").stat().st_size > 10_000
    # the progress a user sees: each step with its rates, the held-out line with s/step and ETA, the table
    assert "step 2/2" in out and "s/step" in out and "ETA" in out and "held-out" in out
    assert "batch success" in out and "held-out evaluation at step 2" in out and "held-out success" in out and "demo.png" in out
    if engine == "vllm":
        from tests import fake_vllm
        assert fake_vllm.LLM.instances[-1].kwargs["dtype"] == "bfloat16"


def test_the_live_status_on_a_terminal_shows_what_runs_now():
    import io

    from rich.console import Console

    from botgrpo.real_demo import SmolLM2DemoSettings, _Live

    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    lines = []
    live = _Live(SmolLM2DemoSettings(steps=2, eval_every=1), console, lines.append)
    seen = []
    evaluate = live.wrap_evaluate(lambda: seen.append(live._status.status) or {"step": live.step, "pass_rate": 0.25})
    with live:
        evaluate()
        live.on_step({"step": 1, "time_step": 4.0, "pass_rate": 0.5, "time_generate": 1.0, "time_train": 3.0})
        assert str(live._status.status).startswith("step 1/2  held-out 25.0%  4.0 s/step  ETA 0:")
        assert str(live._status.status).endswith("(training)")
        evaluate()
    assert [str(s) for s in seen] == ["step 0/2  (held-out evaluation at step 0)",
                                      "step 1/2  held-out 25.0%  4.0 s/step  ETA 0:04  (held-out evaluation at step 1)"]
    assert lines[1] == "step 1/2  held-out 25.0%  4.0 s/step  ETA 0:04  |  batch success 0.50, generate 1.0 s, update 3.0 s"
