"""A throwaway redis-server for tests: own port, own directory, AOF on, killable and restartable.

The queue tests exercise real Redis behaviour (consumer groups, AOF recovery after ``kill -9``),
so they never mock Redis and never touch a shared instance. A missing ``redis-server`` binary is
a test failure, not a skip: silently skipping would hide that the suite did not run.
"""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One redis-server process bound to ``port`` with its data (AOF) kept in ``data_dir``."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not on PATH; the queue tests need a real Redis "
                        "(e.g. `apt-get install redis-server`)", pytrace=False)
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> None:
        self._proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
             "--logfile", str(self.data_dir / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self._wait_for_ping(timeout_s)

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no final fsync; only what the AOF already holds survives."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(timeout=10)
        self._proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._proc = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def _wait_for_ping(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        probe = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5)
        try:
            while time.monotonic() < deadline:
                assert self._proc is not None
                if self._proc.poll() is not None:
                    log = (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"redis-server exited with {self._proc.returncode}:\n{log}", pytrace=False)
                try:
                    if probe.ping():
                        return
                except (redis.ConnectionError, redis.BusyLoadingError):
                    time.sleep(0.05)
            pytest.fail(f"redis-server on port {self.port} did not answer PING within {timeout_s}s")
        finally:
            probe.close()


@pytest.fixture(name="redis_server")
def redis_server_fixture(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh, empty Redis per test, stopped at teardown whatever the test did to it.

    Test modules import this function to make the ``redis_server`` fixture available."""
    server = RedisServer(tmp_path / "redis")
    server.data_dir.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()
