"""Render a :class:`~seqlab.studies.bench.BenchResult`: tables, sentences, CSV, JSON and plots (L7, L8).

Results in, pictures and files out: nothing here measures. The table puts, for each thread setting and
d, the median ± IQR of every machine beside the time ratio recurrence / attention (measured and
predicted by the work–span model), who finished first at that length (decided from the interleaved rounds,
or "not judged") and the work ratio d/T it is to be read against: attention does T/d times the
recurrence's multiplications, so recurrence / attention *work* is d/T, and a time ratio above d/T is what
spreading the work over processors buys (L8).

Who is faster is never read from two medians: the crossover sentences say what the decisions say
(:func:`seqlab.studies.bench_model.measured_crossover`) — a bracket where attention was first on one side and
the recurrence on the other, or "not judged" and why — and the work–span model's crossing is given as the
model's, never as a measurement. Every time is stated with its thread count.

Sentences go through the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``). The translation
function is called ``tr`` (``test_i18n`` extracts ``_``, ``tr`` and ``tl`` calls alike). Plots use matplotlib's
object API on the Agg canvas (no pyplot, no global backend change), imported only when a plot is made.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_fraction, format_integer, format_number, format_seconds, translator
from seqlab.measure.timing import MachineLoad, busiest
from seqlab.render.compare import MIN_BLOCKS, timed_blocks, timing_quality
from seqlab.render.labels import machine_label
from seqlab.render.machine_load import busy_caveat
from seqlab.render.figures import new_figure, save_png_svg, tidy_texts
from seqlab.render.json_output import to_json
from seqlab.studies.bench import MACHINES, PAIRS, BenchResult, Crossover, LengthDecision, ThreadScaling
from seqlab.render.tables import FittedTable

DOMAIN = "seqlab"
NOISY_MARK = "†"
CSV_FIELDS = ("device", "threads", "d_model", "batch", "T", "machine", "multiplications", "span_ops",
              "predicted_s", "bound", "median_s", "iqr_s", "first_call_s", "runs", "noisy", "load_1min", "busy", "sample",
              "sample_s")


def _threads_text(threads: int, lang: str) -> str:
    tr = translator(lang)
    return tr("1 thread") if threads == 1 else tr("{threads} threads").format(threads=threads)


def _threads_list(threads: tuple[int, ...], lang: str) -> str:
    """The thread settings of a sweep, as a title says them: "1 thread", "1 thread and 2 threads"."""
    tr = translator(lang)
    texts = [_threads_text(n, lang) for n in threads]
    if len(texts) == 1:
        return texts[0]
    return tr("{most} and {last}").format(most=", ".join(texts[:-1]), last=texts[-1])


def first_text(decision: LengthDecision, crossover: Crossover, lang: str) -> str:
    """Who finished first at one length, as a table cell says it: a machine's name, "tie" or "not judged"."""
    tr = translator(lang)
    first = decision.first
    if first in ("attention", "recurrence"):
        key = crossover.attention if first == "attention" else crossover.recurrence
        return machine_label(MACHINES[key].label, lang)
    return tr("tie") if first == "tie" else tr("not judged")


def _crossover_of(result: BenchResult, pair: tuple[str, str], threads: int, d: int) -> Crossover | None:
    return next((c for c in result.crossovers if (c.recurrence, c.attention) == pair and c.threads == threads
                 and c.d_model == d), None)


def _pairs(result: BenchResult) -> list[tuple[str, str]]:
    return [(rec, att) for rec, att in PAIRS if rec in result.machines and att in result.machines]


def _median(result: BenchResult, machine: str, threads: int, d: int, T: int) -> float:
    return result.point(machine, threads, d, T).timing.median_s


def _ratio(result: BenchResult, pair: tuple[str, str], threads: int, d: int, T: int, predicted: bool = False) -> float:
    rec, att = (result.point(key, threads, d, T) for key in pair)
    return rec.predicted_s / att.predicted_s if predicted else rec.timing.median_s / att.timing.median_s


# --- Table and sentences ------------------------------------------------------------------------------

