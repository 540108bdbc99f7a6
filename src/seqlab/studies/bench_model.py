"""The work–span model of ``seqlab bench`` and the crossovers it implies (L7, L8).

time ≈ max(work / throughput, span × latency): throughput from a large matmul, latency from a chain of
tiny dependent ops, both measured (:func:`calibrate`); spans extended linearly from traces at small T
(:class:`SpanFit`). :func:`crossovers` reports where attention becomes the slower machine — measured and
predicted — beside where it starts doing more work (T = d).

The **measured** crossover is read from decisions, never from medians alone. At every length the two machines
of a pair were timed in the same interleaved rounds (:func:`seqlab.measure.rounds.measure_rounds`), and
:func:`seqlab.measure.rounds.decide` says who finished first by :data:`~seqlab.measure.rounds.MARGIN` — or that it cannot say. The
crossover is then (:func:`measured_crossover`):

* ``"within"`` (a, b): attention first at a, the recurrence first at b > a *and at the longest length*, no
  attention-first length after a and no recurrence-first length before b (the lengths between tie or were
  not judged, and are named);
* ``"below"``: the recurrence first at the shortest and at the longest length, attention first nowhere;
* ``"beyond"``: attention first at the longest length (so nowhere the recurrence first);
* ``"not_judged"``, with a reason, in every other case.

"within" and "below" need the recurrence first at the longest length, "beyond" needs attention first there,
so two runs can give opposite statements only when the decision at that one length flips — which the
decision rule makes as rare as the machine itself changing between the runs. The **predicted** crossover is
the work–span model's, a model and never a measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from seqlab import cost
from seqlab.errors import Message, SeqlabError, Worded, require_positive_int
from seqlab.measure.rounds import MARGIN, Decision, Rounds, decide
from seqlab.i18n import N_
from seqlab.measure.rounds import Decision, Rounds, decide
from seqlab.measure.timing import Timing

#: What :func:`measured_crossover` can say.
WHERE = ("within", "below", "beyond", "not_judged")
#: Why a measured crossover was not judged (:attr:`Crossover.reason`).
REASONS = ("none_first", "out_of_order", "longest_undecided", "shortest_undecided")

@dataclass(frozen=True)
class Machine:
    """One machine of the sweep: its key (``--machines``), label, family and recurrent cell (its gate blocks g,
    :data:`seqlab.cost.GATES`)."""

    key: str
    label: str
    family: str  # "recurrence" or "attention"
    cell: str = "rnn"


MACHINES: dict[str, Machine] = {m.key: m for m in (
    Machine("rnn", "nn.RNN", "recurrence"),
    Machine("loop", Worded("ElmanRNN loop", Message(N_("{name}, loop"), name="ElmanRNN")), "recurrence"),
    Machine("lstm", "nn.LSTM", "recurrence", cell="lstm"),
    Machine("gru", "nn.GRU", "recurrence", cell="gru"),
    Machine("sdpa", "SDPA", "attention"),
    Machine("attention", Worded("Attention (explicit)", Message(N_("{name}, explicit"), name=Message(N_("Attention")))),
            "attention"),
)}
#: The (recurrence, attention) pairs whose crossovers are reported: the fastest of each, the explicit pair.
PAIRS = (("rnn", "sdpa"), ("loop", "attention"))


def multiplications(machine: str, T: int, d: int, batch: int = 1) -> int:
    """Multiplications of one forward pass: g·T(d² + d²)·B for a recurrence, T²(d + d)·B for attention.

    >>> multiplications("rnn", 1000, 512), multiplications("sdpa", 1000, 512)  # L9: 2*1000*512**2, 2*1000**2*512
    (524288000, 1024000000)
    >>> multiplications("lstm", 50, 512) // multiplications("rnn", 50, 512)  # four gate blocks
    4

    Raises:
        SeqlabError: unknown machine or a size that is not an integer >= 1.
    """
    spec = _machine(machine)
    if spec.family == "recurrence":
        return cost.gated_recurrence_multiplications(T, d, d, spec.cell) * require_positive_int("batch", batch)
    return cost.attention_multiplications(T, d, d) * require_positive_int("batch", batch)


def _machine(key: str) -> Machine:
    if key not in MACHINES:
        raise SeqlabError(N_("machine must be one of {machines}; received {key!r}"), machines=', '.join(MACHINES),
                          key=key, parameter="machines")
    return MACHINES[key]


@dataclass(frozen=True)
class Calibration:
    """The two constants of the model on one device and thread count, with the timings behind them.

    Attributes:
        throughput: multiplications per second of an n×n matmul (n³ multiplications / median time).
        latency_s: seconds per op of a chain of dependent tiny ops (median time / ops in the chain).
    """

    device: str
    threads: int
    matmul_size: int
    matmul: Timing
    chain_ops: int
    chain: Timing
    throughput: float
    latency_s: float

    @property
    def flops_per_s(self) -> float:
        """Throughput in PyTorch's FLOPs (2 per multiply-add)."""
        return 2 * self.throughput


