"""Render a :class:`~seqlab.studies.decode.DecodeResult`: the table, the sentences and the plot (L1, L2, L5, L6, L8).

Results in, words and pictures out: nothing here measures. Every sentence words a decision the study took from
its measurements (:class:`~seqlab.studies.decode.Win`, :class:`~seqlab.studies.decode.Growth`,
:class:`~seqlab.studies.decode.Asymmetry`), so a different measurement gives a different sentence.

Sentences go through the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``); the translation
function is called ``tr``. matplotlib is imported only when a plot is drawn (object API, Agg canvas).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, format_number, format_seconds, translator
from seqlab.layers import mixers
from seqlab.render.machine_load import busy_caveat
from seqlab.measure.decode import CACHE_MACHINES
from seqlab.measure.rounds import Decision
from seqlab.studies.decode import DecodeResult, Win
from seqlab.render.tables import FittedTable

DOMAIN = "seqlab"
#: Marks a time whose IQR exceeds a tenth of its median (:attr:`seqlab.measure.timing.Timing.noisy`).
NOISY_MARK = "†"


def machine_label(machine: str, lang: str = "en") -> str:
    """The machine's name for readers, in ``lang`` (the key itself for a machine without one).

    >>> machine_label("attention_kv_cache"), machine_label("attention_kv_cache", "es")
    ('attention, KV cache', 'atención con caché KV')
    """
    tr = translator(lang)
    labels = {"elman": tr("Elman RNN"), "attention_kv_cache": tr("attention, KV cache"),
              "attention_static_cache": tr("attention, static KV cache"),
              "attention_no_cache": tr("attention, no cache")}
    labels.update((name, tr(mixer.decode.label)) for name, mixer in mixers.decode_machines())  # the registry's
    return labels.get(machine, machine)


def _times(value: float, lang: str) -> str:
    return "×" + format_number(value, lang)


def _positions(positions: list[int], lang: str) -> str:
    return ", ".join(format_integer(t, lang) for t in positions)


def time_cell(step, lang: str = "en") -> str:
    """A step's time as a cell: median ± IQR, marked † when noisy; "—" when the step was not timed (any object
    with a ``timing``: a :class:`~seqlab.measure.timing.Timing` or None)."""
    if step.timing is None:
        return "—"
    mark = f" {NOISY_MARK}" if step.timing.noisy else ""
    return f"{format_seconds(step.timing.median_s, lang)} ± {format_seconds(step.timing.iqr_s, lang)}{mark}"


def decode_table(result: DecodeResult, lang: str = "en") -> Table:
    """One row per machine and position: multiplications counted and in closed form, time, state bytes."""
    tr = translator(lang)
    config = result.config
    title = tr("Cost of one new token at position t, d_model = {d}").format(d=format_integer(config.d_model, lang))
    table = FittedTable(title=title, caption=_caption(result, lang), title_justify="left", caption_justify="left")
    for header in (tr("machine"), "t", tr("multiplications\n(counted)"), tr("closed\nform"),
                   tr("time per token\nmedian ± IQR"), tr("state\n(bytes)")):
        table.add_column(header, justify="left" if header == tr("machine") else "right")
    for machine in config.machines:
        for index, t in enumerate(config.positions):
            step = result.step(machine, t)
            closed = "—" if step.closed_form is None else (
                "=" if step.closed_form == step.multiplications else format_integer(step.closed_form, lang))
            table.add_row(machine_label(machine, lang) if index == 0 else "", format_integer(t, lang),
                          format_integer(step.multiplications, lang), closed, time_cell(step, lang),
                          format_integer(step.state_bytes, lang))
    return table


def _caption(result: DecodeResult, lang: str) -> str:
    """Scope and conditions of every figure in the table."""
    tr = translator(lang)
    config = result.config
    parts = [tr("Multiplications: one per multiply-add, counted on the step as it ran (bias, tanh, softmax and "
                "scaling not counted); each machine's own layer: linear attention includes its output "
                "projection, seqlab's attention has none. '=' the count equals the closed form.")]
    if config.time:
        threads = tr("1 thread") if config.threads == 1 else tr("{threads} threads").format(threads=config.threads)
        parts.append(tr("Time: median ± IQR of one step over {rounds} interleaved rounds (at each position every "
                        "machine runs one block of steps per round, the order rotating), {threads}, float32, batch "
                        "{batch}, PyTorch {torch}; {mark} noisy: IQR over a tenth of the median.").format(
            rounds=config.rounds, threads=threads, batch=config.batch, torch=result.torch_version, mark=NOISY_MARK))
    parts.append(static_caption(result, lang))
    parts.append(busy_caveat(result.load, lang))
    return " ".join(part for part in parts if part)


def static_caption(result: DecodeResult, lang: str) -> str:
    """What the static cache's bytes are ("" when it was not run), its extra bytes over the growing cache measured.

    A static cache holds its capacity (the largest position) from the first token: its bytes are constant in t and
    equal to the growing cache's at the last position, plus what the state holds besides (its row count).
    """
    tr = translator(lang)
    config = result.config
    if "attention_static_cache" not in config.machines:
        return ""
    t = config.positions[-1]
    values = {"capacity": format_integer(t, lang), "t": format_integer(t, lang)}
    if "attention_kv_cache" not in config.machines:
        return tr("Static KV cache: {capacity} rows (the largest position) allocated once and written in place; it "
                  "holds its capacity from the first token, so its bytes are constant in t.").format(**values)
    extra = result.step("attention_static_cache", t).state_bytes - result.step("attention_kv_cache", t).state_bytes
    return tr("Static KV cache: {capacity} rows (the largest position) allocated once and written in place; it "
              "holds its capacity from the first token, so its bytes are constant in t and equal to the growing "
              "cache's at t = {t} plus {extra} bytes (its row count).").format(
        extra=format_integer(extra, lang), **values)


def _group_key(win: Win) -> tuple:
    if win.machine:
        return (win.machine,)
    blocking = win.blocking
    return (None, win.leader, win.runner_up, blocking.outcome if blocking else None)


def _groups(wins: list[Win]) -> list[tuple[Win, list[int]]]:
    """Consecutive positions with the same decision, each with its last Win (whose figures are quoted)."""
    groups: list[tuple[Win, list[int]]] = []
    for win in wins:
        if groups and _group_key(groups[-1][0]) == _group_key(win):
            groups[-1] = (win, groups[-1][1] + [win.t])
        else:
            groups.append((win, [win.t]))
    return groups


def win_sentences(result: DecodeResult, lang: str = "en") -> list[str]:
    """Where each machine wins: fewest multiplications, least time (decided in interleaved rounds), smallest state."""
    tr = translator(lang)
    lines = []
    for criterion in ("work", "time", "state"):
        for win, positions in _groups([w for w in result.wins if w.criterion == criterion]):
            values = {"machine": machine_label(win.machine or win.leader, lang),
                      "runner": machine_label(win.runner_up, lang), "ratio": _times(win.ratio, lang),
                      "positions": _positions(positions, lang), "t": format_integer(win.t, lang),
                      "margin": _times(win.margin, lang)}
            blocking = win.blocking
            if blocking is not None:  # the runner-up's time over the leader's, round by round
                values.update(low=_times(blocking.low, lang), high=_times(blocking.high, lang))
            lines.append(_win_text(tr, criterion, win).format(**values))
    return lines


def _win_text(tr: Callable[[str], str], criterion: str, win: Win) -> str:
    if criterion == "work":
        return (tr("Fewest multiplications per new token: {machine} at t = {positions} ({runner} needs {ratio} as "
                   "many at t = {t}).") if win.machine else
                tr("Fewest multiplications per new token at t = {positions}: {machine} and {runner} tie."))
    if criterion == "time":
        if win.machine:
            return tr("Fastest per new token on this machine: {machine} at t = {positions}, decided against every "
                      "other machine in interleaved rounds ({runner}, the closest, takes {ratio} as long at "
                      "t = {t}).")
        outcome = win.blocking.outcome if win.blocking else "not_judged"
        if outcome == "tie":
            return tr("Fastest per new token at t = {positions}: none, {machine} and {runner} tie ({runner}'s time "
                      "over {machine}'s, round by round, {low} to {high} between the quartiles, stays within the "
                      "{margin} margin).")
        if outcome == "a_first":
            return tr("Fastest per new token at t = {positions}: not judged, {machine} has the least median time but "
                      "{runner} finished first in the interleaved rounds ({runner}'s time over {machine}'s, round by "
                      "round, {low} to {high} between the quartiles).")
        return tr("Fastest per new token at t = {positions}: not judged, {machine} against {runner} is not decided "
                  "({runner}'s time over {machine}'s, round by round, {low} to {high} between the quartiles, "
                  "straddles the {margin} margin).")
    return (tr("Smallest state: {machine} at t = {positions} ({runner} holds {ratio} as many bytes at t = {t}).")
            if win.machine else tr("Smallest state at t = {positions}: {machine} and {runner} tie."))


def work_growth_sentences(result: DecodeResult, lang: str = "en") -> list[str]:
    """Whose multiplications per new token stay fixed and whose grow with t (and by how much)."""
    tr = translator(lang)
    fixed = [machine_label(g.machine, lang) for g in result.work_growth if g.kind == "constant"]
    grows = [tr("{machine} ×{ratio}").format(machine=machine_label(g.machine, lang),
                                             ratio=format_number(float(g.ratio), lang))
             for g in result.work_growth if g.kind != "constant"]
    lines = []
    if fixed:
        lines.append(tr("Multiplications per new token fixed whatever t: {machines}.").format(
            machines=", ".join(fixed)))
    if grows:
        positions = result.config.positions
        lines.append(tr("Multiplications per new token growing with t, from t = {first} to t = {last}: "
                        "{machines}.").format(first=format_integer(positions[0], lang),
                                              last=format_integer(positions[-1], lang), machines="; ".join(grows)))
    return lines


def growth_sentences(result: DecodeResult, lang: str = "en") -> list[str]:
    """How each machine's state grows with t: fixed, in step with t, or otherwise."""
    tr = translator(lang)
    fixed = [machine_label(g.machine, lang) for g in result.growth if g.kind == "constant"]
    lines = []
    if fixed:
        lines.append(tr("Fixed state whatever t: {machines}.").format(machines=", ".join(fixed)))
    for g in result.growth:
        if g.kind == "constant":
            continue
        text = (tr("{machine}: the state grows in step with t, {first} to {last} bytes (×{ratio} for ×{positions} "
                   "positions).") if g.kind == "linear" else
                tr("{machine}: the state grows {first} to {last} bytes (×{ratio}), not in step with t "
                   "(×{positions} positions)."))
        line = text.format(machine=machine_label(g.machine, lang), first=format_integer(g.first_bytes, lang),
                           last=format_integer(g.last_bytes, lang), ratio=format_number(float(g.ratio), lang),
                           positions=format_number(float(g.positions_ratio), lang))
        lines.append(line[:1].upper() + line[1:])  # a sentence that opens with a machine's name
    return lines


