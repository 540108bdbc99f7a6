"""Render ``seqlab table1 --modern`` (:class:`~seqlab.studies.table1_modern.ModernResult`): six columns per row.

Results in, text out: nothing here measures. The first Rich table sets each fitted growth beside the row's
big-O with a ✓, a ✗ or a ? (not judged: its regime holds too few lengths, or they do not separate the forms;
sections: the lesson's machines, the paper's rows, the mixers); the second shows the raw figures at the largest
lengths; the third each row's source and where its big-O applies; then sentences say what the numbers show,
and why each cell not judged is not. Sentences
are English message ids of the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``).
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.fit import form_of_growth
from seqlab.i18n import format_integer, format_number, translator
from seqlab.layers import mixers
from seqlab.measure.signal_path import REASONS
from seqlab.render.signal_path import reason_words
from seqlab.render.table1 import MATCH, MISMATCH, growth
from seqlab.render.tables import FittedTable
from seqlab.studies.table1_modern import (
    NOT_JUDGED,
    SIGNAL_ABSENT,
    TENSOR_LOWER_BOUND,
    ModernCell,
    ModernResult,
    ModernRow,
)

DOMAIN = "seqlab"
DASH = "—"
#: The mark of a cell not judged (beside ✓ and ✗), as ``seqlab check`` marks a claim not judged.
UNJUDGED = "?"
#: Marks a figure that is a lower bound (the tensors' peak where the allocator's could not be read).
BOUND = "≥"


def _tr(lang: str):
    return translator(lang, DOMAIN)


def row_name(row: str, result: ModernResult, lang: str = "en") -> str:
    """The row as a reader calls it, with its kernel, window or chunk.

    >>> row_name("selective_scan", None, "es")
    'Recurrencia selectiva, scan paralelo'
    """
    tr = _tr(lang)
    k, r, C = (result.kernel, result.window, result.chunk) if result is not None else ("k", "r", "C")
    names = {
        "elman": tr("Elman RNN"),
        "self_attention": tr("Self-attention (math path)"),
        "convolution": tr("Convolution, contiguous (k = {k})").format(k=k),
        "dilated_convolution": tr("Convolution, dilated (k = {k})").format(k=k),
        "restricted": tr("Self-attention, restricted (r = {r})").format(r=r),
    }
    if row in names:
        return names[row]
    # a mixer's row: its label in the registry (seqlab.layers.mixers), a message id of this catalogue
    return tr(mixers.mixer_rows()[row][1].label).format(C=C, w=r)


def _cell(cell: ModernCell | None, lang: str, variable: str = "T") -> str:
    """``✓ T² · O(T²·d)``: the verdict, the fitted growth, the big-O; ``? O(T/r)`` for a cell whose regime holds too
    few lengths (``? 1 · O(log T)`` when its lengths do not separate the forms); a dash where nothing was measured."""
    if cell is None:
        return DASH
    if cell.verdict == NOT_JUDGED and cell.reason != "not_separated":
        return f"{UNJUDGED} {cell.paper}"
    mark = UNJUDGED if cell.verdict == NOT_JUDGED else MATCH if cell.matches else MISMATCH
    return f"{mark} {growth(cell.fit, lang, variable)} · {cell.paper}"


def modern_table(result: ModernResult, lang: str = "en") -> Table:
    """Row × (work, span, path, memory, decode cost, decode state): fitted growth · big-O, verdict."""
    tr = _tr(lang)
    table = FittedTable(title=tr("Table 1 extended: memory, decoding and the mixers that brought recurrence back "
                           "(d = {d})").format(d=result.d_model), title_justify="left",
                  caption=caption(result, lang), caption_justify="left")
    table.add_column(tr("Row"))
    legend = tr("measured · big-O")
    for heading in (tr("Work"), tr("Span (ops)"), tr("Path (ops)"), memory_heading(result, lang),
                    tr("Decode, per token"), tr("Decode state")):
        table.add_column(f"{heading}\n{legend}")
    previous = None
    for row in result.rows:
        if previous is not None and row.group != previous:
            table.add_section()
        previous = row.group
        memory = _cell(row.memory, lang)
        if row.memory_figure == TENSOR_LOWER_BOUND and memory != DASH:
            memory = f"{BOUND} {memory}"
        table.add_row(row_name(row.row, result, lang), *(_cell(c, lang) for c in (row.work, row.span, row.path)),
                      memory, _cell(row.decode, lang, "t"), _cell(row.state, lang, "t"))
    return table


def memory_heading(result: ModernResult, lang: str = "en", raw: bool = False) -> str:
    """The memory column's heading, naming its figure: the allocator's peak, or a lower bound (``≥``) where some row
    could only track the tensors ops return (:attr:`~seqlab.studies.table1_modern.ModernRow.memory_figure`).

    >>> from seqlab.studies.table1_modern import ModernConfig, run_modern
    >>> result = run_modern(ModernConfig(lengths=(2, 3, 4), long_lengths=(5, 6, 7), d_model=4, rows=("elman",)))
    >>> memory_heading(result), memory_heading(result, "es", raw=True)
    ('Peak memory (allocator)', 'Bytes en el pico (asignador)')
    """
    tr = _tr(lang)
    bounds = sum(row.memory_figure == TENSOR_LOWER_BOUND for row in result.rows)
    if raw:
        return tr("Peak bytes (allocator)") if not bounds else tr("Peak bytes (allocator; ≥: tensors only, a lower "
                                                                  "bound)")
    return tr("Peak memory (allocator)") if not bounds else tr("Peak memory (allocator; ≥: tensors only, a lower "
                                                               "bound)")


def _equals(counted: int | None, formula: int | None, lang: str) -> str:
    tr = _tr(lang)
    if counted is None:
        return DASH
    if formula is None:
        return format_integer(counted, lang)
    mark = "= " + tr("formula") if counted == formula else "≠ " + tr("formula") + " " + format_integer(formula, lang)
    return f"{format_integer(counted, lang)} ({mark})"


def _signal_cell(sample, lang: str) -> str:
    """``127 a_t (1.1e-03)``: factors met from x_1 to y_T, the factor, the reach; a dash or "not measured" else."""
    tr = _tr(lang)
    if sample.signal_factors is not None:  # a reach outside float64's range is not read (signal_path says why)
        reach = format_number(sample.signal_reach, lang) if sample.signal_reach is not None else tr("not measured")
        return f"{format_integer(sample.signal_factors, lang)} {sample.signal_factor} ({reach})"
    return DASH if sample.signal_absent in SIGNAL_ABSENT else tr("not measured")


def signal_caption(lang: str = "en") -> str:
    """What the two path columns read: the graph path's wait against the signal path's factors.

    >>> signal_caption().startswith("Path: the ops y_T waits for x_1")
    True
    """
    tr = _tr(lang)
    return tr("Path: the ops y_T waits for x_1 in the traced graph (graph path). Signal path: the transition "
              "factors (W_hh, a_t, α_ji) that multiply the signal from x_1 on its way to y_T, the k of "
              "J(s) = s^k·J(1) in float64, with the reach ‖∂y_T/∂x_1‖ in brackets. A parallel scan shortens "
              "the first and leaves the second as it was.")


def raw_table(result: ModernResult, lang: str = "en") -> Table:
    """The figures behind the fits at the largest lengths, and each row's source."""
    tr = _tr(lang)
    T, t = result.long_lengths[-1], result.long_lengths[-1]
    table = FittedTable(title=tr("Measured at T = {T} (path at T = {Tp}, on the stack that connects all positions); "
                           "decoding at t = {t}").format(T=T, Tp=result.lengths[-1], t=t), title_justify="left",
                        caption=signal_caption(lang), caption_justify="left")
    for heading, justify in ((tr("Row"), "left"), (tr("Multiplications (whole layer)"), "right"),
                             (tr("Span: ops (products)"), "right"), (tr("Path: ops (layers)"), "right"),
                             (tr("Signal path: factors 1 → T (reach)"), "right"),
                             (memory_heading(result, lang, raw=True), "right"),
                             (tr("Multiplications per token"), "right"),
                             (tr("State bytes"), "right")):
        table.add_column(heading, justify=justify)
    for row in result.rows:
        s, p = row.long[-1], row.short[-1]
        path = DASH if p.path_ops is None else f"{format_integer(p.path_ops, lang)} ({format_integer(p.depth, lang)})"
        table.add_row(row_name(row.row, result, lang), _equals(s.multiplications, s.closed_form, lang),
                      f"{format_integer(s.span_ops, lang)} ({format_integer(s.span_products, lang)})", path,
                      _signal_cell(p, lang),
                      _peak_bytes(row, s, lang), _equals(s.decode_multiplications, s.decode_closed_form, lang),
                      DASH if s.state_bytes is None else format_integer(s.state_bytes, lang))
    return table


