"""Plots that stay legible on the printed page: the PDF of ``seqlab report`` scales each plot to the page.

The page is A4 with 15 mm margins, so a plot wider than 180 mm (7.09 in) is shrunk by
:func:`print_scale`; :func:`legible` (on a drawn figure) and :func:`legible_defaults` (around another
renderer's drawing) raise its text so that, once shrunk, none is smaller than :data:`MIN_PRINT_PT`.
Sizes in inches and typographic points (1/72 in); CSS pixels are 96 per inch. The names are re-exported
from :mod:`seqlab.render.report`, which embeds the plots.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: The PDF's page: A4 with 15 mm margins, so plots are scaled to at most 180 mm (7.09 in) across.
PAGE_MARGIN_MM = 15
PRINT_WIDTH_IN = (210 - 2 * PAGE_MARGIN_MM) / 25.4
#: The smallest text a plot may have once scaled to the printed page's width, in points.
MIN_PRINT_PT = 7.0
#: matplotlib's size of "small" text against the base font size.
SMALL = 0.833


def print_scale(width_in: float) -> float:
    """How much a plot ``width_in`` inches wide is shrunk to fit the PDF's page width (1: not at all).

    >>> print_scale(5.0), round(print_scale(15.0), 3)
    (1.0, 0.472)
    """
    return min(1.0, PRINT_WIDTH_IN / width_in)


def min_font_pt(width_in: float) -> float:
    """The smallest font size a plot ``width_in`` inches wide may use to print at :data:`MIN_PRINT_PT` or more."""
    return MIN_PRINT_PT / print_scale(width_in)


def legible(figure: Any) -> Any:
    """Raise every text of ``figure`` (titles, labels, ticks, legends) to :func:`min_font_pt` of its width.

    Returns the figure, whose layout (constrained) is redone when it is saved.
    """
    from matplotlib.text import Text

    least = min_font_pt(figure.get_figwidth())
    for text in figure.findobj(Text):
        if text.get_fontsize() < least:
            text.set_fontsize(least)
    for ax in figure.axes:  # tick labels made at draw time take the axis's label size
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            labels = axis.get_ticklabels()
            size = labels[0].get_fontsize() if labels else least
            ax.tick_params(axis=name, which="both", labelsize=max(size, least))
    return figure


@contextlib.contextmanager
def legible_defaults(width_in: float) -> Iterator[None]:
    """matplotlib defaults under which a plot ``width_in`` inches wide, drawn by another renderer with relative
    sizes ("small" legends), keeps every text at :data:`MIN_PRINT_PT` or more once scaled to the page."""
    import matplotlib

    least = min_font_pt(width_in)
    with matplotlib.rc_context({"font.size": least / SMALL, "xtick.labelsize": least, "ytick.labelsize": least,
                                "axes.labelsize": least, "axes.titlesize": least, "figure.titlesize": least * 1.2,
                                "legend.fontsize": least}):
        yield


def css_width(width_in: float) -> int:
    """The CSS pixels (96 per inch) of a plot ``width_in`` inches wide, whatever the PNG's resolution."""
    return round(width_in * 96)
