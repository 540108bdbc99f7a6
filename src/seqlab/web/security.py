"""Who may talk to the web lab and what a browser may do with its pages: a Host allow-list and security headers.

DNS rebinding lets a page on another site reach a server on 127.0.0.1 under its own name; the browser then
sends that name as ``Host``. :class:`HostAllowList` answers 400 to any ``Host`` that is not one of the lab's
names — the loopback names (:data:`LOOPBACK_NAMES`) and the address ``seqlab serve --host`` was given, plus
any ``--allow-host`` — so such a page cannot drive the lab (Starlette's ``TrustedHostMiddleware`` does the
same, but splits ``[::1]:8000`` at the wrong colon and answers in English only).

:class:`SecurityHeaders` adds to every response a Content-Security-Policy with no inline script (every page
loads its scripts from ``/static`` and ``/vendor``; its messages travel as ``application/json`` blocks),
``nosniff``, no framing, no referrer, and ``no-store`` on the API's answers (measurements are not cached by
the browser; the server keeps its own caches).

:class:`SameOrigin` refuses (403) every ``/api`` request — each one computes, GET included — that a browser says
comes from another origin: ``Sec-Fetch-Site: cross-site`` or ``same-site`` (another port or sub-domain of the
same site is still another origin), or an ``Origin`` header other than the lab's own. A page elsewhere can
therefore not make the lab spend its CPU (an ``<img src>`` pointing at a measuring GET, a form posting to it);
the lab's own pages (``same-origin``), a link typed or opened directly (``none``) and clients that send
neither header (curl, scripts, tests) are served.
"""

from __future__ import annotations

import ipaddress
import re

from seqlab.web.asgi import HttpMiddleware
from seqlab.web.messages import printable, tr

DOMAIN = "web"

