"""Ctrl+C and SIGTERM, one way for every command: one line, the terminal given back, exit 130 or 143.

A terminal's Ctrl+C sends SIGINT to the whole foreground process group; ``timeout``, ``kill`` and job schedulers
send SIGTERM to the command alone. :class:`seqlab.cli.group.SeqlabGroup` runs every command inside
:func:`handled`, which turns both signals into :class:`Interrupted` (a ``KeyboardInterrupt``, so every
``with`` block on the way out closes: a Rich progress bar stops and shows the cursor, worker pools stop their
processes). When the interrupt reaches the command group, :func:`finish` ignores any further signal, shows the
cursor on a terminal, prints exactly one line on standard error in the run's language — "Interrupted; nothing
was left half-written." or what a command says it kept (:attr:`Interrupted.kept`) — and gives the exit status
128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.

Two refinements, for the steps that an interrupt must not cut:

* :func:`held`: a signal that comes while a file is being written (a plot, a table, a results line) waits until
  the step ends, then stops the command; so every file already written stays whole.
* :func:`raised_by`: while a command runs a loop with its own rule for when to stop (``learn``'s sweep,
  :func:`seqlab.learn.sweep.interrupt_now_or_later`), the signal is noted here and that rule raises.

Worker processes (``serve``'s measuring workers, ``learn --jobs``, the Ray backend) ignore the terminal's SIGINT
from the moment they start (:mod:`seqlab.processes`) and are stopped by their parent as it leaves.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from seqlab.errors import Message
from seqlab.i18n import N_

__all__ = ["Interrupted", "Stop", "exit_code", "finish", "handled", "held", "raised_by", "received"]

#: The signals handled: a terminal's Ctrl+C, and the polite stop of ``kill``, ``timeout`` and schedulers.
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The one line printed when nothing was kept that a command names.
NOTHING_HALF_WRITTEN = N_("Interrupted; nothing was left half-written.")
#: The terminal's "show the cursor" sequence (a progress bar hides it while it draws).
SHOW_CURSOR = "\x1b[?25h"


class Interrupted(KeyboardInterrupt):
    """A Ctrl+C (SIGINT) or SIGTERM, raised in the main thread by :func:`handled`'s handler.

    A command that catches an interrupt and keeps something (``learn``'s finished runs in ``--results``) raises
    a new one with ``kept``, the one line to print instead of :data:`NOTHING_HALF_WRITTEN`.

    Attributes:
        signum: the signal that came (``signal.SIGINT`` when raised by code).
        kept: a :class:`seqlab.errors.Message` saying what was kept, or None.
    """

    def __init__(self, signum: int = signal.SIGINT, kept: Message | None = None) -> None:
        super().__init__(signum)
        self.signum, self.kept = signum, kept


class Stop(Exception):
    """An interrupt carried past Typer (which would turn a ``KeyboardInterrupt`` into a bare exit 130) up to the
    command group, which gives it to :func:`finish`."""

    def __init__(self, interrupt: BaseException) -> None:
        super().__init__(interrupt)
        self.interrupt = interrupt


class _State:
    """The run's interrupt state, read and written in the main thread (Python runs signal handlers there)."""

    def __init__(self) -> None:
        self.received: int | None = None  # the last signal that came
        self.depth = 0  # held() sections open
        self.pending: int | None = None  # a signal held until the section ends
        self.raiser: Callable[[int, Any], None] | None = None


_STATE = _State()


#: Seconds between two looks at whether the import that a signal met has ended (:func:`_after_the_import`).
IMPORT_RETRY_S = 0.05


def _importing(frame: Any) -> bool:
    """Whether the main thread is inside an import (a frame of Python's import machinery on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _after_the_import(state: _State, signum: int) -> None:
    """Deliver ``signum`` to the main thread again shortly (``_thread.interrupt_main``, which runs the handler of
    :data:`SIGNALS` as a signal would), while ``state`` is still the run's and the signal still pending."""
    def again() -> None:
        if _STATE is state and state.pending == signum:
            _thread.interrupt_main(signum)

    timer = threading.Timer(IMPORT_RETRY_S, again)
    timer.daemon = True
    timer.start()


def _on_signal(signum: int, frame: Any) -> None:
    """The handler of :data:`SIGNALS`: note the signal, then raise :class:`Interrupted` now, after the step held
    (:func:`held`), or by the rule of :func:`raised_by`.

    A signal that meets an import is held until the import has ended (looked at every :data:`IMPORT_RETRY_S`):
    an exception raised inside an import can be swallowed by the library imported (PyTorch's C start-up imports
    NumPy and treats any error there as "no NumPy"), and the interrupt would then be lost — the command would run
    to its end and exit 0."""
    _STATE.received = signum
    if _STATE.depth:
        _STATE.pending = signum
        return
    if _importing(frame):
        _STATE.pending = signum
        _after_the_import(_STATE, signum)
        return
    _STATE.pending = None
    if _STATE.raiser is not None:
        _STATE.raiser(signum, frame)
        return
    raise Interrupted(signum)


def received() -> int | None:
    """The signal that came during this run (SIGINT or SIGTERM), or None."""
    return _STATE.received


def exit_code() -> int:
    """128 + the number of the signal that came (130 for SIGINT, 143 for SIGTERM; 130 when none came, as for a
    ``KeyboardInterrupt`` raised by code).

    >>> exit_code()
    130
    """
    return 128 + int(_STATE.received or signal.SIGINT)


@contextmanager
def handled() -> Iterator[None]:
    """Run a command with SIGINT and SIGTERM raising :class:`Interrupted`; put back the handlers it replaced.

    Off the main thread (where Python allows no handler) it changes nothing. Re-entrant: an inner use keeps the
    outer one's state.
    """
    global _STATE
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _STATE
    _STATE = _State()
    previous = {number: signal.signal(number, _on_signal) for number in SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _STATE = outer


@contextmanager
def held() -> Iterator[None]:
    """A step that an interrupt must not cut (writing a file): a signal that comes meanwhile is held, and raised
    as :class:`Interrupted` once the step has ended. Re-entrant.

    >>> with held():
    ...     pass
    """
    state = _STATE
    state.depth += 1
    try:
        yield
    except BaseException:
        state.depth -= 1
        raise
    state.depth -= 1
    if state.depth == 0 and state.pending is not None:
        signum, state.pending = state.pending, None
        raise Interrupted(signum)


@contextmanager
def raised_by(raiser: Callable[[int, Any], None]) -> Iterator[None]:
    """While inside, a signal is noted (:func:`received`, :func:`exit_code`) and then handed to ``raiser``, which
    raises ``KeyboardInterrupt`` now or when its own step allows (``learn``'s
    :func:`seqlab.learn.sweep.interrupt_now_or_later`)."""
    before, _STATE.raiser = _STATE.raiser, raiser
    try:
        yield
    finally:
        _STATE.raiser = before


def _ignore_signals() -> None:
    """From here on the run is ending: a second Ctrl+C or SIGTERM must not cut the last line or the clean-up."""
    if threading.current_thread() is threading.main_thread():
        for number in SIGNALS:
            signal.signal(number, signal.SIG_IGN)


def finish(interrupt: BaseException, lang: str) -> int:
    """End an interrupted run: show the cursor on a terminal, print one line on standard error in ``lang`` (what
    the command kept, else :data:`NOTHING_HALF_WRITTEN`) and return the exit status, 128 + the signal's number.

    Further SIGINT and SIGTERM are ignored from here until :func:`handled` puts the handlers back, so nothing
    cuts this line. On a terminal the line starts at the line's beginning and clears what the terminal echoed
    there (``^C``).
    """
    _ignore_signals()
    kept = getattr(interrupt, "kept", None)
    line = (kept if kept is not None else Message(NOTHING_HALF_WRITTEN)).localized(lang)
    code = exit_code()
    stream = sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    try:
        if terminal:
            stream.write(f"{SHOW_CURSOR}\r{line}\x1b[K\n")
        else:
            stream.write(f"{line}\n")
        stream.flush()
    except (OSError, ValueError):  # standard error is gone (a closed pipe): the status still says it
        pass
    return code


def ignore_at_exit() -> None:
    """For the console script, after the command group has finished: the interpreter's last clean-up (joining
    worker processes, closing files) runs with Ctrl+C and SIGTERM ignored, so a late signal prints no
    traceback from an exit handler."""
    _ignore_signals()