def bench_table(result: BenchResult, threads: int, d: int, lang: str = "en", load_note: bool = True) -> Table:
    """T × machine: median ± IQR per call, then recurrence / attention time (measured, model), who finished
    first (decided from the interleaved rounds, :attr:`Crossover.decisions`) and work d/T.

    ``load_note``: end the caption with the busy-machine caveat when the machine was busy (``render_bench``
    says it under the first table only: it is about the whole sweep).
    """
    tr = translator(lang)
    calibration = result.calibration(threads)
    title = tr("Forward pass per call, median ± IQR: {threads}, d_model = {d}").format(
        threads=_threads_text(threads, lang), d=format_integer(d, lang))
    blocks = [timed_blocks(result.point(key, threads, d, T).timing) for key in result.machines for T in result.lengths]
    caption = tr("{device} ({name}), PyTorch {torch}, float32, batch {batch}. Model: {flops} FLOP/s from a "
                 "{n}×{n} matmul, {latency} per op from a chain of {ops} ops. {mark} noisy: IQR over a tenth of "
                 "the median.").format(
        device=result.device, name=result.device_name, torch=result.torch_version, batch=result.batch,
        flops=format_number(calibration.flops_per_s, lang), n=calibration.matmul_size,
        latency=format_seconds(calibration.latency_s, lang), ops=calibration.chain_ops, mark=NOISY_MARK)
    caption += " " + _blocks_text(min(blocks), max(blocks), lang)
    caveat = busy_caveat(sweep_load(result), lang) if load_note else ""
    caption += f" {caveat}" if caveat else ""
    table = FittedTable(title=title, caption=caption, title_justify="left", caption_justify="left")
    table.add_column("T", justify="right")
    for key in result.machines:
        table.add_column(machine_label(MACHINES[key].label, lang), justify="right")
    pair = _pairs(result)[:1]  # the fastest pair present; the other one is in the sentences and files
    names = [dict(rec=machine_label(MACHINES[rec].label, lang), att=machine_label(MACHINES[att].label, lang)) for rec, att in pair]
    for column in (tr("{rec} / {att} time"), tr("{rec} / {att} model")) if pair else ():
        table.add_column(column.format(**names[0]), justify="right")
    crossing = _crossover_of(result, pair[0], threads, d) if pair else None
    if crossing is not None:
        table.add_column(tr("first (by ×{margin})").format(margin=format_number(crossing.margin, lang)),
                         justify="right")
    if pair:
        table.add_column(tr("work d/T"), justify="right")
    for T in result.lengths:
        row = [format_integer(T, lang)]
        for key in result.machines:
            row.append(_cell(result.point(key, threads, d, T).timing, lang))
        if pair:
            row += [format_number(_ratio(result, pair[0], threads, d, T, model), lang) for model in (False, True)]
            if crossing is not None:
                decided = {x.T: x for x in crossing.decisions}
                row.append(first_text(decided[T], crossing, lang) if T in decided else "")
            row.append(format_number(d / T, lang))
        table.add_row(*row)
    return table


def _cell(timing, lang: str) -> str:
    """``median ± IQR`` (``†`` when noisy); from fewer than 3 timed blocks the median alone, saying so."""
    tr = translator(lang)
    median, blocks = format_seconds(timing.median_s, lang), timed_blocks(timing)
    if blocks == 1:
        return tr("{median} (one block)").format(median=median)
    if blocks < MIN_BLOCKS:
        return tr("{median} ({blocks} blocks)").format(median=median, blocks=blocks)
    mark = f" {NOISY_MARK}" if timing.noisy else ""
    return f"{median} ± {format_seconds(timing.iqr_s, lang)}{mark}"


def _blocks_text(fewest: int, most: int, lang: str) -> str:
    """How many timed blocks each median comes from, and that fewer than 3 give no IQR."""
    tr = translator(lang)
    if most == 1:
        text = tr("Each time comes from a single timed block.")
    elif fewest == most:
        text = tr("Each time is the median of {blocks} timed blocks.").format(blocks=fewest)
    else:
        text = tr("Each time is the median of {fewest} to {most} timed blocks.").format(fewest=fewest, most=most)
    if fewest < MIN_BLOCKS:
        text += " " + tr("Fewer than 3 blocks give no IQR: those times are rough.")
    return text


def sweep_load(result: BenchResult) -> MachineLoad | None:
    """The machine's load behind a sweep's times: the busiest of the sweep's own reading and its timings'."""
    return busiest([result.load, *(point.timing for point in result.points)])


