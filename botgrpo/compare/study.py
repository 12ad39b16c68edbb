"""What ``botgrpo compare`` does, in the order a user runs it: pilots, the power estimate, the lock,
the study's cells, the report. Each step is one function over a protocol and its folders."""
from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, TextIO

from botgrpo.compare import cells as c
from botgrpo.compare import lock as locking
from botgrpo.compare import power as power_
from botgrpo.compare import status as status_
from botgrpo.compare.endpoints import ENDPOINTS, EndpointUndefined
from botgrpo.compare.protocol import Protocol, canonical, digest
from botgrpo.compare.run import Deadline, Job, Outcome, Totals, cell_env, progress_for, run_jobs
from botgrpo.services.settings import SettingsError

POWER = "power.json"


@dataclass(frozen=True)
class Options:
    """How cells run (none of it changes a result, so none of it is in the protocol)."""

    jobs: int = 1                      # cells side by side, each its own process
    threads: Optional[int] = None      # OMP/MKL (and so torch) threads per cell; None: the environment's
    nice: Optional[int] = None         # the cells' niceness
    save_every: Optional[int] = None   # checkpoints every N steps, so an interrupted cell resumes
    arms: Optional[list[str]] = None   # only these arms' cells
    until: Optional[float] = None      # epoch seconds: start no cell expected to end later, stop what runs then
    keep_checkpoints: bool = False     # a finished cell's checkpoints stay (else removed once its record is written)
    poll: float = 1.0                  # seconds between looks at the running cells


def layout_for(protocol: Protocol, runs: Optional[Path] = None) -> c.Layout:
    return c.Layout(protocol.results_dir, Path(runs) if runs else Path("runs") / "compare" / protocol.name)


@contextmanager
def exclusive(layout: c.Layout) -> Iterator[None]:
    """One ``botgrpo compare`` at a time runs cells of a study (the lock file is released when
    the process ends, however it ends)."""
    layout.runs.mkdir(parents=True, exist_ok=True)
    with (layout.runs / ".running").open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SettingsError(f"another botgrpo compare is running cells of this study ({layout.runs})") from None
        yield


def _commit() -> str:
    return locking.git("rev-parse", "HEAD") or "unknown"


# --------------------------------------------------------------------------- cells
def run_cells(protocol: Protocol, layout: c.Layout, role: str, protocol_hash: str, start: dict[str, Any],
              options: Options, stream: TextIO) -> Outcome:
    """Run the unfinished cells of ``role``. A study cell with a record never runs again; a
    pilot's record counts only while its cell is unchanged."""
    prints, built = c.start_fingerprints(start), c.built_prints(start)
    records = c.load_records(layout, role)
    commit = _commit()
    planned = c.plan(protocol, role, options.arms)
    jobs, done = [], 0
    for cell in planned:
        cell_id = c.identity(protocol, prints, start, cell)
        record = records.get((cell.arm, cell.seed))
        if record is not None and (role == "study" or record.get("cell") == cell_id):
            done += 1
            continue
        jobs.append(_job(protocol, layout, cell, cell_id, start, prints, built, protocol_hash, commit, options))
    steps = protocol.steps
    totals = Totals(cells=len(planned), done=done, steps_total=len(planned) * steps,
                    steps_done=done * steps + sum(j.start_step for j in jobs), started=time.perf_counter())
    totals.steps_at_start = totals.steps_done
    print(f"{role}: {done} of {len(planned)} cells finished, {len(jobs)} to run, {options.jobs} at a time"
          + (f" ({sum(1 for j in jobs if j.resumed_from)} resuming from a checkpoint)" if jobs else ""),
          file=stream, flush=True)
    if not jobs:
        return Outcome()
    deadline = None
    if options.until is not None:
        deadline = Deadline(options.until, *recorded_rate(layout, built))
        print(deadline.describe(time.time(), steps), file=stream, flush=True)
    outcome = run_jobs(jobs, options.jobs, totals, progress_for(stream), layout.launches(role),
                       cell_env(options.threads), options.nice, options.poll, deadline)
    if outcome.left:
        print(f"{role}: {len(outcome.left)} cells left for the next run (the deadline)"
              + ("" if options.save_every else "; a stopped cell starts again from scratch without --save-every"),
              file=stream, flush=True)
    return outcome