def calibrate(device: str, threads: int, matmul_size: int, matmul: Timing, chain_ops: int,
              chain: Timing) -> Calibration:
    """Fit the model's constants from the two timings: throughput = n³ / t_matmul, latency = t_chain / ops.

    >>> from dataclasses import replace
    >>> t = Timing("x", (0.5,), 0.5, 0.0, 0.5, 1, 1, "cpu", False, 0.1)
    >>> c = calibrate("cpu", 1, 1000, t, 100, replace(t, median_s=0.001))
    >>> c.throughput, c.latency_s  # 1000**3 / 0.5, 0.001 / 100
    (2000000000.0, 1e-05)
    """
    return Calibration(device=device, threads=threads, matmul_size=matmul_size, matmul=matmul, chain_ops=chain_ops,
                       chain=chain, throughput=matmul_size**3 / matmul.median_s,
                       latency_s=chain.median_s / chain_ops)


@dataclass(frozen=True)
class SpanFit:
    """Ops in a row of one machine as ``intercept + per_step · T``, from traces at small T (L1, L2)."""

    machine: str
    traced_lengths: tuple[int, ...]
    traced_ops: tuple[int, ...]
    intercept: int
    per_step: int

    def ops(self, T: int) -> int:
        """The span at length T, extended linearly."""
        return self.intercept + self.per_step * T


@dataclass(frozen=True)
class BenchPoint:
    """One machine at one (threads, d, T): the timing, the work and span, and the model's prediction."""

    machine: str
    threads: int
    d_model: int
    T: int
    multiplications: int
    span_ops: int
    timing: Timing
    predicted_s: float
    bound: str  # "work" (throughput-bound) or "span" (latency-bound), whichever term of the model is larger


@dataclass(frozen=True)
class ThreadScaling:
    """One machine at one (d, T) on the fewest and the most threads of a sweep, timed in the same interleaved
    rounds, and whether the extra threads made it faster.

    Attributes:
        machine, d_model, T: what was timed. few, many: the two thread counts.
        decision: :func:`seqlab.measure.rounds.decide` with ``a`` the machine on ``few`` threads and ``b`` on
            ``many``: ``"b_first"`` the extra threads made it faster by :data:`~seqlab.measure.rounds.MARGIN`, ``"a_first"`` slower,
            ``"tie"`` neither by the margin, ``"not_judged"`` the rounds straddle the margin. ``ratio`` is the
            time on ``few`` over the time on ``many`` (median over rounds).
    """

    machine: str
    d_model: int
    T: int
    few: int
    many: int
    decision: Decision


