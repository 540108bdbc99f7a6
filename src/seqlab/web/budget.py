"""The compute one web request may ask for: refused before anything is allocated (HTTP 422), or when busy (503).

Each panel estimates the bytes its largest tensors would take (with :class:`seqlab.memory.MemoryEstimate`)
and calls :func:`require_within_budget` first, in the server, before any worker is asked. Two limits apply:
a fixed share per request (:data:`REQUEST_BUDGET_BYTES`, so one visitor cannot starve the others) and the
machine's available memory (the share :func:`seqlab.memory.require_fits` allows). The refusal is a
:class:`~seqlab.web.messages.LabError` whose sentence says how much the request would need, in the
request's language.

Time is bounded the same way, before anything runs: each measuring panel says what its run will do as a
:class:`Work` — a kind (the panel, and the regime where one changes the cost, e.g. timed or not) and a number of
units proportional to its run time at fixed machine (from the sizes asked for: multiplications, positions,
sources …). :class:`RunTimes` keeps the seconds per unit of the last runs of each kind on this server, this
machine under its load of the moment, a run stopped at its time limit included (as lasting at least the limit);
:func:`require_within_time` scales the nearest run in units (of the last :data:`RUN_MEMORY_S` seconds) to the new
one and refuses (HTTP 422) when that
estimate passes the limit, with the estimate, the limit and ``keep_previous_result`` in the body (the panel keeps
the result it shows). Before the first run of a kind there is no estimate: the time limit alone bounds it, and
an overrun is remembered.

The measurements themselves run in worker processes (:mod:`seqlab.web.workers`); a request that finds
every worker taken and the short queue full is refused at once with :class:`LabBusy` (HTTP 503,
``Retry-After``). Pages, static files, closed forms and cached results never wait for a worker.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass

from seqlab.memory import MemoryEstimate, available_memory_bytes
from seqlab.web.messages import N_, LabError, Phrase

DOMAIN = "web"

MIB = 1024**2
GIB = 1024**3
#: Bytes one request may use for its tensors: 256 MiB.
REQUEST_BUDGET_BYTES = 256 * MIB
#: Seconds a refused request is told to wait before trying again (the ``Retry-After`` header).
RETRY_AFTER_S = 5
#: Share of the machine's available memory the lab allows itself (as :func:`seqlab.memory.require_fits`).
MEMORY_SHARE = 0.8


class LabBusy(Exception):
    """Every worker is measuring and the queue is full, or the wait ran out: answer 503 at once."""

    def __init__(self, retry_after_s: int = RETRY_AFTER_S) -> None:
        super().__init__("the lab is busy measuring another request; try again in a few seconds")
        self.retry_after_s = retry_after_s

    def __reduce__(self):
        return (LabBusy, (self.retry_after_s,))


def require_within_budget(estimate: MemoryEstimate, what: Phrase, parameter: str | None = None,
                          budget_bytes: int = REQUEST_BUDGET_BYTES, hint: Phrase | None = None,
                          available: int | None = None) -> None:
    """Raise :class:`~seqlab.web.messages.LabError` when ``estimate`` exceeds one request's budget or the
    memory this machine has available.

    >>> try:
    ...     require_within_budget(MemoryEstimate(300 * MIB, Phrase("path distances of {count} sources",
    ...                                                               {"count": 99})),
    ...                           Phrase("T = {T} at d_model = {d}", {"T": 99, "d": 64}), "T")
    ... except LabError as error:
    ...     print(error.phrase.render("es").replace("; ", ";\\n"))
    T = 99 con d_model = 64 necesitaría unos 300 MiB (sobre todo las distancias de caminos de 99 orígenes);
    una petición puede usar como mucho 256 MiB

    Args:
        estimate: bytes the request's tensors would take; ``largest`` a :class:`Phrase` to name it in the
            message (a library's English name is left out of it).
        what: the sizes asked for, for the message.
        parameter: the request field to blame (``error.parameter``).
        budget_bytes: the per-request limit.
        hint: added after "; ": what would fit.
        available: bytes available (default: :func:`seqlab.memory.available_memory_bytes`).

    Raises:
        LabError: over the budget, or over what this machine has available.
    """
    named = isinstance(estimate.largest, Phrase)
    if estimate.total_bytes > budget_bytes:
        values = {"what": what, "size": round(estimate.total_bytes / MIB),
                  "budget": budget_bytes // MIB}
        if named:
            values["largest"] = estimate.largest
        if hint is not None:
            values["hint"] = hint
        msgid = {(True, False): N_("{what} would need about {size} MiB (mostly {largest}); one request may use at most "
                                "{budget} MiB"),
                 (True, True): N_("{what} would need about {size} MiB (mostly {largest}); one request may use at most "
                               "{budget} MiB; {hint}"),
                 (False, False): "{what} would need about {size} MiB; one request may use at most {budget} MiB",
                 (False, True): N_("{what} would need about {size} MiB; one request may use at most {budget} MiB; "
                                "{hint}")}[(named, hint is not None)]
        raise LabError(Phrase(msgid, values), parameter=parameter)
    available = available_memory_bytes() if available is None else available
    if estimate.total_bytes > MEMORY_SHARE * available:
        raise LabError(Phrase(N_("{what} would need about {size} GiB; this machine has {available} GiB available, of "
                              "which the lab uses at most {share}"),
                              {"what": what, "size": estimate.total_bytes / GIB, "available": available / GIB,
                               "share": f"{MEMORY_SHARE:.0%}"}),
                       parameter=parameter)


@dataclass(frozen=True)
class Work:
    """What one measurement will do, for its time estimate.

    Attributes:
        kind: the panel, and its regime where one changes the cost per unit (``"decode:timed"``).
        units: a positive number proportional to the run's seconds at fixed machine, from the sizes asked for.
        what: the sizes asked for, for the refusal's sentence.
        parameter: the request field to blame.
    """

    kind: str
    units: float
    what: Phrase
    parameter: str | None = None


@dataclass(frozen=True)
class RunTime:
    """One recorded run: its units, its seconds, and whether it finished (else it was stopped at its limit)."""

    units: float
    seconds: float
    complete: bool
    at: float = 0.0


#: Seconds a recorded run counts for estimates (the machine's load changes; an old overrun must not refuse forever).
RUN_MEMORY_S = 600.0
#: How far a finished run is scaled up: a run's seconds hold a fixed part (a worker's first imports, the set-up)
#: that a linear scale multiplies too, so a run 57 times smaller refused a chain that runs in seconds. Past this
#: factor a finished run says nothing; a stopped run (an overrun) of fewer units still proves a larger one too long.
MAX_SCALE_UP = 4.0


class RunTimes:
    """The last runs of each kind of measurement on this server (thread-safe), for :meth:`estimate`.

    >>> times = RunTimes()
    >>> times.record(Work("bench", 100, Phrase("x")), 12.0)
    >>> times.estimate("bench", 400)  # 4 times the units of the nearest run: 4 times its seconds
    RunEstimate(seconds=48.0, units=100.0, run_seconds=12.0, complete=True)
    >>> times.estimate("chain", 1) is None  # no run of that kind yet
    True
    >>> times.estimate("bench", 5000) is None  # 50 times a finished run: its fixed part would be scaled too
    True
    """

    def __init__(self, keep: int = 8, max_age_s: float = RUN_MEMORY_S) -> None:
        self.keep, self.max_age_s = keep, max_age_s
        self._runs: dict[str, deque[RunTime]] = {}
        self._lock = threading.Lock()

    def record(self, work: Work, seconds: float, complete: bool = True) -> None:
        """Remember that ``work`` took ``seconds`` (at least that, when not ``complete``)."""
        if work.units <= 0 or not math.isfinite(seconds) or seconds < 0:
            return
        with self._lock:
            self._runs.setdefault(work.kind, deque(maxlen=self.keep)).append(
                RunTime(float(work.units), float(seconds), complete, time.monotonic()))

    def estimate(self, kind: str, units: float) -> RunEstimate | None:
        """Seconds a run of ``units`` would take, scaled from the recorded run of ``kind`` nearest in units (the
        latest among equals), from finished runs at most :data:`MAX_SCALE_UP` times smaller or stopped runs of fewer
        units; None when no such run of that kind lies in the last :attr:`max_age_s` seconds."""
        now = time.monotonic()
        with self._lock:
            runs = [run for run in self._runs.get(kind, ()) if now - run.at <= self.max_age_s]
        if units <= 0:
            return None
        runs = [run for run in runs if run.units * MAX_SCALE_UP >= units or (not run.complete and run.units <= units)]
        if not runs:
            return None
        nearest = min(reversed(runs), key=lambda run: abs(math.log(units / run.units)))
        return RunEstimate(nearest.seconds * units / nearest.units, nearest.units, nearest.seconds, nearest.complete)

    def clear(self) -> None:
        """Forget every run."""
        with self._lock:
            self._runs.clear()


@dataclass(frozen=True)
class RunEstimate:
    """A run's estimated seconds, and the recorded run it was scaled from."""

    seconds: float
    units: float
    run_seconds: float
    complete: bool


def require_within_time(work: Work, limit_s: float, times: RunTimes) -> None:
    """Refuse ``work`` before it starts when the last runs of its kind say it would pass ``limit_s``.

    >>> times = RunTimes()
    >>> times.record(Work("bench", 100, Phrase("x")), 30.0)
    >>> try:
    ...     require_within_time(Work("bench", 300, Phrase("T = {T} at d_model = {d}", {"T": 2048, "d": 512})),
    ...                         60, times)
    ... except LabError as error:
    ...     print(error.phrase.render("en").replace("; ", ";\\n")); print(error.details["estimate"])
    T = 2,048 at d_model = 512 would take about 90 s on this machine now, judged from the last run of this panel here (30 s for 1/3 of the work);
    one measurement may take at most 60 s, so it was not started;
    ask for smaller sizes
    {'seconds': 90.0, 'limit_s': 60, 'from_run_s': 30.0}

    Raises:
        LabError: the estimate passes the limit (HTTP 422); ``details`` carries ``estimate`` (seconds, limit, the
            run it was scaled from) and ``keep_previous_result: true``.
    """
    found = times.estimate(work.kind, work.units)
    if found is None or found.seconds < limit_s or (found.complete and found.seconds == limit_s):
        return  # an overrun's estimate is a lower bound: reaching the limit is passing it
    from fractions import Fraction

    share = Fraction(found.units / work.units).limit_denominator(1000)
    share_text = f"{share.numerator}/{share.denominator}" if share.denominator > 1 else f"{share.numerator}"
    values = {"what": work.what, "estimate": _seconds(found.seconds), "limit": _seconds(limit_s),
              "took": _seconds(found.run_seconds), "share": share_text}
    if found.complete:
        msgid = N_("{what} would take about {estimate} s on this machine now, judged from the last run of this panel "
                   "here ({took} s for {share} of the work); one measurement may take at most {limit} s, so it was "
                   "not started; ask for smaller sizes")
    else:
        msgid = N_("{what} would take more than {estimate} s on this machine now, judged from the last run of this "
                   "panel here (stopped at its limit of {took} s with {share} of the work); one measurement may "
                   "take at most {limit} s, so it was not started; ask for smaller sizes")
    raise LabError(Phrase(msgid, values), parameter=work.parameter,
                   details={"estimate": {"seconds": round(found.seconds, 1), "limit_s": limit_s,
                                         "from_run_s": round(found.run_seconds, 1)},
                            "keep_previous_result": True})


def _seconds(value: float) -> int | float:
    """Seconds as a message shows them: whole from 10 s, one decimal below."""
    return int(round(value)) if value >= 10 else round(value, 1)
