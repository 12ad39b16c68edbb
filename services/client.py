"""HTTP clients of the reward server: :class:`AsyncRewardClient` and :class:`RewardClient` (sync).

Both pool connections, stream results as they finish, and retry with jittered exponential
backoff on connection errors, 429/503 (honouring ``Retry-After``) and other 5xx, never on
other 4xx: those are the caller's mistake and a :class:`RewardServerError` names the server's
message. A stream broken midway is resumed by re-sending only the rollouts not yet answered,
so every id is yielded exactly once, as a :class:`~botgrpo.services.schemas.Result` (read its
attributes; ``result.rewards()`` gives the token rewards in the recipe's units).
"""
from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any, AsyncIterator, Iterator, Mapping, Optional, Sequence

import httpx

from botgrpo.services.schemas import Result

RETRY_STATUSES = {429, 500, 502, 503, 504}
_RETRY_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError)


class RewardServerError(Exception):
    """The server refused the request (or kept failing); ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str):
        super().__init__(f"reward server answered {status}: {message}")
        self.status, self.message = status, message


class _Retryable(Exception):
    def __init__(self, delay_hint: Optional[float], cause: str):
        super().__init__(cause)
        self.delay_hint = delay_hint


def _server_message(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    return detail if isinstance(detail, str) else json.dumps(detail)


def _check(response: httpx.Response) -> None:
    """Raise :class:`_Retryable` or :class:`RewardServerError` for a non-200 response."""
    if response.status_code == 200:
        return
    message = _server_message(response)
    if response.status_code in RETRY_STATUSES:
        hint = response.headers.get("Retry-After")
        raise _Retryable(float(hint) if hint and hint.replace(".", "", 1).isdigit() else None,
                         f"{response.status_code}: {message}")
    raise RewardServerError(response.status_code, message)


class _Policy:
    """Retry bookkeeping shared by both clients: how long to wait before attempt ``n``."""

    def __init__(self, retries: int, backoff_s: float, max_backoff_s: float):
        self.retries, self.backoff_s, self.max_backoff_s = retries, backoff_s, max_backoff_s

    def delay(self, attempt: int, hint: Optional[float]) -> float:
        if hint is not None:
            return min(hint, self.max_backoff_s)
        return min(self.max_backoff_s, self.backoff_s * 2 ** attempt) * random.uniform(0.5, 1.0)

    def give_up(self, attempt: int, error: Exception) -> None:
        if attempt >= self.retries:
            status = 503 if isinstance(error, _Retryable) else 0
            raise RewardServerError(status, f"gave up after {attempt + 1} attempts: {error}") from error


def _accept(line: str, pending: dict[str, Any]) -> Optional[Result]:
    """The result on ``line`` if it answers a still-pending id (a resumed stream may repeat one)."""
    if not line.strip():
        return None
    result = Result.from_json(line)
    return result if pending.pop(result.id, None) is not None else None


def _body(task: str, rollouts: Sequence[Mapping[str, Any]], options: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    return {"task": task, "options": dict(options or {}), "rollouts": [dict(r) for r in rollouts]}


def _headers(api_key: Optional[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class AsyncRewardClient:
    """``async with AsyncRewardClient(url) as c: async for r in c.stream("react", rollouts): ...``"""

    def __init__(self, base_url: str, *, api_key: Optional[str] = None, timeout_s: float = 600.0,
                 connect_timeout_s: float = 5.0, retries: int = 5, backoff_s: float = 0.25, max_backoff_s: float = 10.0,
                 max_connections: int = 32, transport: Optional[httpx.AsyncBaseTransport] = None):
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections))
        self._policy = _Policy(retries, backoff_s, max_backoff_s)

    async def __aenter__(self) -> "AsyncRewardClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def scorers(self) -> dict[str, Any]:
        response = await self._http.get("/v1/scorers")
        _check(response)
        return response.json()

    async def score(self, task: str, rollouts: Sequence[Mapping[str, Any]],
                    options: Optional[Mapping[str, Any]] = None) -> list[Result]:
        """All results, in the order of ``rollouts``."""
        by_id = {r.id: r async for r in self.stream(task, rollouts, options)}
        return [by_id[r["id"]] for r in rollouts]

    async def stream(self, task: str, rollouts: Sequence[Mapping[str, Any]],
                     options: Optional[Mapping[str, Any]] = None) -> AsyncIterator[Result]:
        """Each rollout's result once, as it finishes."""
        pending = {r["id"]: r for r in rollouts}
        attempt = 0
        while pending:
            try:
                async with self._http.stream("POST", "/v1/rewards:stream",
                                             json=_body(task, list(pending.values()), options)) as response:
                    if response.status_code != 200:
                        await response.aread()
                    _check(response)
                    async for line in response.aiter_lines():
                        if (result := _accept(line, pending)) is not None:
                            yield result
                if pending:
                    raise _Retryable(None, f"stream ended with {len(pending)} results missing")
            except (_Retryable, *_RETRY_ERRORS) as error:
                self._policy.give_up(attempt, error)
                await asyncio.sleep(self._policy.delay(attempt, getattr(error, "delay_hint", None)))
                attempt += 1


class RewardClient:
    """The synchronous twin of :class:`AsyncRewardClient` (same arguments and behaviour)."""

    def __init__(self, base_url: str, *, api_key: Optional[str] = None, timeout_s: float = 600.0,
                 connect_timeout_s: float = 5.0, retries: int = 5, backoff_s: float = 0.25, max_backoff_s: float = 10.0,
                 max_connections: int = 32, transport: Optional[httpx.BaseTransport] = None):
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections))
        self._policy = _Policy(retries, backoff_s, max_backoff_s)

    def __enter__(self) -> "RewardClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def scorers(self) -> dict[str, Any]:
        response = self._http.get("/v1/scorers")
        _check(response)
        return response.json()

    def score(self, task: str, rollouts: Sequence[Mapping[str, Any]],
              options: Optional[Mapping[str, Any]] = None) -> list[Result]:
        by_id = {r.id: r for r in self.stream(task, rollouts, options)}
        return [by_id[r["id"]] for r in rollouts]

    def stream(self, task: str, rollouts: Sequence[Mapping[str, Any]],
               options: Optional[Mapping[str, Any]] = None) -> Iterator[Result]:
        pending = {r["id"]: r for r in rollouts}
        attempt = 0
        while pending:
            try:
                with self._http.stream("POST", "/v1/rewards:stream",
                                       json=_body(task, list(pending.values()), options)) as response:
                    if response.status_code != 200:
                        response.read()
                    _check(response)
                    for line in response.iter_lines():
                        if (result := _accept(line, pending)) is not None:
                            yield result
                if pending:
                    raise _Retryable(None, f"stream ended with {len(pending)} results missing")
            except (_Retryable, *_RETRY_ERRORS) as error:
                self._policy.give_up(attempt, error)
                time.sleep(self._policy.delay(attempt, getattr(error, "delay_hint", None)))
                attempt += 1
