"""A killable pool of warm worker processes for CPU work on untrusted input.

Why processes, and why killable: some libraries cannot be interrupted from the outside of the
thread running them. ``math-verify`` bounds its own work with ``SIGALRM`` (main thread only) and
sympy's parser ends in ``eval``; a pathological answer can pin a CPU for minutes. The only
reliable bound is a separate process that is SIGKILLed when its budget is spent. So:

* every worker is a ``spawn``-ed process (never ``fork``: the caller is usually a threaded server,
  and forking a process that holds locks in other threads can deadlock the child);
* each worker is *driven* by one thread of the pool that owns its pipe. The driver takes a small
  batch of tasks from a shared queue, sends it in one message, and then waits for the results one
  by one, each under its own budget counted from the moment the worker could start it, in the
  worker's CPU time (a busy machine slows a task down but does not time it out), with a wall-clock
  backstop for a task that stalls (:mod:`botgrpo.sandbox.cpu_budget`);
* a worker past a budget is killed and replaced (the replacement runs the initializer again, so
  the start-up cost is paid once per worker life, not per task); the late task resolves to a
  timeout outcome and the tasks batched after it are re-run on the replacement;
* nothing a task does raises into the caller: every future resolves to a :class:`TaskOutcome`.

Tasks name a module-level function (``spawn`` pickles functions by reference), so a test can use
any importable function, e.g. one that sleeps forever.

From asyncio: ``await asyncio.wrap_future(pool.submit(fn, x))``, or ``await pool.amap(...)``.

This bounds *time* and *memory*: every worker runs under an address-space limit (``RLIMIT_AS``,
:data:`DEFAULT_MEMORY_LIMIT_MB` = 1024 MiB unless the pool is given another, or
``BOTGRPO_POOL_MEMORY_MB`` says otherwise; 0 or ``memory_limit_mb=None`` lifts it), so a task
that grows without bound (sympy asked for ``(2^{9999})^{9999}``) fails with ``MemoryError``
instead of taking the host's memory with it. It is not a security boundary. Workers run as the
caller's user and results come back pickled, so code that might be hostile (rather than merely
slow) belongs in a real sandbox.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import multiprocessing
import os
import pickle
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from botgrpo.sandbox.cpu_budget import CpuBudget

logger = logging.getLogger(__name__)

TIMEOUT = "timeout"
WORKER_DIED = "worker died"
POOL_CLOSED = "pool closed"
DEFAULT_MEMORY_LIMIT_MB = 1024


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()  # ``memory_limit_mb`` not given: see :func:`default_memory_limit_mb`


def default_memory_limit_mb() -> int | None:
    """The address-space limit of a pool's workers when none is given: ``BOTGRPO_POOL_MEMORY_MB``
    if set (0: none), else :data:`DEFAULT_MEMORY_LIMIT_MB`."""
    raw = os.environ.get("BOTGRPO_POOL_MEMORY_MB", "").strip()
    if not raw:
        return DEFAULT_MEMORY_LIMIT_MB
    value = int(raw)
    if value < 0:
        raise ValueError(f"BOTGRPO_POOL_MEMORY_MB must be >= 0, got {raw!r}")
    return value or None


@dataclass(frozen=True)
class TaskOutcome:
    """How one task ended: a ``value``, or an ``error`` (``"timeout"``, ``"worker died"``,
    ``"pool closed"`` or ``"<ExceptionType>: <message>"`` raised by the task)."""

    value: Any = None
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def timed_out(self) -> bool:
        return self.error == TIMEOUT


@dataclass
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float
    future: Future


# ---------------------------------------------------------------------------------------------
# Worker side (runs in the spawned process)
# ---------------------------------------------------------------------------------------------


def _run_one(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, str | None, float]:
    started = time.perf_counter()
    try:
        value = fn(*args)
        error = None
    except BaseException as exc:  # noqa: BLE001 - a task's failure is data, not a crash
        value, error = None, f"{type(exc).__name__}: {str(exc)[:200]}"
    return value, error, time.perf_counter() - started


def _send_result(conn: Connection, result: tuple[Any, str | None, float]) -> None:
    try:
        conn.send(result)
    except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable return value
        conn.send((None, f"unpicklable result: {type(exc).__name__}", result[2]))


def _worker_main(conn: Connection, initializer: Callable[[], Any] | None, memory_mb: int | None) -> None:
    """Run batches ``[(fn, args), ...]`` from ``conn``; answer each task as soon as it ends."""
    if memory_mb:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if initializer is not None:
        initializer()
    conn.send("ready")
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        for fn, args in batch:
            _send_result(conn, _run_one(fn, args))


# ---------------------------------------------------------------------------------------------
# Pool side
# ---------------------------------------------------------------------------------------------


class _Worker:
    """One live process and the parent's end of its pipe."""

    def __init__(self, ctx, initializer, memory_mb: int | None, start_timeout_s: float) -> None:
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=_worker_main, args=(child_conn, initializer, memory_mb), daemon=True
        )
        self.process.start()
        child_conn.close()
        if not self.conn.poll(start_timeout_s) or self.conn.recv() != "ready":
            self.kill()
            raise RuntimeError("worker failed to start")

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(timeout=2)
        self.kill()


