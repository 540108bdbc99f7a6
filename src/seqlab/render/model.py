"""Render a :class:`~seqlab.studies.model.ModelResult`: two tables, sentences and the α heat map (L4, L10, L11).

Results in, pictures out: nothing here measures. The first table groups the measured modules by
their place in a layer (the same module of layers 1…L on one row) with the pattern the dependency
matrices showed; the second puts the order test of every depth side by side, without and with the
position vectors; the sentences say what was measured and whether it is what the lesson says.
:func:`plot_attention` draws α of the chosen layer and head (matplotlib, imported only there).

Words go through the gettext domain ``model`` (``locale/es/LC_MESSAGES/model.po``) with the
function ``tr``; they are English message ids.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, format_number, format_source, translator
from seqlab.render.tables import FittedTable
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.studies.model import ModelResult, ModuleMixing, OrderCheck

DOMAIN = "model"
DASH = "—"
#: Most tick labels on an axis of the heat map; beyond it every k-th position is labelled.
MAX_TICKS = 40


def model_translator(lang: str) -> Callable[[str], str]:
    """The gettext function of the ``model`` domain for ``lang``.

    >>> model_translator("es")("all-to-all")
    'todas con todas'
    """
    return translator(lang, DOMAIN)


def pattern_name(pattern: str, lang: str = "en") -> str:
    """A pattern of :mod:`seqlab.measure.mixing` in words.

    >>> pattern_name("per-row", "es")
    'fila a fila'
    """
    tr = model_translator(lang)
    names = {"per-row": tr("per row"), "all-to-all": tr("all-to-all"), "causal": tr("causal"),
             "cross": tr("cross"), "partial": tr("partial"), "none": tr("none")}
    return names.get(pattern, pattern)


def _local_name(module: ModuleMixing) -> str:
    """The module's name inside its layer: ``attention.self.query``; the layer itself is ``""``."""
    if module.layer == 0:
        return module.name
    parts = module.name.split(".", 3)
    return parts[3] if len(parts) == 4 else ""


def _span(layers: list[int]) -> str:
    """1, 2, 3, 4 -> "1–4"; 1, 3 -> "1, 3"."""
    if len(layers) > 1 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(str(layer) for layer in layers)


def mixing_table(result: ModelResult, lang: str = "en") -> Table:
    """One row per module of the embeddings and per module of a layer (layers 1…L together).

    A :class:`~seqlab.render.tables.FittedTable`: module names are never cut; below about 100
    columns the Type column (the module's class) is left out to make room for them.
    """
    tr = model_translator(lang)
    groups: dict[str, list[ModuleMixing]] = {}
    for module in result.modules:
        groups.setdefault(_local_name(module), []).append(module)
    table = FittedTable(title=tr("Which modules mix positions (first {T} positions of the window)").format(
        T=result.mixing_tokens), title_justify="left", caption_justify="left", droppable=(1,), caption=tr(
        "Does output row j read input row i ≠ j? Measured in {dtype}: Jacobian probes for vectors, one token "
        "replaced at a time for token ids. Off-diagonal strength: the smallest (mixing modules) or largest "
        "(per-row modules) norm of ∂y_j/∂x_i over i ≠ j; 0 means exactly zero. Dropout is the identity in eval "
        "mode and is left out.").format(dtype=result.dtype))
    table.add_column(tr("Module"), no_wrap=True)  # query, key and value differ only in the last word
    table.add_column(tr("Type"))
    table.add_column(tr("Layers"), justify="right")
    table.add_column(tr("Pattern"))
    table.add_column(tr("Mixes"))
    table.add_column(tr("Off-diagonal strength"), justify="right")
    for local, modules in groups.items():
        layers = [m.layer for m in modules]
        patterns = {m.pattern for m in modules}
        if len(patterns) == 1:
            pattern = pattern_name(patterns.pop(), lang)
        else:
            pattern = "; ".join(f"{pattern_name(m.pattern, lang)} ({m.layer})" for m in modules)
        mixing = [m.layer for m in modules if m.mixes]
        if not mixing:
            mixes = tr("no")
        elif len(mixing) == len(modules):
            mixes = tr("yes")
        else:
            mixes = tr("layers {layers}").format(layers=_span(mixing))
        if mixing:
            strength = "≥ " + format_number(min(m.min_off_diagonal for m in modules if m.mixes), lang)
        else:
            strength = format_number(max(m.max_off_diagonal for m in modules), lang)
        name = local or tr("(the whole layer)")
        style = "bold" if mixing else ""
        table.add_row(Text(name, style=style), modules[0].kind, DASH if layers == [0] else _span(layers),
                      Text(pattern, style=style), Text(mixes, style=style), strength)
    return table


