"""``seqlab decode``: what each new token costs when a model writes, machine by machine (L1, L2, L5, L6, L8).

The lesson compares the machines on a text that is already there (training, or reading a prompt): attention
then does all its work in a few products in a row, the recurrence waits T steps. Writing is different: token t
exists only after token t-1, so *every* machine runs one step per token. This study measures, per new token at
the chosen positions t (:func:`seqlab.measure.decode.measure_decode_step`):

* counted multiplications of the step (the recurrences' stay fixed; attention's grow with t: t(d_k + d_v) for
  the query over the cache, and with no cache t·d_model(d_k + d_v) more to recompute the keys and values);
* time: at each position every machine of the run is timed in one interleaved measurement
  (:func:`seqlab.measure.rounds.measure_rounds`: rounds in which each machine runs one block of steps, the order
  rotating), so that two machines are compared on the same moments of this computer;
* state bytes: fixed for the recurrences, t rows of keys and values for the growing KV cache, its capacity from
  the first token for the static (preallocated) one.

From those measurements it decides, with margins, which machine wins each criterion at each position
(:class:`Win`: the fewest multiplications; the least time — the machine of least median whose
:func:`~seqlab.measure.rounds.decide` against *every* other machine is decided in its favour by
:data:`~seqlab.measure.rounds.MARGIN`, else not judged; the smallest state), what a cache saves in time
(:attr:`DecodeResult.cache_times`, decisions as well), how each state grows with t (:class:`Growth`), and the
asymmetry (:class:`Asymmetry`, for the machines run): the span of causal attention's parallel forward does not
grow with T, while generating T tokens with a KV cache, each output fed back as the next input, takes a number of
products in a row that grows like T, as the recurrence's does.

Sizes are refused before anything is allocated when a step would not fit in memory (:func:`check_decode_size`).
Nothing is worded here; :mod:`seqlab.render.decode` turns the decisions into sentences.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.fit import grows_like_length, growth_kind
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.decode import (CACHE_MACHINES, DecodeStep, available_machines, build_decoder, check_machine,
                                   count_decode_step, estimate_decode_bytes, generation_span, prepare_decode_step,
                                   training_span)
from seqlab.measure.rounds import DEFAULT_ROUNDS, MARGIN, MIN_ROUNDS, Decision, Rounds, decide, measure_rounds
from seqlab.measure.timing import MachineLoad, machine_load
from seqlab.memory import MemoryEstimate, require_fits
from seqlab.studies.notebook_view import NotebookView

DEFAULT_POSITIONS = (16, 256, 1024)
QUICK_POSITIONS = (16, 64, 256)
DEFAULT_D_MODEL = 256
QUICK_D_MODEL = 64
#: The largest position accepted: a fixed-state machine runs t-1 small steps to reach it (2**20 took over five
#: minutes on a 2-core machine with no output; 2**16 is sixteen times fewer steps).
MAX_POSITION = 1 << 16
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
        min_run_time: the aimed seconds of one timed block (each machine runs one block per round, so a position
            takes about rounds × machines × min_run_time seconds of timing).
        rounds: interleaved rounds per position (at least :data:`~seqlab.measure.rounds.MIN_ROUNDS`).
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
    rounds: int = DEFAULT_ROUNDS
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
    """Which machine wins one criterion at one position, or None when none is decided.

    Attributes:
        criterion: ``"work"`` (fewest multiplications), ``"time"`` (least time) or ``"state"``.
        t: the position.
        machine: the winner, or None (a tie, a lead under the margin, or for times a pair not decided).
        runner_up: counts and bytes: the machine next best. Times: when a winner is named, the machine it leads
            by the least (median per-round ratio); otherwise the machine whose decision against the leader
            blocks a winner (one not judged first, then one that finished first in the rounds, then a tie).
        leader: the machine best by the figure (times: the least median over the rounds), named or not.
        ratio: runner-up's figure over the leader's (counts and bytes, >= 1); times: the runner-up's
            ``Decision.ratio`` (the median over rounds of runner-up time / leader time).
        margin: the lead needed (1 for exact counts: strictly fewer; :data:`~seqlab.measure.rounds.MARGIN` for times).
        decisions: times only: :func:`~seqlab.measure.rounds.decide` of every other machine timed (``a``)
            against the leader (``b``), in the config's order (``"b_first"``: the leader finished first); empty
            for counts and bytes.
    """

    criterion: str
    t: int
    machine: str | None
    runner_up: str
    leader: str
    ratio: float
    margin: float
    decisions: tuple[Decision, ...] = ()

    @property
    def blocking(self) -> Decision | None:
        """Times: the decision against :attr:`runner_up` when no winner is named (None otherwise)."""
        if self.machine is not None:
            return None
        return next((d for d in self.decisions if d.a == self.runner_up), None)


@dataclass(frozen=True)
class TimedPosition:
    """Every machine's step at one position, timed in the same interleaved rounds.

    Attributes:
        t: the position.
        rounds: :func:`~seqlab.measure.rounds.measure_rounds` over every machine of the run (name -> seconds per
            step in each round).
    """

    t: int
    rounds: Rounds


@dataclass(frozen=True)
class Growth:
    """How one machine's state bytes (or multiplications per token) grow from the first position to the last.

    Attributes:
        machine: the machine.
        first_bytes, last_bytes: the figure at the first and the last position (bytes, or multiplications for
            :attr:`DecodeResult.work_growth`).
        ratio: last_bytes / first_bytes, against ``positions_ratio`` = t_last / t_first.
        kind: how the figure grows over every position of the machine, one of :data:`seqlab.fit.GROWTHS`
            (:func:`seqlab.fit.growth_kind`: ``"constant"``, ``"linear"`` in step with t...).
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

    Measured only for the machines of the run: a cache machine generates, the Elman RNN only when it was run.

    Attributes:
        lengths: (T1, T2).
        training: causal attention's parallel forward over T given tokens.
        generation: generating T tokens with ``cache``, each output fed back as the next input.
        recurrence: generating T tokens with the Elman RNN, or None when the run has no Elman RNN.
        training_constant: the training span is the same at both T.
        generation_grows: generation(T2)/generation(T1) >= :data:`seqlab.fit.GROWTH_SHARE` · T2/T1
            (:func:`seqlab.fit.grows_like_length`).
        cache: the machine that generated (one of :data:`~seqlab.measure.decode.CACHE_MACHINES`).
    """

    lengths: tuple[int, int]
    training: tuple[int, int]
    generation: tuple[int, int]
    recurrence: tuple[int, int] | None
    training_constant: bool
    generation_grows: bool
    cache: str = "attention_kv_cache"

    @property
    def holds(self) -> bool:
        """Both sides of the asymmetry are measured: constant in training, growing like T in generation."""
        return self.training_constant and self.generation_grows


def asymmetry_of(lengths: tuple[int, int], training: tuple[int, int], generation: tuple[int, int],
                 recurrence: tuple[int, int] | None, cache: str = "attention_kv_cache") -> Asymmetry:
    """The :class:`Asymmetry` of measured spans, with its two conditions decided.

    >>> asymmetry_of((8, 16), (3, 3), (24, 48), (8, 16)).holds, asymmetry_of((8, 16), (3, 3), (24, 30), None).holds
    (True, False)
    """
    return Asymmetry(lengths, training, generation, recurrence, training[0] == training[1],
                     grows_like_length(lengths, generation), cache)


@dataclass(frozen=True)
class DecodeResult(NotebookView):
    """Every step measured, and what the study decided from them.

    Attributes:
        config: what was measured (checked). steps: every machine at every position (times from ``timed``).
        wins: :func:`decide_wins`. growth, work_growth: :func:`state_growth` of bytes and multiplications.
        asymmetry: the spans of training and generation, or None when the run has no cache machine.
        threads: timing threads. torch_version, elapsed_s (seconds), load (read before the first clock).
        timed: per position, every machine's interleaved rounds (empty when not timed).
        cache_times: at the last position, :func:`~seqlab.measure.rounds.decide` of attention without a cache
            (``a``) against each cache machine run (``b``), then of the growing cache against the static one;
            empty when not timed or when the machines are missing.
    """

    config: DecodeConfig
    steps: tuple[DecodeStep, ...]
    wins: tuple[Win, ...]
    growth: tuple[Growth, ...]
    asymmetry: Asymmetry | None
    work_growth: tuple[Growth, ...]
    threads: int
    torch_version: str
    elapsed_s: float
    load: MachineLoad | None = None
    timed: tuple[TimedPosition, ...] = ()
    cache_times: tuple[Decision, ...] = ()

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
        raise SeqlabError(N_("positions must name at least one position t >= 1, received none"), parameter="positions")
    for t in config.positions:
        require_positive_int("positions", t, MAX_POSITION)
    require_positive_int("d_model", config.d_model)
    require_positive_int("batch", config.batch)
    require_positive_int("threads", config.threads)
    if require_positive_int("rounds", config.rounds) < MIN_ROUNDS:
        raise SeqlabError(N_("rounds must be at least {min_rounds} to decide who is faster, received {rounds}"),
                          min_rounds=MIN_ROUNDS, rounds=config.rounds, parameter="rounds")
    if not config.machines:
        raise SeqlabError(N_("machines must name at least one machine, received none"), parameter="machine")
    for machine in config.machines:
        check_machine(machine)
    for T in config.span_lengths:
        require_positive_int("span_lengths", T, 4096)
    largest = max(config.positions)
    estimates = [estimate_decode_bytes(m, largest, config.d_model, config.batch) for m in config.machines]
    biggest = max(estimates, key=lambda e: e.total_bytes)
    require_fits(MemoryEstimate(biggest.total_bytes, biggest.largest),
                 Message(N_("a decoding step at t = {t} with d_model = {d_model} and batch {batch}"), t=largest,
                         d_model=config.d_model, batch=config.batch))
    return replace(config, positions=tuple(sorted(set(config.positions))),
                   machines=tuple(dict.fromkeys(config.machines)))  # a machine named twice is measured once


def decide_wins(steps: tuple[DecodeStep, ...], positions: tuple[int, ...], machines: tuple[str, ...],
                timed: tuple[TimedPosition, ...] = ()) -> tuple[Win, ...]:
    """For each criterion and position: the leader, and whether it wins (counts exactly, times by decisions).

    Counts and bytes: the fewest wins when strictly fewer than the next. Times (:func:`fastest`): from the
    interleaved rounds of ``timed``, never from times measured one machine after another.

    >>> from seqlab.measure.decode import DecodeStep
    >>> steps = (DecodeStep("elman", 4, 8, 1, 128, 128, 256), DecodeStep("attention_kv_cache", 4, 8, 1, 256, 256, 256))
    >>> [(w.criterion, w.machine) for w in decide_wins(steps, (4,), ("elman", "attention_kv_cache"))]
    [('work', 'elman'), ('state', None)]
    """
    by_key = {(s.machine, s.t): s for s in steps}
    figures: dict[str, Callable[[DecodeStep], int]] = {"work": lambda s: s.multiplications,
                                                       "state": lambda s: s.state_bytes}
    by_position = {p.t: p for p in timed}
    wins = []
    for criterion in CRITERIA:
        for t in positions:
            if criterion == "time":
                if t in by_position and len(by_position[t].rounds.per_round) >= 2:
                    wins.append(fastest(by_position[t], machines))
                continue
            ranked = sorted(((figures[criterion](by_key[m, t]), m) for m in machines if (m, t) in by_key),
                            key=lambda pair: pair[0])
            if len(ranked) < 2:
                continue
            (best, leader), (second, runner_up) = ranked[0], ranked[1]
            ratio = float(second) / float(best) if best > 0 else float("inf")
            wins.append(Win(criterion, t, leader if second > best else None, runner_up, leader, ratio, 1.0))
    return tuple(wins)


#: The order in which a blocking decision is named when several block a winner: a pair not decided first.
_BLOCKING_ORDER = {"not_judged": 0, "a_first": 1, "tie": 2}


def fastest(position: TimedPosition, machines: tuple[str, ...], margin: float = MARGIN) -> Win:
    """The fastest machine at one position, or None: the least median, decided against *every* other machine.

    leader = the machine of least median over its rounds; it is named only when
    ``decide(rounds, m, leader, margin).outcome == "b_first"`` (the leader finished first) for every other
    machine m. A leader faster than the runner-up but not decided against a third machine is not named (the
    third is the one reported).

    >>> from seqlab.measure.rounds import Rounds
    >>> rounds = Rounds({"a": (1.0,) * 5, "b": (2.0,) * 5, "c": (1.1, 1.5, 1.0, 1.4, 1.3)}, {}, {}, 1, "cpu", None)
    >>> win = fastest(TimedPosition(4, rounds), ("a", "b", "c"))
    >>> win.machine, win.leader, win.runner_up, win.blocking.outcome  # c straddles the ×1.2 margin
    (None, 'a', 'c', 'not_judged')

    Args:
        position: the interleaved rounds at one position (at least two machines).
        machines: the run's machines, in order (those not timed are skipped).
        margin: the factor a lead must clear (> 1).

    Returns:
        A :class:`Win` of criterion ``"time"`` with every decision of the leader.

    Raises:
        SeqlabError: fewer than two machines timed, or a margin not > 1.

    Source: lesson claim L8; issue 23 (a winner named from two machines timed one after the other).
    """
    rounds = position.rounds
    names = [m for m in machines if m in rounds.per_round]
    if len(names) < 2:
        raise SeqlabError(N_("a fastest machine needs at least two machines timed, received {names}"), names=names)
    medians = {m: statistics.median(rounds.per_round[m]) for m in names}
    leader = min(names, key=lambda m: medians[m])  # the first in order among equal medians
    decisions = tuple(decide(rounds, m, leader, margin) for m in names if m != leader)
    blocking = sorted((d for d in decisions if d.outcome != "b_first"),
                      key=lambda d: (_BLOCKING_ORDER[d.outcome], abs(math.log(d.ratio))))
    if blocking:
        quoted, named = blocking[0], None
    else:
        quoted, named = min(decisions, key=lambda d: d.ratio), leader  # the closest: the ratio nearest 1
    return Win("time", position.t, named, quoted.a, leader, quoted.ratio, float(margin), decisions)


def state_growth(steps: tuple[DecodeStep, ...], machines: tuple[str, ...],
                 figure: str = "state_bytes") -> tuple[Growth, ...]:
    """Each machine's state bytes (or another ``figure`` of its steps) at its first and last position, and how the
    figure grows over all its positions (:func:`seqlab.fit.growth_kind`: constant, linear, ...).

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
        kind = growth_kind(tuple(s.t for s in own), tuple(getattr(s, figure) for s in own))
        growth.append(Growth(machine, a, b, Fraction(b, a), Fraction(last.t, first.t), kind))
    return tuple(growth)


