"""``botgrpo compare``: the protocol file, the lock, the cells and their records, the runner, the
power estimate from pilot records and the report, on hand-made cases (no training here: the
end-to-end run through the real CLI is tests/test_compare_cli.py)."""
from __future__ import annotations

import io
import json
import math
import re
import sys
from pathlib import Path

import pytest
import yaml

from botgrpo.compare import cells as c
from botgrpo.compare import keys, report, study
from botgrpo.compare import lock as locking
from botgrpo.compare.protocol import canonical, differences, digest, load
from botgrpo.compare.run import Deadline, Job, LineProgress, Totals, run_jobs
from botgrpo.services.settings import SettingsError

PROTOCOL = {
    "name": "t",
    "question": "is a faster than b?",
    "base": {"values": {"model": "m", "data": {"dataset": "train.jsonl"}, "eval": {"dataset": "eval.jsonl"},
                        "reward": {"task": "math", "options": {"extraction": "boxed"}}}},
    "arms": {"a": {}, "b": {"reward.options.local_weight": 0.0}, "c": {"reward": {"options": {"local": "oracle"}}},
             "d": {"algorithm.method": "grpo"}},
    "seeds": {"study": "0-5", "pilot": [100, 101, 102]},
    "steps": 10,
    "evaluation": {"every": 5, "prompts": 8},
    "endpoint": {"primary": "steps_to_threshold", "threshold": 0.5},
    "primary": {"a": "a", "b": "b"},
    "gate": {"a": "c", "b": "b", "alpha": 0.05},
    "exploratory": [{"a": "d", "b": "b"}],
    "power": {"target": 1.2},
}


