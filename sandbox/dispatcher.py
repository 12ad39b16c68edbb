"""Per-worker dispatcher: pulls jobs from the pool's shared queue, runs them on one worker
process, and turns every worker failure into failing results plus a restart.

Failure policy: when a batch fails as a whole we cannot tell which file caused it (except for
an oversized response, which carries its id), so the worker is restarted and each unanswered
job is re-run alone. A solo job that fails again gets ``timed_out``/``crashed`` set. This costs
one extra timeout for a pathological file but never fails innocent neighbours.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sandbox import isolation as iso
from sandbox.results import CompileResult, failure, from_response
from sandbox.worker_process import (
    ResponseTooLarge,
    WorkerError,
    WorkerProcess,
    WorkerTimeout,
)

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 15.0
_RESTART_BACKOFF_S = 0.5


@dataclass
class Job:
    """One file to compile and the Future its caller waits on."""

    code: str
    level: str
    allow: tuple[str, ...]
    future: Future
    extra: dict[str, Any] = field(default_factory=dict)

    def request(self, request_id: str) -> dict[str, Any]:
        return {"id": request_id, "code": self.code, "level": self.level,
                "allow": list(self.allow), **self.extra}

    def resolve(self, result: CompileResult) -> None:
        if not self.future.done():
            self.future.set_result(result)


class WorkerSlot:
    """Owns one worker process and the thread that feeds it."""

    def __init__(self, name: str, jobs: "queue.Queue[Job | None]", layers: frozenset[str],
                 config: iso.IsolationConfig, timeout_s: float, *, max_response_bytes: int,
                 max_batch: int, max_requests_per_worker: int,
                 extra_env: dict[str, str]) -> None:
        self.name = name
        self._jobs = jobs
        self._layers = layers
        self._config = config
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes
        self._max_batch = max_batch
        self._max_requests = max_requests_per_worker
        self._extra_env = extra_env
        self._ids = itertools.count()
        self._worker: WorkerProcess | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

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
        worker = self._worker
        thread_ok = self._thread is not None and self._thread.is_alive()
        return thread_ok and worker is not None and worker.alive()

    def pid(self) -> int | None:
        worker = self._worker
        return worker.pid if worker is not None and worker.alive() else None

    def _spawn(self) -> WorkerProcess:
        worker = WorkerProcess(self._layers, self._config,
                               max_response_bytes=self._max_response_bytes,
                               extra_env=self._extra_env)
        try:
            worker.wait_ready(READY_TIMEOUT_S)
        except WorkerError:
            worker.kill()
            raise
        return worker

    def _restart(self, reason: str) -> None:
        log.warning("%s: restarting node worker (%s)", self.name, reason)
        if self._worker is not None:
            self._worker.kill()
        self._worker = None
        self._ensure_worker()

    def _ensure_worker(self) -> WorkerProcess | None:
        """Return a live worker, replacing a dead one; None if a new one cannot start."""
        if self._worker is not None and self._worker.alive():
            return self._worker
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
        try:
            self._worker = self._spawn()
        except (OSError, WorkerError) as error:
            log.error("%s: node worker failed to start: %s", self.name, error)
            time.sleep(_RESTART_BACKOFF_S)
        return self._worker

    # -- dispatch loop -------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._jobs.get(timeout=0.25)
            except queue.Empty:
                self._ensure_worker()  # notice workers killed while idle, restart them early
                continue
            if job is None:
                return
            self._run(self._fill_batch(job))

    def _fill_batch(self, first: Job) -> list[Job]:
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:  # shutdown sentinel belongs to whoever reads it next
                self._jobs.put(None)
                break
            batch.append(job)
        return batch

    def _run(self, batch: list[Job]) -> None:
        worker = self._ensure_worker()
        if worker is None:
            for job in batch:
                job.resolve(failure(job.code, "Compiler worker could not start", crashed=True))
            return
        by_id = {f"{self.name}-{next(self._ids)}": job for job in batch}
        started = time.monotonic()
        total_timeout = self._timeout_s * (1 if len(batch) == 1 else 2)
        try:
            responses = worker.exchange([job.request(i) for i, job in by_id.items()],
                                        idle_timeout_s=self._timeout_s,
                                        total_timeout_s=total_timeout)
        except WorkerError as error:
            self._recover(by_id, error, time.monotonic() - started)
            return
        elapsed = time.monotonic() - started
        for request_id, job in by_id.items():
            job.resolve(from_response(job.code, responses[request_id], elapsed))
        if worker.requests_served >= self._max_requests:
            self._restart("request budget reached")  # keeps RLIMIT_CPU a distant backstop

    def _recover(self, by_id: dict[str, Job], error: WorkerError, elapsed: float) -> None:
        self._restart(str(error))
        for request_id, response in error.responses.items():
            job = by_id.pop(request_id, None)
            if job is not None:
                job.resolve(from_response(job.code, response, elapsed))
        if isinstance(error, ResponseTooLarge) and error.request_id in by_id:
            job = by_id.pop(error.request_id)
            job.resolve(failure(job.code, f"Compiler output too large: {error}", elapsed))
        if len(by_id) == 1:
            (job,) = by_id.values()
            job.resolve(self._failure_for(job, error, elapsed))
            return
        for job in by_id.values():
            self._run([job])

    def _failure_for(self, job: Job, error: WorkerError, elapsed: float) -> CompileResult:
        if isinstance(error, WorkerTimeout):
            return failure(job.code, f"Compilation timed out after {self._timeout_s:.1f}s",
                           elapsed, timed_out=True)
        if isinstance(error, ResponseTooLarge):
            return failure(job.code, f"Compiler output too large: {error}", elapsed)
        return failure(job.code, f"Compiler worker crashed: {error}", elapsed, crashed=True)
