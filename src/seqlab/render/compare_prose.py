"""``compare``'s sentences on chains, paths, reach, order and time: each conclusion read from a measurement.

Every sentence that concludes something names the measured figure it rests on, and its words change when
that figure does (a test patches each one): who has the longer chain, whether the gate bypass shortens the
path in products, whether the recurrence's reach is chaotic (its spread under 1e-7 weight perturbations,
:mod:`seqlab.measure.sensitivity`), whether attention's reach falls with T, and which machine finishes first
at the call's and at the layer's scope — only as the interleaved rounds decide it, with the ratio's spread over
the rounds, the thread count and the busy-machine caveat; otherwise the sentence says it is not judged and why.
"""

from __future__ import annotations


from seqlab.i18n import format_seconds, plural_translator
from seqlab.measure.rounds import Decision
from seqlab.measure.timing import Timing
from seqlab.render.compare_format import Formatter, timed_blocks, timing_quality
from seqlab.render.machine_load import busy_caveat
from seqlab.render.compare_scopes import heads_text
from seqlab.studies.claims_time import undecided_reason
from seqlab.studies.compare import CompareResult
from seqlab.studies.compare_reach import ReachTrend, reach_trend

#: Attention's reach "falls with T" when it scales as T^a with a below this (1/T would be -1).
FALLS_EXPONENT = -0.25


