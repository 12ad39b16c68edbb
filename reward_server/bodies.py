"""Request bodies: JSON bytes into a pydantic model, or a 422 naming the field.

``json.loads`` accepts what FastAPI's own body parsing accepts (UTF-8, -16 or -32); a body that
is not JSON, not decodable or nested beyond the parser's depth is a 422 too, never a 500. Every
route that reads its own body (``/v1/rewards``, the peer protocols) goes through this.
"""
from __future__ import annotations

import json

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError


def read_body(body: bytes, model: type[BaseModel]) -> BaseModel:
    """``body`` (JSON) as ``model``; a :class:`RequestValidationError` (422, naming the field) if not."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"loc": ("body", exc.pos), "msg": f"JSON decode error: {exc.msg}",
                                       "type": "json_invalid"}]) from None
    except (ValueError, RecursionError) as exc:
        raise RequestValidationError([{"loc": ("body",), "msg": f"unreadable JSON body: {type(exc).__name__}",
                                       "type": "json_invalid"}]) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]) from None
