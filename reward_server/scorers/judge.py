"""The ``judge`` scorer: the ``react`` reward plus an LLM code judge (with ``vision``, a VLM
judge that also sees the screenshot of the first render), mixed into the outcome.

For each completion the ``react`` scorer runs first (every ``react`` option applies: level,
spec, lint, local signal), then the judge grades the code against the task's instruction
(``rollout.prompt``, else ``reference["instruction"]``) from 1 to 10, mapped to ``J`` in
[-1, 1] (:mod:`botgrpo.reward_server.judge.rubric`). The outcome is

    R = (1 - judge_weight) * R_react + judge_weight * J

and the local signal is the react scorer's: the judge gives a verdict on the whole component,
not a place. A rollout that fails the react check is not sent to the judge unless
``judge_failing`` (``J = -1``: broken code is the judge's lowest grade anyway, and the call is
saved); one the react scorer scores lowest (no code, truncated, a sandbox violation) never is.
A question the judge cannot answer (endpoint down, no valid reply after the retries) leaves the
rollout unscored (``error``), which trainers drop instead of punishing.

The endpoint is configured on the server, never per request: ``BOTGRPO_JUDGE_URL`` (an
OpenAI-compatible base URL such as ``http://localhost:8001/v1``), ``BOTGRPO_JUDGE_MODEL``,
``BOTGRPO_JUDGE_API_KEY``, ``BOTGRPO_JUDGE_TIMEOUT_S``, ``BOTGRPO_JUDGE_RETRIES``, and
``BOTGRPO_JUDGE_CACHE`` (a JSON-lines file that keeps verdicts across runs).
"""
from __future__ import annotations

import base64
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from botgrpo.reward_server.judge.cache import JudgeCache
from botgrpo.reward_server.judge.client import JudgeClient, JudgeConfig, JudgeError
from botgrpo.reward_server.scorers.base import Rollout, ScoreResult
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.references import ReactReference

FAIL = -1.0


class JudgeOptions(ReactOptions):
    """``react``'s options plus the judge's."""

    model_config = ConfigDict(extra="forbid")

    judge_weight: float = Field(0.5, ge=0, le=1, description="weight of the judge's verdict J in "
                                "R = (1 - judge_weight) * R_react + judge_weight * J")
    vision: bool = Field(False, description="also show the judge the screenshot of the first render (a VLM "
                         "judge; needs level render)")
    judge_failing: bool = Field(False, description="also judge rollouts that fail the react check (else J = -1 "
                                "without a call)")

    @model_validator(mode="after")
    def _vision_needs_render(self) -> "JudgeOptions":
        if self.vision and self.level != "render":
            raise ValueError("vision needs level render (the judge sees a screenshot of the render)")
        return self


def instruction_of(rollout: Rollout) -> Optional[str]:
    if rollout.prompt:
        return rollout.prompt
    reference = rollout.reference or {}
    for key in ("instruction", "prompt"):
        if isinstance(reference.get(key), str):
            return reference[key]
    return None


class JudgeScorer:
    """See the module docstring. ``react`` is the react scorer to start from (its own Node pool
    by default); ``config`` the endpoint (default: from the environment)."""

    name: ClassVar[str] = "judge"
    Options: ClassVar[type[BaseModel]] = JudgeOptions
    Reference: ClassVar[type[BaseModel]] = ReactReference  # checked at request time (reward_server.references)

    def __init__(self, config: Optional[JudgeConfig] = None, *, react: Optional[ReactScorer] = None,
                 cache: Optional[JudgeCache] = None, concurrency: int = 8, **react_kwargs: Any) -> None:
        self.config = config or JudgeConfig.from_env()
        self._react = react or ReactScorer(**react_kwargs)
        self._owns_react = react is None
        self._cache = cache if cache is not None else JudgeCache(path=os.environ.get("BOTGRPO_JUDGE_CACHE") or None)
        self._concurrency = max(1, concurrency)
        self._client: Optional[JudgeClient] = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any) -> "JudgeScorer":
        """A judge over a react scorer of its own, configured like the server's ``react``."""
        return cls(**ReactScorer.settings_kwargs(settings))

    describe = staticmethod(ReactScorer.describe)  # the same compiler, so the same imports

    @property
    def client(self) -> JudgeClient:
        with self._lock:
            if self._client is None:
                self._client = JudgeClient(self.config, self._cache)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._owns_react:
            self._react.close()

    def healthy(self) -> bool:
        return self._react.healthy()

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]:
        opts = options if isinstance(options, JudgeOptions) else JudgeOptions.model_validate(options)
        react_opts = ReactOptions.model_validate({
            **{k: v for k, v in opts.model_dump().items() if k in ReactOptions.model_fields},
            "screenshot": opts.screenshot or opts.vision})
        results = self._react.score_batch(rollouts, react_opts)
        asked = [i for i, r in enumerate(results) if self._asks(r, opts)]
        verdicts: dict[int, Any] = {}
        if asked:
            if not self.config.url:
                error = JudgeError("no judge endpoint configured (set BOTGRPO_JUDGE_URL, e.g. http://localhost:8001/v1)")
                verdicts = {i: error for i in asked}
            else:
                with ThreadPoolExecutor(min(self._concurrency, len(asked))) as pool:
                    answers = pool.map(lambda i: self._grade(rollouts[i], results[i], opts), asked)
                    verdicts = dict(zip(asked, answers))
        return [self._combine(result, verdicts.get(i), opts) for i, result in enumerate(results)]

    @staticmethod
    def _asks(result: ScoreResult, opts: JudgeOptions) -> bool:
        if result.error is not None or result.local_default < 0:  # unscored, or scored lowest (nothing to judge)
            return False
        return bool(result.passed) or opts.judge_failing

    def _grade(self, rollout: Rollout, result: ScoreResult, opts: JudgeOptions):
        span = result.details.get("code_span")
        code = rollout.completion[span[0]:span[1]] if span else rollout.completion
        screenshot = None
        if opts.vision:
            encoded = result.details.get("screenshot_png")
            if not encoded:
                return JudgeError(f"no screenshot to show the judge ({result.details.get('screenshot_error') or 'not rendered'})")
            screenshot = base64.b64decode(encoded)
        try:
            return self.client.grade(instruction_of(rollout), code, screenshot)
        except JudgeError as error:
            return error

    def _combine(self, result: ScoreResult, verdict: Any, opts: JudgeOptions) -> ScoreResult:
        details = dict(result.details)
        if not opts.screenshot:
            details.pop("screenshot_png", None)
        if result.error is not None:
            return result
        if isinstance(verdict, JudgeError):
            details["judge"] = {"error": str(verdict)}
            return ScoreResult(result.score, result.passed, result.local, result.local_default, details,
                               error=f"judge: {verdict}")
        if verdict is None:
            judged, details["judge"] = FAIL, {"skipped": "the component fails the react check" if result.local_default >= 0
                                              else "nothing to judge"}
        else:
            judged, details["judge"] = verdict.value, {"score": verdict.score, "value": verdict.value, "reason": verdict.reason}
        w = opts.judge_weight
        details["react_score"] = result.score
        score = result.score if result.local_default < 0 else (1 - w) * result.score + w * judged
        return ScoreResult(score, result.passed, result.local, result.local_default, details)
