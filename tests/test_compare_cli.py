"""``botgrpo compare`` end to end through the real CLI: a tiny protocol (2 arms, 2 study seeds, 2
pilot seeds, 6 steps of the tiny policy, the in-process reward server ``botgrpo train`` starts),
its pilots before the lock, the power estimate, the lock, a study killed mid-cell, its progress,
and the study run again (the finished cell is not rerun, the killed one resumes from its
checkpoint), the report, and a changed protocol refused."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from botgrpo.compare import cells as c
from botgrpo.trainer.run.checkpoint import latest

ROOT = Path(__file__).resolve().parents[1]

PROTOCOL = {
    "name": "tiny",
    "question": "does the local signal change anything on an untrained tiny policy?",
    "setup": "tests.compare_setup:tiny",
    "base": {"values": {"reward": {"task": "math"},
                        "rollout": {"group_size": 4, "prompts_per_step": 4, "sampling": {"max_new_tokens": 48}},
                        "optim": {"lr": 0.001}, "log": {"tensorboard": False, "plot": False}}},
    "arms": {"bot_grpo": {}, "ws0": {"reward": {"options": {"local_weight": 0.0}}}},
    "seeds": {"study": [0, 1], "pilot": [100, 101]},
    "steps": 6,
    "evaluation": {"every": 2, "prompts": 4},
    "endpoint": {"primary": "auc"},
    "primary": {"a": "bot_grpo", "b": "ws0"},
    "power": {"target": 0.05},
}


def launches(runs: Path, role: str) -> list[dict]:
    path = runs / role / "launches.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_a_tiny_study_runs_end_to_end_and_resumes_after_a_kill(tmp_path):
    protocol, runs = tmp_path / "tiny.yaml", tmp_path / "runs"
    protocol.write_text(yaml.safe_dump(PROTOCOL))
    results = tmp_path / "tiny"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "botgrpo.cli", "compare", str(protocol), "--runs", str(runs), "--threads", "1"]

    def compare(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*argv, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)

    # study cells never run without the power estimate and the lock
    done = compare()
    assert done.returncode == 2 and "no power estimate" in done.stderr and not launches(runs, "study")
    # pilots run before the lock; progress comes as lines (stdout is no terminal)
    done = compare("--pilot", "--jobs", "2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "bot_grpo-s100: eval at step 2/6" in done.stdout and "ETA" in done.stdout
    assert sorted(p.name for p in (results / "pilots").iterdir()) == [
        "bot_grpo-s100.json", "bot_grpo-s101.json", "ws0-s100.json", "ws0-s101.json"]
    assert not (results / "lock.json").exists()
    done = compare("--power")
    assert done.returncode == 0 and "pilot seeds [100, 101]" in done.stdout, done.stderr
    done = compare("--lock")
    assert done.returncode == 0 and (results / "lock.json").exists(), done.stderr

    # the study, one cell at a time, checkpoints every 2 steps; killed (the whole process group,
    # SIGKILL: a crash) once the first cell is finished and the second has saved a checkpoint
    study = subprocess.Popen([*argv, "--jobs", "1", "--save-every", "2"], cwd=ROOT, env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    second = runs / "study" / "ws0-s0"
    deadline = time.monotonic() + 600
    try:
        while not ((results / "cells" / "bot_grpo-s0.json").exists() and latest(second) is not None):
            assert study.poll() is None and time.monotonic() < deadline, "the study ended before it could be killed"
            time.sleep(0.1)
    finally:
        os.killpg(study.pid, signal.SIGKILL)
        study.wait()
    assert not (results / "cells" / "ws0-s0.json").exists()
    # the progress, blind: the killed cell is named with the checkpoint it resumes from
    done = compare("--status", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "study tiny: 1 of 4 cells finished; every arm on 0 of 2 seeds" in done.stdout
    assert re.search(r"under way or stopped: ws0-s0 at step \d of 6, resumes from checkpoint-[24]", done.stdout)
    assert "pass" not in done.stdout and "next: ws0-s0, bot_grpo-s1, ws0-s1" in done.stdout
    done = compare("--jobs", "2", "--save-every", "2", "--until", "2h")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the deadline is far: every cell fits, timed by the pilots (each ran in one attempt)
    assert re.search(r"until \d\d:\d\d \(7\d{3} s from now\): a cell of 6 steps is expected to take \d+ s", done.stdout)
    assert "not started" not in done.stdout
    # a study cell's progress lines name its evaluations, never their values (the pilots' do)
    cell_lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert any("ws0-s1: eval at step 6/6 |" in line for line in cell_lines)   # its last, read once it ended
    assert not [line for line in cell_lines if "pass" in line]

    started = launches(runs, "study")
    per_cell = {name: [e for e in started if e["cell"] == name] for name in {e["cell"] for e in started}}
    assert len(per_cell["bot_grpo-s0"]) == 1                     # finished before the kill: never rerun
    assert [e["attempt"] for e in per_cell["ws0-s0"]] == [1, 2]  # killed: started again, from its checkpoint
    assert per_cell["ws0-s0"][1]["resumed_from"].startswith("checkpoint-")
    assert len(per_cell["bot_grpo-s1"]) == len(per_cell["ws0-s1"]) == 1 and len(started) == 5
    # a finished cell keeps its record and its log, not its checkpoints
    assert not list((runs / "study").glob("*/checkpoint-*")) and (second / "train.log").exists()
    record = json.loads((results / "cells" / "ws0-s0.json").read_text())
    assert record["attempts"] == 2 and [e["step"] for e in record["evals"]] == [0, 2, 4, 6]
    assert record["protocol"] == json.loads((results / "lock.json").read_text())["protocol_hash"]
    assert [m["step"] for m in record["metrics"]] == [1, 2, 3, 4, 5, 6] and "train_config" in record
    assert record["train_config"]["reward"]["options"]["local_weight"] == 0.0 and record["train_config"]["seed"] == 0
    # the tiny policy is identified by its built-from.json; the record also names the build's bytes
    model = Path(record["train_config"]["model"])
    assert record["start"]["model"] == c.fingerprint(model) != c.byte_print(model) == record["built"]["model"]
    verdict = json.loads((results / "verdict.json").read_text())
    assert verdict["complete"] and verdict["cells"] == {"finished": 4, "total": 4}
    assert "### primary: bot_grpo vs ws0" in (results / "report.md").read_text()
    assert (results / "differences.png").exists() and (results / "curves.png").exists()

    # a changed protocol: refused, with what changed; nothing runs
    protocol.write_text(yaml.safe_dump({**PROTOCOL, "steps": 8}))
    done = compare()
    assert done.returncode == 2 and "steps: 6 -> 8" in done.stderr and len(launches(runs, "study")) == 5