def _peak_bytes(row: ModernRow, sample, lang: str) -> str:
    """The memory column's figure of one sample: the allocator's peak, or ``≥`` the tensors' peak (a lower bound)."""
    if row.memory_figure == TENSOR_LOWER_BOUND:
        return f"{BOUND} {format_integer(sample.peak_bytes, lang)}"
    return format_integer(sample.allocator_peak_bytes, lang)


def _column_names(lang: str) -> dict[str, str]:
    tr = _tr(lang)
    return {"work": tr("work"), "span": tr("span"), "path": tr("path"), "memory": tr("peak memory"),
            "decode": tr("decode cost"), "state": tr("decode state")}


def _size(cell: ModernCell, lang: str) -> str:
    """``the window (w = 4)``: the size that sets a cell's regime, translated."""
    return f"{_tr(lang)(cell.regime_size)} ({cell.regime_symbol})"


def regimes_text(row: ModernRow, lang: str = "en") -> str:
    """Where the row's big-O applies, column by column: ``path: T ≥ 6 (r = 4)``; every length where none is named.

    >>> from seqlab.studies.table1_modern import ModernConfig, measure_row
    >>> regimes_text(measure_row("restricted", ModernConfig(lengths=(8, 16, 32), long_lengths=(64, 128, 256),
    ...                                                      d_model=4, window=2).validated()))
    'path: T ≥ 4 (r = 2); peak memory: T ≥ 6 (r = 2)'
    """
    tr = _tr(lang)
    names = _column_names(lang)
    parts = []
    for column, cell in row.cells().items():
        if not cell.regime_size:
            continue
        start = tr("no length") if cell.regime_start is None else f"T ≥ {format_integer(cell.regime_start, lang)}"
        if cell.regime_multiple > 1:
            start = tr("{start}, multiples of {multiple}").format(start=start, multiple=cell.regime_multiple)
        parts.append(f"{names[column]}: {start} ({cell.regime_symbol})")
    return "; ".join(parts) or tr("every length")