def _cache_nouns(lang: str) -> dict[str, str]:
    tr = translator(lang)
    return {"attention_kv_cache": tr("the KV cache"), "attention_static_cache": tr("the static KV cache")}


def _spread(decision: Decision, lang: str) -> dict[str, str]:
    return {"low": _times(decision.low, lang), "high": _times(decision.high, lang),
            "margin": _times(decision.margin, lang)}


def cache_sentences(result: DecodeResult, lang: str = "en") -> list[str]:
    """What a cache saves against recomputing keys and values at the last position, and the two caches' times.

    The work ratio is counted; every time ratio is a decision of :attr:`DecodeResult.cache_times` and is quoted
    only when decided (else the sentence says not judged, or a tie). Empty without attention's machines.
    """
    tr = translator(lang)
    machines, t = result.config.machines, result.config.positions[-1]
    nouns = _cache_nouns(lang)
    caches = [m for m in CACHE_MACHINES if m in machines]
    lines = []
    if "attention_no_cache" in machines and caches:
        none, first = result.step("attention_no_cache", t), result.step(caches[0], t)
        same = len({result.step(m, t).multiplications for m in caches}) == 1
        cache = tr("either KV cache") if len(caches) == 2 and same else nouns[caches[0]]
        parts = [tr("At t = {t}, attention without a cache does {work} the multiplications of {cache} per new token: "
                    "it recomputes every key and value.").format(
            t=format_integer(t, lang), work=_times(none.multiplications / first.multiplications, lang), cache=cache)]
        for decision in (d for d in result.cache_times if d.a == "attention_no_cache"):
            values = {"cache": nouns[decision.b], **_spread(decision, lang)}
            text = {"b_first": tr("It takes {time} the time of {cache} (decided round by round against the {margin} "
                                  "margin)."),
                    "a_first": tr("Yet it is faster than {cache} here, by {time} (decided round by round against the "
                                  "{margin} margin)."),
                    "tie": tr("Its time ties with that of {cache} (its time over that one's, round by round, {low} "
                              "to {high} between the quartiles, within the {margin} margin)."),
                    "not_judged": tr("Against {cache}, its time is not judged (its time over that one's, round by "
                                     "round, {low} to {high} between the quartiles, straddles the {margin} "
                                     "margin).")}[decision.outcome]
            parts.append(text.format(time=_times(decision.lead, lang), **values))
        lines.append(" ".join(parts))
    for decision in (d for d in result.cache_times if d.a == "attention_kv_cache"):
        text = {"b_first": tr("At t = {t}, the growing KV cache takes {time} the time of the static one per new "
                              "token: it copies its t rows at every step, the static cache writes one row in place."),
                "a_first": tr("At t = {t}, the growing KV cache is faster than the static one per new token, by "
                              "{time}."),
                "tie": tr("At t = {t}, the growing and the static KV cache tie in time per new token (the growing "
                          "one's time over the static one's, round by round, {low} to {high} between the quartiles, "
                          "within the {margin} margin)."),
                "not_judged": tr("At t = {t}, the growing against the static KV cache: time not judged (the growing "
                                 "one's time over the static one's, round by round, {low} to {high} between the "
                                 "quartiles, straddles the {margin} margin).")}[decision.outcome]
        lines.append(text.format(t=format_integer(t, lang), time=_times(decision.lead, lang),
                                 **_spread(decision, lang)))
    return lines


