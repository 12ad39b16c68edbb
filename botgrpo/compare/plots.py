"""The report's two figures: the held-out curves per arm, and each comparison's per-seed differences."""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from botgrpo.compare.endpoints import ENDPOINTS
from botgrpo.compare.protocol import Protocol


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def curves(protocol: Protocol, records: dict[tuple[str, int], dict[str, Any]], path: Path) -> Path:
    """Held-out pass rate against step: each seed a thin line, each arm's mean over its seeds a
    thick one (on the evaluation steps every seed has), the threshold dashed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.6))
    for index, arm in enumerate(protocol.arms):
        runs = [records[(arm, s)]["evals"] for s in protocol.seeds.study if (arm, s) in records]
        if not runs:
            continue
        colour = f"C{index % 10}"
        for evals in runs:
            ax.plot([e["step"] for e in evals], [e["pass_rate"] for e in evals], color=colour, lw=0.6, alpha=0.3)
        steps = sorted(set.intersection(*({e["step"] for e in evals} for evals in runs)))
        by_step = [{e["step"]: e["pass_rate"] for e in evals} for evals in runs]
        ax.plot(steps, [statistics.mean(r[s] for r in by_step) for s in steps], color=colour, lw=2.2,
                label=f"{arm} ({len(runs)} seeds)")
    if protocol.endpoint.threshold is not None:
        ax.axhline(protocol.endpoint.threshold, color="k", ls="--", lw=0.8, label=f"threshold {protocol.endpoint.threshold}")
    ax.set(xlabel="step", ylabel="held-out pass rate", title=f"{protocol.name}: mean over seeds (thin: each seed)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def differences(protocol: Protocol, results: list, path: Path) -> Path:
    """One row per comparison: each seed's paired difference as a dot (steps: the log ratio, its
    ticks labelled as b's steps over a's; AUC: a - b), the mean with its paired bootstrap
    interval as a bar, and the no-difference line. Right of it: a is better."""
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter

    endpoint = ENDPOINTS[protocol.endpoint.primary]
    shown = [r for r in results if r.differences]
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.7 * max(1, len(shown))))
    for row, r in enumerate(reversed(shown)):
        ax.scatter(r.differences, [row] * len(r.differences), s=18, alpha=0.6,
                   color="C0" if r.status == "complete" else "0.6", zorder=3)
        if r.mean is not None:
            low, high = r.interval
            ax.errorbar([r.mean], [row + 0.25], xerr=[[r.mean - low], [high - r.mean]], fmt="D", color="C3",
                        capsize=3, ms=5, zorder=4)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{r.role}: {r.a} vs {r.b}" + ("" if r.status == "complete" else f" ({r.status})")
                        for r in reversed(shown)], fontsize=8)
    ax.axvline(0.0, color="k", lw=0.8)
    level = f"{protocol.bootstrap.level:.0%}"
    if endpoint.name == "steps_to_threshold":  # log ratios, labelled as the ratios they are
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{endpoint.effect(v):.3g}x"))
        ax.set_xlabel(f"b's steps to the threshold over a's, per seed (> 1x: a sooner)\n"
                      f"diamond: geometric mean and its {level} paired bootstrap interval")
    else:
        ax.set_xlabel(f"{endpoint.name}: a - b per seed (> 0: a better)\n"
                      f"diamond: mean and its {level} paired bootstrap interval")
    ax.set_ylim(-0.6, len(shown) - 0.4 + 0.3)
    ax.grid(alpha=0.3, axis="x")
    ax.set_title(f"{protocol.name}: per-seed paired differences")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)

