"""Render a :class:`~seqlab.studies.compare.CompareResult`: a Rich table and a few plain sentences.

Results in, pictures out: nothing here measures. Every number shown comes from the result; every
sentence is an English message id translated through :func:`seqlab.i18n.translator`.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.errors import SeqlabError
from seqlab.i18n import format_fraction, format_integer, format_number, format_seconds, format_source, translator
from seqlab.measure.order import OrderResult
from seqlab.measure.paths import PathMatrix
from seqlab.measure.reach import Reach
from seqlab.measure.timing import Timing
from seqlab.measure.work import WorkCount
from seqlab.studies.compare import CompareResult, MachineMeasurements

DASH = "—"
#: Fewest timed blocks whose interquartile range means anything; below it no IQR is shown.
MIN_BLOCKS = 3


def timed_blocks(timing: Timing) -> int:
    """How many timed blocks the median comes from (``Timing.runs`` counts calls, not blocks)."""
    return len(timing.samples)


def timing_quality(*timings: Timing | None) -> str | None:
    """Why some of ``timings`` should be read loosely: ``"few"`` (a timing from fewer than 3 timed blocks,
    so no spread was measured), ``"noisy"`` (a spread over a tenth of the median, or torch warned: the
    machine was busy), or None when every one is steady.

    ``Timing.noisy`` also holds for fewer than 3 blocks; the two causes are told apart here, so the words
    say which one it was.
    """
    present = [timing for timing in timings if timing is not None]
    if any(timed_blocks(timing) < MIN_BLOCKS for timing in present):
        return "few"
    if any(timing.noisy for timing in present):
        return "noisy"
    return None


class _Formatter:
    """Language-bound helpers so the row builders stay short."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._ = translator(lang)

    def integer(self, value: int) -> str:
        return format_integer(value, self.lang)

    def number(self, value: float) -> str:
        return format_number(value, self.lang)

    def time(self, timing: Timing | None) -> str:
        """Median with its spread and the number of timed blocks; no IQR from fewer than 3 blocks (L8)."""
        if timing is None:
            return DASH
        median, blocks = format_seconds(timing.median_s, self.lang), timed_blocks(timing)
        if blocks == 1:
            return self._("{median} (one timed block, no spread)").format(median=median)
        if blocks < MIN_BLOCKS:
            return self._("{median} ({blocks} timed blocks, no spread)").format(median=median, blocks=blocks)
        text = self._("{median} (IQR {spread}, {blocks} timed blocks)").format(
            median=median, spread=format_seconds(timing.iqr_s, self.lang), blocks=blocks)
        return text + (" " + self._("noisy") if timing.noisy else "")

    def path(self, path: PathMatrix) -> str:
        products, ops = path.products[0][-1], path.ops[0][-1]
        if products is None:
            return self._("no path")
        return f"{self.integer(products)} ({self.integer(ops)})"

    def reach(self, reach: Reach) -> str:
        if reach.first == 0.0:
            return self._("0: below the smallest {dtype} ({floor})").format(
                dtype=reach.dtype, floor=self.number(reach.smallest_subnormal))
        return self.number(reach.first)

    def decay(self, reach: Reach) -> float | None:
        try:
            return reach.decay_per_step()
        except SeqlabError:  # fewer than two representable norms: nothing to fit
            return None

    def counted(self, counted: WorkCount | None, closed_form: int) -> str:
        if counted is None:
            return DASH
        counted = counted.multiplications
        mark = "= " + self._("formula") if counted == closed_form else "≠ " + self._("formula")
        return f"{self.integer(counted)} ({mark})"

    def order(self, result: OrderResult | None) -> str:
        if result is None:
            return DASH
        change = self.number(result.max_abs_change)
        if result.kind == "rows":
            verdict = self._("outputs shuffled the same way") if result.holds else self._("outputs change")
        else:
            verdict = self._("outputs unchanged") if result.holds else self._("outputs change")
        return f"{verdict} (max |Δ| = {change})"


