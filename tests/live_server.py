"""Real ``botgrpo serve`` / ``botgrpo worker`` processes for integration tests."""
from __future__ import annotations

from botgrpo.processes import Process, Server, botgrpo

LiveServer = Server  # ``LiveServer(tmp_path, env=...)``: botgrpo serve on a free port, once /readyz answers


def worker(args: list[str], env: dict[str, str], log_path) -> Process:
    return botgrpo(["worker", *args], env, log_path)
