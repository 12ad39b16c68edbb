"""A study's progress without its results: which cells have run, which are under way, how long the
rest should take, and which builds of the start they trained from.

Nothing here reads an endpoint value or a curve (a record's evaluations, a run's pass rates), so a
study that spans many sessions can be watched without a look at what the report will test: a
protocol names no interim analysis, and a look at the paired differences before the last seed is
one. ``botgrpo compare PROTOCOL --status`` prints it; a study run that leaves cells for later
prints it instead of the report.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from botgrpo.compare import cells as c
from botgrpo.compare.lock import Lock
from botgrpo.compare.protocol import Protocol, canonical, digest


@dataclass(frozen=True)
class UnderWay:
    """A cell with a run folder and no record: the last step its run logged and its newest checkpoint."""

    cell: str
    step: int
    checkpoint: Optional[int]


@dataclass(frozen=True)
class Progress:
    planned: list[c.Cell]                            # the study's cells in run order
    finished: frozenset[tuple[str, int]]             # (arm, seed) with a record under the lock
    foreign: list[str] = field(default_factory=list)     # records made under another protocol
    under_way: list[UnderWay] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)   # the finished cells that ran in one attempt
    builds: Counter = field(default_factory=Counter)     # a record's `built` print -> cells
    locked: bool = True
    changed: bool = False                            # the protocol differs from the locked one

    @property
    def left(self) -> list[c.Cell]:
        return [cell for cell in self.planned if (cell.arm, cell.seed) not in self.finished]

    def seeds_complete(self, seeds: list[int], arms: list[str]) -> list[int]:
        return [s for s in seeds if all((arm, s) in self.finished for arm in arms)]


def progress(protocol: Protocol, layout: c.Layout, lock: Optional[Lock]) -> Progress:
    """The study's progress from its records (their names, seconds and builds only) and its run folders."""
    planned = c.plan(protocol, "study")
    records = c.load_records(layout, "study")
    held = lock.protocol_hash if lock else None
    mine = {k: r for k, r in records.items() if held is not None and r.get("protocol") == held}
    under_way = []
    for cell in planned:
        workdir = layout.workdir(cell)
        if (cell.arm, cell.seed) in mine or not workdir.exists():
            continue
        steps = c.read_jsonl(workdir / "metrics.jsonl")
        checkpoint = c.latest_checkpoint(workdir)
        if steps or checkpoint or (workdir / "train.log").exists():   # the log: launched, before its first step
            under_way.append(UnderWay(cell.name, steps[-1]["step"] if steps else 0,
                                      int(checkpoint.name.split("-")[-1]) if checkpoint else None))
    return Progress(
        planned=planned, finished=frozenset(mine),
        foreign=sorted(f"{arm}-s{seed}" for (arm, seed) in records if held is not None and (arm, seed) not in mine),
        under_way=under_way,
        seconds=[r["seconds"] for r in mine.values() if r.get("attempts") == 1 and r.get("seconds")],
        builds=Counter(json.dumps(r["built"], sort_keys=True) for r in mine.values() if r.get("built")),
        locked=lock is not None,
        changed=lock is not None and lock.protocol_hash != digest(canonical(protocol)))


def lines(protocol: Protocol, p: Progress, jobs: int = 1) -> list[str]:
    """``p`` in words: counts per arm, the seeds every arm finished, the cells under way, the time
    the cells left should take at ``jobs`` at a time (at the median and the slowest cell), the builds."""
    seeds, arms = protocol.seeds.study, list(protocol.arms)
    done = len(p.planned) - len(p.left)
    complete = p.seeds_complete(seeds, arms)
    out = [f"study {protocol.name}: {done} of {len(p.planned)} cells finished; every arm on "
           f"{len(complete)} of {len(seeds)} seeds" + (f" ({_ranges(complete)})" if complete else "")]
    if not p.locked:
        out.append("not locked yet: no study cell has run (botgrpo compare PROTOCOL --lock, or a run)")
    if p.changed:
        out.append("the protocol differs from the locked one: cells run only under the locked protocol")
    width = max(len(a) for a in arms)
    for arm in arms:
        mine = [s for s in seeds if (arm, s) in p.finished]
        out.append(f"  {arm:<{width}}  {len(mine):>3} of {len(seeds)}" + (f"  ({_ranges(mine)})" if mine else ""))
    for u in p.under_way:
        out.append(f"under way or stopped: {u.cell} at step {u.step} of {protocol.steps}"
                   + (f", resumes from checkpoint-{u.checkpoint} (--save-every)" if u.checkpoint
                      else ", no checkpoint: starts again from step 0"))
    if p.left:
        shown = max(3, jobs)
        out.append("next: " + ", ".join(cell.name for cell in p.left[:shown])
                   + (f" and {len(p.left) - shown} more" if len(p.left) > shown else ""))
        if p.seconds:
            median = statistics.median(p.seconds)
            hours = [x * len(p.left) / max(1, jobs) / 3600 for x in (median, max(p.seconds))]
            out.append(f"a cell took {min(p.seconds):,.0f}-{max(p.seconds):,.0f} s (median {median:,.0f}) in one "
                       f"attempt; the {len(p.left)} left need about {hours[0]:.1f} h at the median, {hours[1]:.1f} h "
                       f"at the slowest, {jobs} at a time")
    else:
        out.append("every cell is in: botgrpo compare PROTOCOL --report")
    if p.builds:
        out.append("builds of the start: " + "; ".join(
            f"{', '.join(f'{k} {v}' for k, v in json.loads(b).items())}: {n} cell{'s' * (n != 1)}"
            for b, n in p.builds.most_common()))
    if p.foreign:
        out.append(f"records made under another protocol (not counted): {', '.join(p.foreign)}")
    return out


def _ranges(seeds: list[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` -> ``1-3, 5, 7-8``."""
    runs: list[list[int]] = []
    for s in sorted(seeds):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)
