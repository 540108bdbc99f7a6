"""A Matplotlib figure for each result the Python API returns (``result.plot()`` in a notebook).

Results in, pictures out: every bar and point is a field of the result, nothing is measured here. Each
function returns a ``matplotlib.figure.Figure`` on an off-screen Agg canvas
(:func:`seqlab.render.figures.new_figure`): no pyplot, no backend switched, so a notebook's own
Matplotlib settings stay as they were. Table 1's figure is :func:`seqlab.render.table1.table1_figure`, the
one ``seqlab table1 --plot`` saves.

* profile: multiplications per ATen op (work, L5/L6's unit) and the chains in ops and in matrix products
  (span, L1/L2; path, L3/L4);
* compare: the reach ‖∂y_T/∂x_i‖ against i (L3, L4) and the least matrix products from position 1 to every
  position (the path: T for the recurrence, 2 for attention);
* check: one bar per claim, its verdict as colour, its length the seconds its measurement took;
* table1 --modern: work, span and peak memory of one layer against T, and the path against T, one line per row
  (decode's figure is :func:`seqlab.render.decode.decode_figure`, the one ``seqlab decode --plot`` saves).
"""

from __future__ import annotations

import math
from typing import Any

from seqlab.i18n import format_integer, format_source, translator
from seqlab.render.figures import new_figure

DOMAIN = "seqlab"

__all__ = ["check_figure", "compare_figure", "modern_figure", "profile_figure"]

#: Most ops shown in the profile's work panel (the rest are summed into one bar).
TOP_OPS = 8


def _bar_labels(axis: Any, bars: Any, values: list[int | None], lang: str) -> None:
    """Write each bar's exact integer beside it ("—" where there is no value)."""
    axis.bar_label(bars, labels=["—" if v is None else format_integer(v, lang) for v in values], padding=2,
                   fontsize="small")


def profile_figure(result: Any, lang: str = "en") -> Any:
    """Work by op and the three chain lengths of a :class:`seqlab.studies.profile.ProfileResult`.

    Left: multiplications (multiply-adds; FLOPs = 2×) per ATen op, the largest :data:`TOP_OPS` and the rest.
    Right: span, longest path and the path from position 1 to T, each in ops and in matrix products.

    Args:
        result: the profile.
        lang: ``"en"`` or ``"es"``.

    Returns:
        A ``matplotlib.figure.Figure`` with two axes.
    """
    _ = translator(lang, DOMAIN)
    figure = new_figure(figsize=(11, 4.2), layout="constrained")
    work, chains = figure.subplots(1, 2)
    ops = sorted(result.by_op.items(), key=lambda item: (-item[1], item[0]))
    shown = ops[:TOP_OPS] + ([(_("other ops"), sum(count for _op, count in ops[TOP_OPS:]))] if ops[TOP_OPS:] else [])
    names, counts = [name for name, _c in shown][::-1], [count for _n, count in shown][::-1]
    _bar_labels(work, work.barh(names, counts, color="tab:blue"), counts, lang)
    work.set_title(_("Multiplications by op: {total} in all").format(
        total=format_integer(result.multiplications, lang)), fontsize="medium")
    work.set_xlabel(_("multiplications (multiply-adds)"))
    work.margins(x=0.25)
    path = result.path
    bound = "" if path.exact else " " + _("(at least: a bound)")  # an op was refused: paths are lower bounds
    groups = ((_("span (depth)"), result.span_ops, result.span_products),
              (_("longest path") + bound, path.longest_ops, path.longest_products),
              (_("path 1 → T") + bound, path.first_to_last_ops, path.first_to_last_products))
    positions = range(len(groups))
    for offset, unit, index, color in ((-0.2, _("ops"), 1, "tab:orange"), (0.2, _("matrix products"), 2,
                                                                                "tab:green")):
        values = [group[index] for group in groups]
        bars = chains.bar([p + offset for p in positions], [0 if v is None else v for v in values], width=0.4,
                          label=unit, color=color)
        _bar_labels(chains, bars, values, lang)
    chains.set_xticks(list(positions), [group[0] for group in groups])
    chains.set_title(_("Chains, input {shape}").format(shape=tuple(result.shape)), fontsize="medium")
    chains.margins(y=0.15)
    chains.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    figure.suptitle(_("Profile of {module}").format(module=result.module))
    return figure


def _machines(result: Any, lang: str) -> list[tuple[str, Any, Any]]:
    """(label, reach, path) of each machine compare measured, in its table's order."""
    _ = translator(lang, DOMAIN)
    machines = [(_("Elman RNN"), result.recurrence.reach, result.recurrence.path),
                (_("attention ({score})").format(score=result.score), result.attention.reach, result.attention.path)]
    return machines + [(gated.cell.upper(), gated.reach, gated.path) for gated in result.gated]


