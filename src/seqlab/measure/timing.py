"""Timing: wall-clock time of one forward call, with its spread, thread count and first call.

The lesson's argument for attention is about time, not work (L8): attention does more
multiplications on long texts but spreads them over processors in a few large products, while
the recurrence waits T times in a row. Measuring that needs a clock used with care: the first
call (allocation, kernel selection, lazy initialisation) is timed apart; the function is warmed
up; the device is synchronised; the thread count is fixed and reported; and a median with its
interquartile range of at least :data:`MIN_BLOCKS` timed blocks is given, never a single time.

A clock reads long on a busy machine, so every :class:`Timing` also carries the machine's load when it began
(:class:`MachineLoad`: ``os.getloadavg()[0]`` against ``os.cpu_count()``). This is the one place that decides
whether a time needs the busy-machine caveat; every front end (``seqlab bench``, the report, the web lab's
Time panel, and ``compare`` / ``check``) words that decision, none re-derives it.

Built on :class:`torch.utils.benchmark.Timer`, whose clock synchronises the accelerator.
All calls run under ``torch.no_grad()``: this times the forward pass only.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_

#: A result whose IQR exceeds this fraction of the median is flagged noisy (:func:`is_noisy`): torch's
#: ``_IQR_WARN_THRESHOLD`` ("this could indicate system fluctuation", torch/utils/benchmark/utils/common.py).
NOISY_IQR_FRACTION = 0.10
#: Untimed calls after the first call, before the timed blocks.
WARMUP_CALLS = 1
#: Fewest timed blocks of every measurement: an interquartile range needs at least three.
MIN_BLOCKS = 3
#: The machine is busy when its 1-minute load average is at least this many runnable tasks per logical CPU:
#: other work then holds half the cores (on average) that the timed threads would use.
BUSY_LOAD_PER_CPU = 0.5
_DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class MachineLoad:
    """How loaded the machine was when a measurement began: ``os.getloadavg()[0]`` against ``os.cpu_count()``.

    Attributes:
        load_1min: runnable tasks averaged over the last minute (the OS's load average), or None where the
            OS keeps none (Windows): then nothing is claimed either way.
        cpus: logical CPUs (``os.cpu_count()``).
        busy: ``load_1min >= threshold_per_cpu * cpus``: times may read long and spread wide.
        threshold_per_cpu: :data:`BUSY_LOAD_PER_CPU` when this was measured.
    """

    load_1min: float | None
    cpus: int
    busy: bool
    threshold_per_cpu: float = BUSY_LOAD_PER_CPU

    @property
    def per_cpu(self) -> float | None:
        """``load_1min / cpus`` (None without a load average)."""
        return None if self.load_1min is None else self.load_1min / self.cpus


def machine_load() -> MachineLoad:
    """The machine's load now, as data: the condition behind every busy-machine caveat (one place only).

    The 1-minute load average includes this process's own recent work; a sweep therefore reads it once,
    before it starts, and passes it to every :func:`measure_time` of the sweep.

    >>> load = machine_load()
    >>> load.cpus >= 1 and load.busy == (load.load_1min is not None and load.load_1min >= 0.5 * load.cpus)
    True
    """
    cpus = os.cpu_count() or 1
    try:
        load = float(os.getloadavg()[0])
    except (AttributeError, OSError):  # no load average on this OS
        return MachineLoad(None, cpus, False)
    return MachineLoad(load, cpus, load >= BUSY_LOAD_PER_CPU * cpus)


def busiest(loads: Iterable[MachineLoad | Timing | None]) -> MachineLoad | None:
    """The most loaded of ``loads`` (a Timing stands for its ``load``): busy first, then the highest per-CPU
    load; None when none is known. What a table or sentence of several times is captioned with.

    >>> quiet, busy = MachineLoad(0.1, 2, False), MachineLoad(3.0, 2, True)
    >>> busiest([quiet, None, busy]) is busy, busiest([]) is None
    (True, True)
    """
    known = [item.load if isinstance(item, Timing) else item for item in loads]
    known = [load for load in known if load is not None]
    if not known:
        return None
    return max(known, key=lambda load: (load.busy, load.per_cpu if load.per_cpu is not None else -1.0))


def timings_in(value: object) -> Iterator[Timing]:
    """Every :class:`Timing` inside a result (through dataclass fields, tuples, lists and dict values), so a
    front end can caption all the times of a result with :func:`busiest` whatever the result's shape.

    >>> t = Timing("x", (1.0,), 1.0, 0.0, 1.0, 1, 1, "cpu", False, 0.1)
    >>> [found.label for found in timings_in({"a": (t, 3), "b": [t]})]
    ['x', 'x']
    """
    import dataclasses

    if isinstance(value, Timing):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from timings_in(getattr(value, item.name))
    elif isinstance(value, (tuple, list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            if not isinstance(item, (int, float, str)):  # long rows of numbers hold no timing
                yield from timings_in(item)


@dataclass(frozen=True)
class Timing:
    """Time per call of a function: raw samples, median, spread and the conditions.

    Attributes:
        label: what was timed, as given.
        samples: seconds per call, one per timed block (block time / calls in the block).
        median_s: median of ``samples`` (seconds).
        iqr_s: interquartile range of ``samples`` (seconds).
        first_call_s: the very first call, timed alone (seconds).
        runs: total timed calls (blocks x calls per block); warm-up and the first call excluded.
        threads: intra-op CPU threads torch used while timing.
        device: ``"cpu"`` or ``"cuda"`` (synchronised around every clock reading).
        noisy: :func:`is_noisy` of this timing: fewer than :data:`MIN_BLOCKS` samples (no spread to speak
            of), or ``iqr_s > NOISY_IQR_FRACTION * median_s`` (a tenth).
        min_run_time: seconds of timed blocks asked for.
        load: the machine's load when the timing began (:func:`machine_load`); None for a Timing built
            by hand. ``load.busy`` calls for the busy-machine caveat beside the time.
        cpu_samples: this process's CPU seconds per call in the same blocks (``time.process_time``), beside the wall
            clock's ``samples``: a burst of other work adds wall time, not CPU time (None where not read: an accelerator,
            or a timing built from elsewhere).
    """

    label: str
    samples: tuple[float, ...]
    median_s: float
    iqr_s: float
    first_call_s: float
    runs: int
    threads: int
    device: str
    noisy: bool
    min_run_time: float
    load: MachineLoad | None = None
    cpu_samples: tuple[float, ...] | None = None


def is_noisy(median_s: float, iqr_s: float, blocks: int) -> bool:
    """The one timing-quality rule: is a median with this spread too noisy to decide anything?

    noisy  ⇔  blocks < MIN_BLOCKS  or  iqr_s > NOISY_IQR_FRACTION · median_s   (MIN_BLOCKS = 3, fraction 0.10)

    Every front end and study judges a time by this rule (``Timing.noisy`` holds its answer): ``seqlab bench``,
    ``compare``, ``decode``, the check of L8 and the web lab's Time panel. A noisy time still shows; a comparison
    resting on it decides nothing (a caveat, never a failed claim).

    >>> is_noisy(1.0, 0.099, 5), is_noisy(1.0, 0.101, 5), is_noisy(1.0, 0.0, 2)
    (False, True, True)

    Args:
        median_s: median seconds per call (>= 0).
        iqr_s: interquartile range of the same samples, seconds (>= 0).
        blocks: timed blocks behind the median (an IQR needs at least :data:`MIN_BLOCKS`).

    Returns:
        True when the time is noisy.

    Source: torch.utils.benchmark's ``Measurement``, which warns from an IQR of a tenth of the median
    (``_IQR_WARN_THRESHOLD = 0.1``, "this could indicate system fluctuation"; its 0.25 is the gross one); the
    fewest blocks for an IQR, :data:`MIN_BLOCKS`; the lesson's timing claim L8.
    """
    return blocks < MIN_BLOCKS or iqr_s > NOISY_IQR_FRACTION * median_s


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure_time(
    fn: Callable[[], object],
    *,
    label: str,
    threads: int | None = None,
    min_run_time: float = 0.2,
    device: str = "cpu",
    load: MachineLoad | None = None,
) -> Timing:
    """Time ``fn()`` (forward only, under ``no_grad``): first call apart, then median and IQR.

    Steps: fix the threads; time the first call with ``perf_counter`` (synchronised on cuda);
    run one warm-up call; then ``Timer(...).blocked_autorange(min_run_time)`` times blocks of
    calls until at least ``min_run_time`` seconds have been timed, and more blocks of the same size
    follow until there are :data:`MIN_BLOCKS` (a call longer than ``min_run_time`` would otherwise
    give one block and no spread).

    >>> t = measure_time(lambda: torch.ones(8) @ torch.ones(8), label="dot", threads=1,
    ...                  min_run_time=0.001)
    >>> t.label, t.threads, t.device, t.median_s > 0
    ('dot', 1, 'cpu', True)

    Args:
        fn: a callable with no arguments, e.g. ``lambda: layer(x)``; its result is discarded.
        label: name of what is timed (reported back).
        threads: intra-op CPU threads (int >= 1); None keeps ``torch.get_num_threads()``.
            Restored afterwards.
        min_run_time: seconds of timed blocks (finite, > 0).
        device: ``"cpu"`` or ``"cuda"``; says where ``fn`` runs, so the clock synchronises it.
        load: the machine's load to record; None reads :func:`machine_load` before the first call.

    Returns:
        A :class:`Timing` in seconds.

    Raises:
        SeqlabError: threads < 1, min_run_time not finite and > 0, label not a string, device
            not in {"cpu", "cuda"}, or cuda asked for without a CUDA device.

    Source: lesson claim L8 (more work, but spread over processors instead of T waits).
    """
    from torch.utils.benchmark import Timer

    if not callable(fn):
        raise SeqlabError(N_("fn must be callable with no arguments, received {fn_class}"), fn_class=type(fn).__name__)
    if not isinstance(label, str):
        raise SeqlabError(N_("label must be a string, received {label!r}"), label=label)
    if threads is not None:
        require_positive_int("threads", threads)
    if (
        isinstance(min_run_time, bool)
        or not isinstance(min_run_time, (int, float))
        or not math.isfinite(min_run_time)
        or min_run_time <= 0
    ):
        raise SeqlabError(N_("min_run_time must be a finite number > 0 seconds, received {min_run_time!r}"),
                          min_run_time=min_run_time)
    if device not in _DEVICES:
        raise SeqlabError(N_("device must be one of {devices}, received {device!r}"), devices=_DEVICES, device=device)
    if device == "cuda" and not torch.cuda.is_available():
        raise SeqlabError(N_("device 'cuda' requested but no CUDA device is present"))

    load = machine_load() if load is None else load
    n_threads = threads or torch.get_num_threads()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with torch.no_grad():
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            first_call_s = time.perf_counter() - start
            for _ in range(WARMUP_CALLS):
                fn()
            _sync(device)
            timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=n_threads, label=label)
            m = timer.blocked_autorange(min_run_time=float(min_run_time))
            if len(m.raw_times) < MIN_BLOCKS:
                m = _more_blocks(fn, m, device)
    finally:
        torch.set_num_threads(previous_threads)

    samples = tuple(float(s) for s in m.times)  # seconds per call, one per block
    median_s, iqr_s = float(m.median), float(m.iqr)
    return Timing(
        label=label,
        samples=samples,
        median_s=median_s,
        iqr_s=iqr_s,
        first_call_s=first_call_s,
        runs=int(m.number_per_run) * len(m.raw_times),
        threads=n_threads,
        device=device,
        noisy=is_noisy(median_s, iqr_s, len(samples)),
        min_run_time=float(min_run_time),
        load=load,
    )


def _more_blocks(fn: Callable[[], object], m, device: str):
    """``m`` with timed blocks of ``m.number_per_run`` calls added until there are :data:`MIN_BLOCKS`,
    each timed as ``Timer`` times its blocks (``perf_counter``, synchronised on cuda)."""
    from torch.utils.benchmark import Measurement

    raw = list(m.raw_times)
    while len(raw) < MIN_BLOCKS:
        _sync(device)
        start = time.perf_counter()
        for _ in range(m.number_per_run):
            fn()
        _sync(device)
        raw.append(time.perf_counter() - start)
    return Measurement(m.number_per_run, raw, m.task_spec, m.metadata)


@contextlib.contextmanager
def fixed_threads(count: int) -> Iterator[None]:
    """Run the block on ``count`` CPU threads, then restore the caller's setting.

    Tracing measurements (span, paths) pay per op; on a shared machine one thread avoids idle
    threads spinning on busy cores.

    >>> with fixed_threads(1):
    ...     torch.get_num_threads()
    1
    """
    before = torch.get_num_threads()
    torch.set_num_threads(require_positive_int("threads", count))
    try:
        yield
    finally:
        torch.set_num_threads(before)