def recorded_rate(layout: c.Layout, built: Optional[dict[str, str]] = None) -> tuple[Optional[float], str]:
    """The slowest seconds a step among the records of cells that ran in one attempt (pilots and
    study), and where it came from: the rate a :class:`Deadline` starts from (the cells this run
    finishes can only raise it). Records whose start was built to the same bytes as ``built`` ran
    on the same kind of CPU (the bytes depend on it), so when there are any, only they count."""
    timed = [(r["seconds"] / r["evals"][-1]["step"], r.get("built"))
             for role in ("pilot", "study") for r in c.load_records(layout, role).values()
             if r.get("attempts") == 1 and r.get("seconds") and r.get("evals") and r["evals"][-1]["step"] > 0]
    alike = [rate for rate, b in timed if built and b == built]
    if alike:
        return max(alike), f"the slowest rate recorded with this build of the start, {len(alike)} cells"
    return (max(rate for rate, _ in timed) if timed else None), "the slowest rate recorded"


def _job(protocol: Protocol, layout: c.Layout, cell: c.Cell, cell_id: str, start: dict[str, Any],
         prints: dict[str, str], built: dict[str, str], protocol_hash: str, commit: str, options: Options) -> Job:
    workdir = layout.workdir(cell)
    marker = workdir / "cell.json"
    if workdir.exists() and (not marker.exists() or json.loads(marker.read_text()).get("cell") != cell_id):
        shutil.rmtree(workdir)   # another config ran here (a pilot before the protocol changed): start afresh
    workdir.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"cell": cell_id}) + "\n")
    checkpoint = c.latest_checkpoint(workdir)
    if checkpoint is None:  # a fresh start: the trainer's records of an earlier attempt go
        for name in ("evals.jsonl", "metrics.jsonl"):
            (workdir / name).unlink(missing_ok=True)
    values = c.cell_values(protocol, start, cell, workdir, resume=checkpoint is not None, save_every=options.save_every)
    argv = c.command(c.write_config(workdir / "config.yaml", values), c.overrides(protocol, cell.arm))

    def finish(job: Job, attempts: int, seconds: float) -> str:
        evals = c.read_jsonl(workdir / "evals.jsonl")
        if not c.finished(evals, protocol.steps):
            last = evals[-1]["step"] if evals else None
            raise RuntimeError(f"the run ended with its last evaluation at step {last}, not {protocol.steps} "
                               "(a max_seconds in the config?)")
        record = c.make_record(cell, workdir, protocol_hash=protocol_hash, cell_id=cell_id, start_prints=prints,
                               commit=commit, argv=argv[3:], attempts=attempts, seconds=seconds, built=built)
        c.write_record(layout.record(cell), record)
        if not options.keep_checkpoints:
            c.drop_checkpoints(workdir)
        if blind:
            return f"record {layout.record(cell).relative_to(layout.results)}"
        return f"held-out pass rate {evals[0]['pass_rate']:.3f} -> {evals[-1]['pass_rate']:.3f}"

    blind = cell.role == "study"   # a study's lines show no result before the report (a pilot's do)
    return Job(cell, argv, workdir, protocol.steps, int(checkpoint.name.split("-")[-1]) if checkpoint else 0,
               checkpoint.name if checkpoint else None, finish, blind)


def prepare(protocol: Protocol, layout: c.Layout) -> dict[str, Any]:
    """The shared start, every arm's config checked as ``botgrpo train`` reads it."""
    start = c.shared_start(protocol, layout)
    with tempfile.TemporaryDirectory() as scratch:
        c.validate(protocol, start, Path(scratch))
    return start


# --------------------------------------------------------------------------- the steps
def pilot(protocol: Protocol, layout: c.Layout, options: Options, stream: TextIO) -> int:
    """The pilot seeds of the primary's (and the gate's) arms; allowed before the lock."""
    if not protocol.seeds.pilot:
        raise SettingsError("seeds.pilot: the protocol names no pilot seeds")
    with exclusive(layout):
        start = prepare(protocol, layout)
        failed = run_cells(protocol, layout, "pilot", digest(canonical(protocol)), start, options, stream).failed
    _print_failures(failed, stream)
    return 1 if failed else 0


