"""The work–span model of ``seqlab bench`` and the crossovers it implies (L7, L8).

time ≈ max(work / throughput, span × latency): throughput from a large matmul, latency from a chain of
tiny dependent ops, both measured (:func:`calibrate`); spans extended linearly from traces at small T
(:class:`SpanFit`). :func:`crossovers` reports where attention becomes the slower machine — measured and
predicted — beside where it starts doing more work (T = d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from seqlab import cost
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.measure.timing import Timing

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
    Machine("loop", "ElmanRNN loop", "recurrence"),
    Machine("lstm", "nn.LSTM", "recurrence", cell="lstm"),
    Machine("gru", "nn.GRU", "recurrence", cell="gru"),
    Machine("sdpa", "SDPA", "attention"),
    Machine("attention", "Attention (explicit)", "attention"),
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
        raise SeqlabError(f"machine must be one of {', '.join(MACHINES)}; received {key!r}", parameter="machines")
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
class Crossover:
    """Where attention becomes the slower machine, against where it starts doing more work.

    Attributes:
        work_T: T at which both do the same multiplications (closed form; d for these pairs).
        time_T: measured: from this T on, through the end of the sweep, attention's median is larger
            (log-log interpolation inside ``time_bracket``); None when ``time_where`` is not "within".
        time_where: "within" the sweep, "below" its first length (slower everywhere), "beyond" its last.
        time_bracket: (last length where attention was not slower, first length of the slower run).
        predicted_T: the same crossing in the model (0.0: slower at every T; None: never slower).
    """

    threads: int
    d_model: int
    recurrence: str
    attention: str
    work_T: Fraction
    time_T: float | None
    time_where: str
    time_bracket: tuple[int, int] | None
    predicted_T: float | None


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


def measured_crossover(lengths: tuple[int, ...], recurrence_s: tuple[float, ...],
                       attention_s: tuple[float, ...]) -> tuple[str, float | None, tuple[int, int] | None]:
    """From which length on, to the end of the sweep, attention's median time exceeds the recurrence's.

    Inside the bracket (last length where attention was not slower, next length) the crossing is
    interpolated on log T against log(attention / recurrence).

    >>> measured_crossover((100, 400), (1.0, 4.0), (0.5, 8.0))  # ratio 0.5 then 2: halfway on log T
    ('within', 200.0, (100, 400))
    >>> measured_crossover((100, 400), (1.0, 4.0), (0.5, 1.0))[:2], measured_crossover((1,), (1.0,), (2.0,))[:2]
    (('beyond', None), ('below', None))

    Returns:
        (where, T, bracket): where is "within", "below" (slower at every length) or "beyond".
    """
    logs = [math.log(a / r) for r, a in zip(recurrence_s, attention_s)]
    not_slower = [i for i, value in enumerate(logs) if value <= 0]
    if not not_slower:
        return "below", None, None
    i = not_slower[-1]
    if i == len(lengths) - 1:
        return "beyond", None, None
    t0, t1 = math.log(lengths[i]), math.log(lengths[i + 1])
    crossing = t0 + (t1 - t0) * (0 - logs[i]) / (logs[i + 1] - logs[i])
    return "within", round(math.exp(crossing), 9), (lengths[i], lengths[i + 1])


def crossovers(points: tuple[BenchPoint, ...], calibrations: tuple[Calibration, ...], spans: tuple[SpanFit, ...],
               batch: int) -> tuple[Crossover, ...]:
    """Measured, predicted and work crossovers for each pair of :data:`PAIRS`, thread count and d."""
    span_of = {s.machine: s for s in spans}
    found = []
    for c in calibrations:
        for d in sorted({p.d_model for p in points}):
            for rec, att in PAIRS:
                rows = {p.machine: {} for p in points}
                for p in points:
                    if p.threads == c.threads and p.d_model == d:
                        rows[p.machine][p.T] = p.timing.median_s
                if not rows.get(rec) or not rows.get(att):
                    continue
                lengths = tuple(sorted(rows[rec]))
                where, T, bracket = measured_crossover(lengths, tuple(rows[rec][t] for t in lengths),
                                                       tuple(rows[att][t] for t in lengths))
                predicted = predicted_crossover(model_terms(rec, d, batch, span_of[rec], c),
                                                model_terms(att, d, batch, span_of[att], c))
                work_T = Fraction(multiplications(rec, 1, d), multiplications(att, 1, d))  # g·2d² / 2d
                found.append(Crossover(c.threads, d, rec, att, work_T, T, where, bracket, predicted))
    return tuple(found)