def measure_asymmetry(lengths: tuple[int, int], d_model: int, seed: int = 0,
                      machines: tuple[str, ...] = ("elman", "attention_kv_cache")) -> Asymmetry | None:
    """The spans of training and of generation at two lengths (products in a row), for the machines run.

    Generation is traced on the first cache machine of ``machines`` (:data:`~seqlab.measure.decode.CACHE_MACHINES`),
    the recurrence's only when ``"elman"`` is among them; None when no cache machine is.

    >>> a = measure_asymmetry((4, 8), 4)
    >>> a.training, a.generation, a.recurrence, a.holds
    ((3, 3), (12, 24), (4, 8), True)
    >>> measure_asymmetry((4, 8), 4, machines=("attention_static_cache",)).recurrence is None
    True
    """
    T1, T2 = lengths
    cache = next((m for m in machines if m in CACHE_MACHINES), None)
    if cache is None:
        return None
    recurrence = ((generation_span("elman", T1, d_model, seed), generation_span("elman", T2, d_model, seed))
                  if "elman" in machines else None)
    return asymmetry_of((T1, T2), (training_span(T1, d_model, seed), training_span(T2, d_model, seed)),
                        (generation_span(cache, T1, d_model, seed), generation_span(cache, T2, d_model, seed)),
                        recurrence, cache)


