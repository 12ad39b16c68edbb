"""``botgrpo compare PROTOCOL``: run a pre-registered comparison of training configs, and report it.

In the order a user runs them (docs/compare.md)::

    botgrpo compare study.yaml --pilot     # pilot seeds of the primary (and gate) arms; before the lock
    botgrpo compare study.yaml --power     # from the pilots: the smallest effect the study detects
    botgrpo compare study.yaml --lock      # lock the protocol (commit the lock with it), run nothing
    botgrpo compare study.yaml --jobs 2    # lock if needed, run the unfinished study cells, report once all are in
    botgrpo compare study.yaml --status    # progress, blind to the results: cells finished, under way, time left
    botgrpo compare study.yaml --report    # the report from the records there ("not yet" where seeds miss)

Cells resume: a finished one (its record written) never runs again; an interrupted one restarts,
from its last checkpoint with ``--save-every N``. ``--until 08:40`` (or ``--until 2h``) starts no
cell expected to end later and stops what still runs then, for sessions and batch jobs with a
walltime.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("protocol", type=Path, help="the protocol file (YAML)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--pilot", action="store_true", help="run the pilot seeds (allowed before the lock)")
    mode.add_argument("--power", action="store_true", help="estimate the power from the pilots (power.json)")
    mode.add_argument("--lock", action="store_true", help="write the lock and stop")
    mode.add_argument("--report", action="store_true", help="write the report from the records present")
    mode.add_argument("--status", action="store_true",
                      help="the study's progress, blind to its results: cells finished and under way, time left")
    parser.add_argument("--jobs", type=int, default=1, help="cells side by side, each its own process (default 1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS (and so torch threads) per cell (default: cores / jobs)")
    parser.add_argument("--nice", type=int, default=None, help="run the cells under nice -n N")
    parser.add_argument("--save-every", type=int, default=None, metavar="N",
                        help="checkpoint every N steps, so an interrupted cell resumes where it was")
    parser.add_argument("--keep-checkpoints", action="store_true",
                        help="keep a finished cell's checkpoints (by default removed once its record is written)")
    parser.add_argument("--until", default=None, metavar="WHEN",
                        help="a local time HH:MM or a duration (90m, 2h, 1h30m): start no cell expected to end "
                             "after it (timed by the slowest finished cell), stop the running ones at it")
    parser.add_argument("--arms", nargs="+", default=None, help="only these arms' cells")
    parser.add_argument("--runs", type=Path, default=None,
                        help="the trainer's directories (default runs/compare/<name>; not committed)")
    parser.add_argument("--no-power", action="store_true", help="lock without a power estimate")


def run(args: argparse.Namespace) -> int:
    import os
    from datetime import datetime

    from botgrpo.compare import study
    from botgrpo.compare.protocol import load
    from botgrpo.compare.run import Deadline

    protocol = load(args.protocol)
    layout = study.layout_for(protocol, args.runs)
    if args.jobs < 1:
        raise SystemExit("botgrpo compare: --jobs must be at least 1")
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.jobs)
    try:
        until = Deadline.parse(args.until, datetime.now()).at if args.until is not None else None
    except ValueError as exc:
        raise SystemExit(f"botgrpo compare: {exc}") from None
    options = study.Options(jobs=args.jobs, threads=threads, nice=args.nice, save_every=args.save_every,
                            arms=args.arms, until=until, keep_checkpoints=args.keep_checkpoints)
    out = sys.stdout
    try:
        return _run(args, protocol, layout, options, out)
    except KeyboardInterrupt:
        print("botgrpo compare: interrupted; the unfinished cells start again (or resume) on the next run",
              file=sys.stderr)
        return 130


def _run(args: argparse.Namespace, protocol, layout, options, out) -> int:
    from botgrpo.compare import study

    if args.pilot:
        return study.pilot(protocol, layout, options, out)
    if args.power:
        from botgrpo.compare.report import power_lines

        data = study.estimate_power(protocol, layout)
        print("\n".join(power_lines(protocol, data)), file=out)
        print(f"written: {layout.results / study.POWER} (locked with the protocol by --lock or the study's first run)",
              file=out)
        return 0
    if args.lock:
        held = study.lock(protocol, layout, require_power=not args.no_power)
        print(f"locked: {layout.results / 'lock.json'} (protocol {held.protocol_hash[:16]}, commit {held.commit[:12]}"
              + ("" if held.protocol_committed else "; the protocol file is NOT committed: commit it with the lock")
              + ")", file=out)
        return 0
    if args.report:
        study.report(protocol, layout, out)
        return 0
    if args.status:
        study.status(protocol, layout, out, args.jobs)
        return 0
    return study.study(protocol, layout, options, out, require_power=not args.no_power)
