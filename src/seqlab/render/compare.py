"""Render a :class:`~seqlab.studies.compare.CompareResult`: Rich tables and a few plain sentences.

Results in, pictures out: nothing here measures. Every number shown comes from the result; every
sentence is an English message id translated through :func:`seqlab.i18n.translator`. Two tables: the
machines side by side (Elman RNN, attention, LSTM, GRU: chain, path, reach, order, time) and the work at
three scopes (:mod:`seqlab.render.compare_scopes`); then the sentences (:mod:`seqlab.render.compare_prose`).
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, format_number, format_source, plural_translator, translator
from seqlab.render import compare_prose as prose
from seqlab.render.compare_format import DASH, MIN_BLOCKS, Formatter, timed_blocks, timing_quality
from seqlab.render.compare_scopes import scope_sentences, scopes_table
from seqlab.render.signal_path import cell_words
from seqlab.studies.compare import CompareResult
from seqlab.render.tables import FittedTable

#: Kept for callers of the former private name (tests, the bench renderer imports the helpers below).
_Formatter = Formatter

__all__ = ["MIN_BLOCKS", "caption", "compare_sentences", "compare_table", "render_compare", "timed_blocks",
           "timing_quality"]


#: The operations of one attention call, in order, for the scores whose call is a fixed list (L2's three for dot;
#: the scaled score divides by √d_k): the attention column's span names what it counts.
CALL_STEPS = {"dot": ("Q Kᵀ", "softmax", "A V"), "scaled_dot": ("Q Kᵀ", "÷√d_k", "softmax", "A V")}


def _call_span(result: CompareResult, f: Formatter) -> str:
    """Attention's operations in a row with their scope: the call alone (Q, K, V given), its steps listed when
    the measured count is that list's length (3 for the lesson's dot score, 4 with the ÷√d_k of scaled_dot)."""
    ops, steps = result.attention.span.ops, CALL_STEPS.get(result.score)
    scope = (f._("the call: {steps}").format(steps=", ".join(steps)) if steps and len(steps) == ops
             else f._("the call alone, score {score}").format(score=result.score))
    return f"{f.integer(ops)} ({scope})"


def _gated_cells(result: CompareResult, cell) -> list[str]:
    """One cell per gated layer (LSTM, GRU), or dashes when the result has none."""
    return [cell(g) for g in result.gated] if result.gated else [DASH, DASH]


def _timing_threads(result: CompareResult, f: Formatter) -> str:
    """The timings' thread count in words (every time shown states it)."""
    return plural_translator(f.lang)("{count} thread", "{count} threads", result.threads).format(count=result.threads)


def _time_label(result: CompareResult, f: Formatter, timed: str, untimed: str) -> str:
    """A wall-time row's label: with the timings' threads when something was timed (``--no-time``: none)."""
    if result.load is None:  # nothing was timed: no thread count to state
        return untimed
    return timed.format(threads=_timing_threads(result, f))


def _rows(result: CompareResult, f: Formatter, detailed: bool) -> list[tuple[str, ...]]:
    _ = f._
    rec, att = result.recurrence, result.attention
    gated = lambda cell: _gated_cells(result, cell)  # noqa: E731
    factor = lambda reach: DASH if reach.factor_per_step() is None else f.number(reach.factor_per_step())  # noqa: E731
    narrow = lambda g: g.path_width if g.path_width < result.d_h else None  # noqa: E731
    signal = lambda reading: cell_words(reading, f.lang)  # noqa: E731
    sensitivity = result.sensitivity
    rec_reach = f.reach(rec.reach)
    if sensitivity is not None:
        rec_reach += " " + (_("chaotic: {low} to {high} under 1e-7 perturbations") if sensitivity.chaotic else
                            _("stable under 1e-7 perturbations")).format(low=f.number(sensitivity.low),
                                                                         high=f.number(sensitivity.high))
    readings = [r for r in (att.reach_quarter, att.reach_half, att.reach) if r is not None]
    trend = DASH if len(readings) < 2 else ", ".join(
        _("{value} at T = {T}").format(value=f.number(r.first), T=f.integer(r.position + 1)) for r in readings)
    rows = [
        (_("Span: operations in a row"), f.integer(rec.span.ops), _call_span(result, f),
         *gated(lambda g: f.integer(g.span.ops))),
        (_("Span: matrix products in a row"), f.integer(rec.span.products), f.integer(att.span.products),
         *gated(lambda g: f.integer(g.span.products))),
        (_("Path from position 1 to T: matrix products (ops)"), f.path(rec.path), f.path(att.path),
         *gated(lambda g: f.path(g.path, narrow(g)))),
        (_("Signal path, 1 to T: factors met (—: none declared)"),
         signal(rec.signal), signal(att.signal),
         *gated(lambda g: signal(g.signal))),
        (_("Reach from position 1 to T, ‖∂y_T/∂x_1‖"), rec_reach, f.reach(att.reach),
         *gated(lambda g: f.reach(g.reach))),
        (_("Reach per step, end to end"), factor(rec.reach), factor(att.reach),
         *gated(lambda g: factor(g.reach))),
        (_("Reach against T (attention)"), DASH, trend, DASH, DASH),
        (_("Gate bypass (PyTorch's notation)"), DASH, DASH, *gated(lambda g: f"{g.bypass}\n({g.update})")),
        (_("Token rows shuffled"), f.order(rec.order), f.order(att.order), DASH, DASH),
        (_("Keys and values shuffled together"), f.order(rec.key_value_order), f.order(att.key_value_order),
         DASH, DASH),
        (_time_label(result, f, _("Wall time on {threads}, the library layer"), _("Wall time, the library layer")),
         f.time(rec.time_library), f.time(att.time_layer), *gated(lambda g: f.time(g.time_library))),
        (_time_label(result, f, _("Wall time on {threads}, the call alone (SDPA)"),
                     _("Wall time, the call alone (SDPA)")), DASH, f.time(att.time_library), DASH, DASH),
    ]
    if detailed:
        rows += _detail_rows(result, f)
    return rows