def sources_table(result: ModernResult, lang: str = "en") -> Table:
    """Where each row's big-O comes from (paper and section, or the lesson's claims) and where it applies."""
    tr = _tr(lang)
    table = FittedTable(title=tr("Sources of the big-O entries"), title_justify="left")
    table.add_column(tr("Row"))
    table.add_column(tr("Source"))
    table.add_column(tr("Big-O applies from"))
    for row in result.rows:
        # one regime a line: a list of several never wraps as one long line (issue 37, item 4)
        table.add_row(row_name(row.row, result, lang), row.source, regimes_text(row, lang).replace("; ", ";\n"))
    return table


def caption(result: ModernResult, lang: str = "en") -> str:
    """One line saying what was measured and how."""
    tr = _tr(lang)
    text = tr("work, span, memory and decoding at T = t = {long}; path at T = {short}; d = {d}; k = {k}, r = w = {r}, "
              "C = {C}; {dtype}, seed {seed}, CPU threads: {threads}; PyTorch {torch}; multiplications = multiply-adds "
              "(FLOPs = 2×)").format(
        long=", ".join(map(str, result.long_lengths)), short=", ".join(map(str, result.lengths)), d=result.d_model,
        k=result.kernel, r=result.window, C=result.chunk, dtype=result.dtype, seed=result.seed,
        threads=result.threads, torch=result.torch_version)
    legend = tr("✓ the form fitted on the lengths where the big-O applies is the big-O's; ✗ it is another, at "
                "lengths that separate the two; ? not judged (why: below the tables)")
    return f"{text}\n{legend}"


def _by_name(result: ModernResult) -> dict[str, ModernRow]:
    return {row.row: row for row in result.rows}


