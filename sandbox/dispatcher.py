"""Per-worker dispatcher: pulls jobs from the pool's shared queue, runs them on one worker
process, and turns every worker failure into failing results plus a restart.

Failure policy: when a batch fails as a whole we cannot tell which file caused it (except for
an oversized response, which carries its id), so the worker is restarted and each unanswered
job is re-run alone. A solo job that fails again gets ``timed_out``/``crashed`` set. This costs
one extra timeout for a pathological file but never fails innocent neighbours. A job that was
alone when its worker crashed is re-run once too: the worker may have died before the job
reached it (an external kill), and an innocent file must not take the blame.

Poisoned workers: a worker whose compiler service died (esbuild's Go process out of memory,
tsgo unable to check a known-good file) answers with ``poisoned`` instead of a verdict, for
that request and every later one. The dispatcher replaces it at once and re-runs those jobs
alone on the fresh worker; a job that poisons the fresh worker too gets a failing, ``crashed``
result naming the reason ("Compiler ran out of memory on this input"). No verdict ever comes
from a poisoned service.

Totality: nothing a job contains can end a dispatcher thread or leave a future unresolved.
Any exception while running a batch becomes a failing result for the jobs it left open, the
worker is replaced (its state is unknown), and the loop goes on.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import Counter
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.launcher import NODE_DIR
from botgrpo.sandbox.results import CompileResult, failure, from_response
from botgrpo.sandbox.worker_process import (
    ResponseTooLarge,
    WorkerCrashed,
    WorkerError,
    WorkerProcess,
    WorkerTimeout,
)

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 15.0
_RESTART_BACKOFF_S = 0.5
COUNTERS = ("restarts", "poisoned", "timeouts", "crashes", "too_large", "recycled",
            "spawn_failures", "dispatcher_errors")


class PoolStats:
    """Thread-safe event counters shared by a pool's dispatchers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {name: self._counts[name] for name in COUNTERS}


@dataclass
class Job:
    """One file to compile and the Future its caller waits on."""

    code: str
    level: str
    allow: tuple[str, ...]
    future: Future
    extra: dict[str, Any] = field(default_factory=dict)
    budget_s: float = 0.0  # time the job may take beyond a compile (a render's own timeout)

    def request(self, request_id: str) -> dict[str, Any]:
        return {"id": request_id, "code": self.code, "level": self.level,
                "allow": list(self.allow), **self.extra}

    def resolve(self, result: CompileResult) -> None:
        try:
            if not self.future.done():
                self.future.set_result(result)
        except InvalidStateError:  # cancelled (or resolved) by someone else meanwhile
            pass


def _poison_reason(signals: frozenset[str], worker_reason: str) -> str:
    if "out_of_memory" in signals:
        return "Compiler ran out of memory on this input"
    if "stack_overflow" in signals:
        return "Compiler ran out of stack on this input (nested too deeply)"
    return f"Compiler failed on this input ({worker_reason[:200]})"


