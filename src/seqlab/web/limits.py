"""What a request to the web lab may carry: a head of at most :data:`MAX_HEAD_BYTES` in at most
:data:`MAX_HEADERS` header lines, only the query parameters its route declares, and a body of at most
:data:`~seqlab.web.validation.MAX_BODY_BYTES`, sent whole within :data:`BODY_TIMEOUT_S` with no pause as long,
that is JSON (``Content-Type: application/json``, once) FastAPI can read safely.

:class:`HeadLimit` is pure ASGI middleware that refuses (HTTP 431) a head over the limits, however it arrived
(Uvicorn bounds only a head still incomplete: one sent in a single write reaches the app whole).
:func:`reject_unknown_query` is a dependency of every ``/api`` route. :class:`BodyLimit` is pure ASGI
middleware that refuses a request body over the limit from the bytes actually received, chunked or not,
without reading any further, a body that stalls, and a body trickled so slowly that it is not whole within
:data:`BODY_TIMEOUT_S` (HTTP 408). :class:`JsonGuard` refuses a body sent with no, another or a second
``Content-Type``, then reads a JSON body once before the route does and refuses, with a sentence of the ``web``
catalogue, what would otherwise reach the route as a crash or a misleading message: a UTF-8 byte order mark,
bytes that are not UTF-8, nesting deeper than :data:`MAX_DEPTH`, numbers longer than
:data:`MAX_NUMBER_CHARACTERS`, ``NaN``/``Infinity``, and lone surrogates (``"\\ud800"``) in any key or string.
It then hands the route the same bytes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from seqlab.web.asgi import HttpMiddleware, ResponseWatch
from seqlab.web.messages import N_, FieldName, Phrase, printable, tr
from seqlab.web.validation import MAX_BODY_BYTES, BodyTooLarge, body_too_large_detail, endpoint_params, error_body

__all__ = ["BODY_TIMEOUT_S", "MAX_BODY_BYTES", "MAX_DEPTH", "MAX_HEADERS", "MAX_HEAD_BYTES", "BodyLimit",
           "BodyTooLarge", "HeadLimit", "JsonGuard", "body_problem", "head_problem", "reject_unknown_query"]

DOMAIN = "web"

#: Seconds a client may take for its whole request body, from the end of its head, before it is answered 408 and
#: dropped (64 KiB in 10 s: 6.4 KB/s at least).
BODY_TIMEOUT_S = 10.0
#: Largest request head (request line and header lines, as sent), and most header lines.
MAX_HEAD_BYTES = 16 * 1024
MAX_HEADERS = 100
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


def head_problem(scope) -> tuple[str, dict[str, int]] | None:
    """What makes a request head too large, as (msgid, values), or None: more than :data:`MAX_HEADERS` header lines,
    or more than :data:`MAX_HEAD_BYTES` in all (request line and header lines, each with its CRLF; what h11 parsed,
    so at most the bytes sent).

    >>> head_problem({"method": "GET", "raw_path": b"/", "query_string": b"", "headers": [(b"host", b"x")]}) is None
    True
    >>> head_problem({"method": "GET", "raw_path": b"/", "query_string": b"",
    ...               "headers": [(b"x-a", b"b" * 20000)]})[1]["most"]
    16384
    """
    headers = scope.get("headers", [])
    if len(headers) > MAX_HEADERS:
        return N_("request head has {count} header lines; at most {most} are accepted"), \
            {"count": len(headers), "most": MAX_HEADERS}
    query = scope.get("query_string", b"")
    size = (len(scope.get("method", "")) + 1 + len(scope.get("raw_path") or scope.get("path", "").encode())
            + (1 + len(query) if query else 0) + len(" HTTP/1.1\r\n")
            + sum(len(key) + 2 + len(value) + 2 for key, value in headers) + 2)
    if size > MAX_HEAD_BYTES:
        return N_("request head is {count} bytes; at most {most} are accepted"), {"count": size, "most": MAX_HEAD_BYTES}
    return None


class HeadLimit:
    """Pure ASGI middleware: a request whose head passes :data:`MAX_HEAD_BYTES` or :data:`MAX_HEADERS` gets 431
    (Request Header Fields Too Large), its connection closed, and nothing else runs."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        problem = head_problem(scope) if scope["type"] in ("http", "websocket") else None
        if problem is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1009})
            return
        msgid, values = problem
        message = Phrase(msgid, values).render(_lang(scope))
        await _answer(scope, receive, send, 431, [{"loc": ["header"], "msg": message, "type": "head_too_large"}])


class BodyStalled(Exception):
    """The request body did not arrive whole within :data:`BODY_TIMEOUT_S` of the end of its head: ``whole`` when
    part of it came (too slow), not ``whole`` when nothing of it came (stalled)."""

    def __init__(self, whole: bool = False) -> None:
        super().__init__("body too slow" if whole else "body stalled")
        self.whole = whole


