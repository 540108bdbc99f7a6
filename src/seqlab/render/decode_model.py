"""Render a :class:`~seqlab.studies.decode_model.ModelDecodeResult`: the table and the sentences (issue 24).

Results in, words out: nothing here measures. Each sentence words a figure or a decision the study took (the
growth it named, a count against its closed form), so a different measurement gives a different sentence.
Sentences go through the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``), the function ``tr``.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from seqlab.i18n import format_integer, translator
from seqlab.render.decode import NOISY_MARK, time_cell  # one time cell and noisy mark in both decode tables
from seqlab.render.machine_load import busy_caveat
from seqlab.studies.decode_model import Growth, ModelDecodeResult, ModelStep
from seqlab.render.tables import FittedTable

DOMAIN = "seqlab"


def kind_label(kind: str, lang: str = "en") -> str:
    """A state kind for readers.

    >>> kind_label("sliding_window_kv"), kind_label("recurrent", "es")
    ('sliding-window keys/values', 'estado recurrente')
    """
    tr = translator(lang)
    return {"attention_kv": tr("attention keys/values"), "sliding_window_kv": tr("sliding-window keys/values"),
            "convolution": tr("convolution window"), "recurrent": tr("recurrent state")}.get(kind, kind)


def layer_label(kind: str, lang: str = "en") -> str:
    """A kind of layer for readers (the parts a step's multiplications are split into).

    >>> layer_label("mamba"), layer_label("sliding", "es")
    ('Mamba layers', 'las capas de ventana deslizante')
    """
    tr = translator(lang)
    return {"attention": tr("attention layers"), "sliding": tr("sliding-window layers"), "mamba": tr("Mamba layers"),
            "mamba2": tr("Mamba-2 layers"), "rwkv": tr("RWKV layers"),
            "output": tr("the output layer")}.get(kind, kind)


def growth_label(kind: str, lang: str = "en") -> str:
    """A growth name of :data:`~seqlab.fit.GROWTHS` (or a sum of them) for readers.

    >>> growth_label("constant + linear", "es"), growth_label("linear + capped", "es")
    ('constante + lineal', 'lineal + con tope')
    """
    tr = translator(lang)
    words = {"constant": tr("constant"), "linear": tr("linear"), "capped": tr("capped"), "other": tr("other")}
    return " + ".join(words.get(part, part) for part in kind.split(" + "))


def _same_or(value: int | None, reference: int, lang: str) -> str:
    return "—" if value is None else "=" if value == reference else format_integer(value, lang)


def model_decode_table(result: ModelDecodeResult, lang: str = "en") -> Table:
    """One row per cache and position: multiplications (counted, closed form, Kaplan's), time, bytes per kind."""
    tr = translator(lang)
    facts = result.model
    title = tr("One new token of {name} ({architecture}, {parameters} parameters), per position t").format(
        name=facts.name, architecture=facts.architecture, parameters=format_integer(facts.parameters, lang))
    table = FittedTable(title=title, caption=_caption(result, lang), title_justify="left", caption_justify="left")
    kaplan = any(step.kaplan is not None for step in result.steps)  # columns with a figure in some row only
    timed = result.config.time
    headers = [tr("cache"), "t", tr("multiplications\n(counted)"), tr("closed\nform")]
    headers += ["Kaplan"] * kaplan + [tr("time per token\nmedian ± IQR")] * timed
    headers += [kind_label(kind, lang) + "\n" + tr("(bytes)") for kind in result.kinds]
    headers += [tr("closed\nform")]
    for header in headers:
        table.add_column(header, justify="left" if header == tr("cache") else "right")
    previous = None
    for step in result.steps:
        closed_bytes = None if step.closed_bytes is None else sum(step.closed_bytes.values())
        exact = step.closed_bytes is not None and dict(step.closed_bytes) == dict(step.state.by_kind)
        cache = tr("dynamic") if step.cache == "dynamic" else tr("static")
        cells = [cache if step.cache != previous else "", format_integer(step.t, lang),
                 format_integer(step.multiplications, lang), _same_or(step.closed_form, step.multiplications, lang)]
        if kaplan:
            cells.append("—" if step.kaplan is None else format_integer(step.kaplan, lang))
        if timed:
            cells.append(time_cell(step, lang))
        cells += [format_integer(step.state.by_kind[k], lang) if k in step.state.by_kind else "—"
                  for k in result.kinds]
        cells.append("=" if exact else "—" if closed_bytes is None else format_integer(closed_bytes, lang))
        table.add_row(*cells)
        previous = step.cache
    return table


def _caption(result: ModelDecodeResult, lang: str) -> str:
    tr = translator(lang)
    parts = [tr("Each row: the model reads t − 1 random tokens, then writes token t through the cache it returned. "
                "Multiplications: one per multiply-add, counted on that step as the model's own code ran (bias, "
                "norms, softmax not counted). Bytes: every tensor reachable from the cache object, each storage "
                "once, after the step. '=' equals the closed form from the config. Eager attention, {dtype}, "
                "batch 1; transformers {version}.").format(version=result.transformers_version,
                                                          dtype=result.model.dtype)]
    if result.config.time:
        threads = tr("1 thread") if result.threads == 1 else tr("{threads} threads").format(threads=result.threads)
        parts.append(tr("Time: median ± IQR over {rounds} interleaved rounds, {threads}; {mark} noisy: IQR over a "
                        "tenth of the median.").format(rounds=result.config.rounds, threads=threads,
                                                        mark=NOISY_MARK))
    parts.append(busy_caveat(result.load, lang))
    return " ".join(part for part in parts if part)


def _growth_sentence(growth: Growth, result: ModelDecodeResult, lang: str) -> str:
    tr = translator(lang)
    first, last = result.positions[0], result.positions[-1]
    figure = growth.figure.removeprefix("static ")
    if figure.startswith("multiplications:"):
        what = tr("Multiplications per new token in {layers}").format(
            layers=layer_label(figure.removeprefix("multiplications:"), lang))
    else:
        what = (tr("Multiplications per new token") if figure == "multiplications" else tr("Cache bytes")
                if figure == "bytes" else kind_label(figure.removeprefix("bytes:"), lang).capitalize())
    if growth.figure.startswith("static "):
        what = tr("{what} (static cache)").format(what=what)
    values = {"what": what, "growth": growth_label(growth.kind, lang),
              "first": format_integer(growth.values[0], lang), "last": format_integer(growth.values[-1], lang),
              "t1": format_integer(first, lang), "t2": format_integer(last, lang)}
    if growth.kind in ("linear", "constant + linear") and growth.slope is not None:
        values["slope"] = format_integer(int(growth.slope), lang) if growth.slope.denominator == 1 else \
            str(growth.slope)
        text = tr("{what}: {growth}, {first} at t = {t1} to {last} at t = {t2}, {slope} more per position.")
    elif growth.kind == "capped" and growth.cap is not None:
        values["cap"] = format_integer(growth.cap, lang)
        text = tr("{what}: {growth}, {first} at t = {t1}, then held at {cap} up to t = {t2}.")
    else:
        text = tr("{what}: {growth}, {first} at t = {t1} and {last} at t = {t2}.")
    sentence = text.format(**values)
    if growth.expected is None:
        return sentence + " " + tr("No closed form for this family here.")
    if growth.as_expected:
        return sentence + " " + tr("The closed forms from the config grow the same way.")
    return sentence + " " + tr("The closed forms from the config grow otherwise: {expected}.").format(
        expected=growth_label(growth.expected, lang))


def growth_sentences(result: ModelDecodeResult, lang: str = "en") -> list[str]:
    """One sentence per figure: its growth named, with the slope or the cap, against the closed forms'."""
    layers = {g.figure.split(":")[1] for g in result.growth if g.figure.startswith("multiplications:")} - {"output"}

    def shown(growth: Growth) -> bool:  # a part is worded only where the whole has several
        if growth.figure.removeprefix("static ").startswith("bytes:"):
            return len(result.kinds) > 1
        return ":" not in growth.figure or len(layers) > 1

    return [_growth_sentence(g, result, lang) for g in result.growth if shown(g)]


def _kaplan_sentences(last: ModelStep, lang: str) -> list[str]:
    """Kaplan's estimate against the count, with the terms of the difference when the study found they add up."""
    terms = last.kaplan_terms
    if last.kaplan is None:
        return []
    tr = translator(lang)
    gap = last.multiplications - last.kaplan
    if terms is None:
        return [tr("Kaplan et al.'s N + L·t·d_attn gives {kaplan} multiplications at t = {t}, against {counted} "
                   "counted; the terms seqlab knows (α·V, a tied output layer, the 1-D weights) do not account for "
                   "the difference exactly, so it is left unexplained.").format(
            kaplan=format_integer(last.kaplan, lang), t=format_integer(last.t, lang),
            counted=format_integer(last.multiplications, lang))]
    parts = [tr("the layers' q·Kᵀ and α·V run over {keys} keys in all, {products} multiplications where it counts "
                "{kaplan_attention}").format(keys=format_integer(terms["keys"], lang),
                                             products=format_integer(terms["attention_products"], lang),
                                             kaplan_attention=format_integer(terms["kaplan_attention"], lang))]
    if terms["output_outside_parameters"]:
        parts.append(tr("the output layer ({output}) shares the token embedding's weights, so N leaves it out").format(
            output=format_integer(terms["output_outside_parameters"], lang)))
    if terms.get("position_bias"):
        parts.append(tr("ALiBi's bias, each head's slope times each key's position, adds {bias} that N does not "
                        "hold").format(bias=format_integer(terms["position_bias"], lang)))
    if terms["vector_parameters"]:
        parts.append(tr("N counts each of the {extra} bias and norm parameters as a multiplication").format(
            extra=format_integer(terms["vector_parameters"], lang)))
    template = (tr("Kaplan et al.'s N + L·t·d_attn gives {kaplan} multiplications at t = {t}, {gap} fewer than "
                   "counted: {reasons}.") if gap >= 0 else
                tr("Kaplan et al.'s N + L·t·d_attn gives {kaplan} multiplications at t = {t}, {gap} more than "
                   "counted: {reasons}."))
    return [template.format(kaplan=format_integer(last.kaplan, lang), t=format_integer(last.t, lang),
                            gap=format_integer(abs(gap), lang), reasons="; ".join(parts))]


def _repeated_heads_sentences(result: ModelDecodeResult, last: ModelStep, lang: str) -> list[str]:
    """A cache holding keys and values repeated to every query head, where its bytes are the grouped-query closed
    form times H / H_kv exactly."""
    facts, closed = result.model, last.closed_bytes
    measured = last.state.by_kind.get("attention_kv", 0)
    if (closed is None or not closed.get("attention_kv") or measured == closed["attention_kv"]
            or not 0 < facts.kv_heads < facts.heads or measured * facts.kv_heads != closed["attention_kv"] * facts.heads):
        return []
    tr = translator(lang)
    return [tr("This model's code stores keys and values repeated to all {heads} query heads, not its {kv_heads} "
               "key/value heads: its full-attention cache holds {measured} bytes at t = {t}, {ratio}× the closed form "
               "2·L·H_kv·d_h·t·b ({closed}).").format(
        heads=format_integer(facts.heads, lang), kv_heads=format_integer(facts.kv_heads, lang),
        measured=format_integer(measured, lang), t=format_integer(last.t, lang),
        ratio=format_integer(facts.heads // facts.kv_heads, lang) if facts.heads % facts.kv_heads == 0
        else f"{facts.heads}/{facts.kv_heads}", closed=format_integer(closed["attention_kv"], lang))]


def _bytes_differ_sentences(result: ModelDecodeResult, last: ModelStep, lang: str) -> list[str]:
    """The cache's bytes against the closed form where they differ and no other sentence says why: the two figures,
    never a growth alone (both may grow alike and differ by a factor)."""
    closed = last.closed_bytes
    if closed is None or dict(closed) == dict(last.state.by_kind) or _repeated_heads_sentences(result, last, lang):
        return []
    tr = translator(lang)
    wider = {name: n for name, n in last.state.bytes_by_dtype.items() if name != result.model.dtype}
    if wider:  # the family's code keeps part of its state in another dtype than its weights'
        return [tr("The cache holds {measured} bytes at t = {t}, {parts}, while the weights are {dtype}: the "
                   "family's own code keeps part of its state in another dtype, and the closed form, counting every "
                   "element in {dtype}, gives {closed}.").format(
            measured=format_integer(last.state.total_bytes, lang), t=format_integer(last.t, lang),
            parts=", ".join(f"{format_integer(n, lang)} {name}" for name, n in last.state.bytes_by_dtype.items()),
            dtype=result.model.dtype, closed=format_integer(sum(closed.values()), lang))]
    return [tr("The cache holds {measured} bytes at t = {t}; the closed form from the config gives {closed}: this "
               "family's cache is not the one the closed forms describe.").format(
        measured=format_integer(last.state.total_bytes, lang), t=format_integer(last.t, lang),
        closed=format_integer(sum(closed.values()), lang))]


def difference_sentences(result: ModelDecodeResult, lang: str = "en") -> list[str]:
    """Where a measured figure differs from a textbook one, and why (Kaplan's estimate, a window's view,
    Mamba's convolution window, bookkeeping tensors, a static cache's rows), then the prefill's span against
    generation's."""
    tr = translator(lang)
    lines = []
    dynamic = [s for s in result.steps if s.cache == "dynamic"]
    last = dynamic[-1]
    lines += _kaplan_sentences(last, lang)
    lines += _repeated_heads_sentences(result, last, lang)
    lines += _bytes_differ_sentences(result, last, lang)
    if result.model.shared_kv_layers:
        lines.append(tr("{shared} of the {layers} layers read the keys and values another layer stored: they hold "
                        "none of their own, and the closed form counts none for them.").format(
            shared=format_integer(result.model.shared_kv_layers, lang),
            layers=format_integer(result.model.layers, lang)))
    if result.model.latent_kv_layers:
        lines.append(tr("{latent} layers use latent attention: their cache holds, per position, the compressed "
                        "key/value latent and the one rotary key all heads share, not keys and values per "
                        "head.").format(latent=format_integer(result.model.latent_kv_layers, lang)))
    if result.bytes_kinds_from_cache:
        lines.append(tr("The config does not say which layers are full and which sliding-window attention: the "
                        "bytes' closed form takes each layer's kind from the class of the cache's layer "
                        "({classes}) and every size from the config.").format(
            classes=", ".join(dict.fromkeys(last.state.layer_types))))
    window_held = last.state.by_kind.get("sliding_window_kv", 0)
    window_visible = last.state.visible_by_kind.get("sliding_window_kv", window_held)
    if result.model.sliding_window is not None and window_visible < window_held:
        lines.append(tr("The sliding window (w = {w}) keeps w − 1 rows visible ({visible} bytes) as a view of the "
                        "w rows the step concatenated: the storage, {held} bytes, is what stays allocated.").format(
            w=format_integer(result.model.sliding_window, lang), visible=format_integer(window_visible, lang),
            held=format_integer(window_held, lang)))
    if "convolution" in result.kinds and result.model.model_type in ("mamba", "jamba"):
        lines.append(tr("The convolution window holds d_conv columns per channel, one more than the recurrence "
                        "needs; the step's convolution gives two outputs and keeps one (2·E·d_conv "
                        "multiplications per layer)."))
    if last.state.bookkeeping_bytes:
        lines.append(tr("Besides the state, the cache holds {bytes} bytes of integer tensors (window lengths, "
                        "positions), not counted as state.").format(
            bytes=format_integer(last.state.bookkeeping_bytes, lang)))
    if result.static_refused is not None:
        lines.append(tr("{architecture}'s own code does not run with a static cache ({reason}): only the dynamic "
                        "cache is measured.").format(architecture=result.model.architecture,
                                                     reason=result.static_refused))
    static = [s for s in result.steps if s.cache == "static"]
    if static:
        lines.append(tr("The static cache holds {bytes} bytes from the first token, the rows of t = {t}, and every "
                        "step attends over all of them (the unwritten ones masked): {work} multiplications at "
                        "t = {t1} against {dynamic} with the dynamic cache.").format(
            bytes=format_integer(static[0].state.total_bytes, lang), t=format_integer(result.positions[-1], lang),
            work=format_integer(static[0].multiplications, lang), t1=format_integer(static[0].t, lang),
            dynamic=format_integer(dynamic[0].multiplications, lang)))
    span = result.span
    if span is not None:
        prefill = tr("the same at both T") if span.prefill_constant else tr("growing with T")
        generation = tr("growing like T") if span.generation_grows else tr("not growing like T")
        lines.append(tr("Span (ops in a row): reading T = {t1} and {t2} given tokens in one pass takes {p1} and {p2} "
                        "({prefill}); writing T tokens one by one, each output fed back, takes {g1} and {g2} "
                        "({generation}).").format(
            t1=format_integer(span.lengths[0], lang), t2=format_integer(span.lengths[1], lang),
            p1=format_integer(span.prefill_ops[0], lang), p2=format_integer(span.prefill_ops[1], lang),
            g1=format_integer(span.generation_ops[0], lang), g2=format_integer(span.generation_ops[1], lang),
            prefill=prefill, generation=generation))
    return lines


def render_model_decode(result: ModelDecodeResult, lang: str = "en") -> Group:
    """The table and the sentences, for the terminal."""
    parts: list = [model_decode_table(result, lang), Text("")]
    parts += [Text(line) for line in growth_sentences(result, lang)]
    parts += [Text(line) for line in difference_sentences(result, lang)]
    return Group(*parts)


def plot_model_decode(result: ModelDecodeResult, path: str | Path, lang: str = "en") -> Path:
    """:func:`model_decode_figure` written to ``path`` (its format from the suffix: .png or .svg)."""
    model_decode_figure(result, lang).savefig(path)
    return Path(path)


def model_decode_figure(result: ModelDecodeResult, lang: str = "en"):
    """Multiplications per new token and the cache's bytes per kind against t, dynamic (and static) cache, as a
    matplotlib Figure (Agg canvas, log axes)."""
    from seqlab.render.figures import new_figure

    tr = translator(lang)
    figure = new_figure(figsize=(8.4, 4.0), layout="constrained")
    work, state = figure.subplots(1, 2, squeeze=False)[0]
    for index, cache in enumerate(dict.fromkeys(s.cache for s in result.steps)):
        steps = [s for s in result.steps if s.cache == cache]
        ts = [s.t for s in steps]
        label = tr("dynamic") if cache == "dynamic" else tr("static")
        work.plot(ts, [s.multiplications for s in steps], marker="os"[index], linestyle=("-", "--")[index],
                  color=f"C{index}", label=label)
        for number, kind in enumerate(result.kinds):
            state.plot(ts, [s.state.by_kind.get(kind, 0) or float("nan") for s in steps], marker="osD^"[number],
                       linestyle=("-", "--")[index], color=f"C{number}",
                       label=f"{kind_label(kind, lang)} ({label})")
    for ax, ylabel in ((work, tr("Multiplications per new token")), (state, tr("Cache bytes"))):
        ax.set(xscale="log", yscale="log", xlabel="t", ylabel=ylabel)
        ax.set_xticks(list(result.positions), [format_integer(t, lang) for t in result.positions])
        ax.xaxis.set_minor_formatter("")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    figure.suptitle(tr("One new token of {name} ({architecture}, {parameters} parameters), per position t").format(
        name=result.model.name, architecture=result.model.architecture,
        parameters=format_integer(result.model.parameters, lang)))
    return figure