def _caveat(result: BenchResult, threads: tuple[int, ...], d: int, lang: str, machines: tuple[str, ...] = (),
            lengths: tuple[int, ...] = ()) -> str:
    """A sentence to append when a timing behind a sentence is rough or noisy (L8), else ``""``."""
    tr = translator(lang)
    timings = [result.point(key, n, d, T).timing for n in threads for key in machines or result.machines
               for T in lengths or result.lengths]
    quality = timing_quality(*timings)
    texts = caveat_texts(lang)
    return " " + texts[quality][0] if quality in texts else ""


def _decisions_sentence(c: Crossover, lang: str) -> str:
    """Who finished first at every length, by the margin over the interleaved rounds (or not judged)."""
    tr = translator(lang)
    rounds = max((x.decision.rounds for x in c.decisions), default=0)
    each = "; ".join(f"T = {format_integer(x.T, lang)} {first_text(x, c, lang)}" for x in c.decisions)
    return tr("First to finish, by a factor of {margin} over {rounds} interleaved rounds: {each}.").format(
        margin=format_number(c.margin, lang), rounds=format_integer(rounds, lang), each=each)


def _not_judged_reason(c: Crossover, result: BenchResult, lang: str, values: dict[str, str]) -> str:
    tr = translator(lang)
    attention = [x.T for x in c.decisions if x.first == "attention"]
    recurrence = [x.T for x in c.decisions if x.first == "recurrence"]
    if c.reason == "out_of_order":
        later = max(attention)
        earlier = min(T for T in recurrence if T < later)
        return tr("{rec} finished first at T = {earlier}, yet {att} at the longer T = {later}").format(
            earlier=format_integer(earlier, lang), later=format_integer(later, lang), **values)
    if c.reason == "longest_undecided":
        last = c.decisions[-1]
        return tr("at the longest length, T = {last}, neither finished first by the margin ({outcome})").format(
            outcome=first_text(last, c, lang), **values)
    if c.reason == "shortest_undecided":
        return tr("{rec} finished first from T = {from_T} on, but at no shorter length did {att}, so the "
                  "crossing is not bracketed").format(from_T=format_integer(min(recurrence), lang), **values)
    return tr("at no length did either finish first by the margin")


def _crossover_sentence(c: Crossover, result: BenchResult, lang: str) -> str:
    """The measured crossover as the decisions state it, the lengths' decisions, then the model's crossing."""
    tr = translator(lang)
    values = dict(threads=_threads_text(c.threads, lang), d=format_integer(c.d_model, lang),
                  rec=machine_label(MACHINES[c.recurrence].label, lang), att=machine_label(MACHINES[c.attention].label, lang),
                  work=format_fraction(c.work_T, lang), first=format_integer(c.decisions[0].T, lang),
                  last=format_integer(c.decisions[-1].T, lang),
                  ratio=format_number(c.decisions[-1].T / float(c.work_T), lang))
    if c.time_where == "within":
        low, high = c.time_bracket
        text = tr("{threads}, d_model = {d}: {att} finished first up to T = {low} and {rec} from T = {high} on; "
                  "{att} becomes the slower one between them (near T = {T} on the medians); it does more "
                  "multiplications past T = {work}.").format(
            T=format_number(c.time_T, lang), low=format_integer(low, lang), high=format_integer(high, lang),
            **values)
    elif c.time_where == "below":
        text = tr("{threads}, d_model = {d}: {rec} finished first already at the shortest length measured, T = "
                  "{first}, and at the longest, T = {last}; {att} finished first at none; it does more "
                  "multiplications past T = {work}.").format(**values)
    elif c.time_where == "not_judged":
        text = tr("{threads}, d_model = {d}: the time crossover of {att} and {rec} is not judged: {reason}; "
                  "{att} does more multiplications past T = {work}.").format(
            reason=_not_judged_reason(c, result, lang, values), **values)
    elif c.decisions[-1].T <= c.work_T:
        text = tr("{threads}, d_model = {d}: {att} is still faster than {rec} at T = {last}, the longest length "
                  "measured, where it also does fewer multiplications (work crosses over at T = {work}).").format(
            **values)
    else:
        text = tr("{threads}, d_model = {d}: {att} is still faster than {rec} at T = {last}, the longest length "
                  "measured, although it does more multiplications past T = {work} ({ratio} times as many "
                  "there).").format(**values)
    if c.predicted_T is None:
        model = tr("In the work–span model, a model and not a measurement, it never becomes slower.")
    elif c.predicted_T == 0:
        model = tr("In the work–span model, a model and not a measurement, it is slower at every length.")
    else:
        model = tr("The work–span model, a model and not a measurement, puts the crossing at T = {T}.").format(
            T=format_number(c.predicted_T, lang))
    if c.predicted_noisy:
        model += " " + tr("Its calibration timings are noisy (IQR over a tenth of the median): its constants are "
                          "rough.")
    return (f"{text} {_decisions_sentence(c, lang)} {model}"
            + _caveat(result, (c.threads,), c.d_model, lang, (c.recurrence, c.attention)))


