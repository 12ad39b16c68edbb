"""One headless Chromium under the sandbox's isolation layers, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: fd 3 in, fd 4 out; no port, so the browser
needs no network at all).

Debian's ``chromium`` package, nothing downloaded. Chromium runs as root here, so its own
sandbox is off (``--no-sandbox``); the process layers of :mod:`botgrpo.sandbox.isolation` are the
boundary instead: bubblewrap's filesystem view (``/usr``, fonts, a private ``/tmp``), an empty
network namespace, uid nobody, rlimits. Pages get markup only: JavaScript is disabled and a
content security policy blocks every load, so what Chromium shows is the server render.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.launcher import NOBODY, SANDBOX_TMP, _prlimit_args, _system_binds

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--disable-dev-shm-usage", "--no-zygote",
         "--mute-audio", "--hide-scrollbars", "--disable-breakpad", "--disable-crash-reporter",
         "--no-default-browser-check", "--disable-features=Translate,MediaRouter,OptimizationHints",
         "--remote-debugging-pipe")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:"
PAGE = ('<!doctype html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<style>html,body{{margin:0;background:#fff}}body{{padding:8px;font-family:sans-serif}}</style>'
        '</head><body>{body}</body></html>')
TMPFS_MB = 256


class ChromiumError(RuntimeError):
    """The browser failed; ``timed_out`` when it stopped answering in time."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def chromium_executable() -> str | None:
    """``BOTGRPO_CHROMIUM``, else Debian's binary behind its ``chromium`` wrapper script, else
    the first chromium on PATH."""
    configured = os.environ.get("BOTGRPO_CHROMIUM")
    if configured:
        return configured
    debian = Path("/usr/lib/chromium/chromium")
    if debian.is_file() and os.access(debian, os.X_OK):
        return str(debian)
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _launch(executable: str, layers: frozenset[str], config: iso.IsolationConfig,
            host_tmp: str | None) -> tuple[list[str], dict[str, str]]:
    bwrap = bool({iso.FS_VIEW, iso.DROP_PRIVILEGES} & layers)
    tmp = SANDBOX_TMP if bwrap else str(host_tmp)
    prefix = _prlimit_args(layers, config)
    if bwrap:
        prefix += [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                   "--unshare-uts", "--unshare-cgroup-try"]
        if iso.NO_NETWORK in layers:
            prefix.append("--unshare-net")
        if iso.DROP_PRIVILEGES in layers:
            prefix += ["--unshare-user", "--uid", NOBODY, "--gid", NOBODY, "--cap-drop", "ALL"]
        prefix += ["--size", str(TMPFS_MB * 1024 * 1024), "--tmpfs", SANDBOX_TMP]
        prefix += _system_binds(executable) if iso.FS_VIEW in layers else ["--bind", "/", "/"]
        if iso.FS_VIEW in layers and os.path.isdir("/etc/fonts"):
            prefix += ["--ro-bind", "/etc/fonts", "/etc/fonts"]
        prefix += ["--proc", "/proc", "--dev", "/dev", "--chdir", SANDBOX_TMP, "--"]
    elif iso.NO_NETWORK in layers:
        prefix += [shutil.which("unshare") or "unshare", "--net", "--"]
    env = ({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"} if iso.CLEAN_ENV in layers else dict(os.environ))
    env.update({"HOME": tmp, "TMPDIR": tmp, "XDG_CONFIG_HOME": f"{tmp}/.config", "XDG_CACHE_HOME": f"{tmp}/.cache"})
    argv = [*prefix, executable, *FLAGS, f"--user-data-dir={tmp}/profile", "about:blank"]
    return argv, env


class Chromium:
    """A started browser with one page (script execution disabled). Not thread-safe: the
    screenshot pool lends each instance to one caller at a time."""

    def __init__(self, layers: frozenset[str], config: iso.IsolationConfig, *, executable: str | None = None,
                 start_timeout_s: float = 30.0) -> None:
        executable = executable or chromium_executable()
        if executable is None:
            raise ChromiumError("no Chromium found: install Debian's chromium (apt-get install chromium) "
                                "or set BOTGRPO_CHROMIUM")
        needs_host_tmp = not ({iso.FS_VIEW, iso.DROP_PRIVILEGES} & layers)
        self._host_tmp = tempfile.mkdtemp(prefix="botgrpo-chromium-") if needs_host_tmp else None
        argv, env = _launch(executable, layers, config, self._host_tmp)
        to_child, self._write_fd = _high_pipe()
        self._read_fd, from_child = _high_pipe()
        self._buffer = b""
        self._ids = 0
        self._stderr_tail = b""
        self.shots = 0
        try:
            # A tiny Python shim puts the protocol pipes on fds 3 and 4 (no preexec_fn: browsers
            # start from pool threads), closes the originals, then becomes the sandboxed browser.
            place = (f"import os, sys; os.dup2({to_child}, 3); os.dup2({from_child}, 4); os.close({to_child}); "
                     f"os.close({from_child}); os.execv(sys.argv[1], sys.argv[1:])")
            self._proc = subprocess.Popen([sys.executable, "-S", "-c", place, *argv], env=env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          pass_fds=(to_child, from_child), start_new_session=True)
        except BaseException:
            for fd in (to_child, from_child, self._write_fd, self._read_fd):
                os.close(fd)
            self._remove_tmp()
            raise
        os.close(to_child)
        os.close(from_child)
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        try:
            self._open_page(time.monotonic() + start_timeout_s)
        except BaseException:
            self.kill()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def screenshot(self, body_html: str, width: int, height: int, timeout_s: float) -> bytes:
        """PNG of ``body_html`` in a ``width`` x ``height`` viewport (raises ChromiumError)."""
        deadline = time.monotonic() + timeout_s
        self._call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, deadline, session=True)
        self._call("Page.setDocumentContent", {"frameId": self._frame, "html": PAGE.format(body=body_html)},
                   deadline, session=True)
        shot = self._call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False,
                                                     "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                                              "scale": 1}}, deadline, session=True)
        self.shots += 1
        return base64.b64decode(shot["data"])

    def kill(self) -> None:
        """SIGKILL the browser's process group (every renderer with it) and reap it."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._write_fd, self._read_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._write_fd = self._read_fd = -1
        self._stderr_thread.join(timeout=2)
        self._remove_tmp()

    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace")

    # -- protocol ------------------------------------------------------------------------

    def _open_page(self, deadline: float) -> None:
        target = self._call("Target.createTarget", {"url": "about:blank"}, deadline)["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True}, deadline)["sessionId"]
        self._call("Page.enable", {}, deadline, session=True)
        self._call("Emulation.setScriptExecutionDisabled", {"value": True}, deadline, session=True)
        self._frame = self._call("Page.getFrameTree", {}, deadline, session=True)["frameTree"]["frame"]["id"]

    def _call(self, method: str, params: dict[str, Any], deadline: float, *, session: bool = False) -> dict[str, Any]:
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        self._send(json.dumps(message).encode() + b"\0", deadline)
        while True:
            reply = self._receive(deadline)
            if reply.get("id") != self._ids:
                continue  # an event
            if "error" in reply:
                raise ChromiumError(f"{method} failed: {str(reply['error'].get('message', reply['error']))[:200]}")
            return reply.get("result", {})

    def _send(self, payload: bytes, deadline: float) -> None:
        view = memoryview(payload)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChromiumError("Chromium stopped reading commands", timed_out=True)
            _, writable, _ = select.select([], [self._write_fd], [], remaining)
            if writable:
                try:
                    view = view[os.write(self._write_fd, view):]
                except BrokenPipeError:
                    raise ChromiumError(f"Chromium exited ({self._proc.poll()})") from None

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChromiumError("Chromium did not answer in time", timed_out=True)
            readable, _, _ = select.select([self._read_fd], [], [], remaining)
            if not readable:
                continue
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise ChromiumError(f"Chromium exited ({self._proc.poll()}): {self.stderr_tail()[-300:]}")
            self._buffer += chunk
            if len(self._buffer) > 64 << 20:
                raise ChromiumError("Chromium sent an oversized message")
        line, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(line)

    def _drain_stderr(self) -> None:
        while True:
            try:
                chunk = self._proc.stderr.read1(65536)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-4096:]

    def _remove_tmp(self) -> None:
        if self._host_tmp:
            shutil.rmtree(self._host_tmp, ignore_errors=True)
            self._host_tmp = None


def _high_pipe() -> tuple[int, int]:
    """A pipe whose ends are fds >= 10, so placing them on 3 and 4 cannot clobber one another."""
    ends = []
    for fd in os.pipe():
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        ends.append(high)
    return ends[0], ends[1]
