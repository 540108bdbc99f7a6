"""What a request to the web lab may carry: only the query parameters its route declares, and a body of
at most :data:`~seqlab.web.validation.MAX_BODY_BYTES`.

:func:`reject_unknown_query` is a dependency of every ``/api`` route; :class:`BodyLimit` is pure ASGI
middleware that refuses a request body over the limit from the bytes actually received, chunked or not,
without reading any further. Their refusals are worded by :mod:`seqlab.web.validation`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from seqlab.web.validation import MAX_BODY_BYTES, BodyTooLarge, endpoint_params, body_too_large_detail, error_body

__all__ = ["MAX_BODY_BYTES", "BodyLimit", "BodyTooLarge", "reject_unknown_query"]


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


class BodyLimit:
    """Pure ASGI middleware: refuse a request body over ``limit`` bytes (422), counting what ``receive`` returns.

    A declared ``Content-Length`` over the limit is refused before anything is read; a chunked body (or a
    lying ``Content-Length``) is refused at the first message that passes the limit, and nothing more is
    read. Nothing is buffered here: the app reads the body as usual, through a counting ``receive``.
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((value for key, value in scope.get("headers", []) if key == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send, int(declared), declared=True)
            return
        received = 0
        started = False

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
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
            await self._refuse(scope, receive, send, error.received, declared=False)

    @staticmethod
    async def _refuse(scope, receive, send, received: int, declared: bool) -> None:
        from starlette.requests import Request as StarletteRequest

        request = StarletteRequest(scope)
        lang = request.query_params.get("lang", "en")
        response = JSONResponse(status_code=422, content=error_body(body_too_large_detail(received, lang, declared)),
                                headers={"Connection": "close"})
        await response(scope, receive, send)