class BodyLimit(HttpMiddleware):
    """Pure ASGI middleware: refuse a request body over ``limit`` bytes (422), counting what ``receive`` returns,
    and a body that has not arrived whole within ``timeout_s`` of the end of its head (408: "stalled" when nothing of
    it came, "too slow" when part of it did).

    A declared ``Content-Length`` over the limit is refused before anything is read; a chunked body (or a
    lying ``Content-Length``) is refused at the first message that passes the limit, and nothing more is
    read. Nothing is buffered here: the app reads the body as usual, through a counting ``receive``.
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S) -> None:
        super().__init__(app)
        self.limit = limit
        self.timeout_s = timeout_s

    async def handle(self, scope, receive, send) -> None:
        declared = next((value for key, value in scope.get("headers", []) if key == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _answer(scope, receive, send, 422, body_too_large_detail(int(declared), _lang(scope), True))
            return
        received = 0
        body_done = False
        loop = asyncio.get_running_loop()
        whole_by = loop.time() + self.timeout_s  # the whole body, from the end of the head

        async def counting_receive():
            nonlocal received, body_done
            if body_done:  # after the body: only a disconnect can come, whenever it comes
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.01, whole_by - loop.time()))
            except asyncio.TimeoutError:
                # which of the two it was is read from what came, never from the clock: on a busy machine the server's
                # own delay before it reads would otherwise turn "stalled" into "too slow"
                raise BodyStalled(whole=received > 0) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.limit:
                    raise BodyTooLarge(received)
            return message

        watch = ResponseWatch(send)
        try:
            await self.app(scope, counting_receive, watch)
        except BodyTooLarge as error:  # read outside a route (FastAPI's routes answer it through the handler)
            if watch.started:
                raise
            await _answer(scope, receive, send, 422, body_too_large_detail(error.received, _lang(scope), False))
        except BodyStalled as stalled:
            if watch.started:
                raise
            _ = tr(_lang(scope))
            if stalled.whole:
                message = _("request body too slow: it did not arrive whole within {seconds} s").format(
                    seconds=f"{self.timeout_s:g}")
            else:
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
    if body.startswith(b"\xef\xbb\xbf"):
        return (Phrase(N_("request body starts with a byte order mark (BOM); send the JSON as UTF-8 without one")),
                ["body"], "json_invalid")
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


#: Methods whose requests carry the lab's JSON bodies.
BODY_METHODS = ("POST", "PUT", "PATCH")


def content_type_problem(types: list[bytes], has_body: bool) -> Phrase | None:
    """What is wrong with the ``Content-Type`` headers of a request to a JSON route, or None: more than one, or a
    body sent as anything but ``application/json`` (a ``charset`` of utf-8 allowed).

    >>> content_type_problem([b"application/json; charset=UTF-8"], True) is None, content_type_problem([], False)
    (True, None)
    >>> content_type_problem([b"text/plain", b"application/json"], True).values["count"]
    2
    >>> content_type_problem([b"application/json-seq"], True).values["content_type"]
    'application/json-seq'
    """
    if len(types) > 1:
        return Phrase(N_("request has {count} Content-Type headers; send one: Content-Type: application/json"),
                      {"count": len(types)})
    if not types:
        return None  # no body announced: the route says the body is required; with one: FastAPI says what it got
    value = types[0].decode("latin-1")
    media, *params = [part.strip().lower() for part in value.split(";")]
    if media == "application/json" and all(param.replace(" ", "") in ("charset=utf-8", "") for param in params):
        return None
    if not has_body and media != "application/json":
        return None  # nothing sent: "the body is required" says more than the type of nothing
    return Phrase(N_("request body must be a JSON object sent with Content-Type: application/json; received "
                     "Content-Type {content_type}"), {"content_type": printable(value, 80)})


class JsonGuard(HttpMiddleware):
    """Pure ASGI middleware: refuse (422) a request with a body whose ``Content-Type`` is missing, not
    ``application/json`` or sent twice (:func:`content_type_problem`); read a JSON request body whole (it is at
    most :data:`MAX_BODY_BYTES`), refuse it with 422 when :func:`body_problem` finds something, else replay it
    to the app unchanged."""

    async def handle(self, scope, receive, send) -> None:
        raw = scope.get("headers", [])
        types = [value for key, value in raw if key == b"content-type"]
        if scope.get("method") in BODY_METHODS:
            length = next((value for key, value in raw if key == b"content-length"), None)
            chunked = any(key == b"transfer-encoding" for key, _value in raw)
            has_body = chunked or (length is not None and length.strip() not in (b"0", b""))
            phrase = content_type_problem(types, has_body)
            if phrase is not None:
                await _answer(scope, receive, send, 422,
                              [{"loc": ["header", "content-type"], "msg": phrase.render(_lang(scope)),
                                "type": "content_type"}])
                return
        if not types or b"json" not in types[0].lower():
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

