"""Worker processes that leave the terminal's Ctrl+C to their parent.

A terminal sends Ctrl+C (SIGINT) to every process of its foreground process group: to the command and to the
worker processes it started (``seqlab serve``'s measuring workers, ``seqlab learn --jobs``' pool, a local Ray
cluster). A worker that takes it as its own stops mid-run with a traceback of its own, beside the parent's
answer. So a worker ignores SIGINT from its very first instruction, and its parent, which sees the same
Ctrl+C, stops it (SIGTERM or its pipe closed); a SIGTERM sent to the parent alone reaches no worker at all.

The first instructions of a spawned child are the interpreter's start-up and the unpickling of its target,
before any of its code runs. :func:`started_quietly` covers them: the thread that starts children holds SIGINT
blocked meanwhile, and a child inherits that mask through ``fork`` and ``exec`` (as multiprocessing's own
resource tracker is started). :func:`ignore_interrupts`, the first thing each worker runs, then sets SIGINT to
``SIG_IGN`` and unblocks it, which drops a Ctrl+C that came while it started. The parent's thread unblocks at
once after the start, so its own Ctrl+C is delivered then (or to another of its threads meanwhile).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ignore_interrupts", "started_quietly"]

_BLOCKED = {signal.SIGINT}


@contextmanager
def started_quietly() -> Iterator[None]:
    """Start child processes inside: they begin life with SIGINT blocked (see the module), so a Ctrl+C typed
    while they start up reaches none of them. Re-entrant; a no-op where the platform has no signal masks.

    >>> with started_quietly():
    ...     pass
    """
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:
        yield
        return
    before = mask(signal.SIG_BLOCK, _BLOCKED)
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, before)


def ignore_interrupts() -> None:
    """In a worker process, first thing: ignore SIGINT (the terminal's Ctrl+C is the parent's to handle) and
    unblock it, dropping one that came while the worker started. Only the main thread may set a handler; from
    another thread this does nothing.

    >>> import os, subprocess, sys
    >>> code = "import os, signal; from seqlab.processes import ignore_interrupts; ignore_interrupts(); " \\
    ...        "os.kill(os.getpid(), signal.SIGINT); print('still here')"
    >>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    'still here\\n'
    """
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is not None:
        mask(signal.SIG_UNBLOCK, _BLOCKED)