def _scaling_change(scaling: ThreadScaling, lang: str) -> str:
    """What more threads did to one machine, as its decision says it."""
    tr = translator(lang)
    d = scaling.decision
    values = dict(machine=machine_label(MACHINES[scaling.machine].label, lang), factor=format_number(d.lead, lang),
                  low=format_number(d.low, lang), high=format_number(d.high, lang),
                  margin=format_number(d.margin, lang))
    if d.outcome == "b_first":
        return tr("{machine} runs {factor} times as fast").format(**values)
    if d.outcome == "a_first":
        return tr("{machine} takes {factor} times as long").format(**values)
    if d.outcome == "tie":
        return tr("{machine} runs as fast within a factor of {margin}").format(**values)
    return tr("{machine}: not judged (the per-round ratios run from {low} to {high} across the margin "
              "{margin})").format(**values)


def _scaling_sentence(result: BenchResult, pair: tuple[str, str], d: int, lang: str) -> str:
    """What the most threads bought each machine of a pair at the longest length, decided from the rounds in which
    both thread counts were timed together."""
    tr = translator(lang)
    few, many, T = result.threads[0], result.threads[-1], result.lengths[-1]
    found = {s.machine: s for s in result.thread_scalings if (s.d_model, s.T, s.few, s.many) == (d, T, few, many)}
    if not all(key in found for key in pair):
        return ""
    changes = [_scaling_change(found[key], lang) for key in pair]
    return tr("From {few} to {many} at T = {T}, d_model = {d}, both timed in the same interleaved rounds: "
              "{rec_change}; {att_change}.").format(
        few=_threads_text(few, lang), many=_threads_text(many, lang), T=format_integer(T, lang),
        d=format_integer(d, lang), rec_change=changes[0], att_change=changes[1]) + _caveat(
        result, (few, many), d, lang, pair, (T,))


def _model_sentence(result: BenchResult, threads: int, d: int, lang: str) -> str:
    tr = translator(lang)
    T = result.lengths[-1]
    ratios = ", ".join(f"{machine_label(MACHINES[key].label, lang)} {format_number(p.timing.median_s / p.predicted_s, lang)}"
                       for key in result.machines for p in [result.point(key, threads, d, T)])
    return tr("{threads}, d_model = {d}: measured over predicted time at T = {T}: {ratios}.").format(
        threads=_threads_text(threads, lang), d=format_integer(d, lang), T=format_integer(T, lang),
        ratios=ratios) + _caveat(result, (threads,), d, lang, lengths=(T,))


def _kernel_sentence(result: BenchResult, lang: str) -> str:
    tr = translator(lang)
    check = result.checks[0]
    kernels = "; ".join(f"{machine_label(MACHINES[c.machine].label, lang)} {', '.join(c.kernels + c.unaccounted)}"
                        for c in result.checks if c.d_model == check.d_model)
    wrong, no_formula = [], tr("no formula")
    for c in result.checks:
        if c.unaccounted:
            wrong.append(f"{machine_label(MACHINES[c.machine].label, lang)} ({', '.join(c.unaccounted)}: {no_formula})")
        elif c.counted != c.closed_form:
            wrong.append(machine_label(MACHINES[c.machine].label, lang))
    values = dict(T=format_integer(check.T, lang), d=format_integer(check.d_model, lang), kernels=kernels,
                  machines=", ".join(dict.fromkeys(wrong)))
    if wrong:
        return tr("Kernels that did the multiplications at T = {T}, d_model = {d}: {kernels}. The counted "
                  "multiplications differ from the closed forms for {machines}.").format(**values)
    return tr("Kernels that did the multiplications at T = {T}, d_model = {d}: {kernels}. The counted "
              "multiplications equal the closed forms.").format(**values)