def _depth_name(depth: int, lang: str) -> str:
    tr = model_translator(lang)
    return tr("embeddings") if depth == 0 else tr("layer {layer}").format(layer=depth)


def _order_cells(check: OrderCheck, depth: int, lang: str) -> tuple[str, str]:
    tr = model_translator(lang)
    row = check.depths[depth]
    said = row.verdict or ("holds" if row.holds else "does not hold")
    if said.startswith("cannot tell at "):  # within the depth's own rounding, not settled in float64
        verdict = tr("cannot tell at {dtype}").format(dtype=said.removeprefix("cannot tell at "))
    else:
        verdict = tr("moved with the tokens") if said == "holds" else tr("changed")
    return f"{format_number(row.max_abs_change, lang)} ({format_number(row.tolerance, lang)})", verdict


def order_table(result: ModelResult, lang: str = "en") -> Table:
    """max |f(x[π]) − f(x)[π]| at every depth, without and with the position vectors (L10)."""
    tr = model_translator(lang)
    off, on = result.order_without_positions, result.order_with_positions
    table = Table(title=tr("Order (L10): the {T} tokens shuffled by one permutation (seed {seed})").format(
        T=format_integer(result.T, lang), seed=result.seed), title_justify="left", caption_justify="left",
        caption=tr("max |f(x[π]) − f(x)[π]| over every row and feature of a depth's output, beside the rounding "
                   "tolerance 64·eps·max(1, max |f|)·√T in brackets; {dtype}, eval mode.").format(
            dtype=result.dtype))
    table.add_column(tr("Output of"))
    table.add_column(tr("Position vectors off: max |Δ| (tolerance)"), justify="right")
    table.add_column(tr("Verdict"))
    table.add_column(tr("Position vectors on: max |Δ| (tolerance)"), justify="right")
    table.add_column(tr("Verdict"))
    for depth in range(len(off.depths)):
        table.add_row(_depth_name(depth, lang), *_order_cells(off, depth, lang), *_order_cells(on, depth, lang))
    return table


def _window_sentence(result: ModelResult, lang: str) -> str:
    tr = model_translator(lang)
    values = dict(source=format_source(result.source, lang), model=result.model, T=format_integer(result.T, lang),
                  kept=format_integer(result.kept_pieces, lang), total=format_integer(result.text_pieces, lang),
                  chars=format_integer(result.window_chars, lang), text_chars=format_integer(result.text_chars, lang),
                  limit=format_integer(result.max_positions, lang))
    if result.windowed and result.kept_pieces == 1:
        return tr("{source}: the window holds only the first of the text's {total} word pieces (characters 1 to "
                  "{chars} of {text_chars}), T = {T} positions with [CLS] and [SEP]; the rest of the text is left "
                  "out ({model} reads at most {limit} positions).").format(**values)
    if result.windowed:
        return tr("{source}: the window holds the first {kept} of the text's {total} word pieces (characters 1 to "
                  "{chars} of {text_chars}), T = {T} positions with [CLS] and [SEP]; the rest of the text is left "
                  "out ({model} reads at most {limit} positions).").format(**values)
    if result.text_pieces == 1:
        return tr("{source}: the text's only word piece, T = {T} positions with [CLS] and [SEP] ({model} reads at "
                  "most {limit}).").format(**values)
    return tr("{source}: all {total} word pieces of the text, T = {T} positions with [CLS] and [SEP] ({model} "
              "reads at most {limit}).").format(**values)


def _mixing_sentence(result: ModelResult, lang: str) -> str:
    tr = model_translator(lang)
    mixing = [m for m in result.modules if m.mixes]
    attention_only = all(m.mixes == m.contains_attention for m in result.modules)
    values = dict(mixing=format_integer(len(mixing), lang), total=format_integer(len(result.modules), lang),
                  rest=format_integer(len(result.modules) - len(mixing), lang))
    if attention_only and mixing and all(m.pattern == "all-to-all" for m in mixing):
        return tr("As the lesson says (L11): of the {total} modules measured, the {mixing} that mix positions are "
                  "exactly those that contain a self-attention, and each mixes all-to-all; the other {rest} — the "
                  "Q, K and V projections, dense layers, LayerNorms, the GELU feed-forward and the three embedding "
                  "tables — act on one row at a time.").format(**values)
    return tr("Not as the lesson says (L11): the modules that mix positions are not exactly those that contain a "
              "self-attention, or they do not mix all-to-all; see the table.").format(**values)


