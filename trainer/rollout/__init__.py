"""Rollout engines behind one interface (:class:`~trainer.rollout.base.Engine`)."""
from botgrpo.trainer.rollout.base import Engine, RolloutBatch, SamplingParams

__all__ = ["Engine", "RolloutBatch", "SamplingParams"]
