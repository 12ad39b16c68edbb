"""Real ``botgrpo serve`` / ``botgrpo worker`` processes for integration tests."""
from __future__ import annotations

from botgrpo.processes import Process, Server, botgrpo


class LiveServer(Server):
    def __init__(self, tmp_path, env=None, timeout_s: float = 90.0):
        super().__init__(tmp_path, env, timeout_s)


def worker(args: list[str], env: dict[str, str], log_path) -> Process:
    return botgrpo(["worker", *args], env, log_path)