def estimate_power(protocol: Protocol, layout: c.Layout) -> dict[str, Any]:
    """``power.json`` from the pilot records of the current cells: per comparison that has them (the
    primary's are required), the per-seed SD of the paired endpoint difference, the smallest effect
    the study detects with the protocol's power level, its power at the target and the seeds the
    target needs (:mod:`botgrpo.compare.power`)."""
    start = c.shared_start(protocol, layout)
    prints = c.start_fingerprints(start)
    records = {k: r for k, r in c.load_records(layout, "pilot").items()
               if r.get("cell") == c.identity(protocol, prints, start, c.Cell(k[0], k[1], "pilot"))}
    endpoint = ENDPOINTS[protocol.endpoint.primary]
    tested = protocol.tested()
    out: dict[str, Any] = {}
    for role, comparison in protocol.comparisons():
        if role == "exploratory":
            continue
        diffs, censored = {}, 0
        for seed in protocol.seeds.pilot:
            if (comparison.a, seed) in records and (comparison.b, seed) in records:
                a = endpoint.value(records[(comparison.a, seed)]["evals"], protocol)
                b = endpoint.value(records[(comparison.b, seed)]["evals"], protocol)
                censored += a.censored + b.censored
                try:
                    diffs[seed] = endpoint.difference(a.value, b.value)
                except EndpointUndefined as exc:
                    raise SettingsError(f"pilot seed {seed}, {comparison.label()}: {exc}") from None
        if len(diffs) < 2:
            if role == "primary":
                raise SettingsError(f"power: the primary comparison ({comparison.label()}) needs pilot records of "
                                    f"both arms on at least 2 pilot seeds, found {len(diffs)} "
                                    "(botgrpo compare PROTOCOL --pilot)")
            continue
        alpha = protocol.gate.alpha if role == "gate" else protocol.alpha / len(tested)
        p = protocol.power
        estimate = power_.estimate(comparison.a, comparison.b, diffs, len(protocol.seeds.study), alpha,
                                   endpoint.from_effect(p.target), p.level, p.draws, p.seed)
        out[comparison.label()] = {"role": role, **estimate.as_dict(), "censored_runs": censored}
    data = {"protocol_hash": digest(canonical(protocol)), "endpoint": endpoint.name,
            "method": power_.describe(protocol.power.draws), "comparisons": out}
    path = layout.results / POWER
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


def lock(protocol: Protocol, layout: c.Layout, require_power: bool = True,
         start: Optional[dict[str, Any]] = None) -> locking.Lock:
    """The study's lock: the existing one when it matches, else a new one (with the power estimate)."""
    start = start if start is not None else prepare(protocol, layout)
    prints = c.start_fingerprints(start)
    existing = locking.read(layout.results)
    if existing is not None:
        return locking.check(protocol, existing, prints)
    path = layout.results / POWER
    power = json.loads(path.read_text()) if path.exists() else None
    if power is None and require_power:
        raise SettingsError("no power estimate: run the pilots and the estimate first (botgrpo compare PROTOCOL --pilot,"
                            " then --power), or lock without one (--no-power)")
    if power is not None and power.get("protocol_hash") != digest(canonical(protocol)):
        raise SettingsError(f"{path} was estimated for another version of the protocol: run --power again")
    return locking.write(protocol, prints, power)


def study(protocol: Protocol, layout: c.Layout, options: Options, stream: TextIO, require_power: bool = True) -> int:
    """Lock (if not yet), run the study's unfinished cells, then the report once every cell is in;
    until then its progress only (:mod:`botgrpo.compare.status`: a look at the paired differences
    before the last seed is an interim analysis the protocol did not name)."""
    with exclusive(layout):
        start = prepare(protocol, layout)
        held = lock(protocol, layout, require_power, start)
        if not held.protocol_committed:
            print("note: the protocol file was not committed when the study was locked; commit it with lock.json",
                  file=stream, flush=True)
        failed = run_cells(protocol, layout, "study", held.protocol_hash, start, options, stream).failed
    _print_failures(failed, stream)
    if status(protocol, layout, stream, options.jobs).left:
        print("the report waits for every cell (botgrpo compare PROTOCOL --report writes an interim one on request)",
              file=stream, flush=True)
    else:
        report(protocol, layout, stream)
    return 1 if failed else 0


def status(protocol: Protocol, layout: c.Layout, stream: TextIO, jobs: int = 1) -> status_.Progress:
    """Print the study's progress, blind to its results; return it."""
    progress = status_.progress(protocol, layout, locking.read(layout.results))
    print("\n".join(status_.lines(protocol, progress, jobs)), file=stream, flush=True)
    return progress


def report(protocol: Protocol, layout: c.Layout, stream: TextIO) -> dict[str, Any]:
    from botgrpo.compare import report as reporting

    held = locking.read(layout.results)
    if held is None:
        raise SettingsError(f"no lock at {layout.results}: nothing to report before the study is locked")
    locking.check(protocol, held)
    text, verdict = reporting.write(protocol, layout, held)
    print(text, file=stream, flush=True)
    print(f"written: {layout.results / 'report.md'}, verdict.json, curves.png, differences.png", file=stream, flush=True)
    return verdict


def _print_failures(failed: list[tuple[Job, str]], stream: TextIO) -> None:
    for job, why in failed:
        print(f"cell {job.cell.name} failed: {why}", file=stream, flush=True)
