"""``seqlab check``: each of the lesson's claims L1–L12 put to the measurement that tests it.

One function per claim builds small seeded layers, measures them with the engine of
:mod:`seqlab.measure` (or asks :mod:`seqlab.cost`, :mod:`seqlab.studies.figure` and
:mod:`seqlab.studies.quiz`) and returns the raw figures with a verdict:

====  =====================================================================================================
L1    span of the Elman loop in matrix products at two T (= T), and of its W_xh x_t half as one product (1)
L2    span of one attention call (dot score) at two T: 3 ops, 2 products, both T
L3    path x_1 → h_T (T products: W_xh, then T-1 by W_hh); the per-step factor of ‖∂h_T/∂x_i‖ at h = 0 for
      spectral radius 0.5 and 1.5 (below and above 1) and, with tanh working, no larger; LSTM and GRU paths
      still grow in ops, while their products stay flat (the additive bypass)
L4    path x_1 → y_T through self-attention at two T (the same); the gradient reaches position 1
L5    multiplications counted on the loop and on ``nn.RNN`` = T(d_h² + d_h·d_model), unequal widths
L6    counted on the call and on SDPA = T²(d_k + d_v); the projections, counted apart, = T·d_model(2d_k + d_v)
L7    counted ratio attention / recurrence = T/d at T = d/2, d, 2d; crossover at T = d
L8    time ratio SDPA / ``nn.RNN`` on one thread against the work ratio at T = 32d; multiplications per link of
      the chain (work / span) flat in T for the recurrence, growing for attention
L9    the worked numbers at d = 512, counted on ``nn.RNN`` and SDPA, with spans at T = 50, 1000, 2000
L10   shuffled rows (equivariance), shuffled (k, v) pairs (invariance), the recurrence (neither), and the two
      Spanish sentences with the same words
L11   Figure 1's fifteen boxes measured: exactly the three attention boxes mix positions
L12   the quiz's answers, recomputed, against the lesson's
====  =====================================================================================================

A measurement that raises is reported with its error and counts as not holding: nothing is skipped in
silence. The verdicts compare counts, structure and seeded float64 values, which do not vary between runs;
the one clock-based verdict (L8) has a margin of more than an order of magnitude, so load on a shared
machine does not flip it. Default sizes run in seconds; :attr:`CheckConfig.full` takes larger ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from seqlab import cost
from seqlab.errors import SeqlabError

CLAIMS = tuple(f"L{n}" for n in range(1, 13))
#: The lesson's answers to its four questions (L12), which the quiz must reach by computation.
LESSON_ANSWERS = {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}
#: The lesson's own sentence pair for L10.
SENTENCES = ("el perro muerde al cartero", "al cartero muerde el perro")


@dataclass(frozen=True)
class CheckSizes:
    """The sizes each check runs at. ``fast`` (the default) takes seconds; ``full`` is larger."""

    span_lengths: tuple[int, int] = (400, 800)
    path_lengths: tuple[int, int] = (32, 64)
    width: int = 8
    count_length: int = 64
    count_widths: tuple[int, int] = (24, 40)  # (d_model, d_h) for L5; (d_k, d_v) for L6
    crossover_width: int = 32
    time_length: int = 1024
    time_width: int = 32
    min_run_time: float = 0.1
    worked_lengths: tuple[int, ...] = (50, 1000, 2000)
    order_length: int = 16
    figure: tuple[int, int, int, int] = (10, 10, 512, 8)  # T_source, T_target, d_model, heads

    @classmethod
    def of(cls, full: bool) -> CheckSizes:
        """The fast sizes, or the larger ones of ``--full``."""
        if not full:
            return cls()
        return cls(span_lengths=(800, 1600), path_lengths=(64, 128), width=16, count_length=256,
                   count_widths=(48, 80), crossover_width=64, time_length=2048, time_width=64, min_run_time=0.3,
                   order_length=128, figure=(24, 24, 512, 8))


@dataclass(frozen=True)
class CheckConfig:
    """What to check: ``claims`` (a subset of :data:`CLAIMS`, in order), ``full`` sizes, ``seed``."""

    claims: tuple[str, ...] = CLAIMS
    full: bool = False
    seed: int = 0


@dataclass(frozen=True)
class ClaimCheck:
    """One claim against its measurement.

    Attributes:
        claim: ``"L1"`` … ``"L12"``.
        holds: the measurement agrees with the claim.
        values: every figure measured, by name (integers exact, Fractions exact, floats as measured,
            seconds for times); what each means is in the check's docstring.
        seconds: how long the check took.
        error: why the measurement could not be made (then ``holds`` is False), else None.
    """

    claim: str
    holds: bool
    values: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class CheckResult:
    """Every claim checked, in order, with the conditions of the run."""

    checks: tuple[ClaimCheck, ...]
    full: bool
    seed: int
    threads: int
    torch_version: str
    elapsed_s: float

    @property
    def held(self) -> int:
        """How many claims hold."""
        return sum(check.holds for check in self.checks)

    @property
    def all_hold(self) -> bool:
        """Every claim checked holds."""
        return all(check.holds for check in self.checks)


# --- the measurements, one per claim ------------------------------------------------------------------

def _generator(seed: int, offset: int):
    import torch

    return torch.Generator().manual_seed(seed * 1_000_003 + offset)


def _span_products(function, *args) -> int:
    """Matrix products in a row when ``function(*args)`` runs (reference kernels)."""
    from seqlab.measure.trace import measure_span

    return measure_span(function, *args).products


def check_l1(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L1: the recurrence's chain is T matrix products long; its W_xh x_t half is one product at any T."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.trace import measure_span

    g = _generator(seed, 1)
    rnn = ElmanRNN(sizes.width, sizes.width, generator=g).eval()
    chain, ops, half = [], [], []
    for T in sizes.span_lengths:
        x = torch.randn(T, sizes.width, generator=g)  # (T, d_model)
        span = measure_span(rnn, x)
        chain.append(span.products), ops.append(span.ops)
        half.append(_span_products(lambda rows: rows @ rnn.weight_xh.T, x))  # (T, d_h) in one product
    holds = chain == list(sizes.span_lengths) and half[0] == half[1] == 1
    return holds, {"lengths": sizes.span_lengths, "span_products": tuple(chain), "span_ops": tuple(ops),
                   "input_half_products": tuple(half)}


def check_l2(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L2: one attention call (dot score) is Q Kᵀ, a row softmax and A V in a row, whatever T."""
    import torch

    from seqlab.layers.attention import Attention
    from seqlab.measure.trace import measure_span

    g = _generator(seed, 2)
    ops, products, total, scaled = [], [], [], []
    for T in sizes.span_lengths:
        q, k, v = (torch.randn(T, sizes.width, generator=g) for _ in range(3))  # (T, d)
        span = measure_span(Attention("dot"), q, k, v)
        ops.append(span.ops), products.append(span.products), total.append(span.total_products)
        scaled.append(measure_span(Attention("scaled_dot"), q, k, v).ops)  # one division more
    holds = ops == [3, 3] and products == [2, 2] and total == [2, 2] and scaled[0] == scaled[1]
    return holds, {"lengths": sizes.span_lengths, "span_ops": tuple(ops), "span_products": tuple(products),
                   "total_products": tuple(total), "scaled_dot_span_ops": tuple(scaled)}