def _rows(result: CompareResult, f: _Formatter, detailed: bool) -> list[tuple[str, str, str]]:
    _ = f._
    rec, att = result.recurrence, result.attention
    rows = [
        (_("Multiplications, closed form (L5, L6)"), f.integer(rec.closed_form),
         f.integer(att.closed_form)),
        (_("Multiplications counted, explicit machine"),
         f.counted(rec.counted, rec.closed_form), f.counted(att.counted, att.closed_form)),
        (_("Multiplications counted, nn.RNN / SDPA"),
         f.counted(rec.counted_library, rec.closed_form), f.counted(att.counted_library, att.closed_form)),
        (_("Q, K, V projections (apart from the formula)"), DASH,
         f.counted(att.projections_counted, att.projections_closed_form)),
        (_("Span: operations in a row"), f.integer(rec.span.ops), f.integer(att.span.ops)),
        (_("Span: matrix products in a row"), f.integer(rec.span.products), f.integer(att.span.products)),
        (_("Path from position 1 to T: matrix products (ops)"), f.path(rec.path), f.path(att.path)),
        (_("Reach from position 1 to T, ‖∂y_T/∂x_1‖"), f.reach(rec.reach), f.reach(att.reach)),
        (_("Token rows shuffled"), f.order(rec.order), f.order(att.order)),
        (_("Keys and values shuffled together"), f.order(rec.key_value_order), f.order(att.key_value_order)),
        (_("Wall time, nn.RNN / SDPA"), f.time(rec.time_library), f.time(att.time_library)),
    ]
    if detailed:
        rows += _detail_rows(rec, att, f)
    return rows


def _detail_rows(rec: MachineMeasurements, att: MachineMeasurements, f: _Formatter) -> list[tuple[str, str, str]]:
    _ = f._

    def unaccounted(machine: MachineMeasurements) -> str:
        names = {**machine.counted.unaccounted,
                 **(machine.counted_library.unaccounted if machine.counted_library is not None else {})}
        return ", ".join(sorted(names)) or _("none")

    return [
        (_("Wall time, explicit machine"), f.time(rec.time_explicit), f.time(att.time_explicit)),
        (_("Reach decay per step (log-linear fit)"), *(DASH if f.decay(m.reach) is None else
                                                        f.number(f.decay(m.reach)) for m in (rec, att))),
        (_("Reach estimator, dtype"), f"{rec.reach.estimator}, {rec.reach.dtype}",
         f"{att.reach.estimator}, {att.reach.dtype}"),
        (_("Operations in the pass (work in ops)"), f.integer(rec.span.total_ops), f.integer(att.span.total_ops)),
        (_("Parallelism: operations / span"), f.number(rec.span.parallelism), f.number(att.span.parallelism)),
        (_("Ops the counter could not account for"), unaccounted(rec), unaccounted(att)),
    ]


def compare_table(result: CompareResult, lang: str = "en", detailed: bool = False) -> Table:
    """The side-by-side Rich table: one row per measurement, recurrence and attention as columns."""
    f = _Formatter(lang)
    _ = f._
    table = Table(title=_("Recurrence against attention"), caption=caption(result, lang), title_justify="left",
                  caption_justify="left")
    table.add_column(_("Measurement"))
    table.add_column(_("Recurrence (Elman RNN, L1)"))
    table.add_column(_("Attention ({score}, L2)").format(score=result.score))
    for row in _rows(result, f, detailed):
        table.add_row(*row)
    return table


def caption(result: CompareResult, lang: str = "en") -> str:
    """One line saying what was measured: text, T, widths, seed, threads, PyTorch."""
    _ = translator(lang)
    return _("{source}: T = {T} tokens ({tokenizer}); d_model = {d_model}, d_h = {d_h}, d_k = {d_k}, "
             "d_v = {d_v}; spectral radius of W_hh {radius}; seed {seed}; {threads} threads; "
             "PyTorch {torch}; multiplications = multiply-adds (FLOPs = 2×)").format(
        source=format_source(result.source, lang), T=format_integer(result.T, lang), tokenizer=result.tokenizer, d_model=result.d_model,
        d_h=result.d_h, d_k=result.d_k, d_v=result.d_v, radius=format_number(result.spectral_radius, lang),
        seed=result.seed, threads=result.threads, torch=result.torch_version)


def _work_sentence(result: CompareResult, f: _Formatter) -> str:
    _ = f._
    ratio = result.work_ratio
    values = dict(T=f.integer(result.T), d=result.d_model, ratio=format_fraction(ratio, f.lang))
    if result.crossover is None:
        return _("At T = {T} and d_model = {d}, attention does {ratio} times the recurrence's "
                 "multiplications; with this score it does more at every length.").format(**values)
    values["crossover"] = format_fraction(result.crossover, f.lang)
    if ratio < 1:
        message = _("At T = {T} and d_model = {d}, attention does {ratio} times the recurrence's "
                    "multiplications: less work, below the crossover at T = {crossover}.")
    elif ratio > 1:
        message = _("At T = {T} and d_model = {d}, attention does {ratio} times the recurrence's "
                    "multiplications: more work, past the crossover at T = {crossover}.")
    else:
        message = _("At T = {T} and d_model = {d} both machines do the same number of multiplications: "
                    "this is the crossover.")
    return message.format(**values)


