"""The reward server embedded in this process, for one-machine runs with no URL to point at.

The trainer never imports the server: it talks to one through :mod:`botgrpo.services.client`.
This module composes the two (the CLI's ``train``, ``eval`` and ``demo`` use it)::

    with reward_server_for(cfg) as cfg:      # cfg.reward.url set: unchanged; else a local server
        trainer = Trainer(cfg)
"""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from botgrpo.trainer.config import TrainConfig


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedServer:
    """The reward server on a free local port, served from a thread of this process."""

    def __init__(self, **settings: Any):
        import uvicorn

        from botgrpo.reward_server.app import create_app
        from botgrpo.reward_server.settings import ServerSettings

        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        app = create_app(ServerSettings(port=port, **settings))
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, name="reward-server", daemon=True)

    def __enter__(self) -> "EmbeddedServer":
        self._thread.start()
        deadline = time.monotonic() + 120
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded reward server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


@contextmanager
def reward_server_for(cfg: TrainConfig, **settings: Any) -> Iterator[TrainConfig]:
    """``cfg`` when it names a reward server; otherwise ``cfg`` pointed at the real server
    (FastAPI on uvicorn, in-process queue, scorers warmed first) on a thread of this process,
    for the ``with`` block."""
    if cfg.reward.url:
        yield cfg
        return
    with EmbeddedServer(**{"warm_scorers": True, **settings}) as server:
        yield cfg.model_copy(update={"reward": cfg.reward.model_copy(update={"url": server.url})})