def asymmetry_sentence(result: DecodeResult, lang: str = "en") -> str:
    """Training against generation in one line, from the spans measured ("" when no cache machine was run)."""
    tr = translator(lang)
    a = result.asymmetry
    if a is None:
        return ""
    values = {"T1": format_integer(a.lengths[0], lang), "T2": format_integer(a.lengths[1], lang),
              "train1": a.training[0], "train2": a.training[1], "gen1": a.generation[0], "gen2": a.generation[1],
              "cache": _cache_nouns(lang)[a.cache]}
    if a.recurrence is not None:
        values.update(rec1=a.recurrence[0], rec2=a.recurrence[1])
    if a.holds:
        text = (tr("In training, causal attention's parallel pass has {train1} and {train2} matrix products in a row "
                   "at T = {T1} and {T2}: it does not grow; in generation, writing those T tokens with {cache} takes "
                   "{gen1} and {gen2} in a row, T steps like the Elman RNN's {rec1} and {rec2}.")
                if a.recurrence is not None else
                tr("In training, causal attention's parallel pass has {train1} and {train2} matrix products in a row "
                   "at T = {T1} and {T2}: it does not grow; in generation, writing those T tokens with {cache} takes "
                   "{gen1} and {gen2} in a row, one step per token."))
    else:
        text = (tr("The spans measured do not show the asymmetry: causal attention's parallel pass has {train1} and "
                   "{train2} matrix products in a row at T = {T1} and {T2}, generation with {cache} {gen1} and "
                   "{gen2}, the Elman RNN {rec1} and {rec2}.") if a.recurrence is not None else
                tr("The spans measured do not show the asymmetry: causal attention's parallel pass has {train1} and "
                   "{train2} matrix products in a row at T = {T1} and {T2}, generation with {cache} {gen1} and "
                   "{gen2}."))
    return text.format(**values)