def bench_sentences(result: BenchResult, lang: str = "en") -> list[str]:
    """Where time crosses over against where work does, per thread setting; and what more threads buy (L8)."""
    sentences = [_crossover_sentence(c, result, lang) for c in result.crossovers]
    sentences += [_model_sentence(result, threads, d, lang) for threads in result.threads for d in result.d_models]
    if len(result.threads) > 1:
        sentences += [text for d in result.d_models for pair in _pairs(result)
                      if (text := _scaling_sentence(result, pair, d, lang))]
    return sentences + ([_kernel_sentence(result, lang)] if result.checks else [])


def caveat_texts(lang: str = "en") -> dict[str, tuple[str, str]]:
    """Timing quality (``"few"`` blocks, ``"noisy"``) -> (the caveat a sentence ends with, its "as above" form)."""
    tr = translator(lang)
    return {"few": (tr("(A rough figure: some of these times come from fewer than 3 timed blocks, with no spread "
                       "to judge them by.)"), tr("(A rough figure, as above.)")),
            "noisy": (tr("(Noisy: the spread of some of these times is over a tenth of the median, the machine was "
                         "busy; read it loosely.)"), tr("(Noisy, as above.)"))}


def said_once(sentences: list[str], lang: str = "en") -> list[str]:
    """``sentences`` with each timing caveat written out once: where it comes again it reads "as above".

    >>> noisy, again = caveat_texts("en")["noisy"]
    >>> said_once(["A. " + noisy, "B. " + noisy, "C."])[1:]
    ['B. (Noisy, as above.)', 'C.']
    """
    said: set[str] = set()
    kept = []
    for sentence in sentences:
        for caveat, again in caveat_texts(lang).values():
            if sentence.endswith(" " + caveat):
                if caveat in said:
                    sentence = sentence[:-len(caveat)] + again
                said.add(caveat)
        kept.append(sentence)
    return kept


def render_bench(result: BenchResult, lang: str = "en") -> Group:
    """Every table (one per thread setting and d) and the sentences, as one Rich renderable; each caveat once."""
    tables = [bench_table(result, threads, d, lang, load_note=index == 0)
              for index, (threads, d) in enumerate((n, d) for n in result.threads for d in result.d_models)]
    return Group(*tables, *(Text(sentence) for sentence in said_once(bench_sentences(result, lang), lang)))


# --- Files ---------------------------------------------------------------------------------------------

