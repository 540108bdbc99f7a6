"""Sweeps: many independent runs, on local processes or a Ray cluster, each kept in a results file as it ends.

A sweep is a list of planned runs (frozen dataclasses, e.g. :class:`~seqlab.studies.learn.PlannedRun`)
and one picklable top-level function that executes one of them and returns a dataclass (a
:class:`~seqlab.learn.training.Run`). Nothing here knows what a run is: a run is named by the fields of
its planned dataclass (:func:`run_key`), so a plan whose dataclass grows new fields needs no change here.

Backends (issue 25, item 5):

* :class:`Local` ``(jobs=1)``: in this process, one run after another.
* :class:`Local` ``(jobs=N)``, N > 1: :class:`concurrent.futures.ProcessPoolExecutor` with N workers started
  by ``spawn`` (torch and ``fork`` do not mix); each worker ignores SIGINT from its start
  (:mod:`seqlab.processes`: the parent handles Ctrl-C and stops it) and sets torch to ``threads`` intra-op
  threads before the first run.
* :class:`Ray` ``(address)``: Ray remote tasks, one CPU each, on the cluster at ``address`` (``"auto"``: the
  cluster this machine belongs to), or on the Ray this process has already initialised.

The backend never changes a result: each run depends only on its planned fields and the thread count
(the executing function fixes both and asks for deterministic kernels), and :func:`run_sweep` returns
the results in plan order, not in the order they finished.

Results file (:class:`ResultsFile`, JSON Lines, UTF-8): a header line ``{"seqlab_sweep": 1, "fingerprint":
…, "about": …}``, where ``about`` describes what produces the results (the study's config, PyTorch's
version) and ``fingerprint`` is its SHA-256; then one line ``{"run": …, "result": …}`` per finished run,
written, flushed and fsynced as the run ends. Reopening the file resumes: a file written for another
``about`` is refused, naming the first field that differs; a last line cut short (the process killed
while writing it) is dropped and its run done again.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.processes import ignore_interrupts, started_quietly

__all__ = ["FORMAT", "JOBS_PER_CPU", "Local", "Ray", "ResultsFile", "Sweep", "check_backend", "fingerprint",
           "max_jobs", "run_key", "run_sweep"]

P = TypeVar("P")
R = TypeVar("R")

#: The results file's format version (its header's ``seqlab_sweep``).
FORMAT = 1
#: Most local worker processes per CPU (:func:`max_jobs`): past one per CPU they only share the cores.
JOBS_PER_CPU = 4


@dataclass(frozen=True)
class Local:
    """Run on this machine: ``jobs`` = 1 in this process, more in that many spawned worker processes."""

    jobs: int = 1


@dataclass(frozen=True)
class Ray:
    """Run as Ray tasks on the cluster at ``address`` (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).

    If this process has already called ``ray.init``, that Ray is used and ``address`` is ignored.
    """

    address: str = "auto"


Backend = Local | Ray


def max_jobs() -> int:
    """The most local workers accepted: :data:`JOBS_PER_CPU` per CPU this process may use.

    >>> max_jobs() >= JOBS_PER_CPU
    True
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return JOBS_PER_CPU * cpus


def check_backend(backend: object) -> Backend:
    """Return ``backend`` if it is a :class:`Local` with 1 <= jobs <= :func:`max_jobs` or a :class:`Ray`.

    >>> check_backend(Local(2))
    Local(jobs=2)

    Raises:
        SeqlabError: anything else; ``parameter`` is ``"jobs"`` or ``"ray"``.
    """
    if isinstance(backend, Local):
        jobs, most = backend.jobs, max_jobs()
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= most:
            raise SeqlabError(N_("jobs must be an integer in [1, {most}] ({jobs_per_cpu} per CPU), received {jobs!r}"),
                              most=most, jobs_per_cpu=JOBS_PER_CPU, jobs=jobs, parameter="jobs")
        return backend
    if isinstance(backend, Ray):
        if not isinstance(backend.address, str) or not backend.address.strip():
            raise SeqlabError(N_("the Ray address must be 'auto' or a cluster's address, received {address!r}"),
                              address=backend.address, parameter="ray")
        return backend
    raise SeqlabError(N_("backend must be Local(jobs) or Ray(address), received {backend!r}"), backend=backend,
                      parameter="jobs")


