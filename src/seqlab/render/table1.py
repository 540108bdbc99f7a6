"""Render Table 1 as measured (:class:`~seqlab.studies.table1.Table1Result`) and a module's profile.

Results in, pictures out: nothing here measures. A Rich table puts each measured growth beside the
paper's entry with a ✓ or ✗, a second one shows the raw figures at the largest T, a few sentences
say what the numbers show, and :func:`plot_table1` draws work, span and path against T on log axes
(matplotlib, imported only there). Sentences come from the gettext domain ``seqlab``
(``locale/es/LC_MESSAGES/seqlab.po``) through the function ``tr``; they are English message ids.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.fit import MISMATCH as MISMATCH_VERDICT
from seqlab.fit import NOT_SEPARATED
from seqlab.glossary import NOTATION
from seqlab.i18n import N_, format_integer, plural_translator, translator
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.render.signal_path import reading_words
from seqlab.render.tables import FittedTable
from seqlab.studies.profile import ProfileResult
from seqlab.studies.table1 import Cell, Fit, Table1Result

DOMAIN = "seqlab"
DASH = "—"
MATCH, MISMATCH = "✓", "✗"


def _tr(lang: str):
    return translator(lang, DOMAIN)


def layer_name(layer: str, result: Table1Result | None, lang: str) -> str:
    """The layer type as a reader calls it, with its kernel or window."""
    tr = _tr(lang)
    kernel = result.kernel if result is not None else "k"
    window = result.window if result is not None else "r"
    names = {
        "self_attention": tr("Self-attention"),
        "rnn": tr("Recurrent (Elman RNN)"),
        "lstm": tr("Recurrent (LSTM)"),
        "gru": tr("Recurrent (GRU)"),
        "convolution": tr("Convolutional, contiguous (k = {kernel})").format(kernel=kernel),
        "dilated_convolution": tr("Convolutional, dilated (k = {kernel})").format(kernel=kernel),
        "restricted": tr("Self-attention, restricted (r = {window})").format(window=window),
    }
    return names[layer]


def _decimal(value: float, lang: str) -> str:
    """Two decimals with the language's separator; -0.00 reads 0.00."""
    from babel.numbers import format_decimal

    value = round(value, 2) + 0.0
    return format_decimal(value, format="0.00", locale=lang)


def growth(fit: Fit, lang: str, variable: str = "n") -> str:
    """A fitted growth as text: the form the verdict chose (``n²``, ``n``, ``log n``, ``1``: y ≈ a + b·f(n) with
    the closed forms' lower-order terms, :func:`seqlab.fit.choose_form`); a two-point fit, which chooses no form,
    as its power law ``n^2.00``."""
    if fit.form is not None:
        return fit.form.replace("T", variable)
    return f"log {variable}" if fit.model == "log" else f"{variable}^{_decimal(fit.exponent, lang)}"


#: The mark of a cell whose lengths cannot separate the paper's form from another (judged neither way).
UNJUDGED = "?"


def _mark(matches: bool) -> str:
    return MATCH if matches else MISMATCH


def _cell_text(cell: Cell, lang: str) -> str:
    """``✓ n^2.00 · O(n²·d)``: the verdict, the measured growth, the paper's entry (``?`` when the lengths cannot
    separate the paper's form from the one chosen)."""
    mark = UNJUDGED if cell.verdict == NOT_SEPARATED else _mark(cell.matches)
    return f"{mark} {growth(cell.fit, lang)} · {cell.paper}"


def _widths(result: Table1Result) -> list[int]:
    return list(result.d_models)


def table1_table(result: Table1Result, d_model: int, lang: str = "en") -> Table:
    """Layer type × (work, sequential operations, path): measured growth, the paper's entry, verdict."""
    tr = _tr(lang)
    title = tr("Table 1 of \"Attention Is All You Need\", measured (d = {d})").format(d=d_model)
    table = FittedTable(title=title, title_justify="left", caption=caption(result, lang), caption_justify="left")
    table.add_column(tr("Layer type"))
    legend = tr("measured · paper")
    for heading in (tr("Complexity per layer"), tr("Sequential operations"), tr("Maximum path length")):
        table.add_column(f"{heading}\n{legend}")
    for row in (r for r in result.rows if r.d_model == d_model):
        cells = (_cell_text(cell, lang) for cell in (row.work, row.span, row.path))
        table.add_row(layer_name(row.layer, result, lang), *cells)
    return table


