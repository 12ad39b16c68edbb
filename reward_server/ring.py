"""The inspector's memory: the last scored rollouts, each cut to a bounded size, and the view the
page draws from them.

:meth:`RolloutRing.record` runs on the event loop for every result the server sends, so it only
slices: at most :data:`MAX_CHARS` characters of the completion, :data:`MAX_TOKENS` of its tokens
(slices of the result's own lists of spans and scores) and :data:`MAX_NOTES` blame notes of
:data:`MAX_NOTE_CHARS` each. One entry then holds at most about 0.5 MB whatever was scored
(tests/test_inspector.py measures the worst case; a 300-token math rollout about 50 KB), and the
ring ``capacity`` entries. An entry says when it was cut (``chars`` and ``tokens`` are the full
counts).

:func:`view` turns an entry into what the page shows: the shown text cut into runs of one
colour (:func:`segments`; a character takes the score of the first token covering it, a character
no token covers has none) and, for each run, the notes whose span it touches. Text goes out as
text, never offsets, so the page need not map Python's code points onto JavaScript's UTF-16.
"""
from __future__ import annotations

import logging
import time
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from pydantic import BaseModel, Field

from botgrpo.services.schemas import Result, RewardRequest

log = logging.getLogger(__name__)
MAX_CHARS = 4000       # characters of a completion kept
MAX_TOKENS = 2000      # tokens of a completion kept (its first; those starting in the kept characters are shown)
MAX_NOTES = 100        # blame notes kept per rollout
MAX_NOTE_CHARS = 300   # characters of one note (and of the reason, the error, the id)
MAX_SCAN = 2000        # items of one detail list read for notes (bounded work on the event loop)


@dataclass(frozen=True)
class Note:
    """Why the characters ``[start, end)`` of a completion were blamed (from a result's details)."""

    start: int
    end: int
    message: str