def _closest_depth(check: OrderCheck):
    """The depth whose change comes closest to its own tolerance (largest |Δ| / tolerance)."""
    return max(check.depths, key=lambda row: row.max_abs_change / row.tolerance if row.tolerance else math.inf)


def _order_sentence(result: ModelResult, lang: str) -> str:
    """L10 in a sentence; each |Δ| is named with the tolerance of its own depth."""
    tr = model_translator(lang)
    off, on = result.order_without_positions, result.order_with_positions
    last = len(on.depths) - 1
    closest = _closest_depth(off)
    values = dict(T=format_integer(result.T, lang), depth=_depth_name(closest.depth, lang),
                  off=format_number(closest.max_abs_change, lang), tol=format_number(closest.tolerance, lang),
                  layer=last, on=format_number(on.depths[last].max_abs_change, lang))
    unsettled = [row for row in (*off.depths, *on.depths) if row.verdict.startswith("cannot tell at ")]
    if unsettled:
        return tr("The order test cannot tell (L10): at {dtype} the change of {depth}, {change}, lies within its own "
                  "rounding and the float64 rerun does not settle it, so this run does not show that shuffling only "
                  "moves the rows.").format(dtype=result.dtype, depth=_depth_name(unsettled[0].depth, lang),
                                            change=format_number(unsettled[0].max_abs_change, lang))
    if all(row.holds for row in off.depths) and not on.depths[last].holds:
        return tr("As the lesson says (L10): with the position vectors off, shuffling the {T} tokens only shuffled "
                  "every layer's output rows, each depth within its own rounding tolerance (closest to it: {depth}, "
                  "max |Δ| = {off} against a tolerance of {tol}); with them on, the output of layer {layer} changed "
                  "by up to {on}. Only the position vectors tell this model the order.").format(**values)
    return tr("Not as the lesson says (L10): with the position vectors off, {depth} changed by {off} against a "
              "tolerance of {tol} there (the largest change for its tolerance); with them on, layer {layer} changed "
              "by {on}; see the table.").format(**values)


def _attention_sentences(result: ModelResult, lang: str) -> list[str]:
    tr = model_translator(lang)
    a = result.attention
    values = dict(layer=a.layer, head=a.head, T=format_integer(result.T, lang),
                  alpha=format_number(a.alpha_T1, lang), uniform=format_number(a.uniform, lang),
                  first=result.pieces[0], last=result.pieces[-1],
                  steps=format_integer(a.recurrence_steps, lang), reach=format_number(a.reach_T1, lang),
                  error=format_number(a.max_row_sum_error, lang))
    sentences = [tr("Layer {layer}, head {head} (L4): position 1 ({first}) enters the output of position {T} "
                    "({last}) through one weight, α_T1 = {alpha} (an even spread would give {uniform}); a "
                    "recurrence would put {steps} products by W_hh on that path.").format(**values)]
    if a.reach_T1 > 0:
        reach = tr("Measured backwards: ‖∂c_T/∂x_1‖ of that head through that one module is {reach}, not "
                   "zero.").format(**values)
    else:
        reach = tr("Not as the lesson says (L4): ‖∂c_T/∂x_1‖ of that head through that module measured "
                   "exactly 0.")
    sums = tr("Every row of α sums to 1 within {error}.").format(**values) if a.max_row_sum_error else \
        tr("Every row of α sums to exactly 1.")
    sentences.append(f"{reach} {sums}")
    return sentences


def run_line(result: ModelResult, lang: str = "en") -> str:
    """How it was measured: model sizes, dtype, seed, threads and versions."""
    tr = model_translator(lang)
    torch_version, transformers_version = result.versions
    threads = tr("1 thread") if result.threads == 1 else tr("{count} threads").format(count=result.threads)
    return tr("{model}: {layers} layers, {heads} heads, d_model = {d}; {dtype}, eval mode, eager attention; seed "
              "{seed}; {threads}; PyTorch {torch}, transformers {transformers}.").format(
        model=result.model, layers=result.layers, heads=result.heads, d=result.d_model, dtype=result.dtype,
        seed=result.seed, threads=threads, torch=torch_version, transformers=transformers_version)


