"""Request bodies: JSON bytes into a pydantic model, or a 422 naming the field.

``json.loads`` accepts what FastAPI's own body parsing accepts (UTF-8, -16 or -32); a body that
is not JSON, not decodable or nested beyond the parser's depth is a 422 too, never a 500. Every
route that reads its own body (``/v1/rewards``, the peer protocols) goes through this, and every
other JSON the server reads from a client (a peer's ``?options=``, a label holding a spec) goes
through :func:`parse_json`.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError


class UnreadableJSON(ValueError):
    """Client text that is not JSON the server reads; ``pos``: where, when the parser knows."""

    def __init__(self, message: str, pos: Optional[int] = None):
        super().__init__(message)
        self.pos = pos


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``; :class:`UnreadableJSON` for text that is not JSON, not decodable, or
    nested beyond the parser's depth (a ``RecursionError``, which is no ``ValueError``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableJSON(f"JSON decode error: {exc.msg}", exc.pos) from None
    except RecursionError:
        raise UnreadableJSON("unreadable JSON: nested too deeply (RecursionError)") from None
    except ValueError as exc:
        raise UnreadableJSON(f"unreadable JSON: {type(exc).__name__}") from None


def read_body(body: bytes, model: type[BaseModel]) -> BaseModel:
    """``body`` (JSON) as ``model``; a :class:`RequestValidationError` (422, naming the field) if not."""
    try:
        data = parse_json(body)
    except UnreadableJSON as exc:
        loc = ("body",) if exc.pos is None else ("body", exc.pos)
        raise RequestValidationError([{"loc": loc, "msg": str(exc), "type": "json_invalid"}]) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]) from None
