"""The convergence study's tables and report, on hand-computed cases (its statistics:
tests/test_compare_stats.py)."""
import pytest

from benchmarks import convergence_report as r
from benchmarks.convergence import FULL, QUICK, SETTINGS, plan


def curve(*points):
    return [{"step": s, "pass_rate": p, "spec_rate": None} for s, p in points]


def test_plan_covers_methods_seeds_and_ablations():
    runs = plan(["react", "math"], ["bot_grpo", "grpo"], FULL)
    keys = [run.key for run in runs]
    assert len(keys) == len(set(keys))
    assert sum(run.label == "grpo" and run.task == "react" for run in runs) == FULL.seeds >= 5
    labels = {run.label for run in runs if run.task == "react"}
    assert {"bot_grpo_paper", "bot_grpo_paper w_s=0.0", "bot_grpo oracle", "gspo iters=2",
            "bot_grpo seq-mean-token-mean"} <= labels
    assert {label for label, *_ in SETTINGS["math"].ablations} <= {run.label for run in runs if run.task == "math"}
    assert all(run.label in ("bot_grpo", "grpo") for run in plan(["react"], ["bot_grpo", "grpo"], QUICK))


def test_report_from_finished_runs(tmp_path):
    """write_report turns run files into tables, ratios and plots, with nothing trained."""
    import json

    from benchmarks.convergence import Run, write_report
    (tmp_path / "runs").mkdir()
    for seed in range(3):
        for label, reach in (("grpo", 40), ("bot_grpo", 20)):
            evals = [{"step": s, "pass_rate": 0.9 if s >= reach + seed * 5 else 0.2, "spec_rate": 0.1} for s in range(0, 65, 5)]
            run = Run("react", label, label, seed)
            record = {"task": "react", "label": label, "method": label, "seed": seed, "key": run.key, "evals": evals,
                      "seconds": 10.0, "commit": "abc"}
            (tmp_path / "runs" / f"{run.key}.json").write_text(json.dumps(record))
    text = write_report(tmp_path, FULL, "python -m benchmarks.convergence")
    assert "| bot_grpo | 3/3 |" in text and "| grpo | 3/3 |" in text
    assert "- bot_grpo: **" in text  # GRPO's steps over BoT-GRPO's: (40+45+50) / (20+25+30) = 1.8
    assert "1.80x" in text
    assert (tmp_path / "convergence-react.png").stat().st_size > 5000
    assert (tmp_path / "ablations-react.png").stat().st_size > 5000
    # 3 seeds, bot_grpo 20 steps sooner on each: the smallest sign-flip p with 3 seeds is 2/8
    assert "| bot_grpo | 3 | -20.0 (p 0.250) |" in text
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["react"]["grpo_steps_over"]["bot_grpo"][0] == 1.8


def test_runs_from_another_warm_start_are_foreign():
    """Resuming is refused beside runs from another warm start, or from one never recorded."""
    from benchmarks.convergence import foreign_runs

    records = [{"task": "react", "key": "same", "warm_start": "aa"}, {"task": "react", "key": "other", "warm_start": "bb"},
               {"task": "react", "key": "unrecorded"}, {"task": "math", "key": "math-run", "warm_start": "zz"}]
    assert foreign_runs(records, {"react": "aa"}) == ["other", "unrecorded"]
    assert foreign_runs(records[:1], {"react": "aa", "math": "cc"}) == []


def test_table_counts_collapses_and_peak_and_final_lengths():
    """A seed that ends under its start counts as a collapse; the peak is the largest step mean,
    the final length the last one."""
    rising = {"evals": curve((0, 0.2), (5, 0.9)), "lengths": [100.0, 120.0, 20.0]}
    falling = {"evals": curve((0, 0.2), (5, 0.0)), "lengths": [100.0, 300.0, 60.0]}
    row = r.table({"bot_grpo": [rising, falling]}, 0.8, 5, 5).splitlines()[-1]
    # collapsed 1/2, ends below its start 1/2, no GRPO row to test against
    assert row.startswith("| bot_grpo | 1/2 |") and row.endswith("| 1/2 | 1/2 | - | 210 [120, 300] | 40 [20, 60] |")
    assert "peak length" not in r.table({"grpo": [{"evals": curve((0, 0.2), (5, 0.9))}]}, 0.8, 5, 5)


def test_no_ratio_where_no_run_reaches_the_threshold(tmp_path):
    """Two rows that both stay under the threshold are not a 1.00x tie: the report says no run got there."""
    import json

    from benchmarks.convergence import Run, write_report
    (tmp_path / "runs").mkdir()
    for seed in range(2):
        for label in ("grpo", "bot_grpo"):
            run = Run("math", label, label, seed)
            record = {"task": "math", "label": label, "method": label, "seed": seed, "key": run.key, "seconds": 1.0,
                      "commit": "abc", "evals": curve((0, 0.3), (25, 0.35), (50, 0.3))}
            (tmp_path / "runs" / f"{run.key}.json").write_text(json.dumps(record))
    text = write_report(tmp_path, FULL, "python -m benchmarks.convergence")
    assert "No run reaches 60%" in text and "1.00x" not in text
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["math"]["grpo_steps_over"] == {}


