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