def with_changes(data: dict, changes: dict) -> dict:
    data = json.loads(json.dumps(data))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = data
        for name in parents:
            node = node.setdefault(name, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return data


def write(tmp_path: Path, changes: dict | None = None, name: str = "study.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(with_changes(PROTOCOL, changes or {})))
    return path


# --------------------------------------------------------------------------- the protocol file
@pytest.mark.parametrize("changes, message", [
    ({"seeds.pilot": [5, 100]}, "seeds: study and pilot seeds overlap ([5])"),
    ({"seeds.study": "5-3"}, "seeds.study: a seed range is written 'FIRST-LAST'"),
    ({"seeds.study": list(range(45))}, "seeds.study: List should have at most 44 items"),
    ({"primary.b": "zz"}, "primary: no arm 'zz' (arms: a, b, c, d)"),
    ({"exploratory": [{"a": "b", "b": "a"}]}, "exploratory[0]: b vs a is already primary: one role per pair"),
    ({"arms.b": {"seed": 3}}, "arms: arm 'b' sets 'seed', which is the protocol's (seeds)"),
    ({"arms.b": {"eval.dataset": "other.jsonl"}}, "arm 'b' sets 'eval.dataset', which is the shared held-out set"),
    ({"arms.b/x": {}}, "arm name 'b/x'"),
    ({"base.values.steps": 20}, "base: values sets 'steps', which is the protocol's (steps)"),
    ({"base.values.eval": {"every": 2}}, "which is the protocol's (evaluation.every)"),
    ({"endpoint.threshold": None}, "endpoint.threshold: steps_to_threshold needs a threshold"),
    ({"power.target": 0.05}, "power.target: for steps_to_threshold a speed ratio above 1"),
    ({"endpoint.censor_at": 10}, "endpoint.censor_at (10.0) must be past the budget (10 steps)"),
    ({"alpah": 0.01}, "alpah: Extra inputs are not permitted"),
    ({"evaluation.every": 0}, "evaluation.every: Input should be greater than or equal to 1"),
    ({"setup": "not a function"}, "setup.function: String should match pattern"),
])
def test_a_bad_protocol_is_refused_with_the_field_named(tmp_path, changes, message):
    with pytest.raises(SettingsError) as caught:
        load(write(tmp_path, changes))
    assert message in str(caught.value) and str(tmp_path / "study.yaml") in str(caught.value)


def test_a_missing_base_file_is_named(tmp_path):
    with pytest.raises(SettingsError, match="base.config: no file"):
        load(write(tmp_path, {"base.config": "nope.yaml"}))


def test_the_setup_hook_runs_in_a_process_of_its_own_and_is_checked(tmp_path, monkeypatch):
    """What a setup loads (a warm start's SFT) must not stay in the process that runs the study."""
    import os

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)      # `tests.compare_setup`, as `python -m` finds it
    setup = lambda function, **options: load(write(tmp_path, {"setup": {"function": function, "options": options}}))
    values = c.call_setup(setup("tests.compare_setup:where"), tmp_path / "setup")
    assert values["setup_pid"] != os.getpid()
    assert values["root"] == str(tmp_path / "setup")              # a Path comes back as a string
    with pytest.raises(SettingsError, match="returned list, not a mapping"):
        c.call_setup(setup("tests.compare_setup:answer", value=[1]), tmp_path / "s")
    with pytest.raises(SettingsError, match="'tests.compare_setup:nowhere'.*has no attribute 'nowhere'"):
        c.call_setup(setup("tests.compare_setup:nowhere"), tmp_path / "s")


def test_the_hash_covers_every_value_and_the_shared_start_but_not_formatting(tmp_path):
    (tmp_path / "base.yaml").write_text("optim: {lr: 0.001}\nrollout: {group_size: 4}\n")
    first = load(write(tmp_path, {"base.config": "base.yaml"}))
    # the same protocol, keys in another order, a comment, flow style: the same hash
    reordered = dict(reversed(list(with_changes(PROTOCOL, {"base.config": "base.yaml"}).items())))
    (tmp_path / "other.yaml").write_text("# a comment\n" + yaml.safe_dump(reordered, default_flow_style=True))
    assert digest(canonical(load(tmp_path / "other.yaml"))) == digest(canonical(first))
    # the results folder is a location, not the study
    assert digest(canonical(load(write(tmp_path, {"base.config": "base.yaml", "results": "elsewhere"}, "r.yaml")))) \
        == digest(canonical(first))
    # a nested override and its dotted form are the same override
    dotted = load(write(tmp_path, {"base.config": "base.yaml", "arms.c": {"reward.options.local": "oracle"}}, "d.yaml"))
    assert digest(canonical(dotted)) == digest(canonical(first))
    # any value, and the content of the base file, change it, and the change is named
    changed = load(write(tmp_path, {"base.config": "base.yaml", "steps": 12}, "s.yaml"))
    assert differences(canonical(first), canonical(changed)) == ["steps: 10 -> 12"]
    before = canonical(first)
    (tmp_path / "base.yaml").write_text("optim: {lr: 0.002}\nrollout: {group_size: 4}\n")
    assert differences(before, canonical(load(tmp_path / "study.yaml"))) == ["base.optim.lr: 0.001 -> 0.002"]


# --------------------------------------------------------------------------- cells
def test_the_plan_runs_the_required_arms_seed_by_seed_before_the_others(tmp_path):
    protocol = load(write(tmp_path))
    cells = c.plan(protocol, "study")
    # the gate's and the primary's arms (c, b, a) on every seed first, then the exploratory arm d
    assert [(x.arm, x.seed) for x in cells[:6]] == [("c", 0), ("b", 0), ("a", 0), ("c", 1), ("b", 1), ("a", 1)]
    assert [x.arm for x in cells[18:]] == ["d"] * 6 and len(cells) == 24
    assert [(x.arm, x.seed) for x in c.plan(protocol, "pilot")][:3] == [("a", 100), ("b", 100), ("c", 100)]
    assert len(c.plan(protocol, "pilot")) == 9
    assert {x.arm for x in c.plan(protocol, "study", ["d"])} == {"d"}
    assert {x.arm for x in c.plan(protocol, "pilot", ["d"])} == {"d"}
    with pytest.raises(SettingsError, match="--arms: no arm"):
        c.plan(protocol, "study", ["zz"])


def test_a_cells_config_is_the_shared_start_with_only_the_instruments_keys_set(tmp_path):
    protocol = load(write(tmp_path))
    layout = study.layout_for(protocol, tmp_path / "runs")
    start = c.shared_start(protocol, layout)
    cell = c.Cell("b", 3, "study")
    values = c.cell_values(protocol, start, cell, tmp_path / "w", resume=True, save_every=2)
    assert values == {**start, "seed": 3, "steps": 10, "eval": {**start["eval"], "every": 5, "prompts": 8},
                      "output_dir": str(tmp_path / "w"), "log": {"progress": False},
                      "checkpoint": {"resume": True, "save_every": 2}}
    assert c.overrides(protocol, "b") == ["reward.options.local_weight=0.0"]
    assert c.overrides(protocol, "c") == ['reward.options.local="oracle"']   # nested: merged key by key
    argv = c.command(tmp_path / "w" / "config.yaml", c.overrides(protocol, "c"))
    assert argv[1:5] == ["-m", "botgrpo.cli", "train", "--config"] and argv[-2:] == ["--set", 'reward.options.local="oracle"']
    # every arm's config is what `botgrpo train` accepts; a bad override is named with its arm
    c.validate(protocol, start, tmp_path / "scratch")
    bad = load(write(tmp_path, {"arms.d": {"optim.lr": -1}}, "bad.yaml"))
    with pytest.raises(SettingsError, match=r"(?s)arm 'd': invalid training config.*lr"):
        c.validate(bad, start, tmp_path / "scratch")


def test_the_trainer_keys_are_named_in_one_place(tmp_path, monkeypatch):
    """When the trainer's config changes shape, changing keys.TRAINER_KEYS is enough."""
    monkeypatch.setitem(keys.TRAINER_KEYS, "eval_every", "evaluation.interval")
    monkeypatch.setitem(keys.TRAINER_KEYS, "progress", "show.progress")
    protocol = load(write(tmp_path))
    values = c.cell_values(protocol, {"model": "m"}, c.Cell("a", 0, "study"), tmp_path)
    assert values["evaluation"] == {"interval": 5} and values["show"] == {"progress": False}
    assert "every" not in values["eval"] and "progress" not in values.get("log", {})
    with pytest.raises(SettingsError, match="arm 'b' sets 'show.progress'"):
        load(write(tmp_path, {"arms.b": {"show": {"progress": True}}}, "x.yaml"))


def test_a_cells_identity_changes_with_what_it_trains_and_nothing_else(tmp_path):
    protocol = load(write(tmp_path))
    start = {"model": "m", "eval": {"dataset": "e"}}
    cell = c.Cell("b", 0, "pilot")
    same = c.identity(protocol, {"model": "abc"}, start, cell)
    assert c.identity(protocol, {"model": "abc"}, dict(start), cell) == same
    assert c.identity(protocol, {"model": "abd"}, start, cell) != same           # another warm start
    assert c.identity(protocol, {"model": "abc"}, start, c.Cell("b", 1, "pilot")) != same
    longer = load(write(tmp_path, {"steps": 20}, "longer.yaml"))
    assert c.identity(longer, {"model": "abc"}, start, cell) != same


def test_records_keep_the_last_line_of_each_step_and_skip_a_torn_line(tmp_path):
    path = tmp_path / "evals.jsonl"
    path.write_text('{"step": 0, "pass_rate": 0.1}\n{"step": 5, "pass_rate": 0.2}\n'
                    '{"step": 5, "pass_rate": 0.3}\n{"step": 10, "pass_')   # resumed at step 0, then killed
    assert c.read_jsonl(path) == [{"step": 0, "pass_rate": 0.1}, {"step": 5, "pass_rate": 0.3}]
    assert c.finished(c.read_jsonl(path), 5) and not c.finished(c.read_jsonl(path), 10)


def test_the_fingerprint_tells_starts_apart(tmp_path):
    """Two folders that differ in one byte of one file differ; a copy is the same; a file has one too."""
    for name in ("a", "b", "c"):
        (tmp_path / name / "tok").mkdir(parents=True)
        (tmp_path / name / "model.safetensors").write_bytes(b"\x00" * 64)
        (tmp_path / name / "tok" / "vocab.json").write_text("{}")
    (tmp_path / "c" / "model.safetensors").write_bytes(b"\x00" * 63 + b"\x01")
    assert c.fingerprint(tmp_path / "a") == c.fingerprint(tmp_path / "b") != c.fingerprint(tmp_path / "c")
    assert c.fingerprint(tmp_path / "a" / "tok" / "vocab.json") == c.fingerprint(tmp_path / "b" / "tok" / "vocab.json")


def test_a_converted_start_keeps_its_print_when_converted_again(tmp_path):
    """`make smollm2` writes its provenance record (source path, timings) beside the weights: a
    second conversion differs there and nowhere else, and must not orphan a study's records. The
    same name anywhere below the top is a file like any other."""
    for name in ("first", "again"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "model.safetensors").write_bytes(b"\x00" * 64)
    (tmp_path / "first" / "conversion.json").write_text('{"seconds": 23.3}')
    (tmp_path / "again" / "conversion.json").write_text('{"seconds": 41.0}')
    assert c.fingerprint(tmp_path / "first") == c.fingerprint(tmp_path / "again")
    (tmp_path / "again" / "sub" / "conversion.json").write_text("{}")
    assert c.fingerprint(tmp_path / "first") != c.fingerprint(tmp_path / "again")


def test_a_built_start_is_what_it_was_built_from_not_its_last_bits(tmp_path):
    """A warm start trained again on another CPU differs in its weights' last bits: with its
    built-from.json the print is that file's, so a study resumes on the rebuild; another recipe is
    another start. The bytes' own print still tells the two builds apart (a record's ``built``)."""
    for name, weights in (("here", b"\x00" * 64), ("there", b"\x00" * 63 + b"\x01")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_bytes(weights)
        (tmp_path / name / c.BUILT_FROM).write_text('{"recipe": {"steps": 48}}')
    assert c.fingerprint(tmp_path / "here") == c.fingerprint(tmp_path / "there")
    assert c.byte_print(tmp_path / "here") != c.byte_print(tmp_path / "there")
    before = c.byte_print(tmp_path / "here")
    (tmp_path / "here" / c.BUILT_FROM).unlink()
    assert c.byte_print(tmp_path / "here") == before   # the record of how it was made is not its bytes
    (tmp_path / "here" / c.BUILT_FROM).write_text('{"recipe": {"steps": 48}}')
    start = {"model": str(tmp_path / "there"), "data": {"dataset": str(tmp_path / "there" / "model.safetensors")}}
    assert c.built_prints(start) == {"model": c.byte_print(tmp_path / "there")}
    (tmp_path / "there" / c.BUILT_FROM).write_text('{"recipe": {"steps": 49}}')
    assert c.fingerprint(tmp_path / "here") != c.fingerprint(tmp_path / "there")


def test_the_report_names_the_builds_of_a_recipe_start_and_the_seeds_that_straddle_two():
    here, there = {"model": "998836e22ae80c8a"}, {"model": "7f7df9f7176c92fe"}
    records = {("ws0", 1): {"built": here}, ("oracle", 1): {"built": here}, ("ws0", 2): {"built": there},
               ("oracle", 2): {"built": here}, ("ws0", 3): {"built": there}}
    assert report.build_lines(records) == [
        "## Builds of the start", "",
        "The start is identified by what it was trained from and how (its `built-from.json`); its weights' "
        "bytes differ with the CPU that trained them. The cells trained from these builds:", "",
        "- model `998836e22ae80c8a`: 3 cells", "- model `7f7df9f7176c92fe`: 2 cells", "",
        "Seeds whose arms trained from different builds: 2.", ""]
    assert report.build_lines({("ws0", 1): {"evals": []}}) == []


# --------------------------------------------------------------------------- the lock
def test_the_lock_refuses_a_changed_protocol_and_says_what_changed(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights").write_bytes(b"1234")
    path = write(tmp_path, {"base.values.model": str(tmp_path / "model")})
    protocol = load(path)
    layout = study.layout_for(protocol, tmp_path / "runs")
    with pytest.raises(SettingsError, match="no power estimate"):
        study.lock(protocol, layout)
    held = study.lock(protocol, layout, require_power=False)
    assert (protocol.results_dir / "lock.json").exists() and held.protocol_hash == digest(canonical(protocol))
    assert held.start == {"model": c.fingerprint(tmp_path / "model")}
    assert study.lock(load(path), layout).protocol_hash == held.protocol_hash   # the same protocol: the same lock
    # a changed value is refused, named, with what to do instead; the study runs no cell
    path.write_text(path.read_text().replace("steps: 10", "steps: 12"))
    with pytest.raises(locking.ProtocolChanged) as caught:
        study.study(load(path), layout, study.Options(), io.StringIO())
    assert "steps: 10 -> 12" in str(caught.value) and "new one another name" in str(caught.value)
    assert not layout.launches("study").exists()
    with pytest.raises(locking.ProtocolChanged, match="steps: 10 -> 12"):
        study.report(load(path), layout, io.StringIO())
    # so is another warm start under an unchanged protocol
    path.write_text(path.read_text().replace("steps: 12", "steps: 10"))
    (tmp_path / "model" / "weights").write_bytes(b"1235")
    with pytest.raises(locking.ProtocolChanged, match="shared start model: fingerprint"):
        study.lock(load(path), layout)


def test_study_cells_need_the_lock(tmp_path):
    with pytest.raises(locking.ProtocolChanged, match="no lock at"):
        locking.check(load(write(tmp_path)), None)


# --------------------------------------------------------------------------- the runner
FAKE_TRAINER = """
import json, sys, time, pathlib
out, code = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for step in range(1, 5):
    with (out / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": step}) + "\\n")
    if step % 2 == 0:
        with (out / "evals.jsonl").open("a") as f:
            f.write(json.dumps({"step": step, "pass_rate": step / 10}) + "\\n")
    time.sleep(0.05)
print("boom" if code else "fine")
sys.exit(code)
"""


def test_the_runner_runs_n_at_a_time_reports_each_evaluation_and_survives_a_failed_cell(tmp_path):
    script = tmp_path / "fake.py"
    script.write_text(FAKE_TRAINER)
    finished = []

    def finish(job, attempts, seconds):
        finished.append((job.cell.name, attempts))
        return "ok"

    jobs = [Job(c.Cell(arm, 0, "study"), [sys.executable, str(script), str(tmp_path / arm), code],
                tmp_path / arm, 4, finish=finish, blind=arm == "w")
            for arm, code in (("x", "0"), ("y", "3"), ("z", "0"), ("w", "0"))]
    out = io.StringIO()
    totals = Totals(cells=4, done=0, steps_total=16, steps_done=0, started=0.0)
    import time
    totals.started = time.perf_counter()
    outcome = run_jobs(jobs, 2, totals, LineProgress(out), tmp_path / "launches.jsonl", poll=0.05)
    done, failed = outcome.finished, outcome.failed
    text = out.getvalue()
    assert {j.cell.name for j in done} == {"x-s0", "z-s0", "w-s0"}
    assert sorted(finished) == [("w-s0", 1), ("x-s0", 1), ("z-s0", 1)]
    assert [j.cell.name for j, _ in failed] == ["y-s0"] and "exit code 3" in failed[0][1] and "boom" in failed[0][1]
    assert "x-s0: eval at step 2/4, pass_rate 0.200" in text and "y-s0: FAILED (exit code 3)" in text
    # a blind cell's evaluations are named, never their values
    assert "w-s0: eval at step 2/4 |" in text and "w-s0: eval at step 4/4 |" in text and not any("w-s0" in line and "pass_rate" in line
                                                           for line in text.splitlines())
    assert "cells 3/4 done, 0 running, 1 failed" in text and "ETA" in text and "steps/s" in text
    launches = [json.loads(line) for line in (tmp_path / "launches.jsonl").read_text().splitlines()]
    assert [entry["cell"] for entry in launches] == ["x-s0", "y-s0", "z-s0", "w-s0"]
    assert all(entry["attempt"] == 1 for entry in launches)


def test_on_a_terminal_the_runner_draws_bars(tmp_path):
    from rich.console import Console

    from botgrpo.compare.run import RichProgress

    script = tmp_path / "fake.py"
    script.write_text(FAKE_TRAINER)
    screen = io.StringIO()
    jobs = [Job(c.Cell(arm, 0, "study"), [sys.executable, str(script), str(tmp_path / arm), "0"], tmp_path / arm, 4)
            for arm in ("x", "y")]
    progress = RichProgress(Console(file=screen, force_terminal=True, width=120))
    outcome = run_jobs(jobs, 1, Totals(2, 0, 8, 0, 0.0), progress, tmp_path / "launches.jsonl", poll=0.05)
    done, failed = outcome.finished, outcome.failed
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())   # the terminal's colours
    assert len(done) == 2 and not failed
    assert "all cells" in text and "x-s0: eval at step 4/4, pass_rate 0.400" in text and "y-s0: done in" in text
    # a second run of the same cells counts their attempts on
    run_jobs(jobs[:1], 1, Totals(1, 0, 4, 0, 0.0), LineProgress(io.StringIO()), tmp_path / "launches.jsonl", poll=0.05)
    assert json.loads((tmp_path / "launches.jsonl").read_text().splitlines()[-1])["attempt"] == 2


def test_a_finished_cells_checkpoints_are_removed_and_nothing_else(tmp_path):
    for step in (5, 10):
        (tmp_path / f"checkpoint-{step}" / "model").mkdir(parents=True)
        (tmp_path / f"checkpoint-{step}" / "model" / "weights.bin").write_bytes(b"w" * 1000)
        (tmp_path / f"checkpoint-{step}" / "state.pt").write_bytes(b"s" * 24)
    (tmp_path / "latest").symlink_to(tmp_path / "checkpoint-10")
    for name in ("evals.jsonl", "train.log", "checkpoint-notes.txt"):
        (tmp_path / name).write_text("kept\n")
    assert c.drop_checkpoints(tmp_path) == 2 * 1024
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-notes.txt", "evals.jsonl", "train.log"]
    assert c.drop_checkpoints(tmp_path) == 0


def test_until_reads_a_clock_time_or_a_duration():
    from datetime import datetime

    now = datetime(2026, 12, 6, 6, 30, 15)
    at = lambda text: datetime.fromtimestamp(Deadline.parse(text, now).at)
    assert at("08:40") == datetime(2026, 12, 6, 8, 40)
    assert at("6:00") == datetime(2026, 12, 7, 6, 0)           # passed today: tomorrow's
    assert at("06:30") == datetime(2026, 12, 7, 6, 30)          # 15 s ago: tomorrow's
    assert at("90m") == at("1h30m") == datetime(2026, 12, 6, 8, 0, 15)
    assert at("2h") == datetime(2026, 12, 6, 8, 30, 15) and at("45s") == datetime(2026, 12, 6, 6, 31)
    for bad in ("", "25:00", "8:5", "1.5h", "soon", "m"):
        with pytest.raises(ValueError, match="HH:MM or a duration"):
            Deadline.parse(bad, now)


def test_a_deadline_expects_the_slowest_rate_for_the_steps_a_cell_has_left():
    job = lambda steps, start: Job(c.Cell("a", 0, "study"), [], Path("."), steps, start)
    unknown = Deadline(at=1000.0)
    assert unknown.expected(job(20, 0)) is None and unknown.fits(job(20, 0), 999.0) and not unknown.fits(job(20, 0), 1000.0)
    deadline = Deadline(at=1000.0, per_step=10.0)
    assert deadline.expected(job(20, 0)) == 200.0 and deadline.expected(job(20, 15)) == 50.0
    assert deadline.fits(job(20, 0), 800.0) and not deadline.fits(job(20, 0), 800.5)
    assert deadline.fits(job(20, 15), 950.0)                       # resuming: only its last 5 steps
    deadline.observe(job(20, 10), 150.0)                           # 15 s a step: slower, kept
    assert deadline.per_step == 15.0
    deadline.observe(job(20, 0), 100.0)                            # 5 s a step: faster, ignored
    assert deadline.per_step == 15.0
    assert "until " in deadline.describe(700.0, 20) and "300 s from now" in deadline.describe(700.0, 20)
    assert "expected to take 300 s" in deadline.describe(700.0, 20)


def test_the_runner_starts_no_cell_past_the_deadline_and_stops_what_runs_at_it(tmp_path):
    import time

    script = tmp_path / "fake.py"
    script.write_text(FAKE_TRAINER)
    cell = lambda arm, steps=4, start=0: Job(c.Cell(arm, 0, "study"), [sys.executable, str(script),
                                                                        str(tmp_path / arm), "0"],
                                             tmp_path / arm, steps, start)
    out = io.StringIO()
    # 1000 s a step: a fresh cell (4 steps) does not fit in the hour left, one resuming at step 3 does
    deadline = Deadline(time.time() + 3600, per_step=1000.0)
    outcome = run_jobs([cell("fresh"), cell("resumed", start=3)], 2, Totals(2, 0, 8, 0, time.perf_counter()),
                       LineProgress(out), tmp_path / "launches.jsonl", poll=0.05, deadline=deadline)
    assert [j.cell.name for j in outcome.left] == ["fresh-s0"] and [j.cell.name for j in outcome.finished] == ["resumed-s0"]
    assert re.search(r"fresh-s0: not started, expected to take 4000 s with 3\d{3} s left before the deadline", out.getvalue())
    assert not (tmp_path / "fresh" / "train.log").exists()

    # unknown rate: a cell starts; still running at the deadline, it is stopped and left, and so is the next
    slow = Job(c.Cell("slow", 0, "study"), [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "slow", 4)
    out = io.StringIO()
    began = time.perf_counter()
    outcome = run_jobs([slow, cell("next")], 1, Totals(2, 0, 8, 0, began), LineProgress(out),
                       tmp_path / "launches.jsonl", poll=0.05, deadline=Deadline(time.time() + 1.0))
    assert time.perf_counter() - began < 20
    assert [j.cell.name for j in outcome.left] == ["slow-s0", "next-s0"] and not outcome.finished and not outcome.failed
    assert "slow-s0: stopped at the deadline at step 0/4" in out.getvalue()
    assert "next-s0: started" not in out.getvalue()


def test_the_expected_rate_comes_from_records_run_in_one_attempt_on_the_same_build(tmp_path):
    layout = c.Layout(tmp_path / "results", tmp_path / "runs")
    assert study.recorded_rate(layout) == (None, "the slowest rate recorded")
    evals = [{"step": 0, "pass_rate": 0.3}, {"step": 20, "pass_rate": 0.4}]
    fast, slow = {"model": "fa57"}, {"model": "510w"}
    for arm, seed, role, seconds, attempts, built in (
            ("a", 1, "study", 1600.0, 1, fast), ("b", 1, "study", 1800.0, 1, fast),
            ("a", 900, "pilot", 1700.0, 1, fast), ("b", 2, "study", 300.0, 2, fast),
            ("a", 2, "study", 3400.0, 1, slow)):
        put(layout, {**record(arm, seed, role, evals), "seconds": seconds, "attempts": attempts, "built": built})
    # the resumed cell's 300 s is no rate; a build no record shares: every record counts (3400 s / 20)
    assert study.recorded_rate(layout) == (170.0, "the slowest rate recorded")
    assert study.recorded_rate(layout, {"model": "new"}) == (170.0, "the slowest rate recorded")
    # the fast build's machines: only its 3 one-attempt records (1800 s / 20 steps)
    assert study.recorded_rate(layout, fast) == (90.0, "the slowest rate recorded with this build of the start, 3 cells")
    assert study.recorded_rate(layout, slow)[0] == 170.0
    described = Deadline(10_000.0, *study.recorded_rate(layout, fast)).describe(0.0, 20)
    assert "expected to take 1800 s (the slowest rate recorded with this build of the start, 3 cells)" in described


# --------------------------------------------------------------------------- power and report
def crossing(steps_to: float, start: float = 0.3) -> list[dict]:
    """A straight held-out curve from ``start`` through 0.5 at ``steps_to`` (evaluated at 0, 5, 10):
    interpolated steps to 0.5 are exactly ``steps_to`` when it is at most 10, else censored."""
    slope = (0.5 - start) / steps_to
    return [{"step": s, "pass_rate": start + slope * s} for s in (0, 5, 10)]


def record(arm: str, seed: int, role: str, evals: list[dict], protocol_hash: str = "", cell: str = "") -> dict:
    return {"arm": arm, "seed": seed, "role": role, "protocol": protocol_hash, "cell": cell, "evals": evals}


def put(layout: c.Layout, rec: dict) -> None:
    c.write_record(layout.record(c.Cell(rec["arm"], rec["seed"], rec["role"])), rec)


def test_power_comes_from_the_pilots_paired_log_ratios(tmp_path):
    protocol = load(write(tmp_path))
    layout = study.layout_for(protocol, tmp_path / "runs")
    start = c.shared_start(protocol, layout)
    # b needs 8 steps on each pilot seed; a 8/e^0.1, 8/e^0.2, 8/e^0.3: paired log ratios 0.1, 0.2, 0.3 (SD 0.1)
    for seed, gain in zip(protocol.seeds.pilot, (0.1, 0.2, 0.3)):
        for arm, steps in (("a", 8 / math.exp(gain)), ("b", 8.0), ("c", 6.0 if seed < 102 else 30.0)):
            ident = c.identity(protocol, {}, start, c.Cell(arm, seed, "pilot"))
            put(layout, record(arm, seed, "pilot", crossing(steps), cell=ident))
    put(layout, record("a", 100, "pilot", crossing(9.0), cell="stale"))   # a record of another config: left out
    data = study.estimate_power(protocol, layout)
    primary, gate = data["comparisons"]["a vs b"], data["comparisons"]["c vs b"]
    assert primary["role"] == "primary" and primary["pilot_seeds"] == [101, 102]
    assert primary["differences"] == pytest.approx([0.2, 0.3]) and primary["sd"] == pytest.approx(math.sqrt(0.005))
    # c never reaches 0.5 on seed 102 (censored at 15): log(8/6) twice, then log(8/15)
    assert gate["differences"] == pytest.approx([math.log(8 / 6)] * 2 + [math.log(8 / 15)])
    assert gate["censored_runs"] == 1 and primary["censored_runs"] == 0 and gate["pilot_seeds"] == [100, 101, 102]
    assert primary["seeds"] == 6 and primary["alpha"] == 0.05 and primary["target"] == pytest.approx(math.log(1.2))
    assert json.loads((protocol.results_dir / "power.json").read_text()) == data
    # the lock carries it; a power estimate of another protocol version is refused
    held = study.lock(protocol, layout)
    assert held.power == data
    changed = load(write(tmp_path, {"alpha": 0.01, "results": "other"}, "changed.yaml"))
    changed.results_dir.mkdir()
    (changed.results_dir / "power.json").write_text(json.dumps(data))
    with pytest.raises(SettingsError, match="another version of the protocol"):
        study.lock(changed, study.layout_for(changed, tmp_path / "runs"))


def study_records(protocol, layout, held, b_steps, ratios):
    """Study records: b needs ``b_steps[seed]``; arm x needs b's over ``ratios[x][seed]``."""
    for seed in protocol.seeds.study:
        put(layout, record("b", seed, "study", crossing(b_steps[seed]), held.protocol_hash))
        for arm, ratio in ratios.items():
            put(layout, record(arm, seed, "study", crossing(b_steps[seed] / ratio[seed]), held.protocol_hash))


def test_the_report_tests_each_comparison_by_its_role(tmp_path):
    """a is 1.25x faster than b on all six seeds: exact p = 2/64. Tested alone it is called; with
    one more tested comparison Holm doubles it to 0.0625 and it is not. The gate (c, 1.5x on
    every seed) is tested alone at its alpha either way; the exploratory d is never called."""
    changes = {"arms.e": {"optim.lr": 0.002}, "secondary": [{"a": "e", "b": "b"}]}
    protocol = load(write(tmp_path, changes))
    layout = study.layout_for(protocol, tmp_path / "runs")
    held = locking.write(protocol, {}, None)
    b_steps = {s: 6.0 + 0.5 * s for s in protocol.seeds.study}
    ones = dict.fromkeys(protocol.seeds.study, 1.0)
    study_records(protocol, layout, held, b_steps, {"a": dict.fromkeys(protocol.seeds.study, 1.25),
                                                     "c": dict.fromkeys(protocol.seeds.study, 1.5),
                                                     "d": dict.fromkeys(protocol.seeds.study, 1.1),
                                                     "e": {**ones, 0: 1.1, 1: 0.9}})
    put(layout, record("d", 5, "study", [{"step": 0, "pass_rate": 0.3}, {"step": 5, "pass_rate": 0.1},
                                         {"step": 10, "pass_rate": 0.9}], held.protocol_hash))  # d collapses on seed 5
    out = io.StringIO()
    verdict = study.report(protocol, layout, out)
    by = {r["role"]: r for r in verdict["comparisons"]}
    assert [r["role"] for r in verdict["comparisons"]] == ["gate", "primary", "secondary", "exploratory"]
    assert by["primary"]["p"] == pytest.approx(2 / 64) and by["primary"]["p_adjusted"] == pytest.approx(4 / 64)
    assert by["primary"]["called"] == "none" and by["primary"]["effect"] == pytest.approx(1.25)
    assert by["primary"]["effect_interval"] == pytest.approx([1.25, 1.25])   # every seed the same ratio
    assert by["primary"]["differences"] == pytest.approx([math.log(1.25)] * 6)
    assert by["gate"]["called"] == "a" and by["gate"]["p_adjusted"] == pytest.approx(2 / 64)   # alone, no Holm
    assert by["gate"]["verdict"].startswith("passed: c is better")
    assert by["exploratory"]["called"] is None and "not called" in by["exploratory"]["verdict"]
    assert by["exploratory"]["collapses"] == [1, 0]
    assert "no difference detected (Holm-adjusted p 0.0625 >= 0.05 over 2 tested)" in by["primary"]["verdict"]
    assert verdict["complete"] and "The positive control passed" in verdict["verdict"]
    # the same records, the primary tested alone: called
    alone = load(write(tmp_path, {"arms.e": {"optim.lr": 0.002}}, "alone.yaml"))
    alone_layout = c.Layout(layout.results, layout.runs)
    (layout.results / "lock.json").unlink()
    held = locking.write(alone, {}, None)
    for rec in c.load_records(alone_layout, "study").values():
        put(alone_layout, {**rec, "protocol": held.protocol_hash})
    verdict = study.report(alone, alone_layout, io.StringIO())
    primary = next(r for r in verdict["comparisons"] if r["role"] == "primary")
    assert primary["called"] == "a" and primary["p_adjusted"] == pytest.approx(2 / 64)
    assert "called: a is better (Holm-adjusted p 0.03125 < 0.05 over 1 tested)" in primary["verdict"]
    assert "a needs 0.800 of b's steps to reach 0.5 (speed-up 1.250x [1.250, 1.250]" in verdict["verdict"]


def test_the_report_says_not_yet_for_missing_seeds_and_is_deterministic(tmp_path):
    protocol = load(write(tmp_path, {"outcomes": {"no_difference": "token credit does not pay here"}}))
    layout = study.layout_for(protocol, tmp_path / "runs")
    held = locking.write(protocol, {}, None)
    b_steps = {s: 6.0 + 0.5 * s for s in protocol.seeds.study}
    study_records(protocol, layout, held, b_steps, {"a": {s: 1.1 if s % 2 == 0 else 1 / 1.1 for s in protocol.seeds.study},
                                                     "c": dict.fromkeys(protocol.seeds.study, 1.5)})
    layout.record(c.Cell("a", 5, "study")).unlink()   # a's last seed has not run yet; d has not run at all
    verdict = study.report(protocol, layout, io.StringIO())
    by = {r["role"]: r for r in verdict["comparisons"]}
    assert by["primary"]["verdict"] == "not yet: 5 of 6 seeds" and by["primary"]["p"] is None
    assert by["primary"]["seeds"] == [0, 1, 2, 3, 4] and by["primary"]["missing"] == [5]
    assert by["exploratory"]["verdict"] == "not yet: 0 of 6 seeds" and not verdict["complete"]
    assert verdict["cells"] == {"finished": 17, "total": 24}
    first = [(layout.results / name).read_bytes() for name in ("report.md", "verdict.json")]
    study.report(protocol, layout, io.StringIO())
    assert [(layout.results / name).read_bytes() for name in ("report.md", "verdict.json")] == first
    for name in ("curves.png", "differences.png"):
        assert (layout.results / name).stat().st_size > 5000
    # every seed in: alternating +-10% speed-ups, no difference, and the protocol's own words for it
    put(layout, record("a", 5, "study", crossing(b_steps[5] * 1.1), held.protocol_hash))
    verdict = study.report(protocol, layout, io.StringIO())
    primary = next(r for r in verdict["comparisons"] if r["role"] == "primary")
    assert primary["called"] == "none" and primary["p"] == pytest.approx(1.0)  # +-log 1.1 three times each: sum 0
    assert "The protocol reads this outcome as: token credit does not pay here" in verdict["verdict"]
    assert "Left out" not in (layout.results / "report.md").read_text()


def test_a_censored_run_counts_at_the_censoring_value_and_a_start_above_the_threshold_is_undefined(tmp_path):
    protocol = load(write(tmp_path))
    layout = study.layout_for(protocol, tmp_path / "runs")
    held = locking.write(protocol, {}, None)
    for seed in protocol.seeds.study:
        put(layout, record("b", seed, "study", crossing(30.0), held.protocol_hash))       # never: censored at 15
        put(layout, record("a", seed, "study", crossing(7.5), held.protocol_hash))
        put(layout, record("c", seed, "study", crossing(5.0, start=0.5), held.protocol_hash))  # there at step 0
    verdict = study.report(protocol, layout, io.StringIO())
    by = {r["role"]: r for r in verdict["comparisons"]}
    assert by["primary"]["b_values"] == [15.0] * 6 and by["primary"]["effect"] == pytest.approx(2.0)
    assert by["gate"]["status"] == "undefined" and "threshold is not above its start" in by["gate"]["verdict"]
    assert "(c)" in (layout.results / "report.md").read_text()


def test_the_worked_example_protocol_is_valid_and_every_arm_is_a_training_config(tmp_path):
    """docs/examples/compare_react.yaml (docs/compare.md): loads, and each arm's config is what
    `botgrpo train` accepts (the setup's paths stood in for: building the warm start takes minutes)."""
    root = Path(__file__).resolve().parents[1]
    protocol = load(root / "docs" / "examples" / "compare_react.yaml")
    assert [role for role, _ in protocol.comparisons()] == ["gate", "primary", "exploratory"]
    assert protocol.setup.function == "botgrpo.demo:setup" and len(protocol.seeds.study) == 25
    from botgrpo import demo
    assert callable(demo.setup)
    start = {**protocol.base_values(), "model": "m", "data": {"dataset": "d.jsonl"}, "eval": {"dataset": "e.jsonl"}}
    c.validate(protocol, start, tmp_path)