def test_collapse_counts_a_mid_run_fall_and_a_length_at_the_cap():
    recovered = {"evals": curve((0, 0.3), (5, 0.0), (10, 0.9)), "lengths": [100, 20, 90]}
    steady = {"evals": curve((0, 0.3), (5, 0.25), (10, 0.9)), "lengths": [100, 120, 90]}
    capped = {"evals": curve((0, 0.3), (5, 0.35), (10, 0.5)), "lengths": [100, 310, 200]}
    assert r.collapsed(recovered) and not r.per_run(recovered, 0.8, 50, 5)["below_start"]  # final > start
    assert not r.collapsed(steady, cap=320)
    assert r.collapsed(capped, cap=320) and not r.collapsed(capped)


def test_tests_against_pair_runs_by_seed():
    groups = {"grpo": [{"seed": s, "evals": curve((0, 0.2), (5, 0.3), (10, 0.5 + 0.01 * s))} for s in range(5)],
              "row": [{"seed": s, "evals": curve((0, 0.2), (5, 0.9), (10, 0.9))} for s in range(5)]}
    tests = r.tests_against(groups, "grpo", 0.8, budget=10, every=5)
    # row reaches 80% at step 5 on every seed, GRPO never (censored at 15): all differences -10
    assert tests["row"]["p_steps"] == pytest.approx(2 / 32) and tests["row"]["p_final"] == pytest.approx(2 / 32)
    assert "| row | 5/5 |" in r.table(groups, 0.8, 10, 5) and "0.062 / 0.062" in r.table(groups, 0.8, 10, 5)


def test_tests_against_covers_the_secondary_metrics_and_the_table_shows_them():
    """Area under the curve and collapses get the same paired test as steps and final pass."""
    groups = {"grpo": [{"seed": s, "evals": curve((0, 0.5), (5, 0.3), (10, 0.6))} for s in range(5)],
              "row": [{"seed": s, "evals": curve((0, 0.5), (5, 0.5), (10, 0.6))} for s in range(5)],
              "same": [{"seed": s, "evals": curve((0, 0.5), (5, 0.3), (10, 0.6))} for s in range(5)]}
    tests = r.tests_against(groups, "grpo", 0.9, budget=10, every=5)
    # GRPO dips 0.2 below its start (a collapse) on every seed, "row" never: 5 of 5 differ the same way
    assert tests["row"]["p_collapsed"] == pytest.approx(2 * 2 / 32)   # Holm over 2 rows; "same" has p 1
    assert tests["row"]["p_auc"] == pytest.approx(2 * 2 / 32) and tests["same"]["p_auc"] == 1.0
    assert tests["row"]["p_final"] == 1.0   # same final on every seed
    text = r.tests_table(groups, "grpo", 0.9, 10, 5)
    # area (0.5+0.5)/2*5 + (0.5+0.6)/2*5 = 5.25 vs (0.8/2*5 + 0.9/2*5) = 4.25 over 10 steps: +0.100
    assert "| row | 5 | +0.0 (p 1.000) | +0.000 (p 1.000) | +0.100 (p 0.125) | -1.000 (p 0.125) |" in text


def test_the_chain_report_draws_the_positive_control_and_the_estimators(tmp_path):
    """The step-chain study's own figures: GRPO against the oracle, w_s = 0 and BoT-GRPO, then
    every estimator; the tests table names every row."""
    import json

    from benchmarks import chain_study
    from benchmarks.convergence import Run

    (tmp_path / "runs").mkdir()
    for label, *_ in chain_study.ROWS:
        for seed in range(2):
            run = Run("chain", label, label, seed)
            evals = [{"step": s, "pass_rate": 0.3 + 0.005 * s, "spec_rate": None} for s in range(0, 55, 5)]
            record = {"task": "chain", "label": label, "method": label, "seed": seed, "key": run.key,
                      "evals": evals, "lengths": [150.0] * 50, "seconds": 1.0, "commit": "abc"}
            (tmp_path / "runs" / f"{run.key}.json").write_text(json.dumps(record))
    chain_study.main(["--report", "--out", str(tmp_path)])
    text = (tmp_path / "results.md").read_text()
    assert all(f"| {label} | 2 |" in text for label, *_ in chain_study.ROWS[1:])
    for stem in ("control", "estimators"):
        assert (tmp_path / f"{stem}-chain.png").stat().st_size > 5000


def test_the_steps_ratio_interval_is_paired_by_seed():
    """GRPO's steps over the row's, resampled by seed: where every seed's pair has the same ratio
    (20/10, 30/15, 40/20, 50/25: 2.0 each) every paired draw is 2.0, so the interval is the point
    [2.0, 2.0]; resampling the rows independently (what the report did before) spreads it wide.
    A seed only one row ran is left out."""
    from benchmarks.convergence import _speedup
    from botgrpo.compare import stats

    steps = {"grpo": {0: 20, 1: 30, 2: 40, 3: 50, 9: 5}, "row": {0: 10, 1: 15, 2: 20, 3: 25}}
    groups = {label: [{"seed": seed, "evals": curve((0, 0.1), (n, 0.9))} for seed, n in by_seed.items()]
              for label, by_seed in steps.items()}
    est, low, high = _speedup(groups, "row", 0.6, FULL)
    assert (est, low, high) == pytest.approx((2.0, 2.0, 2.0))
    _, low_unpaired, high_unpaired = stats.ratio_ci([20, 30, 40, 50], [10, 15, 20, 25])
    assert high_unpaired - low_unpaired > 1.0