def raw_table(result: Table1Result, d_model: int, lang: str = "en") -> Table:
    """The figures behind the fits at the largest T: counted work, span and path, and the stack depth."""
    tr = _tr(lang)
    T = result.lengths[-1]
    table = FittedTable(title=tr("Measured at T = {T}, d = {d}").format(T=T, d=d_model), title_justify="left")
    table.add_column(tr("Layer type"))
    table.add_column(tr("Multiplications (one layer)"), justify="right")
    table.add_column(tr("Sequential ops of one layer (products)"), justify="right")
    table.add_column(tr("Path ops (products)"), justify="right")
    table.add_column(tr("Layers to connect all"), justify="right")
    for row in (r for r in result.rows if r.d_model == d_model):
        sample = row.samples[-1]
        formula = ("= " + tr("formula")) if sample.multiplications == sample.closed_form else \
            ("≠ " + tr("formula") + " " + format_integer(sample.closed_form, lang))
        path = DASH if sample.path_ops is None else \
            f"{format_integer(sample.path_ops, lang)} ({format_integer(sample.path_products, lang)})"
        table.add_row(layer_name(row.layer, result, lang),
                      f"{format_integer(sample.multiplications, lang)} ({formula})",
                      f"{format_integer(sample.span_ops, lang)} ({format_integer(sample.span_products, lang)})",
                      path, format_integer(sample.depth, lang))
    return table


def width_table(result: Table1Result, lang: str = "en") -> Table | None:
    """Work against d at the largest T (only when several widths were measured)."""
    if not result.width_fits:
        return None
    tr = _tr(lang)
    table = FittedTable(title=tr("Work against d at T = {T}").format(T=result.width_fits[0].T), title_justify="left")
    table.add_column(tr("Layer type"))
    table.add_column(tr("Complexity per layer") + "\n" + tr("measured · paper"))
    for fit in result.width_fits:
        table.add_row(layer_name(fit.layer, result, lang), f"{_mark(fit.matches)} {growth(fit.fit, lang, 'd')} · "
                      f"d^{_decimal(fit.expected_exponent, lang)}")
    return table


def caption(result: Table1Result, lang: str = "en") -> str:
    """One line saying what was measured and how."""
    tr = _tr(lang)
    return tr("n = T = {lengths}; d = {widths}; kernel k = {kernel}; window r = {window}; {dtype}, seed {seed}, "
              "CPU threads: {threads}; PyTorch {torch}; multiplications = multiply-adds (FLOPs = 2×)").format(
        lengths=", ".join(str(T) for T in result.lengths), widths=", ".join(str(d) for d in result.d_models),
        kernel=result.kernel, window=result.window, dtype=result.dtype, seed=result.seed, threads=result.threads,
        torch=result.torch_version)


