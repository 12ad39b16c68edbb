"""Run pytest with CPU-bound jobs beside it: the suite must pass on a busy machine.

    python -m tests.loaded [--burners N] [pytest args ...]     # or: make test-loaded

Starts ``N`` (default 2) processes that spin on one core each, runs pytest with the remaining
arguments in this interpreter's environment, stops the burners (by their process ids) and exits
with pytest's status. The load average before and after is printed, so a run says how busy the
machine was. Time limits in tests and in the sandbox must hold at this load: a budget is CPU
time, a ratio to a baseline taken in the same test, or wall time with a margin for a load of 4
on 2 cores (docs/security.md, "Time budgets are CPU time"; docs/troubleshooting.md).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

SPIN = "while True: pass"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside the suite (default 2)")
    args, pytest_args = parser.parse_known_args(argv)
    burners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.burners)]
    print(f"[loaded] {len(burners)} burners (pids {' '.join(str(b.pid) for b in burners)}); before: {load()}", flush=True)
    try:
        return subprocess.call([sys.executable, "-m", "pytest", *pytest_args])
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        print(f"[loaded] burners stopped; after: {load()}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