@dataclass(frozen=True)
class LengthDecision:
    """Who finished first at one length, attention or the recurrence of a pair, by the per-round ratios.

    Attributes:
        T: the length.
        decision: :func:`seqlab.measure.rounds.decide` with ``a`` the attention machine, ``b`` the recurrence:
            ``ratio`` is attention's time over the recurrence's (median over rounds), ``low`` / ``high`` its
            quartiles.
    """

    T: int
    decision: Decision

    @property
    def first(self) -> str:
        """``"attention"``, ``"recurrence"``, ``"tie"`` or ``"not_judged"``."""
        return {"a_first": "attention", "b_first": "recurrence"}.get(self.decision.outcome, self.decision.outcome)


@dataclass(frozen=True)
class Crossover:
    """Where attention becomes the slower machine, as decided, against where it starts doing more work.

    Attributes:
        work_T: T at which both do the same multiplications (closed form; d for these pairs).
        time_T: measured: inside ``time_bracket``, where the log-log line through the median ratios at the
            bracket's two ends crosses 1; None unless ``time_where`` is ``"within"``.
        time_where: one of :data:`WHERE` (see :func:`measured_crossover`).
        time_bracket: (the last length where attention finished first, the first where the recurrence did)
            for ``"within"``, else None.
        predicted_T: the same crossing in the work–span model, a model (0.0: slower at every T; None: never slower).
        decisions: who finished first at every length timed, in order of T.
        margin: the factor a lead had to clear (:data:`~seqlab.measure.rounds.MARGIN`).
        reason: for ``"not_judged"``, one of :data:`REASONS`; else None.
        predicted_noisy: the model's calibration timings (matmul, chain) were noisy: its constants are rough.
    """

    threads: int
    d_model: int
    recurrence: str
    attention: str
    work_T: Fraction
    time_T: float | None
    time_where: Literal["within", "below", "beyond", "not_judged"]
    time_bracket: tuple[int, int] | None
    predicted_T: float | None
    decisions: tuple[LengthDecision, ...] = ()
    margin: float = MARGIN
    reason: Literal["none_first", "out_of_order", "longest_undecided", "shortest_undecided"] | None = None
    predicted_noisy: bool = False

    def between(self) -> tuple[LengthDecision, ...]:
        """The lengths strictly inside ``time_bracket`` (each a tie or not judged); () without a bracket."""
        if self.time_bracket is None:
            return ()
        low, high = self.time_bracket
        return tuple(d for d in self.decisions if low < d.T < high)


# --- The work–span model and the crossovers ------------------------------------------------------------

def predict(work: int, span_ops: int, calibration: Calibration) -> tuple[float, str]:
    """(max(work / throughput, span × latency) in seconds, which term is larger: "work" or "span").

    >>> t = Timing("x", (1.0,), 1.0, 0.0, 1.0, 1, 1, "cpu", False, 0.1)
    >>> c = calibrate("cpu", 1, 1000, t, 1, Timing("c", (1e-5,), 1e-5, 0.0, 1e-5, 1, 1, "cpu", False, 0.1))
    >>> predict(2 * 10**9, 100, c), predict(10**6, 1000, c)  # 2e9 / 1e9 s; 1000 × 10 µs
    ((2.0, 'work'), (0.01, 'span'))
    """
    by_work, by_span = work / calibration.throughput, span_ops * calibration.latency_s
    return (by_work, "work") if by_work >= by_span else (by_span, "span")


Poly = tuple[float, float, float]  # (c2, c1, c0): c2·T² + c1·T + c0 seconds


def model_terms(machine: str, d: int, batch: int, span: SpanFit, calibration: Calibration) -> tuple[Poly, Poly]:
    """The model's two terms for one machine as polynomials in T: (work / throughput, span × latency)."""
    if MACHINES[machine].family == "recurrence":
        work = (0.0, multiplications(machine, 1, d, batch) / calibration.throughput, 0.0)  # g·2d²·B·T
    else:
        work = (multiplications(machine, 1, d, batch) / calibration.throughput, 0.0, 0.0)  # 2d·B·T²
    return work, (0.0, span.per_step * calibration.latency_s, span.intercept * calibration.latency_s)


def _value(poly: Poly, T: float) -> float:
    return (poly[0] * T + poly[1]) * T + poly[2]


