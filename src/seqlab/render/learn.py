"""Render a :class:`~seqlab.studies.learn.LearnResult`: three tables, sentences, a plot and JSON (L3, L4, L10).

Results in, pictures out: nothing here trains or measures. One Rich table per task, models as rows
and lengths T as columns; each cell holds the mean test accuracy over seeds ± half its range (min to
max), and under it, for the sequence models, the medians of the measured path: ρ, the spectral radius
of the learned W_hh (recurrences), and the reach ||dy_T/dx_1|| in float64.

Words go through the gettext domain ``learn`` (``locale/es/LC_MESSAGES/learn.po``). The translation
function is called ``tl`` rather than ``_`` so that the ``seqlab`` catalogue's scan of ``_()`` does
not claim these messages; extract them with ``pybabel extract -k tl``. The plot uses matplotlib's
object API on the Agg canvas (no pyplot, no global backend change), imported only when a plot is made.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, format_number, format_seconds, translator
from seqlab.learn.models import LABELS, RECURRENT
from seqlab.learn.tasks import TASKS, evaluation_positions, training_positions
from seqlab.learn.training import Run
from seqlab.render.figures import new_figure, save_png_svg
from seqlab.studies.learn import Cell, LearnResult, PlannedRun, near_chance

DOMAIN = "learn"
DASH = "—"
#: Accuracy gap from which the recurrence counts as far below attention.
FAR_BELOW = 0.3
#: A reach below this is read as a vanished gradient (float64 norm, units of y per unit of x).
VANISHED = 1e-4


def learn_translator(lang: str) -> Callable[[str], str]:
    """The gettext function of the ``learn`` domain for ``lang``.

    >>> learn_translator("es")("Attention + PE")
    'Atención + CP'
    """
    return translator(lang, DOMAIN)


def _model_labels(tl: Callable[[str], str]) -> dict[str, str]:
    return {"elman": tl("Elman RNN"), "lstm": tl("LSTM"), "gru": tl("GRU"), "attention": tl("Attention"),
            "attention-pe": tl("Attention + PE"), "mlp": tl("MLP (per position)")}


def model_label(model: str, lang: str = "en") -> str:
    """A model's name in ``lang``.

    >>> model_label("mlp", "es")
    'MLP (por posición)'
    """
    return _model_labels(learn_translator(lang)).get(model, LABELS.get(model, model))


def _task_titles(tl: Callable[[str], str]) -> dict[str, str]:
    return {"recall": tl("Recall the first token, T-1 positions back (L3, L4)"),
            "order": tl("Which of two marked tokens comes first (L10)"),
            "position": tl("A word trained in the first half, tested in the second (L10)")}


def accuracy_text(value: float, lang: str) -> str:
    """An accuracy with three decimals, per language.

    >>> accuracy_text(0.5, "en"), accuracy_text(0.875, "es")
    ('0.500', '0,875')
    """
    from babel.numbers import format_decimal

    return format_decimal(value, format="0.000", locale=lang)


def duration_text(seconds: float, lang: str = "en") -> str:
    """A duration: minutes and seconds from one minute on, else :func:`~seqlab.i18n.format_seconds`.

    >>> duration_text(754.2), duration_text(41.0, "es")
    ('12 min 34 s', '41,0 s')
    """
    if seconds < 60:
        return format_seconds(seconds, lang)
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _cell_text(cell: Cell | None, f_lang: str) -> Text:
    if cell is None:
        return Text(DASH)
    text = Text(f"{accuracy_text(cell.mean, f_lang)} ± {accuracy_text(cell.spread / 2, f_lang)}")
    path = []
    if cell.spectral_radius is not None:
        path.append(f"ρ {format_number(cell.spectral_radius, f_lang, 2)}")
    if cell.reach is not None:
        path.append(f"∂ {format_number(cell.reach, f_lang, 2)}")
    if path:
        text.append("\n" + " · ".join(path), style="dim")
    return text


def _params_text(result: LearnResult, task: str, model: str, lang: str) -> str:
    counts = sorted({c.params for c in result.summary if (c.task, c.model) == (task, model)})
    if not counts:
        return ""
    if len(counts) == 1:
        return format_integer(counts[0], lang)
    return f"{format_integer(counts[0], lang)}–{format_integer(counts[-1], lang)}"


def learn_table(result: LearnResult, task: str, lang: str = "en") -> Table:
    """One task's table: a row per model, a column per T; mean accuracy ± half the range over seeds."""
    tl = learn_translator(lang)
    labels = _model_labels(tl)
    caption = tl("Test accuracy, mean over {seeds} seeds ± half the range; chance {chance}. Under it, medians "
                 "over seeds: ρ, the spectral radius of the learned W_hh (LSTM, GRU: its candidate block), and "
                 "∂, the reach ‖∂y_T/∂x_1‖ in float64.").format(
        seeds=result.config.seeds, chance=accuracy_text(TASKS[task].chance, lang))
    table = Table(title=_task_titles(tl)[task], caption=caption, title_justify="left", caption_justify="left")
    table.add_column(tl("Model (parameters)"))
    for T in result.lengths[task]:
        table.add_column(f"T = {format_integer(T, lang)}", justify="right")
    for model in result.models[task]:
        params = _params_text(result, task, model, lang)
        row = [f"{labels[model]} ({params})" if params else labels[model]]
        row += [_cell_text(result.cell(task, model, T), lang) for T in result.lengths[task]]
        table.add_row(*row)
    return table


