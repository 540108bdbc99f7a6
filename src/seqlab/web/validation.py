"""HTTP 422 for every bad input: one sentence per error naming the field, the range and the value received.

FastAPI validates each request against its pydantic declaration; :func:`validation_response` rewrites
pydantic's messages ("Input should be less than or equal to 128") so they also say what the field
accepts and what arrived ("query parameter T must be an integer in [2, 128]; received 500").
:func:`seqlab_error_response` does the same for the library's :class:`~seqlab.errors.SeqlabError`
(sizes over the compute budget, words that differ…). Both keep FastAPI's body shape,
``{"detail": [{"loc", "msg", "type"}]}``, and add ``"message"``, all errors in one line.
"""

from __future__ import annotations

import math
import types
import typing
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from seqlab.errors import SeqlabError

#: Largest request body accepted (bytes); anything longer is refused before it is parsed.
MAX_BODY_BYTES = 64 * 1024
WHERE = {"query": "query parameter", "path": "path parameter", "body": "field", "header": "header"}


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def describe(annotation: Any, metadata: list[Any]) -> str:
    """What a field accepts, in words, from its type and its pydantic constraints.

    >>> from annotated_types import Ge, Le
    >>> describe(int, [Ge(1), Le(128)])
    'an integer in [1, 128]'
    >>> describe(typing.Literal["en", "es"], [])
    "one of 'en', 'es'"
    """
    bounds = {name: getattr(item, name) for item in metadata
              for name in ("ge", "gt", "le", "lt", "max_length", "min_length") if getattr(item, name, None) is not None}
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # Optional[X]: describe X
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return describe(kept[0], metadata) if len(kept) == 1 else ""
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(repr(value) for value in typing.get_args(annotation))
    if annotation is int or annotation is float:
        kind = "an integer" if annotation is int else "a number"
        low = ("[" + _number(bounds["ge"]) if "ge" in bounds
               else "(" + _number(bounds["gt"]) if "gt" in bounds else None)
        high = (_number(bounds["le"]) + "]" if "le" in bounds
                else _number(bounds["lt"]) + ")" if "lt" in bounds else None)
        if low and high:
            return f"{kind} in {low}, {high}"
        return kind
    if annotation is str:
        low, high = bounds.get("min_length"), bounds.get("max_length")
        if high is not None:
            return f"text of {low or 0} to {high} characters"
        return "text"
    return ""


def _fields(request: Request) -> dict[tuple[str, str], tuple[Any, list[Any]]]:
    """(place, name) -> (type, constraints) for every parameter and body field of the matched route."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    fields: dict[tuple[str, str], tuple[Any, list[Any]]] = {}
    if dependant is None:
        return fields
    for place, params in (("query", dependant.query_params), ("path", dependant.path_params)):
        for param in params:
            info = param.field_info
            fields[(place, param.alias)] = (info.annotation, list(info.metadata))
    for param in dependant.body_params:
        model = param.field_info.annotation
        for name, info in getattr(model, "model_fields", {}).items():
            fields[("body", info.alias or name)] = (info.annotation, list(info.metadata))
    return fields


def _received(value: Any) -> str:
    """The value as received, cut to 60 characters (an oversized text is named by its length)."""
    if isinstance(value, str) and len(value) > 60:
        return f"{value[:40]!r}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}…"


def sentence(error: dict[str, Any], fields: dict[tuple[str, str], tuple[Any, list[Any]]]) -> str:
    """One error as a sentence: where, which field, what it accepts, what arrived.

    >>> sentence({"loc": ("query", "T"), "msg": "Input should be less than or equal to 128", "input": "500",
    ...           "type": "less_than_equal"}, {})
    'query parameter T: Input should be less than or equal to 128; received 500'
    """
    loc = tuple(error.get("loc", ()))
    place = str(loc[0]) if loc else ""
    name = ".".join(str(part) for part in loc[1:]) or "body"
    where = f"{WHERE.get(place, place)} {name}".strip()
    if error.get("type") == "missing":
        return f"{where} is required"
    expected = ""
    if len(loc) >= 2 and (place, str(loc[1])) in fields:
        expected = describe(*fields[(place, str(loc[1]))])
    value = error.get("input")
    received = value if place in ("query", "path") and isinstance(value, str) and len(value) <= 60 \
        else _received(value)
    if expected:
        return f"{where} must be {expected}; received {received} ({error.get('msg', '')})"
    return f"{where}: {error.get('msg', '')}; received {received}"


def _clean(value: Any) -> Any:
    """JSON-safe copy of a pydantic error part (non-finite floats and exceptions become text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return str(value)


async def validation_response(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 with every message rewritten by :func:`sentence`."""
    fields = _fields(request)
    detail = [{"loc": _clean(list(error.get("loc", ()))), "msg": sentence(error, fields),
               "type": str(error.get("type", "value_error"))} for error in exc.errors()]
    return JSONResponse(status_code=422, content={"detail": detail,
                                                  "message": "; ".join(item["msg"] for item in detail)})


async def seqlab_error_response(request: Request, exc: SeqlabError) -> JSONResponse:
    """A library refusal as 422, pointing at the parameter it names."""
    loc = ["query" if request.method == "GET" else "body"] + ([exc.parameter] if exc.parameter else [])
    detail = [{"loc": loc, "msg": str(exc), "type": "value_error"}]
    return JSONResponse(status_code=422, content={"detail": detail, "message": str(exc)})


async def http_error_response(request: Request, exc) -> JSONResponse:
    """Starlette's HTTP errors as they are, except a body FastAPI cannot parse (400), which is bad input: 422."""
    if exc.status_code != 400:
        return JSONResponse(status_code=exc.status_code, content={"detail": exc.detail, "message": str(exc.detail)},
                            headers=getattr(exc, "headers", None))
    message = f"request body must be JSON text in UTF-8; it could not be read ({exc.detail})"
    return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": message, "type": "json_invalid"}],
                                                  "message": message})


def body_too_large(length: int) -> JSONResponse:
    """422 for a body over :data:`MAX_BODY_BYTES`, before it is read."""
    message = f"request body must be at most {MAX_BODY_BYTES:,} bytes; received {length:,}"
    return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": message,
                                                              "type": "value_error"}], "message": message})
