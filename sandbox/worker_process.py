"""One sandboxed Node compile worker process and its JSON-lines pipe.

All I/O is non-blocking with deadlines: a hung or malicious worker must never block the
caller, not even while we write a 1 MB request into a pipe nobody reads. Responses larger than
the configured limit are rejected before they are buffered in full.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from typing import Any, Callable

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.launcher import build_launch, worker_command
from botgrpo.sandbox.scratch import make_scratch_dir

READY_ID = "__ready__"
_ID_PREFIX = re.compile(rb'^\{"id":"([^"\\]{1,64})"')
# What a dying compiler prints on stderr (esbuild and tsgo are Go programs; node is V8).
STDERR_SIGNALS = {
    "out_of_memory": (b"out of memory", b"cannot allocate memory", b"Allocation failed"),
    "stack_overflow": (b"stack exceeds", b"stack overflow", b"Maximum call stack"),
}
_SIGNAL_OVERLAP = max(len(m) for markers in STDERR_SIGNALS.values() for m in markers)


class WorkerError(Exception):
    """The worker failed as a whole; ``responses`` holds what arrived before the failure."""

    def __init__(self, message: str, responses: dict[str, dict[str, Any]]) -> None:
        super().__init__(message)
        self.responses = responses


class WorkerTimeout(WorkerError):
    """No response arrived within the idle timeout."""


class WorkerCrashed(WorkerError):
    """The process exited or closed its stdout."""


class ProtocolError(WorkerCrashed):
    """The worker wrote something that is not a response line."""


class ResponseTooLarge(WorkerError):
    """A response line exceeded the size limit; ``request_id`` names its request if known."""

    def __init__(self, message: str, responses: dict[str, dict[str, Any]], request_id: str | None):
        super().__init__(message, responses)
        self.request_id = request_id


class WorkerProcess:
    """A started worker. Use :meth:`exchange` for request batches and :meth:`kill` to end it."""

    def __init__(self, layers: frozenset[str], config: iso.IsolationConfig, *,
                 max_response_bytes: int, extra_env: dict[str, str] | None = None) -> None:
        self._max_response_bytes = max_response_bytes
        self._buffer = b""
        self._stderr_tail = b""
        self._signals: set[str] = set()
        needs_host_tmp = not ({iso.FS_VIEW, iso.DROP_PRIVILEGES} & layers)
        self._host_tmp = make_scratch_dir() if needs_host_tmp else None
        try:
            spec = build_launch(worker_command(), layers, config, extra_env=extra_env,
                                host_tmp=self._host_tmp)
            self._proc = subprocess.Popen(
                spec.argv, env=spec.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,  # own process group: killpg is total
            )
        except BaseException:
            if self._host_tmp:
                shutil.rmtree(self._host_tmp, ignore_errors=True)
            raise
        for stream in (self._proc.stdin, self._proc.stdout):
            os.set_blocking(stream.fileno(), False)
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        self.requests_served = 0

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def host_tmp(self) -> str | None:
        """The host scratch directory (None when bwrap gives the worker a private tmpfs)."""
        return self._host_tmp

    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace")

    def stderr_signals(self) -> frozenset[str]:
        """What the worker's stderr showed so far: ``out_of_memory``, ``stack_overflow``.
        Complete only after :meth:`kill` (which waits for the stream to end)."""
        return frozenset(self._signals)

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the worker announces itself; raises WorkerError with its stderr if not."""
        try:
            self._read_until({READY_ID}, timeout_s)
        except WorkerError as error:
            raise WorkerError(f"{error}; worker stderr: {self.stderr_tail()[-2000:]}", {}) from None

    def exchange(self, requests: list[dict[str, Any]], idle_timeout_s: float,
                 total_timeout_s: float,
                 on_response: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, dict[str, Any]]:
        """Send requests, return {id: response}. Fails if no response arrives for
        ``idle_timeout_s`` or the whole exchange exceeds ``total_timeout_s``. ``on_response(id,
        response)`` is called as each response arrives, so a fast file's caller need not wait
        for a slow neighbour of its batch."""
        # ASCII JSON: lone surrogates (valid in a Python str and in a JS string, not in UTF-8)
        # travel as \\uXXXX escapes instead of failing to encode.
        payload = b"".join(json.dumps(r, ensure_ascii=True).encode("ascii") + b"\n" for r in requests)
        deadline = time.monotonic() + total_timeout_s
        self._write(payload, min(deadline, time.monotonic() + idle_timeout_s))
        self.requests_served += len(requests)
        return self._read_until({str(r["id"]) for r in requests}, idle_timeout_s, deadline, on_response)

    def kill(self) -> None:
        """SIGKILL the whole process group (bwrap/unshare, node, esbuild, tsgo) and reap it."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._stderr_thread.join(timeout=2)  # the group is dead: stderr ends, signals are complete
        if self._host_tmp:
            shutil.rmtree(self._host_tmp, ignore_errors=True)

    # -- pipe plumbing -------------------------------------------------------------------

    def _write(self, payload: bytes, deadline: float) -> None:
        fd = self._proc.stdin.fileno()
        view = memoryview(payload)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout("worker stopped reading its input", {})
            _, writable, _ = select.select([], [fd], [], remaining)
            if not writable:
                continue
            try:
                view = view[os.write(fd, view):]
            except BrokenPipeError:
                raise WorkerCrashed("worker closed its input", {}) from None

    def _read_until(self, pending_ids: set[str], idle_timeout_s: float, deadline: float | None = None,
                    on_response: Callable[[str, dict[str, Any]], None] | None = None,
                    ) -> dict[str, dict[str, Any]]:
        responses: dict[str, dict[str, Any]] = {}
        fd = self._proc.stdout.fileno()
        idle_deadline = time.monotonic() + idle_timeout_s
        while pending_ids - responses.keys():
            for line in self._complete_lines(responses):
                try:
                    response = json.loads(line)
                except ValueError:
                    raise ProtocolError("worker wrote a line that is not JSON", responses) from None
                if not isinstance(response, dict):
                    raise ProtocolError("worker wrote a response that is not an object", responses)
                response_id = str(response.get("id"))
                responses[response_id] = response
                idle_deadline = time.monotonic() + idle_timeout_s
                if on_response is not None and response_id in pending_ids:
                    on_response(response_id, response)
            if not pending_ids - responses.keys():
                break
            limit = idle_deadline if deadline is None else min(idle_deadline, deadline)
            remaining = limit - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout(f"no response within {idle_timeout_s:.1f}s", responses)
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerCrashed(f"worker exited (status {self._proc.poll()})", responses)
                self._buffer += chunk
        return {key: value for key, value in responses.items() if key in pending_ids}

    def _complete_lines(self, responses: dict[str, dict[str, Any]]) -> list[bytes]:
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in [*lines, self._buffer]:
            if len(line) > self._max_response_bytes:
                match = _ID_PREFIX.match(line)
                request_id = match.group(1).decode() if match else None
                raise ResponseTooLarge(
                    f"response exceeded {self._max_response_bytes} bytes", responses, request_id
                )
        return [line for line in lines if line.strip()]

    def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        while True:
            try:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            window = self._stderr_tail[-_SIGNAL_OVERLAP:] + chunk
            for name, markers in STDERR_SIGNALS.items():
                if any(marker in window for marker in markers):
                    self._signals.add(name)
            self._stderr_tail = (self._stderr_tail + chunk)[-8192:]
