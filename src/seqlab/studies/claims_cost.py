"""The work claims of ``seqlab check``: multiplications counted against the closed forms, at two scopes (L5–L7, L9).

One function per claim, ``check_lN(sizes, seed)``, builds small seeded layers, counts the multiplications
their forward passes make and compares the counts with the closed forms of :mod:`seqlab.cost` and
:mod:`seqlab.scopes`, returning a :class:`~seqlab.studies.verdicts.Judgement`. One multiply-add is one
multiplication, the lesson's unit. Every count carries its *source* (:attr:`seqlab.measure.work.WorkCount.source`):
``"pytorch"`` when PyTorch's own ``torch.utils.flop_counter`` formulas counted it (independent of seqlab's
closed forms), ``"seqlab"`` when only seqlab's formula for a fused kernel did. The fused CPU SDPA kernel is
counted by seqlab's formula; the same call on the meta device (:func:`seqlab.measure.work.count_on_meta`)
decomposes into ``bmm`` and is counted by PyTorch's, which is the independent count compared. An op the
counter cannot account for raises, so a count is never short in silence.

====  =====================================================================================================
L5    multiplications counted on the loop, on ``nn.RNN`` and on ``nn.RNN`` on meta = T(d_h² + d_h·d_model)
L6    counted on the hand-written call, on SDPA on meta (PyTorch's formulas) and on the fused CPU SDPA
      (seqlab's formula, labelled so) = T²(d_k + d_v); the projections counted apart = T·d_model(2d_k + d_v)
L7    lesson scope: counted ratio SDPA / ``nn.RNN`` = T/d at T = d/2, d, 2d, crossover at T = d; layer scope:
      ``nn.MultiheadAttention`` (one head and H heads, Q, K, V and W_O) / ``nn.RNN`` (W_xh included) =
      2 + T/d, counted on meta and against :func:`seqlab.cost.attention_layer_multiplications`
L9    the worked numbers at d = 512, counted at d = 512 (``nn.RNN`` on the CPU, SDPA and the multi-head
      layer on meta), against the lesson's figures; chains traced at two small widths (the chain length
      does not depend on the width, measured)
====  =====================================================================================================

Verdicts: a count that differs from its closed form (exact integers) or from the lesson's own figure does not
hold. L6 holds *with a caveat* when neither the hand-written call nor SDPA on meta was counted by PyTorch's own
formulas (``seqlab_formula_only``: no count independent of seqlab's). L7 and L9 hold *with a caveat* when, at layer scope with equal widths, attention is counted to cost
more than the recurrence at every T measured (the lesson's crossover exists only at its own scope); they
hold plainly only if the layer scope were measured to cross too.

Shapes: T positions, d_model input width, d_h hidden width, d_k / d_v query-key / value widths, d one width
for all, H heads.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab import cost, scopes
from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.studies.claims import CheckSizes, claim_generator, span_products
from seqlab.studies.verdicts import Judgement, verdict_of

#: The lesson's own worked figures at d = 512 (L9): T -> (recurrence, attention) multiplications.
LESSON_FIGURES = {50: (26_214_400, 2_560_000), 1000: (524_288_000, 1_024_000_000)}


def _count(function, *args, meta: bool = False, **kwargs):
    """The :class:`~seqlab.measure.work.WorkCount` of ``function(*args)`` (on meta if asked, no data
    allocated); raises if an op ran that the counter cannot account for."""
    import torch

    from seqlab.measure import work

    with torch.no_grad():
        counter = work.count_on_meta if meta else work.count_multiplications
        counted = counter(function, *args, **kwargs)
    if counted.unaccounted:
        raise SeqlabError(N_("ops with no multiplication count ran: {ops}"), ops=dict(counted.unaccounted))
    return counted


def _sdpa(q):
    """SDPA with q = k = v: (1, 1, T, d) -> (1, 1, T, d)."""
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q, q, q)


def _layer_counts(d: int, lengths, heads: tuple[int, ...], recurrences: dict | None = None) -> dict[int, dict]:
    """Layer scope per T: ``nn.RNN`` (W_xh and W_hh) counted on the CPU (or taken from ``recurrences``, T ->
    its count, when the caller has it), ``nn.MultiheadAttention`` with each number of heads counted on meta
    (Q, K, V, the call and W_O), and the closed form of both."""
    import torch

    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    layers = {h: torch.nn.MultiheadAttention(d, h, batch_first=True).eval() for h in heads}
    rows = {}
    for T in lengths:
        x = torch.zeros(1, T, d)  # (1, T, d): the values do not change the count
        recurrence = (recurrences or {}).get(T) or _count(rnn, x)
        attention = {h: _count(layer, x, x, x, meta=True, need_weights=False) for h, layer in layers.items()}
        rows[T] = {"recurrence": recurrence.multiplications, "recurrence_source": recurrence.source,
                   "attention": {h: c.multiplications for h, c in attention.items()},
                   "attention_source": sorted({c.source for c in attention.values()}),
                   "closed_recurrence": cost.gated_recurrence_multiplications(T, d, d),
                   "closed_attention": cost.attention_layer_multiplications(T, d, d, d),
                   "ratio": {h: Fraction(c.multiplications, recurrence.multiplications) for h, c in attention.items()}}
    return rows


def _layer_verdict(rows: dict[int, dict]) -> tuple[bool, bool]:
    """(counts agree with the closed forms, attention costs more at layer scope at every T measured)."""
    agree = all(row["recurrence"] == row["closed_recurrence"]
                and all(a == row["closed_attention"] for a in row["attention"].values()) for row in rows.values())
    more = all(a > row["recurrence"] for row in rows.values() for a in row["attention"].values())
    return agree, more


def check_l5(sizes: CheckSizes, seed: int) -> Judgement:
    """L5: the recurrence multiplies once per weight per step, T(d_h² + d_h·d_model), counted three ways."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN

    T, (d_model, d_h) = sizes.count_length, sizes.count_widths
    rnn = ElmanRNN(d_model, d_h, generator=claim_generator(seed, 6)).eval()
    x = torch.randn(1, T, d_model, generator=claim_generator(seed, 7))  # (1, T, d_model)
    library = rnn.to_torch(batch_first=True)
    counts = {"counted_loop": _count(rnn, x), "counted_nn_rnn": _count(library, x),
              "counted_nn_rnn_meta": _count(library, x, meta=True)}
    closed = cost.recurrence_multiplications(T, d_model, d_h)
    holds = all(c.multiplications == closed for c in counts.values())
    return Judgement(verdict_of(not holds),
                     {"T": T, "d_model": d_model, "d_h": d_h, "closed_form": closed,
                      **{name: c.multiplications for name, c in counts.items()},
                      "sources": {name: c.source for name, c in counts.items()}},
                     {"rule": "counts_equal_closed_form", "tolerance": 0, "caveats": []})


