"""The ``model`` scorer: a learned token reward model from a local Hugging Face checkpoint.

Any ``AutoModelForTokenClassification`` checkpoint works (a value head is one with a single
label). Its outputs become scores ``s`` in [-1, 1]:

* one label: ``tanh(logit)``;
* several labels: ``p(last label) - p(first label)`` (e.g. labels ``[bad, good]``).

In the recipe's channels: the outcome is the mean of the model-token scores, and each model
token's local signal ``l = (s - 1) / 2`` in [-1, 0] (how far below "good" the model puts it)
lands on its character span (from the fast tokenizer's offsets); the shared mapper then gives
every caller token the minimum over its characters, so the caller's tokenizer need not match
the model's. Characters past the model's context and characters no model token covers carry
no local signal.

Requests from all clients go through one :class:`MicroBatcher`: it waits up to ``max_wait_ms``
to fill a batch of ``max_batch`` completions, so concurrent small requests share forward passes.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, ClassVar, Optional, Sequence

import torch
from pydantic import BaseModel, ConfigDict

from botgrpo.reward_server.scorers.base import Rollout, ScoreResult, SpanScore
from botgrpo.services.recipe import RecipeOptions


class ModelOptions(RecipeOptions):
    """The ``model`` scorer's options: the recipe's only (the checkpoint is the server's choice)."""

    model_config = ConfigDict(extra="forbid")


class MicroBatcher:
    """Collects single items from many threads into batches for one worker thread."""

    def __init__(self, run_batch, max_batch: int = 32, max_wait_ms: float = 5.0):
        self._run_batch, self._max_batch, self._max_wait_s = run_batch, max_batch, max_wait_ms / 1000
        self._inbox: queue.Queue[tuple[object, Future] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="model-batcher", daemon=True)
        self._thread.start()
        self.batches = 0  # forward passes run, for tests and metrics

    def submit(self, item) -> Future:
        future: Future = Future()
        self._inbox.put((item, future))
        return future

    def close(self) -> None:
        self._inbox.put(None)
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while (first := self._inbox.get()) is not None:
            batch = [first]
            try:
                while len(batch) < self._max_batch:
                    nxt = self._inbox.get(timeout=self._max_wait_s)
                    if nxt is None:
                        self._inbox.put(None)
                        break
                    batch.append(nxt)
            except queue.Empty:
                pass
            self.batches += 1
            try:
                for (_, future), value in zip(batch, self._run_batch([item for item, _ in batch])):
                    future.set_result(value)
            except Exception as exc:  # noqa: BLE001 - every waiter learns why its batch failed
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)


class ModelScorer:
    """Scores completions with a local token reward model; see the module docstring."""

    name: ClassVar[str] = "model"
    Options: ClassVar[type[BaseModel]] = ModelOptions

    @classmethod
    def from_settings(cls, settings: Any) -> "ModelScorer":
        return cls(settings.model_path, max_batch=settings.model_max_batch, device=settings.model_device)

    def warm_up(self) -> None:
        """Loading the checkpoint (in the constructor) is the warm-up."""

    def __init__(self, path: Optional[str] = None, *, max_batch: int = 32, max_wait_ms: float = 5.0,
                 device: str = "cpu"):
        if not path:
            raise ValueError("the model scorer needs a checkpoint: set model_path (BOTGRPO_MODEL_PATH)")
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if not self.tokenizer.is_fast:
            raise ValueError(f"{path}: the model scorer needs a fast tokenizer (character offsets)")
        self.model = AutoModelForTokenClassification.from_pretrained(path).to(device).eval()
        self.device = device
        self.max_length = min(getattr(self.model.config, "max_position_embeddings", 512) or 512, 4096)
        self.batcher = MicroBatcher(self._forward, max_batch=max_batch, max_wait_ms=max_wait_ms)

    def close(self) -> None:
        self.batcher.close()

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]:
        futures = [self.batcher.submit(r.completion) for r in rollouts]
        return [f.result() for f in futures]

    @torch.no_grad()
    def _forward(self, texts: list[str]) -> list[ScoreResult]:
        enc = self.tokenizer(texts, return_offsets_mapping=True, padding=True, truncation=True,
                             max_length=self.max_length, return_tensors="pt")
        offsets = enc.pop("offset_mapping")
        logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits.float().cpu()
        scores = _to_scores(logits)
        results = []
        for row, text in enumerate(texts):
            keep = enc["attention_mask"][row].bool() & (offsets[row, :, 1] > offsets[row, :, 0])
            spans = [SpanScore(int(s), int(e), (float(v) - 1.0) / 2.0)
                     for (s, e), v in zip(offsets[row][keep].tolist(), scores[row][keep].tolist())]
            mean = float(scores[row][keep].mean()) if keep.any() else 0.0
            results.append(ScoreResult(score=mean, passed=None, local=spans,
                                       details={"model_tokens": len(spans), "truncated": bool(len(spans)
                                                and spans[-1].end < len(text.rstrip()))}))
        return results


def _to_scores(logits: torch.Tensor) -> torch.Tensor:
    """``(B, T, labels) -> (B, T)`` in [-1, 1]: tanh of a single logit, else p(last) - p(first)."""
    if logits.shape[-1] == 1:
        return torch.tanh(logits[..., 0])
    probs = logits.softmax(-1)
    return probs[..., -1] - probs[..., 0]
