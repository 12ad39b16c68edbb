"""benchmarks/pool_profile.py's per-function table: a V8 .cpuprofile summed per function, self
and inclusive, in ms a file, idle left out of the shares."""
from __future__ import annotations

import json

from benchmarks.pool_profile import profile_table


def _frame(name: str, url: str = "file:///x/lib/a.mjs") -> dict:
    return {"functionName": name, "url": url, "lineNumber": 0, "columnNumber": 0, "scriptId": "1"}


def test_self_and_inclusive_time_per_function(tmp_path):
    # root -> summarize -> scopesOf; root -> (idle). 4 ms in scopesOf, 2 ms in summarize itself, 2 ms idle
    profile = {"nodes": [{"id": 1, "callFrame": _frame("(root)", ""), "children": [2, 4]},
                         {"id": 2, "callFrame": _frame("summarize"), "children": [3]},
                         {"id": 3, "callFrame": _frame("scopesOf", "file:///x/lib/scope.mjs")},
                         {"id": 4, "callFrame": _frame("(idle)", "")}],
               "samples": [3, 3, 2, 4], "timeDeltas": [2000, 2000, 2000, 2000]}
    path = tmp_path / "p.cpuprofile"
    path.write_text(json.dumps(profile))
    lines = profile_table(path, files=2)
    assert lines[0].strip() == "sampled 4.000 ms a file, of which idle 1.000"
    self_rows = lines[lines.index("    -- self (ms a file, share of the non-idle samples)") + 1:
                      lines.index("    -- inclusive (ms a file, share of the non-idle samples)")]
    assert [r.split() for r in self_rows] == [["2.000", "66.7%", "scopesOf", "scope.mjs"],
                                              ["1.000", "33.3%", "summarize", "a.mjs"]]
    inclusive = lines[lines.index("    -- inclusive (ms a file, share of the non-idle samples)") + 1:]
    assert inclusive[0].split() == ["3.000", "100.0%", "summarize", "a.mjs"]
    assert not any("(idle)" in line or "(root)" in line for line in lines[1:])


def test_cpu_by_kind_keeps_reaped_children_apart():
    from benchmarks.pool_profile import cpu_by_kind

    before = {10: ("node worker", 100, 5), 11: ("tsgo server (Go)", 50, 0), 12: ("esbuild", 7, 0)}
    # 13 started in between (counts from zero); 12 ended in between (its CPU is in the parent's reaped ticks)
    after = {10: ("node worker", 130, 25), 11: ("tsgo server (Go)", 90, 0), 13: ("tsc", 4, 0)}
    assert cpu_by_kind(before, after) == {"node worker": 30, "node worker: reaped children": 20,
                                          "tsgo server (Go)": 40, "tsc": 4}


def test_process_ticks_sees_a_group_and_its_reaped_children():
    import subprocess
    import sys

    from benchmarks.pool_profile import TICK_MS, process_ticks

    # a group leader that reaps a busy child (~0.3 s of CPU), then waits to be read
    script = ("import subprocess, sys, time; subprocess.run([sys.executable, '-c', "
              "'import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass']); "
              "print('done', flush=True); time.sleep(30)")
    leader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert leader.stdout.readline().strip() == "done"
        ticks = process_ticks({leader.pid})
        assert set(ticks) == {leader.pid}
        kind, own, reaped = ticks[leader.pid]
        assert kind.startswith("python")
        assert reaped * TICK_MS >= 250
    finally:
        leader.kill()
        leader.wait()