def to_csv(result: BenchResult) -> str:
    """Every timed sample, one row each, with its point's conditions, work, span and prediction (seconds)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for p in result.points:
        t = p.timing
        for index, sample in enumerate(t.samples):
            writer.writerow((result.device, p.threads, p.d_model, result.batch, p.T, p.machine, p.multiplications,
                             p.span_ops, repr(p.predicted_s), p.bound, repr(t.median_s), repr(t.iqr_s),
                             repr(t.first_call_s), t.runs, t.noisy,
                             "" if t.load is None or t.load.load_1min is None else repr(t.load.load_1min),
                             "" if t.load is None else t.load.busy, index, repr(sample)))
    return out.getvalue()


#: One marker per machine, so that lines lying on one another still show each of them.
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")


def plot_bench(result: BenchResult, lang: str = "en"):
    """A matplotlib Figure: time vs T per thread setting (log axes), and recurrence / attention vs T with d/T.

    Every panel has its own tick labels; each machine has its own colour and marker, the model is drawn
    thin and dotted with hollow markers over the measurement, so no line hides another; one legend for
    both rows stands under the panels, and long titles and labels are wrapped to their room (tidy_texts).

    Raises:
        SeqlabError: matplotlib is not installed.
    """
    tr = translator(lang)
    pairs = _pairs(result)
    columns, rows = len(result.threads), 2 if pairs else 1
    figure = new_figure(figsize=(4.8 * columns + 3.2, 4.2 * rows), layout="constrained")
    from matplotlib.ticker import NullFormatter
    axes = figure.subplots(rows, columns, squeeze=False, sharex=True, sharey="row")
    styles = ("-", "--", "-.", ":")
    for column, threads in enumerate(result.threads):
        ax = axes[0][column]
        for i, d in enumerate(result.d_models):
            suffix = f" (d = {format_integer(d, lang)})" if len(result.d_models) > 1 else ""
            for n, key in enumerate(result.machines):
                medians = [_median(result, key, threads, d, T) for T in result.lengths]
                ax.plot(result.lengths, medians, styles[i % 4], marker=MARKERS[n % len(MARKERS)], markersize=4,
                        linewidth=1.6, color=f"C{n}", label=machine_label(MACHINES[key].label, lang) + suffix)
                if pairs and key in pairs[0]:  # the model beside the measurement, for the pair in the table
                    ax.plot(result.lengths, [result.point(key, threads, d, T).predicted_s for T in result.lengths],
                            ":", marker=MARKERS[n % len(MARKERS)], markersize=6, markerfacecolor="none",
                            color=f"C{n}", linewidth=1, zorder=3,
                            label=tr("{machine}, model").format(machine=machine_label(MACHINES[key].label, lang)) + suffix)
        ax.set(xscale="log", yscale="log", xlabel=tr("T (positions)"), ylabel=tr("seconds per forward call"),
               title=_threads_text(threads, lang))
        ax.grid(True, which="both", alpha=0.3)
        if not pairs:
            continue
        ax = axes[1][column]
        rec, att = pairs[0]
        for i, d in enumerate(result.d_models):
            suffix = f" (d = {format_integer(d, lang)})" if len(result.d_models) > 1 else ""
            ax.plot(result.lengths, [_ratio(result, pairs[0], threads, d, T) for T in result.lengths],
                    styles[i % 4], marker="o", markersize=4, linewidth=1.6, color="C0",
                    label=tr("time, measured") + suffix)
            ax.plot(result.lengths, [_ratio(result, pairs[0], threads, d, T, True) for T in result.lengths],
                    ":", marker="s", markersize=6, markerfacecolor="none", linewidth=1, color="C1", zorder=3,
                    label=tr("time, model") + suffix)
            ax.plot(result.lengths, [d / T for T in result.lengths], "--", marker="^", markersize=4, linewidth=1,
                    color="C7", label=tr("work, d/T") + suffix)
            ax.axvline(d, color="C7", linewidth=0.8, linestyle=styles[i % 4])  # the work crossover, T = d
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set(xscale="log", yscale="log", xlabel=tr("T (positions)"),
               ylabel=tr("{rec} / {att}").format(rec=machine_label(MACHINES[rec].label, lang), att=machine_label(MACHINES[att].label, lang)),
               title=_threads_text(threads, lang))
        ax.grid(True, which="both", alpha=0.3)
    for ax in axes.flat:  # shared axes hide inner tick labels: every panel shows its own
        ax.set_xticks(result.lengths, [format_integer(T, lang) for T in result.lengths], fontsize="small",
                      rotation=45)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(labelbottom=True, labelleft=True)
    handles, labels = [], []  # the same series in each column: one legend under the panels, for both rows
    for row in axes:
        for handle, label in zip(*row[0].get_legend_handles_labels()):
            handles.append(handle)
            labels.append(label)
    figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize="small")
    figure.suptitle(tr("{name}, PyTorch {torch}, float32, batch {batch}; timed on {threads}, one column each").format(
        name=result.device_name, torch=result.torch_version, batch=format_integer(result.batch, lang),
        threads=_threads_list(result.threads, lang)))
    return tidy_texts(figure)


def write_plots(result: BenchResult, base: str | Path, lang: str = "en") -> tuple[Path, Path]:
    """Save the figure as ``base.png`` and ``base.svg`` (a suffix .png/.svg on ``base`` is dropped)."""
    return save_png_svg(plot_bench(result, lang), base)


def write_all(result: BenchResult, directory: str | Path, lang: str = "en") -> dict[str, Path]:
    """bench.json, bench.csv, bench.png and bench.svg in ``directory`` (created if missing)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"json": directory / "bench.json", "csv": directory / "bench.csv"}
    paths["json"].write_text(to_json(result) + "\n", encoding="utf-8")
    paths["csv"].write_text(to_csv(result), encoding="utf-8")
    paths["png"], paths["svg"] = write_plots(result, directory / "bench", lang)
    return paths
