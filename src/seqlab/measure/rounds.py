"""Interleaved timing rounds, and the one rule that says who finishes first — or that it cannot say (L8).

Timing two machines one after the other compares two moments of the machine as much as two machines: on a
shared computer a burst of other work that lands on one of them makes it look slow. So the machines of a
comparison are timed in **rounds**: in every round each machine runs one block of calls, the order rotating
from round to round, and the time ratio of two machines is taken *round by round* (both blocks of a round met
the same machine). A comparison then decides only when the spread of those ratios clears the margin:

    ratio_k = time_a,k / time_b,k                 (round k, seconds per call)
    best    = min_k time_a,k / min_k time_b,k      (each machine's least disturbed round)
    b_first   ⇔  lower quartile of ratio_k > margin    and  best > margin
    a_first   ⇔  upper quartile of ratio_k < 1/margin  and  best < 1/margin
    tie       ⇔  both quartiles within [1/margin, margin]
    not_judged otherwise (the spread straddles the margin)

and not judged with fewer than :data:`MIN_ROUNDS` rounds.

Other work on the computer only ever *adds* time to a block, so each machine's quickest round is its least
disturbed one; asking both readings to agree keeps a burst that hit most of one machine's blocks from deciding.
Two more rules keep a burst from deciding (issue 38):

* **Blocks of comparable length.** Calls per block come from the *fastest* warm-up call, each timed alone (a burst
  only slows a call down), so a burst during one machine's warm-up no longer leaves it one call per block, a
  thousand times shorter than the others' and exposed to every hiccup.
* **Two clocks.** Beside the wall clock each block reads this process's CPU time; other processes taking the cores
  add wall time, not CPU time. On the CPU, between two machines timed on the same thread count, a winner by the
  wall clock must be the winner by the CPU clock too (the same rule on the CPU seconds); otherwise the comparison
  is ``not_judged`` with the reason ``clocks_disagree``. (Thread counts are compared by wall time alone: more
  threads spend more CPU time to finish sooner.)

False calls, two equally fast machines called different, measured by ``benchmarks/false_calls.py`` (20,000
simulated runs of 7 rounds through :func:`measure_rounds` and :func:`decide`, bursts that slow 1.5–5×): with 30 % of
blocks slowed, 833 by the quartiles alone, 280 by the wall clock's rule, 0 with the two clocks; with 30 % of single
calls slowed (warm-up included), 249, 188 and 0 (:data:`FALSE_CALLS`). Two runs can then give opposite verdicts only if the machine
itself changed between them. Everything a front end says about who is faster
(``compare``, ``check`` L8, ``bench``, ``decode``, the web lab's panels) goes through :func:`decide`.

:func:`timing_threads_default` is the thread count a timing uses when the user gives none: PyTorch's count, but
never more than the cores the machine's load leaves free (oversubscribing a busy machine makes every thread
wait to be scheduled).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.measure.timing import MachineLoad, Timing, is_noisy, machine_load
from seqlab.i18n import N_
from seqlab.measure.timing import WARMUP_CALLS, MachineLoad, Timing, is_noisy, machine_load

#: Rounds of a comparison by default: seven ratios give quartiles worth the name (see the module docstring).
DEFAULT_ROUNDS = 7
#: Fewest rounds that can decide anything: quartiles of three ratios are their extremes' neighbours.
MIN_ROUNDS = 3
#: Warm-up calls per machine, each timed alone: the fastest sets the calls per block (a burst only slows a call).
WARM_CALLS = 3
#: The decisions :func:`decide` can give.
OUTCOMES = ("a_first", "b_first", "tie", "not_judged")
#: Why a comparison was not judged when it was not for its spread: the wall clock named a winner the CPU clock did not.
CLOCKS_DISAGREE = "clocks_disagree"
#: Measured false calls per 20,000 runs (``benchmarks/false_calls.py``, 2026-12-06): burst kind -> (quartiles alone,
#: the wall clock's rule, the two clocks' rule). "blocks": 30 % of blocks slowed 1.5–5×; "calls": 30 % of single
#: calls slowed 1.5–5×, warm-up calls too.
FALSE_CALLS = {"blocks": (833, 280, 0), "calls": (249, 188, 0)}
#: The one time-win margin of every front end (``compare``, ``check`` L8, ``bench``, ``decode``, the web lab): a
#: machine finishes first only when its lead clears 1.2 — a fifth faster, well past the spread of a quiet machine.
MARGIN = 1.2


@dataclass(frozen=True)
class Rounds:
    """What :func:`measure_rounds` measured: every machine's time per call in every round.

    Attributes:
        per_round: name -> seconds per call in each round (one block of calls per round), in round order.
        calls: name -> calls per block (the same in every round).
        first_call_s: name -> the very first call, timed alone (seconds).
        threads: intra-op CPU threads while timing.
        device: ``"cpu"`` or ``"cuda"``.
        load: the machine's load read before the first clock.
        cpu_per_round: name -> this process's CPU seconds per call in the same blocks (None: not read).
        threads_of: name -> the threads it ran on, where a measurement holds several counts (:func:`on_threads`);
            None: every name ran on ``threads``.
    """

    per_round: dict[str, tuple[float, ...]]
    calls: dict[str, int]
    first_call_s: dict[str, float]
    threads: int
    device: str
    load: MachineLoad | None
    cpu_per_round: dict[str, tuple[float, ...]] | None = None
    threads_of: dict[str, int] | None = None

    @property
    def rounds(self) -> int:
        """Rounds timed (the same for every machine)."""
        return len(next(iter(self.per_round.values()), ()))

    def timing(self, name: str) -> Timing:
        """One machine's rounds as a :class:`~seqlab.measure.timing.Timing`: median and IQR over its rounds.

        Raises:
            SeqlabError: ``name`` was not timed.
        """
        if name not in self.per_round:
            raise SeqlabError(N_("no machine named {name!r} was timed; timed: {per_round}"), name=name,
                              per_round=', '.join(self.per_round))
        samples = self.per_round[name]
        median_s, iqr_s = _median(samples), _iqr(samples)
        return Timing(label=name, samples=samples, median_s=median_s, iqr_s=iqr_s,
                      first_call_s=self.first_call_s[name], runs=self.calls[name] * len(samples),
                      threads=self.threads, device=self.device, noisy=is_noisy(median_s, iqr_s, len(samples)),
                      min_run_time=sum(samples) * self.calls[name], load=self.load,
                      cpu_samples=None if self.cpu_per_round is None else self.cpu_per_round.get(name))

    def threads_for(self, name: str) -> int:
        """The intra-op threads ``name`` ran on."""
        return (self.threads_of or {}).get(name, self.threads)

    def ratios(self, a: str, b: str) -> tuple[float, ...]:
        """time_a / time_b in each round (> 1: ``b`` finished first in that round).

        Raises:
            SeqlabError: ``a`` or ``b`` was not timed.
        """
        for name in (a, b):
            if name not in self.per_round:
                raise SeqlabError(N_("no machine named {name!r} was timed; timed: {per_round}"), name=name,
                                  per_round=', '.join(self.per_round))
        return tuple(x / y for x, y in zip(self.per_round[a], self.per_round[b]))


@dataclass(frozen=True)
class Decision:
    """Who finishes first between ``a`` and ``b``, by :func:`decide`.

    Attributes:
        a, b: the machines' names.
        outcome: one of :data:`OUTCOMES`.
        ratio: median over rounds of time_a / time_b (> 1: ``b`` was faster).
        low, high: the lower and upper quartiles of the per-round ratios.
        margin: the factor a lead must clear (> 1).
        rounds: ratios behind the decision.
        reason: :data:`CLOCKS_DISAGREE` when the wall clock's winner was not the CPU clock's, else None.
    """

    a: str
    b: str
    outcome: str
    ratio: float
    low: float
    high: float
    margin: float
    rounds: int
    reason: str | None = None

    @property
    def decided(self) -> bool:
        """True unless the outcome is ``"not_judged"``."""
        return self.outcome != "not_judged"

    @property
    def faster(self) -> str | None:
        """The machine that finished first by the margin, or None (a tie, or not judged)."""
        return {"a_first": self.a, "b_first": self.b}.get(self.outcome)

    @property
    def lead(self) -> float:
        """The slower's median time over the faster's, >= 1 (how many times faster the faster one is)."""
        return self.ratio if self.ratio >= 1 else 1 / self.ratio


def _median(values: tuple[float, ...]) -> float:
    return float(statistics.median(values))


def _quartiles(values: tuple[float, ...]) -> tuple[float, float]:
    """Lower and upper quartiles (inclusive method: inside the data's range, as torch's Measurement reads them)."""
    if len(values) == 1:
        return values[0], values[0]
    q1, _q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return float(q1), float(q3)


def _iqr(values: tuple[float, ...]) -> float:
    q1, q3 = _quartiles(values)
    return q3 - q1


def classify(times_a: tuple[float, ...], times_b: tuple[float, ...], margin: float) -> str:
    """The rule of the module docstring on the per-round times of ``a`` and ``b``: one of :data:`OUTCOMES`.

    >>> classify((3.0, 3.2, 2.9, 3.1, 3.0), (2.0,) * 5, 1.2), classify((1.0,) * 3, (2.0,) * 3, 1.2)
    ('b_first', 'a_first')
    >>> classify((1.0, 1.1, 0.95, 1.05, 1.0), (1.0,) * 5, 1.2), classify((0.8, 1.5, 1.3, 0.7, 1.6), (1.0,) * 5, 1.2)
    ('tie', 'not_judged')
    >>> classify((2.0, 2.0), (1.0, 1.0), 1.2)  # too few rounds to decide
    'not_judged'

    Args:
        times_a, times_b: seconds per call of ``a`` and of ``b`` in each round (as many of each; finite, > 0).
        margin: the factor a lead must clear (finite, > 1).

    Raises:
        SeqlabError: a margin not > 1, unequal round counts, or a time that is not finite and > 0.

    Source: lesson claim L8 (who finishes first is a question of time, measured); the quartile band is the
    interquartile reading of torch.utils.benchmark's ``Measurement``, the quickest round timeit's advice.
    """
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin <= 1:
        raise SeqlabError(N_("margin must be a finite number > 1, received {margin!r}"), margin=margin)
    if len(times_a) != len(times_b):
        raise SeqlabError(N_("both machines need the same rounds, received {times_a_count} and {times_b_count}"),
                          times_a_count=len(times_a), times_b_count=len(times_b))
    if any(not math.isfinite(t) or t <= 0 for t in (*times_a, *times_b)):
        raise SeqlabError(N_("every time must be finite and > 0 seconds, received {times_a!r} and {times_b!r}"),
                          times_a=times_a, times_b=times_b)
    if len(times_a) < MIN_ROUNDS:
        return "not_judged"
    low, high = _quartiles(tuple(x / y for x, y in zip(times_a, times_b)))
    best = min(times_a) / min(times_b)
    if low > margin and best > margin:
        return "b_first"
    if high < 1 / margin and best < 1 / margin:
        return "a_first"
    if low >= 1 / margin and high <= margin:
        return "tie"
    return "not_judged"


def decide(rounds: Rounds, a: str, b: str, margin: float) -> Decision:
    """Who finished first, ``a`` or ``b``, judged on their per-round times (:func:`classify`).

    Args:
        rounds: the interleaved measurement (:func:`measure_rounds`). a, b: two names timed in it.
        margin: the factor a lead must clear (> 1); every front end passes :data:`MARGIN`.

    Returns:
        A :class:`Decision`; ``outcome == "not_judged"`` when the spread of the ratios straddles the margin, or when
        the CPU clock does not name the wall clock's winner (``reason`` :data:`CLOCKS_DISAGREE`).

    Raises:
        SeqlabError: a name not timed, or a margin not > 1.

    Source: lesson claim L8.
    """
    ratios = rounds.ratios(a, b)
    outcome = classify(rounds.per_round[a], rounds.per_round[b], margin)
    reason = None
    if outcome in ("a_first", "b_first") and not _clocks_agree(rounds, a, b, outcome, margin):
        outcome, reason = "not_judged", CLOCKS_DISAGREE
    low, high = _quartiles(ratios)
    return Decision(a=a, b=b, outcome=outcome, ratio=_median(ratios), low=low, high=high, margin=float(margin),
                    rounds=len(ratios), reason=reason)


def _clocks_agree(rounds: Rounds, a: str, b: str, outcome: str, margin: float) -> bool:
    """Whether the CPU clock names the wall clock's winner too (see the module docstring). True where it cannot
    speak: no CPU times read (an accelerator, rounds built by hand) or two thread counts compared."""
    cpu = rounds.cpu_per_round
    if cpu is None or a not in cpu or b not in cpu or rounds.threads_for(a) != rounds.threads_for(b):
        return True
    if any(not t > 0 for t in (*cpu[a], *cpu[b])):
        return False  # a block too short for the CPU clock to see: nothing confirms the wall clock
    return classify(cpu[a], cpu[b], margin) == outcome


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _block(function: Callable[[], object], calls: int, device: str, clock: Callable[[], float],
           cpu_clock: Callable[[], float] | None = None) -> tuple[float, float | None]:
    """(wall seconds, CPU seconds or None) per call of one block of ``calls`` calls."""
    _sync(device)
    cpu_start = cpu_clock() if cpu_clock is not None else None
    start = clock()
    for _ in range(calls):
        function()
    _sync(device)
    wall = (clock() - start) / calls
    return wall, (None if cpu_clock is None else (cpu_clock() - cpu_start) / calls)


def timed_name(name: str, threads: int) -> str:
    """The name one callable is timed under on ``threads`` threads, when one measurement holds several counts.

    >>> timed_name("sdpa", 2)
    'sdpa@2'
    """
    return f"{name}@{threads}"


def on_threads(function: Callable[[], object], threads: int) -> Callable[[], object]:
    """``function`` run on ``threads`` intra-op threads: the count is switched at the first call of a block (about
    0.1 µs) and only read at the others, so one interleaved measurement (:func:`measure_rounds`, which restores the
    count it found) holds several thread counts, and a thread comparison meets every round's conditions alike.

    >>> import torch
    >>> a = torch.ones(8, 8)
    >>> r = measure_rounds({timed_name("mm", n): on_threads(lambda: a @ a, n) for n in (1, 2)}, threads=1,
    ...                    block_seconds=0.001)
    >>> sorted(r.per_round)
    ['mm@1', 'mm@2']
    """
    def call() -> object:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        return function()

    call.seqlab_threads = threads  # read by measure_rounds: the CPU clock compares equal thread counts only
    return call


def measure_rounds(
    functions: Mapping[str, Callable[[], object]],
    *,
    rounds: int = DEFAULT_ROUNDS,
    block_seconds: float = 0.02,
    threads: int | None = None,
    device: str = "cpu",
    load: MachineLoad | None = None,
    clock: Callable[[], float] = time.perf_counter,
    cpu_clock: Callable[[], float] | None = None,
) -> Rounds:
    """Time several machines in interleaved rounds (forward only, under ``no_grad``).

    Steps: fix the threads; per machine, time its first call alone, then :data:`WARM_CALLS` calls each alone, and
    choose calls per block so that one block lasts about ``block_seconds`` at the *fastest* of them (a burst only
    slows a call, so every machine's blocks last about as long; at least one call); then ``rounds`` times, each
    machine times one block, the order rotated by one every round so no machine always runs right after another.
    Each block reads the wall clock and, on the CPU, this process's CPU clock (:func:`decide` asks both).

    >>> import torch
    >>> a = torch.ones(32, 32)
    >>> r = measure_rounds({"mm": lambda: a @ a, "add": lambda: a + a}, threads=1, block_seconds=0.001)
    >>> r.rounds, sorted(r.per_round), r.threads
    (7, ['add', 'mm'], 1)

    Args:
        functions: name -> callable with no arguments (its result is discarded); at least one.
        rounds: rounds to time (int >= 1; :data:`MIN_ROUNDS` or more to decide anything).
        block_seconds: the aimed length of one block, seconds (finite, > 0).
        threads: intra-op CPU threads (int >= 1); None uses :func:`timing_threads_default`. Restored after.
        device: ``"cpu"`` or ``"cuda"`` (synchronised around every clock reading).
        load: the load to record; None reads :func:`~seqlab.measure.timing.machine_load` before the first call.
        clock: the clock, seconds (a test passes a fake one; the real one is ``time.perf_counter``).
        cpu_clock: this process's CPU clock, seconds; None: ``time.process_time`` with the real wall clock on the
            CPU, no CPU reading with a clock of the caller's or on an accelerator (a test passes both fakes).

    Returns:
        :class:`Rounds`.

    Raises:
        SeqlabError: no functions, a function not callable, rounds < 1, block_seconds not finite and > 0,
            threads < 1, a device not in {"cpu", "cuda"}, or cuda without a CUDA device.

    Source: lesson claim L8; the rotation follows the interleaving of benchmark suites that compare kernels
    (each round meets every machine in the same state of the computer).
    """
    if not functions:
        raise SeqlabError(N_("functions must name at least one callable to time"))
    for name, function in functions.items():
        if not callable(function):
            raise SeqlabError(N_("functions[{name!r}] must be callable with no arguments, received {function_class}"),
                              name=name, function_class=type(function).__name__)
    rounds = require_positive_int("rounds", rounds)
    if (isinstance(block_seconds, bool) or not isinstance(block_seconds, (int, float))
            or not math.isfinite(block_seconds) or block_seconds <= 0):
        raise SeqlabError(N_("block_seconds must be a finite number > 0 seconds, received {block_seconds!r}"),
                          block_seconds=block_seconds)
    if device not in ("cpu", "cuda"):
        raise SeqlabError(N_("device must be one of ('cpu', 'cuda'), received {device!r}"), device=device)
    if device == "cuda" and not torch.cuda.is_available():
        raise SeqlabError(N_("device 'cuda' requested but no CUDA device is present"))
    load = machine_load() if load is None else load
    n_threads = timing_threads_default(load) if threads is None else require_positive_int("threads", threads)
    names = list(functions)
    if cpu_clock is None and device == "cpu" and clock is time.perf_counter:
        cpu_clock = time.process_time
    if device != "cpu":
        cpu_clock = None  # an accelerator's work is not this process's CPU time
    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with torch.no_grad():
            first, calls = {}, {}
            for name in names:
                first[name] = _block(functions[name], 1, device, clock)[0]
                fastest = min(_block(functions[name], 1, device, clock)[0] for _ in range(WARM_CALLS))
                calls[name] = max(1, round(block_seconds / fastest)) if fastest > 0 else 1
            per_round: dict[str, list[float]] = {name: [] for name in names}
            cpu_round: dict[str, list[float]] = {name: [] for name in names}
            for k in range(rounds):
                for name in names[k % len(names):] + names[:k % len(names)]:
                    wall, cpu = _block(functions[name], calls[name], device, clock, cpu_clock)
                    per_round[name].append(wall)
                    cpu_round[name].append(cpu)
    finally:
        torch.set_num_threads(previous)
    threads_of = {name: getattr(function, "seqlab_threads", n_threads) for name, function in functions.items()}
    return Rounds(per_round={name: tuple(times) for name, times in per_round.items()}, calls=calls,
                  first_call_s=first, threads=n_threads, device=device, load=load,
                  cpu_per_round=None if cpu_clock is None else {name: tuple(t) for name, t in cpu_round.items()},
                  threads_of=threads_of)


def timing_threads_default(load: MachineLoad | None = None) -> int:
    """The threads a timing uses when none is asked: ``torch.get_num_threads()``, capped by the free cores.

    free cores = max(1, round(cpus - load_1min)); without a load average (Windows) PyTorch's count is kept.
    A quiet 2-core machine times on 2 threads; with another process spinning on one core, on 1.

    >>> from seqlab.measure.timing import MachineLoad
    >>> timing_threads_default(MachineLoad(0.0, 2, False)) == min(torch.get_num_threads(), 2)
    True
    >>> timing_threads_default(MachineLoad(1.9, 2, True)), timing_threads_default(MachineLoad(7.0, 2, True))
    (1, 1)

    Args:
        load: the machine's load (None reads it now).

    Returns:
        A thread count >= 1.

    Source: issue 23 (a busy 2-core machine gave ×7.99 on its default threads and ×1.69 on one).
    """
    load = machine_load() if load is None else load
    torch_threads = torch.get_num_threads()
    if load.load_1min is None:
        return torch_threads
    free = max(1, int(round(load.cpus - load.load_1min)))
    return max(1, min(torch_threads, free))