def compare_figure(result: Any, lang: str = "en") -> Any:
    """Reach and path against position for every machine of a :class:`seqlab.studies.compare.CompareResult`.

    Left: ‖∂y_T/∂x_i‖ (float64) against input position i, log scale; norms that are 0 or not finite have
    no point. Right: least matrix products on a path from position 1 to each position.

    Args:
        result: the comparison.
        lang: ``"en"`` or ``"es"``.

    Returns:
        A ``matplotlib.figure.Figure`` with two axes.
    """
    _ = translator(lang, DOMAIN)
    figure = new_figure(figsize=(11, 4.2), layout="constrained")
    reach_axis, path_axis = figure.subplots(1, 2)
    styles = ("-", "--", "-.", ":")
    for index, (label, reach, path) in enumerate(_machines(result, lang)):
        points = [(i + 1, norm) for i, norm in enumerate(reach.norms) if norm > 0.0 and math.isfinite(norm)]
        reach_axis.plot([i for i, _n in points], [n for _i, n in points], styles[index % 4], label=label)
        row = path.row(path.sources[0]) if path.sources else ()
        steps = [(t + 1, value) for t, value in enumerate(row) if value is not None]
        path_axis.plot([t for t, _v in steps], [v for _t, v in steps], styles[index % 4], label=label)
    reach_axis.set_yscale("log")
    reach_axis.set_title(_("Reach of y_T from x_i (float64)"), fontsize="medium")
    reach_axis.set_xlabel(_("input position i"))
    path_axis.set_title(_("Least matrix products from position 1"), fontsize="medium")
    path_axis.set_xlabel(_("output position t"))
    for axis in (reach_axis, path_axis):
        axis.grid(True, alpha=0.3)
    path_axis.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    figure.suptitle(_("{source}: T = {T}, d_model = {d_model}").format(
        source=format_source(result.source, lang), T=format_integer(result.T, lang), d_model=result.d_model))
    return figure


def check_figure(result: Any, lang: str = "en") -> Any:
    """One horizontal bar per claim of a :class:`seqlab.studies.check.CheckResult`: verdict and seconds.

    Args:
        result: the check.
        lang: ``"en"`` or ``"es"``.

    Returns:
        A ``matplotlib.figure.Figure`` with one axis.
    """
    from matplotlib.patches import Patch

    from seqlab.render.check import verdict_words
    from seqlab.studies.verdicts import CAVEAT, FAILS, HOLDS, NOT_JUDGED

    _ = translator(lang, DOMAIN)
    colours = {HOLDS: "tab:green", CAVEAT: "tab:orange", NOT_JUDGED: "tab:gray", FAILS: "tab:red"}
    figure = new_figure(figsize=(8, 0.4 * len(result.checks) + 1.6), layout="constrained")
    axis = figure.subplots()
    checks = list(result.checks)[::-1]
    axis.barh([c.claim for c in checks], [c.seconds for c in checks], color=[colours[c.verdict] for c in checks])
    axis.set_xlabel(_("seconds the measurement took"))
    keys = [Patch(color=colour, label=verdict_words(verdict, lang)) for verdict, colour in colours.items()]
    axis.legend(handles=keys, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")  # every verdict
    axis.set_title(_("{held} of {total} claims hold").format(held=result.held, total=len(result.checks)),
                   fontsize="medium")
    return figure


def modern_figure(result: Any, lang: str = "en") -> Any:
    """Table 1 extended (:class:`seqlab.studies.table1_modern.ModernResult`) against T, log axes, a line per row.

    Panels: multiplications of one layer, its span in ops and its peak bytes (at the long lengths), and the
    least ops on a path from position 1 to T through the stack (at the short lengths); a row with no
    path at some T has no point there.

    Args:
        result: the extended table.
        lang: ``"en"`` or ``"es"``.

    Returns:
        A ``matplotlib.figure.Figure`` with four axes.
    """
    from seqlab.render.table1_modern import row_name

    _ = translator(lang, DOMAIN)
    panels = ((_("Work of one layer (multiplications)"), "long", lambda s: s.multiplications),
              (_("Span of one layer (ops)"), "long", lambda s: s.span_ops),
              (_("Peak memory of one pass (bytes)"), "long",
               lambda s: s.peak_bytes if s.allocator_peak_bytes is None else s.allocator_peak_bytes),
              (_("Path from position 1 to T (ops)"), "short", lambda s: s.path_ops))
    figure = new_figure(figsize=(16, 5), layout="constrained")
    axes = figure.subplots(1, len(panels))
    markers = "os^vD<>ph*"
    for axis, (title, samples, value) in zip(axes, panels):
        for index, row in enumerate(result.rows):
            points = [(s.T, value(s)) for s in getattr(row, samples) if value(s) is not None and value(s) > 0]
            axis.plot([t for t, _v in points], [v for _t, v in points], marker=markers[index % len(markers)],
                      linestyle=("-", "--", ":", "-.")[index % 4], label=row_name(row.row, result, lang))  # equal
            # values (attention's and linear attention's work) stay visible one over the other
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_title(title, fontsize="medium")
        axis.set_xlabel(_("sequence length T"))
        axis.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=5, fontsize="small")
    return figure
