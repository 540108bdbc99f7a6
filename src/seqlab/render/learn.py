"""Render a :class:`~seqlab.studies.learn.LearnResult`: a table per task, sentences, plots and JSON (L3, L4, L10).

Results in, pictures out: nothing here trains or measures. One Rich table per task, models as rows
and lengths T as columns (mqar: a row per model and width, a column per T and number of pairs, and
each model's measured decode-state bytes); each cell holds the mean test accuracy over seeds and its range (minimum to
maximum over seeds), and under it the learning rate chosen on validation and, for the sequence
models, the medians of the measured path: ρ, the spectral radius of the learned W_hh (recurrences),
and the reach ||dy_T/dx_1|| in float64. The sentences and their verdicts come from
:mod:`seqlab.render.learn_text`.

The plot uses matplotlib's object API on the Agg canvas (no pyplot, no global backend change),
imported only when a plot is made: accuracy against T for each lesson task, and for mqar the three
pictures of Zoology and Based — accuracy against the decode state's bytes (the frontier: one point per
model and width, log scale), against T, and against the number of pairs.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.errors import require_positive_int
from seqlab.i18n import format_integer, format_number, translator
from seqlab.learn.models import FIXED_STATE, MODELS, RECURRENT
from seqlab.learn.selection import Cell
from seqlab.learn.tasks import TASKS
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.render.learn_text import (DOMAIN, accuracy_text, bytes_text, duration_text, learn_sentences, model_label,
                                      model_labels, progress_text, range_text, rate_text, task_titles)
from seqlab.studies.learn import LearnResult
from seqlab.studies.learn_verdicts import learn_findings
from seqlab.render.tables import FittedTable

__all__ = ["DOMAIN", "accuracy_text", "duration_text", "learn_json", "learn_sentences", "learn_table",
           "model_label", "plot_learn", "progress_text", "render_learn", "write_plots"]

DASH = "—"


def _cell_text(cell: Cell | None, lang: str) -> Text:
    if cell is None:
        return Text(DASH)
    tl = translator(lang)
    text = Text(range_text(cell.mean, cell.low, cell.high, lang))
    path = [tl("lr {lr}").format(lr=rate_text(cell.lr))]  # the learning rate chosen
    if cell.spectral_radius is not None:
        path.append(f"ρ {format_number(cell.spectral_radius, lang, 2)}")
    if cell.reach is not None and cell.pairs is None:
        path.append(f"∂ {format_number(cell.reach, lang, 2)}")
    text.append("\n" + " · ".join(path), style="dim")
    return text


def mqar_table(result: LearnResult, lang: str = "en") -> Table:
    """The mqar table: a row per model and width (with its decode state's bytes at each T), a column per T and
    number of pairs; mean accuracy over the queried values (range over seeds) and the rate chosen."""
    tl = translator(lang)
    labels = model_labels(tl)
    cells = result.cells("mqar")
    columns = sorted({(c.T, c.pairs) for c in cells})
    caption = tl("Accuracy over the queried values: mean and (minimum–maximum) over the seeds (seeds: {seeds}); "
                 "chance {chance}. State: the bytes the model's decoder holds after T tokens, measured on it "
                 "(attention: its KV cache, which grows with T).").format(
        seeds=result.config.seeds, chance=accuracy_text(TASKS["mqar"].chance, lang))
    table = FittedTable(title=task_titles(tl)["mqar"], caption=caption, title_justify="left", caption_justify="left")
    table.add_column(tl("Model (width, state)"))
    for T, pairs in columns:
        table.add_column(tl("T = {T}, {pairs} pairs").format(T=format_integer(T, lang), pairs=pairs), justify="right")
    for model in result.models.get("mqar", ()):
        for width in sorted({c.width for c in cells if c.model == model}):
            states = sorted({c.state_bytes for c in cells if (c.model, c.width) == (model, width)
                             and c.state_bytes is not None})
            state = bytes_text(states[0], lang) if len(states) == 1 else \
                f"{bytes_text(states[0], lang)}–{bytes_text(states[-1], lang)}" if states else bytes_text(None, lang)
            row = [f"{labels[model]} (w = {format_integer(width, lang)}, {state})"]
            row += [_cell_text(result.cell("mqar", model, T, pairs, width), lang) for T, pairs in columns]
            table.add_row(*row)
    return table


def _params_text(result: LearnResult, task: str, model: str, lang: str) -> str:
    counts = sorted({c.params for c in result.summary if (c.task, c.model) == (task, model)})
    if not counts:
        return ""
    if len(counts) == 1:
        return format_integer(counts[0], lang)
    return f"{format_integer(counts[0], lang)}–{format_integer(counts[-1], lang)}"


def learn_table(result: LearnResult, task: str, lang: str = "en") -> Table:
    """One task's table: a row per model, a column per T; mean accuracy (range over seeds), rate, path."""
    if TASKS[task].per_position:
        return mqar_table(result, lang)
    tl = translator(lang)
    labels = model_labels(tl)
    caption = tl("Test accuracy: mean and (minimum–maximum) over the seeds (seeds: {seeds}); chance {chance}. "
                 "Under it: the learning rate chosen on the validation split, and medians over seeds of ρ, the "
                 "spectral radius of the learned W_hh (LSTM, GRU: its candidate block), and ∂, the reach "
                 "‖∂y_T/∂x_1‖ in float64.").format(seeds=result.config.seeds,
                                                   chance=accuracy_text(TASKS[task].chance, lang))
    table = FittedTable(title=task_titles(tl)[task], caption=caption, title_justify="left", caption_justify="left")
    table.add_column(tl("Model (parameters)"))
    for T in result.lengths[task]:
        table.add_column(f"T = {format_integer(T, lang)}", justify="right")
    for model in result.models[task]:
        params = _params_text(result, task, model, lang)
        row = [f"{labels[model]} ({params})" if params else labels[model]]
        row += [_cell_text(result.cell(task, model, T), lang) for T in result.lengths[task]]
        table.add_row(*row)
    return table


def render_learn(result: LearnResult, lang: str = "en") -> Group:
    """The tables (those of the tasks run) and the sentences, as one Rich renderable."""
    tables = [learn_table(result, task, lang) for task in result.lengths]
    return Group(*tables, *(Text(s) for s in learn_sentences(result, lang)))


_COLOURS = {m: f"C{i % 10}" for i, m in enumerate(MODELS)}
_MARKERS = {m: "os^Dv<>pPX"[i % 10] for i, m in enumerate(MODELS)}


def _errorbar(ax, xs: list[float], cells: list[Cell], model: str, label: str, **options) -> None:
    errors = [[c.mean - c.low for c in cells], [c.high - c.mean for c in cells]]
    ax.errorbar(xs, [c.mean for c in cells], yerr=errors, marker=_MARKERS[model], markersize=4, capsize=3,
                color=_COLOURS[model], label=label, **options)


def _mqar_panels(result: LearnResult, axes, tl) -> None:
    """The frontier (accuracy against state bytes), accuracy against T, and against the number of pairs."""
    labels = model_labels(tl)
    cells = result.cells("mqar")
    T = max(c.T for c in cells)
    pairs = max(c.pairs for c in cells if c.T == T)
    frontier, by_length, by_pairs = axes
    for model in result.models.get("mqar", ()):
        mine = [c for c in cells if c.model == model]
        if not mine:
            continue
        points = sorted((c for c in mine if (c.T, c.pairs) == (T, pairs) and c.state_bytes is not None),
                        key=lambda c: c.state_bytes)
        if points:
            _errorbar(frontier, [c.state_bytes for c in points], points, model, labels[model],
                      linestyle="--" if model in FIXED_STATE else "-")
        widest = max(c.width for c in mine)
        label = f"{labels[model]} (w = {widest})"
        line = "--" if model in FIXED_STATE else "-"
        along_T = sorted((c for c in mine if c.width == widest and c.pairs == pairs), key=lambda c: c.T)
        if along_T:
            _errorbar(by_length, [c.T for c in along_T], along_T, model, label, linestyle=line)
        along_pairs = sorted((c for c in mine if c.width == widest and c.T == T), key=lambda c: c.pairs)
        if along_pairs:
            _errorbar(by_pairs, [c.pairs for c in along_pairs], along_pairs, model, label, linestyle=line)
    frontier.set_xscale("log")
    frontier.set(xlabel=tl("decode state after T tokens (bytes, log scale)"),
                 title=tl("Recall against state: T = {T}, {pairs} pairs").format(T=T, pairs=pairs))
    lengths = sorted({c.T for c in cells})
    by_length.set_xscale("log", base=2)
    by_length.set_xticks(lengths, [str(t) for t in lengths])
    by_length.set(xlabel=tl("T (positions)"), title=tl("Recall against T: {pairs} pairs").format(pairs=pairs))
    counts = sorted({c.pairs for c in cells if c.T == T})
    by_pairs.set_xscale("log", base=2)
    by_pairs.set_xticks(counts, [str(p) for p in counts])
    by_pairs.set(xlabel=tl("key-value pairs"), title=tl("Recall against pairs: T = {T}").format(T=T))
    for ax in (by_length, by_pairs):
        ax.minorticks_off()
    frontier.xaxis.label.set_wrap(True)  # long in Spanish: wrapped at the figure's edge rather than cut there
    for ax in axes:
        ax.axhline(TASKS["mqar"].chance, color="black", linewidth=0.8, linestyle=":", label=tl("chance"))
        ax.set(ylim=(0.0, 1.05), ylabel=tl("accuracy over the queried values"))
        ax.title.set_fontsize("medium")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")


def plot_learn(result: LearnResult, lang: str = "en", columns: int = 3):
    """A matplotlib Figure: accuracy against T per model, one panel per lesson task, range over seeds as bars;
    with mqar, three more panels: accuracy against state bytes (log x), against T and against pairs.

    Args:
        result: what to draw.
        lang: ``"en"`` or ``"es"``.
        columns: panels per row (at most; 5.2 inches each): the report draws 2, so that its fonts print large
            enough on an A4 page without overrunning the panels.

    Raises:
        SeqlabError: matplotlib is not installed, or ``columns`` is not a positive integer.
    """
    require_positive_int("columns", columns)
    tl = translator(lang)
    labels, titles = model_labels(tl), task_titles(tl)
    tasks = [t for t in result.lengths if not TASKS[t].per_position]
    mqar = bool(result.cells("mqar"))
    panels = len(tasks) + 3 * mqar
    columns = min(columns, max(panels, 1))
    rows = -(-max(panels, 1) // columns)
    figure = new_figure(figsize=(5.2 * columns, 4.4 * rows), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False).flatten()
    axes = grid[:len(tasks)]
    if mqar:
        _mqar_panels(result, grid[len(tasks):len(tasks) + 3], tl)
    for ax in grid[panels:]:
        ax.set_visible(False)
    colours = _COLOURS
    for ax, task in zip(axes, tasks):
        shown = result.models[task]
        for index, model in enumerate(shown):
            cells = [c for T in result.lengths[task] if (c := result.cell(task, model, T)) is not None]
            if not cells:
                continue
            nudge = 2 ** (0.04 * (index - (len(shown) - 1) / 2))  # side by side, so equal points stay visible
            ts, means = [c.T * nudge for c in cells], [c.mean for c in cells]
            errors = [[c.mean - c.low for c in cells], [c.high - c.mean for c in cells]]
            ax.errorbar(ts, means, yerr=errors, marker="o", markersize=4, capsize=3, color=colours[model],
                        linestyle="--" if model in RECURRENT else "-", label=labels[model])
        ax.axhline(TASKS[task].chance, color="black", linewidth=0.8, linestyle=":", label=tl("chance"))
        ax.set_xscale("log", base=2)
        ax.set(ylim=(0.0, 1.05), xlabel=tl("T (positions)"), ylabel=tl("test accuracy"))
        ax.set_xticks(result.lengths[task], [str(T) for T in result.lengths[task]])
        ax.minorticks_off()
        if len(result.lengths[task]) == 1:
            ax.set_xlim(result.lengths[task][0] / 1.5, result.lengths[task][0] * 1.5)
        ax.set_title(titles[task], fontsize="medium", wrap=True)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    suptitle = tl("seqlab learn — seeds: {seeds}, PyTorch {torch}, CPU threads: {threads}").format(
        seeds=result.config.seeds, torch=result.torch_version, threads=result.threads)
    if result.partial:
        suptitle += " — " + tl("interrupted")
    figure.suptitle(suptitle)
    return figure


def write_plots(result: LearnResult, base: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Save the figure as ``base.png`` and ``base.svg`` (a suffix .png/.svg on ``base`` is dropped)."""
    return save_png_svg(plot_learn(result, lang), base)


def learn_json(result: LearnResult) -> str:
    """The whole result (config, every run at every rate, the summary, the cuts) and its verdicts as JSON."""
    import json

    from seqlab.render.json_output import to_jsonable, versioned

    data = to_jsonable(result)
    data["cuts"] = to_jsonable(result.cuts)
    data["findings"] = [{**to_jsonable(f), "supports_lesson": f.supports_lesson} for f in learn_findings(result)]
    return json.dumps(versioned(data, "learn"), indent=2, ensure_ascii=False)
