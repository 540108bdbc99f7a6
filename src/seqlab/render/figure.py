"""Render a :class:`~seqlab.studies.figure.FigureResult`: Figure 1 with its measured highlights, a table (L11).

Results in, pictures out: nothing here measures. :func:`draw_figure` redraws Figure 1 of "Attention Is
All You Need" in the paper's layout — encoder column left, decoder right, data flowing upwards, each
layer's sublayers inside an N× frame, a residual link around every sublayer into its add & norm, the
encoder's output entering the encoder–decoder attention — with the fifteen boxes of the course. A box
is filled with highlighter yellow only when the measurement found it mixing positions; each box shows
its title, its measured pattern, the lesson that builds it and, at its right end, the measured
dependency matrix itself (output rows down, input rows across; dark = depends). Each box patch has the
SVG id ``box-<key>``. :func:`figure_table` lists the fifteen boxes for the terminal (Rich), as a
:class:`FittedTable`: laid out for the width it is printed at, its box names are never cut.

Words come from the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``) through ``tr``;
the study's titles and lessons are English message ids of the same catalogue. matplotlib is imported
only when a figure is drawn (object API on an Agg canvas, no pyplot).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from rich.console import Group
from rich.text import Text

from seqlab.i18n import translator
from seqlab.measure.dependence import judge
from seqlab.measure.mixing import BAND, Band
from seqlab.render.band import band_text
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.render.tables import FittedTable
from seqlab.studies.figure import BoxResult, FigureResult

DOMAIN = "seqlab"
#: Highlighter fill and edge of a box that mixes positions; plain fill and edge of the others.
MIXES_FILL, MIXES_EDGE = "#ffe44d", "#c79a00"
PLAIN_FILL, PLAIN_EDGE = "#ffffff", "#555555"
# Layout in figure inches: box size, row pitch, column centres, where residual links run.
BOX_WIDTH, BOX_HEIGHT, PITCH = 3.7, 0.74, 1.08
CENTRES = (2.85, 8.25)
BOTTOM = 1.15
RESIDUAL_OFFSET = 0.28
FIGURE_SIZE = (11.2, 12.0)
#: Characters per line of the text in the free corner above the encoder (9 pt, then 8.2 pt).
LEGEND_CHARACTERS = (78, 86)


def _patterns(tr: Callable[[str], str]) -> dict[str, str]:
    return {"per-row": tr("per-row"), "all-to-all": tr("all-to-all"), "causal": tr("causal"),
            "cross": tr("from the encoder"), "partial": tr("partial (no band width or block size fits)"),
            "blocks": tr("blocks"), "none": tr("none")}


def pattern_text(pattern: str, lang: str = "en", band: Band | None = None) -> str:
    """A measured pattern as a reader calls it; a band with its width (:func:`~seqlab.render.band.band_text`).

    >>> pattern_text("cross"), pattern_text("all-to-all", "es")
    ('from the encoder', 'todas con todas')
    >>> pattern_text("band", "en", Band(1, 1))
    'band ±1, of width 3 (|i − j| ≤ 1)'
    """
    if pattern == BAND:
        return band_text(band, lang)
    return _patterns(translator(lang)).get(pattern, pattern)


def _stacks(tr: Callable[[str], str]) -> dict[str, str]:
    return {"encoder": tr("Encoder"), "decoder": tr("Decoder")}


def heads_text(heads: int, lang: str = "en") -> str:
    """The number of heads in words, singular or plural, in the language of ``lang``.

    >>> heads_text(1), heads_text(8, "es")
    ('1 head', '8 cabezas')
    """
    tr = translator(lang)
    return tr("1 head") if heads == 1 else tr("{heads} heads").format(heads=heads)


def wrap_lines(text: str, width: int) -> list[str]:
    """``textwrap.wrap``, but a last line of a single short word takes the word before it along.

    >>> wrap_lines("d_model = 512, 8 cabezas, semilla 0.", 34)
    ['d_model = 512, 8 cabezas,', 'semilla 0.']
    """
    lines = textwrap.wrap(text, width)
    if len(lines) > 1 and len(lines[-1].split()) == 1 and len(lines[-2].split()) > 1:
        head, moved = lines[-2].rsplit(" ", 1)
        if len(moved) + 1 + len(lines[-1]) <= width:
            lines[-2:] = [head, f"{moved} {lines[-1]}"]
    return lines


def lit_sentence(result: FigureResult, lang: str = "en") -> str:
    """The closing line: how many boxes mix positions, and which, with their patterns (from the result)."""
    tr = translator(lang)
    mixing = [f"{tr(box.title)} ({pattern_text(box.pattern, lang, box.band)})" for box in result.boxes if box.mixes]
    listing = ", ".join(mixing) if mixing else tr("none")
    return tr("{count} of {total} boxes mix positions: {boxes}.").format(
        count=len(mixing), total=len(result.boxes), boxes=listing)


def figure_table(result: FigureResult, lang: str = "en") -> Group:
    """The fifteen boxes as a Rich table (stack, box, measured pattern, mixes, lesson) and two lines under it.

    The table is a :class:`FittedTable`: at any width from 80 columns up, every box name stays whole.

    The first line names the sizes and says what "mixes" means; it speaks of the built-in story, the
    text ``seqlab figure`` measures. The second is :func:`lit_sentence`. Mixing rows are bold.
    """
    tr = translator(lang)
    stacks = _stacks(tr)
    table = FittedTable(title=tr('Figure 1 of "Attention Is All You Need", box by box (L11)'), title_justify="left")
    for header in (tr("Stack"), tr("Box"), tr("Measured pattern"), tr("Mixes"), tr("Lesson")):
        table.add_column(header, no_wrap=header == tr("Box"))  # a box's name is never cut, whatever the width
    for box in result.boxes:
        style = "bold" if box.mixes else None
        table.add_row(stacks[box.stack], tr(box.title), pattern_text(box.pattern, lang, box.band),
                      tr("yes") if box.mixes else tr("no"), tr(box.lesson), style=style)
    note = tr("Measured on {source} source and {target} target tokens of the built-in story, d_model = {d_model}, "
              "{heads}, seed {seed}, float64, one layer per stack. A box mixes positions when one of its output rows "
              "depends on an input row at another position: a nonzero Jacobian block, or for token ids a row that "
              "changes when another token is replaced.").format(
        source=result.T_source, target=result.T_target, d_model=result.d_model, heads=heads_text(result.heads, lang),
        seed=result.seed)
    return Group(table, Text(note), Text(lit_sentence(result, lang)))


def _bottom(row: int) -> float:
    return BOTTOM + row * PITCH


def _shown_matrix(box: BoxResult) -> list[list[bool]]:
    """What the thumbnail shows: the read of the other stack if any, else the union of the box's inputs."""
    other = [d for d in box.dependencies if d.other_sequence]
    chosen = other or list(box.dependencies)
    rows, columns = len(chosen[0].strength), len(chosen[0].strength[0])
    judged = [judge(d.strength, torch.float64).depends for d in chosen]  # the one rule (the figure is float64)
    return [[any(m[j][i] for m in judged) for i in range(columns)] for j in range(rows)]


