"""Public API: a pool of long-lived, sandboxed Node workers compiling untrusted TSX/JSX.

    pool = NodePool(size=2, timeout_s=5.0)
    results = pool.compile_many(codes, level="build", allow=("lodash",))
    result = await pool.acompile(code, level="typecheck")
    result = pool.compile(code, level="render", lint=True)     # executes it: result.render, result.lint
    result = pool.compile(code, level="build", lint="eslint")  # lint with ESLint instead of oxlint

Level ``render`` runs the component (server-side, in a fresh realm on a render thread with its
own heap limit) and therefore needs the isolation layers of :data:`botgrpo.sandbox.isolation.RENDER_LAYERS`:
without them it raises :class:`~sandbox.isolation.IsolationUnavailable` unless the operator
opted out (``render_unisolated=True`` or ``BOTGRPO_RENDER_UNISOLATED=1``).

Spawning a compiler per file costs 50-100 ms; a warm worker answers a build in ~1 ms and a
typecheck in ~3 ms amortised (it batches files into one native tsgo run). Jobs go into one
shared queue; each worker has a dispatcher thread that takes up to ``max_batch`` jobs at a
time (so idle workers pick up work first and the worker can batch typechecks). Any worker
failure (crash, timeout, oversized response, a compiler service that died: "poisoned") kills
the worker's process group, restarts it and re-runs the unanswered jobs of that batch one by
one, so only the guilty file fails; ``stats()`` counts these events.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from concurrent.futures import Future
from typing import Any, Iterable, Literal, Mapping, Sequence, get_args

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.cpu_budget import WALL_FACTOR
from botgrpo.sandbox.dispatcher import Job, PoolStats, WorkerSlot
from botgrpo.sandbox.results import CompileResult, Diagnostic, RenderResult, failure
from botgrpo.sandbox.launcher import NODE_DIR
from botgrpo.sandbox.scratch import sweep_stale
from botgrpo.sandbox.toolchain import ensure

__all__ = ["NodePool", "CompileResult", "Diagnostic", "RenderResult", "LEVELS", "LINT_ENGINES", "IsolationConfig"]

LEVELS = ("syntax", "build", "typecheck", "render")
#: How level ``typecheck`` runs tsgo (sandbox/node/lib/typecheck.mjs TYPECHECK_ENGINES), the default first.
TYPECHECK_ENGINES: dict[str, str] = {
    "server": "a warm tsgo API server per worker that keeps the parsed lib and React declarations",
    "spawn": "one tsgo process per batch, which parses them every time (the path before the server)",
}
#: Which modules every tsgo program of level ``typecheck`` imports (sandbox/node/lib/typecheck.mjs
#: TYPECHECK_PRELUDES), the default first.
TYPECHECK_PRELUDES: dict[str, str] = {
    "global": "React and the curated libraries whose declarations act globally (motion-dom's Window fields)",
    "all": "every installed curated library, whoever imports it (the path before)",
}
#: How levels ``syntax``, ``build`` and ``typecheck`` reach esbuild's verdict (sandbox/node/lib/syntax.mjs
#: SYNTAX_ENGINES), the default first.
SYNTAX_ENGINES: dict[str, str] = {
    "oxc": "esbuild's transform or bundle only for files that oxc-parser, TypeScript's parser or the AST import "
           "policy do not clear (lib/syntax.mjs)",
    "esbuild": "esbuild's transform or bundle on every file (the path before)",
}
LintEngine = Literal["oxlint", "eslint"]
#: The lint engines of the ``lint`` argument (the worker's LINT_ENGINES), the default first.
LINT_ENGINES: dict[str, str] = {
    "oxlint": "oxlint (Rust) with its react and react-hooks rules, batched per worker (sandbox/node/lib/oxlint.mjs)",
    "eslint": "ESLint with eslint-plugin-react and eslint-plugin-react-hooks, one file at a time (lib/lint.mjs)",
}
assert tuple(LINT_ENGINES) == get_args(LintEngine)
IsolationConfig = iso.IsolationConfig
RenderOptions = Mapping[str, Any]  # {props, component, empty, wrappers, timeout_ms, max_html_chars, ...}
DEFAULT_RENDER_TIMEOUT_MS = 1000
#: A tsgo or oxlint run in the worker is timed in CPU time, with a wall-clock backstop WALL_FACTOR
#: times its budget (sandbox/node/lib/cpu-budget.mjs): the dispatcher waits that long for a run the
#: worker times itself before it takes the worker for stuck.
#: How many times a run's own wall-clock backstop the dispatcher waits for the worker's answer: the
#: worker's timer and its answer both run late on a loaded machine (a backstop of 2.25 s ran past
#: a 1 s margin at load 7 on 2 cores), and only a worker silent well past its own backstop is stuck.
ANSWER_SLACK = 2.0


class NodePool:
    """Thread-safe pool of Node compile workers. Never raises for bad code."""

    def __init__(
        self,
        size: int = 2,
        timeout_s: float = 5.0,
        isolation: iso.IsolationConfig | None = None,
        *,
        max_code_bytes: int = 1 << 20,
        max_response_bytes: int = 4 << 20,
        max_batch: int = 32,
        max_requests_per_worker: int = 20_000,
        enable_debug_levels: bool = False,
        render_unisolated: bool = False,
        render_heap_mb: int = 256,
        tsgo_memory_mb: int = 1024,
        typecheck_engine: str = "server",
        typecheck_prelude: str = "global",
        syntax_engine: str = "oxc",
    ) -> None:
        """``max_response_bytes`` is above ``max_code_bytes`` because summaries echo JSX text.
        ``enable_debug_levels`` turns on test-only worker levels (debug_hang, debug_crash).
        ``render_unisolated`` lets level ``render`` run without the filesystem and network
        layers (an explicit operator choice); ``render_heap_mb`` caps a render thread's heap; ``tsgo_memory_mb`` one tsgo
        run's data segment (RLIMIT_DATA; 0: only the worker's own limit); ``typecheck_engine`` is a key of
        :data:`TYPECHECK_ENGINES`, ``typecheck_prelude`` one of :data:`TYPECHECK_PRELUDES`, ``syntax_engine``
        one of :data:`SYNTAX_ENGINES`."""
        if size < 1:
            raise ValueError("size must be >= 1")
        if typecheck_engine not in TYPECHECK_ENGINES:
            raise ValueError(f"typecheck_engine must be one of {tuple(TYPECHECK_ENGINES)}, got {typecheck_engine!r}")
        if typecheck_prelude not in TYPECHECK_PRELUDES:
            raise ValueError(f"typecheck_prelude must be one of {tuple(TYPECHECK_PRELUDES)}, got {typecheck_prelude!r}")
        if syntax_engine not in SYNTAX_ENGINES:
            raise ValueError(f"syntax_engine must be one of {tuple(SYNTAX_ENGINES)}, got {syntax_engine!r}")
        self.size = size
        self.timeout_s = timeout_s
        self.isolation = isolation or iso.IsolationConfig()
        self.max_code_bytes = max_code_bytes
        self.render_unisolated = render_unisolated
        # One tsgo run may use this much CPU time before the worker kills it and re-runs its
        # batch without the slow file. A file costs at most two runs (its batch's and its own),
        # so 0.45 x timeout_s keeps a type-checking bomb within the per-rollout budget timeout_s
        # of CPU time: a busy machine stretches the wall time, not the verdict.
        self.tsgo_timeout_s = tsgo_timeout_s(timeout_s)
        self.run_backstop_s = WALL_FACTOR * self.tsgo_timeout_s  # the most wall time such a run holds a worker
        extra_env = {"BOTGRPO_TSGO_TIMEOUT_MS": str(int(self.tsgo_timeout_s * 1000)),
                     "BOTGRPO_TSGO_MEMORY_MB": str(int(tsgo_memory_mb)),
                     "BOTGRPO_LINT_TIMEOUT_MS": str(int(self.tsgo_timeout_s * 1000)),  # one oxlint run
                     "BOTGRPO_RENDER_HEAP_MB": str(int(render_heap_mb))}
        extra_env["BOTGRPO_TYPECHECK_ENGINE"] = typecheck_engine
        extra_env["BOTGRPO_TYPECHECK_PRELUDE"] = typecheck_prelude
        extra_env["BOTGRPO_SYNTAX_ENGINE"] = syntax_engine
        if enable_debug_levels:
            extra_env["BOTGRPO_SANDBOX_DEBUG"] = "1"
        self._stats = PoolStats()
        self._slot_options = dict(
            max_response_bytes=max_response_bytes,
            max_batch=max_batch,
            max_requests_per_worker=max_requests_per_worker,
            extra_env=extra_env,
            stats=self._stats,
            workers=size,
        )
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._slots: list[WorkerSlot] = []
        self._layers: frozenset[str] | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> "NodePool":
        """Resolve isolation layers (fail closed) and start all workers. Idempotent."""
        with self._lock:
            if self._closed:
                raise RuntimeError("pool is closed")
            if self._slots:
                return self
            layers = iso.resolve_layers(self.isolation)
            ensure(NODE_DIR)  # npm dependencies from the lockfile, installed on first use
            sweep_stale()  # scratch dirs of killed servers
            slots = [
                WorkerSlot(f"node-{i}", self._jobs, layers, self.isolation, self.timeout_s,
                           **self._slot_options)
                for i in range(self.size)
            ]
            try:
                for slot in slots:
                    slot.start()
            except Exception:
                for slot in slots:
                    slot.stop()
                raise
            self._layers, self._slots = layers, slots
        return self

    def close(self) -> None:
        """Stop dispatchers and kill workers; queued jobs get a failing result."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._slots:
                self._jobs.put(None)
            for slot in self._slots:
                slot.stop()
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.resolve(failure(job.code, "Compile pool closed", crashed=True))

    def __enter__(self) -> "NodePool":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def healthy(self) -> bool:
        """True when the pool is open and can serve: every dispatcher runs and every worker
        is up. False while a worker cannot be (re)started or after a dispatcher died."""
        return bool(self._slots) and not self._closed and all(s.healthy() for s in self._slots)

    def stats(self) -> dict[str, int]:
        """Workers, live workers, queued jobs and event counters: ``restarts`` (workers
        replaced), ``poisoned`` (a compiler service died: the worker gave no more verdicts),
        ``timeouts``, ``crashes``, ``too_large``, ``recycled`` (request budget),
        ``spawn_failures`` and ``dispatcher_errors`` (internal errors turned into results)."""
        alive = sum(1 for slot in self._slots if slot.pid() is not None)
        return {"workers": self.size, "alive": alive, "queued": self._jobs.qsize(),
                **self._stats.snapshot()}

    def scratch_dirs(self) -> list[str]:
        """Host scratch directories of the live workers (none under bubblewrap)."""
        return [d for d in (slot.scratch_dir() for slot in self._slots) if d]

    def active_layers(self) -> frozenset[str]:
        """Isolation layers the workers run with (starts the pool if needed)."""
        self.start()
        assert self._layers is not None
        return self._layers

    def worker_pids(self) -> list[int]:
        """Process-group leader pid of each live worker (for operators and tests)."""
        return [pid for pid in (slot.pid() for slot in self._slots) if pid is not None]

    # -- compiling -----------------------------------------------------------------------

    def submit(self, code: str, level: str = "build", allow: Iterable[str] = (), *, lint: bool | str = False,
               render: RenderOptions | None = None, summary: bool = True) -> Future:
        """Queue one file; the Future resolves to a CompileResult (never an exception).
        ``lint`` adds the lint findings (``result.lint``) of the engine it names (a key of
        :data:`LINT_ENGINES`; ``True``: oxlint, the default); ``render`` holds the options of
        level ``render`` (props, empty-render policy, timeout_ms, ...: ``sandbox/README.md``).
        ``summary=False``: the caller reads no ``result.summary`` (no spec to check), so the
        worker skips it ({}), and at level ``syntax`` TypeScript's parse too (render always makes it).
        Raises :class:`~sandbox.isolation.IsolationUnavailable` for ``render`` on a host
        without the layers it needs (see the module docstring)."""
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        if not isinstance(lint, bool) and lint not in LINT_ENGINES:
            raise ValueError(f"lint must be a bool or one of {tuple(LINT_ENGINES)}, got {lint!r}")
        if level == "render":
            self.check_render()
        return self._submit(code, level, tuple(str(a) for a in allow), lint, render, summary)

    def render_refusal(self) -> str | None:
        """Why this pool will not render (None: it will), from its active layers."""
        return iso.render_refusal(self.active_layers(), self.render_unisolated)

    def check_render(self) -> None:
        """Raise :class:`~sandbox.isolation.IsolationUnavailable` when rendering is refused."""
        reason = self.render_refusal()
        if reason is not None:
            missing = [layer for layer in iso.RENDER_LAYERS if layer not in self.active_layers()]
            raise iso.IsolationUnavailable(missing, reason)

    def _submit(self, code: str, level: str, allow: tuple[str, ...], lint: bool | str = False,
                render: RenderOptions | None = None, summary: bool = True) -> Future:
        future: Future = Future()
        extra: dict[str, Any] = {"lint": lint} if lint else {}
        if not summary:
            extra["summary"] = False
        if level == "render":
            extra["render"] = dict(render or {})
        job = Job(code=code, level=level, allow=allow, future=future, extra=extra, budget_s=self._budget_s(level, extra))
        if not isinstance(code, str):
            job.resolve(failure("", "code must be a string"))
        elif len(code.encode("utf-8", "surrogatepass")) > self.max_code_bytes:
            job.resolve(failure(code, f"Input exceeds the {self.max_code_bytes}-byte limit"))
        else:
            self._enqueue(job)
        return future

    def _budget_s(self, level: str, extra: Mapping[str, Any]) -> float:
        """Wall time a job may take beyond a compile: the runs the worker times itself."""
        budget_s = 0.0
        if level == "render":
            budget_s = float((extra.get("render") or {}).get("timeout_ms") or DEFAULT_RENDER_TIMEOUT_MS) / 1000 + 1.0
        elif level == "typecheck":
            budget_s = ANSWER_SLACK * self.run_backstop_s  # its own tsgo run, after its batch's (a suspect, a timeout)
        if extra.get("lint") in (True, "oxlint"):
            budget_s += ANSWER_SLACK * 1.5 * self.run_backstop_s  # its batch's oxlint run, then its own at half (lib/oxlint.mjs)
        return budget_s

    def _enqueue(self, job: Job) -> None:
        try:
            self.start()
        except RuntimeError:
            if not self._closed:  # a configuration error (e.g. IsolationUnavailable): raise it
                raise
        with self._lock:  # close() cannot slip between the check and the put
            if not self._closed:
                self._jobs.put(job)
                return
        job.resolve(failure(job.code, "Compile pool closed", crashed=True))

    def compile(self, code: str, level: str = "build", allow: Iterable[str] = (), *, lint: bool | str = False,
                render: RenderOptions | None = None, summary: bool = True) -> CompileResult:
        return self.submit(code, level, allow, lint=lint, render=render, summary=summary).result()

    def compile_many(self, codes: Sequence[str], level: str = "build", allow: Iterable[str] = (), *,
                     lint: bool | str = False,
                     render: RenderOptions | Sequence[RenderOptions | None] | None = None,
                     summary: bool | Sequence[bool] = True) -> list[CompileResult]:
        """Compile files in parallel over all workers; results keep the input order. ``render``
        is one options mapping for every file or a sequence of them, one per file; ``summary``
        one bool or one per file (see :meth:`submit`)."""
        allow = tuple(allow)
        jobs = zip(codes, _per_file(render, len(codes), "render options"),
                   _per_file(summary, len(codes), "summary flags"))
        futures = [self.submit(code, level, allow, lint=lint, render=options, summary=wanted) for code, options, wanted in jobs]
        return [f.result() for f in futures]

    async def acompile(self, code: str, level: str = "build", allow: Iterable[str] = (), *, lint: bool | str = False,
                       render: RenderOptions | None = None, summary: bool = True) -> CompileResult:
        return await asyncio.wrap_future(self.submit(code, level, allow, lint=lint, render=render, summary=summary))

    async def acompile_many(self, codes: Sequence[str], level: str = "build", allow: Iterable[str] = (), *,
                            lint: bool | str = False,
                            render: RenderOptions | Sequence[RenderOptions | None] | None = None,
                            summary: bool | Sequence[bool] = True) -> list[CompileResult]:
        allow = tuple(allow)
        jobs = zip(codes, _per_file(render, len(codes), "render options"),
                   _per_file(summary, len(codes), "summary flags"))
        futures = [asyncio.wrap_future(self.submit(code, level, allow, lint=lint, render=options, summary=wanted))
                   for code, options, wanted in jobs]
        return list(await asyncio.gather(*futures))

    def _debug(self, level: str, code: str = "", **fields: object) -> Future:
        """Test hook: send a debug level, or a real level with debug fields such as
        ``debug_tsgo="fail"`` (needs ``enable_debug_levels=True``)."""
        future: Future = Future()
        self._enqueue(Job(code=code, level=level, allow=(), future=future, extra=dict(fields),
                          budget_s=self._budget_s(level, fields) if level in LEVELS else 0.0))
        return future


def tsgo_timeout_s(timeout_s: float) -> float:
    """CPU-time limit of one tsgo (or oxlint) run for a pool whose per-rollout budget is ``timeout_s``."""
    return max(0.5, round(timeout_s * 0.45, 3))


def _per_file(value: Any, n: int, what: str) -> list[Any]:
    """One value per file: ``value`` for each (None, a mapping, a bool) or a sequence of ``n``."""
    if value is None or isinstance(value, (Mapping, bool)):
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise ValueError(f"{what} for {len(values)} files, but {n} files")
    return values