def decode_sentences(result: DecodeResult, lang: str = "en") -> list[str]:
    """Every sentence, in the order shown: wins, growth of work and of state, the caches, the asymmetry."""
    lines = win_sentences(result, lang) + work_growth_sentences(result, lang) + growth_sentences(result, lang)
    lines += cache_sentences(result, lang) + [line for line in (asymmetry_sentence(result, lang),) if line]
    if not result.counts_match:
        tr = translator(lang)
        differ = [f"{machine_label(s.machine, lang)} t={s.t}" for s in result.steps
                  if s.closed_form is not None and s.closed_form != s.multiplications]
        lines.append(tr("Counted multiplications differ from the closed form for: {steps}.").format(
            steps=", ".join(differ)))
    return lines


def render_decode(result: DecodeResult, lang: str = "en") -> Group:
    """The table and the sentences, for a Rich console (or the report's HTML)."""
    return Group(decode_table(result, lang), *(Text(line) for line in decode_sentences(result, lang)))


def plot_decode(result: DecodeResult, path: str | Path, lang: str = "en") -> Path:
    """Multiplications, time and state bytes per new token against t, log axes; written to ``path`` (.png/.svg).

    Raises:
        SeqlabError: matplotlib is missing.
        OSError: the file cannot be written.
    """
    figure = decode_figure(result, lang)
    path = Path(path)
    figure.savefig(path, dpi=120, metadata={"Date": None} if path.suffix.lower() == ".svg" else {"Software": None})
    return path