def _arrow(ax: Any, points: list[tuple[float, float]]) -> None:
    """A polyline through ``points`` with an arrowhead on the last segment."""
    xs, ys = zip(*points)
    ax.plot(xs[:-1], ys[:-1], color="#333333", lw=1.1, solid_joinstyle="miter")
    ax.annotate("", xy=points[-1], xytext=points[-2],
                arrowprops=dict(arrowstyle="-|>", color="#333333", lw=1.1, shrinkA=0, shrinkB=0, mutation_scale=10))


def _box(ax: Any, box: BoxResult, tr: Callable[[str], str], lang: str) -> None:
    from matplotlib.patches import FancyBboxPatch, Rectangle

    left, bottom = CENTRES[box.column] - BOX_WIDTH / 2, _bottom(box.row)
    patch = FancyBboxPatch((left, bottom), BOX_WIDTH, BOX_HEIGHT, boxstyle="round,pad=0,rounding_size=0.08",
                           facecolor=MIXES_FILL if box.mixes else PLAIN_FILL,
                           edgecolor=MIXES_EDGE if box.mixes else PLAIN_EDGE, lw=1.6 if box.mixes else 1.0, zorder=2)
    patch.set_gid(f"box-{box.key}")
    ax.add_patch(patch)
    x_text = left + 0.12
    ax.text(x_text, bottom + BOX_HEIGHT - 0.16, tr(box.title), fontsize=8.6, weight="bold", va="center", zorder=3)
    measured = tr("measured: {pattern}").format(pattern=pattern_text(box.pattern, lang, box.band))
    ax.text(x_text, bottom + BOX_HEIGHT / 2 - 0.03, measured, fontsize=7.6, va="center", zorder=3,
            color="#7a5200" if box.mixes else "#333333")
    ax.text(x_text, bottom + 0.14, tr(box.lesson), fontsize=7, style="italic", color="#555555", va="center", zorder=3)
    size = BOX_HEIGHT - 0.16
    x0, y0 = left + BOX_WIDTH - size - 0.08, bottom + 0.08
    matrix = _shown_matrix(box)
    ax.imshow(matrix, cmap="Greys", vmin=0, vmax=1.6, interpolation="nearest", extent=(x0, x0 + size, y0, y0 + size),
              zorder=3, aspect="auto")
    ax.add_patch(Rectangle((x0, y0), size, size, fill=False, edgecolor="#888888", lw=0.6, zorder=4))


