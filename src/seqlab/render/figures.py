"""Figures for every command: a matplotlib Figure drawn off-screen, saved as PNG and SVG.

matplotlib is imported here, inside the functions, so ``import seqlab`` and the tables never need it;
the Agg canvas draws without a screen and without pyplot's global state. :func:`tidy_texts` wraps a
figure's long titles and labels to the room its layout left them (and puts several panels' legends under the
panels); :func:`crowded_texts` lists what still is not clear in a drawn figure (texts past the edge,
overlapping texts, a legend over a line): the tests hold every figure to an empty list (issue 37, item 4).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Resolution of every saved PNG (dots per inch; the SVG beside it is resolution-free).
PNG_DPI = 120


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
    """Save ``figure`` as ``base.png`` (:data:`PNG_DPI`, 120 dpi) and ``base.svg`` (no date, so reruns give the same file).

    A ``.png`` or ``.svg`` suffix on ``base`` is dropped first.

    Raises:
        OSError: the files cannot be written.
    """
    base = Path(base)
    if base.suffix.lower() in (".png", ".svg"):
        base = base.with_suffix("")
    png, svg = base.with_name(base.name + ".png"), base.with_name(base.name + ".svg")
    tidy_texts(figure, legends=False)  # every saved figure: long titles and labels wrapped to their room
    figure.savefig(png, dpi=PNG_DPI)
    figure.savefig(svg, metadata={"Date": None})
    return png, svg


def tidy_texts(figure: Any, legends: bool = True) -> Any:
    """Wrap the long texts of a figure to the room they have, after its layout ran: the suptitle to the
    figure's width, each axes' title and x label to the axes' width, its y label to its height (so no
    label runs over a title or past the edge, in any language). Idempotent; returns ``figure``.

    With ``legends``, the axes' legends of a figure with several panels are also moved under the panels, as
    one legend of the figure (a legend inside a panel covers its lines). Call it when the figure is complete.
    """
    import textwrap

    axes_legends = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    if legends and axes_legends and len(figure.axes) > 1:
        handles, labels = [], []
        for ax in figure.axes:
            if ax.get_legend() is None:
                continue
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
            ax.get_legend().remove()
        figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize="small")
    for _ in range(3):  # wrapping changes the layout, which changes the room: a few rounds settle it
        # the layout and every text's extent without rasterising (the figure is drawn once, when it is saved)
        figure.draw_without_rendering()
        renderer = figure.canvas.get_renderer()
        changed = False
        texts = [(figure._suptitle, figure.bbox.width * 0.95, False)] if figure._suptitle is not None else []
        for ax in figure.axes:
            box = ax.get_window_extent(renderer)
            texts += [(ax.title, box.width, False), (ax.xaxis.label, box.width, False),
                      (ax.yaxis.label, box.height, True)]
        for text, room, vertical in texts:
            words = " ".join(text.get_text().split())
            extent = text.get_window_extent(renderer)
            length = extent.height if vertical else extent.width
            lines = text.get_text().count("\n") + 1
            if not words or length <= room or "$" in words:
                continue
            per_line = max(8, int(len(words) * room / (length * lines) * 0.95) if length else len(words))
            wrapped = textwrap.fill(words, per_line, break_long_words=False, break_on_hyphens=False)
            if wrapped != text.get_text():
                text.set_text(wrapped)
                changed = True
        if not changed:
            break
    return figure


def crowded_texts(figure: Any) -> list[str]:
    """Where a drawn figure's words are not clear: each text (titles, axis labels, tick labels, legend texts)
    that reaches past the figure's edge, each pair of texts that overlap, and each legend that covers a line
    or marker of an axes it is drawn over. An empty list: every word stands clear (issue 37, item 4).

    Texts are compared by the bounding boxes matplotlib draws them in (display pixels, after the layout
    engine ran); tick labels of one axis are not compared with each other (the axis spaces them), nor a
    legend's texts with the legend itself.
    """
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    canvas = figure.bbox
    texts: list[tuple[str, Any, Any]] = []  # (name, bbox, owner)

    def add(text: Any, owner: Any) -> None:
        if text.get_visible() and text.get_text().strip():
            texts.append((text.get_text().replace("\n", " "), text.get_window_extent(renderer), owner))

    for text in figure.texts:
        add(text, text)
    if getattr(figure, "_suptitle", None) is not None:
        add(figure._suptitle, figure._suptitle)
    legends = list(figure.legends)
    for ax in figure.axes:
        for title in (ax.title, ax._left_title, ax._right_title):
            add(title, title)
        add(ax.xaxis.label, ax.xaxis.label)
        add(ax.yaxis.label, ax.yaxis.label)
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                if low <= tick.get_loc() <= high:  # ticks outside the view are laid out but never drawn
                    add(tick.label1, axis)
        for text in ax.texts:
            add(text, text)
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
    for legend in legends:
        for text in legend.get_texts():
            add(text, legend)
        if legend.get_title().get_text():
            add(legend.get_title(), legend)
    found = []
    for name, box, _ in texts:
        if box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1 or box.y1 > canvas.y1 + 1:
            found.append(f"past the edge: {name!r}")
    for i, (name, box, owner) in enumerate(texts):
        for other_name, other, other_owner in texts[i + 1:]:
            if owner is not other_owner and box.overlaps(other) and \
                    min(box.x1, other.x1) - max(box.x0, other.x0) > 1 and min(box.y1, other.y1) - max(box.y0, other.y0) > 1:
                found.append(f"overlap: {name!r} and {other_name!r}")
    for legend in legends:
        frame = legend.get_window_extent(renderer)
        for name, box, owner in texts:
            if owner is not legend and frame.overlaps(box) and \
                    min(box.x1, frame.x1) - max(box.x0, frame.x0) > 1 and min(box.y1, frame.y1) - max(box.y0, frame.y0) > 1:
                found.append(f"legend over text: {name!r}")
        for ax in figure.axes:
            for line in ax.get_lines():
                if not line.get_visible() or not len(line.get_xydata()):
                    continue
                points = ax.transData.transform(line.get_xydata())
                # the vertices and points along each segment between them (display pixels)
                samples = [(x0 + (x1 - x0) * k / 16, y0 + (y1 - y0) * k / 16)
                           for (x0, y0), (x1, y1) in itertools.pairwise(points) for k in range(16)]
                samples += [tuple(point) for point in points[-1:]]
                clip = ax.get_window_extent(renderer)  # only what the axes show
                inside = [(x, y) for x, y in samples if frame.contains(x, y) and clip.contains(x, y)]
                if inside:
                    found.append(f"legend over the line {line.get_label()!r}")
    return found
