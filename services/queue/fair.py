"""Fair scheduling of waiting work: clients served round-robin, each client's requests in order.

A single FIFO makes a request wait for every rollout queued before it: one client's 1,024
expensive rollouts delayed another client's single rollout by a minute. One lane per *request*,
a new one served first, fixed that for a burst but not for a stream: a client sending 20 new
one-rollout requests a second put each of them ahead of the request already waiting, and
another client's single rollout waited 40 s (issue 34). So fairness is between *clients*
(:attr:`WorkItem.client <botgrpo.services.queue.base.WorkItem.client>`: the server names them,
see docs/security.md), and a client gains nothing by splitting its work into more requests or
connections. The rules:

* **least recently served client first**: clients take turns in the order of the take that
  last served each; a client that starts waiting (a new one, or one whose backlog had emptied)
  joins as if served just before the latest take: behind every client that waited since, so
  neither a new request nor a new client ever moves ahead of a client already waiting;
* **within a client, its requests in arrival order**, and **one request per take** (the handler
  batches one request's items, which share task and options);
* **takes of about ``chunk_s`` seconds**: a request's first take is one item; after that a take
  holds ``chunk_s / (seconds per item measured on this request)`` items (1 to ``max_items``), so
  cheap rollouts are batched and slow ones go one at a time: the work in a worker's hands, which
  is what another client may have to wait for, stays near ``max(chunk_s, one rollout)``;
* **smaller still under contention**: while other clients wait, a take holds at most
  ``ceil(max_items / clients waiting)`` items;
* **eligibility**: a request whose ``ready`` predicate is false (its client is not reading its
  results) is skipped and keeps its place; it costs no worker time until it is ready again.

So a client waits for at most one take of each other waiting client, however many requests they
send, and nothing is kept of a client that waits no more. The Redis back end applies the same
rules in Redis (:mod:`.redis_streams`) but one: it keeps the cost per client, not per request.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from botgrpo.services.queue.base import WorkItem


def take_size(max_items: int, clients_waiting: int, seconds_per_item: float | None, chunk_s: float) -> int:
    """Items one take may hold: 1 while the cost is unknown, else about ``chunk_s`` of work,
    never more than ``ceil(max_items / clients_waiting)`` (this client included)."""
    fair_share = max(1, -(-max_items // max(1, clients_waiting)))
    if seconds_per_item is None:
        return 1
    by_cost = int(chunk_s / seconds_per_item) if seconds_per_item > 0 else max_items
    return max(1, min(fair_share, by_cost))


class FairBacklog:
    """Waiting items, by client and request (batch); see the module docstring for the rules."""

    def __init__(self, chunk_s: float = 0.5) -> None:
        self._clients: dict[str, OrderedDict[str, deque[WorkItem]]] = {}  # client -> its batches, oldest first
        self._client_of: dict[str, str] = {}  # batch -> its client, while the batch has items waiting
        self._turn: dict[str, float] = {}  # waiting client -> the take that last served it (x.5: joined after take x)
        self._clock = 0  # takes so far
        self._cost: dict[str, float] = {}  # batch -> measured seconds per item (moving average)
        self._size = 0
        self.chunk_s = chunk_s

    def __len__(self) -> int:
        return self._size

    def lanes(self) -> int:
        """Batches with items waiting."""
        return len(self._client_of)

    def clients(self) -> int:
        """Clients with items waiting."""
        return len(self._clients)

    def add(self, items: Iterable[WorkItem]) -> None:
        """Queue ``items`` at the end of their batch's lane, the lane at the end of its client's."""
        for item in items:
            if item.client not in self._clients:
                self._turn[item.client] = self._clock - 0.5
            batches = self._clients.setdefault(item.client, OrderedDict())
            batches.setdefault(item.batch, deque()).append(item)
            self._client_of[item.batch] = item.client
            self._size += 1

    def take(self, max_items: int, ready: Callable[[str], bool] = lambda batch: True) -> list[WorkItem]:
        """Up to :func:`take_size` items of the first ready batch of the least recently served
        client that has one; [] when no batch is ready."""
        for client in sorted(self._clients, key=self._turn.__getitem__):  # stable: ties by arrival
            batches = self._clients[client]
            for batch, lane in batches.items():
                if not ready(batch):
                    continue
                count = min(len(lane), take_size(max_items, len(self._clients), self._cost.get(batch), self.chunk_s))
                items = [lane.popleft() for _ in range(count)]
                self._size -= count
                if not lane:
                    self._remove(batch)  # its cost goes with the last take's record()
                self._clock += 1
                if client in self._clients:
                    self._turn[client] = self._clock
                return items
        return []

    def record(self, batch: str, items: int, elapsed_s: float) -> None:
        """A take of ``items`` of ``batch`` took ``elapsed_s``: update the batch's cost estimate."""
        if items < 1:
            return
        if batch not in self._client_of:  # its last take: nothing left to size, so nothing to keep
            self._cost.pop(batch, None)
            return
        per_item = max(0.0, elapsed_s) / items
        previous = self._cost.get(batch)
        self._cost[batch] = per_item if previous is None else 0.5 * previous + 0.5 * per_item

    def drop(self, batch: str) -> int:
        """Forget ``batch``'s waiting items (its client left); how many there were."""
        self._cost.pop(batch, None)
        if batch not in self._client_of:
            return 0
        count = len(self._clients[self._client_of[batch]][batch])
        self._size -= count
        self._remove(batch)
        return count

    def _remove(self, batch: str) -> None:
        client = self._client_of.pop(batch)
        batches = self._clients[client]
        del batches[batch]
        if not batches:
            del self._clients[client]
            del self._turn[client]