def _frame(ax: Any, column: int, rows: tuple[int, int], label_side: int) -> None:
    """The N× frame around one layer's sublayers, its label outside on ``label_side`` (-1 left, +1 right).

    The residual links run on the same side as the label (left of the encoder, right of the decoder).
    """
    from matplotlib.patches import FancyBboxPatch

    # the frame takes in the residual links, which run on the label's side: the label stays clear of them
    left = CENTRES[column] - BOX_WIDTH / 2 - 0.17 - (RESIDUAL_OFFSET if label_side < 0 else 0)
    width = BOX_WIDTH + RESIDUAL_OFFSET + 0.34
    bottom, top = _bottom(rows[0]) - 0.3, _bottom(rows[1]) + BOX_HEIGHT + 0.12
    ax.add_patch(FancyBboxPatch((left, bottom), width, top - bottom, boxstyle="round,pad=0,rounding_size=0.15",
                                facecolor="#f1f1f1", edgecolor="#9a9a9a", lw=1.0, zorder=0))
    x = left - 0.12 if label_side < 0 else left + width + 0.12
    ax.text(x, (bottom + top) / 2, "N×", fontsize=12, ha="right" if label_side < 0 else "left", va="center")


def _links(ax: Any, result: FigureResult) -> float:
    """Main flow, residual links and the encoder's memory into the decoder; returns the decoder's top."""
    by_stack: dict[int, list[BoxResult]] = {0: [], 1: []}
    for box in result.boxes:
        by_stack[box.column].append(box)
    for column, boxes in by_stack.items():
        x = CENTRES[column]
        for lower, upper in zip(boxes, boxes[1:]):
            _arrow(ax, [(x, _bottom(lower.row) + BOX_HEIGHT), (x, _bottom(upper.row))])
        for box in boxes:
            if box.key.endswith(("attention", "feed_forward")):  # a sublayer: link around it into the add & norm
                side = -1 if column == 0 else 1
                x_side = x + side * (BOX_WIDTH / 2 + RESIDUAL_OFFSET)
                y_start = _bottom(box.row) - (PITCH - BOX_HEIGHT) / 2
                y_end = _bottom(box.row + 1) + BOX_HEIGHT / 2
                ax.plot([x], [y_start], marker="o", markersize=3, color="#333333")
                _arrow(ax, [(x, y_start), (x_side, y_start), (x_side, y_end), (x + side * BOX_WIDTH / 2, y_end)])
    encoder_top = _bottom(by_stack[0][-1].row) + BOX_HEIGHT
    cross = next(box for box in result.boxes if box.key == "decoder.cross_attention")
    gutter = (CENTRES[0] + CENTRES[1]) / 2
    y_cross = _bottom(cross.row) + BOX_HEIGHT / 2
    _arrow(ax, [(CENTRES[0], encoder_top), (CENTRES[0], encoder_top + 0.35), (gutter, encoder_top + 0.35),
                (gutter, y_cross), (CENTRES[1] - BOX_WIDTH / 2, y_cross)])
    decoder_top = _bottom(by_stack[1][-1].row) + BOX_HEIGHT
    _arrow(ax, [(CENTRES[1], decoder_top), (CENTRES[1], decoder_top + 0.4)])
    return decoder_top


