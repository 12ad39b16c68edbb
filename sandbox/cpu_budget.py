"""A task's time budget counted in CPU time of the process that does it.

A rollout must not fail because the machine is busy, and a hostile input computes: so a budget is
the CPU time (user + system, every thread: /proc/PID/stat) the worker process uses on the task,
and a wall-clock backstop :data:`WALL_FACTOR` times the budget still ends a task that stalls
without computing. A budget under two clock ticks cannot be measured in CPU time and stays wall
time, as does every budget where /proc cannot be read. The Node workers time their tsgo and oxlint
runs the same way (``sandbox/node/lib/cpu-budget.mjs``, the same factor).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

#: The wall-clock backstop, in budgets: a task that gets a fifth of a core (load 10 on 2 cores)
#: still finishes within it.
WALL_FACTOR = 5
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
POLL_S = 0.02  # how often a waiting caller looks at the CPU time


def cpu_time_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) process ``pid`` has used; None if unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_S
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class CpuBudget:
    """``budget_s`` of process ``pid``'s CPU time from :meth:`start`, or the wall-clock backstop."""

    pid: int
    budget_s: float
    cpu_start: float | None
    wall_end: float

    @classmethod
    def start(cls, pid: int, budget_s: float) -> "CpuBudget":
        cpu = cpu_time_s(pid) if budget_s >= 2 * _TICK_S else None
        factor = WALL_FACTOR if cpu is not None else 1
        return cls(pid, budget_s, cpu, time.monotonic() + factor * budget_s)

    def spent(self) -> bool:
        """True once the budget is used up (CPU time) or the backstop has passed (wall time)."""
        if time.monotonic() >= self.wall_end:
            return True
        if self.cpu_start is None:
            return False
        now = cpu_time_s(self.pid)
        return now is not None and now - self.cpu_start >= self.budget_s

    def wait_s(self) -> float:
        """How long to wait before looking again."""
        remaining = max(0.0, self.wall_end - time.monotonic())
        return remaining if self.cpu_start is None else min(POLL_S, remaining)
