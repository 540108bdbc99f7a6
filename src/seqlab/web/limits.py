"""What a request to the web lab may carry: only the query parameters its route declares, and a body of at
most :data:`~seqlab.web.validation.MAX_BODY_BYTES`, sent within :data:`BODY_TIMEOUT_S`, that is JSON FastAPI
can read safely.

:func:`reject_unknown_query` is a dependency of every ``/api`` route. :class:`BodyLimit` is pure ASGI
middleware that refuses a request body over the limit from the bytes actually received, chunked or not,
without reading any further, and a body that stalls (HTTP 408). :class:`JsonGuard` reads a JSON body once
before the route does and refuses, with a sentence of the ``web`` catalogue, what would otherwise reach the
route as a crash or a misleading message: bytes that are not UTF-8, nesting deeper than :data:`MAX_DEPTH`,
numbers longer than :data:`MAX_NUMBER_CHARACTERS`, ``NaN``/``Infinity``, and lone surrogates (``"\\ud800"``)
in any key or string. It then hands the route the same bytes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from seqlab.web.messages import N_, FieldName, Phrase, printable, tr
from seqlab.web.validation import MAX_BODY_BYTES, BodyTooLarge, body_too_large_detail, endpoint_params, error_body

__all__ = ["BODY_TIMEOUT_S", "MAX_BODY_BYTES", "MAX_DEPTH", "BodyLimit", "BodyTooLarge", "JsonGuard",
           "body_problem", "reject_unknown_query"]

DOMAIN = "web"

#: Seconds a client may take between two pieces of its request body before it is answered 408 and dropped.
BODY_TIMEOUT_S = 10.0
#: Deepest nesting of arrays and objects accepted in a JSON body (the lab's bodies are 2 levels deep).
MAX_DEPTH = 16
#: Longest JSON number literal accepted, in characters (a 64-bit integer has 20 at most).
MAX_NUMBER_CHARACTERS = 40


def reject_unknown_query(request: Request) -> None:
    """A dependency of every ``/api`` route: a query parameter the route does not declare is a 422.

    Raises:
        RequestValidationError: naming each unknown parameter; the message lists the accepted ones.
    """
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return
    accepted = {param.alias for param in endpoint_params(dependant, "query_params")}
    unknown = [(key, value) for key, value in request.query_params.multi_items() if key not in accepted]
    if unknown:
        raise RequestValidationError([{"type": "extra_forbidden", "loc": ("query", key), "input": value,
                                       "msg": "Extra inputs are not permitted"} for key, value in unknown])


def _lang(scope) -> str:
    from starlette.requests import Request as StarletteRequest

    from seqlab.web.validation import request_lang

    try:
        return request_lang(StarletteRequest(scope))
    except Exception:  # noqa: BLE001  (no app state in a bare ASGI test): English
        return "en"


async def _answer(scope, receive, send, status: int, detail: list[dict[str, Any]]) -> None:
    response = JSONResponse(status_code=status, content=error_body(detail), headers={"Connection": "close"})
    await response(scope, receive, send)


class BodyStalled(Exception):
    """The client sent part of a body, then nothing for :data:`BODY_TIMEOUT_S`."""


class BodyLimit:
    """Pure ASGI middleware: refuse a request body over ``limit`` bytes (422), counting what ``receive`` returns,
    and a body whose next piece does not come within ``timeout_s`` (408).

    A declared ``Content-Length`` over the limit is refused before anything is read; a chunked body (or a
    lying ``Content-Length``) is refused at the first message that passes the limit, and nothing more is
    read. Nothing is buffered here: the app reads the body as usual, through a counting ``receive``.
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((value for key, value in scope.get("headers", []) if key == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _answer(scope, receive, send, 422, body_too_large_detail(int(declared), _lang(scope), True))
            return
        received = 0
        body_done = False
        started = False

        async def counting_receive():
            nonlocal received, body_done
            if body_done:  # after the body: only a disconnect can come, whenever it comes
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except asyncio.TimeoutError:
                raise BodyStalled() from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.limit:
                    raise BodyTooLarge(received)
            return message

        async def watching_send(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except BodyTooLarge as error:  # read outside a route (FastAPI's routes answer it through the handler)
            if started:
                raise
            await _answer(scope, receive, send, 422, body_too_large_detail(error.received, _lang(scope), False))
        except BodyStalled:
            if started:
                raise
            _ = tr(_lang(scope))
            message = _("request body stalled: nothing arrived for {seconds} s").format(
                seconds=f"{self.timeout_s:g}")
            await _answer(scope, receive, send, 408, [{"loc": ["body"], "msg": message, "type": "timeout"}])


class _Refused(Exception):
    def __init__(self, phrase: Phrase, loc: list, kind: str) -> None:
        super().__init__(phrase.msgid)
        self.phrase, self.loc, self.kind = phrase, loc, kind


def _depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` outside strings (JSON text, possibly invalid)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _number(literal: str, convert):
    if len(literal) > MAX_NUMBER_CHARACTERS:
        raise _Refused(Phrase(N_("request body holds a number of {count} characters; at most {most} are accepted"),
                              {"count": len(literal), "most": MAX_NUMBER_CHARACTERS}), ["body"], "number_too_long")
    return convert(literal)


def _constant(name: str):
    raise _Refused(Phrase(N_("request body holds {constant}, which is not a JSON number"), {"constant": name}),
                   ["body"], "json_invalid")


def _surrogates(value: Any, loc: list) -> None:
    """Refuse the first lone surrogate in any key or string of a parsed body."""
    if isinstance(value, str):
        bad = next((char for char in value if 0xD800 <= ord(char) <= 0xDFFF), None)
        if bad is not None:
            where = FieldName(str(loc[1])) if len(loc) > 1 else None
            phrase = (Phrase(N_("field {name} holds a lone surrogate ({escape}), which is not a Unicode character"),
                             {"name": where, "escape": printable(bad)}) if where else
                      Phrase(N_("request body holds a lone surrogate ({escape}), which is not a Unicode character"),
                             {"escape": printable(bad)}))
            raise _Refused(phrase, loc, "string_unicode")
    elif isinstance(value, dict):
        for key, item in value.items():
            _surrogates(key, loc)
            _surrogates(item, loc + [key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _surrogates(item, loc + [index])


def body_problem(body: bytes) -> tuple[Phrase, list, str] | None:
    """What makes ``body`` unsafe to hand to a route, as (phrase, loc, error type), or None when it is fine.

    >>> body_problem(b'{"answer": "512"}') is None, body_problem(b"[" * 40 + b"]" * 40)[0].values
    (True, {'depth': 40, 'most': 16})
    >>> body_problem(b'{"answer": "\\\\ud800"}')[0].msgid[:24]
    'field {name} holds a lon'
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        return (Phrase(N_("request body must be UTF-8 text; byte {position} is not"), {"position": error.start}),
                ["body"], "json_invalid")
    depth = _depth(text)
    if depth > MAX_DEPTH:
        return (Phrase(N_("request body nests {depth} levels deep; at most {most} are accepted"),
                       {"depth": depth, "most": MAX_DEPTH}), ["body"], "too_deep")
    try:
        parsed = json.loads(text, parse_int=lambda s: _number(s, int), parse_float=lambda s: _number(s, float),
                            parse_constant=_constant)
        _surrogates(parsed, ["body"])
    except _Refused as refused:
        return refused.phrase, [printable(str(part)) if isinstance(part, str) else part for part in refused.loc], \
            refused.kind
    except (ValueError, RecursionError):  # invalid JSON: FastAPI reports it with the position
        return None
    return None


class JsonGuard:
    """Pure ASGI middleware: read a JSON request body whole (it is at most :data:`MAX_BODY_BYTES`), refuse it
    with 422 when :func:`body_problem` finds something, else replay it to the app unchanged."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        headers = dict(scope.get("headers", [])) if scope["type"] == "http" else {}
        if scope["type"] != "http" or b"json" not in headers.get(b"content-type", b"").lower():
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to answer
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        problem = body_problem(body) if body else None
        if problem is not None:
            phrase, loc, kind = problem
            await _answer(scope, receive, send, 422, [{"loc": loc, "msg": phrase.render(_lang(scope)), "type": kind}])
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

