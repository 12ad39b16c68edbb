"""Launch ``botgrpo serve`` / ``botgrpo worker`` / ``redis-server`` as real processes.

For integration tests and benchmarks, which must exercise the system as deployed: separate
processes talking HTTP and Redis, killable with any signal.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (field 3, the state, first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, from /proc's parent links."""
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


def tree_cpu_by_name(pid: int) -> dict[str, float]:
    """CPU seconds used by ``pid`` (as ``"root"``) and each live process below it, summed by
    command name (``/proc/PID/comm``: ``node``, ``tsc``, ...), user + system (/proc fields 14-15);
    the reaped children's time of them all (fields 16-17) as ``"exited"``."""
    ticks: dict[str, int] = {}
    for each in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError, IndexError):
            fields = _stat_fields(each)
            name = "root" if each == pid else Path(f"/proc/{each}/comm").read_text().strip()
            ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
            ticks["exited"] = ticks.get("exited", 0) + int(fields[13]) + int(fields[14])
    return {name: t / os.sysconf("SC_CLK_TCK") for name, t in ticks.items()}


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used by ``pid`` and everything below it, reaped children included (user +
    system, /proc fields 14-17): what a process tree computed, however busy the machine was."""
    return sum(tree_cpu_by_name(pid).values())


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without BOTGRPO_* and REDIS_URL, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOTGRPO_") and k != "REDIS_URL"}
    env.update(extra)
    return env


class Process:
    """A command in its own process group, with its output in ``log_path``."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, cwd: Optional[Path] = None):
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     cwd=cwd)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive():
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=15)

    def stop(self) -> None:
        try:
            self.kill(signal.SIGTERM)
        except subprocess.TimeoutExpired:
            self.kill()
        self._log.close()

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def botgrpo(args: list[str], env: dict[str, str], log_path: Path) -> Process:
    """``botgrpo ARGS`` with a clean environment plus ``env``."""
    return Process([sys.executable, "-m", "botgrpo.cli", *args], clean_env(env), log_path)


class Server(Process):
    """``botgrpo serve`` on a free port (plus ``args``), returned once ``/readyz`` answers 200. ``tree``: serve the
    code of another checkout (run from it, first on ``PYTHONPATH``, by its own ``.venv`` where it
    has one: this interpreter's editable install would map ``botgrpo`` back onto this tree's
    folders whatever ``PYTHONPATH`` says), e.g. for before/after numbers."""

    def __init__(self, log_dir: Path, env: Optional[dict[str, str]] = None, timeout_s: float = 90.0,
                 tree: Optional[Path] = None, args: tuple[str, ...] = ()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**(env or {}), **({"PYTHONPATH": str(tree)} if tree else {})}
        python = Path(tree) / ".venv" / "bin" / "python" if tree else None
        python = str(python) if python is not None and python.exists() else sys.executable
        super().__init__([python, "-m", "botgrpo.cli", "serve", "--port", str(self.port), *args],
                         clean_env(env),
                         Path(log_dir) / f"server-{self.port}.log", cwd=tree)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"botgrpo serve exited:\n{self.tail()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"botgrpo serve on {self.url} not ready after {timeout_s}s:\n{self.tail()}")


class Redis(Process):
    """A private ``redis-server`` (AOF on, fsync always) on a free port, data in ``data_dir``."""

    def __init__(self, data_dir: Path, port: Optional[int] = None):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH")
        self.data_dir, self.port = Path(data_dir), port or free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        super().__init__([binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
                          "--appendonly", "yes", "--appendfsync", "always", "--save", ""], os.environ.copy(),
                         self.data_dir / "redis.stdout")
        import redis
        probe = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        for _ in range(200):
            try:
                if probe.ping():
                    return
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not answer:\n{self.tail()}")
