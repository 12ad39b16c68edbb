"""Progress without a terminal: lines as the steps happen (rate, ETA), third-party bars off."""
import io
import os
import subprocess
import sys
import time

import pytest

from botgrpo.trainer.run.progress import THIRD_PARTY, Lines, bar, phase
from tests.tiny_setup import tiny_math_setup


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_lines_first_step_then_at_most_every_interval_and_the_last():
    out, clock = io.StringIO(), Clock()
    lines = Lines("train", 10, out, every=5.0, now=clock)
    for step in range(1, 11):
        clock.t += 2.0  # 2 s a step: a line on step 1, then every 3rd step (>= 5 s), and the last
        lines.update(step, f"reward {step}")
    shown = out.getvalue().splitlines()
    assert [line.split("train ")[1].split("/")[0] for line in shown] == ["1", "4", "7", "10"]
    assert "reward 4" in shown[1] and "2 s/step" in shown[1] and "ETA 0:00:12" in shown[1]
    assert shown[-1].endswith("ETA 0:00:00")


def test_bar_is_lines_off_a_terminal_and_nothing_when_disabled():
    out = io.StringIO()
    with bar("eval", 3, stream=out) as update:
        update(1)
    assert out.getvalue().startswith("[") and "eval 1/3 (33%)" in out.getvalue()
    quiet = io.StringIO()
    with bar("eval", 3, enabled=False, stream=quiet) as update:
        update(1)
    assert quiet.getvalue() == ""


def test_phase_says_it_is_still_running():
    out = io.StringIO()
    with phase("eval: generating", stream=out, every=0.05):
        time.sleep(0.3)
    text = out.getvalue()
    assert "eval: generating: started" in text and "running, 0:00:00" in text and "done in" in text


def _bars_enabled(environ: dict) -> str:
    code = ("from botgrpo.trainer.run.progress import quiet_third_party; quiet_third_party(); "
            "from transformers.utils import logging; print(logging.is_progress_bar_enabled())")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_") and k != THIRD_PARTY}
    return subprocess.run([sys.executable, "-c", code], env={**env, **environ}, capture_output=True, text=True,
                          check=True, timeout=300).stdout.strip()


def test_third_party_bars_are_off_unless_asked_for():
    assert _bars_enabled({}) == "False"
    assert _bars_enabled({THIRD_PARTY: "1"}) == "True"


@pytest.mark.slow
def test_train_piped_prints_steps_while_it_runs(tmp_path):
    """``botgrpo train | tee log``: each step's line arrives while training is still going, not
    in one flush at exit (no PYTHONUNBUFFERED: the lines are flushed by the progress module)."""
    paths = tiny_math_setup(tmp_path)
    argv = [sys.executable, "-m", "botgrpo.cli", "train", "--model", paths["model"], "--dataset", paths["dataset"],
            "--task", "math", "--output-dir", str(tmp_path / "run"), "--steps", "4", "--group-size", "4",
            "--prompts-per-step", "2", "--set", "rollout.sampling.max_new_tokens=16", "--set", "log.tensorboard=false",
            "--set", "log.plot=false", "--set", "eval.every=2", "--set", "eval.prompts=4",
            "--set", f"eval.dataset={paths['dataset']}"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", THIRD_PARTY, "BOTGRPO_TRAIN_ARGS")}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []  # (line, whether the process was still running when it arrived)
    try:
        for line in process.stdout:
            seen.append((line.rstrip("\n"), process.poll() is None))
    finally:
        process.wait(timeout=600)
    text = "\n".join(line for line, _ in seen)
    assert process.returncode == 0, text
    steps = [(line, running) for line, running in seen if " train " in line and "/4 (" in line]
    assert steps and steps[0][0].split(" train ")[1].startswith("1/4"), text
    assert "ETA" in steps[0][0] and ("s/step" in steps[0][0] or "steps/s" in steps[0][0])
    assert steps[0][1], "the first step's line came only after the process had ended"
    later = [line for line, _ in seen[seen.index(steps[0]) + 1:]]
    assert any(line.startswith("done:") for line in later), "lines after step 1 (the run went on after it)"
    assert any("4/4 (100%)" in line for line, _ in steps), text
    assert "Loading weights" not in text and "Writing model shards" not in text
    # the evaluations (steps 0, 2 and the end) say what they do while the run goes on
    for step in (0, 2, 4):
        assert f"eval at step {step}: sampling 4 prompts x 1: started" in text, text
        assert any(f"eval at step {step}: scoring 4/4 (100%)" in line and "prompts/s" in line or
                   f"eval at step {step}: scoring 4/4 (100%)" in line and "s/prompt" in line for line, _ in seen), text
    first_eval = next(i for i, (line, _) in enumerate(seen) if "eval at step 0: sampling" in line)
    assert seen[first_eval][1], "the first eval's line came only after the process had ended"


def test_a_tracker_shows_a_phase_and_counted_items_as_lines():
    from botgrpo.trainer.evaluate import collect
    from botgrpo.trainer.run.progress import tracker

    class Streamed:  # a pending batch that hands out its groups in two deliveries
        def __init__(self):
            self.deliveries = [[0, 1], [2], []]

        def next_groups(self):
            return self.deliveries.pop(0)

        def result(self):
            return "scores"

    out = io.StringIO()
    track = tracker(stream=out)
    with track("eval: sampling", None):
        pass
    with track("eval: scoring", 3) as update:
        assert collect(Streamed(), update) == "scores"
    text = out.getvalue()
    assert "eval: sampling: started" in text and "eval: sampling: done in" in text
    assert "eval: scoring 2/3 (67%)" in text and "eval: scoring 3/3 (100%)" in text and "ETA" in text, text


def test_compare_prints_step_lines_between_events_off_a_terminal():
    from types import SimpleNamespace

    from botgrpo.compare.run import LineProgress, Totals
    job = SimpleNamespace(cell=SimpleNamespace(name="a-s0"), steps=4)
    totals = Totals(cells=1, done=0, steps_total=4, steps_done=2, started=time.perf_counter() - 4)
    out = io.StringIO()
    LineProgress(out, every=0.0).stepped(job, 2, totals)
    assert "a-s0: step 2/4 | cells 0/1 done" in out.getvalue() and "ETA 0:00:04" in out.getvalue()
    quiet = io.StringIO()
    LineProgress(quiet, every=3600.0).stepped(job, 2, totals)
    assert quiet.getvalue() == ""