def check_l3(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L3: x_1 reaches h_T after T-1 products by W_hh; the signal scales per step like the spectral radius;
    LSTM and GRU keep a path that grows in ops, with a bypass that crosses no W_hh."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    d, g = sizes.width, _generator(seed, 3)
    rnn = ElmanRNN(d, d, generator=g).eval()
    paths, gated = [], {"lstm": [], "gru": []}
    for T in sizes.path_lengths:
        x = torch.randn(T, d, generator=g)  # (T, d_model)
        paths.append(measure_paths(rnn, x, sources=(0,)).products[0][-1])
        for name, kind in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
            layer = kind(d, d, batch_first=True).eval()  # weights from the global RNG, seeded by run_check
            matrix = measure_paths(lambda rows, layer=layer: layer(rows)[0], x[None], sources=(0,))  # (1, T, d)
            gated[name].append((matrix.products[0][-1], matrix.ops[0][-1]))
    T = sizes.path_lengths[1]
    decay = {}
    for radius in (0.5, 1.5):
        loop = ElmanRNN(d, d, bias=False, generator=_generator(seed, 4), dtype=torch.float64).eval()
        loop.set_spectral_radius(radius)
        at_zero = measure_reach(loop, torch.zeros(T, d, dtype=torch.float64)).decay_per_step()  # tanh' = 1
        with_inputs = measure_reach(loop, torch.randn(T, d, generator=g, dtype=torch.float64)).decay_per_step()
        decay[radius] = (at_zero, with_inputs)
    holds = (paths == list(sizes.path_lengths)
             and decay[0.5][0] < 1 < decay[1.5][0]
             and all(inputs <= zero for zero, inputs in decay.values())
             and all(p[0][1] < p[1][1] and p[0][0] == p[1][0] for p in gated.values()))
    return holds, {"lengths": sizes.path_lengths, "path_products": tuple(paths),
                   "whh_products": tuple(p - 1 for p in paths), "reach_length": T,
                   "decay_radius_0.5": decay[0.5], "decay_radius_1.5": decay[1.5],
                   "lstm_path_products_ops": tuple(gated["lstm"]), "gru_path_products_ops": tuple(gated["gru"])}


def check_l4(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L4: position 1 reaches position T through self-attention in the same few products at any T; the
    gradient comes back along it."""
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    g = _generator(seed, 5)
    layer = SelfAttention(sizes.width, generator=g, dtype=torch.float64).eval()
    paths = []
    for T in sizes.path_lengths:
        x = torch.randn(T, sizes.width, generator=g, dtype=torch.float64)  # (T, d_model)
        paths.append(measure_paths(lambda rows: layer(rows)[0], x, sources=(0,)).products[0][-1])
    reach = measure_reach(lambda rows: layer(rows)[0], x)
    holds = paths[0] == paths[1] is not None and paths[1] < sizes.path_lengths[0] - 1 and reach.first > 0
    return holds, {"lengths": sizes.path_lengths, "path_products": tuple(paths), "reach_first": reach.first,
                   "reach_last": reach.norms[-1], "decay_per_step": reach.decay_per_step()}


def _counts(function, *args) -> int:
    from seqlab.measure.work import count_multiplications

    counted = count_multiplications(function, *args)
    if counted.unaccounted:
        raise SeqlabError(f"ops with no multiplication count ran: {dict(counted.unaccounted)}")
    return counted.multiplications


def check_l5(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L5: the recurrence multiplies once per weight per step, T(d_h² + d_h·d_model), counted on two machines."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN

    T, (d_model, d_h) = sizes.count_length, sizes.count_widths
    rnn = ElmanRNN(d_model, d_h, generator=_generator(seed, 6)).eval()
    x = torch.randn(1, T, d_model, generator=_generator(seed, 7))  # (1, T, d_model)
    with torch.no_grad():
        loop, library = _counts(rnn, x), _counts(rnn.to_torch(batch_first=True), x)
    closed = cost.recurrence_multiplications(T, d_model, d_h)
    return loop == library == closed, {"T": T, "d_model": d_model, "d_h": d_h, "closed_form": closed,
                                       "counted_loop": loop, "counted_nn_rnn": library}


def check_l6(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L6: the call does T²(d_k + d_v) multiplications, counted on two machines; projections counted apart."""
    import torch
    import torch.nn.functional as F

    from seqlab.layers.attention import SelfAttention

    T, (d_k, d_v), d_model = sizes.count_length, sizes.count_widths, sizes.count_widths[0]
    layer = SelfAttention(d_model, d_k=d_k, d_v=d_v, generator=_generator(seed, 8)).eval()
    x = torch.randn(T, d_model, generator=_generator(seed, 9))  # (T, d_model)
    with torch.no_grad():
        projections = _counts(layer.project, x)
        q, k, v = layer.project(x)  # (T, d_k), (T, d_k), (T, d_v)
        call = _counts(layer.attention, q, k, v)
        fused = _counts(F.scaled_dot_product_attention, q[None, None], k[None, None], v[None, None])
    closed = cost.attention_multiplications(T, d_k, d_v)
    closed_projections = cost.projection_multiplications(T, d_model, d_k, d_v)
    holds = call == fused == closed and projections == closed_projections
    return holds, {"T": T, "d_model": d_model, "d_k": d_k, "d_v": d_v, "closed_form": closed, "counted_call": call,
                   "counted_sdpa": fused, "projections_closed_form": closed_projections,
                   "projections_counted": projections}


def check_l7(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L7: with every width d the counted ratio attention / recurrence is T/d, so they cross at T = d."""
    import torch
    import torch.nn.functional as F

    d = sizes.crossover_width
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    ratios = {}
    for T in (d // 2, d, 2 * d):
        x = torch.randn(1, T, d, generator=_generator(seed, 10))  # (1, T, d)
        q = x[None]  # (1, 1, T, d): q = k = v
        with torch.no_grad():
            ratios[T] = Fraction(_counts(F.scaled_dot_product_attention, q, q, q), _counts(rnn, x))
    crossover = cost.crossover_length(d, d, d, d)
    holds = all(ratio == Fraction(T, d) for T, ratio in ratios.items()) and crossover == d
    return holds, {"d": d, "ratios": ratios, "crossover": crossover,
                   "first_length_attention_costs_more": cost.first_length_attention_costs_more(d, d, d, d)}


def check_l8(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L8: at T = 32d attention does 32 times the multiplications yet does not take 32 times as long, because
    its work is spread over few links of a chain; the recurrence's is cut into T links."""
    import torch
    import torch.nn.functional as F

    from seqlab.measure.timing import measure_time
    from seqlab.measure.trace import measure_span

    T, d = sizes.time_length, sizes.time_width
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    x = torch.randn(1, T, d, generator=_generator(seed, 11))  # (1, T, d)
    q = x[None]  # (1, 1, T, d)
    recurrence = measure_time(lambda: rnn(x), label="nn.RNN", threads=1, min_run_time=sizes.min_run_time)
    attention = measure_time(lambda: F.scaled_dot_product_attention(q, q, q), label="SDPA", threads=1,
                             min_run_time=sizes.min_run_time)
    work = Fraction(cost.attention_multiplications(T, d, d), cost.recurrence_multiplications(T, d, d))
    per_link = {}
    for length in (T // 2, T):
        rows = x[:, :length]
        recurrence_span = measure_span(rnn, rows).products
        attention_span = measure_span(F.scaled_dot_product_attention, rows[None], rows[None], rows[None]).products
        per_link[length] = (Fraction(cost.recurrence_multiplications(length, d, d), recurrence_span),
                            Fraction(cost.attention_multiplications(length, d, d), attention_span))
    time_ratio = attention.median_s / recurrence.median_s
    halves = list(per_link.values())
    holds = time_ratio < work and halves[0][0] == halves[1][0] and halves[1][1] > halves[0][1]
    return holds, {"T": T, "d": d, "work_ratio": work, "time_ratio": time_ratio,
                   "recurrence_s": recurrence.median_s, "recurrence_iqr_s": recurrence.iqr_s,
                   "attention_s": attention.median_s, "attention_iqr_s": attention.iqr_s, "threads": 1,
                   "noisy": recurrence.noisy or attention.noisy, "multiplications_per_link": per_link}


def check_l9(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L9: the lesson's worked numbers at d = 512, counted on ``nn.RNN`` and SDPA, with the chain depths."""
    import torch
    import torch.nn.functional as F

    from seqlab.layers.attention import Attention
    from seqlab.layers.recurrent import ElmanRNN

    d, g = 512, _generator(seed, 12)
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    small = ElmanRNN(4, 4, generator=g).eval()
    rows, holds = {}, True
    for T in sizes.worked_lengths:
        x = torch.randn(1, T, d, generator=g)  # (1, T, d)
        with torch.no_grad():
            counted = (_counts(rnn, x), _counts(F.scaled_dot_product_attention, x[None], x[None], x[None]))
        closed = (cost.recurrence_multiplications(T, d, d), cost.attention_multiplications(T, d, d))
        tiny = torch.randn(T, 4, generator=g)  # the chain does not depend on the width
        spans = (_span_products(small, tiny), _span_products(Attention("dot"), tiny, tiny, tiny))
        rows[T] = {"recurrence": counted[0], "attention": counted[1], "ratio": cost.work_ratio(T, d, d, d, d),
                   "span_recurrence": spans[0], "span_attention": spans[1]}
        holds &= counted == closed and spans == (T, 2)
    lesson = {50: (26_214_400, 2_560_000), 1000: (524_288_000, 1_024_000_000)}  # the lesson's own figures
    holds &= all((rows[T]["recurrence"], rows[T]["attention"]) == pair for T, pair in lesson.items() if T in rows)
    return holds, {"d": d, "lengths": rows}


def check_l10(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L10: shuffled rows come out shuffled alike; shuffled (k, v) pairs change nothing; the recurrence
    notices both; the lesson's two sentences reach attention as the same vectors."""
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.order import measure_key_value_order, measure_order
    from seqlab.text import embed, tokenize

    d, T, g = sizes.width, sizes.order_length, _generator(seed, 13)
    layer = SelfAttention(d, generator=g).eval()
    rnn = ElmanRNN(d, d, generator=g).eval()
    x = torch.randn(T, d, generator=g)  # (T, d_model)
    with torch.no_grad():
        q, k, v = layer.project(x)
    rows = measure_order(lambda r: layer(r)[0], x, seed=seed)
    pairs = measure_key_value_order(lambda q_, k_, v_: layer.attention(q_, k_, v_)[0], q, k, v, seed=seed)
    recurrence = measure_order(rnn, x, seed=seed)
    both = tokenize(" ".join(SENTENCES), "words")  # one vocabulary: the same word, the same id
    half = len(both) // 2
    first, second = both.pieces[:half], both.pieces[half:]
    order = [first.index(piece) for piece in second]  # second = first[order]
    x_both = embed(both, d, seed)  # (10, d)
    a, b = x_both[:half], x_both[half:]  # (5, d) each: the same rows, in another order
    with torch.no_grad():
        attention_gap = float((layer(b)[0] - layer(a)[0][order]).abs().max())
        recurrence_gap = float((rnn(b)[-1] - rnn(a)[-1]).abs().max())  # the last state, after reading all
    holds = (rows.equivariant and pairs.invariant and not recurrence.equivariant
             and attention_gap <= rows.tolerance and recurrence_gap > rows.tolerance)
    return holds, {"T": T, "rows_change": rows.max_abs_change, "pairs_change": pairs.max_abs_change,
                   "tolerance": rows.tolerance, "recurrence_change": recurrence.max_abs_change,
                   "sentences": SENTENCES, "sentences_attention_change": attention_gap,
                   "sentences_recurrence_change": recurrence_gap}


def check_l11(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L11: of Figure 1's fifteen boxes, measured, exactly the three attention boxes mix positions."""
    from seqlab.studies.figure import measure_figure

    T_source, T_target, d_model, heads = sizes.figure
    figure = measure_figure(T_source, T_target, d_model, heads, seed=seed)
    attention = tuple(box.key for box in figure.boxes if "attention" in box.key)
    holds = len(figure.boxes) == 15 and len(figure.lit) == 3 and set(figure.lit) == set(attention)
    return holds, {"boxes": len(figure.boxes), "lit": figure.lit,
                   "lit_titles": tuple(box.title for box in figure.boxes if box.mixes),
                   "patterns": {box.key: box.pattern for box in figure.boxes},
                   "T_source": T_source, "T_target": T_target, "d_model": d_model, "heads": heads}


def check_l12(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L12: the quiz reaches the lesson's four answers by computation."""
    from seqlab.studies.quiz import questions

    answers = {q.key: q.answer for q in questions("en")}
    return answers == LESSON_ANSWERS, {"answers": answers, "lesson": LESSON_ANSWERS}


CHECKS: dict[str, Callable[[CheckSizes, int], tuple[bool, dict]]] = {
    "L1": check_l1, "L2": check_l2, "L3": check_l3, "L4": check_l4, "L5": check_l5, "L6": check_l6,
    "L7": check_l7, "L8": check_l8, "L9": check_l9, "L10": check_l10, "L11": check_l11, "L12": check_l12,
}
"""Claim -> its check, in the lesson's order."""


def parse_claims(claims: Sequence[str] | str) -> tuple[str, ...]:
    """Claims in the lesson's order from ``"L1,L8"``, ``"1, 8"`` or a sequence; repeats dropped.

    >>> parse_claims("l8, 1,L1")
    ('L1', 'L8')

    Raises:
        SeqlabError: empty, or a claim outside L1–L12 (the message shows it).
    """
    parts = claims.split(",") if isinstance(claims, str) else list(claims)
    wanted = set()
    for part in parts:
        text = str(part).strip().upper()
        name = text if text.startswith("L") else f"L{text}"
        if name not in CHECKS:
            raise SeqlabError(f"claims must be among L1–L12, received {part!r}", parameter="claims")
        wanted.add(name)
    if not wanted:
        raise SeqlabError(f"claims must name at least one of L1–L12, received {claims!r}", parameter="claims")
    return tuple(claim for claim in CLAIMS if claim in wanted)


def run_check(config: CheckConfig = CheckConfig(),
              progress: Callable[[int, int, str], None] | None = None) -> CheckResult:
    """Check each claim of ``config`` against its measurement.

    >>> result = run_check(CheckConfig(claims=("L5", "L7")))
    >>> [(c.claim, c.holds) for c in result.checks], result.checks[0].values["closed_form"]  # 64 * (40² + 40·24)
    ([('L5', True), ('L7', True)], 163840)

    Args:
        config: the claims, sizes and seed.
        progress: called as ``progress(done, total, claim)`` before each claim, for a progress display.

    Returns:
        A :class:`CheckResult`; a measurement that raised is a :class:`ClaimCheck` with ``error`` set and
        ``holds`` False. Everything runs on one CPU thread (restored afterwards; L8 times on one thread too),
        with the global RNG seeded by ``config.seed`` inside a fork (the caller's RNG state is kept).

    Raises:
        SeqlabError: an unknown claim in ``config.claims``.
    """
    import torch

    from seqlab.measure.timing import fixed_threads

    claims = parse_claims(config.claims)
    sizes = CheckSizes.of(config.full)
    started = time.perf_counter()
    checks = []
    # One thread: traces pay per op, and idle threads would only spin on a busy machine. The global RNG
    # (used by torch.nn constructors) is seeded inside a fork, so the caller's stream is left as it was.
    with fixed_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        _run_claims(claims, sizes, config.seed, checks, progress)
    return CheckResult(tuple(checks), config.full, config.seed, 1, torch.__version__, time.perf_counter() - started)


def _run_claims(claims: tuple[str, ...], sizes: CheckSizes, seed: int, checks: list[ClaimCheck],
                progress: Callable[[int, int, str], None] | None) -> None:
    """Run each claim's check in turn, appending its :class:`ClaimCheck` (with the error, if it raised)."""
    for done, claim in enumerate(claims):
        if progress is not None:
            progress(done, len(claims), claim)
        clock = time.perf_counter()
        try:
            holds, values = CHECKS[claim](sizes, seed)
            checks.append(ClaimCheck(claim, bool(holds), values, time.perf_counter() - clock))
        except Exception as error:  # noqa: BLE001  reported, never skipped: no figure, no verdict
            checks.append(ClaimCheck(claim, False, {}, time.perf_counter() - clock,
                                     f"{type(error).__name__}: {error}"))
