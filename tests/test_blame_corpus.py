"""benchmarks/blame.py's --corpus mode on a slice of the committed corpus of SmolLM2's failing
completions: each local signal is placed on real failures through the whole react scorer (and
the math scorer), and the table says how often it touches the first reported error."""
from __future__ import annotations

import json

from benchmarks import blame
from benchmarks.real_model import CORPUS
from tests.node_toolchain import require_node_toolchain


def _slice(tmp_path, per_level: int = 3):
    """A few failures of each compile level and of math: enough to run every branch, quickly."""
    rows = blame.read_corpus(CORPUS)
    picked = []
    for level in ("build", "typecheck", "math"):
        picked += [r for r in rows if r["level"] == level][:per_level]
    path = tmp_path / "slice.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return path, picked


def test_corpus_rows_cover_every_signal_and_are_shares(tmp_path):
    require_node_toolchain()
    path, picked = _slice(tmp_path)
    rows = blame.corpus_table(path)
    react_signals = {r["signal"] for r in rows if r["task"] == "react"}
    assert react_signals == set(blame.CORPUS_SIGNALS) and "oracle (diff to reference)" not in react_signals
    assert {r["signal"] for r in rows if r["task"] == "math"} == set(blame.MATH_SIGNALS)
    for label in blame.CORPUS_SIGNALS:  # every failure placed once per signal
        assert sum(r["n"] for r in rows if r["signal"] == label) == sum(p["task"] == "react" for p in picked)
    for r in rows:
        assert r["report"] is None or 0.0 <= r["report"] <= 1.0
        assert 0 <= r["with_report"] <= r["n"]
        assert all(0.0 <= r[k] <= 1.0 for k in ("blamed", "whole", "nothing"))
    table = blame.corpus_markdown(rows, path)
    assert table.count("\n| react |") == sum(1 for r in rows if r["task"] == "react")


def test_the_command_writes_the_corpus_rows_and_says_how_they_were_made(tmp_path, capsys):
    require_node_toolchain()
    path, _ = _slice(tmp_path, per_level=1)
    blame.main(["--corpus", str(path), "--corpus-only", "--out", str(tmp_path / "blame.json")])
    written = json.loads((tmp_path / "blame.json").read_text())
    assert written["rows"] == [] and written["corpus"]["rows"]
    assert written["command"].endswith(f"--corpus {path} --corpus-only")
    assert "Real failures" in capsys.readouterr().out
