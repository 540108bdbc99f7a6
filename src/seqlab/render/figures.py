"""Figures for every command: a matplotlib Figure drawn off-screen, saved as PNG and SVG.

matplotlib is imported here, inside the functions, so ``import seqlab`` and the tables never need it;
the Agg canvas draws without a screen and without pyplot's global state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_


def new_figure(**options: Any) -> Any:
    """A matplotlib ``Figure`` with an Agg canvas (``options`` go to ``Figure``, e.g. figsize, layout).

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise SeqlabError(N_("plots need matplotlib (pip install matplotlib): {error}"), error=error) from None
    figure = Figure(**options)
    FigureCanvasAgg(figure)
    return figure


def save_png_svg(figure: Any, base: str | Path) -> tuple[Path, Path]:
    """Save ``figure`` as ``base.png`` (120 dpi) and ``base.svg`` (no date, so reruns give the same file).

    A ``.png`` or ``.svg`` suffix on ``base`` is dropped first.

    Raises:
        OSError: the files cannot be written.
    """
    base = Path(base)
    if base.suffix.lower() in (".png", ".svg"):
        base = base.with_suffix("")
    png, svg = base.with_name(base.name + ".png"), base.with_name(base.name + ".svg")
    figure.savefig(png, dpi=120)
    figure.savefig(svg, metadata={"Date": None})
    return png, svg