def _longest(result: LearnResult, task: str) -> int | None:
    """The longest T of ``task`` with at least one finished run."""
    done = [c.T for c in result.summary if c.task == task]
    return max(done) if done else None


def _listing(result: LearnResult, task: str, T: int, lang: str, labels: dict[str, str]) -> str:
    parts = [f"{labels[m]} {accuracy_text(c.mean, lang)}" for m in result.models[task]
             if (c := result.cell(task, m, T)) is not None]
    return ", ".join(parts)


def _seed_runs(result: LearnResult, task: str, model: str, T: int) -> list[Run]:
    return [r for r in result.runs if (r.task, r.model, r.T) == (task, model, T)]


def _recall_sentences(result: LearnResult, T: int, lang: str, tl: Callable[[str], str]) -> list[str]:
    elman, att = result.cell("recall", "elman", T), result.cell("recall", "attention", T)
    if elman is None or att is None:
        return []
    sentences = []
    if elman.reach is not None and att.reach is not None:
        sentences.append(tl("Between position 1 and position T = {T}, the gradient reaches the Elman RNN's input "
                            "with norm {rec} after crossing {steps} products by W_hh (spectral radius {rho}), and "
                            "attention's input with norm {att} through a single weight α_T1.").format(
            T=format_integer(T, lang), rec=format_number(elman.reach, lang), steps=format_integer(T - 1, lang),
            rho=format_number(elman.spectral_radius, lang), att=format_number(att.reach, lang)))
    runs = _seed_runs(result, "recall", "elman", T)
    failed = [r for r in runs if near_chance(r.accuracy, r.chance)]
    values = dict(T=format_integer(T, lang), rec=accuracy_text(elman.mean, lang), att=accuracy_text(att.mean, lang),
                  chance=accuracy_text(elman.chance, lang), failed=len(failed), seeds=len(runs))
    if att.learnt_task and len(failed) == len(runs):
        sentences.append(tl("As the lesson says (L3, L4): at T = {T} the Elman RNN is near chance in every seed "
                            "({rec}, chance {chance}) while attention recalls the first token ({att}).").format(**values))
    elif att.learnt_task and elman.mean <= att.mean - FAR_BELOW:
        sentences.append(tl("At T = {T} attention recalls the first token ({att}); the Elman RNN scores {rec} on "
                            "average and stays near chance ({chance}) in {failed} of {seeds} seeds.").format(**values))
        reaches = [r.reach for r in failed if r.reach is not None]
        if reaches and max(reaches) < VANISHED:
            sentences.append(tl("In those seeds the gradient from y_T reaches x_1 with norm at most {reach}: almost "
                                "no training signal crosses the T-1 steps.").format(
                reach=format_number(max(reaches), lang)))
    else:
        sentences.append(tl("Not as the lesson says: at T = {T} attention scores {att} and the Elman RNN {rec} "
                            "(chance {chance}); see the table.").format(**values))
    return sentences


def _order_sentences(result: LearnResult, T: int, lang: str, tl: Callable[[str], str]) -> list[str]:
    att, pe = result.cell("order", "attention", T), result.cell("order", "attention-pe", T)
    if att is None or pe is None:
        return []
    values = dict(T=format_integer(T, lang), att=accuracy_text(att.mean, lang), pe=accuracy_text(pe.mean, lang))
    if att.near_chance and not pe.near_chance:
        return [tl("As the lesson says (L10): at T = {T} attention without positional encoding scores {att}, "
                   "chance, because both orders give it the same set of rows; adding the sinusoidal encoding "
                   "lifts it to {pe}.").format(**values)]
    return [tl("Not as the lesson says: at T = {T} attention without positional encoding scores {att} and with "
               "it {pe}; see the table.").format(**values)]


