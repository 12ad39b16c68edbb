"""The reward inspector: a page showing the last scored rollouts token by token, and a box to
score one by hand (``server.inspector``; ``false`` leaves these routes out and records nothing).

    GET /inspector                  the page (static: it holds no rollout data)
    GET /inspector/static/{file}    its script and style sheet
    GET /inspector/rollouts         the ring of scored rollouts (:mod:`botgrpo.reward_server.ring`), behind the API key

The page's script reads the rollouts and scores through ``POST /v1/rewards`` with the API key as a
Bearer header (the page asks for it on a 401 and keeps it in the tab's sessionStorage), so no
browser ever holds ambient credentials for the API. Rollout text is untrusted: the script puts
it in the DOM as text only (``textContent``), and every response here carries a Content-Security-
Policy that allows no inline script or style and loads nothing from elsewhere.
"""
from __future__ import annotations

import asyncio
import json
from functools import cache
from importlib import resources

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from botgrpo.reward_server.compat.core import authorised
from botgrpo.reward_server.ring import MAX_CHARS, InspectorView, view
from botgrpo.services.schemas import clean_json

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}
STATIC = {"inspector.js": "text/javascript; charset=utf-8", "inspector.css": "text/css; charset=utf-8"}

router = APIRouter(prefix="/inspector", include_in_schema=False)


@cache
def _asset(name: str) -> bytes:
    return (resources.files("botgrpo.reward_server") / "static" / name).read_bytes()


@router.get("")
async def page() -> Response:
    return Response(_asset("inspector.html"), media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:
        return Response(b"not found", status_code=404, media_type="text/plain", headers=HEADERS)
    return Response(_asset(name), media_type=STATIC[name], headers=HEADERS)


@router.get("/rollouts", dependencies=[Depends(authorised)])
async def rollouts(http: Request) -> Response:
    """The recorded rollouts, newest first (rendered off the event loop)."""
    ring, settings = http.app.state.inspector, http.app.state.settings
    entries = ring.snapshot()

    def render() -> bytes:
        shown = InspectorView(bounds=settings.bounds, capacity=ring.capacity, max_chars=MAX_CHARS,
                              rollouts=[view(entry) for entry in entries])
        try:
            return shown.model_dump_json().encode()
        except ValueError:  # a lone surrogate in a scorer's message (it cannot be UTF-8)
            return json.dumps(clean_json(shown.model_dump()), ensure_ascii=False).encode()

    return Response(await asyncio.to_thread(render), media_type="application/json", headers=HEADERS)