def decode_figure(result: DecodeResult, lang: str = "en"):
    """The three panels as a matplotlib Figure (Agg canvas)."""
    from seqlab.render.figures import new_figure, tidy_texts

    tr = translator(lang)
    config = result.config
    panels = [(tr("multiplications per new token"), lambda s: s.multiplications, False),
              (tr("seconds per new token (median, IQR bars)"), lambda s: s.timing and s.timing.median_s, True),
              (tr("state (bytes)"), lambda s: s.state_bytes, False)]
    if not config.time:
        panels.pop(1)
    figure = new_figure(figsize=(4.2 * len(panels), 4.0), layout="constrained")
    for ax, (label, value, timed) in zip(figure.subplots(1, len(panels), squeeze=False)[0], panels, strict=True):
        for index, machine in enumerate(config.machines):
            steps = [result.step(machine, t) for t in config.positions]
            ys = [value(s) for s in steps]
            errors = [s.timing.iqr_s / 2 for s in steps] if timed else None
            ax.errorbar(config.positions, ys, yerr=errors, marker="osD^v"[index % 5], markersize=7 - index,
                        linewidth=1.2, linestyle=("-", "--", ":")[index % 3], color=f"C{index}",
                        label=machine_label(machine, lang), capsize=2)  # markers shrink so equal values show
        ax.set(xscale="log", yscale="log", xlabel=tr("position t of the new token"), ylabel=label)
        ax.set_xticks(config.positions, [format_integer(t, lang) for t in config.positions])
        ax.xaxis.set_minor_formatter("")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = figure.axes[0].get_legend_handles_labels()  # under the panels, never over a line
    figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 3), fontsize="small")
    figure.suptitle(tr("Generating one token at position t, d_model = {d}").format(d=format_integer(config.d_model,
                                                                                                      lang)))
    return tidy_texts(figure)


def report_texts(lang: str = "en") -> tuple[str, str, str]:
    """(heading, introduction, plot caption) of the decoding section of ``seqlab report``."""
    tr = translator(lang)
    return (tr("Generation: the cost of each new token"),
            tr("A model that writes runs one step per token, so every machine is a loop here. Per new token at a "
               "few positions t: multiplications counted on the step, its time and the state it carries "
               "(seqlab decode, quick sizes)."),
            tr("Multiplications, time and state per new token against t, log axes."))
