"""How ``seqlab serve`` runs Uvicorn: connection limits, and a deadline for a request's head.

Uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``) but waits forever for a client
that opens a connection and sends nothing, or half a request head (a "slowloris" client holds a connection
that way). :class:`HeadTimeoutH11` is Uvicorn's h11 protocol with one addition: from the moment a connection
opens, and again after each response, the client has :data:`HEAD_TIMEOUT_S` seconds to deliver a complete
request head, or the connection is closed. A body that stalls is the app's to refuse (HTTP 408,
:mod:`seqlab.web.limits`). :data:`UVICORN_LIMITS` are the rest of the options ``seqlab serve`` passes.
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a client has, from connecting or from the end of the last response, to send a whole request head.
HEAD_TIMEOUT_S = 10.0
#: Uvicorn's limits: idle keep-alive connections close after 5 s, at most 64 connections at once (more get 503),
#: a request head of at most 16 KiB, and at most 5 s to finish requests on shutdown.
UVICORN_LIMITS = {"timeout_keep_alive": 5, "limit_concurrency": 64, "h11_max_incomplete_event_size": 16 * 1024,
                  "timeout_graceful_shutdown": 5}


class HeadTimeoutH11(H11Protocol):
    """Uvicorn's h11 protocol that closes a connection whose request head does not arrive in time."""

    head_timeout_s = HEAD_TIMEOUT_S

    def connection_made(self, transport) -> None:  # noqa: D102
        super().connection_made(transport)
        self._head_timer = None
        self._arm()

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