def _cut(text: Any, limit: int = MAX_NOTE_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _span(item: Any) -> Optional[tuple[int, int]]:
    if isinstance(item, dict):
        start, end = item.get("start"), item.get("end")
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        start, end = item
    else:
        return None
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    return (start, end) if ok and 0 <= start <= end else None


def _items(value: Any) -> list[Any]:
    return value[:MAX_SCAN] if isinstance(value, list) else []


def _errors(details: dict[str, Any], value: Any) -> Iterable[Note]:
    """``errors``: the react scorer's compile and type errors."""
    for item in _items(value):
        span = _span(item)
        if span:
            yield Note(*span, _cut(f"line {item.get('line')}: {item.get('message')}" if item.get("line") is not None
                                   else item.get("message")))


def _lint(details: dict[str, Any], value: Any) -> Iterable[Note]:
    """``lint``: the react scorer's lint findings."""
    for item in _items(value):
        span = _span(item)
        if span:
            yield Note(*span, _cut(f"lint {item.get('rule')}: {item.get('message')}"))


def _steps(details: dict[str, Any], value: Any) -> Iterable[Note]:
    """``steps``: the math scorer's arithmetic steps not verified right."""
    for item in _items(value):
        span = _span(item)
        if span and isinstance(item, dict) and item.get("ok") is not True:
            verdict = "wrong step" if item.get("ok") is False else "unverified step"
            yield Note(*span, _cut(f"{verdict}: {item.get('text')}"))


def _answer(details: dict[str, Any], value: Any) -> Iterable[Note]:
    """``answer_span``: the math scorer's final answer and its verdict."""
    span = _span(value)
    if span:
        yield Note(*span, _cut(f"answer {details.get('answer')}: {details.get('reason')}"))


# a detail key -> what its spans mean; a scorer whose details hold other spans adds a reader here
NOTE_READERS: dict[str, Callable[[dict[str, Any], Any], Iterable[Note]]] = {
    "errors": _errors, "lint": _lint, "steps": _steps, "answer_span": _answer,
}


def notes_of(details: dict[str, Any]) -> list[Note]:
    """The located blame reasons in a result's ``details``, at most :data:`MAX_NOTES`."""
    found: list[Note] = []
    for key, read in NOTE_READERS.items():
        if key in details:
            for note in read(details, details[key]):
                if len(found) == MAX_NOTES:
                    return found
                found.append(note)
    return found


@dataclass(frozen=True)
class Recorded:
    """One scored rollout as the ring keeps it (cut to the limits above)."""

    seq: int
    at: float
    task: str
    level: Optional[str]
    id: str
    score: float
    passed: Optional[bool]
    error: Optional[str]
    reason: Optional[str]
    text: str          # the first MAX_CHARS characters
    chars: int         # characters of the whole completion
    tokens: int        # tokens of the whole completion
    offsets: list[tuple[int, int]]  # the first MAX_TOKENS tokens' spans (the result's own tuples, not copies)
    scores: list[float]             # their scores
    notes: tuple[Note, ...]


def record_of(seq: int, request: RewardRequest, result: Result) -> Recorded:
    """The entry of ``result`` (a result of ``request``): slices only (this runs on the event loop
    for every result sent, so it never loops over tokens), bounded by the limits."""
    rollout = request.rollouts[result.index]
    completion = rollout.completion
    text = completion[:MAX_CHARS]
    offsets = result.token_offsets if result.token_offsets is not None else (rollout.token_offsets or [])
    offsets = offsets[:MAX_TOKENS]
    details = result.details if isinstance(result.details, dict) else {}
    level = details.get("level", request.options.get("level"))
    reason = details.get("reason")
    return Recorded(seq=seq, at=time.time(), task=request.task, level=None if level is None else _cut(level),
                    id=_cut(result.id), score=result.score, passed=result.passed,
                    error=None if result.error is None else _cut(result.error),
                    reason=None if reason is None else _cut(reason), text=text, chars=len(completion),
                    tokens=len(result.token_scores), offsets=offsets, scores=result.token_scores[:len(offsets)],
                    notes=tuple(n for n in notes_of(details) if n.start < len(text)))


class RolloutRing:
    """The last ``capacity`` scored rollouts, newest last. Used from the event loop only."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._entries: deque[Recorded] = deque(maxlen=capacity)
        self._seq = 0

    def record(self, request: RewardRequest, result: Result) -> None:
        """Keep ``result`` (of ``request``); never raises: the inspector must not fail a response."""
        if not self.capacity:  # the inspector is off
            return
        try:
            entry = record_of(self._seq + 1, request, result)
        except Exception:  # noqa: BLE001 - logged; the result is still sent
            log.exception("the inspector could not record result %s", result.index)
            return
        self._seq += 1
        self._entries.append(entry)

    def snapshot(self) -> list[Recorded]:
        """The entries, newest first."""
        return list(reversed(self._entries))


# ------------------------------------------------------------------------------------------- view
class InspectedRollout(BaseModel):
    """One rollout as the page shows it."""

    seq: int = Field(..., description="order of recording (higher: more recent)")
    at: float = Field(..., description="when it was scored (Unix seconds)")
    task: str
    level: Optional[str] = Field(None, description="the scorer's level (react: syntax, build, typecheck, render)")
    id: str
    score: float = Field(..., description="the outcome R, within the bounds")
    passed: Optional[bool]
    error: Optional[str] = Field(None, description="why it could not be scored")
    reason: Optional[str] = Field(None, description="the scorer's reason for its verdict")
    chars: int = Field(..., description="characters of the whole completion")
    shown_chars: int = Field(..., description="characters shown: fewer than `chars` when it was cut")
    tokens: int = Field(..., description="tokens of the whole completion")
    shown_tokens: int = Field(..., description="tokens shown")
    segments: list[tuple[str, Optional[float], list[int]]] = Field(
        ..., description="[text, score or null, indices into `notes`]: the shown text in runs of one score")
    notes: list[str] = Field(..., description="blame reasons located in the text")


class InspectorView(BaseModel):
    bounds: tuple[float, float]
    capacity: int = Field(..., description="rollouts kept")
    max_chars: int = Field(MAX_CHARS, description="characters kept of each completion")
    rollouts: list[InspectedRollout] = Field(..., description="newest first")


def segments(length: int, starts: Iterable[int], ends: Iterable[int],
             scores: Iterable[float]) -> list[tuple[int, int, Optional[float]]]:
    """``[start, end, score]`` runs covering ``[0, length)`` in order: a character takes the score
    of the first token (by start) covering it; runs no token covers have ``None``. Empty tokens
    show nothing."""
    runs: list[tuple[int, int, Optional[float]]] = []
    cursor = 0
    for start, end, score in sorted(zip(starts, ends, scores), key=lambda t: (t[0], t[1])):
        start = max(start, cursor)
        if start >= end:
            continue
        if start > cursor:
            runs.append((cursor, start, None))
        runs.append((start, end, score))
        cursor = end
    if cursor < length:
        runs.append((cursor, length, None))
    return runs


def view(entry: Recorded) -> InspectedRollout:
    shown = [(start, min(end, len(entry.text)), score) for (start, end), score in zip(entry.offsets, entry.scores)
             if start < len(entry.text)]
    runs = segments(len(entry.text), *zip(*shown)) if shown else segments(len(entry.text), [], [], [])
    run_starts = [start for start, _, _ in runs]
    touching: list[list[int]] = [[] for _ in runs]
    for n, note in enumerate(entry.notes):  # the runs a note's span overlaps (an empty span: the run at it)
        first = max(0, bisect_right(run_starts, note.start) - 1)
        last = bisect_left(run_starts, max(note.end, note.start + 1))
        for r in range(first, last):
            touching[r].append(n)
    return InspectedRollout(
        seq=entry.seq, at=entry.at, task=entry.task, level=entry.level, id=entry.id, score=entry.score,
        passed=entry.passed, error=entry.error, reason=entry.reason, chars=entry.chars, shown_chars=len(entry.text),
        tokens=entry.tokens, shown_tokens=len(shown),
        segments=[(entry.text[s:e], score, touching[r]) for r, (s, e, score) in enumerate(runs)],
        notes=[note.message for note in entry.notes])