def run_key(item: object) -> str:
    """The name of a planned run: its dataclass fields as canonical JSON (keys sorted).

    >>> @dataclass(frozen=True)
    ... class Planned:
    ...     task: str
    ...     T: int
    ...     lr: float
    >>> run_key(Planned("recall", 8, 0.01))
    '{"T":8,"lr":0.01,"task":"recall"}'
    """
    return _canonical(dataclasses.asdict(item))


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(about: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``about`` as canonical JSON: what a results file's header is checked by.

    >>> len(fingerprint({"seeds": 2})), fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    (64, True)
    """
    return hashlib.sha256(_canonical(about).encode("utf-8")).hexdigest()


def _difference(there: object, here: object, path: str = "") -> tuple[str, object, object] | None:
    """The first field (dotted path) where two JSON values differ, with both values; None when equal."""
    if isinstance(there, dict) and isinstance(here, dict):
        for key in sorted(set(there) | set(here)):
            found = _difference(there.get(key), here.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    return None if there == here else (path or "about", there, here)


class ResultsFile:
    """A sweep's results, one JSON line per finished run, appended and fsynced as each run ends.

    Open it with :meth:`open` (creates the file or resumes it); :attr:`done` maps :func:`run_key` of
    every run already there to its result's fields; :meth:`append` adds one; :meth:`close` (or a
    ``with`` block) closes it.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> with ResultsFile.open(path, {"seeds": 2}) as results:
    ...     results.append(Local(1), Local(7))  # any dataclasses
    >>> ResultsFile.open(path, {"seeds": 2}).done
    {'{"jobs":1}': {'jobs': 7}}
    >>> ResultsFile.open(path, {"seeds": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: the results file ... holds another sweep's runs (seeds: 2 there, 3 here); give another file or remove it
    """

    def __init__(self, path: Path, about: dict[str, Any], done: dict[str, dict[str, Any]], dropped: int) -> None:
        self.path = path
        self.about = about
        #: run_key -> the result's fields, for every run already in the file.
        self.done = done
        #: Lines dropped when opening: 1 when the last line was cut short, else 0.
        self.dropped = dropped
        self._file: Any = None  # opened for appending at the first append

    @classmethod
    def open(cls, path: str | Path, about: Mapping[str, Any]) -> ResultsFile:
        """Create ``path`` with a header for ``about``, or read it back and resume it.

        Args:
            path: the JSON Lines file; its folder must exist.
            about: what produces the results (JSON-able; tuples become lists): a file written for
                another ``about`` is refused.

        Returns:
            The open file, its :attr:`done` runs read.

        Raises:
            SeqlabError: ``parameter="results"``: the folder is missing, the file is not a results file, it
                holds another sweep (the message names the first field that differs), a line other than the
                last is damaged, or the file cannot be read or written.
        """
        path = Path(path)
        about = json.loads(_canonical(about))  # tuples -> lists, as they read back
        if not path.parent.is_dir():
            raise SeqlabError(N_("the folder of the results file {path!r} does not exist"), path=str(path),
                              parameter="results")
        try:
            data = path.read_bytes() if path.exists() else b""
        except OSError as error:
            raise SeqlabError(N_("cannot read the results file {path!r}: {strerror}"), path=str(path),
                              strerror=error.strerror, parameter="results") from None
        lines = data.split(b"\n")
        complete, cut = lines[:-1], lines[-1]  # the text after the last newline: empty, or a line cut short
        if not complete:  # new, empty, or killed while its header was written
            return cls._create(path, about)
        cls._check_header(path, complete[0], about)
        done: dict[str, dict[str, Any]] = {}
        good = len(complete[0]) + 1
        dropped = 1 if cut else 0
        for number, line in enumerate(complete[1:], start=2):
            record = _record(line)
            if record is None:
                if number == len(complete) and not cut:  # a damaged last line: drop it, redo its run
                    dropped = 1
                    break
                raise SeqlabError(N_("line {number} of the results file {path!r} is not a run record; the file is "
                                     "damaged (give another file or remove it)"), number=number, path=str(path),
                                  parameter="results")
            done[_canonical(record["run"])] = record["result"]
            good += len(line) + 1
        if dropped:
            try:
                with open(path, "r+b") as file:
                    file.truncate(good)
                    file.flush()
                    os.fsync(file.fileno())
            except OSError as error:
                raise SeqlabError(N_("cannot write the results file {path!r}: {strerror}"), path=str(path),
                                  strerror=error.strerror, parameter="results") from None
        return cls(path, about, done, dropped)

    @classmethod
    def _create(cls, path: Path, about: dict[str, Any]) -> ResultsFile:
        header = {"seqlab_sweep": FORMAT, "fingerprint": fingerprint(about), "about": about}
        try:
            with open(path, "w", encoding="utf-8") as file:
                file.write(_canonical(header) + "\n")
                file.flush()
                os.fsync(file.fileno())
        except OSError as error:
            raise SeqlabError(N_("cannot write the results file {path!r}: {strerror}"), path=str(path),
                              strerror=error.strerror, parameter="results") from None
        return cls(path, about, {}, 0)

    @staticmethod
    def _check_header(path: Path, line: bytes, about: dict[str, Any]) -> None:
        try:
            header = json.loads(line)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("seqlab_sweep") != FORMAT or "about" not in header:
            raise SeqlabError(N_("{path!r} is not a seqlab results file (its first line is not a seqlab_sweep "
                                 "{format} header); give another file or remove it"), path=str(path), format=FORMAT,
                              parameter="results")
        if header.get("fingerprint") != fingerprint(about):
            field, there, here = _difference(header["about"], about) or ("fingerprint", header.get("fingerprint"),
                                                                         fingerprint(about))
            raise SeqlabError(N_("the results file {path!r} holds another sweep's runs ({field}: {short} there, "
                                 "{short2} here); give another file or remove it"), path=str(path), field=field,
                              short=_short(there), short2=_short(here), parameter="results")

    def append(self, item: object, result: object) -> None:
        """Write one finished run (two dataclasses) as a line, flush it and fsync it.

        Raises:
            SeqlabError: the file cannot be written (``parameter="results"``).
        """
        if self._file is None:
            try:
                self._file = open(self.path, "a", encoding="utf-8")
            except OSError as error:
                raise SeqlabError(N_("cannot write the results file {path!r}: {strerror}"), path=str(self.path),
                                  strerror=error.strerror, parameter="results") from None
        self._file.write(_canonical({"run": dataclasses.asdict(item), "result": dataclasses.asdict(result)}) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.done[run_key(item)] = json.loads(_canonical(dataclasses.asdict(result)))

    def close(self) -> None:
        """Close the file (every line is already on disk)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _short(value: object) -> str:
    return _canonical(value) if not isinstance(value, str) else value


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("run"), dict) \
            or not isinstance(record.get("result"), dict):
        return None
    return record


class _Deferral:
    """Whether a run is being recorded (its line written and the run counted: one step that an interrupt must not
    split), and whether an interrupt came meanwhile. Read and written by the main thread only: Python runs signal
    handlers there, and the sweep records there."""

    depth = 0
    pending = False


_DEFERRAL = _Deferral()


class _Recording:
    """Hold a Ctrl-C or SIGTERM (:func:`interrupt_now_or_later`) until the run being recorded is both written and
    counted, then stop as it asked: the runs the file keeps are the runs the command says it kept."""

    def __enter__(self) -> None:
        _DEFERRAL.depth += 1

    def __exit__(self, *exc: object) -> None:
        _DEFERRAL.depth -= 1
        if _DEFERRAL.depth == 0 and _DEFERRAL.pending and exc[0] is None:
            _DEFERRAL.pending = False
            raise KeyboardInterrupt


def interrupt_now_or_later(signum: int | None = None, frame: object = None) -> None:
    """A signal handler for the command line while a sweep runs: raise KeyboardInterrupt now, or, while a run is
    being recorded, as soon as it is (see :class:`_Recording`).

    Raises:
        KeyboardInterrupt: now, unless a run is being recorded.
    """
    if _DEFERRAL.depth:
        _DEFERRAL.pending = True
        return
    raise KeyboardInterrupt


@dataclass(frozen=True)
class Sweep(Generic[R]):
    """What :func:`run_sweep` returns.

    Attributes:
        results: the result of every finished run, given or new, in plan order (a run not finished is absent).
        keys: :func:`run_key` of each of ``results``, in the same order.
        partial: True when interrupted (Ctrl-C) before every planned run finished.
        resumed: how many of ``results`` were given in ``done`` (not run now).
    """

    results: tuple[R, ...]
    keys: tuple[str, ...]
    partial: bool
    resumed: int


def run_sweep(items: Sequence[P], execute: Callable[[P], R], backend: Backend = Local(), *,
              done: Mapping[str, R] | None = None, record: Callable[[P, R], None] | None = None,
              progress: Callable[[int, int, P | None], None] | None = None, threads: int = 1) -> Sweep[R]:
    """Execute every planned run not in ``done``, on ``backend``; on Ctrl-C keep what finished.

    >>> @dataclass(frozen=True)
    ... class Square:
    ...     n: int
    >>> sweep = run_sweep([Square(1), Square(2), Square(3)], lambda item: Square(item.n ** 2),
    ...                   done={run_key(Square(2)): Square(4)})
    >>> [r.n for r in sweep.results], sweep.partial, sweep.resumed
    ([1, 4, 9], False, 1)

    Args:
        items: the planned runs, frozen dataclasses, in plan order.
        execute: runs one item and returns its result (a dataclass); with more than one job or with Ray it
            must be picklable (a top-level function, or a ``functools.partial`` of one).
        backend: :class:`Local` or :class:`Ray`.
        done: results already known, by :func:`run_key`; their runs are skipped.
        record: called in this process as each run finishes, ``record(item, result)`` (e.g.
            :meth:`ResultsFile.append`), before the next result is taken.
        progress: ``progress(done, total, item)``: in this process, before each run with the run about to start;
            on workers, at the start and after each run with ``item`` None; once at the end with
            ``(total, total, None)``. A KeyboardInterrupt raised in it stops the sweep like Ctrl-C.
        threads: torch's intra-op threads in each worker process, set before its first run.

    Returns:
        A :class:`Sweep`.

    Raises:
        SeqlabError: a bad backend; Ray not installed or its cluster not reachable (``parameter="ray"``).
        Whatever ``execute`` raises in a run, once the finished runs are recorded and the workers stopped.
    """
    backend = check_backend(backend)
    known = dict(done or {})
    keys = [run_key(item) for item in items]
    todo = [item for item, key in zip(items, keys) if key not in known]
    total = len(items)
    finished: dict[str, R] = {key: known[key] for key in keys if key in known}
    resumed = len(finished)

    def finish(item: P, result: R) -> None:
        with _Recording():  # written and counted together, whatever interrupt comes between
            if record is not None:
                record(item, result)
            finished[run_key(item)] = result

    try:
        if isinstance(backend, Local) and backend.jobs == 1:
            for item in todo:
                if progress is not None:
                    progress(len(finished), total, item)
                finish(item, execute(item))
        elif todo:
            if progress is not None:
                progress(len(finished), total, None)
            runs = _pool(todo, execute, backend.jobs, threads) if isinstance(backend, Local) else \
                _ray(todo, execute, backend.address)
            with runs as results:
                for item, result in results:
                    finish(item, result)
                    if progress is not None:
                        progress(len(finished), total, None)
        if progress is not None:
            progress(total, total, None)
    except KeyboardInterrupt:
        pass
    ordered = [key for key in keys if key in finished]
    return Sweep(results=tuple(finished[key] for key in ordered), keys=tuple(ordered),
                 partial=len(ordered) < total, resumed=resumed)


# --- Local worker processes ---------------------------------------------------------------------------

def _worker_start(threads: int) -> None:
    """Each worker: leave Ctrl-C to the parent (it was born with SIGINT blocked, :func:`_pool`), and fix torch's
    threads before the first run."""
    ignore_interrupts()
    import torch

    torch.set_num_threads(threads)


class _Runs(Generic[P, R]):
    """An iterator of (item, result) as runs finish, that stops its workers when closed."""

    def __init__(self, results: Iterator[tuple[P, R]], stop: Callable[[], None]) -> None:
        self._results, self._stop = results, stop

    def __enter__(self) -> Iterator[tuple[P, R]]:
        return self._results

    def __exit__(self, *exc: object) -> None:
        self._stop()


def _pool(todo: list[P], execute: Callable[[P], R], jobs: int, threads: int) -> _Runs[P, R]:
    executor = concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, max(len(todo), 1)),
                                                      mp_context=multiprocessing.get_context("spawn"),
                                                      initializer=_worker_start, initargs=(threads,))
    with started_quietly():  # workers start with SIGINT blocked: a Ctrl+C while they start up reaches none
        futures = {executor.submit(execute, item): item for item in todo}
    finished = False

    def results() -> Iterator[tuple[P, R]]:
        nonlocal finished
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                raise SeqlabError(N_("a worker process stopped in the middle of a run (killed, or out of memory); "
                                     "the runs finished before it are kept"), parameter="jobs") from None
            yield futures[future], result
        finished = True

    def stop() -> None:
        if finished:
            executor.shutdown(wait=True)
            return
        # Interrupted, or a run failed: drop the runs not started and stop the running ones now (SIGTERM: they
        # ignore only SIGINT, and leave no traceback), rather than wait for them to finish their run.
        processes = list((getattr(executor, "_processes", None) or {}).values())  # shutdown forgets them
        terminate = getattr(executor, "terminate_workers", None)  # Python >= 3.14
        if terminate is not None:
            terminate()
        else:
            for process in processes:
                process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
        for process in processes:
            process.join()

    return _Runs(results(), stop)


