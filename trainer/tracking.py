"""Run records: ``metrics.jsonl`` (one line per step), TensorBoard when installed, a PNG plot."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Optional

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
