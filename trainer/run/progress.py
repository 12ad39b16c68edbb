"""Progress of the long commands (``demo``, ``train``, ``eval``, ``compare``'s cells): one place.

On a terminal, live rich bars (and a spinner for a phase without steps). Anywhere else (a log
file, CI, ``| tee``), plain lines, flushed as they are written: the first step, then one at most
every :data:`LINE_SECONDS`, and the last, each with the rate and the ETA; a phase without steps
says it is still running every :data:`LINE_SECONDS`. Third-party bars (transformers' "Loading
weights", "Writing model shards", Hugging Face datasets and hub) are off unless
``BOTGRPO_THIRD_PARTY_PROGRESS=1`` (:func:`quiet_third_party`, called by the CLI).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, TextIO

LINE_SECONDS = 5.0
THIRD_PARTY = "BOTGRPO_THIRD_PARTY_PROGRESS"
# read by huggingface_hub (and so transformers' own tqdm) and by datasets when they are imported
_HF_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")


def quiet_third_party() -> None:
    """Turn the Hugging Face libraries' bars off for this process and its children (before they
    are imported), unless ``BOTGRPO_THIRD_PARTY_PROGRESS=1`` asks for them; an explicit setting wins."""
    if os.environ.get(THIRD_PARTY, "") not in ("", "0"):
        return
    for name in _HF_SWITCHES:
        os.environ.setdefault(name, "1")


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def is_terminal(stream: Optional[TextIO] = None) -> bool:
    stream = sys.stdout if stream is None else stream
    return hasattr(stream, "isatty") and stream.isatty()


class Lines:
    """Progress as lines: ``[12:00:05] train 3/60 (5%) | <status> | 0.48 steps/s | ETA 0:01:58``."""

    def __init__(self, label: str, total: int, stream: Optional[TextIO] = None, every: float = LINE_SECONDS,
                 now: Callable[[], float] = time.monotonic, unit: str = "steps"):
        self.label, self.total, self.every, self.now, self.unit = label, total, every, now, unit
        self.stream = sys.stdout if stream is None else stream
        self.started = now()
        self.last: Optional[float] = None

    def line(self, done: int, status: str = "") -> str:
        elapsed = self.now() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = clock((self.total - done) / rate) if rate > 0 else "?"
        share = f" ({done / self.total:.0%})" if self.total else ""
        middle = f" | {status}" if status else ""
        speed = f"{rate:.3g} {self.unit}/s" if rate >= 1 or rate == 0 else f"{1 / rate:.3g} s/{self.unit.rstrip('s')}"
        return f"[{time.strftime('%H:%M:%S')}] {self.label} {done}/{self.total}{share}{middle} | {speed} | ETA {eta}"

    def update(self, done: int, status: str = "") -> None:
        now = self.now()
        if self.last is None or done >= self.total or now - self.last >= self.every:
            self.last = now
            print(self.line(done, status), file=self.stream, flush=True)


@contextmanager
def bar(label: str, total: int, enabled: bool = True, stream: Optional[TextIO] = None,
        unit: str = "steps") -> Iterator[Callable[..., None]]:
    """Yields ``update(done, status="")``: a rich bar on a terminal, :class:`Lines` otherwise."""
    if not enabled:
        yield lambda done, status="": None
        return
    if not is_terminal(stream):
        yield Lines(label, total, stream, unit=unit).update
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(file=stream) if stream is not None else None) as live:
        task = live.add_task(label, total=total, status="")
        yield lambda done, status="": live.update(task, completed=done, status=status)


def step_status(record: dict) -> str:
    """A training step's record in a few words: reward, pass rate, throughput."""
    pass_rate = record.get("pass_rate")
    shown = "n/a" if pass_rate is None else f"{pass_rate:.2f}"
    return f"reward {record['reward_mean']:+.3f}  pass {shown}  {record['tokens_per_s']:.0f} tok/s"


@contextmanager
def progress_callback(total: int, enabled: bool = True, stream: Optional[TextIO] = None, label: str = "train"):
    """Yields ``on_step(record)`` for :meth:`Trainer.train`: a bar or lines (nothing when disabled)."""
    with bar(label, total, enabled, stream) as update:
        yield lambda record: update(record["step"], step_status(record))


def tracker(enabled: bool = True, stream: Optional[TextIO] = None, unit: str = "prompts"):
    """``track(label, total)``, a context manager yielding ``update(done)``: :func:`bar` over
    ``total`` items, or :func:`phase` when ``total`` is None (its ``update`` does nothing)."""
    @contextmanager
    def track(label: str, total: Optional[int]) -> Iterator[Callable[..., None]]:
        if total is None:
            with phase(label, enabled, stream):
                yield lambda done, status="": None
        else:
            with bar(label, total, enabled, stream, unit=unit) as update:
                yield update
    return track


SILENT = tracker(enabled=False)  # a track that shows nothing


def lines_tracker(enabled: bool = True, stream: Optional[TextIO] = None):
    """:func:`tracker` for work inside a live bar (the evaluations of a training run): lines in a
    log, nothing on a terminal, where the run's own bar is showing."""
    return tracker(enabled and not is_terminal(stream), stream)


@contextmanager
def phase(text: str, enabled: bool = True, stream: Optional[TextIO] = None, every: float = LINE_SECONDS):
    """A stretch of work without steps (a whole generation, a scoring pass): a spinner on a
    terminal; otherwise a line when it starts, one every ``every`` seconds while it runs, and one
    when it ends, with the time it took."""
    if not enabled:
        yield
        return
    if is_terminal(stream):
        from rich.console import Console

        with (Console(file=stream) if stream is not None else Console()).status(text):
            yield
        return
    out = sys.stdout if stream is None else stream
    started, done = time.monotonic(), threading.Event()

    def say(what: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}: {what}", file=out, flush=True)

    def beat() -> None:
        while not done.wait(every):
            say(f"running, {clock(time.monotonic() - started)}")

    say("started")
    ticker = threading.Thread(target=beat, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
    say(f"done in {clock(time.monotonic() - started)}")
