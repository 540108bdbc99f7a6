"""The heat map of ``seqlab model``: α of one layer and head, T × T, with α_T1 outlined (L4).

Results in, pictures out (matplotlib, imported only inside :func:`plot_attention`). Words go through the
``model`` gettext domain, as in :mod:`seqlab.render.model`.
"""

from __future__ import annotations

import math
from pathlib import Path

from seqlab.i18n import format_number, translator
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.studies.model import ModelResult

DOMAIN = "seqlab"
#: Most tick labels on an axis of the heat map; beyond it every k-th position is labelled.
MAX_TICKS = 40


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

    tr = translator(lang)
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