def _reason(cell: ModernCell, lang: str) -> str:
    """Why ``cell`` is not judged, in words."""
    tr = _tr(lang)
    if cell.reason == "no_regime":
        return tr("with {symbol} no stack connects position 1 to T").format(symbol=cell.regime_symbol)
    if cell.reason == "below_regime" and cell.regime_multiple > 1:
        return tr("below {size}: its big-O applies at multiples of {multiple} from T = {start}, and {count} of the "
                  "lengths are (a fit needs 3)").format(size=_size(cell, lang), multiple=cell.regime_multiple,
                                                       start=format_integer(cell.regime_start, lang),
                                                       count=len(cell.lengths))
    if cell.reason == "below_regime":
        return tr("below {size}: its big-O applies from T = {start}, and {count} of the lengths reach it (a fit "
                  "needs 3)").format(size=_size(cell, lang), start=format_integer(cell.regime_start, lang),
                                     count=len(cell.lengths))
    form = form_of_growth(cell.expected.model, cell.expected.exponent) or cell.paper
    return tr("lengths do not separate {form} from {other}").format(form=form, other=cell.other)


def _verdicts(result: ModernResult, lang: str) -> list[str]:
    tr = _tr(lang)
    names = _column_names(lang)
    if result.matched == result.cells and not result.not_judged:
        return [tr("All {cells} cells show their big-O: of the forms a + b·f(T) (f = 1, log T, √T, T, T log T, T^1.5, "
                   "T², with the lower-order terms of the closed forms), the one that fits each measured series best "
                   "is the big-O's.").format(cells=result.cells)]
    if result.matched == result.cells:
        sentences = [tr("All {cells} cells judged show their big-O: of the forms a + b·f(T) (f = 1, log T, √T, T, "
                        "T log T, T^1.5, T², with the lower-order terms of the closed forms), the one that fits each "
                        "measured series best, on the lengths where the big-O applies, is the big-O's.").format(
            cells=result.cells)]
    else:
        failing = [f"{row_name(row.row, result, lang)} ({names[column]})" for row in result.rows
                   for column, cell in row.cells().items() if cell.judged and not cell.matches]
        sentences = [tr("{matched} of {cells} cells show their big-O; these do not: {cells_list}.").format(
            matched=result.matched, cells=result.cells, cells_list="; ".join(failing))]
    if result.not_judged:
        unjudged = [f"{row_name(row.row, result, lang)} ({names[column]}): {_reason(cell, lang)}"
                    for row in result.rows for column, cell in row.cells().items() if not cell.judged]
        sentences.append(tr("Not judged ({mark}), {count} cells, each an exact measurement where its big-O does not "
                            "apply yet or cannot be seen: {cells_list}.").format(
            mark=UNJUDGED, count=result.not_judged, cells_list="; ".join(unjudged)))
    return sentences


def modern_sentences(result: ModernResult, lang: str = "en") -> list[str]:
    """What the numbers show: verdicts, scopes, scan against loop, decoding, and what is missing."""
    tr = _tr(lang)
    sentences = _verdicts(result, lang)
    scope = tr("Work is the multiplications of the whole layer for every row: its input projections, its mixing and "
               "its output projection W_O wherever the original layer has one (every attention and mixer row; the "
               "Elman RNN and the convolutions have none), so the rows compare like with like (seqlab table1 counts "
               "attention's call alone, as the paper does).")
    differing = result.counts_differ
    scope += " " + (tr("{count} counts differ from their closed form (see --json).").format(count=differing)
                    if differing else tr("Every count, of a layer and of a decode step, equals its closed form."))
    sentences.append(scope)
    sentences.append(tr("Peak memory is the allocator's: the most bytes held at once by memory the forward pass "
                        "allocates, temporaries inside an op included (the allocator's events, read by torch.profiler), "
                        "inputs and weights excluded; attention runs its math path, which keeps the T×T scores and "
                        "their softmax (PyTorch's fused kernel would not)."))
    bound = [row for row in result.rows if row.memory_figure == TENSOR_LOWER_BOUND]
    if bound:
        sentences.append(tr("The allocator's events could not be taken for {rows} (another profiler was running): their "
                            "peak memory, marked ≥, is the most bytes held by the tensors ops return, between ops, a "
                            "lower bound that leaves out what an op allocates inside itself.").format(
            rows=", ".join(row_name(row.row, result, lang) for row in bound)))
    rows, T = _by_name(result), result.long_lengths[-1]
    for loop, scan in (("selective_loop", "selective_scan"), ("diagonal_loop", "diagonal_scan")):
        if loop in rows and scan in rows:
            sentences.append(tr("At T = {T} the parallel scan waits {scan} ops in a row and the loop {loop}: a linear "
                                "recurrence is associative, so a prefix scan needs about log₂ T rounds, while the "
                                "lesson's tanh recurrence must take its T steps in turn.").format(
                T=format_integer(T, lang), scan=format_integer(rows[scan].long[-1].span_ops, lang),
                loop=format_integer(rows[loop].long[-1].span_ops, lang)))
            break
    sentences.extend(_signal_sentences(result, lang))
    if "self_attention" in rows and "elman" in rows:
        kv, rnn = rows["self_attention"].long[-1], rows["elman"].long[-1]
        sentences.append(tr("To generate token t = {t}, attention with a KV cache does {kv} multiplications and holds "
                            "{kv_bytes} bytes of keys and values, both growing with t; the Elman RNN does {rnn} and "
                            "holds {rnn_bytes} bytes whatever t is.").format(
            t=format_integer(kv.T, lang), kv=format_integer(kv.decode_multiplications, lang),
            kv_bytes=format_integer(kv.state_bytes, lang), rnn=format_integer(rnn.decode_multiplications, lang),
            rnn_bytes=format_integer(rnn.state_bytes, lang)))
    if result.missing:
        sentences.append(tr("Not measured, their modules are not installed here: {rows}.").format(
            rows=", ".join(row_name(row, result, lang) for row in result.missing)))
    unaccounted = sorted({name for row in result.rows for s in row.long for name in s.unaccounted})
    if unaccounted:
        sentences.append(tr("Ops the work counter could not account for: {names}.").format(
            names=", ".join(unaccounted)))
    return sentences