class WorkerSlot:
    """Owns one worker process and the thread that feeds it."""

    def __init__(self, name: str, jobs: "queue.Queue[Job | None]", layers: frozenset[str],
                 config: iso.IsolationConfig, timeout_s: float, *, max_response_bytes: int,
                 max_batch: int, max_requests_per_worker: int,
                 extra_env: dict[str, str], stats: PoolStats | None = None, workers: int = 1) -> None:
        self.name = name
        self._jobs = jobs
        self._layers = layers
        self._config = config
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._max_batch = max_batch
        self._workers = max(1, workers)  # dispatchers sharing the queue: each takes a fair share
        self._max_requests = max_requests_per_worker
        self._extra_env = extra_env
        self._stats = stats or PoolStats()
        self._ids = itertools.count()
        self._worker: WorkerProcess | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._spawn_failed = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (raising if it cannot start) and the dispatcher thread."""
        self._worker = self._spawn()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._timeout_s * 2 + 5)
        if self._worker is not None:
            self._worker.kill()

    def healthy(self) -> bool:
        """The slot can serve: its dispatcher runs and its last worker start did not fail.
        A worker being replaced (after a crash, a timeout or a poisoned service) counts as
        healthy: jobs wait for the fresh worker, which starts within a fraction of a second."""
        thread_ok = self._thread is not None and self._thread.is_alive()
        return thread_ok and not self._spawn_failed

    def pid(self) -> int | None:
        worker = self._worker
        return worker.pid if worker is not None and worker.alive() else None

    def scratch_dir(self) -> str | None:
        worker = self._worker
        return worker.host_tmp if worker is not None else None

    def _spawn(self) -> WorkerProcess:
        worker = WorkerProcess(self._layers, self._config,
                               max_response_bytes=self._max_response_bytes,
                               extra_env=self._extra_env)
        try:
            worker.wait_ready(READY_TIMEOUT_S)
        except BaseException:
            worker.kill()
            raise
        return worker

    def _discard_worker(self, reason: str) -> frozenset[str]:
        """Kill the current worker (counted as a restart); return what its stderr showed."""
        worker, self._worker = self._worker, None
        if worker is None:
            return frozenset()
        log.warning("%s: restarting node worker (%s)", self.name, reason)
        self._stats.add("restarts")
        try:
            worker.kill()
        except Exception:  # noqa: BLE001 - a failed kill must not stop the replacement
            log.exception("%s: killing the worker failed", self.name)
        return worker.stderr_signals()

    def _restart(self, reason: str) -> frozenset[str]:
        signals = self._discard_worker(reason)
        self._ensure_worker()
        return signals

    def _ensure_worker(self) -> WorkerProcess | None:
        """Return a live worker, replacing a dead one; None if a new one cannot start."""
        if self._worker is not None and self._worker.alive():
            return self._worker
        if self._worker is not None:
            self._stats.add("crashes")
            self._discard_worker("worker exited")
        if self._stopping.is_set():
            return None
        try:
            self._worker = self._spawn()
            self._spawn_failed = False
        except Exception as error:  # noqa: BLE001 - OSError, WorkerError, a bad launcher, ...
            log.error("%s: node worker failed to start: %s", self.name, error)
            self._stats.add("spawn_failures")
            self._spawn_failed = True
            time.sleep(_RESTART_BACKOFF_S)
        return self._worker

    # -- dispatch loop -------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._jobs.get(timeout=0.25)
            except queue.Empty:
                self._guarded(self._ensure_worker, [])  # replace workers killed while idle, early
                continue
            if job is None:
                return
            batch = self._fill_batch(job)
            self._guarded(lambda: self._run(batch), batch)

    def _guarded(self, action, batch: list[Job]) -> None:
        """Run ``action``; an exception fails the batch's open jobs, never the thread."""
        try:
            action()
        except Exception as error:  # noqa: BLE001 - a dispatcher must outlive any one batch
            log.exception("%s: internal error while dispatching", self.name)
            self._stats.add("dispatcher_errors")
            message = f"Internal sandbox error ({type(error).__name__})"
            for job in batch:
                job.resolve(failure(job.code, message, crashed=True))
            try:
                self._restart("internal dispatcher error")
            except Exception:  # noqa: BLE001
                log.exception("%s: restart after an internal error failed", self.name)

    def _fill_batch(self, first: Job) -> list[Job]:
        """``first`` and, without waiting, more queued jobs: up to ``max_batch`` and no more than
        a fair share of the queue (its length over the number of workers, rounded up), so one
        worker never takes a run of slow jobs while the others have nothing to do."""
        share = -(-(self._jobs.qsize() + 1) // self._workers)
        batch = [first]
        while len(batch) < min(self._max_batch, share):
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:  # shutdown sentinel belongs to whoever reads it next
                self._jobs.put(None)
                break
            batch.append(job)
        return batch

    def _redactions(self, worker: WorkerProcess | None) -> tuple[tuple[str, str], ...]:
        paths = [(str(NODE_DIR), "<sandbox>")]
        if worker is not None and worker.host_tmp:
            paths.insert(0, (worker.host_tmp, "<tmp>"))
        return tuple(paths)

    def _convert(self, job: Job, response: dict[str, Any], elapsed: float,
                 worker: WorkerProcess | None) -> CompileResult:
        try:
            return from_response(job.code, response, elapsed, self._redactions(worker))
        except Exception as error:  # noqa: BLE001 - a malformed response fails its job only
            log.exception("%s: could not convert a worker response", self.name)
            self._stats.add("dispatcher_errors")
            return failure(job.code, f"Internal sandbox error ({type(error).__name__})", elapsed,
                           crashed=True)

    def _run(self, batch: list[Job], *, retry: bool = False) -> None:
        """Run ``batch``; ``retry`` marks a job re-run alone after a failure of its first run."""
        if self._stopping.is_set():
            for job in batch:
                job.resolve(failure(job.code, "Compile pool closed", crashed=True))
            return
        worker = self._ensure_worker()
        if worker is None:
            for job in batch:
                job.resolve(failure(job.code, "Compiler worker could not start", crashed=True))
            return
        by_id = {f"{self.name}-{next(self._ids)}": job for job in batch}
        started = time.monotonic()
        total_timeout = self._timeout_s * (1 if len(batch) == 1 else 2) + sum(job.budget_s for job in batch)
        # a typecheck answer may take two tsgo runs plus a probe (a batch's timed-out run, then
        # its own: lib/typecheck.mjs), a lint its batch's oxlint run; only silence past that says
        # the worker itself is stuck
        idle_timeout = self._timeout_s + max((job.budget_s for job in batch if job.level == "typecheck" or job.extra.get("lint")),
                                             default=0.0)

        def answer_early(request_id: str, response: dict[str, Any]) -> None:
            # each job's answer as it arrives: an innocent file does not wait for a slow neighbour
            job = by_id.get(request_id)
            if job is not None and not response.get("poisoned"):
                job.resolve(self._convert(job, response, time.monotonic() - started, worker))

        try:
            responses = worker.exchange([job.request(i) for i, job in by_id.items()],
                                        idle_timeout_s=idle_timeout,
                                        total_timeout_s=total_timeout, on_response=answer_early)
        except WorkerError as error:
            self._recover(by_id, error, time.monotonic() - started, retry)
            return
        elapsed = time.monotonic() - started
        poisoned: list[tuple[Job, str]] = []
        for request_id, job in by_id.items():
            response = responses[request_id]
            if response.get("poisoned"):
                poisoned.append((job, str(response["poisoned"])))
            elif not job.future.done():
                job.resolve(self._convert(job, response, elapsed, worker))
        if poisoned:
            self._after_poisoning(poisoned, elapsed, retry)
        elif worker.requests_served >= self._max_requests:
            self._stats.add("recycled")
            self._restart("request budget reached")  # keeps RLIMIT_CPU a distant backstop

    def _after_poisoning(self, poisoned: list[tuple[Job, str]], elapsed: float, retry: bool) -> None:
        self._stats.add("poisoned")
        # The replacement starts when the next job needs it (a re-run below, or the idle
        # loop), so a failing answer does not wait for a worker start.
        signals = self._discard_worker(f"compiler service failed: {poisoned[0][1][:200]}")
        for job, worker_reason in poisoned:
            if retry:  # it poisoned a fresh worker on its own: it is the input
                job.resolve(failure(job.code, _poison_reason(signals, worker_reason), elapsed,
                                    crashed=True))
            else:
                self._run([job], retry=True)

    def _recover(self, by_id: dict[str, Job], error: WorkerError, elapsed: float,
                 retry: bool) -> None:
        if isinstance(error, WorkerTimeout):
            self._stats.add("timeouts")
        elif isinstance(error, ResponseTooLarge):
            self._stats.add("too_large")
        else:
            self._stats.add("crashes")
        signals = self._discard_worker(str(error))  # replaced by the next _ensure_worker()
        for request_id, response in error.responses.items():
            job = by_id.get(request_id)
            if job is not None and not response.get("poisoned"):
                del by_id[request_id]
                if not job.future.done():
                    job.resolve(self._convert(job, response, elapsed, None))
        if isinstance(error, ResponseTooLarge) and error.request_id in by_id:
            job = by_id.pop(error.request_id)
            job.resolve(failure(job.code, f"Compiler output too large: {error}", elapsed))
        # A lone job is guilty of a timeout or an oversized answer, but not of every crash: its
        # worker may have died before the job reached it (killed from outside between the
        # liveness check and the write), so a crash earns it one run alone on a fresh worker.
        if retry or (len(by_id) == 1 and not isinstance(error, WorkerCrashed)):
            for job in by_id.values():
                job.resolve(self._failure_for(job, error, elapsed, signals))
            return
        for job in by_id.values():
            self._run([job], retry=True)

    def _failure_for(self, job: Job, error: WorkerError, elapsed: float,
                     signals: frozenset[str]) -> CompileResult:
        if isinstance(error, WorkerTimeout):
            return failure(job.code, f"Compilation timed out after {self._timeout_s:.1f}s",
                           elapsed, timed_out=True, over_budget="time")
        if isinstance(error, ResponseTooLarge):
            return failure(job.code, f"Compiler output too large: {error}", elapsed)
        if signals:
            return failure(job.code, _poison_reason(signals, str(error)), elapsed, crashed=True)
        return failure(job.code, f"Compiler worker crashed: {error}", elapsed, crashed=True)
