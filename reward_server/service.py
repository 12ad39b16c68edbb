"""The scoring service: validates requests against the scorers and scores queued work items.

The HTTP layer calls :meth:`ScoringService.check` before anything is queued (so bad input is a
4xx, never a failed work item), and the queue's workers call :meth:`ScoringService.handle`,
in-process or in a ``botgrpo worker`` on another host: the same code either way.
"""
from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, ValidationError

from botgrpo.reward_server.limits import default_split_count
from botgrpo.reward_server.references import reference_problems
from botgrpo.reward_server.scorers import REQUIRES, SCORERS, scorer_class
from botgrpo.reward_server.scorers.base import Rollout, ScoreResult
from botgrpo.reward_server.settings import ServerSettings
from botgrpo.reward_server.spans import check_offsets, compose
from botgrpo.services.queue import Outcome, WorkItem
from botgrpo.services.recipe import WireMap, clip_outcome
from botgrpo.services.schemas import RewardRequest, Result, default_split


class RequestRejected(Exception):
    """Input the server will not take; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class ScoringService:
    """Owns one scorer per task (created on first use) and the verdict -> :class:`Result` mapping."""

    def __init__(self, settings: ServerSettings):
        self.settings = settings
        self._scorers: dict[str, Any] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- scorers
    def scorer(self, task: str):
        with self._lock:
            if task not in self._scorers:
                self._scorers[task] = self._create(task)
            return self._scorers[task]

    def _create(self, task: str):
        """A scorer reads its own settings (``from_settings``); one without takes none."""
        cls = scorer_class(task)
        return cls.from_settings(self.settings) if hasattr(cls, "from_settings") else cls()

    def tasks(self) -> list[str]:
        """The tasks this server scores: those whose required setting (``REQUIRES``) is set."""
        return sorted(t for t in SCORERS if t not in REQUIRES or getattr(self.settings, REQUIRES[t]))

    def warm_up(self) -> None:
        """Start the scorers that have something to start (``warm_up``), so the first request
        does not pay for it."""
        for task in self.tasks():
            if hasattr(scorer_class(task), "warm_up"):
                self.scorer(task).warm_up()

    def healthy(self) -> dict[str, bool]:
        return {task: getattr(scorer, "healthy", lambda: True)() for task, scorer in self._scorers.items()}

    def close(self) -> None:
        for scorer in self._scorers.values():
            getattr(scorer, "close", lambda: None)()

    def describe(self) -> list[dict[str, Any]]:
        """Each task's options schema, and what its scorer takes from the server's settings
        (a scorer's optional ``describe(settings)``: the React scorers' allowed imports)."""
        return [{"task": task, "options": scorer_class(task).Options.model_json_schema(),
                 **getattr(scorer_class(task), "describe", lambda settings: {})(self.settings)}
                for task in self.tasks()]

    # ---------------------------------------------------------------- validation
    def check(self, request: RewardRequest) -> BaseModel:
        """The request's validated options; :class:`RequestRejected` naming the first problem.

        Each rollout's ``reference`` is validated against its scorer's ``Reference`` model (see
        :mod:`botgrpo.reward_server.references`): a malformed spec is a 422 naming the field, never a
        rollout judged as if it had none. The HTTP layer calls this before queueing (Redis too).
        """
        s = self.settings
        if request.task not in self.tasks():
            raise RequestRejected(422, f"unknown task {request.task!r}; valid tasks: {self.tasks()}")
        for limit in ("max_rollouts", "queue_max_depth"):  # a batch over the queue's depth could never be queued
            if len(request.rollouts) > getattr(s, limit):
                raise RequestRejected(413, f"{len(request.rollouts)} rollouts exceed the limit {limit}={getattr(s, limit)}")
        options = self._options(request.task, request.options)
        reference_model = getattr(scorer_class(request.task), "Reference", None)
        seen: set[str] = set()
        total_tokens = 0
        for i, rollout in enumerate(request.rollouts):
            if rollout.id in seen:
                raise RequestRejected(422, f"rollouts[{i}].id {rollout.id!r} is not unique in the request")
            seen.add(rollout.id)
            if reference_model is not None and rollout.reference is not None:
                problems = reference_problems(reference_model, rollout.reference, f"rollouts[{i}].reference")
                if problems:
                    raise RequestRejected(422, f"invalid reference for task {request.task!r}: {'; '.join(problems)}")
            if len(rollout.completion) > s.max_completion_chars:
                raise RequestRejected(413, f"rollouts[{i}].completion has {len(rollout.completion)} characters; "
                                           f"the limit max_completion_chars is {s.max_completion_chars}")
            if rollout.token_offsets is not None:
                if len(rollout.token_offsets) > s.max_tokens:
                    raise RequestRejected(413, f"rollouts[{i}].token_offsets has {len(rollout.token_offsets)} spans; "
                                               f"the limit max_tokens is {s.max_tokens}")
                problem = check_offsets(rollout.token_offsets, len(rollout.completion))
                if problem:
                    raise RequestRejected(422, f"rollouts[{i}]: {problem}")
            # the work (and the response) grows with the tokens scored: cap their sum per request
            total_tokens += (len(rollout.token_offsets) if rollout.token_offsets is not None
                             else default_split_count(rollout.completion))
            if total_tokens > s.max_request_tokens:
                raise RequestRejected(413, f"the request holds more than {s.max_request_tokens} tokens (at least "
                                           f"{total_tokens} by rollouts[{i}]: token_offsets, or the server's whitespace "
                                           f"split where they are omitted); the limit max_request_tokens is "
                                           f"{s.max_request_tokens}: send fewer or shorter rollouts per request")
        return options

    @staticmethod
    def _options(task: str, raw: dict[str, Any]) -> BaseModel:
        model = scorer_class(task).Options
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
            raise RequestRejected(422, f"invalid options for task {task!r}: {problems}; "
                                       f"valid options: {sorted(model.model_fields)}") from None

    @staticmethod
    def work_items(batch: str, request: RewardRequest, options: BaseModel, client: str = "") -> list[WorkItem]:
        """The queue's items of ``request``, sent by ``client`` (:mod:`botgrpo.reward_server.clients`)."""
        opts = options.model_dump(mode="json")
        return [WorkItem(batch, i, {"task": request.task, "options": opts, "rollout": r.model_dump(mode="json"),
                                    "return_offsets": request.return_offsets}, client)
                for i, r in enumerate(request.rollouts)]

    def score(self, request: RewardRequest) -> list[Result]:
        """Score a whole request in this thread, without a queue (``botgrpo score``): checked as
        the server checks it (:class:`RequestRejected` naming the first problem), then one result
        per rollout, in order."""
        items = self.work_items("local", request, self.check(request))
        return self._score_group(request.task, items)

    def outcome_result(self, outcome: Outcome, request: RewardRequest) -> Result:
        """The result the queue delivered for ``outcome``, or the unscored result of a rollout the
        queue gave up on (a timeout, a dead letter)."""
        if outcome.result is not None:
            return outcome.result
        rollout = request.rollouts[outcome.index].model_dump(mode="json")
        return Result.unscored(rollout, outcome.index, outcome.error or "unknown error", self.settings.bounds,
                               return_offsets=request.return_offsets)

    # ---------------------------------------------------------------- scoring
    async def handle(self, items: list[WorkItem]) -> list[Result]:
        """Score ``items`` (the queue's handler): one result per item, in order. Never raises.

        Items are grouped by task and options so that each scorer sees whole batches. Anything
        that goes wrong while scoring an item (a scorer raising, a malformed payload) becomes
        that item's unscored result, not a failure of the batch.
        """
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, item in enumerate(items):
            try:
                key = (str(item.payload["task"]), json.dumps(item.payload["options"], sort_keys=True))
            except Exception:  # noqa: BLE001 - a malformed item is scored (and fails) on its own
                key = ("", f"malformed item {i}")
            groups[key].append(i)
        results: list[Result | None] = [None] * len(items)
        for (task, _), members in groups.items():
            group = [items[i] for i in members]
            try:
                scored = await asyncio.to_thread(self._score_group, task, group)
            except Exception as exc:  # noqa: BLE001 - _score_group is total; this is the last resort
                scored = [self._failed(item, exc) for item in group]
            for i, result in zip(members, scored):
                results[i] = result
        return results  # type: ignore[return-value]

    def _score_group(self, task: str, items: list[WorkItem]) -> list[Result]:
        """One result per item; a group whose scoring raises is rescored item by item, so that
        only the item at fault gets an unscored result."""
        try:
            scorer = self.scorer(task)
            options = scorer.Options.model_validate(items[0].payload["options"])
            rollouts = [item.payload["rollout"] for item in items]
            verdicts = scorer.score_batch([Rollout(r["completion"], r.get("prompt"), r.get("reference"),
                                                   r.get("finish_reason") == "length")
                                           for r in rollouts], options)
            if len(verdicts) != len(items):
                raise RuntimeError(f"scorer {task!r} returned {len(verdicts)} results for {len(items)} rollouts")
        except Exception as exc:  # noqa: BLE001 - isolated below
            if len(items) > 1:
                return [result for item in items for result in self._score_group(task, [item])]
            return [self._failed(items[0], exc)]
        wire = WireMap.of(options.local_weight, self.settings.bounds)
        results = []
        for item, rollout, verdict in zip(items, rollouts, verdicts):
            try:
                results.append(self._result(item, rollout, verdict, options.local_weight, wire))
            except Exception as exc:  # noqa: BLE001 - e.g. a verdict the mapper cannot place
                results.append(self._failed(item, exc))
        return results

    def _failed(self, item: WorkItem, exc: BaseException) -> Result:
        """The unscored result of an item whose scoring raised ``exc`` (logged with its traceback)."""
        import logging
        logging.getLogger(__name__).error("scoring %s[%d] failed", item.batch, item.index, exc_info=exc)
        error = f"scoring failed: {type(exc).__name__}: {str(exc)[:300]}"
        payload = item.payload if isinstance(item.payload, dict) else {}
        rollout = payload.get("rollout")
        try:
            return Result.unscored(rollout, item.index, error, self.settings.bounds,
                                   return_offsets=bool(payload.get("return_offsets")))
        except Exception:  # noqa: BLE001 - a rollout too malformed to split
            rid = rollout.get("id") if isinstance(rollout, dict) else None
            return Result.unscored({"id": str(rid), "token_offsets": []}, item.index, error, self.settings.bounds)

    def _result(self, item: WorkItem, rollout: dict[str, Any], verdict: ScoreResult, local_weight: float,
                wire: WireMap) -> Result:
        """The outcome as ``score``, the composed token rewards as ``token_scores``; a verdict that
        cannot judge the rollout (``verdict.error``) is an unscored result keeping its details."""
        echo = bool(item.payload.get("return_offsets"))
        if verdict.error is not None:
            return Result.unscored(rollout, item.index, verdict.error, self.settings.bounds, verdict.details, echo)
        completion, sent = rollout["completion"], rollout.get("token_offsets")
        # pairs of ints as tuples, which the garbage collector stops tracking: 100k-token
        # results as lists made full collections take a second
        offsets = [tuple(span) for span in sent] if sent is not None else default_split(completion)
        scores = compose(verdict, len(completion), offsets, local_weight, self.settings.bounds, wire)
        return Result.scored(rollout, item.index, score=clip_outcome(verdict.score, self.settings.bounds),
                             passed=verdict.passed, token_scores=scores, reward_map=wire, details=verdict.details,
                             offsets=offsets if sent is None or echo else None)
