"""Hard caps on requests, enforced before anything parses them, and the token count they use.

:class:`BodyLimit` caps the body's size and the time it may take to arrive. Size is checked on
the bytes actually received, not just ``Content-Length``: a chunked upload or a lying header
cannot get a larger body past it (413 naming ``max_request_bytes``). Time runs from the first
read of the body: a client that trickles it (one byte a second holds a connection for days) is
answered 408 naming ``body_timeout_s`` once the whole body has not arrived within it, and the
connection is closed.

:func:`default_split_count` counts the tokens of the server's own split without building it,
so that the per-request token cap (``max_request_tokens``) costs one linear pass.
"""
from __future__ import annotations

import asyncio
import json
from typing import Optional

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """ASGI middleware: buffer at most ``max_bytes`` of each HTTP request body, received within
    ``timeout_s`` (None: no deadline), else answer 413 / 408."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: Optional[float] = None):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._reject(send, 413, f"request body exceeds the limit max_request_bytes={self.max_bytes}")
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout_s is None else loop.time() + self.timeout_s
        chunks, size, more = [], 0, True
        while more:
            try:
                if deadline is None:
                    message = await receive()
                else:
                    message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                return await self._reject(send, 408, f"request body not received within the limit "
                                                     f"body_timeout_s={self.timeout_s:g} (received {size} bytes)")
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._reject(send, 413, f"request body exceeds the limit max_request_bytes={self.max_bytes}")
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _reject(send: Send, status: int, detail: str) -> None:
        payload = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": payload})


def default_split_count(text: str) -> int:
    """``len(default_split(text))`` without building the spans: one token per run of
    non-whitespace (with the whitespace before it), plus one for trailing whitespace.

    ``str.split()`` and the regex ``\\s`` of :func:`botgrpo.reward_server.spans.default_split` use the
    same definition of whitespace (``str.isspace``); a test checks that the counts agree.
    """
    if not text:
        return 0
    return len(text.split()) + (1 if text[-1].isspace() else 0)