def table1_sentences(result: Table1Result, lang: str = "en") -> list[str]:
    """What the numbers show: verdict count, the scope of each column, the depth of each stack, caveats."""
    tr = _tr(lang)
    sentences = []
    if result.all_match:
        sentences.append(tr("All {cells} cells agree with the paper: of the forms a + b·f(n) (f = 1, log n, √n, n, "
                            "n log n, n^1.5, n², with the lower-order terms of the closed forms), the one that fits "
                            "each measured series best is the paper's.").format(cells=result.cells))
    else:
        columns = (tr("work"), tr("sequential operations"), tr("path"))
        named = [(f"{layer_name(row.layer, result, lang)} ({column})", cell) for row in result.rows
                 for column, cell in zip(columns, (row.work, row.span, row.path))]
        failing = [name for name, cell in named if cell.verdict == MISMATCH_VERDICT]
        failing += [f"{layer_name(w.layer, result, lang)} (d)" for w in result.width_fits if not w.matches]
        unseparated = [f"{name}: {cell.other.replace('T', 'n')}" for name, cell in named
                       if cell.verdict == NOT_SEPARATED]
        if failing:
            sentences.append(tr("{matched} of {cells} cells agree with the paper; these do not: {cells_list}."
                                ).format(matched=result.matched, cells=result.cells, cells_list="; ".join(failing)))
        else:
            sentences.append(tr("{matched} of {cells} cells agree with the paper, and none disagrees.").format(
                matched=result.matched, cells=result.cells))
        if unseparated:
            sentences.append(tr("These lengths cannot tell the paper's form from another that fits as well (marked "
                                "?, judged neither way; lengths farther apart would): {cells_list}.").format(
                cells_list="; ".join(unseparated)))
    differing = sum(s.multiplications != s.closed_form for row in result.rows for s in row.samples)
    scope = tr("Work is the multiplications of one layer, counted while it runs; for the two attention types only "
               "the attention call (scores and mix), without the Q, K, V projections, as the paper counts it.")
    if differing:
        scope += " " + tr("{count} counts differ from their closed form (see --json).").format(count=differing)
    else:
        scope += " " + tr("Every count equals its closed form.")
    sentences.append(scope)
    largest = [row for row in result.rows if row.d_model == result.d_models[-1]]
    depths = {row.layer: row.samples[-1].depth for row in largest}
    if {"convolution", "dilated_convolution", "restricted"} <= depths.keys():
        sentences.append(tr("Sequential operations are the span of one layer and path lengths the least operations "
                            "from position 1 to n, on the shallowest stack that connects every pair: at T = {T} "
                            "that is {contiguous} contiguous convolutions, {dilated} dilated ones and {restricted} "
                            "restricted attention layers.").format(
            T=result.lengths[-1], contiguous=depths["convolution"], dilated=depths["dilated_convolution"],
            restricted=depths["restricted"]))
    else:
        sentences.append(tr("Sequential operations are the span of one layer and path lengths the least operations "
                            "from position 1 to n, on the shallowest stack that connects every pair."))
    gated = [row for row in largest if row.layer in ("lstm", "gru") and row.path_products_fit.model == "power"
             and row.path_products_fit.exponent < 0.5 <= row.path.fit.exponent]
    if gated:
        names = {("lstm",): tr("the LSTM"), ("gru",): tr("the GRU"), ("lstm", "gru"): tr("the LSTM and the GRU")}
        sentences.append(tr("Counted in matrix products, the path through {layers} does not grow: an additive bypass "
                            "(the LSTM's {lstm_bypass}, the GRU's {gru_bypass}, in PyTorch's notation) carries "
                            "position 1 to the end without crossing W_hh. Counted in operations it grows as n, like "
                            "the Elman RNN's (L3: a bypass, not a shortcut).").format(
            layers=names[tuple(sorted((row.layer for row in gated), key=("lstm", "gru").index))],
            lstm_bypass=NOTATION["lstm_bypass"], gru_bypass=NOTATION["gru_bypass"]))
    dilated = [row for row in result.rows if row.layer == "dilated_convolution" and not row.path.matches]
    if dilated:
        base = (result.kernel + 1) // 2
        sentences.append(tr("The dilated stack's depth, ⌈log_{base} T⌉ layers, rises in steps at the powers of {base}; "
                            "lengths that are powers of {base} (for instance {example}) show its logarithm without "
                            "the steps.").format(base=base, example=",".join(str(base**p) for p in range(2, 6))))
    unaccounted = sorted({name for row in result.rows for s in row.samples for name in s.unaccounted})
    fallbacks = sorted({name for row in result.rows for s in row.samples for name in s.fallbacks})
    if unaccounted or fallbacks:
        sentences.append(tr("Ops the engine could not account for: {names}.").format(
            names=", ".join(unaccounted + fallbacks)))
    return sentences


