"""Start and stop ``seqlab serve`` on a free port of 127.0.0.1, for the web lab's fuzz and load scripts.

Shared by ``benchmarks/fuzz_web.py`` and ``benchmarks/load_test.py`` (run as scripts, so this folder is on
``sys.path``). Nothing else is contacted: the server listens on loopback only.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import IO


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(port: int, log: IO[str] | None = None) -> subprocess.Popen:
    """``seqlab serve`` on 127.0.0.1 in its own process; returns once the port answers.

    Args:
        port: the loopback port to listen on (see :func:`free_port`).
        log: a file for the server's stdout and stderr together; None: both go where this script's go.

    Raises:
        SystemExit: the server exited, or its port did not answer within 60 s (the server is terminated).
    """
    command = [sys.executable, "-m", "seqlab", "serve", "--host", "127.0.0.1", "--port", str(port), "--lang", "en"]
    output = {} if log is None else {"stdout": log, "stderr": subprocess.STDOUT}
    server = subprocess.Popen(command, **output)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with code {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("the server did not start within 60 s")


def stop_server(server: subprocess.Popen) -> None:
    """Terminate the server and wait for it (at most 30 s)."""
    server.terminate()
    server.wait(timeout=30)