def check_l6(sizes: CheckSizes, seed: int) -> Judgement:
    """L6: the call does T²(d_k + d_v) multiplications, counted by PyTorch's formulas on the hand-written call
    and on SDPA on meta, and by seqlab's on the fused CPU SDPA; the projections counted apart."""
    import torch
    import torch.nn.functional as F

    from seqlab.layers.attention import SelfAttention

    T, (d_k, d_v), d_model = sizes.count_length, sizes.count_widths, sizes.count_widths[0]
    layer = SelfAttention(d_model, d_k=d_k, d_v=d_v, generator=claim_generator(seed, 8)).eval()
    x = torch.randn(T, d_model, generator=claim_generator(seed, 9))  # (T, d_model)
    with torch.no_grad():
        q, k, v = layer.project(x)  # (T, d_k), (T, d_k), (T, d_v)
    counts = {"counted_call": _count(layer.attention, q, k, v),
              "counted_sdpa_meta": _count(F.scaled_dot_product_attention, q[None, None], k[None, None],
                                          v[None, None], meta=True),
              "counted_sdpa": _count(F.scaled_dot_product_attention, q[None, None], k[None, None], v[None, None]),
              "projections_counted": _count(layer.project, x)}
    closed = cost.attention_multiplications(T, d_k, d_v)
    closed_projections = cost.projection_multiplications(T, d_model, d_k, d_v)
    sources = {name: c.source for name, c in counts.items()}
    independent = [name for name in ("counted_call", "counted_sdpa_meta") if sources[name] == "pytorch"]
    holds = (all(counts[name].multiplications == closed for name in ("counted_call", "counted_sdpa_meta",
                                                                       "counted_sdpa"))
             and counts["projections_counted"].multiplications == closed_projections)
    caveats = [] if independent else ["seqlab_formula_only"]
    return Judgement(verdict_of(not holds, caveats),
                     {"T": T, "d_model": d_model, "d_k": d_k, "d_v": d_v, "closed_form": closed,
                      "projections_closed_form": closed_projections,
                      **{name: c.multiplications for name, c in counts.items()}, "sources": sources},
                     {"rule": "counts_equal_closed_form", "tolerance": 0, "independent": independent,
                      "caveats": caveats})