#: Names under which the lab answers on every address it listens on.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
#: Sent with every response. Styles may be inline: Plotly writes its own ``<style>`` for its charts.
HEADERS = {
    b"content-security-policy": (b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
                                 b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    b"x-content-type-options": b"nosniff",
    b"x-frame-options": b"DENY",
    b"referrer-policy": b"no-referrer",
    b"cross-origin-opener-policy": b"same-origin",
    b"cross-origin-resource-policy": b"same-origin",
    b"permissions-policy": b"camera=(), microphone=(), geolocation=()",
}


#: A ``Host`` header as RFC 9110 §7.2 allows it: a registered name or IPv4 address, or an IPv6 literal in brackets,
#: then an optional ``:`` and a port of digits only. Anything else (``127.0.0.1:abc``, ``localhost:evil``,
#: ``[::1]evil.example``, spaces, a second colon) names no host of this lab.
HOST_HEADER = re.compile(r"(?:(?P<name>[a-z0-9._~!$&'()*+,;=%-]+)|\[(?P<ipv6>[0-9a-f:.]+)\])(?::(?P<port>[0-9]{0,5}))?")


def host_name(header: str) -> str | None:
    """The name in a ``Host`` header: port removed, IPv6 brackets removed, lower case, no trailing dot; None when
    the header is not a host and an optional numeric port (:data:`HOST_HEADER`), so that it matches no name.

    >>> host_name("LocalHost:8000"), host_name("[::1]:8000"), host_name("127.0.0.1"), host_name("evil.example.")
    ('localhost', '::1', '127.0.0.1', 'evil.example')
    >>> host_name("127.0.0.1:abc"), host_name("localhost:evil"), host_name("[::1]evil.example"), host_name("::1")
    (None, None, None, None)
    """
    match = HOST_HEADER.fullmatch(header.strip().lower())
    if match is None:
        return None
    if match["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(match["ipv6"])
        except ValueError:
            return None
        return str(ipaddress.IPv6Address(match["ipv6"]))
    return match["name"].rstrip(".") or None


def _given_name(name: str) -> str | None:
    """A name given on the command line (``--host``, ``--allow-host``): a bare IPv6 address as it is, else as a
    ``Host`` header would carry it (:func:`host_name`)."""
    try:
        return str(ipaddress.IPv6Address(name.strip().strip("[]")))
    except ValueError:
        return host_name(name)


def allowed_names(host: str | None = None, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The names the lab answers to: loopback names, ``host`` (unless it is every address) and ``extra``.

    >>> sorted(allowed_names("192.168.1.5"))
    ['127.0.0.1', '192.168.1.5', '::1', 'localhost']
    >>> sorted(allowed_names("0.0.0.0", ("lab.local",)))
    ['127.0.0.1', '::1', 'lab.local', 'localhost']
    """
    names = set(LOOPBACK_NAMES) | {_given_name(name) for name in extra} - {None}
    if host:
        name = _given_name(host)
        try:
            every = ipaddress.ip_address(name).is_unspecified
        except ValueError:
            every = False
        if name and not every:
            names.add(name)
    return frozenset(names)


def _scope_lang(scope) -> str:
    """The language a refusal answers in, read from the request as the routes read it; English when the request
    carries no app state to read it from (a middleware answers before the app)."""
    from starlette.requests import Request

    from seqlab.web.validation import request_lang

    try:
        return request_lang(Request(scope))
    except Exception:  # noqa: BLE001  (no app state): English
        return "en"

class HostAllowList:
    """Pure ASGI middleware: a request whose ``Host`` is not in ``names`` gets 400 and nothing else runs."""

    def __init__(self, app, names: frozenset[str]) -> None:
        self.app = app
        self.names = names

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = next((value for key, value in scope.get("headers", []) if key == b"host"), b"")
        raw = header.decode("latin-1")
        name = host_name(raw)
        if name is not None and name in self.names:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        from fastapi.responses import JSONResponse

        from seqlab.web.validation import error_body

        lang = _scope_lang(scope)
        _ = tr(lang)
        shown = printable(name if name is not None else raw.strip(), 80)
        if shown:
            message = _("Host {host} is not a name of this lab; it answers to {names}. To let other computers open "
                        "it under this name, start it with seqlab serve --allow-host {host}").format(
                host=shown, names=", ".join(sorted(self.names)))
        else:
            message = _("Host {host} is not a name of this lab; it answers to {names}").format(
                host=_("(none)"), names=", ".join(sorted(self.names)))
        response = JSONResponse(status_code=400, content=error_body([{"loc": ["header", "host"], "msg": message,
                                                                      "type": "host_not_allowed"}]),
                                headers={"Connection": "close"})
        await response(scope, receive, send)


class SecurityHeaders(HttpMiddleware):
    """Pure ASGI middleware: :data:`HEADERS` on every response, ``Cache-Control: no-store`` on ``/api``."""

    async def handle(self, scope, receive, send) -> None:
        api = scope.get("path", "").startswith("/api/")

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                present = {key.lower() for key, _ in message.get("headers", [])}
                extra = [(key, value) for key, value in HEADERS.items() if key not in present]
                if api and b"cache-control" not in present:
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, receive, with_headers)


#: ``Sec-Fetch-Site`` values of requests the lab serves: its own pages, and a link opened directly.
ALLOWED_FETCH_SITES = (b"same-origin", b"none")


def own_origin(scope) -> str | None:
    """The lab's origin as this request reached it: ``scheme://host[:port]`` from the scheme and ``Host``, in lower
    case, the default port left out; None without a ``Host``.

    >>> own_origin({"scheme": "http", "headers": [(b"host", b"127.0.0.1:8000")]})
    'http://127.0.0.1:8000'
    >>> own_origin({"scheme": "http", "headers": [(b"host", b"LocalHost:80")]})
    'http://localhost'
    """
    host = next((value for key, value in scope.get("headers", []) if key == b"host"), b"")
    if not host:
        return None
    return normal_origin(f"{scope.get('scheme', 'http')}://{host.decode('latin-1')}")


def normal_origin(origin: str) -> str:
    """An origin in lower case with its scheme's default port removed (``http://x:80`` is ``http://x``).

    >>> normal_origin("HTTP://Lab.Local:80"), normal_origin("https://a:8443")
    ('http://lab.local', 'https://a:8443')
    """
    origin = origin.strip().lower().rstrip("/")
    for scheme, port in (("http://", ":80"), ("https://", ":443")):
        if origin.startswith(scheme) and origin.endswith(port):
            return origin[: -len(port)]
    return origin


def cross_origin(scope) -> str | None:
    """Why a request comes from another origin, as the header that says so (``Sec-Fetch-Site: cross-site``,
    ``Origin: http://evil.example``), or None when it is the lab's own or a client that sends neither header.

    >>> cross_origin({"headers": [(b"sec-fetch-site", b"cross-site")]})
    'Sec-Fetch-Site: cross-site'
    >>> cross_origin({"scheme": "http", "headers": [(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000"),
    ...                                             (b"sec-fetch-site", b"same-origin")]}) is None
    True
    >>> cross_origin({"scheme": "http", "headers": [(b"host", b"127.0.0.1:8000"), (b"origin", b"null")]})
    'Origin: null'
    """
    headers = scope.get("headers", [])
    site = [value.strip().lower() for key, value in headers if key == b"sec-fetch-site"]
    for value in site:
        if value not in ALLOWED_FETCH_SITES:
            return "Sec-Fetch-Site: " + printable(value.decode("latin-1"), 40)
    origins = [value for key, value in headers if key == b"origin"]
    if origins:
        own = own_origin(scope)
        for value in origins:
            origin = value.decode("latin-1")
            if own is None or normal_origin(origin) != own:
                return "Origin: " + printable(origin, 80)
    return None


class SameOrigin:
    """Pure ASGI middleware: an ``/api`` request from another origin (:func:`cross_origin`) gets 403, and nothing
    of it runs."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/api"):
            await self.app(scope, receive, send)
            return
        why = cross_origin(scope)
        if why is None:
            await self.app(scope, receive, send)
            return
        from fastapi.responses import JSONResponse

        from seqlab.web.validation import error_body

        lang = _scope_lang(scope)
        _ = tr(lang)
        message = _("this request comes from another site ({header}); the lab measures only for its own pages: "
                    "open it at {origin}").format(header=why, origin=own_origin(scope) or "http://127.0.0.1:8000")
        response = JSONResponse(status_code=403, content=error_body([{"loc": ["header", "origin"], "msg": message,
                                                                      "type": "cross_origin"}]),
                                headers={"Vary": "Origin, Sec-Fetch-Site"})
        await response(scope, receive, send)
