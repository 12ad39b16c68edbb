"""Fair scheduling of waiting work: one FIFO lane per batch (request), served round-robin.

A single FIFO makes a request wait for every rollout queued before it: one client's 1,024
expensive rollouts delayed another client's single rollout by a minute. Here each batch waits
in its own lane and a worker takes from the lane served least recently (a new lane first), so
an arriving request waits only for the work already in the workers' hands, never for another
request's backlog. The rules:

* **least recently served first**: a new lane goes to the front, a served lane to the back;
* **one lane per take**: a take never mixes batches (the handler batches one request's items,
  which share task and options);
* **takes of about ``chunk_s`` seconds**: a lane's first take is one item; after that a take
  holds ``chunk_s / (seconds per item measured on this lane)`` items (1 to ``max_items``), so
  cheap rollouts are batched and slow ones go one at a time: the work in a worker's hands, which
  is what a newcomer may have to wait for, stays near ``max(chunk_s, one rollout)``;
* **smaller still under contention**: while other lanes wait, a take holds at most
  ``ceil(max_items / lanes waiting)`` items;
* **eligibility**: a lane whose ``ready`` predicate is false (its client is not reading its
  results) is skipped and keeps its place; it costs no worker time until it is ready again.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from .base import WorkItem


def take_size(max_items: int, lanes_waiting: int, seconds_per_item: float | None, chunk_s: float) -> int:
    """Items one take may hold: 1 while the lane's cost is unknown, else about ``chunk_s`` of
    work, never more than ``ceil(max_items / lanes_waiting)`` (this lane included)."""
    fair_share = max(1, -(-max_items // max(1, lanes_waiting)))
    if seconds_per_item is None:
        return 1
    by_cost = int(chunk_s / seconds_per_item) if seconds_per_item > 0 else max_items
    return max(1, min(fair_share, by_cost))


class FairBacklog:
    """Waiting items, one lane per batch; see the module docstring for the rules."""

    def __init__(self, chunk_s: float = 0.5) -> None:
        self._lanes: OrderedDict[str, deque[WorkItem]] = OrderedDict()  # front: served least recently
        self._cost: dict[str, float] = {}  # batch -> measured seconds per item (moving average)
        self._size = 0
        self.chunk_s = chunk_s

    def __len__(self) -> int:
        return self._size

    def lanes(self) -> int:
        return len(self._lanes)

    def add(self, items: Iterable[WorkItem]) -> None:
        """Queue ``items`` at the end of their batch's lane; a new lane goes to the front."""
        for item in items:
            lane = self._lanes.get(item.batch)
            if lane is None:
                lane = self._lanes[item.batch] = deque()
                self._lanes.move_to_end(item.batch, last=False)
            lane.append(item)
            self._size += 1

    def take(self, max_items: int, ready: Callable[[str], bool] = lambda batch: True) -> list[WorkItem]:
        """Up to :func:`take_size` items from the first ready lane (which then goes to the back);
        [] when no lane is ready."""
        for batch, lane in self._lanes.items():
            if not ready(batch):
                continue
            count = min(len(lane), take_size(max_items, len(self._lanes), self._cost.get(batch), self.chunk_s))
            items = [lane.popleft() for _ in range(count)]
            self._size -= count
            if lane:
                self._lanes.move_to_end(batch)
            else:
                del self._lanes[batch]  # its cost goes with the last take's record()
            return items
        return []

    def record(self, batch: str, items: int, elapsed_s: float) -> None:
        """A take of ``items`` of ``batch`` took ``elapsed_s``: update the lane's cost estimate."""
        if items < 1 or (batch not in self._lanes and batch not in self._cost):
            return
        if batch not in self._lanes:  # its last take: nothing left to size, so nothing to keep
            self._cost.pop(batch, None)
            return
        per_item = max(0.0, elapsed_s) / items
        previous = self._cost.get(batch)
        self._cost[batch] = per_item if previous is None else 0.5 * previous + 0.5 * per_item

    def drop(self, batch: str) -> int:
        """Forget ``batch``'s waiting items (its client left); how many there were."""
        self._cost.pop(batch, None)
        lane = self._lanes.pop(batch, None)
        count = len(lane) if lane else 0
        self._size -= count
        return count
