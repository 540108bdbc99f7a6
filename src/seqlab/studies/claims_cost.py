"""The cost claims of ``seqlab check``: multiplications counted against the closed forms, and time (L5–L9).

One function per claim, ``check_lN(sizes, seed)``, builds small seeded layers, counts the multiplications
their forward passes make (:func:`seqlab.measure.work.count_multiplications`; one multiply-add is one
multiplication, the lesson's unit) on the hand-written layers and on PyTorch's, compares the counts with
the closed forms of :mod:`seqlab.cost` (L8 also times them) and returns ``(holds, values)``: the verdict
and the raw figures by name (integers and Fractions exact, seconds for times). An op the counter cannot
account for raises, so a count is never short in silence. Sizes and seeds are :mod:`seqlab.studies.claims`'s.

====  =====================================================================================================
L5    multiplications counted on the loop and on ``nn.RNN`` = T(d_h² + d_h·d_model), unequal widths
L6    counted on the call and on SDPA = T²(d_k + d_v); the projections, counted apart, = T·d_model(2d_k + d_v)
L7    counted ratio attention / recurrence = T/d at T = d/2, d, 2d; crossover at T = d
L8    time ratio SDPA / ``nn.RNN`` on one thread against the work ratio at T = 32d; multiplications per link of
      the chain (work / span) flat in T for the recurrence, growing for attention
L9    the worked numbers at d = 512, counted on ``nn.RNN`` and SDPA, with spans at T = 50, 1000, 2000
====  =====================================================================================================

Every verdict but L8 compares exact counts; L8's, the one clock-based verdict, has a margin of more than an
order of magnitude, so load on a shared machine does not flip it.

Shapes: T positions, d_model input width, d_h hidden width, d_k / d_v query-key / value widths, d one width
for all.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.studies.claims import CheckSizes, claim_generator, span_products


def _counts(function, *args) -> int:
    """Multiplications ``function(*args)`` makes; raises if an op ran that the counter cannot account for."""
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
    rnn = ElmanRNN(d_model, d_h, generator=claim_generator(seed, 6)).eval()
    x = torch.randn(1, T, d_model, generator=claim_generator(seed, 7))  # (1, T, d_model)
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
    layer = SelfAttention(d_model, d_k=d_k, d_v=d_v, generator=claim_generator(seed, 8)).eval()
    x = torch.randn(T, d_model, generator=claim_generator(seed, 9))  # (T, d_model)
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
        x = torch.randn(1, T, d, generator=claim_generator(seed, 10))  # (1, T, d)
        q = x[None]  # (1, 1, T, d): q = k = v
        with torch.no_grad():
            ratios[T] = Fraction(_counts(F.scaled_dot_product_attention, q, q, q), _counts(rnn, x))
    crossover = cost.crossover_length(d, d, d, d)
    holds = all(ratio == Fraction(T, d) for T, ratio in ratios.items()) and crossover == d
    return holds, {"d": d, "ratios": ratios, "crossover": crossover,
                   "first_length_attention_costs_more": cost.first_length_attention_costs_more(d, d, d, d)}


def check_l8(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L8: at T = 32d attention does 32 times the multiplications yet does not take 32 times as long, because
    its work is spread over few links of a chain; the recurrence's is cut into T links.

    What holds is ``time_ratio < work_ratio`` (time does not follow work), not that attention is faster:
    ``time_ratio`` (SDPA over ``nn.RNN``) may be above 1. ``*_blocks`` are the timed blocks behind each median.
    """
    import torch
    import torch.nn.functional as F

    from seqlab.measure.timing import measure_time
    from seqlab.measure.trace import measure_span

    T, d = sizes.time_length, sizes.time_width
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    x = torch.randn(1, T, d, generator=claim_generator(seed, 11))  # (1, T, d)
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
                   "recurrence_blocks": len(recurrence.samples), "attention_blocks": len(attention.samples),
                   "noisy": recurrence.noisy or attention.noisy, "multiplications_per_link": per_link}


def check_l9(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L9: the lesson's worked numbers at d = 512, counted on ``nn.RNN`` and SDPA, with the chain depths."""
    import torch
    import torch.nn.functional as F

    from seqlab.layers.attention import Attention
    from seqlab.layers.recurrent import ElmanRNN

    d, g = 512, claim_generator(seed, 12)
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    small = ElmanRNN(4, 4, generator=g).eval()
    rows, holds = {}, True
    for T in sizes.worked_lengths:
        x = torch.randn(1, T, d, generator=g)  # (1, T, d)
        with torch.no_grad():
            counted = (_counts(rnn, x), _counts(F.scaled_dot_product_attention, x[None], x[None], x[None]))
        closed = (cost.recurrence_multiplications(T, d, d), cost.attention_multiplications(T, d, d))
        tiny = torch.randn(T, 4, generator=g)  # the chain does not depend on the width
        spans = (span_products(small, tiny), span_products(Attention("dot"), tiny, tiny, tiny))
        rows[T] = {"recurrence": counted[0], "attention": counted[1], "ratio": cost.work_ratio(T, d, d, d, d),
                   "span_recurrence": spans[0], "span_attention": spans[1]}
        holds &= counted == closed and spans == (T, 2)
    lesson = {50: (26_214_400, 2_560_000), 1000: (524_288_000, 1_024_000_000)}  # the lesson's own figures
    holds &= all((rows[T]["recurrence"], rows[T]["attention"]) == pair for T, pair in lesson.items() if T in rows)
    return holds, {"d": d, "lengths": rows}