def draw_figure(result: FigureResult, lang: str = "en") -> Any:
    """Figure 1 with the measured highlights, as a matplotlib ``Figure`` (see the module docstring).

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    tr = translator(lang)
    figure = new_figure(figsize=FIGURE_SIZE)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, FIGURE_SIZE[0])
    ax.set_ylim(0, FIGURE_SIZE[1])
    ax.set_axis_off()
    rows = {column: [box.row for box in result.boxes if box.column == column] for column in (0, 1)}
    _frame(ax, 0, (2, max(rows[0])), -1)
    _frame(ax, 1, (2, max(rows[1]) - 1), +1)
    for box in result.boxes:
        _box(ax, box, tr, lang)
    decoder_top = _links(ax, result)
    for column, label in ((0, tr("Inputs")), (1, tr("Outputs (shifted right)"))):
        _arrow(ax, [(CENTRES[column], BOTTOM - 0.42), (CENTRES[column], BOTTOM)])
        ax.text(CENTRES[column], BOTTOM - 0.5, label, fontsize=10, ha="center", va="top")
    ax.text(CENTRES[1], decoder_top + 0.48, tr("Output probabilities"), fontsize=10, ha="center", va="bottom")
    _legend(ax, result, tr, lang)
    return figure


def _legend(ax: Any, result: FigureResult, tr: Callable[[str], str], lang: str) -> None:
    from matplotlib.patches import Rectangle

    top = FIGURE_SIZE[1] - 0.35
    ax.text(0.3, top, tr('Figure 1 of "Attention Is All You Need", measured box by box'), fontsize=13,
            weight="bold", va="top")
    ax.text(0.3, top - 0.42, "\n".join(wrap_lines(lit_sentence(result, lang), LEGEND_CHARACTERS[0])), fontsize=9,
            va="top")
    x, y = 0.3, top - 1.25
    for fill, edge, label in ((MIXES_FILL, MIXES_EDGE, tr("mixes positions (measured)")),
                              (PLAIN_FILL, PLAIN_EDGE, tr("one row at a time (measured)"))):
        ax.add_patch(Rectangle((x, y - 0.12), 0.4, 0.24, facecolor=fill, edgecolor=edge, lw=1.2))
        ax.text(x + 0.55, y, label, fontsize=9, va="center")
        y -= 0.36
    lines = (tr("Small square in each box: the measured dependencies, output rows down, input rows across."),
             tr("N×: the paper stacks N = 6 layers; one layer of each stack is measured here."),
             tr("S = {source} source tokens, T = {target} target tokens, d_model = {d_model}, {heads}, "
                "seed {seed}.").format(source=result.T_source, target=result.T_target, d_model=result.d_model,
                                       heads=heads_text(result.heads, lang), seed=result.seed))
    for line in lines:
        wrapped = wrap_lines(line, LEGEND_CHARACTERS[1])
        ax.text(x, y + 0.08, "\n".join(wrapped), fontsize=8.2, va="top", color="#333333")
        y -= 0.14 * len(wrapped) + 0.16


def write_figure(result: FigureResult, base: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Save the figure as ``base.png`` and ``base.svg`` (a .png/.svg suffix on ``base`` is dropped).

    Raises:
        OSError: the files cannot be written.
        SeqlabError: matplotlib is not installed.
    """
    return save_png_svg(draw_figure(result, lang), base)
