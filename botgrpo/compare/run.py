"""Running cells: ``botgrpo train`` processes, N at a time, watched through the files they write.

Each cell runs in its own process (its own interpreter, torch threads and memory), its output
in ``train.log`` of its directory. Progress is read from the trainer's ``metrics.jsonl`` (one line
a step) and ``evals.jsonl`` (one line an evaluation): on a terminal a rich bar per cell and one
for the whole run; otherwise one line per evaluation and per finished cell, and between them one
every :data:`STEP_LINE_SECONDS` while cells step, each with the run's rate (steps a second, all
cells together) and its ETA. On Ctrl-C or SIGTERM the running cells are
stopped (SIGTERM, then SIGKILL after :data:`GRACE` seconds); they resume on the next run. With a
:class:`Deadline` (``--until``) no cell starts that is expected to end after it, and what still
runs at it is stopped the same way.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from botgrpo.compare.cells import Cell
from botgrpo.trainer.run.progress import clock, is_terminal

GRACE = 10.0
STEP_LINE_SECONDS = 30.0  # off a terminal: a line at least this often while cells step (evaluations add theirs)


@dataclass
class Job:
    """One cell to run: its command and where it writes."""

    cell: Cell
    argv: list[str]
    workdir: Path
    steps: int
    start_step: int = 0                      # the checkpoint it resumes from (0: a fresh start)
    resumed_from: Optional[str] = None
    finish: Callable[["Job", int, float], str] = lambda job, attempts, seconds: ""  # writes the record; a summary
    blind: bool = False                      # its lines name no evaluation's value (a study cell: no interim look)


@dataclass
class Deadline:
    """A wall-clock end for a run of cells (a session, a batch job's walltime).

    A cell is expected to take ``per_step * (steps - start_step)`` seconds, ``per_step`` being the
    slowest rate seen (finished records, then the cells this run finishes; ``basis`` says which
    records); it starts only if it ends by ``at`` (epoch seconds). Unknown rate: it starts.
    """

    at: float
    per_step: Optional[float] = None
    basis: str = "the slowest rate recorded"

    @classmethod
    def parse(cls, text: str, now: datetime) -> "Deadline":
        """``HH:MM`` (the next such local time) or a duration: ``90m``, ``2h``, ``1h30m``, ``45s``."""
        clock_ = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", text.strip())
        if clock_:
            at = now.replace(hour=int(clock_[1]), minute=int(clock_[2]), second=0, microsecond=0)
            return cls((at if at > now else at + timedelta(days=1)).timestamp())
        parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip())
        if not text.strip() or not parts:
            raise ValueError(f"--until {text!r}: give a local time HH:MM or a duration such as 90m, 2h, 1h30m")
        hours, minutes, seconds = (int(g or 0) for g in parts.groups())
        return cls(now.timestamp() + 3600 * hours + 60 * minutes + seconds)

    def expected(self, job: Job) -> Optional[float]:
        return None if self.per_step is None else self.per_step * (job.steps - job.start_step)

    def fits(self, job: Job, now: float) -> bool:
        expected = self.expected(job)
        return now < self.at and (expected is None or now + expected <= self.at)

    def observe(self, job: Job, seconds: float) -> None:
        """A cell finished in ``seconds``: the estimate keeps the slowest rate."""
        steps = job.steps - job.start_step
        if steps > 0:
            self.per_step = max(self.per_step or 0.0, seconds / steps)

    def describe(self, now: float, steps: int) -> str:
        """The deadline, and what a fresh cell of ``steps`` steps is expected to take."""
        left = max(0.0, self.at - now)
        rate = (f"a cell of {steps} steps is expected to take {self.per_step * steps:.0f} s ({self.basis})"
                if self.per_step is not None else "no finished cell to time yet, so every cell may start")
        return f"until {time.strftime('%H:%M', time.localtime(self.at))} ({left:.0f} s from now): {rate}"


@dataclass
class Outcome:
    """What a run of jobs came to: finished, failed (with why), and left for the next run (not
    started before the deadline, or stopped at it)."""

    finished: list[Job] = field(default_factory=list)
    failed: list[tuple[Job, str]] = field(default_factory=list)
    left: list[Job] = field(default_factory=list)


@dataclass
class _Running:
    job: Job
    process: subprocess.Popen
    log: TextIO
    attempt: int
    started: float
    step: int
    offsets: dict[str, int] = field(default_factory=lambda: {"metrics.jsonl": 0, "evals.jsonl": 0})


@dataclass
class Totals:
    """The run's state for progress lines: cells and steps, done and to do."""

    cells: int
    done: int
    steps_total: int
    steps_done: int
    started: float
    steps_at_start: int = 0
    failed: int = 0
    running: int = 0

    def rate(self, now: float) -> float:
        elapsed = now - self.started
        return (self.steps_done - self.steps_at_start) / elapsed if elapsed > 0 else 0.0

    def eta(self, now: float) -> Optional[float]:
        rate = self.rate(now)
        return (self.steps_total - self.steps_done) / rate if rate > 0 else None

    def line(self, now: float) -> str:
        eta = self.eta(now)
        return (f"cells {self.done}/{self.cells} done, {self.running} running"
                + (f", {self.failed} failed" if self.failed else "")
                + f" | steps {self.steps_done}/{self.steps_total}, {self.rate(now):.3g} steps/s, "
                + f"ETA {clock(eta) if eta is not None else '?'}")


class LineProgress:
    """A line per event (for logs, pipes and ``nohup``), and between events one at most every
    ``every`` seconds while cells step."""

    def __init__(self, stream: TextIO = sys.stdout, every: float = STEP_LINE_SECONDS):
        self.stream, self.every = stream, every
        self.last = time.perf_counter()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def event(self, text: str, totals: Totals, job: Optional[Job] = None, step: Optional[int] = None) -> None:
        now = self.last = time.perf_counter()
        print(f"[{time.strftime('%H:%M:%S')}] {text} | {totals.line(now)}", file=self.stream, flush=True)

    def stepped(self, job: Job, step: int, totals: Totals) -> None:
        if time.perf_counter() - self.last >= self.every:
            self.event(f"{job.cell.name}: step {step}/{job.steps}", totals)

    def ended(self, job: Job) -> None:
        pass


class RichProgress:
    """Bars on a terminal: the whole run, and each running cell."""

    def __init__(self, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[note]}"), TimeRemainingColumn(), console=console)
        self.tasks: dict[str, Any] = {}
        self.total = None

    def __enter__(self) -> "RichProgress":
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def _overall(self, totals: Totals) -> None:
        if self.total is None:
            self.total = self.bar.add_task("all cells", total=totals.steps_total, note="")
        self.bar.update(self.total, completed=totals.steps_done,
                        note=f"cells {totals.done}/{totals.cells}" + (f", {totals.failed} failed" if totals.failed else ""))

    def event(self, text: str, totals: Totals, job: Optional[Job] = None, step: Optional[int] = None) -> None:
        self.bar.console.log(text)
        self._overall(totals)
        if job is not None and job.cell.name not in self.tasks and step is not None:
            self.tasks[job.cell.name] = self.bar.add_task(job.cell.name, total=job.steps, completed=step, note="")

    def stepped(self, job: Job, step: int, totals: Totals) -> None:
        if job.cell.name in self.tasks:
            self.bar.update(self.tasks[job.cell.name], completed=step)
        self._overall(totals)

    def ended(self, job: Job) -> None:
        task = self.tasks.pop(job.cell.name, None)
        if task is not None:
            self.bar.remove_task(task)


def progress_for(stream: TextIO = sys.stdout):
    """Rich bars on a terminal, lines otherwise."""
    if not is_terminal(stream):
        return LineProgress(stream)
    from rich.console import Console
    return RichProgress(Console(file=stream))


class Interrupted(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C: the running cells are stopped and left resumable."""


def _on_sigterm(signum, frame) -> None:
    raise Interrupted()


def cell_env(threads: Optional[int]) -> dict[str, str]:
    """The cells' environment: this one, with ``threads`` OpenMP/MKL threads (torch's default
    thread count follows ``OMP_NUM_THREADS``) and unbuffered output."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if threads is not None:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def run_jobs(jobs: list[Job], parallel: int, totals: Totals, progress, launches: Path,
             env: Optional[dict[str, str]] = None, nice: Optional[int] = None,
             poll: float = 1.0, deadline: Optional[Deadline] = None) -> Outcome:
    """Run ``jobs``, ``parallel`` at a time. A job finishes when its process exits 0 and its
    ``finish`` returns (writing the record); anything else fails it (the other jobs go on). With a
    ``deadline``, a job that would end after it is left for the next run, and so is one still
    running at it (stopped: it resumes from its last checkpoint, if any)."""
    pending, running = deque(jobs), []
    out = Outcome()
    prefix = ["nice", "-n", str(nice)] if nice is not None and shutil.which("nice") else []
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    try:
        with progress:
            while pending or running:
                while pending and len(running) < parallel:
                    job = pending.popleft()
                    if deadline is not None and not deadline.fits(job, time.time()):
                        out.left.append(job)
                        progress.event(f"{job.cell.name}: not started, {_short_of(deadline, job)}", totals)
                        continue
                    running.append(_launch(job, prefix, env, launches))
                    totals.running = len(running)
                    r = running[-1]
                    note = f" (resuming {r.job.resumed_from})" if r.job.resumed_from else ""
                    progress.event(f"{r.job.cell.name}: started, attempt {r.attempt}{note}", totals, r.job, r.step)
                if not running:
                    break
                time.sleep(poll)
                for r in list(running):
                    code = r.process.poll()
                    _watch(r, totals, progress)   # after the poll: an ended cell's last lines are all read
                    if code is None:
                        continue
                    r.log.close()
                    running.remove(r)
                    totals.running = len(running)
                    seconds = time.perf_counter() - r.started
                    try:
                        if code != 0:
                            raise RuntimeError(f"exit code {code}")
                        summary = r.job.finish(r.job, r.attempt, seconds)
                    except Exception as exc:  # one cell's failure is reported, the others run on
                        why = f"{exc}; last lines of {r.job.workdir / 'train.log'}:\n{_tail(r.job.workdir / 'train.log')}"
                        out.failed.append((r.job, why))
                        totals.failed += 1
                        totals.steps_done -= r.step
                        progress.event(f"{r.job.cell.name}: FAILED ({exc})", totals)
                    else:
                        out.finished.append(r.job)
                        totals.done += 1
                        totals.steps_done += r.job.steps - r.step
                        if deadline is not None:
                            deadline.observe(r.job, seconds)
                        progress.event(f"{r.job.cell.name}: done in {seconds:.0f} s, {summary}", totals)
                    progress.ended(r.job)
                if deadline is not None and time.time() >= deadline.at:   # after the look: a cell just done counts
                    _stop(running)
                    for r in running:
                        out.left.append(r.job)
                        progress.event(f"{r.job.cell.name}: stopped at the deadline at step {r.step}/{r.job.steps}",
                                       totals)
                        progress.ended(r.job)
                    out.left.extend(pending)
                    pending.clear()
                    running = []
                    totals.running = 0
    except BaseException:
        _stop(running)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return out


