"""Rollout engines behind one interface (:class:`~trainer.rollout.base.Engine`)."""
from .base import Engine, RolloutBatch, SamplingParams

__all__ = ["Engine", "RolloutBatch", "SamplingParams"]