def render_table1(result: Table1Result, lang: str = "en") -> Group:
    """Every table and sentence as one Rich renderable."""
    parts: list = []
    for d in _widths(result):
        parts += [table1_table(result, d, lang), raw_table(result, d, lang)]
    widths = width_table(result, lang)
    if widths is not None:
        parts.append(widths)
    parts += [Text(sentence) for sentence in table1_sentences(result, lang)]
    return Group(*parts)


def table1_figure(result: Table1Result, lang: str = "en"):
    """Work, sequential operations and path length against T (log axes), one line per layer type.

    One line per layer type (and width, when several). The figure is drawn on an off-screen Agg canvas
    (:func:`seqlab.render.figures.new_figure`, no pyplot, no backend switched), so neither
    ``import seqlab`` nor the table needs matplotlib, and a notebook's own settings stay as they were.

    Returns:
        A ``matplotlib.figure.Figure`` with three axes.

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    tr = _tr(lang)
    panels = ((tr("Work per layer (multiplications)"), lambda s: s.multiplications),
              (tr("Sequential operations (ops)"), lambda s: s.span_ops),
              (tr("Maximum path length (ops)"), lambda s: s.path_ops))
    figure = new_figure(figsize=(15, 5.5), layout="constrained")
    axes = figure.subplots(1, 3)
    markers = "os^vD<>"
    for axis, (title, value) in zip(axes, panels):
        for index, row in enumerate(result.rows):
            points = [(s.T, value(s)) for s in row.samples if value(s) is not None]
            label = layer_name(row.layer, result, lang)
            if len(result.d_models) > 1:
                label += f" (d = {row.d_model})"
            axis.plot([t for t, _ in points], [v for _, v in points], marker=markers[index % len(markers)],
                      label=label)
        axis.set_xscale("log", base=2)
        axis.set_xticks(list(result.lengths), [str(T) for T in result.lengths])
        axis.minorticks_off()
        axis.set_yscale("log")
        axis.set_title(title)
        axis.set_xlabel(tr("sequence length T"))
        axis.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=4, fontsize="small")
    figure.suptitle(tr("Table 1 of \"Attention Is All You Need\", measured"))
    return figure


def plot_table1(result: Table1Result, stem: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Draw :func:`table1_figure` and save it as ``stem``.png and .svg.

    Returns:
        The paths of the PNG and the SVG written.

    Raises:
        OSError: the files cannot be written.
    """
    return save_png_svg(table1_figure(result, lang), Path(stem))


# --- seqlab profile ----------------------------------------------------------------------------------

def _check_words(check, lang: str) -> str:
    """What the perturbation check found: agreement, its disagreement (then the paths are a bound), or not run."""
    tr = _tr(lang)
    if check is None:
        return tr("not run")
    if check.agrees:
        return tr("agrees with the trace ({route})").format(
            route=" + ".join(tr(part) for part in check.route.split(" + ")))
    return check.describe(tr) + " " + tr("(the paths are a bound)")


def _names(counts: dict[str, int], lang: str) -> str:
    tr = _tr(lang)
    return ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items())) or tr("none")


def _pair(products: int | None, ops: int | None, lang: str, exact: bool = True) -> str:
    """A path in both units; ``exact`` False: a lower bound (an op was refused and taken as all-to-all)."""
    tr = _tr(lang)
    if products is None or ops is None:
        return tr("not connected")
    ngettext = plural_translator(lang)
    counted_products = ngettext("{count} product", "{count} products", products)
    counted_ops = ngettext("{count} op", "{count} ops", ops)
    both = tr("{products}, {ops}").format(products=counted_products.format(count=format_integer(products, lang)),
                                          ops=counted_ops.format(count=format_integer(ops, lang)))
    return tr("at least {path} (a bound)").format(path=both) if not exact else both


def _positions_text(sources: tuple[int, ...]) -> str:
    """The source positions of the paths, 1-based as the table's rows count them (the tracer's are 0-based); the
    first eight, then an ellipsis.

    >>> _positions_text((0, 15))
    '1, 16'
    """
    return ", ".join(str(s + 1) for s in sources[:8]) + (", …" if len(sources) > 8 else "")


