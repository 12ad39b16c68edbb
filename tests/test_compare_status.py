"""``botgrpo compare --status`` and the end of a study run that leaves cells: a study's progress,
blind to its results (botgrpo/compare/status.py)."""
from __future__ import annotations

import io
import json

from botgrpo.compare import cells as c
from botgrpo.compare import lock as locking
from botgrpo.compare import study
from botgrpo.compare.protocol import load
from tests.test_compare import put, write


def test_the_status_counts_cells_and_times_the_rest_without_reading_a_result(tmp_path):
    """Records without any curve (so nothing of a result can be read), one made under another
    protocol, a cell stopped after a checkpoint and one stopped before any: the exact lines."""
    from botgrpo.trainer.run.checkpoint import STATE_FILE

    protocol = load(write(tmp_path))     # arms a b c d, seeds 0-5: run order c b a per seed, then d
    layout = study.layout_for(protocol, tmp_path / "runs")
    held = locking.write(protocol, {}, None)
    for seed, arm, seconds, attempts, build in ((0, "c", 1600.0, 1, "x1"), (0, "b", 1800.0, 1, "x1"),
                                                (0, "a", 1700.0, 1, "x1"), (1, "c", 2000.0, 1, "x2"),
                                                (1, "b", 300.0, 2, "x2"), (3, "a", 1650.0, 1, "x2")):
        put(layout, {"arm": arm, "seed": seed, "role": "study", "protocol": held.protocol_hash, "seconds": seconds,
                     "attempts": attempts, "built": {"model": build}})
    put(layout, {"arm": "d", "seed": 0, "role": "study", "protocol": "another", "seconds": 1.0, "attempts": 1})
    stopped = layout.workdir(c.Cell("a", 1, "study"))
    (stopped / "checkpoint-5").mkdir(parents=True)
    (stopped / "checkpoint-5" / STATE_FILE).write_bytes(b"")
    (stopped / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "pass_rate": 0.9}) + "\n" for s in (1, 6, 7)))
    fresh = layout.workdir(c.Cell("c", 2, "study"))
    fresh.mkdir(parents=True)
    (fresh / "metrics.jsonl").write_text(json.dumps({"step": 2}) + "\n")
    layout.workdir(c.Cell("b", 2, "study")).mkdir(parents=True)   # a folder and nothing in it: not under way
    launched = layout.workdir(c.Cell("a", 2, "study"))
    launched.mkdir(parents=True)
    (launched / "train.log").write_text("loading\n")                 # launched, no step yet

    out = io.StringIO()
    progress = study.status(protocol, layout, out, jobs=2)
    assert out.getvalue().splitlines() == [
        "study t: 6 of 24 cells finished; every arm on 0 of 6 seeds",
        "  a    2 of 6  (0, 3)",
        "  b    2 of 6  (0-1)",
        "  c    2 of 6  (0-1)",
        "  d    0 of 6",
        "under way or stopped: a-s1 at step 7 of 10, resumes from checkpoint-5 (--save-every)",
        "under way or stopped: c-s2 at step 2 of 10, no checkpoint: starts again from step 0",
        "under way or stopped: a-s2 at step 0 of 10, no checkpoint: starts again from step 0",
        "next: a-s1, c-s2, b-s2 and 15 more",
        # the resumed cell's 300 s is not a cell's time; the median of 1600 1650 1700 1800 2000 is 1700
        "a cell took 1,600-2,000 s (median 1,700) in one attempt; the 18 left need about 4.2 h at the median, "
        "5.0 h at the slowest, 2 at a time",
        "builds of the start: model x1: 3 cells; model x2: 3 cells",
        "records made under another protocol (not counted): d-s0"]
    assert [cell.name for cell in progress.left][:3] == ["a-s1", "c-s2", "b-s2"]
    # every cell in: it says so; no lock yet: it says that
    for cell in progress.left:
        put(layout, {"arm": cell.arm, "seed": cell.seed, "role": "study", "protocol": held.protocol_hash})
    out = io.StringIO()
    assert not study.status(protocol, layout, out).left
    assert "every arm on 6 of 6 seeds (0-5)" in out.getvalue() and "every cell is in" in out.getvalue()
    (layout.results / "lock.json").unlink()
    out = io.StringIO()
    study.status(protocol, layout, out)
    assert out.getvalue().splitlines()[:2] == ["study t: 0 of 24 cells finished; every arm on 0 of 6 seeds",
                                               "not locked yet: no study cell has run (botgrpo compare PROTOCOL "
                                               "--lock, or a run)"]
    assert "another protocol" not in out.getvalue()


def test_a_study_run_that_leaves_cells_prints_its_progress_not_a_report(tmp_path):
    """A deadline already past: no cell starts, and the run ends with the status, writing no
    report (the paired differences of the seeds in so far are an unregistered interim look)."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights").write_bytes(b"1234")
    protocol = load(write(tmp_path, {"base.values.model": str(tmp_path / "model")}))
    layout = study.layout_for(protocol, tmp_path / "runs")
    locking.write(protocol, c.start_fingerprints(study.prepare(protocol, layout)), None)
    out = io.StringIO()
    assert study.study(protocol, layout, study.Options(until=1.0), out, require_power=False) == 0
    text = out.getvalue()
    assert "study t: 0 of 24 cells finished" in text and "the report waits for every cell" in text
    assert "c-s0: not started" in text and not (layout.results / "report.md").exists()