def model_sentences(result: ModelResult, lang: str = "en", figures: tuple[Path, ...] = ()) -> list[str]:
    """The plain sentences of the report, with the heat map's files when there are some."""
    tr = model_translator(lang)
    sentences = [_window_sentence(result, lang), _mixing_sentence(result, lang), _order_sentence(result, lang),
                 *_attention_sentences(result, lang)]
    if figures:
        sentences.append(tr("Heat map of α: {files}").format(files=", ".join(str(path) for path in figures)))
    sentences.append(run_line(result, lang))
    return sentences


def render_model(result: ModelResult, lang: str = "en", figures: tuple[Path, ...] = ()) -> Group:
    """The report as one Rich renderable: the title, both tables and the sentences."""
    tr = model_translator(lang)
    title = Text(tr("A trained Transformer under the microscope: {model}").format(model=result.model), style="bold")
    return Group(title, mixing_table(result, lang), order_table(result, lang),
                 *(Text(sentence) for sentence in model_sentences(result, lang, figures)))


def _tick_positions(T: int) -> list[int]:
    """Every position when T ≤ :data:`MAX_TICKS`, else every k-th, k = ceil(T / MAX_TICKS).

    >>> _tick_positions(5), _tick_positions(48)[-3:], _tick_positions(512)[-2:]
    ([0, 1, 2, 3, 4], [42, 44, 47], [494, 511])
    """
    step = max(1, math.ceil(T / MAX_TICKS))
    ticks = list(range(0, T, step))
    ticks[-1] = T - 1  # the last position, T, is always named (its neighbour gives way)
    return ticks


def plot_attention(result: ModelResult, lang: str = "en"):
    """A matplotlib Figure: α of the chosen layer and head as a T × T heat map, α_T1 outlined.

    Colours follow a square-root scale so that small weights stay visible; ticks name the tokens.

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    from matplotlib.colors import PowerNorm
    from matplotlib.patches import Rectangle

    tr = model_translator(lang)
    a = result.attention
    T = len(a.weights)
    figure = new_figure(figsize=(9.0, 8.4), layout="constrained")
    ax = figure.subplots()
    top = max(max(row) for row in a.weights)
    image = ax.imshow(a.weights, cmap="viridis", norm=PowerNorm(gamma=0.5, vmin=0.0, vmax=top),
                      interpolation="nearest")
    ticks = _tick_positions(T)
    labels = [f"{t + 1} {result.pieces[t]}" for t in ticks]
    size = 7 if T <= MAX_TICKS else 5
    ax.set_xticks(ticks, labels, rotation=90, fontsize=size)
    ax.set_yticks(ticks, labels, fontsize=size)
    ax.add_patch(Rectangle((-0.5, T - 1.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
    # the label sits inside the axes (never on the tick labels), just above and right of the α_T1 cell,
    # on a white box so that it reads on any colour of the map
    corner = 1 / T + 0.04  # the cell's far corner, in axes fractions, and a little more
    ax.annotate(tr("α_T1 = {alpha}").format(alpha=format_number(a.alpha_T1, lang)), xy=(0, T - 1),
                xytext=(max(0.08, corner), max(0.1, corner)), textcoords="axes fraction", color="red", fontsize=9,
                ha="left", va="bottom", bbox={"boxstyle": "round,pad=0.25", "facecolor": "white", "edgecolor": "red",
                                              "linewidth": 0.8, "alpha": 0.9},
                arrowprops={"arrowstyle": "->", "color": "red"})
    ax.set_xlabel(tr("key position j (the row that is read)"))
    ax.set_ylabel(tr("query position i (the output that reads)"))
    ax.set_title(tr("{model}: attention weights α of layer {layer}, head {head} (T = {T}, rows sum to 1)").format(
        model=result.model, layer=a.layer, head=a.head, T=T), fontsize="medium")
    figure.colorbar(image, ax=ax, shrink=0.8, label=tr("α_ij (square-root colour scale)"))
    return figure


def write_attention_plot(result: ModelResult, folder: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Save the heat map as ``attention-layer{L}-head{H}.png`` and ``.svg`` in ``folder``."""
    a = result.attention
    return save_png_svg(plot_attention(result, lang), Path(folder) / f"attention-layer{a.layer}-head{a.head}")


def model_json(result: ModelResult) -> str:
    """The whole result (every module, both order checks, α) as JSON: indented, each row of α on one line."""
    from seqlab.render.json_output import compact_json, to_jsonable

    return compact_json(to_jsonable(result))