def _span_sentence(result: CompareResult, f: _Formatter) -> str:
    rec, att = result.recurrence, result.attention
    return f._("The recurrence must run {rec_ops} operations one after another ({rec_products} matrix products); "
               "attention's call needs {att_ops} ({att_products} products). From T = {half} to T = {T} the "
               "recurrence's chain grows by {rec_growth} operations and attention's by {att_growth}.").format(
        rec_ops=f.integer(rec.span.ops), rec_products=f.integer(rec.span.products),
        att_ops=f.integer(att.span.ops), att_products=f.integer(att.span.products),
        half=f.integer(result.T // 2), T=f.integer(result.T),
        rec_growth=f.integer(rec.span.ops - rec.span_half.ops), att_growth=f.integer(att.span.ops - att.span_half.ops))


def _reach_order_sentence(result: CompareResult, f: _Formatter) -> str:
    rec, att = result.recurrence, result.attention
    reach = f._("Its gradient arrives with norm {rec} through the recurrence and {att} "
                "through attention.").format(rec=f.reach(rec.reach), att=f.reach(att.reach))
    products = rec.path.products[0][-1], att.path.products[0][-1]
    if None not in products:
        reach = f._("Position 1's signal crosses {rec} matrix products to reach position T through the "
                    "recurrence, and {att} through attention.").format(
            rec=f.integer(products[0]), att=f.integer(products[1])) + " " + reach
    decays = f.decay(rec.reach), f.decay(att.reach)
    if None not in decays:
        reach += " " + f._("Per step of distance the gradient is multiplied by about {rec} through the recurrence "
                           "and {att} through attention.").format(rec=f.number(decays[0]), att=f.number(decays[1]))
    if att.order.holds and not rec.order.holds:
        order = f._("Shuffling the tokens only shuffles attention's outputs, while it changes the recurrence's "
                    "by up to {change}: attention alone cannot tell the order.").format(
            change=f.number(rec.order.max_abs_change))
    else:
        order = f._("The order test did not come out as the lesson says (see the table).")
    return f"{reach} {order}"


def _time_sentence(result: CompareResult, f: _Formatter) -> str | None:
    rec, att = result.recurrence.time_library, result.attention.time_library
    if rec is None or att is None:
        return None
    ratio = rec.median_s / att.median_s
    message = f._("On {threads} threads nn.RNN takes {rec} and SDPA {att}: attention finishes {ratio} times "
                  "as fast{caveat}.") if ratio >= 1 else f._("On {threads} threads nn.RNN takes {rec} and SDPA "
                                                             "{att}: the recurrence finishes {ratio} times as "
                                                             "fast{caveat}.")
    quality = timing_quality(rec, att)
    if quality == "few":
        blocks = min(timed_blocks(rec), timed_blocks(att))
        caveat = " (" + (f._("a rough figure: timed in one block, so no spread was measured") if blocks == 1 else
                         f._("a rough figure: timed in {blocks} blocks, too few for a spread").format(
                             blocks=blocks)) + ")"
    elif quality == "noisy":
        caveat = " (" + f._("noisy: the spread is over a tenth of the median, the machine was busy") + ")"
    else:
        caveat = ""
    return message.format(threads=rec.threads, rec=format_seconds(rec.median_s, f.lang),
                          att=format_seconds(att.median_s, f.lang),
                          ratio=f.number(ratio if ratio >= 1 else 1 / ratio), caveat=caveat)


def compare_sentences(result: CompareResult, lang: str = "en") -> list[str]:
    """Plain sentences stating what the numbers show for this T and d (work, span, reach, order, time)."""
    f = _Formatter(lang)
    sentences = [_work_sentence(result, f), _span_sentence(result, f), _reach_order_sentence(result, f)]
    timing = _time_sentence(result, f)
    return sentences + ([timing] if timing else [])


def render_compare(result: CompareResult, lang: str = "en", detailed: bool = False) -> Group:
    """Table and sentences as one Rich renderable."""
    sentences = [Text(sentence) for sentence in compare_sentences(result, lang)]
    return Group(compare_table(result, lang, detailed), *sentences)

