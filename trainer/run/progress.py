"""A live progress bar for training: step, reward, pass rate, speed."""
from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextmanager
def progress_callback(total: int, enabled: bool = True):
    """Yields ``on_step(record)`` that advances a rich progress bar (a no-op when disabled)."""
    if not enabled:
        yield lambda record: None
        return
    columns = [TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns) as bar:
        task = bar.add_task("train", total=total, status="")

        def on_step(record) -> None:
            pass_rate = record.get("pass_rate")
            status = (f"reward {record['reward_mean']:+.3f}  pass {pass_rate if pass_rate is None else f'{pass_rate:.2f}'}"
                      f"  {record['tokens_per_s']:.0f} tok/s")
            bar.update(task, completed=record["step"], status=status)

        yield on_step
