"""A content-keyed cache of judge verdicts: the key is a hash of everything the verdict
depends on (endpoint model, messages with their images, output schema, sampling), so a
repeated rollout (GRPO groups repeat themselves) costs no second call, and a changed prompt or
model never reuses a stale verdict. In memory (LRU), optionally persisted as JSON lines."""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional


def content_key(payload: Any) -> str:
    """SHA-256 of the canonical JSON of ``payload``."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


class JudgeCache:
    """Thread-safe LRU of ``key -> verdict`` (a JSON object); ``path`` keeps it across runs."""

    def __init__(self, max_entries: int = 10_000, path: Optional[str | Path] = None) -> None:
        self.max_entries = max_entries
        self.path = Path(path) if path else None
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        if self.path is not None and self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    row = json.loads(line)
                    self._items[str(row["key"])] = dict(row["verdict"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line of an interrupted run
            while len(self._items) > max_entries:
                self._items.popitem(last=False)

    def get(self, key: str) -> Optional[dict[str, Any]]:
        with self._lock:
            verdict = self._items.get(key)
            if verdict is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return dict(verdict)

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = dict(verdict)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
            if self.path is not None:
                with self.path.open("a") as out:
                    out.write(json.dumps({"key": key, "verdict": verdict}) + "\n")

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
