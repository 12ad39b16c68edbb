"""Tables and plots of the convergence study (pure functions over run records).

A run record is what :func:`benchmarks.convergence.train_one` writes: ``evals`` (a list of
``{"step", "pass_rate", "spec_rate"}``, the first at step 0) plus its identity (``task``,
``label``, ``seed``, ``method``). Everything here is deterministic: bootstrap resampling uses a
fixed seed. The statistics themselves (steps to a threshold, area under the curve, collapses,
the exact sign-flip test, Holm, bootstrap intervals) are :mod:`botgrpo.compare.stats`'s.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable, Optional, Sequence

from botgrpo.compare.stats import (area_under_curve, bootstrap_ci, censored_steps, collapsed, holm, sign_flip_p,
                                   steps_to_threshold)

Record = dict[str, Any]


def paired(records: Sequence[Record], baseline: Sequence[Record], value: Callable[[Record], float]) -> list[float]:
    """Per-seed differences ``value(row) - value(baseline)`` over the seeds both have."""
    base = {r["seed"]: value(r) for r in baseline}
    return [value(r) - base[r["seed"]] for r in records if r["seed"] in base]


def per_run(record: Record, threshold: float, budget: int, every: int, cap: Optional[int] = None) -> dict[str, Any]:
    evals = record["evals"]
    spec = [e for e in evals if e.get("spec_rate") is not None]
    return {"steps": steps_to_threshold(evals, threshold),
            "steps_censored": censored_steps(evals, threshold, budget, every),
            "auc": area_under_curve(evals), "final": evals[-1]["pass_rate"],
            "final_spec": spec[-1]["spec_rate"] if spec else None,
            "below_start": evals[-1]["pass_rate"] < evals[0]["pass_rate"],
            "collapsed": collapsed(record, cap),
            "peak_length": max(record["lengths"]) if record.get("lengths") else None,
            "final_length": record["lengths"][-1] if record.get("lengths") else None}


def summarise(records: Sequence[Record], threshold: float, budget: int, every: int,
              cap: Optional[int] = None) -> dict[str, Any]:
    """Per-label means with bootstrap 95% intervals of each per-run metric (percentile intervals
    over 5 seeds cover less than their nominal 95%: read them with the paired tests)."""
    runs = [per_run(r, threshold, budget, every, cap) for r in records]
    out: dict[str, Any] = {"seeds": len(runs), "reached": sum(r["steps"] is not None for r in runs),
                           "below_start": sum(r["below_start"] for r in runs),
                           "collapsed": sum(r["collapsed"] for r in runs)}
    for key in ("steps_censored", "auc", "final", "final_spec", "peak_length", "final_length"):
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = bootstrap_ci(values) if values else None
    return out


def _fmt(ci: Optional[tuple[float, float, float]], digits: int = 3) -> str:
    if ci is None:
        return "-"
    estimate, low, high = ci
    if low != low:  # one seed: no interval
        return f"{estimate:.{digits}f}"
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def paired_metrics(threshold: float, budget: int, every: int,
                   cap: Optional[int] = None) -> dict[str, Callable[[Record], float]]:
    """The per-run values the paired tests compare: censored steps to the threshold, final pass
    rate, area under the curve, collapsed (0/1)."""
    return {"steps": lambda r: censored_steps(r["evals"], threshold, budget, every),
            "final": lambda r: r["evals"][-1]["pass_rate"],
            "auc": lambda r: area_under_curve(r["evals"]),
            "collapsed": lambda r: float(collapsed(r, cap))}


def tests_against(groups: dict[str, Sequence[Record]], baseline: str, threshold: float, budget: int,
                  every: int, cap: Optional[int] = None) -> dict[str, dict[str, float]]:
    """Each row against ``baseline`` on the seeds both ran: exact paired sign-flip p-values of
    the censored steps to the threshold, the final pass rate, the area under the curve and
    whether the run collapsed (0/1, :func:`collapsed`), each Holm-corrected across rows."""
    rows = [label for label in groups if label != baseline]
    if baseline not in groups or not rows:
        return {}
    metrics = paired_metrics(threshold, budget, every, cap)
    raw = {name: {label: sign_flip_p(paired(groups[label], groups[baseline], fn)) for label in rows}
           for name, fn in metrics.items()}
    adjusted = {name: holm(ps) for name, ps in raw.items()}
    return {label: {f"p_{name}": adjusted[name][label] for name in raw} for label in rows}


def tests_table(groups: dict[str, Sequence[Record]], baseline: str, threshold: float, budget: int, every: int,
                cap: Optional[int] = None) -> str:
    """Markdown: :func:`tests_against` for every row, with the mean paired difference of each
    metric (row minus ``baseline``, same seeds; steps: negative is sooner)."""
    tests = tests_against(groups, baseline, threshold, budget, every, cap)
    if not tests:
        return ""
    values = paired_metrics(threshold, budget, every, cap)
    lines = [f"| row - {baseline} (same seeds) | seeds | steps to {threshold:.0%} | final pass | area under curve | "
             "collapses |", "| --- " * 6 + "|"]
    for label, p in tests.items():
        diffs = {name: paired(groups[label], groups[baseline], fn) for name, fn in values.items()}
        cells = [f"{statistics.mean(d) if d else float('nan'):+.{1 if name == 'steps' else 3}f} (p {p[f'p_{name}']:.3f})"
                 for name, d in diffs.items()]
        lines.append(f"| {label} | {len(diffs['final'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(groups: dict[str, Sequence[Record]], threshold: float, budget: int, every: int,
          cap: Optional[int] = None, baseline: str = "grpo") -> str:
    """Markdown: one row per label, means with 95% bootstrap intervals over seeds. "Collapsed":
    seeds with any evaluation more than 0.1 below the start or mean length at the cap
    (:func:`collapsed`); "ends below its start": seeds whose final pass rate is under their
    step-0 one; "p vs GRPO": :func:`tests_against` (Holm across the table's rows); "peak length"
    and "final length": the largest and the last per-step mean completion length (tokens), where
    the records have them (a run that ends far below the shortest reference answer may be
    compiling fragments rather than components: benchmarks/what_compiles.py tells)."""
    lengths = any(r.get("lengths") for records in groups.values() for r in records)
    tests = tests_against(groups, baseline, threshold, budget, every, cap)
    rows = [f"| run | seeds reaching {threshold:.0%} | steps to {threshold:.0%} (censored at {budget + every}) | "
            "area under pass curve | final pass | final pass & spec | collapsed | ends below its start | "
            f"p vs {baseline}: steps / final |"
            + (" peak length | final length |" if lengths else ""), "| --- " * (9 + 2 * lengths) + "|"]
    for label, records in groups.items():
        s = summarise(records, threshold, budget, every, cap)
        p = tests.get(label)
        rows.append(f"| {label} | {s['reached']}/{s['seeds']} | {_fmt(s['steps_censored'], 1)} | {_fmt(s['auc'])} | "
                    f"{_fmt(s['final'])} | {_fmt(s['final_spec'])} | {s['collapsed']}/{s['seeds']} | "
                    f"{s['below_start']}/{s['seeds']} | "
                    + (f"{p['p_steps']:.3f} / {p['p_final']:.3f} |" if p else "- |")
                    + (f" {_fmt(s['peak_length'], 0)} | {_fmt(s['final_length'], 0)} |" if lengths else ""))
    return "\n".join(rows)


def plot(groups: dict[str, Sequence[Record]], title: str, ylabel: str, path) -> None:
    """Mean held-out pass rate per label with a band of the bootstrap 95% interval at each step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, records in groups.items():
        steps = [e["step"] for e in records[0]["evals"]]
        curves = [[e["pass_rate"] for e in r["evals"]] for r in records if len(r["evals"]) == len(steps)]
        cis = [bootstrap_ci([c[i] for c in curves]) for i in range(len(steps))]
        ax.plot(steps, [c[0] for c in cis], marker=".", label=label, lw=2.2 if "bot_grpo" in label else 1.3)
        if len(curves) > 1:
            ax.fill_between(steps, [c[1] for c in cis], [c[2] for c in cis], alpha=0.12)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