def _detail_rows(result: CompareResult, f: Formatter) -> list[tuple[str, ...]]:
    _ = f._
    rec, att = result.recurrence, result.attention
    layer = {scope.name: scope for scope in result.scopes}.get("layer")

    def unaccounted(machine) -> str:
        names = {**machine.counted.unaccounted,
                 **(machine.counted_library.unaccounted if machine.counted_library is not None else {})}
        return ", ".join(sorted(names)) or _("none")

    def per_link(work: int | None, span) -> str:
        return DASH if work is None or not span.products else f.integer(work // span.products)

    gated_work = {g.cell: layer.get(g.cell).counted if layer is not None and layer.get(g.cell) else None
                  for g in result.gated}
    decay = lambda m: DASH if f.decay(m.reach) is None else f.number(f.decay(m.reach))  # noqa: E731
    return [
        (_time_label(result, f, _("Wall time on {threads}, explicit machine"), _("Wall time, explicit machine")),
         f.time(rec.time_explicit), f.time(att.time_explicit), DASH, DASH),
        (_("Reach decay per step (log-linear fit)"), decay(rec), decay(att),
         *_gated_cells(result, decay)),
        (_("Reach estimator, dtype"), f"{rec.reach.estimator}, {rec.reach.dtype}",
         f"{att.reach.estimator}, {att.reach.dtype}", *_gated_cells(result, lambda g: g.reach.estimator)),
        (_("Operations in the pass (work in ops)"), f.integer(rec.span.total_ops), f.integer(att.span.total_ops),
         *_gated_cells(result, lambda g: f.integer(g.span.total_ops))),
        (_("Multiplications per link of the chain"),
         per_link(rec.counted.multiplications, rec.span), per_link(att.counted.multiplications, att.span),
         *_gated_cells(result, lambda g: per_link(gated_work[g.cell], g.span))),
        (_("Ops the counter could not account for"), unaccounted(rec), unaccounted(att), DASH, DASH),
    ]


def compare_table(result: CompareResult, lang: str = "en", detailed: bool = False) -> Table:
    """The side-by-side Rich table: one row per measurement, the four machines as columns."""
    f = Formatter(lang)
    _ = f._
    table = FittedTable(title=_("Recurrence against attention"), caption=caption(result, lang), title_justify="left",
                  caption_justify="left")
    table.add_column(_("Measurement"))
    table.add_column(_("Recurrence (Elman RNN, L1)"))
    table.add_column(_("Attention ({score}, L2)").format(score=result.score))
    table.add_column(_("LSTM (nn.LSTM)"))
    table.add_column(_("GRU (nn.GRU)"))
    for row in _rows(result, f, detailed):
        table.add_row(*row)
    return table


def caption(result: CompareResult, lang: str = "en") -> str:
    """One line saying what was measured: text, T, widths, seed, threads, PyTorch."""
    _, ngettext = translator(lang), plural_translator(lang)
    return _("{source}: T = {T} tokens ({tokenizer}); d_model = {d_model}, d_h = {d_h}, d_k = {d_k}, "
             "d_v = {d_v}; spectral radius of W_hh {radius}; seed {seed}; {threads}; "
             "PyTorch {torch}; multiplications = multiply-adds (FLOPs = 2×)").format(
        source=format_source(result.source, lang), T=format_integer(result.T, lang), tokenizer=result.tokenizer,
        d_model=result.d_model, d_h=result.d_h, d_k=result.d_k, d_v=result.d_v,
        radius=format_number(result.spectral_radius, lang), seed=result.seed,
        threads=ngettext("{count} thread", "{count} threads", result.threads).format(count=result.threads),
        torch=result.torch_version)


def compare_sentences(result: CompareResult, lang: str = "en") -> list[str]:
    """Plain sentences stating what the numbers show for this T and d: work at each scope, span, path and
    reach (with its sensitivity), LSTM and GRU, order, time."""
    f = Formatter(lang)
    widths = (result.d_model, result.d_h, result.d_k, result.d_v)
    sentences = scope_sentences(result.scopes, result.T, widths, result.heads, lang)
    sentences += [prose.span_sentence(result, f), prose.reach_sentence(result, f)]
    sentences += [s for s in (prose.sensitivity_sentence(result, f), prose.attention_trend_sentence(result, f),
                              prose.gated_sentence(result, f)) if s]
    sentences.append(prose.order_sentence(result, f))
    return sentences + prose.time_sentences(result, f)


def render_compare(result: CompareResult, lang: str = "en", detailed: bool = False) -> Group:
    """Tables and sentences as one Rich renderable."""
    sentences = [Text(sentence) for sentence in compare_sentences(result, lang)]
    parts = [compare_table(result, lang, detailed)]
    if result.scopes:
        parts.append(scopes_table(result.scopes, result.heads, lang))
    return Group(*parts, *sentences)
