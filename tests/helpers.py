"""Shared test helpers."""
import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_host(available: bool, what: str) -> None:
    """Skip a test whose host tool is missing, except in CI, where the missing tool is a failure:
    CI installs everything the suite needs, so a skip there would hide a broken setup."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI (CI=true) but is not available on this host")
    pytest.skip(f"{what} not available on this host")


def queue_result(item, **details):
    """A minimal :class:`Result` for queue tests: ``details`` carries what the test checks."""
    from botgrpo.services.schemas import Result
    return Result(id=str(item.index), index=item.index, score=0.0, token_scores=[], details=details)


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (field 3, the state, first)."""
    from pathlib import Path
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, from /proc's parent links."""
    import contextlib
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat_fields(int(entry))[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used by ``pid`` and everything below it, reaped children included (user +
    system, /proc fields 14-17): what a process tree computed, however busy the machine was."""
    import contextlib
    ticks = 0
    for each in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError, IndexError):
            ticks += sum(int(x) for x in _stat_fields(each)[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def frozen(pid: int, seconds: float):
    """A context manager: ``pid`` gets no CPU from entry until ``seconds`` after the body ends
    (SIGSTOP, then SIGCONT), which is what a process sees on a machine so busy that it waits that
    long for a core. A process killed meanwhile (by a wall-clock budget) is left alone."""
    import contextlib
    import signal
    import time

    @contextlib.contextmanager
    def stopped():
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
            time.sleep(seconds)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    return stopped()