#: How :attr:`ProfileResult.layout_found` reads in a table (the layout's own letters follow).
_LAYOUT_FOUND = {"named": N_("{layout}, named"),
                 "shapes": N_("{layout}, from the shapes"),
                 "as_given": N_("{layout} as given (the shapes cannot tell)")}


def _output_words(result: ProfileResult, lang: str) -> str:
    """Which output was measured: the module's tensor, or element i (its key) of a container of n, with its shape."""
    tr = _tr(lang)
    shape = tuple(result.output_shape)
    if result.output_index is None:
        return tr("the tensor returned, {shape}").format(shape=shape)
    element = tr("{index} of {count}").format(index=format_integer(result.output_index, lang),
                                             count=format_integer(result.output_count or 0, lang))
    if result.output_key is not None:
        element = f"{result.output_key!r}, {element}"
    return f"{element}, {shape}"


def _layout_words(result: ProfileResult, lang: str) -> str:
    """Where x holds its positions and how that was decided."""
    from seqlab.measure.layout import LAYOUTS

    return _tr(lang)(_LAYOUT_FOUND[result.layout_found]).format(layout=LAYOUTS[result.layout])


def profile_table(result: ProfileResult, lang: str = "en") -> Table:
    """A module's work, span and path (Table 1's three columns) as a two-column Rich table."""
    tr = _tr(lang)
    path = result.path
    table = FittedTable(title=tr("Profile of {module}").format(module=result.module), title_justify="left",
                  caption=tr("input {shape}, {dtype}; CPU threads: {threads}; PyTorch {torch}; paths measured "
                             "from positions {sources}").format(
                      shape=tuple(result.shape), dtype=result.dtype, threads=result.threads,
                      torch=result.torch_version, sources=_positions_text(path.sources)),
                  caption_justify="left")
    table.add_column(tr("Measurement"))
    table.add_column(tr("Value"))
    rows = [(tr("Output measured (element, shape)"), _output_words(result, lang)),
            (tr("Where the input holds its positions"), _layout_words(result, lang)),
            (tr("Multiplications counted"), format_integer(result.multiplications, lang))]
    if result.padded_multiplications is not None:  # nested tensors ran: the count above is on real tokens
        rows.append((tr("Multiplications with every sequence padded"),
                     format_integer(result.padded_multiplications, lang)))
    rows += [
        (tr("Ops the counter could not account for"), _names(result.unaccounted, lang)),
        (tr("Span: operations in a row"), format_integer(result.span_ops, lang)),
        (tr("Span: matrix products in a row"), format_integer(result.span_products, lang)),
        (tr("Operations in the pass (work in ops)"), format_integer(result.total_ops, lang)),
        (tr("Fused kernels whose inner chain is unseen"), _names(result.fused, lang)),
        (tr("Longest path"), _pair(path.longest_products, path.longest_ops, lang, path.exact)),
        (tr("Path from position 1 to T"), _pair(path.first_to_last_products, path.first_to_last_ops, lang,
                                                path.exact)),
        (tr("Path from position T to 1"), _pair(path.last_to_first_products, path.last_to_first_ops, lang,
                                                path.exact)),
        (tr("Ops the path engine refused (all-to-all: paths are bounds)"), _names(path.fallbacks, lang)),
        (tr("Perturbation check of the paths (float64)"), _check_words(path.check, lang)),
        (tr("Signal path from position 1 to T (transition factors met)"), reading_words(result.signal, lang)),
    ]
    if path.decomposed:
        rows.append((tr("Ops traced through PyTorch's decompositions"), _names(path.decomposed, lang)))
    if path.derived:
        rows.append((tr("Ops whose dependence comes from their own Jacobian"), _names(path.derived, lang)))
    if path.undefined:  # NaN outputs: no path is reported to them
        rows.append((tr("Positions whose output is undefined (NaN), no path reported"),
                     ", ".join(format_integer(p + 1, lang) for p in path.undefined)))
    for row in rows:
        table.add_row(*row)
    return table