def _short_of(deadline: Deadline, job: Job) -> str:
    left = max(0.0, deadline.at - time.time())
    return (f"expected to take {deadline.expected(job):.0f} s with {left:.0f} s left before the deadline"
            if left > 0 else "the deadline has passed")


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _launch(job: Job, prefix: list[str], env: Optional[dict[str, str]], launches: Path) -> _Running:
    attempt = 1 + sum(1 for line in _lines(launches) if json.loads(line)["cell"] == job.cell.name)
    launches.parent.mkdir(parents=True, exist_ok=True)
    with launches.open("a") as f:
        f.write(json.dumps({"cell": job.cell.name, "attempt": attempt, "resumed_from": job.resumed_from,
                            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    job.workdir.mkdir(parents=True, exist_ok=True)
    log = (job.workdir / "train.log").open("a")
    log.write(f"=== attempt {attempt}: {' '.join(job.argv)}\n")
    log.flush()
    process = subprocess.Popen(prefix + job.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               env=env)
    running = _Running(job, process, log, attempt, time.perf_counter(), job.start_step)
    for name in running.offsets:  # a resumed run appends to its files: only what it writes now is news
        path = job.workdir / name
        running.offsets[name] = path.stat().st_size if path.exists() else 0
    return running


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _new_rows(r: _Running, name: str) -> list[dict[str, Any]]:
    """Complete lines appended to ``name`` since the last look."""
    path = r.job.workdir / name
    if not path.exists():
        return []
    size = path.stat().st_size
    if size < r.offsets[name]:  # the trainer started the file afresh
        r.offsets[name] = 0
    with path.open("rb") as f:
        f.seek(r.offsets[name])
        chunk = f.read()
    complete = chunk[:chunk.rfind(b"\n") + 1]
    r.offsets[name] += len(complete)
    return [json.loads(line) for line in complete.decode().splitlines() if line.strip()]


def _watch(r: _Running, totals: Totals, progress) -> None:
    steps = [row["step"] for row in _new_rows(r, "metrics.jsonl")]
    if steps and max(steps) > r.step:
        totals.steps_done += max(steps) - r.step
        r.step = max(steps)
        progress.stepped(r.job, r.step, totals)
    for row in _new_rows(r, "evals.jsonl"):
        rate = None if r.job.blind else row.get("pass_rate")
        progress.event(f"{r.job.cell.name}: eval at step {row['step']}/{r.job.steps}"
                       + (f", pass_rate {rate:.3f}" if rate is not None else ""), totals)


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(_lines(path)[-lines:]) if path.exists() else "(no log)"


def _stop(running: list[_Running]) -> None:
    """SIGTERM every running cell, SIGKILL what is left after :data:`GRACE` seconds."""
    for r in running:
        if r.process.poll() is None:
            r.process.terminate()
    deadline = time.monotonic() + GRACE
    for r in running:
        try:
            r.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            r.process.kill()
            r.process.wait()
        r.log.close()