def _positive_roots(p: Poly, q: Poly) -> list[float]:
    a, b, c = (x - y for x, y in zip(p, q))
    if a == 0:
        return [-c / b] if b != 0 and -c / b > 0 else []
    disc = b * b - 4 * a * c
    if disc < 0:
        return []
    root = math.sqrt(disc)
    return [r for r in ((-b - root) / (2 * a), (-b + root) / (2 * a)) if r > 0]


def predicted_crossover(recurrence: tuple[Poly, Poly], attention: tuple[Poly, Poly]) -> float | None:
    """The T from which on the model's attention time, max of its two terms, exceeds the recurrence's.

    Every T where two of the four terms meet is a candidate; the sign of the difference is constant
    between candidates, so it is read at one point inside each interval, from the last one backwards.

    >>> rnn, sdpa = ((0, 2.0, 0), (0, 1.0, 0)), ((0.5, 0, 0), (0, 0, 3.0))  # work 2T vs 0.5T²: equal at T = 4
    >>> predicted_crossover(rnn, sdpa)
    4.0

    Returns:
        The crossing T (0.0: attention is slower at every T > 0), or None when it never gets slower.
    """
    terms = (*recurrence, *attention)
    candidates = sorted({r for i, p in enumerate(terms) for q in terms[i + 1:] for r in _positive_roots(p, q)})
    bounds = [0.0, *candidates]

    def slower(T: float) -> bool:
        return max(_value(p, T) for p in attention) > max(_value(p, T) for p in recurrence)

    if not slower(2 * bounds[-1] + 1):
        return None
    for i in range(len(bounds) - 1, 0, -1):  # bounds[i - 1]..bounds[i]
        if not slower((bounds[i - 1] + bounds[i]) / 2):
            return bounds[i]
    return 0.0


def measured_crossover(decisions: tuple[LengthDecision, ...]) -> tuple[str, float | None, tuple[int, int] | None,
                                                                  str | None]:
    """The measured crossover from who finished first at each length (the rule of the module docstring).

    Inside the bracket (a, b) the crossing is put where the line through (log a, log ratio_a) and
    (log b, log ratio_b) meets ratio = 1, ratio = attention / recurrence (the medians over rounds): attention
    was first at a (ratio < 1/margin) and the recurrence at b (ratio > margin), so that T lies inside.

    >>> from seqlab.measure.rounds import Decision
    >>> def at(T, outcome, ratio):
    ...     return LengthDecision(T, Decision("sdpa", "rnn", outcome, ratio, ratio, ratio, 1.2, 7))
    >>> measured_crossover((at(100, "a_first", 0.5), at(400, "b_first", 2.0)))  # halfway on log T
    ('within', 200.0, (100, 400), None)
    >>> measured_crossover((at(100, "a_first", 0.5), at(400, "not_judged", 1.1)))
    ('not_judged', None, None, 'longest_undecided')
    >>> measured_crossover((at(100, "a_first", 0.5), at(400, "a_first", 0.7)))[0]
    'beyond'

    Args:
        decisions: one per length, in increasing T (:class:`LengthDecision`).

    Returns:
        (where, T, bracket, reason): where is one of :data:`WHERE`; T and bracket only for "within"; reason
        (one of :data:`REASONS`) only for "not_judged".

    Raises:
        SeqlabError: no decisions, or lengths not increasing.
    """
    if not decisions:
        raise SeqlabError(N_("measured_crossover needs a decision at one length at least, received none"))
    if any(x.T >= y.T for x, y in zip(decisions, decisions[1:])):
        raise SeqlabError(N_("decisions must be in increasing T, received {decisions}"),
                          decisions=[d.T for d in decisions])
    attention = [d for d in decisions if d.first == "attention"]
    recurrence = [d for d in decisions if d.first == "recurrence"]
    if not attention and not recurrence:
        return "not_judged", None, None, "none_first"
    if attention and recurrence and attention[-1].T > recurrence[0].T:
        return "not_judged", None, None, "out_of_order"
    last = decisions[-1].first
    if last == "attention":
        return "beyond", None, None, None
    if last != "recurrence":
        return "not_judged", None, None, "longest_undecided"
    if not attention:
        return ("below", None, None, None) if decisions[0].first == "recurrence" else \
            ("not_judged", None, None, "shortest_undecided")
    a, b = attention[-1], recurrence[0]
    t0, t1 = math.log(a.T), math.log(b.T)
    r0, r1 = math.log(a.decision.ratio), math.log(b.decision.ratio)
    crossing = t0 + (t1 - t0) * (0 - r0) / (r1 - r0)
    return "within", round(math.exp(crossing), 9), (a.T, b.T), None