def cache_decisions(position: TimedPosition, machines: tuple[str, ...],
                    margin: float = MARGIN) -> tuple[Decision, ...]:
    """What a cache saves in time at one position, as decisions (:attr:`DecodeResult.cache_times`).

    ``decide(rounds, "attention_no_cache", cache)`` for each cache machine run, then
    ``decide(rounds, "attention_kv_cache", "attention_static_cache")`` when both were.

    Raises:
        SeqlabError: a margin not > 1.
    """
    timed = [m for m in machines if m in position.rounds.per_round]
    caches = [m for m in CACHE_MACHINES if m in timed]
    pairs = [("attention_no_cache", cache) for cache in caches if "attention_no_cache" in timed]
    if len(caches) == 2:
        pairs.append(tuple(caches))
    return tuple(decide(position.rounds, a, b, margin) for a, b in pairs)


def run_decode(config: DecodeConfig = DecodeConfig(),
               progress: Callable[[int, int, str], None] | None = None) -> DecodeResult:
    """Measure every machine at every position, then decide the wins, the growth and the asymmetry.

    Per position: each machine's step is prepared (state after t-1 tokens) and counted, then all of them are timed
    together in ``config.rounds`` interleaved rounds (:func:`~seqlab.measure.rounds.measure_rounds`, on
    ``config.threads`` threads); each step's :class:`~seqlab.measure.timing.Timing` is its machine's rounds. A
    static cache is built once with capacity = the largest position, so it holds that many rows from the first.

    Args:
        config: what to measure (checked first by :func:`check_decode_config`).
        progress: called as ``progress(done, total, label)`` before each position (label ``"t = …"``).

    Returns:
        A :class:`DecodeResult`.

    Raises:
        SeqlabError: see :func:`check_decode_config`.
    """
    config = check_decode_config(config)
    load = machine_load() if config.time else None
    clock = time.perf_counter()
    capacity = max(config.positions)
    decoders = {m: build_decoder(m, config.d_model, seed=config.seed, capacity=capacity) for m in config.machines}
    steps, timed = [], []
    for done, t in enumerate(config.positions):
        if progress is not None:
            progress(done, len(config.positions), f"t = {t}")
        prepared = {m: prepare_decode_step(m, t, d_model=config.d_model, batch=config.batch, seed=config.seed,
                                           decoder=decoders[m]) for m in config.machines}
        counted = {m: count_decode_step(p) for m, p in prepared.items()}
        if config.time:
            rounds = measure_rounds(prepared, rounds=config.rounds, block_seconds=config.min_run_time,
                                    threads=config.threads, load=load)
            timed.append(TimedPosition(t, rounds))
            counted = {m: replace(step, timing=replace(rounds.timing(m), label=f"{m} t={t}"))
                       for m, step in counted.items()}
        steps.extend(counted.values())
        del prepared  # the states of one position only
    steps = sorted(steps, key=lambda s: (config.machines.index(s.machine), s.t))  # machine by machine, as before
    steps, timed = tuple(steps), tuple(timed)
    return DecodeResult(config=config, steps=steps, wins=decide_wins(steps, config.positions, config.machines, timed),
                        growth=state_growth(steps, config.machines),
                        asymmetry=measure_asymmetry(config.span_lengths, config.span_d_model, config.seed,
                                                    config.machines),
                        work_growth=state_growth(steps, config.machines, "multiplications"),
                        threads=config.threads, torch_version=torch.__version__,
                        elapsed_s=time.perf_counter() - clock, load=load, timed=timed,
                        cache_times=cache_decisions(timed[-1], config.machines) if timed else ())