def check_l7(sizes: CheckSizes, seed: int) -> Judgement:
    """L7: with every width d, at the lesson's scope the counted ratio attention / recurrence is T/d and they
    cross at T = d; at layer scope (all weights, one head and H heads) the ratio is 2 + T/d, counted."""
    import torch

    d = sizes.crossover_width
    lengths = (d // 2, d, 2 * d)
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    ratios, sources = {}, set()
    for T in lengths:
        x = torch.randn(1, T, d, generator=claim_generator(seed, 10))  # (1, T, d)
        attention, recurrence = _count(_sdpa, x[None], meta=True), _count(rnn, x)  # q = k = v: (1, 1, T, d)
        ratios[T] = Fraction(attention.multiplications, recurrence.multiplications)
        sources |= {attention.source, recurrence.source}
    crossover = cost.crossover_length(d, d, d, d)
    layer = _layer_counts(d, lengths, sizes.layer_heads)
    agree, more = _layer_verdict(layer)
    lesson_holds = all(ratio == Fraction(T, d) for T, ratio in ratios.items()) and crossover == d
    caveats = ["layer_scope_attention_costs_more"] if more else []
    return Judgement(verdict_of(not (lesson_holds and agree), caveats),
                     {"d": d, "ratios": ratios, "crossover": crossover, "sources": sorted(sources),
                      "first_length_attention_costs_more": cost.first_length_attention_costs_more(d, d, d, d),
                      "layer": layer, "layer_crossover": scopes.layer_crossover_length(d, d, d, d)},
                     {"rule": "lesson_and_layer_scope", "lesson_ratio": "T/d", "layer_ratio": "2 + T/d",
                      "heads": sizes.layer_heads, "lesson_holds": lesson_holds, "layer_counts_agree": agree,
                      "caveats": caveats})


def _spans(T: int, widths: tuple[int, int], g) -> tuple[tuple[int, int], ...]:
    """(recurrence, attention) chain in products at T, traced at each of two small widths."""
    import torch

    from seqlab.layers.attention import Attention
    from seqlab.layers.recurrent import ElmanRNN

    spans = []
    for width in widths:
        small = ElmanRNN(width, width, generator=g).eval()
        rows = torch.randn(T, width, generator=g)  # (T, width)
        spans.append((span_products(small, rows), span_products(Attention("dot"), rows, rows, rows)))
    return tuple(spans)


def check_l9(sizes: CheckSizes, seed: int) -> Judgement:
    """L9: the lesson's worked numbers, counted at d = 512 (no data allocated for attention: on meta), with
    the layer scope beside them and the chain depths traced at two small widths."""
    import torch

    d, g = 512, claim_generator(seed, 12)
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    rows, ok, sources, recurrences = {}, True, set(), {}
    for T in sizes.worked_lengths:
        recurrence = recurrences[T] = _count(rnn, torch.zeros(1, T, d))  # (1, T, d), counted on the CPU
        attention = _count(_sdpa, torch.zeros(1, 1, T, d), meta=True)  # (1, 1, T, d), counted on meta
        sources |= {recurrence.source, attention.source}
        spans = _spans(T, sizes.span_widths, g)
        rows[T] = {"recurrence": recurrence.multiplications, "attention": attention.multiplications,
                   "ratio": Fraction(attention.multiplications, recurrence.multiplications),
                   "span_recurrence": spans[0][0], "span_attention": spans[0][1], "spans_by_width": spans}
        closed = (cost.recurrence_multiplications(T, d, d), cost.attention_multiplications(T, d, d))
        ok &= ((recurrence.multiplications, attention.multiplications) == closed == LESSON_FIGURES.get(T, closed)
               and spans[0] == spans[1] == (T, 2))
    layer = _layer_counts(d, sizes.worked_lengths, sizes.layer_heads, recurrences)  # nn.RNN: W_xh already in
    agree, more = _layer_verdict(layer)
    caveats = ["layer_scope_attention_costs_more"] if more else []
    return Judgement(verdict_of(not (ok and agree), caveats),
                     {"d": d, "lengths": rows, "layer": layer, "sources": sorted(sources),
                      "span_widths": sizes.span_widths},
                     {"rule": "lesson_figures_and_layer_scope", "lesson_figures": LESSON_FIGURES,
                      "lesson_holds": bool(ok), "layer_counts_agree": agree, "heads": sizes.layer_heads,
                      "caveats": caveats})