def pair_rounds(points: tuple[BenchPoint, ...], machines: tuple[str, ...]) -> Rounds:
    """The interleaved rounds of one (threads, d, T) rebuilt from its points: every point's timing samples are
    its machine's per-round times, in round order (``run_bench`` times the machines of a point together).

    Raises:
        SeqlabError: a machine without a point, or points of different rounds, threads or device.
    """
    timings = {}
    for key in machines:
        found = [p for p in points if p.machine == key]
        if len(found) != 1:
            raise SeqlabError(N_("one point of {key!r} expected, received {found_count}"), key=key,
                              found_count=len(found))
        timings[key] = found[0].timing
    counts = {len(t.samples) for t in timings.values()}
    conditions = {(t.threads, t.device) for t in timings.values()}
    if len(counts) != 1 or len(conditions) != 1:
        raise SeqlabError(N_("machines timed in one set of rounds share rounds, threads and device; received "
                             "{counts} rounds and {conditions}"), counts=sorted(counts), conditions=sorted(conditions))
    (threads, device), = conditions
    cpu = {k: t.cpu_samples for k, t in timings.items()}
    return Rounds(per_round={k: t.samples for k, t in timings.items()},
                  calls={k: max(1, t.runs // len(t.samples)) for k, t in timings.items()},
                  first_call_s={k: t.first_call_s for k, t in timings.items()}, threads=threads, device=device,
                  load=next(iter(timings.values())).load,
                  cpu_per_round=None if any(v is None for v in cpu.values()) else cpu)


def crossovers(points: tuple[BenchPoint, ...], calibrations: tuple[Calibration, ...], spans: tuple[SpanFit, ...],
               batch: int, margin: float = MARGIN) -> tuple[Crossover, ...]:
    """Measured (decided), predicted (model) and work crossovers for each pair of :data:`PAIRS`, thread count, d.

    At every length the pair's decision is :func:`seqlab.measure.rounds.decide` on the rounds of that point
    (:func:`pair_rounds`), attention as ``a``; the measured crossover follows from them by
    :func:`measured_crossover`.
    """
    span_of = {s.machine: s for s in spans}
    found = []
    for c in calibrations:
        for d in sorted({p.d_model for p in points}):
            here = [p for p in points if p.threads == c.threads and p.d_model == d]
            for rec, att in PAIRS:
                lengths = sorted({p.T for p in here if p.machine == rec} & {p.T for p in here if p.machine == att})
                if not lengths:
                    continue
                decisions = tuple(
                    LengthDecision(T, decide(pair_rounds(tuple(p for p in here if p.T == T), (att, rec)), att, rec,
                                             margin)) for T in lengths)
                where, T, bracket, reason = measured_crossover(decisions)
                predicted = predicted_crossover(model_terms(rec, d, batch, span_of[rec], c),
                                                model_terms(att, d, batch, span_of[att], c))
                work_T = Fraction(multiplications(rec, 1, d), multiplications(att, 1, d))  # g·2d² / 2d
                found.append(Crossover(c.threads, d, rec, att, work_T, T, where, bracket, predicted, decisions,
                                       float(margin), reason, c.matmul.noisy or c.chain.noisy))
    return tuple(found)
