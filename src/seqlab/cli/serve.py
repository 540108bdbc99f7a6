"""``seqlab serve``: run the web lab on this computer (FastAPI under Uvicorn; parse, then serve).

Bound to 127.0.0.1 by default, so only this computer can reach it (any other address prints a warning on
stderr: the lab's bench then runs for whoever on the network asks); ``--open`` opens the lab in the
default browser once the server is listening. Everything the pages load ships in the package. The start
line and the warning are in the lab's language (the ``web`` catalogue).

The lab answers only requests whose ``Host`` is a loopback name or the ``--host`` given (plus any
``--allow-host``): a page elsewhere that rebinds its own name to this address gets 400. Uvicorn runs with
timeouts for idle and slow clients (:mod:`seqlab.web.server`: a request head must arrive within 10 s,
idle connections close after 5 s, at most 64 connections at once, the 65th answered 503 with ``Retry-After``);
request bodies that stall or trickle are answered 408 by the lab itself. PyTorch, the measuring engine and the
worker processes that measure (one of them a spare) start with the server, before it listens; Ctrl+C or SIGTERM
stops a measurement under way with a 503 that says the lab is shutting down (:class:`~seqlab.web.server.LabServer`).
With ``--host 0.0.0.0`` (every address) other computers reach the lab under a name it does not know until it is
given with ``--allow-host``; the warning says so.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.extras import require_extra
from seqlab.cli.options import LANG_HELP, integer_at_least, language
from seqlab.cli.options import worded
from seqlab.i18n import N_


def _open_when_ready(url: str, host: str, port: int, timeout_s: float = 20.0) -> None:
    """Open ``url`` in the browser as soon as the port accepts connections (in a background thread)."""
    import socket
    import threading
    import time
    import webbrowser

    def wait_then_open() -> None:
        """Poll the port every 0.1 s; open the browser on the first connection."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    webbrowser.open(url)
                    return
            except OSError:
                time.sleep(0.1)

    threading.Thread(target=wait_then_open, daemon=True).start()


def _check_address(host: str, port: int) -> None:
    """Bind and release ``host:port`` once, so a taken port or a foreign address is a usage error, not a trace."""
    import socket

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:  # the port is taken, or the address is not this computer's
        raise typer.BadParameter(worded(N_("cannot listen on {host}:{port}: {value}"), host=host, port=str(port),
                                        value=error.strerror or error), param_hint="'--host' / '--port'") from None
    except (UnicodeError, ValueError) as error:  # a name no resolver can take: a label over 63 letters, a NUL
        raise typer.BadParameter(worded(N_("cannot listen on {host}:{port}: {value}"), host=host, port=str(port),
                                        value=error), param_hint="'--host' / '--port'") from None


def _is_loopback(host: str) -> bool:
    """Whether ``host`` names this computer only (127.0.0.0/8, ::1, localhost).

    >>> _is_loopback("127.0.0.1"), _is_loopback("localhost"), _is_loopback("0.0.0.0"), _is_loopback("::")
    (True, True, False, False)
    """
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: it may resolve to any interface
        return False


def serve(
    host: Annotated[str, typer.Option(metavar="ADDRESS",
                                      help="Address to listen on (127.0.0.1: this computer only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(parser=integer_at_least(1, 65535), metavar="INTEGER",
                                      help="Port to listen on.")] = 8000,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the lab in the default browser.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", metavar="en|es", help=LANG_HELP)] = None,
    allow_host: Annotated[Optional[list[str]], typer.Option(
        "--allow-host", metavar="NAME",
        help="Another name the lab answers to as Host (repeatable); loopback names and --host always are.")] = None,
) -> None:
    """Run the web lab: Figure 1, cost, chain and path, order, time, generation and the self-check, in en or es."""
    lang = language(lang)
    require_extra("serve", "web", lang)  # without seqlab[web]: one line naming the extra, exit 2
    from seqlab.i18n import translator
    from seqlab.web import server as lab_server
    from seqlab.web.app import create_app

    _ = translator(lang, "web")
    _check_address(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{port}/?lang={lang}"
    typer.echo(_("seqlab lab: {url}  (Ctrl+C stops it)").format(url=url), err=True)
    if not _is_loopback(host):
        typer.echo(_("Warning: listening on {host}, so other computers on the network can open the lab and make "
                     "this one run its CPU-heavy measurements; use --host 127.0.0.1 to keep it to this computer.")
                   .format(host=host), err=True)
        if not allow_host and host in ("0.0.0.0", "::"):
            typer.echo(_("Other computers reach it under this computer's name or address, which the lab does not "
                         "know: they get 400 until you give it, e.g. --allow-host 192.168.1.5 or --allow-host "
                         "mylaptop.local (repeatable)."), err=True)
    if open_browser:
        _open_when_ready(url, "127.0.0.1" if host in ("0.0.0.0", "::") else host, port)
    lab_server.run_lab(create_app(lang, host=host, allowed_hosts=tuple(allow_host or ()), warm=True), host, port)
