"""Run records: ``metrics.jsonl`` (one line per step), TensorBoard when installed, a PNG plot."""
from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

class Stopwatch:
    """A step's timings: ``laps[name]`` sums the seconds spent in every ``with lap(name)`` (or
    :meth:`add`-ed); :meth:`elapsed` is the time since the watch started."""

    def __init__(self):
        self.started, self.laps = time.perf_counter(), {}

    @contextmanager
    def lap(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - began)

    def add(self, name: str, seconds: float) -> None:
        self.laps[name] = self.laps.get(name, 0.0) + seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


PLOTTED = [("reward_mean", "reward"), ("pass_rate", "pass rate"), ("spec_rate", "pass & spec"), ("kl", "KL"),
           ("entropy", "entropy"), ("completion_len_mean", "completion length"), ("clip_frac", "clip fraction"),
           ("tokens_per_s", "tokens/s"), ("time_step", "seconds per step")]


class MetricsLog:
    def __init__(self, directory: Path, tensorboard: bool = True):
        self.path = Path(directory) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self._writer = SummaryWriter(str(Path(directory) / "tensorboard"))
            except ImportError:  # tensorboard is optional
                self._writer = None

    def write(self, record: dict[str, Any]) -> None:
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps(clean) + "\n")
        if self._writer is not None:
            for key, value in clean.items():
                if isinstance(value, (int, float)) and key != "step":
                    self._writer.add_scalar(key, value, record["step"])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def plot(records: Iterable[dict[str, Any]], out: Path, title: str = "", evals: Optional[list[dict]] = None) -> Path:
    """A grid of the training curves (and evaluation points, if any) saved as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = list(records)
    # a curve that never moves (KL without a KL term, the clip fraction on-policy) carries no information
    keys = [(k, label) for k, label in PLOTTED if len({r.get(k) for r in records if r.get(k) is not None}) > 1]
    cols = 4
    rows = max(1, math.ceil(len(keys) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, (key, label) in zip(axes.flat, keys):
        points = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], lw=1.2)
        if evals and key in ("pass_rate", "spec_rate"):
            ev = [(e["step"], e[key]) for e in evals if e.get(key) is not None]
            ax.plot([p[0] for p in ev], [p[1] for p in ev], "o--", color="black", label="held-out eval")
            ax.legend(fontsize=8)
        ax.set_title(label)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_runs(runs: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Held-out success per step for each run (``{"label", "evals", "curve"}``; runs sharing a
    label's arm get one colour) and, right, the seconds per step split into generation and update."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    colours: dict[str, Any] = {}
    for run in runs:
        arm = run.get("arm", run["label"])
        evals = run.get("evals") or []
        kwargs = {"color": colours[arm]} if arm in colours else {}
        line, = left.plot([e["step"] for e in evals], [e["pass_rate"] for e in evals], marker="o", lw=1.3,
                          label=run["label"] if arm not in colours else None, **kwargs)
        colours.setdefault(arm, line.get_color())
    if len(runs) == 1:
        curve = runs[0].get("curve") or []
        left.plot([r["step"] for r in curve], [r.get("pass_rate") for r in curve], alpha=0.45, color="grey",
                  label="training batch success")
    left.set(xlabel="step", ylabel="held-out success", ylim=(0, 1), title=title)
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    curve = (runs[0].get("curve") or []) if runs else []
    steps = [r["step"] for r in curve]
    gen = [r.get("time_generate") or 0 for r in curve]
    wait = [r.get("time_score_wait") or 0 for r in curve]
    train = [r.get("time_train") or 0 for r in curve]
    right.bar(steps, gen, label="generate")
    right.bar(steps, wait, bottom=gen, label="wait for scores")
    right.bar(steps, train, bottom=[g + w for g, w in zip(gen, wait)], label="update")
    right.plot(steps, [r.get("time_step") for r in curve], color="k", lw=1, label="step total")
    right.set(xlabel="step", ylabel="seconds", title=f"seconds per step ({runs[0]['label'] if runs else ''})")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
