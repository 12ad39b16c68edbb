"""Rewards for a rollout batch from the reward server, scored in the background.

``RewardSource.submit`` sends the batch through the streaming client on a worker thread and
returns a future at once, so the trainer computes log-probs (or anything else) while the server
scores. The policy's own tokens go as ``token_offsets``, so the server's token scores line up
with the trainer's tokens one to one. A rollout the server could not score (a result with
``error``) is marked unscored: NaN sequence reward, no token rewards, and the loop leaves it out
of the loss rather than punish the policy for the server's failure.

``EmbeddedServer`` runs the real reward server (FastAPI on uvicorn, in-process queue) on a
thread of this process, for one-machine runs with no URL to point at.
"""
from __future__ import annotations

import math
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from services.client import RewardClient
from trainer.rollout.alignment import scores_to_tensor
from trainer.rollout.base import RolloutBatch


@dataclass
class ScoredBatch:
    token_rewards: torch.Tensor   # (B, T)
    seq_rewards: torch.Tensor     # (B,) NaN where unscored
    passed: torch.Tensor          # (B,) float: 1 passed, 0 failed, nan unknown
    spec_passed: torch.Tensor     # (B,) float: 1, 0, nan where no spec applies
    scored: torch.Tensor          # (B,) bool: False where the server could not score (result with `error`)
    seconds: float

    @property
    def errors(self) -> int:
        return int((~self.scored).sum())


def _flag(value: Optional[bool]) -> float:
    return math.nan if value is None else float(bool(value))


class RewardSource:
    """Scores rollout batches on ``url`` for ``task`` in a background thread."""

    def __init__(self, url: str, task: str, options: Optional[dict[str, Any]] = None, api_key: Optional[str] = None):
        self.task, self.options = task, dict(options or {})
        self.client = RewardClient(url, api_key=api_key)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rewards")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()

    def submit(self, batch: RolloutBatch, references: Sequence[Optional[dict]],
               options: Optional[dict[str, Any]] = None) -> "Future[ScoredBatch]":
        """Start scoring ``batch``; ``references[j]`` belongs to prompt ``j``. ``options``
        override the source's scorer options for this batch (e.g. another compile level)."""
        rollouts = [{"id": str(i), "group": str(i // batch.group_size), "completion": text,
                     "token_offsets": [list(s) for s in spans], "reference": references[i // batch.group_size],
                     "finish_reason": "length" if cut else "stop"}
                    for i, (text, spans, cut) in enumerate(zip(batch.texts, batch.spans, batch.truncated.tolist()))]
        return self._pool.submit(self._score, rollouts, batch.completion_mask, {**self.options, **(options or {})})

    def _score(self, rollouts: list[dict], mask: torch.Tensor, options: dict[str, Any]) -> ScoredBatch:
        started = time.perf_counter()
        results = self.client.score(self.task, rollouts, options)
        scored = torch.tensor([not r.get("error") for r in results], dtype=torch.bool)
        return ScoredBatch(
            token_rewards=scores_to_tensor([r["token_scores"] for r in results], mask) * scored[:, None],
            seq_rewards=torch.where(scored, torch.tensor([r["score"] for r in results], dtype=torch.float32), math.nan),
            passed=torch.tensor([_flag(r.get("passed")) for r in results]),
            spec_passed=torch.tensor([_flag((r.get("details") or {}).get("spec_passed")) for r in results]),
            scored=scored, seconds=time.perf_counter() - started)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedServer:
    """The reward server on a free local port, served from a thread of this process."""

    def __init__(self, **settings: Any):
        import uvicorn

        from reward_server.app import create_app
        from reward_server.settings import ServerSettings

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
