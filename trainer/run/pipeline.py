"""What the asynchronous pipeline keeps between steps: one step's sampled rollouts, their pending
scores and the policy version that sampled them.

With ``async_steps: 1`` step t+1's rollouts are sampled (on a background thread, from the
engine's own copy of the weights before step t's update) and sent for scoring while step t
updates. So a batch is trained one policy version after the one that sampled it, at most
(``staleness`` in ``metrics.jsonl``; 0 on the first step), and the loss's importance ratio is
against the behaviour log-probs the engine returned with the tokens. A checkpoint holds the
sampled batch of the next step (tokens, log-probs, texts; not its scores, which are asked for
again on resume), so a resumed run trains on exactly what the uninterrupted one would have.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from botgrpo.trainer.rollout.base import RolloutBatch


@dataclass
class Rollouts:
    index: int                  # the step (0-based) that trains on them
    indices: list[int]          # this rank's prompts (dataset rows)
    seeds: list[int]
    version: int                # optimizer steps the sampling weights had seen
    batch: RolloutBatch
    scores: "Future"

    def state_dict(self) -> dict[str, Any]:
        return {"index": self.index, "indices": self.indices, "seeds": self.seeds, "version": self.version,
                "batch": dict(vars(self.batch))}

    @classmethod
    def from_state(cls, state: dict[str, Any], scores: "Future") -> "Rollouts":
        return cls(state["index"], list(state["indices"]), list(state["seeds"]), state["version"],
                   RolloutBatch(**state["batch"]), scores)
