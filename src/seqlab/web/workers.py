"""Measurements of the web lab in worker processes: isolated, time-limited, cancellable, memory-capped, queued.

The span and path tracers, the counters and the clock switch process-wide PyTorch settings while they run
(:mod:`seqlab.measure.switches`) and allocate what the request asks for. The server process therefore never
measures: every measurement — traces, counts, Figure 1, order, the quiz's facts, the bench — runs in a worker
process started with the ``spawn`` context (its own interpreter and its own PyTorch state, nothing inherited
from the server) and sends back a picklable result. :class:`WorkerPool` gives each request:

* a **queue bound**: at most :attr:`~WorkerPool.size` measurements at once; a request waits at most
  ``wait_s`` for a worker, and only while fewer than ``max_waiting`` others wait; otherwise
  :class:`~seqlab.web.budget.LabBusy` (HTTP 503 with ``Retry-After``);
* a **time limit** per request (``limit_s``, times the pool's :attr:`~WorkerPool.time_limit_scale`; None turns
  the limits off, as the test suite does so that no test depends on the machine's speed): past it the worker is
  killed and the request refused (422) with the limit named; the pool reads its own :attr:`~WorkerPool.clock`,
  so a test can move time instead of racing it;
* **cancellation**: :meth:`WorkerPool.run` asks the ASGI request whether its client is still there between
  polls (every few milliseconds to 50 ms); a client that hangs up gets its worker killed, which frees the
  slot at once;
* a **memory ceiling**: the worker's resident memory is read from ``/proc`` while it works; past
  :attr:`~WorkerPool.memory_limit_bytes` it is killed and the request refused (422); after a job, a worker
  over :attr:`~WorkerPool.recycle_bytes` (or past :attr:`~WorkerPool.max_jobs` jobs) is retired and a fresh
  one started when next needed, so memory a measurement left behind goes back to the system; a worker that
  has worked and then sat idle for :attr:`~WorkerPool.idle_recycle_s` is replaced by a fresh one too.

* a **spare**: a pool with :attr:`~WorkerPool.spares` (``seqlab serve`` keeps one) starts that many workers
  beyond its slots and, whenever a worker is killed or retired, starts a replacement at once in a background
  thread, so a cancelled or stopped measurement costs the next visitor no wait for a new interpreter and
  PyTorch (a pool without spares replaces a worker lazily, at the next measurement);
* a **time estimate before it starts**: a job given its :class:`~seqlab.web.budget.Work` is judged against the
  pool's :attr:`~WorkerPool.run_times` (seconds per unit of each kind, from the last runs in this pool, an
  overrun included) and refused (422, :func:`~seqlab.web.budget.require_within_time`) when its estimate passes
  its time limit; its own run time is recorded afterwards;
* a **shutdown answer**: :meth:`WorkerPool.stop_measuring` (``seqlab serve`` calls it on Ctrl+C or SIGTERM)
  stops every measurement under way and refuses new ones with :class:`LabShutdown` (503, "the lab is shutting
  down"), so no request is left for the server to cancel.

:func:`default_pool` is the one pool of a process, shared by every app it creates (tests and ``seqlab serve``
alike) and stopped at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import math
import multiprocessing
import os
import pickle
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from seqlab.processes import started_quietly
from seqlab.web.budget import RETRY_AFTER_S, LabBusy, RunTimes, Work, require_within_time
from seqlab.web.messages import N_, LabError, Phrase

DOMAIN = "web"

MIB = 1024**2
#: Measurements at once (one request's tensors at a time keep the per-request memory budget honest).
WORKERS = 1
#: Resident memory past which a working measurement is stopped.
MEMORY_LIMIT_BYTES = 2048 * MIB
#: Resident memory past which a worker is retired after its job.
RECYCLE_BYTES = 768 * MIB
#: Jobs after which a worker is retired anyway (slow leaks of long runs).
MAX_JOBS = 1000
#: Seconds a worker that has worked may sit idle before it is replaced by a fresh one (its memory goes back).
IDLE_RECYCLE_S = 60.0
#: Niceness added to every worker process: under contention the server's event loop (pages, static files,
#: refusals) gets about three times a worker's share of the CPU; on an idle core it changes nothing.
WORKER_NICENESS = 5
#: Workers ``seqlab serve`` keeps started beyond its slots, ready to take over from a killed one.
SPARES = 1
_SPAWN = multiprocessing.get_context("spawn")
_START_LOCK = threading.Lock()


def resident_bytes(pid: int) -> int | None:
    """Resident memory of process ``pid`` in bytes (Linux ``/proc``), or None where it cannot be read.

    >>> resident_bytes(os.getpid()) > 1024**2
    True
    """
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _portable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a RuntimeError that names it."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(error).__name__}: {error}")


def _serve(connection, preload: tuple[str, ...] = ("torch",)) -> None:
    """A worker's loop: receive ``(function, args)``, send back ``(ok, result or error, resident bytes)``.

    ``preload``: modules imported before the first job (PyTorch by default: the first answer is not slowed). The
    process first leaves Ctrl+C to the server (:func:`seqlab.processes.ignore_interrupts`: the server stops it)
    and lowers its priority by :data:`WORKER_NICENESS`.
    """
    import importlib

    from seqlab.processes import ignore_interrupts

    ignore_interrupts()  # the terminal's Ctrl+C reaches the whole group: the server stops this worker
    try:  # measurements yield the CPU to the server's event loop: pages stay quick while a worker computes
        os.nice(WORKER_NICENESS)
    except OSError:
        pass
    for name in preload:
        importlib.import_module(name)

    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        function, args = job
        try:
            reply = (True, function(*args))
        except BaseException as error:  # noqa: BLE001  (sent back; the server decides)
            reply = (False, _portable(error))
        connection.send((*reply, resident_bytes(os.getpid())))


class Worker:
    """One worker process and the server's end of its pipe."""

    def __init__(self, preload: tuple[str, ...] = ("torch",)) -> None:
        self.connection, child = _SPAWN.Pipe()
        self.process = _SPAWN.Process(target=_serve, args=(child, preload), daemon=True, name="seqlab-lab-worker")
        with _START_LOCK:  # the child must not run the server's own main script again (spawn would)
            main = sys.modules.get("__main__")
            sys.modules["__main__"] = types.ModuleType("__main__")
            try:
                with started_quietly():  # born deaf to the terminal's Ctrl+C (seqlab.processes)
                    self.process.start()
            finally:
                sys.modules["__main__"] = main
        self._child = child  # kept open: under spawn the child copies it from this process while it starts
        self.jobs = 0
        self.idle_since = time.monotonic()

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.is_alive()

    def stop(self, kill: bool = True) -> None:
        """End the process: at once (``kill``), or by asking it to leave its loop."""
        try:
            if not kill and self.alive():
                self.connection.send(None)
                self.process.join(2)
            if self.alive():
                self.process.kill()
            self.process.join(2)
        except (OSError, ValueError):
            pass
        finally:
            self.connection.close()
            self._child.close()


