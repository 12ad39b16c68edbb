"""Shared test helpers."""
import os

import pytest

from botgrpo.processes import descendants, tree_cpu_s  # noqa: F401 - the tests' CPU readings

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