def span_sentence(result: CompareResult, f: Formatter) -> str:
    """How many ops must run one after another in each machine, and how that grows from T/2 to T (L1, L2)."""
    rec, att = result.recurrence, result.attention
    return f._("The recurrence must run {rec_ops} operations one after another ({rec_products} matrix products); "
               "attention's call needs {att_ops} ({att_products} products). From T = {half} to T = {T} the "
               "recurrence's chain grows by {rec_growth} operations and attention's by {att_growth}.").format(
        rec_ops=f.integer(rec.span.ops), rec_products=f.integer(rec.span.products),
        att_ops=f.integer(att.span.ops), att_products=f.integer(att.span.products),
        half=f.integer(result.T // 2), T=f.integer(result.T),
        rec_growth=f.integer(rec.span.ops - rec.span_half.ops), att_growth=f.integer(att.span.ops - att.span_half.ops))


def reach_sentence(result: CompareResult, f: Formatter) -> str:
    """Path and reach from position 1 to T, with a per-step factor that agrees with the reach beside it (L3, L4)."""
    rec, att = result.recurrence, result.attention
    text = ""
    products = rec.path.products[0][-1], att.path.products[0][-1]
    if None not in products:
        text = f._("Position 1's signal crosses {rec} matrix products to reach position T through the recurrence, "
                   "and {att} through attention.").format(rec=f.integer(products[0]), att=f.integer(products[1])) + " "
    factor = rec.reach.factor_per_step()
    if factor is None:
        text += f._("Its gradient arrives with norm {rec} through the recurrence and {att} through attention.").format(
            rec=f.reach(rec.reach), att=f.reach(att.reach))
    else:
        text += f._("Its gradient arrives with norm {rec} through the recurrence — {near} at distance 0, times "
                    "{factor} per step over {steps} steps — and {att} through attention.").format(
            rec=f.reach(rec.reach), near=f.number(rec.reach.norms[rec.reach.position]), factor=f.number(factor),
            steps=f.integer(rec.reach.position), att=f.reach(att.reach))
    return text


def sensitivity_sentence(result: CompareResult, f: Formatter) -> str | None:
    """Whether the recurrence's reach is a property of the layer or of one draw (ρ > 1 only, L3)."""
    s = result.sensitivity
    if s is None:
        return None
    values = dict(radius=f.number(result.spectral_radius), relative=f.number(s.relative), draws=len(s.perturbed),
                  low=f.number(s.low), high=f.number(s.high), orders=f.orders(s.spread_orders))
    if s.chaotic:
        return f._("At spectral radius {radius} the recurrence's reach is chaotic: perturbing W_hh by a relative "
                   "{relative} ({draws} seeded draws) moves it between {low} and {high}, {orders} orders of magnitude; "
                   "the figure above is one draw, not a property of the layer.").format(**values)
    return f._("At spectral radius {radius} the recurrence's reach is stable: perturbing W_hh by a relative {relative} "
               "({draws} seeded draws) keeps it between {low} and {high} ({orders} orders of magnitude).").format(
        **values)


def attention_trend_sentence(result: CompareResult, f: Formatter) -> str | None:
    """Attention's reach against T, fitted as a power over T/4, T/2 and T: the path stays one weight long, the weight
    shrinks as keys are added (L4). None when the lengths do not support a trend
    (:func:`~seqlab.studies.compare_reach.reach_trend`: three lengths spanning 4×)."""
    att = result.attention
    trend = reach_trend((att.reach_quarter, att.reach_half, att.reach))
    if trend is None:
        return None
    values = dict(readings=_readings(trend, f), exponent=f.number(trend.exponent))
    if trend.exponent < FALLS_EXPONENT:
        return f._("Through attention the path stays one weight long at every length, but the weight shrinks as "
                   "the softmax spreads over more keys: position 1's reach is {readings}, about T^{exponent}."
                   ).format(**values)
    return f._("Through attention the path stays one weight long, and position 1's reach does not fall with the "
               "length: {readings} (about T^{exponent}).").format(**values)


def _readings(trend: ReachTrend, f: Formatter) -> str:
    """"0.1 at T = 16, 0.05 at T = 32 and 0.025 at T = 64", in the output language."""
    parts = [f._("{value} at T = {T}").format(value=f.number(value), T=f.integer(T))
             for T, value in zip(trend.lengths, trend.reaches, strict=True)]
    return f._("{first} and {last}").format(first=", ".join(parts[:-1]), last=parts[-1])


def gated_sentence(result: CompareResult, f: Formatter) -> str | None:
    """LSTM and GRU: the chain is as long, the path in products shorter through the bypass, the reach measured (L3)."""
    gated = {g.cell: g for g in result.gated}
    if set(gated) != {"lstm", "gru"}:
        return None
    lstm, gru, rec = gated["lstm"], gated["gru"], result.recurrence
    rec_products = rec.path.products[0][-1]
    paths = [g.path.products[0][-1] for g in (lstm, gru)]
    values = dict(lstm_ops=f.integer(lstm.span.ops), gru_ops=f.integer(gru.span.ops),
                  products=f.integer(lstm.span.products), lstm_update=lstm.update, gru_update=gru.update,
                  lstm_bypass=lstm.bypass, gru_bypass=gru.bypass,
                  lstm_path=f.path(lstm.path), gru_path=f.path(gru.path), rec_path=f.path(rec.path),
                  width=f.integer(lstm.path_width), lstm_reach=f.reach(lstm.reach), gru_reach=f.reach(gru.reach),
                  rec_reach=f.reach(rec.reach))
    text = f._("LSTM and GRU do not shorten the chain: {lstm_ops} and {gru_ops} operations in a row, still one W_hh "
               "product per step ({products}).").format(**values)
    if None not in paths and rec_products is not None and max(paths) < rec_products:
        text += " " + f._("Their bypass — {lstm_bypass} in PyTorch's LSTM, {lstm_update}; {gru_bypass} in its GRU, "
                          "{gru_update} — carries position 1 past every W_hh: its path to T crosses {lstm_path} and "
                          "{gru_path} matrix products (operations), against {rec_path} in the Elman "
                          "recurrence.").format(**values)
    else:
        text += " " + f._("Their bypass ({lstm_bypass}, {gru_bypass}) did not shorten the path in products here: "
                          "{lstm_path} and {gru_path} against {rec_path} in the Elman recurrence.").format(**values)
    if lstm.path_width < result.d_h:
        text += " " + f._("(Paths traced at d = {width}: their length does not depend on the width.)").format(**values)
    factors = [g.reach.factor_per_step() for g in (lstm, gru)]
    values.update(lstm_factor=f.number(factors[0]) if factors[0] else "—",
                  gru_factor=f.number(factors[1]) if factors[1] else "—")
    text += " " + f._("Position 1's gradient arrives with norm {lstm_reach} and {gru_reach} "
                      "(Elman: {rec_reach}).").format(**values)
    if None not in factors and max(factors) < 1:
        text += " " + f._("With these untrained weights the gates do not hold the bypass open, so the signal still "
                          "fades, by ×{lstm_factor} and ×{gru_factor} per step: the bypass lets it survive only where "
                          "the gates learn to keep it open.").format(**values)
    elif None not in factors:
        text += " " + f._("The bypass keeps it from fading: ×{lstm_factor} and ×{gru_factor} per "
                          "step.").format(**values)
    return text


def order_sentence(result: CompareResult, f: Formatter) -> str:
    """Shuffled rows: only attention's outputs come out merely shuffled (L10)."""
    rec, att = result.recurrence, result.attention
    unsettled = [r for r in (att.order, att.key_value_order, rec.order)
                 if r is not None and r.verdict.startswith("cannot tell at ")]
    if unsettled:
        return f._("At {dtype} the order test cannot tell: a change of {change} lies within the layer's own rounding "
                   "and the float64 rerun does not settle it, so equivariance is not shown.").format(
            dtype=unsettled[0].dtype, change=f.number(unsettled[0].max_abs_change))
    if att.order.verdict == "holds" and rec.order.verdict == "does not hold":
        return f._("Shuffling the tokens only shuffles attention's outputs, while it changes the recurrence's "
                   "by up to {change}: attention alone cannot tell the order.").format(
            change=f.number(rec.order.max_abs_change))
    return f._("The order test did not come out as the lesson says (see the table).")


def _caveat(f: Formatter, *timings: Timing) -> str:
    quality = timing_quality(*timings)
    if quality == "few":
        blocks = min(timed_blocks(t) for t in timings)
        few = f._("a rough figure: timed in {blocks} blocks, too few for a spread").format(blocks=blocks)
        return " (" + (f._("a rough figure: timed in one block, so no spread was measured") if blocks == 1 else
                       few) + ")"
    if quality == "noisy":
        return " (" + f._("noisy: the spread is over a tenth of the median, the machine was busy") + ")"
    return ""


def _threads(f: Formatter, count: int) -> str:
    return plural_translator(f.lang)("{count} thread", "{count} threads", count).format(count=count)


def _faster(decision: Decision, rec: Timing, att: Timing, f: Formatter, words: dict[str, str], **extra: str) -> str:
    """The sentence for ``decision`` (nn.RNN against one attention machine, :func:`seqlab.measure.rounds.decide`):
    who finishes first and by how much with the lead's spread over the rounds, a tie within the margin, or not
    judged with the ratio's spread and why. ``words`` maps each outcome (``attention``, ``recurrence``, ``tie``,
    ``not_judged``) to its message."""
    low, high = decision.low, decision.high
    if decision.outcome == "a_first":  # the recurrence first: its lead is the inverse ratio
        low, high = 1 / decision.high, 1 / decision.low
    key = {"b_first": "attention", "a_first": "recurrence"}.get(decision.outcome, decision.outcome)
    why = ""
    if not decision.decided:
        reason = undecided_reason(decision)
        why = {"straddles": f._("across the ×{margin} margin"),
               "quickest_disagree": f._("the quickest rounds disagree"),
               "clocks_disagree": f._("the wall clock's winner is not the CPU clock's: other work took the cores"),
               "few_rounds": f._("too few rounds to decide")}[reason].format(margin=f.number(decision.margin))
    return words[key].format(threads=_threads(f, rec.threads), rec=format_seconds(rec.median_s, f.lang),
                             att=format_seconds(att.median_s, f.lang), ratio=f.number(decision.lead),
                             low=f.number(low), high=f.number(high), rounds=f.integer(decision.rounds),
                             margin=f.number(decision.margin), why=why, **extra)


def time_sentences(result: CompareResult, f: Formatter) -> list[str]:
    """Which machine finishes first, at the call's and at the layer's scope, only as the interleaved rounds decide
    it (:attr:`CompareResult.time_decisions`), each with its spread over the rounds and its thread count (L8)."""
    rec, att = result.recurrence.time_library, result.attention
    decisions = {d.b: d for d in result.time_decisions}
    sentences = []
    if rec is not None and att.time_library is not None and att.time_library.label in decisions:
        sentences.append(_faster(decisions[att.time_library.label], rec, att.time_library, f, {
            "attention": f._("On {threads} nn.RNN takes {rec} and SDPA (the attention call alone) {att}: attention "
                             "finishes {ratio} times as fast (×{low}–{high} over {rounds} interleaved rounds)."),
            "recurrence": f._("On {threads} nn.RNN takes {rec} and SDPA (the attention call alone) {att}: the "
                              "recurrence finishes {ratio} times as fast (×{low}–{high} over {rounds} interleaved "
                              "rounds)."),
            "tie": f._("On {threads} nn.RNN takes {rec} and SDPA (the attention call alone) {att}: about as fast, "
                       "within ×{margin} either way (nn.RNN / SDPA ×{low}–{high} over {rounds} interleaved rounds)."),
            "not_judged": f._("On {threads} nn.RNN takes {rec} and SDPA (the attention call alone) {att}: which "
                              "finishes first is not judged, since the time ratio nn.RNN / SDPA spread ×{low}–{high} "
                              "over {rounds} interleaved rounds ({why}).")}))
    if rec is not None and att.time_layer is not None and att.time_layer.label in decisions:
        sentences.append(_faster(decisions[att.time_layer.label], rec, att.time_layer, f, {
            "attention": f._("At layer scope on {threads} nn.MultiheadAttention ({heads}) takes {att}: attention "
                             "finishes {ratio} times as fast as nn.RNN (×{low}–{high} over {rounds} interleaved "
                             "rounds)."),
            "recurrence": f._("At layer scope on {threads} nn.MultiheadAttention ({heads}) takes {att}: the "
                              "recurrence finishes {ratio} times as fast (×{low}–{high} over {rounds} interleaved "
                              "rounds)."),
            "tie": f._("At layer scope on {threads} nn.MultiheadAttention ({heads}) takes {att}: about as fast as "
                       "nn.RNN, within ×{margin} either way (×{low}–{high} over {rounds} interleaved rounds)."),
            "not_judged": f._("At layer scope on {threads} nn.MultiheadAttention ({heads}) takes {att}: whether it "
                              "finishes before nn.RNN is not judged, since their time ratio spread ×{low}–{high} over "
                              "{rounds} interleaved rounds ({why}).")}, heads=heads_text(result.heads, f.lang)))
    times = [g.time_library for g in result.gated]
    if len(times) == 2 and None not in times:
        sentences.append(f._("On {threads} nn.LSTM takes {lstm} and nn.GRU {gru}{caveat}.").format(
            threads=_threads(f, times[0].threads), lstm=format_seconds(times[0].median_s, f.lang),
            gru=format_seconds(times[1].median_s, f.lang), caveat=_caveat(f, *times)))
    caveat = busy_caveat(result.load, f.lang)
    if sentences and caveat:
        sentences.append(caveat)
    return sentences