def _signal_sentences(result: ModernResult, lang: str) -> list[str]:
    """Loop against scan on both readings of path at the largest short T, then the rows without a signal path."""
    tr = _tr(lang)
    rows, T = _by_name(result), result.lengths[-1]
    sentences = []
    for loop, scan in (("diagonal_loop", "diagonal_scan"), ("selective_loop", "selective_scan")):
        if loop not in rows or scan not in rows:
            continue
        a, b = rows[loop].short[-1], rows[scan].short[-1]
        if a.signal_factors is None or b.signal_factors is None or a.signal_reach is None or b.signal_reach is None:
            continue
        same = a.signal_factors == b.signal_factors and abs(a.signal_reach - b.signal_reach) <= 1e-9 * a.signal_reach
        if same:
            sentences.append(tr("At T = {T}, from x_1 to y_T, the parallel scan waits {scan} ops and the loop {loop} "
                                "({scan_row}; {loop_row}), yet in both the signal meets {factors} decays a_t and "
                                "arrives with the same reach ({reach}): the scan regroups the products, it removes "
                                "none.").format(
                T=format_integer(T, lang), scan_row=row_name(scan, result, lang),
                scan=format_integer(b.path_ops, lang), loop_row=row_name(loop, result, lang),
                loop=format_integer(a.path_ops, lang), factors=format_integer(a.signal_factors, lang),
                reach=format_number(a.signal_reach, lang)))
        else:
            sentences.append(tr("At T = {T}, {loop_row} and {scan_row} disagree on the signal path: {loop} against "
                                "{scan} factors, reach {loop_reach} against {scan_reach}.").format(
                T=format_integer(T, lang), loop_row=row_name(loop, result, lang),
                scan_row=row_name(scan, result, lang), loop=format_integer(a.signal_factors, lang),
                scan=format_integer(b.signal_factors, lang), loop_reach=format_number(a.signal_reach, lang),
                scan_reach=format_number(b.signal_reach, lang)))
    reasons = {
        "no_factor": tr("their module declares no transition factor"),
        "stack_not_measured": tr("their connecting stack is seqlab table1's, whose layers are not offered here"),
        "not_connected": tr("no stack of theirs connects position 1 to T"),
        **{reason: reason_words(reason, lang) for reason in REASONS},
    }
    for reason, words in reasons.items():
        named = [row_name(row.row, result, lang) for row in result.rows if row.short[-1].signal_absent == reason]
        if named:
            sentences.append(tr("No signal path at T = {T} — {reason}: {rows}.").format(
                T=format_integer(T, lang), reason=words, rows=", ".join(named)))
    return sentences


def render_modern(result: ModernResult, lang: str = "en") -> Group:
    """Both tables and the sentences as one Rich renderable."""
    return Group(modern_table(result, lang), raw_table(result, lang), sources_table(result, lang),
                 *(Text(sentence) for sentence in modern_sentences(result, lang)))
