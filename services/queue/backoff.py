"""Reconnect pacing shared by the Redis producer, reader and worker.

Capped exponential backoff with jitter: quick to recover from a blip, gentle on a Redis that is
restarting (and replaying its AOF), and de-synchronised so a fleet of workers does not reconnect
in lockstep.
"""
from __future__ import annotations

import asyncio
import contextlib
import random


class Backoff:
    """Delays of ``initial * 2**n`` seconds, capped at ``cap``, each scaled by a random 50-100%."""

    def __init__(self, initial_s: float = 0.05, cap_s: float = 2.0) -> None:
        self._initial_s = initial_s
        self._cap_s = cap_s
        self._failures = 0

    def next_delay(self) -> float:
        delay = min(self._cap_s, self._initial_s * 2**self._failures)
        self._failures = min(self._failures + 1, 32)
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self._failures = 0


async def sleep_unless_stopped(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep up to ``seconds``, waking early when ``stop`` is set. Returns whether it is set."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    return stop.is_set()