# --- Ray ----------------------------------------------------------------------------------------------

def _call(execute: Callable[[P], R], item: P) -> R:
    """A Ray task: one run, in a worker that leaves the terminal's Ctrl+C to the driver (which cancels it)."""
    ignore_interrupts()
    return execute(item)


def _ray_reason(error: Exception) -> str:
    """The first sentence of Ray's refusal, without the advice it gives for its own command line (``--address``,
    ``RAY_ADDRESS``), which seqlab's options replace.

    >>> _ray_reason(ConnectionError("Could not find any running Ray instance. Please specify the one to connect to "
    ...                             "by setting `--address` flag or `RAY_ADDRESS` environment variable."))
    'Could not find any running Ray instance'
    """
    first = (str(error).splitlines() or [type(error).__name__])[0]
    return first.split(". ")[0].rstrip(".") or type(error).__name__


def _ray(todo: list[P], execute: Callable[[P], R], address: str) -> _Runs[P, R]:
    try:
        import ray
    except ImportError:
        raise SeqlabError(N_("the Ray backend needs the cluster extra (pip install \"seqlab[cluster]\")"),
                          parameter="ray") from None
    started = not ray.is_initialized()
    if started:
        try:
            with started_quietly():  # a local cluster's processes are this driver's children: deaf to its Ctrl+C
                ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise SeqlabError(N_("cannot reach a Ray cluster at {address!r}: {ray_reason}; start one (ray start "
                                 "--head) and give its address with --ray ADDRESS, or run on this machine with --ray "
                                 "local"), address=address, ray_reason=_ray_reason(error), parameter="ray") from None
    task = ray.remote(num_cpus=1, max_retries=0)(_call)
    function = ray.put(execute)
    pending = {task.remote(function, item): item for item in todo}

    def results() -> Iterator[tuple[P, R]]:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            item = pending.pop(ready[0])
            yield item, ray.get(ready[0])

    def stop() -> None:
        for ref in list(pending):
            ray.cancel(ref, force=True)
        pending.clear()
        if started:
            ray.shutdown()

    return _Runs(results(), stop)
