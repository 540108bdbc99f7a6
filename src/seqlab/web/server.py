"""How ``seqlab serve`` runs Uvicorn: connection limits, a deadline for a request's head, a graceful shutdown.

Uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``) but waits forever for a client
that opens a connection and sends nothing, or half a request head (a "slowloris" client holds a connection
that way). :class:`HeadTimeoutH11` is Uvicorn's h11 protocol with one addition: from the moment a connection
opens, and again after each response, the client has :data:`HEAD_TIMEOUT_S` seconds to deliver a complete
request head, or the connection is closed. A body that stalls is the app's to refuse (HTTP 408,
:mod:`seqlab.web.limits`), and so is a head over 16 KiB that arrived in one piece (Uvicorn's
``h11_max_incomplete_event_size`` bounds only a head still incomplete). :data:`UVICORN_LIMITS` are the rest of the
options ``seqlab serve`` passes. At the connection cap (``limit_concurrency``) Uvicorn answers a plain English
``Service Unavailable``; :class:`HeadTimeoutH11` answers instead the lab's own 503, JSON in the request's
language with ``Retry-After`` (:func:`at_capacity`).

:class:`LabServer` is Uvicorn's server that, on Ctrl+C or SIGTERM, first tells the worker pool to stop
(:meth:`seqlab.web.workers.WorkerPool.stop_measuring`): a measurement under way is answered 503 "the lab is
shutting down" within a few milliseconds, so Uvicorn never reaches its shutdown grace, cancels nothing, and
answers no 500.
"""

from __future__ import annotations

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from seqlab.web.asgi import HttpMiddleware, ResponseWatch
from seqlab.web.budget import RETRY_AFTER_S
from seqlab.web.messages import N_, Phrase

DOMAIN = "web"

#: Seconds a client has, from connecting or from the end of the last response, to send a whole request head.
HEAD_TIMEOUT_S = 10.0
#: Uvicorn's limits: idle keep-alive connections close after 5 s, at most 64 connections at once (more get 503),
#: a request head of at most 16 KiB, and at most 5 s to finish requests on shutdown.
UVICORN_LIMITS = {"timeout_keep_alive": 5, "limit_concurrency": 64, "h11_max_incomplete_event_size": 16 * 1024,
                  "timeout_graceful_shutdown": 5}


async def at_capacity(scope, receive, send) -> None:
    """The ASGI answer past the connection cap: 503, ``Retry-After``, a JSON sentence of the ``web`` catalogue in
    the language of ``Accept-Language`` (English by default), the connection closed."""
    import json

    from seqlab.web.validation import error_body

    message = Phrase(N_("the lab is serving {most} connections at once, its most; try again in a few seconds"),
                     {"most": UVICORN_LIMITS["limit_concurrency"]}).render(_accept_lang(scope))
    body = json.dumps(error_body([{"loc": [], "msg": message, "type": "busy"}]), ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close"),
                            (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class HeadTimeoutH11(H11Protocol):
    """Uvicorn's h11 protocol that closes a connection whose request head does not arrive in time, and answers
    :func:`at_capacity` past the connection cap (in place of Uvicorn's plain-text 503)."""

    head_timeout_s = HEAD_TIMEOUT_S

    def connection_made(self, transport) -> None:  # noqa: D102
        super().connection_made(transport)
        self._head_timer = None
        self._arm()

    def __init__(self, config, *args, **kwargs) -> None:  # noqa: D107
        super().__init__(config, *args, **kwargs)
        self.cap, self.limit_concurrency = self.limit_concurrency, None  # Uvicorn's own check is ours now
        self._lab_app = self.app

    def handle_events(self) -> None:  # noqa: D102
        over = self.cap is not None and (len(self.connections) > self.cap or len(self.tasks) >= self.cap)
        self.app = at_capacity if over else self._lab_app
        super().handle_events()

    def send_400_response(self, msg: str) -> None:
        """Uvicorn's answer to bytes h11 cannot parse, as the lab's JSON: 431 when the head passed
        ``h11_max_incomplete_event_size`` before it was complete, else 400; the connection is closed."""
        import json

        from seqlab.web.validation import error_body

        buffered = len(getattr(self.conn, "_receive_buffer", b""))  # h11's buffer of the head still unparsed
        most = self.config.h11_max_incomplete_event_size or UVICORN_LIMITS["h11_max_incomplete_event_size"]
        if buffered > most:
            status, kind = 431, "head_too_large"
            message = Phrase(N_("request head is longer than {most} bytes, the most accepted"), {"most": most})
        else:
            status, kind = 400, "bad_request"
            message = Phrase(N_("this request is not HTTP/1.1 that the lab can read"))
        body = json.dumps(error_body([{"loc": ["header"], "msg": message.render("en"), "type": kind}])).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                   (b"content-length", str(len(body)).encode())]
        try:
            for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:  # a response was under way: nothing more can be said on this connection
            pass
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._expire)

    def _disarm(self) -> None:
        if getattr(self, "_head_timer", None) is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()  # no complete head in time: nothing to answer

    def data_received(self, data: bytes) -> None:  # noqa: D102
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def on_response_complete(self) -> None:  # noqa: D102
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()

    def connection_lost(self, exc) -> None:  # noqa: D102
        self._disarm()
        super().connection_lost(exc)


class LabServer(uvicorn.Server):
    """Uvicorn's server that stops the lab's measurements first when asked to exit (Ctrl+C, SIGTERM): the request
    of a measurement under way gets 503 "the lab is shutting down", not a cancelled task's 500."""

    def handle_exit(self, sig, frame) -> None:  # noqa: D102
        from seqlab.web.workers import default_pool

        default_pool().stop_measuring()
        super().handle_exit(sig, frame)


class AnswerCancelled(HttpMiddleware):
    """Pure ASGI middleware, the last resort of a shutdown: a request whose task is cancelled before it answered
    (Uvicorn's shutdown grace ran out) gets 503 "the lab is shutting down" instead of Uvicorn's 500 and traceback."""

    async def handle(self, scope, receive, send) -> None:
        import asyncio

        watch = ResponseWatch(send)
        try:
            await self.app(scope, receive, watch)
        except asyncio.CancelledError:
            if watch.started:
                raise
            from fastapi.responses import JSONResponse

            from seqlab.web.validation import error_body
            from seqlab.web.workers import LabShutdown

            lang = _accept_lang(scope)
            message = LabShutdown().phrase.render(lang)
            response = JSONResponse(status_code=503, headers={"Connection": "close"},
                                    content=error_body([{"loc": [], "msg": message, "type": "shutting_down"}]))
            try:
                await response(scope, receive, send)
            except Exception:  # noqa: BLE001  (the connection is gone): nothing more to answer
                pass


def _accept_lang(scope) -> str:
    """en or es, from ``?lang=`` or ``Accept-Language`` (no app needed)."""
    from urllib.parse import parse_qs

    query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("lang", [""])[0]
    if query in ("en", "es"):
        return query
    accept = next((value for key, value in scope.get("headers", []) if key == b"accept-language"), b"")
    return "es" if accept.decode("latin-1").strip().lower().startswith("es") else "en"


def run_lab(app, host: str, port: int, log_level: str = "warning") -> None:
    """Serve ``app`` on ``host:port`` until Ctrl+C or SIGTERM: Uvicorn with :class:`HeadTimeoutH11`,
    :data:`UVICORN_LIMITS` and :class:`LabServer` (what ``seqlab serve`` runs)."""
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, http=HeadTimeoutH11, **UVICORN_LIMITS)
    LabServer(config).run()
