"""``seqlab decode``: what each new token costs when a model writes, machine by machine (L1, L2, L5, L6, L8).

The lesson compares the machines on a text that is already there (training, or reading a prompt): attention
then does all its work in a few products in a row, the recurrence waits T steps. Writing is different: token t
exists only after token t-1, so *every* machine runs one step per token. This study measures, per new token at
the chosen positions t (:func:`seqlab.measure.decode.measure_decode_step`):

* counted multiplications of the step (the recurrences' stay fixed; attention's grow with t: t(d_k + d_v) for
  the query over the cache, and with no cache t·d_model(d_k + d_v) more to recompute the keys and values);
* time, median and IQR of the step on this machine;
* state bytes: fixed for the recurrences, t rows of keys and values for the KV cache.

From those measurements it decides, with margins, which machine wins each criterion at each position
(:class:`Win`: the fewest multiplications, the least time by at least :data:`TIME_MARGIN`, the smallest state),
how each state grows with t (:class:`Growth`), and the asymmetry (:class:`Asymmetry`): the span of causal
attention's parallel forward does not grow with T, while generating T tokens with the KV cache, each output fed
back as the next input, takes a number of products in a row that grows like T, as the recurrence's does.

Sizes are refused before anything is allocated when a step would not fit in memory (:func:`check_decode_size`).
Nothing is worded here; :mod:`seqlab.render.decode` turns the decisions into sentences.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.measure.decode import (DecodeStep, available_machines, build_decoder, check_machine,
                                   estimate_decode_bytes, generation_span, measure_decode_step, training_span)
from seqlab.measure.timing import MachineLoad, Timing, machine_load
from seqlab.memory import MemoryEstimate, require_fits
from seqlab.studies.notebook_view import NotebookView

DEFAULT_POSITIONS = (16, 256, 1024)
QUICK_POSITIONS = (16, 64, 256)
DEFAULT_D_MODEL = 256
QUICK_D_MODEL = 64
#: The largest position accepted: a fixed-state machine runs t-1 small steps to reach it (2**20 took over five
#: minutes on a 2-core machine with no output; 2**16 is sixteen times fewer steps).
MAX_POSITION = 1 << 16
#: A machine is the fastest at a position only when the next one's median is at least this many times its own.
TIME_MARGIN = 1.2
#: A state grows linearly when bytes(t2)/bytes(t1) is within this fraction of (t2/t1) (the last position's row).
LINEAR_TOLERANCE = 0.1
#: Generation grows like T when span(T2)/span(T1) is at least this share of T2/T1.
GROWTH_SHARE = 0.9
CRITERIA = ("work", "time", "state")


@dataclass(frozen=True)
class DecodeConfig:
    """What to measure.

    Attributes:
        positions: the positions t of the new token (each in [1, :data:`MAX_POSITION`]), increasing.
        d_model: every width (d_h = d_k = d_v = d_model).
        machines: which of :data:`seqlab.measure.decode.MACHINES` (default: every one importable here).
        batch: sequences generated side by side.
        time: time each step (median and IQR) or count only.
        min_run_time: seconds of timed blocks per step.
        threads: CPU threads while timing (default 1: a step at batch 1 is a few small products, and on a shared
            machine a second thread mostly waits to be scheduled).
        span_lengths: the two T at which the generation and training spans are traced.
        span_d_model: the width of the span traces (the span does not depend on it).
        seed: weights and prefixes.
    """

    positions: tuple[int, ...] = DEFAULT_POSITIONS
    d_model: int = DEFAULT_D_MODEL
    machines: tuple[str, ...] = field(default_factory=available_machines)
    batch: int = 1
    time: bool = True
    min_run_time: float = 0.05
    threads: int = 1
    span_lengths: tuple[int, int] = (16, 32)
    span_d_model: int = 8
    seed: int = 0

    @classmethod
    def quick(cls, **changes: object) -> DecodeConfig:
        """Small sizes (t = 16, 64, 256 at d = 64, short timings): seconds, for previews and the report."""
        values = {"positions": QUICK_POSITIONS, "d_model": QUICK_D_MODEL, "min_run_time": 0.02,
                  "span_lengths": (8, 16)}
        return cls(**{**values, **changes})


@dataclass(frozen=True)
class Win:
    """Which machine wins one criterion at one position, or None when none leads by the margin.

    Attributes:
        criterion: ``"work"`` (fewest multiplications), ``"time"`` (least median time) or ``"state"``.
        t: the position.
        machine: the winner, or None (a tie, or a lead under the margin).
        runner_up: the machine next best.
        leader: the machine best by the figure, whether or not it leads by the margin.
        ratio: runner-up's figure over the leader's (>= 1).
        margin: the lead needed (1 for exact counts: strictly fewer; :data:`TIME_MARGIN` for times).
        apart: for times, whether the two IQR bands (median ± IQR/2) are apart (:func:`spreads_apart`); a lead
            inside the spread decides nothing. Always True for counts and bytes.
    """

    criterion: str
    t: int
    machine: str | None
    runner_up: str
    leader: str
    ratio: float
    margin: float
    apart: bool = True


@dataclass(frozen=True)
class Growth:
    """How one machine's state bytes (or multiplications per token) grow from the first position to the last.

    Attributes:
        machine: the machine.
        first_bytes, last_bytes: the figure at the first and the last position (bytes, or multiplications for
            :attr:`DecodeResult.work_growth`).
        ratio: last_bytes / first_bytes, against ``positions_ratio`` = t_last / t_first.
        kind: ``"fixed"`` (equal bytes), ``"linear"`` (ratio within :data:`LINEAR_TOLERANCE` of the
            positions' ratio) or ``"other"``.
    """

    machine: str
    first_bytes: int
    last_bytes: int
    ratio: Fraction
    positions_ratio: Fraction
    kind: str


@dataclass(frozen=True)
class Asymmetry:
    """Span (matrix products in a row) of training against generation, at two lengths T.

    Attributes:
        lengths: (T1, T2).
        training: causal attention's parallel forward over T given tokens.
        generation: generating T tokens with the KV cache, each output fed back as the next input.
        recurrence: generating T tokens with the Elman RNN.
        training_constant: the training span is the same at both T.
        generation_grows: generation(T2)/generation(T1) >= :data:`GROWTH_SHARE` · T2/T1.
    """

    lengths: tuple[int, int]
    training: tuple[int, int]
    generation: tuple[int, int]
    recurrence: tuple[int, int]
    training_constant: bool
    generation_grows: bool

    @property
    def holds(self) -> bool:
        """Both sides of the asymmetry are measured: constant in training, growing like T in generation."""
        return self.training_constant and self.generation_grows


def asymmetry_of(lengths: tuple[int, int], training: tuple[int, int], generation: tuple[int, int],
                 recurrence: tuple[int, int]) -> Asymmetry:
    """The :class:`Asymmetry` of measured spans, with its two conditions decided.

    >>> asymmetry_of((8, 16), (3, 3), (24, 48), (8, 16)).holds, asymmetry_of((8, 16), (3, 3), (24, 30), (8, 16)).holds
    (True, False)
    """
    (t1, t2), (g1, g2) = lengths, generation
    grows = g1 > 0 and Fraction(g2, g1) >= GROWTH_SHARE * Fraction(t2, t1)
    return Asymmetry(lengths, training, generation, recurrence, training[0] == training[1], grows)


@dataclass(frozen=True)
class DecodeResult(NotebookView):
    """Every step measured, and what the study decided from them."""

    config: DecodeConfig
    steps: tuple[DecodeStep, ...]
    wins: tuple[Win, ...]
    growth: tuple[Growth, ...]
    asymmetry: Asymmetry
    work_growth: tuple[Growth, ...]
    threads: int
    torch_version: str
    elapsed_s: float
    load: MachineLoad | None = None

    def step(self, machine: str, t: int) -> DecodeStep:
        """The step of ``machine`` at position ``t``.

        Raises:
            KeyError: no such step was measured.
        """
        for step in self.steps:
            if step.machine == machine and step.t == t:
                return step
        raise KeyError((machine, t))

    @property
    def counts_match(self) -> bool:
        """Every counted step equals its closed form (steps without one are left out)."""
        return all(s.closed_form is None or s.multiplications == s.closed_form for s in self.steps)


def check_decode_config(config: DecodeConfig) -> DecodeConfig:
    """Refuse bad sizes and steps that would not fit in memory, before anything is allocated.

    >>> check_decode_config(DecodeConfig.quick()).positions
    (16, 64, 256)

    Raises:
        SeqlabError: a position outside [1, MAX_POSITION] (``parameter="positions"``), no positions, an unknown
            machine, a size that is not an integer >= 1, or a step whose estimate exceeds the memory available
            (the message says how much it would need).
    """
    if not config.positions:
        raise SeqlabError("positions must name at least one position t >= 1, received none", parameter="positions")
    for t in config.positions:
        require_positive_int("positions", t, MAX_POSITION)
    require_positive_int("d_model", config.d_model)
    require_positive_int("batch", config.batch)
    require_positive_int("threads", config.threads)
    if not config.machines:
        raise SeqlabError("machines must name at least one machine, received none", parameter="machine")
    for machine in config.machines:
        check_machine(machine)
    for T in config.span_lengths:
        require_positive_int("span_lengths", T, 4096)
    largest = max(config.positions)
    estimates = [estimate_decode_bytes(m, largest, config.d_model, config.batch) for m in config.machines]
    biggest = max(estimates, key=lambda e: e.total_bytes)
    require_fits(MemoryEstimate(biggest.total_bytes, biggest.largest),
                 f"a decoding step at t = {largest} with d_model = {config.d_model} and batch {config.batch}")
    return replace(config, positions=tuple(sorted(set(config.positions))),
                   machines=tuple(dict.fromkeys(config.machines)))  # a machine named twice is measured once


def decide_wins(steps: tuple[DecodeStep, ...], positions: tuple[int, ...],
                machines: tuple[str, ...]) -> tuple[Win, ...]:
    """For each criterion and position: the leader, and whether it leads by the criterion's margin.

    >>> from seqlab.measure.decode import DecodeStep
    >>> steps = (DecodeStep("elman", 4, 8, 1, 128, 128, 256), DecodeStep("attention_kv_cache", 4, 8, 1, 256, 256, 256))
    >>> [(w.criterion, w.machine) for w in decide_wins(steps, (4,), ("elman", "attention_kv_cache"))]
    [('work', 'elman'), ('state', None)]
    """
    by_key = {(s.machine, s.t): s for s in steps}
    figures: dict[str, Callable[[DecodeStep], float | None]] = {
        "work": lambda s: s.multiplications,
        "time": lambda s: None if s.timing is None else s.timing.median_s,
        "state": lambda s: s.state_bytes,
    }
    wins = []
    for criterion in CRITERIA:
        margin = TIME_MARGIN if criterion == "time" else 1.0
        for t in positions:
            ranked = sorted(((figures[criterion](by_key[m, t]), m) for m in machines if (m, t) in by_key),
                            key=lambda pair: (pair[0] is None, pair[0] if pair[0] is not None else 0))
            ranked = [(value, m) for value, m in ranked if value is not None]
            if len(ranked) < 2:
                continue
            (best, leader), (second, runner_up) = ranked[0], ranked[1]
            ratio = float(second) / float(best) if best > 0 else float("inf")
            apart = criterion != "time" or spreads_apart(by_key[leader, t].timing, by_key[runner_up, t].timing)
            leads = ratio >= margin and second > best and apart
            wins.append(Win(criterion, t, leader if leads else None, runner_up, leader, ratio, margin, apart))
    return tuple(wins)


def spreads_apart(faster: Timing, slower: Timing) -> bool:
    """True when the two times' IQR bands, median ± IQR/2, do not overlap: a lead larger than both spreads.

    >>> from seqlab.measure.timing import Timing
    >>> def timing(median, iqr):
    ...     return Timing("x", (median,) * 3, median, iqr, median, 3, 1, "cpu", False, 0.1)
    >>> spreads_apart(timing(1.0, 0.2), timing(2.0, 0.2)), spreads_apart(timing(1.0, 0.2), timing(2.0, 2.0))
    (True, False)
    """
    return faster.median_s + faster.iqr_s / 2 < slower.median_s - slower.iqr_s / 2


def time_lead(faster: Timing, slower: Timing) -> tuple[float, bool]:
    """(slower / faster median, whether that lead decides): at least :data:`TIME_MARGIN` and spreads apart.

    >>> from seqlab.measure.timing import Timing
    >>> def timing(median, iqr):
    ...     return Timing("x", (median,) * 3, median, iqr, median, 3, 1, "cpu", False, 0.1)
    >>> time_lead(timing(1.0, 0.1), timing(3.0, 0.1)), time_lead(timing(1.0, 0.1), timing(1.1, 0.01))
    ((3.0, True), (1.1, False))
    """
    ratio = slower.median_s / faster.median_s
    return ratio, ratio >= TIME_MARGIN and spreads_apart(faster, slower)


def state_growth(steps: tuple[DecodeStep, ...], machines: tuple[str, ...],
                 figure: str = "state_bytes") -> tuple[Growth, ...]:
    """Each machine's state bytes (or another ``figure`` of its steps) at its first and last position, classified
    fixed / linear / other.

    >>> from seqlab.measure.decode import DecodeStep
    >>> steps = (DecodeStep("x", 16, 8, 1, 0, 0, 1024), DecodeStep("x", 256, 8, 1, 0, 0, 16384))
    >>> state_growth(steps, ("x",))[0].kind
    'linear'
    """
    growth = []
    for machine in machines:
        own = sorted((s for s in steps if s.machine == machine), key=lambda s: s.t)
        if len(own) < 2:
            continue
        first, last = own[0], own[-1]
        a, b = getattr(first, figure), getattr(last, figure)
        ratio, positions_ratio = Fraction(b, a), Fraction(last.t, first.t)
        kind = "fixed" if a == b else "linear" if abs(ratio / positions_ratio - 1) <= LINEAR_TOLERANCE else "other"
        growth.append(Growth(machine, a, b, ratio, positions_ratio, kind))
    return tuple(growth)


def measure_asymmetry(lengths: tuple[int, int], d_model: int, seed: int = 0) -> Asymmetry:
    """The spans of training and of generation at two lengths (products in a row).

    >>> a = measure_asymmetry((4, 8), 4)
    >>> a.training, a.generation, a.holds
    ((3, 3), (12, 24), True)
    """
    T1, T2 = lengths
    return asymmetry_of((T1, T2), (training_span(T1, d_model, seed), training_span(T2, d_model, seed)),
                        (generation_span("attention_kv_cache", T1, d_model, seed),
                         generation_span("attention_kv_cache", T2, d_model, seed)),
                        (generation_span("elman", T1, d_model, seed), generation_span("elman", T2, d_model, seed)))


def run_decode(config: DecodeConfig = DecodeConfig(),
               progress: Callable[[int, int, str], None] | None = None) -> DecodeResult:
    """Measure every machine at every position, then decide the wins, the growth and the asymmetry.

    Args:
        config: what to measure (checked first by :func:`check_decode_config`).
        progress: called as ``progress(done, total, machine)`` before each machine.

    Returns:
        A :class:`DecodeResult`.

    Raises:
        SeqlabError: see :func:`check_decode_config`.
    """
    config = check_decode_config(config)
    load = machine_load() if config.time else None
    clock = time.perf_counter()
    steps = []
    for done, machine in enumerate(config.machines):
        if progress is not None:
            progress(done, len(config.machines), machine)
        decoder = build_decoder(machine, config.d_model, seed=config.seed)
        for t in config.positions:
            steps.append(measure_decode_step(machine, t, d_model=config.d_model, batch=config.batch,
                                             time=config.time, seed=config.seed, min_run_time=config.min_run_time,
                                             threads=config.threads, load=load, decoder=decoder))
    steps = tuple(steps)
    return DecodeResult(config=config, steps=steps, wins=decide_wins(steps, config.positions, config.machines),
                        growth=state_growth(steps, config.machines),
                        asymmetry=measure_asymmetry(config.span_lengths, config.span_d_model, config.seed),
                        work_growth=state_growth(steps, config.machines, "multiplications"),
                        threads=config.threads, torch_version=torch.__version__,
                        elapsed_s=time.perf_counter() - clock, load=load)