def _position_sentences(result: LearnResult, T: int, lang: str, tl: Callable[[str], str]) -> list[str]:
    mlp = result.cell("position", "mlp", T)
    shared = [c for m in ("attention", "gru", "lstm", "elman", "attention-pe")
              if (c := result.cell("position", m, T)) is not None]
    if mlp is None or not shared:
        return []
    best = max(shared, key=lambda c: c.mean)
    trained, tested = training_positions(T), evaluation_positions(T)
    values = dict(T=format_integer(T, lang), first=trained.start + 1, last=trained.stop,
                  low=tested.start + 1, high=tested.stop, mlp=accuracy_text(mlp.mean, lang),
                  model=model_label(best.model, lang), shared=accuracy_text(best.mean, lang))
    if mlp.near_chance and best.learnt_task:
        return [tl("As the lesson says (L10): trained with the word in positions {first}–{last} and tested with "
                   "it in positions {low}–{high} (T = {T}), the per-position MLP scores {mlp}, chance: its "
                   "weights for those positions never saw the word; {model}, which shares its weights over "
                   "positions, scores {shared}.").format(**values)]
    return [tl("Not as the lesson says: tested with the word in positions {low}–{high} (T = {T}), the "
               "per-position MLP scores {mlp} and {model} {shared}; see the table.").format(**values)]


def learn_sentences(result: LearnResult, lang: str = "en") -> list[str]:
    """Plain sentences: what was measured at each task's longest T, and whether it matches the lesson."""
    tl = learn_translator(lang)
    labels = _model_labels(tl)
    makers = {"recall": _recall_sentences, "order": _order_sentences, "position": _position_sentences}
    sentences = []
    for task in result.lengths:
        T = _longest(result, task)
        if T is None:
            continue
        sentences.append(tl("{title} at T = {T}: {listing}.").format(
            title=_task_titles(tl)[task], T=format_integer(T, lang), listing=_listing(result, task, T, lang, labels)))
        sentences += makers[task](result, T, lang, tl)
    sentences.append(run_line(result, lang))
    return sentences


def run_line(result: LearnResult, lang: str = "en") -> str:
    """How it was run: runs, seeds, steps, threads, PyTorch, time; and the partial-result flag."""
    tl = learn_translator(lang)
    settings = result.config.settings
    line = tl("{runs} runs, seeds per cell: {seeds}, at most {steps} steps of {batch} examples each, tested on "
              "{test} examples; CPU threads: {threads}, deterministic kernels, PyTorch {torch}; {time}.").format(
        runs=format_integer(len(result.runs), lang), seeds=result.config.seeds,
        steps=format_integer(settings.steps, lang), batch=settings.batch, test=format_integer(settings.test_size, lang),
        threads=result.threads, torch=result.torch_version, time=duration_text(result.seconds, lang))
    if result.partial:
        line += " " + tl("Interrupted: {done} of {planned} runs finished; the tables show those.").format(
            done=format_integer(len(result.runs), lang), planned=format_integer(result.planned, lang))
    return line


def render_learn(result: LearnResult, lang: str = "en") -> Group:
    """The three tables (those of the tasks run) and the sentences, as one Rich renderable."""
    tables = [learn_table(result, task, lang) for task in result.lengths]
    return Group(*tables, *(Text(s) for s in learn_sentences(result, lang)))


def progress_text(run: PlannedRun | None, lang: str = "en") -> str:
    """The progress bar's description of the run about to start.

    >>> progress_text(PlannedRun("recall", "elman", 64, 1))
    'recall · Elman RNN · T = 64 · seed 1'
    """
    tl = learn_translator(lang)
    if run is None:
        return tl("Done")
    tasks = {"recall": tl("recall"), "order": tl("order"), "position": tl("position")}
    return tl("{task} · {model} · T = {T} · seed {seed}").format(
        task=tasks.get(run.task, run.task), model=model_label(run.model, lang), T=run.T, seed=run.seed)


def plot_learn(result: LearnResult, lang: str = "en"):
    """A matplotlib Figure: accuracy against T per model, one panel per task, range over seeds as bars.

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    tl = learn_translator(lang)
    labels, titles = _model_labels(tl), _task_titles(tl)
    tasks = list(result.lengths)
    figure = new_figure(figsize=(5.2 * len(tasks), 4.4), layout="constrained")
    axes = figure.subplots(1, len(tasks), squeeze=False)[0]
    colours = {m: f"C{i}" for i, m in enumerate(("elman", "lstm", "gru", "attention", "attention-pe", "mlp"))}
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
    suptitle = tl("seqlab learn: {seeds} seeds, PyTorch {torch}, CPU threads: {threads}").format(
        seeds=result.config.seeds, torch=result.torch_version, threads=result.threads)
    if result.partial:
        suptitle += " — " + tl("interrupted")
    figure.suptitle(suptitle)
    return figure


def write_plots(result: LearnResult, base: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Save the figure as ``base.png`` and ``base.svg`` (a suffix .png/.svg on ``base`` is dropped)."""
    return save_png_svg(plot_learn(result, lang), base)


def learn_json(result: LearnResult) -> str:
    """The whole result (config, every run, the summary) as indented JSON."""
    from seqlab.render.json_output import to_json

    return to_json(result)
