"""Statistics, tables and plots of the convergence study (pure functions over run records).

A run record is what :func:`benchmarks.convergence.train_one` writes: ``evals`` (a list of
``{"step", "pass_rate", "spec_rate"}``, the first at step 0) plus its identity (``task``,
``label``, ``seed``, ``method``). Everything here is deterministic: bootstrap resampling uses a
fixed seed.
"""
from __future__ import annotations

import random
import statistics
from typing import Any, Callable, Optional, Sequence

Record = dict[str, Any]
RESAMPLES = 10_000


def steps_to_threshold(evals: Sequence[Record], threshold: float) -> Optional[int]:
    """The first evaluated step whose held-out pass rate reaches ``threshold`` (None: never)."""
    return next((e["step"] for e in evals if e["pass_rate"] >= threshold), None)


def censored_steps(evals: Sequence[Record], threshold: float, budget: int, every: int) -> float:
    """:func:`steps_to_threshold`, with a run that never gets there counted at ``budget + every``
    (a lower bound on its true value: it makes the ratio of a never-reaching method conservative)."""
    reached = steps_to_threshold(evals, threshold)
    return float(budget + every if reached is None else reached)


def area_under_curve(evals: Sequence[Record], key: str = "pass_rate") -> float:
    """Mean of the curve over the steps it spans (trapezoids), in [0, 1]: ``int_0^T p(s) ds / T``."""
    points = [(e["step"], e[key]) for e in evals if e.get(key) is not None]
    if len(points) < 2:
        return points[0][1] if points else float("nan")
    area = sum((s1 - s0) * (p0 + p1) / 2 for (s0, p0), (s1, p1) in zip(points, points[1:]))
    return area / (points[-1][0] - points[0][0])


def bootstrap_ci(values: Sequence[float], statistic: Callable[[Sequence[float]], float] = statistics.mean,
                 level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``(estimate, low, high)``: the statistic and its percentile bootstrap interval over seeds."""
    values = list(values)
    estimate = statistic(values)
    if len(values) < 2:
        return estimate, float("nan"), float("nan")
    rng = random.Random(seed)
    draws = sorted(statistic(rng.choices(values, k=len(values))) for _ in range(RESAMPLES))
    tail = (1 - level) / 2
    return estimate, draws[int(tail * RESAMPLES)], draws[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]


def ratio_ci(numerator: Sequence[float], denominator: Sequence[float], level: float = 0.95,
             seed: int = 0) -> tuple[float, float, float]:
    """``mean(numerator) / mean(denominator)`` with a bootstrap interval, both samples resampled
    independently (the seeds of two methods are not paired trajectories)."""
    num, den = list(numerator), list(denominator)
    estimate = statistics.mean(num) / statistics.mean(den)
    if len(num) < 2 or len(den) < 2:
        return estimate, float("nan"), float("nan")
    rng = random.Random(seed)
    draws = sorted(statistics.mean(rng.choices(num, k=len(num))) / statistics.mean(rng.choices(den, k=len(den)))
                   for _ in range(RESAMPLES))
    tail = (1 - level) / 2
    return estimate, draws[int(tail * RESAMPLES)], draws[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]


def per_run(record: Record, threshold: float, budget: int, every: int) -> dict[str, Any]:
    evals = record["evals"]
    spec = [e for e in evals if e.get("spec_rate") is not None]
    return {"steps": steps_to_threshold(evals, threshold),
            "steps_censored": censored_steps(evals, threshold, budget, every),
            "auc": area_under_curve(evals), "final": evals[-1]["pass_rate"],
            "final_spec": spec[-1]["spec_rate"] if spec else None,
            "below_start": evals[-1]["pass_rate"] < evals[0]["pass_rate"],
            "peak_length": max(record["lengths"]) if record.get("lengths") else None,
            "final_length": record["lengths"][-1] if record.get("lengths") else None}


def summarise(records: Sequence[Record], threshold: float, budget: int, every: int) -> dict[str, Any]:
    """Per-label means with bootstrap 95% intervals of each per-run metric."""
    runs = [per_run(r, threshold, budget, every) for r in records]
    out: dict[str, Any] = {"seeds": len(runs), "reached": sum(r["steps"] is not None for r in runs),
                           "below_start": sum(r["below_start"] for r in runs)}
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


def table(groups: dict[str, Sequence[Record]], threshold: float, budget: int, every: int) -> str:
    """Markdown: one row per label, means with 95% bootstrap intervals over seeds. "Ends below its
    start": seeds whose final pass rate is under their step-0 one (a collapse); "peak length" and
    "final length": the largest and the last per-step mean completion length (tokens), where the
    records have them (a run that ends far below the shortest reference answer may be compiling
    fragments rather than components: benchmarks/what_compiles.py tells)."""
    lengths = any(r.get("lengths") for records in groups.values() for r in records)
    rows = [f"| run | seeds reaching {threshold:.0%} | steps to {threshold:.0%} (censored at {budget + every}) | "
            "area under pass curve | final pass | final pass & spec | ends below its start |"
            + (" peak length | final length |" if lengths else ""), "| --- " * (7 + 2 * lengths) + "|"]
    for label, records in groups.items():
        s = summarise(records, threshold, budget, every)
        rows.append(f"| {label} | {s['reached']}/{s['seeds']} | {_fmt(s['steps_censored'], 1)} | {_fmt(s['auc'])} | "
                    f"{_fmt(s['final'])} | {_fmt(s['final_spec'])} | {s['below_start']}/{s['seeds']} |"
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