class ProcessPool:
    """A fixed number of warm, spawned worker processes with per-task hard deadlines.

    Thread-safe: ``submit`` and ``map`` may be called from any thread. ``close`` (or leaving a
    ``with`` block) stops the workers; tasks still queued resolve to ``"pool closed"``.

    ``initializer`` runs once in every new worker (imports, caches); ``default_timeout_s`` is the
    deadline of a task submitted without one; ``max_batch`` caps the tasks sent in one message;
    ``memory_limit_mb`` sets ``RLIMIT_AS`` in each worker, so a runaway allocation becomes a
    ``MemoryError`` outcome instead of a host-wide problem; by default
    :func:`default_memory_limit_mb` (1024 MiB), ``None`` for no limit.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        initializer: Callable[[], Any] | None = None,
        default_timeout_s: float = 5.0,
        max_batch: int = 16,
        start_timeout_s: float = 120.0,
        memory_limit_mb: int | None | _Default = DEFAULT,
    ) -> None:
        if size < 1 or max_batch < 1 or default_timeout_s <= 0:
            raise ValueError("size, max_batch and default_timeout_s must be positive")
        if isinstance(memory_limit_mb, _Default):
            memory_limit_mb = default_memory_limit_mb()
        if memory_limit_mb is not None and memory_limit_mb < 1:
            raise ValueError("memory_limit_mb must be positive (None: no limit)")
        self._ctx = multiprocessing.get_context("spawn")
        self._initializer = initializer
        self._memory_mb = memory_limit_mb
        self.memory_limit_mb = memory_limit_mb
        self._start_timeout_s = start_timeout_s
        self.size = size
        self.default_timeout_s = default_timeout_s
        self.max_batch = max_batch
        self._queue: queue.Queue[_Task | None] = queue.Queue()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._restarts = 0
        self._workers: list[_Worker | None] = [None] * size
        self._drivers = [
            threading.Thread(target=self._drive, args=(i,), name=f"process-pool-{i}", daemon=True)
            for i in range(size)
        ]
        self._start_workers()
        for thread in self._drivers:
            thread.start()

    # -- public API ----------------------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], *args: Any, timeout_s: float | None = None) -> Future:
        """Queue ``fn(*args)``; the future resolves to a :class:`TaskOutcome`, never raises."""
        future: Future = Future()
        limit = self.default_timeout_s if timeout_s is None else timeout_s
        with self._lock:  # close() cannot slip between the check and the put
            if not self._closed.is_set():
                self._queue.put(_Task(fn, args, max(limit, 1e-3), future))
                return future
        future.set_result(TaskOutcome(error=POOL_CLOSED))
        return future

    def map(
        self, fn: Callable[..., Any], arg_tuples: Iterable[Sequence[Any]], timeout_s: float | None = None
    ) -> list[TaskOutcome]:
        """Run ``fn(*args)`` for every tuple, in parallel; outcomes in input order."""
        futures = [self.submit(fn, *args, timeout_s=timeout_s) for args in arg_tuples]
        return [f.result() for f in futures]

    async def amap(
        self, fn: Callable[..., Any], arg_tuples: Iterable[Sequence[Any]], timeout_s: float | None = None
    ) -> list[TaskOutcome]:
        """``map`` for asyncio callers: awaits without blocking the event loop."""
        futures = [asyncio.wrap_future(self.submit(fn, *a, timeout_s=timeout_s)) for a in arg_tuples]
        return list(await asyncio.gather(*futures))

    def stats(self) -> dict[str, int]:
        """Live workers, replacements so far (timeouts and crashes), and queued tasks."""
        with self._lock:
            alive = sum(1 for w in self._workers if w is not None and w.process.is_alive())
            return {"alive": alive, "restarts": self._restarts, "queued": self._queue.qsize()}

    def close(self) -> None:
        """Stop accepting work, fail queued tasks, stop the workers. Idempotent."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
        for _ in self._drivers:
            self._queue.put(None)
        for thread in self._drivers:
            thread.join(timeout=30)
        self._fail_queued()

    def __enter__(self) -> ProcessPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------

    def _start_workers(self) -> None:
        """Start all workers concurrently: the initializer (imports) is the slow part."""
        starters = [threading.Thread(target=self._replace, args=(i,)) for i in range(self.size)]
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()

    def _retire(self, slot: int) -> None:
        """Kill the slot's worker (past a deadline, or dead) and count the replacement."""
        with self._lock:
            old, self._workers[slot] = self._workers[slot], None
            self._restarts += 1
        if old is not None:
            old.kill()

    def _replace(self, slot: int) -> _Worker | None:
        """Start a fresh worker in ``slot`` (``None``, logged, if it cannot start)."""
        try:
            worker = _Worker(self._ctx, self._initializer, self._memory_mb, self._start_timeout_s)
        except Exception:  # noqa: BLE001 - the driver retries on its next batch
            logger.exception("process pool: could not start worker %d", slot)
            worker = None
        with self._lock:
            self._workers[slot] = worker
        return worker

    def _next_batch(self) -> list[_Task] | None:
        """One blocking take, plus a fair share of whatever else is already queued."""
        first = self._queue.get()
        if first is None:
            return None
        batch = [first]
        extra = min(self.max_batch - 1, self._queue.qsize() // self.size)
        for _ in range(extra):
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                break
            if task is None:  # a close() sentinel: give it back to whoever reads next
                self._queue.put(None)
                break
            batch.append(task)
        return [t for t in batch if t.future.set_running_or_notify_cancel()]

    def _drive(self, slot: int) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                break
            while batch:
                try:
                    batch = self._run_batch(slot, batch)
                except Exception:  # noqa: BLE001 - a driver must outlive any one batch
                    logger.exception("process pool: driver %d failed a batch", slot)
                    self._abandon(slot, batch)
                    batch = []
        worker = self._workers[slot]
        if worker is not None:
            worker.stop()

    def _run_batch(self, slot: int, batch: list[_Task]) -> list[_Task]:
        """Run ``batch`` on the slot's worker; return the tasks that still need a worker."""
        worker = self._workers[slot] or self._replace(slot)
        if worker is None:
            for task in batch:
                task.future.set_result(TaskOutcome(error=WORKER_DIED))
            return []
        try:
            worker.conn.send([(t.fn, t.args) for t in batch])
        except Exception as exc:  # noqa: BLE001 - e.g. unpicklable arguments
            for task in batch:
                task.future.set_result(TaskOutcome(error=f"could not send task: {type(exc).__name__}"))
            if isinstance(exc, OSError):
                self._retire(slot)
                self._replace(slot)
            return []
        for index, task in enumerate(batch):
            started = time.perf_counter()
            outcome = self._await_result(worker, task.timeout_s)
            if outcome is None or outcome.error == WORKER_DIED:
                elapsed = time.perf_counter() - started
                error = TIMEOUT if outcome is None else WORKER_DIED
                self._retire(slot)
                task.future.set_result(TaskOutcome(error=error, elapsed_s=elapsed))
                self._replace(slot)
                return batch[index + 1 :]
            task.future.set_result(outcome)
        return []

    def _abandon(self, slot: int, batch: list[_Task]) -> None:
        """Resolve what is left of a batch after an unexpected error; start afresh."""
        for task in batch:
            if not task.future.done():
                task.future.set_result(TaskOutcome(error=WORKER_DIED))
        self._retire(slot)
        self._replace(slot)

    @staticmethod
    def _await_result(worker: _Worker, timeout_s: float) -> TaskOutcome | None:
        """The next result, ``None`` once the worker has used ``timeout_s`` of CPU time on it (or
        past the wall-clock backstop: :mod:`~botgrpo.sandbox.cpu_budget`), or a ``"worker died"``
        outcome."""
        budget = CpuBudget.start(worker.process.pid, timeout_s)
        try:
            while not worker.conn.poll(budget.wait_s()):
                if budget.spent():
                    return None
            payload = worker.conn.recv_bytes()
        except (EOFError, OSError):
            return TaskOutcome(error=WORKER_DIED)
        try:
            value, error, elapsed = pickle.loads(payload)
        except Exception as exc:  # noqa: BLE001 - e.g. a result class this process lacks
            return TaskOutcome(error=f"unreadable result: {type(exc).__name__}")
        return TaskOutcome(value=value, error=error, elapsed_s=elapsed)

    def _fail_queued(self) -> None:
        while True:
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                return
            if task is not None and task.future.set_running_or_notify_cancel():
                task.future.set_result(TaskOutcome(error=POOL_CLOSED))


def default_pool_size() -> int:
    """Leave one core to the server's own threads, but use at least one worker."""
    cpus = multiprocessing.cpu_count()
    return max(1, min(8, math.ceil(cpus * 0.75)))

