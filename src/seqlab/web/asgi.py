"""The web lab's pure ASGI middleware share two pieces: the HTTP-only prologue and the watch on a response.

A middleware of the lab (:mod:`seqlab.web.limits`, :mod:`seqlab.web.security`, :mod:`seqlab.web.server`) acts on
HTTP requests only: a lifespan or websocket scope goes to the app untouched (:class:`HttpMiddleware`). One that
answers an error raised while the app runs can do so only before the app has started its response; after that the
error is raised again, and :class:`ResponseWatch` says which case it is. Follows Starlette's pure ASGI middleware
pattern (``__call__(scope, receive, send)``), with no dependency on Starlette itself.
"""

from __future__ import annotations

__all__ = ["HttpMiddleware", "ResponseWatch"]


class HttpMiddleware:
    """Pure ASGI middleware for HTTP requests: a subclass writes :meth:`handle`; any other scope passes through.

    Attributes:
        app: the ASGI app it wraps.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope, receive, send) -> None:
        """Serve one HTTP request (``scope["type"] == "http"``)."""
        raise NotImplementedError


class ResponseWatch:
    """``send`` wrapped to note whether the response has started (its ``http.response.start`` was sent).

    Attributes:
        started: True once the app began its answer: from then on no other answer can be sent.
    """

    def __init__(self, send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)
