"""Rollout queue between the reward server and its scoring workers.

``InProcessQueue`` runs workers inside the server (no ``REDIS_URL``); ``RedisQueue`` plus any
number of ``RedisWorker`` processes share work through a Redis Stream consumer group. Both give
the server the same :class:`RolloutQueue` contract: streamed, exactly-once outcomes per batch.
"""
from botgrpo.services.queue.base import TIMED_OUT, Handler, Outcome, QueueFull, RolloutQueue, WorkItem
from botgrpo.services.queue.inprocess import InProcessQueue
from botgrpo.services.queue.redis_queue import RedisQueue
from botgrpo.services.queue.redis_streams import DEFAULT_DEAD_STREAM, DEFAULT_GROUP, DEFAULT_STREAM, result_key
from botgrpo.services.queue.redis_worker import RedisWorker, run_worker

__all__ = [
    "DEFAULT_DEAD_STREAM",
    "DEFAULT_GROUP",
    "DEFAULT_STREAM",
    "TIMED_OUT",
    "Handler",
    "InProcessQueue",
    "Outcome",
    "QueueFull",
    "RedisQueue",
    "RedisWorker",
    "RolloutQueue",
    "WorkItem",
    "result_key",
    "run_worker",
]