class LabShutdown(LabError):
    """The server is shutting down: a measurement under way was stopped, a new one is not started (HTTP 503)."""

    def __init__(self) -> None:
        super().__init__(Phrase(N_("the lab is shutting down, so this measurement was stopped before it finished; "
                                   "start the lab again (seqlab serve) and ask once more")), status=503,
                         details={"keep_previous_result": True})

    def __reduce__(self):
        return (LabShutdown, ())


class WorkerPool:
    """Worker processes for measurements; see the module's docstring for the limits.

    >>> pool = WorkerPool(wait_s=0.1, preload=())
    >>> pool.call(divmod, (7, 2), limit_s=60)
    (3, 1)
    >>> pool.busy, pool.shutdown()
    (False, None)
    """

    def __init__(self, size: int = WORKERS, max_waiting: int = 1, wait_s: float = 2.0,
                 memory_limit_bytes: int = MEMORY_LIMIT_BYTES, recycle_bytes: int = RECYCLE_BYTES,
                 max_jobs: int = MAX_JOBS, preload: tuple[str, ...] = ("torch",),
                 idle_recycle_s: float = IDLE_RECYCLE_S, time_limit_scale: float | None = 1.0,
                 clock: Callable[[], float] = time.monotonic, spares: int = 0) -> None:
        self.size, self.max_waiting, self.wait_s, self.preload = size, max_waiting, wait_s, preload
        #: Workers kept started beyond :attr:`size`, replaced at once when one is killed or retired.
        self.spares = spares
        #: Seconds per unit of work of each kind, from this pool's last runs (the estimates before a run).
        self.run_times = RunTimes()
        self.idle_recycle_s = idle_recycle_s
        #: Every ``limit_s`` is multiplied by this (a slow machine may scale them); None: no time limit at all.
        self.time_limit_scale = time_limit_scale
        #: Seconds, monotonic: what the time limits are read against.
        self.clock = clock
        self._reaper: threading.Thread | None = None
        self._closed = False
        self.memory_limit_bytes, self.recycle_bytes, self.max_jobs = memory_limit_bytes, recycle_bytes, max_jobs
        self._condition = threading.Condition()
        self._idle: list[Worker] = []
        self._working: set[Worker] = set()
        self._reserved = 0
        self._waiting = 0
        self._starting = 0
        self._stopping = False
        self.jobs_done = 0
        self.workers_started = 0

    @property
    def busy(self) -> bool:
        """Whether every worker slot is taken now."""
        return self._reserved >= self.size

    def worker_pids(self) -> list[int]:
        """Process ids of the workers alive now (idle or working)."""
        with self._condition:
            workers = list(self._idle) + list(self._working)
        return [worker.process.pid for worker in workers if worker.alive()]

    def working_pids(self) -> list[int]:
        """Process ids of the workers alive now and running a measurement (the spare and other idle ones left out)."""
        with self._condition:
            workers = list(self._working)
        return [worker.process.pid for worker in workers if worker.alive()]

    def warm(self) -> None:
        """Start idle workers now (in this thread) until the pool holds :attr:`size` + :attr:`spares` processes,
        so first requests, and the next after a killed one, do not wait for one."""
        while not self._closed and not self._stopping:
            with self._condition:
                if len(self._idle) + len(self._working) + self._starting >= self.size + self.spares:
                    return
                self._starting += 1
            try:
                worker = self._new_worker()
            finally:
                with self._condition:
                    self._starting -= 1
            with self._condition:
                worker.idle_since = time.monotonic()
                self._idle.append(worker)
                self._condition.notify()

    def _replenish(self) -> None:
        """With spares: start the workers missing now, in a background thread (the caller does not wait)."""
        if self.spares and not self._closed and not self._stopping:
            threading.Thread(target=self.warm, daemon=True, name="seqlab-lab-worker-starter").start()

    def stop_measuring(self) -> None:
        """The server is shutting down: stop every measurement under way and refuse new ones with
        :class:`LabShutdown` (HTTP 503). Safe to call from a signal handler (it only sets a flag; a helper
        thread wakes the requests waiting for a worker)."""
        self._stopping = True

        def wake() -> None:
            with self._condition:
                self._condition.notify_all()

        threading.Thread(target=wake, daemon=True).start()

    def _new_worker(self) -> Worker:
        worker = Worker(self.preload)
        self.workers_started += 1
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap, daemon=True, name="seqlab-lab-worker-reaper")
            self._reaper.start()
        return worker

    def _reap(self) -> None:
        """Every few seconds: replace each worker that has worked and then idled :attr:`idle_recycle_s` or more."""
        while not self._closed:
            time.sleep(min(5.0, self.idle_recycle_s / 4))
            now = time.monotonic()
            with self._condition:
                stale = [worker for worker in self._idle
                         if worker.jobs and now - worker.idle_since >= self.idle_recycle_s]
                for worker in stale:
                    self._idle.remove(worker)
            for worker in stale:
                worker.stop(kill=False)
            if stale and not self._closed:
                self.warm()

    def _acquire(self, wait_s: float, max_waiting: int) -> Worker | None:
        with self._condition:
            if self._stopping:
                raise LabShutdown()
            if self._reserved >= self.size:
                if self._waiting >= max_waiting or wait_s <= 0:
                    return None
                self._waiting += 1
                try:
                    if not self._condition.wait_for(lambda: self._reserved < self.size or self._stopping, wait_s):
                        return None
                finally:
                    self._waiting -= 1
                if self._stopping:
                    raise LabShutdown()
            self._reserved += 1
            worker = self._idle.pop() if self._idle else None
        if worker is None or not worker.alive():
            try:
                worker = self._new_worker()
            except BaseException:
                self._release(None, keep=False)
                raise
        with self._condition:
            self._working.add(worker)
        return worker

    def _release(self, worker: Worker | None, keep: bool) -> None:
        with self._condition:
            if worker is not None:
                self._working.discard(worker)
                if keep:
                    worker.idle_since = time.monotonic()
                    self._idle.append(worker)
            self._reserved -= 1
            self._condition.notify()
        if worker is not None and not keep:
            worker.stop()
            self._replenish()

    def _limit(self, limit_s: float) -> tuple[float, float]:
        """(deadline on :attr:`clock`, the limit in seconds) of a job asked to finish within ``limit_s``."""
        if self.time_limit_scale is None:
            return math.inf, math.inf
        limit = limit_s * self.time_limit_scale
        return self.clock() + limit, limit

    def _check(self, worker: Worker, deadline: float, limit_s: float) -> None:
        """Raise when the working ``worker`` is past its time or memory, or has died, or the server stops."""
        if self._stopping:
            raise LabShutdown()
        if deadline != math.inf and self.clock() > deadline:
            raise LabError(Phrase(N_("the measurement ran past its time limit of {seconds} s on this machine and was "
                                  "stopped; ask for smaller sizes"), {"seconds": f"{limit_s:g}"}),
                           details={"limit_s": limit_s, "keep_previous_result": True})
        used = resident_bytes(worker.process.pid)
        if used is not None and used > self.memory_limit_bytes:
            raise LabError(Phrase(N_("the measurement used more than {most} MiB and was stopped; ask for smaller "
                                     "sizes"),
                                  {"most": self.memory_limit_bytes // MIB}))
        if not worker.alive():
            raise LabError(Phrase(N_("the measuring process stopped unexpectedly; try again")), status=503)

    def _finish(self, worker: Worker, work: Work | None, started: float, limit: float) -> tuple[bool, Any, bool]:
        """The finished job's answer off the pipe, its run time recorded (:meth:`_record`): (ok, payload, whether
        the worker is kept: within :attr:`recycle_bytes` and :attr:`max_jobs`). The caller releases the worker, then
        returns the payload or raises it (:func:`_answer`)."""
        ok, payload, used = worker.connection.recv()
        worker.jobs += 1
        self.jobs_done += 1
        self._record(work, started, limit, complete=True)
        keep = (used is None or used <= self.recycle_bytes) and worker.jobs < self.max_jobs
        return ok, payload, keep

    def _judge(self, work: Work | None, limit_s: float) -> None:
        """Refuse ``work`` before it starts when the last runs say it would pass its (scaled) time limit."""
        if work is not None and self.time_limit_scale is not None:
            require_within_time(work, limit_s * self.time_limit_scale, self.run_times)

    def _record(self, work: Work | None, started: float, limit: float, complete: bool) -> None:
        if work is not None:
            seconds = limit if not complete else self.clock() - started
            if math.isfinite(seconds):
                self.run_times.record(work, seconds, complete)

    def call(self, function: Callable, args: tuple = (), limit_s: float = 60.0, wait_s: float | None = None,
             work: Work | None = None) -> Any:
        """Run ``function(*args)`` in a worker and return its result, blocking this thread.

        ``work``: what the job will do, for its time estimate (refused before it starts when the estimate passes
        the limit) and recorded with its run time.

        Raises:
            LabBusy: no worker freed up within ``wait_s`` (default :attr:`wait_s`) or the queue was full.
            LabError: past ``limit_s`` or the memory ceiling (the worker is killed), or estimated past it.
            LabShutdown: the server is shutting down.
            Exception: whatever ``function`` raised in the worker.
        """
        self._judge(work, limit_s)
        worker = self._acquire(self.wait_s if wait_s is None else wait_s, self.max_waiting)
        if worker is None:
            raise LabBusy(RETRY_AFTER_S)
        keep = False
        try:
            worker.connection.send((function, args))
            (deadline, limit), started = self._limit(limit_s), self.clock()
            while True:  # checked before every wait: a job is judged on the clock, whatever its own speed
                self._check_recording(worker, deadline, limit, work, started)
                if worker.connection.poll(0.05):
                    break
            ok, payload, keep = self._finish(worker, work, started, limit)
        finally:
            self._release(worker, keep)
        return _answer(ok, payload)

    def _check_recording(self, worker, deadline, limit, work: Work | None, started: float) -> None:
        """:meth:`_check`; a job stopped for taking its whole limit (at least) is first recorded, so that the next
        estimate knows it (:meth:`_record`).

        Raises:
            LabError: as :meth:`_check`.
        """
        try:
            self._check(worker, deadline, limit)
        except LabError as error:
            if _overran(error):
                self._record(work, started, limit, complete=False)
            raise

    def try_call(self, function: Callable, args: tuple = (), limit_s: float = 30.0,
                 wait_s: float = 0.2) -> tuple[bool, Any]:
        """:meth:`call` that never queues: ``(False, None)`` when no worker frees up within ``wait_s`` (or the
        server is shutting down)."""
        try:
            return True, self.call(function, args, limit_s, wait_s)
        except (LabBusy, LabShutdown):
            return False, None

    async def run(self, function: Callable, args: tuple = (), limit_s: float = 60.0, request=None,
                  wait_s: float | None = None, work: Work | None = None) -> Any:
        """Run ``function(*args)`` in a worker without blocking the event loop; cancel it if ``request``'s
        client disconnects (the worker is killed, the slot freed, and the caller gets ``ClientGone``).

        ``work``: as in :meth:`call`. A worker that must be started first is started in a thread, never on the
        event loop.

        Raises:
            LabBusy, LabError, LabShutdown, Exception: as :meth:`call`; :class:`ClientGone` when the client left.
        """
        from starlette.concurrency import run_in_threadpool

        self._judge(work, limit_s)
        wait = self.wait_s if wait_s is None else wait_s
        worker = self._acquire_idle() or await run_in_threadpool(self._acquire, wait, self.max_waiting)
        if not worker:
            raise LabBusy(RETRY_AFTER_S)
        keep = False
        try:
            worker.connection.send((function, args))
            (deadline, limit), pause, started = self._limit(limit_s), 0.002, self.clock()
            while True:  # checked before every wait, as in call
                self._check_recording(worker, deadline, limit, work, started)
                if worker.connection.poll():
                    break
                if request is not None and await request.is_disconnected():
                    raise ClientGone()
                await asyncio.sleep(pause)
                pause = min(0.05, pause * 2)
            ok, payload, keep = self._finish(worker, work, started, limit)
        finally:
            self._release(worker, keep)
        return _answer(ok, payload)

    def _acquire_idle(self) -> Worker | None:
        """A free slot with an idle worker alive now, taken without waiting and without starting a process (this
        runs on the event loop); None otherwise."""
        with self._condition:
            if self._stopping:
                raise LabShutdown()
            if self._reserved >= self.size or not self._idle or not self._idle[-1].alive():
                return None
            self._reserved += 1
            worker = self._idle.pop()
            self._working.add(worker)
        return worker

    def shutdown(self) -> None:
        """Stop every worker (idle ones politely, working ones at once)."""
        self._closed = True
        with self._condition:
            idle, working = list(self._idle), list(self._working)
            self._idle.clear()
        for worker in idle:
            worker.stop(kill=False)
        for worker in working:
            worker.stop()


def _answer(ok: bool, payload: Any) -> Any:
    """A job's payload when it succeeded; what it raised in the worker, raised here, when it did not."""
    if not ok:
        raise payload
    return payload


def _overran(error: LabError) -> bool:
    """Whether ``error`` is the time limit's (the run is recorded as lasting at least its limit)."""
    return "limit_s" in (error.details or {})


class ClientGone(Exception):
    """The client disconnected while its measurement ran; the measurement was stopped."""


_default: WorkerPool | None = None
_default_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process's one pool (created on first use, stopped at exit)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WorkerPool()
            atexit.register(_default.shutdown)
        return _default


def pool_of(request) -> WorkerPool:
    """The pool of the app serving ``request`` (``app.state.pool``), else :func:`default_pool`."""
    return getattr(request.app.state, "pool", None) or default_pool()
