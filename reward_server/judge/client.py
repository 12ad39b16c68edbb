"""The judge's HTTP client: one OpenAI-compatible ``POST {url}/chat/completions`` per question
(vLLM's server, or any hosted API), structured output requested with ``response_format``,
the reply parsed strictly (:mod:`botgrpo.reward_server.judge.rubric`), and verdicts cached by content.

Bounded: every request has a timeout; a timeout, a connection error, a 429 or a 5xx and a
reply that is not exactly a verdict are retried (``retries`` times, jittered backoff, a
``Retry-After`` up to 10 s honoured); any other 4xx fails at once, except that a 400 to a
request with ``response_format`` is retried once without it (servers without structured
output), still parsed strictly. A question that exhausts its attempts raises
:class:`JudgeError` naming the last reason; the caller decides what an unanswered question
means (the judge scorer leaves the rollout unscored).
"""
from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

import httpx

from botgrpo.reward_server.judge import rubric
from botgrpo.reward_server.judge.cache import JudgeCache, content_key

T = TypeVar("T")
ENV = "BOTGRPO_JUDGE_"


class JudgeError(RuntimeError):
    """The judge gave no valid verdict."""


@dataclass(frozen=True)
class JudgeConfig:
    """Where the judge is and how hard to try. ``url`` is the API base (``http://host:8001/v1``)."""

    url: Optional[str] = None
    model: str = "judge"
    api_key: Optional[str] = None
    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = 0.5
    max_tokens: int = 256
    temperature: float = 0.0
    structured: bool = True

    @classmethod
    def from_env(cls, environ: Optional[dict[str, str]] = None, **overrides: Any) -> "JudgeConfig":
        """``BOTGRPO_JUDGE_URL``, ``_MODEL``, ``_API_KEY``, ``_TIMEOUT_S``, ``_RETRIES`` (then ``overrides``)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, cast in (("url", str), ("model", str), ("api_key", str), ("timeout_s", float), ("retries", int)):
            raw = env.get(ENV + name.upper())
            if raw:
                values[name] = cast(raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class JudgeStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    invalid: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)


class JudgeClient:
    """Thread-safe; one HTTP connection pool. ``cache`` may be shared between clients."""

    def __init__(self, config: JudgeConfig, cache: Optional[JudgeCache] = None,
                 transport: Optional[httpx.BaseTransport] = None) -> None:
        if not config.url:
            raise JudgeError(f"no judge endpoint configured (set {ENV}URL, e.g. http://localhost:8001/v1)")
        self.config = config
        self.cache = cache if cache is not None else JudgeCache()
        self.stats = JudgeStats()
        headers = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http = httpx.Client(base_url=config.url.rstrip("/"), headers=headers, transport=transport,
                                  timeout=httpx.Timeout(config.timeout_s))

    def close(self) -> None:
        self._http.close()

    def grade(self, instruction: Optional[str], code: str, screenshot: Optional[bytes] = None) -> rubric.Verdict:
        """Pointwise grade of ``code`` for ``instruction`` (with its screenshot: the VLM judge)."""
        return self.ask(rubric.pointwise_messages(instruction, code, screenshot), rubric.POINTWISE_SCHEMA,
                        rubric.parse_pointwise, "verdict")

    def compare(self, instruction: Optional[str], code_a: str, code_b: str) -> rubric.Preference:
        """Which of two components does ``instruction`` better ("A", "B" or "tie")."""
        return self.ask(rubric.pairwise_messages(instruction, code_a, code_b), rubric.PAIRWISE_SCHEMA,
                        rubric.parse_pairwise, "preference")

    def ask(self, messages: list[dict[str, Any]], schema: dict[str, Any], parse: Callable[[Any], T], name: str) -> T:
        """One question: the cached answer, or a bounded series of attempts (module docstring)."""
        c = self.config
        key = content_key({"model": c.model, "messages": messages, "schema": schema, "temperature": c.temperature,
                           "max_tokens": c.max_tokens})
        cached = self.cache.get(key)
        if cached is not None:
            try:
                return parse(cached["content"])
            except (rubric.InvalidVerdict, KeyError, TypeError):
                pass  # an entry from another version of the rubric: ask again
        content = self._attempts(messages, schema, parse, name)
        self.cache.put(key, {"content": content})
        return parse(content)

    def _attempts(self, messages, schema, parse, name: str) -> str:
        structured = self.config.structured
        last = "no attempt made"
        attempts = 1 + max(0, self.config.retries)
        attempt = 0
        while attempt < attempts:
            if attempt > 0:
                self.stats.add("retries")
            attempt += 1
            body = {"model": self.config.model, "messages": messages, "temperature": self.config.temperature,
                    "max_tokens": self.config.max_tokens}
            if structured:
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": name, "schema": schema, "strict": True}}
            self.stats.add("requests")
            try:
                response = self._http.post("/chat/completions", json=body)
            except httpx.TimeoutException:
                last = f"no answer within {self.config.timeout_s:.1f}s"
                self._sleep(attempt, None)
                continue
            except httpx.TransportError as error:
                last = f"{type(error).__name__}: {error}"[:200]
                self._sleep(attempt, None)
                continue
            if response.status_code == 400 and structured:
                structured = False  # a server without structured output: ask again, parse as strictly
                attempts += 1
                last = f"400 with response_format: {response.text[:200]}"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                self._sleep(attempt, response.headers.get("retry-after"))
                continue
            if response.status_code >= 400:
                self.stats.add("failures")
                raise JudgeError(f"judge endpoint answered HTTP {response.status_code}: {response.text[:300]}")
            try:
                content = response.json()["choices"][0]["message"]["content"]
                parse(content)
                return content
            except (ValueError, RecursionError, KeyError, IndexError, TypeError, rubric.InvalidVerdict) as error:
                self.stats.add("invalid")
                last = f"invalid reply: {error}"[:300]
                continue
        self.stats.add("failures")
        raise JudgeError(f"judge gave no valid verdict after {attempt} attempt(s): {last}")

    def _sleep(self, attempt: int, retry_after: Optional[str]) -> None:
        delay = self.config.backoff_s * (2 ** (attempt - 1)) * (0.5 + random.random())
        if retry_after:
            try:
                delay = max(delay, min(10.0, float(retry_after)))
            except ValueError:
                pass
        time.sleep(delay)
