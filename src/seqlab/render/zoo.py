"""``seqlab zoo``'s catalogue in words: one table per kind of family, on a terminal (Rich) or as a Markdown page
(the manual's generated zoo page), in English or Spanish.

Each row (:class:`seqlab.zoo.measure.ZooRow`) shows Table 1's three columns — work per token, span, paths (the
maximum and the two-end path) — with how each grows in T, the order, the decode columns — work per decoded token
and cache bytes per token, with how each grows in t — and the real size's work per token and cache bytes per token
(shapes alone). A figure that is a bound carries its sign (≥: ops the count or the trace could not account for,
named in a note); a figure that could not be measured is absent, and its cell names why (on a terminal, a numbered
note under the tables). A refused family is one line naming why. Nothing here measures.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab.i18n import N_, format_integer, format_number, translator
from seqlab.studies.zoo import ZooResult
from seqlab.zoo.measure import KINDS, ZooRow

__all__ = ["KIND_LABELS", "cells", "closing_note", "zoo_markdown", "zoo_table"]

#: Each kind's heading.
KIND_LABELS = {"full": N_("Full attention"), "windowed": N_("Windowed or local attention"),
               "linear": N_("Linear or state-space"), "hybrid": N_("Hybrid (a state beside attention)"),
               "moe": N_("Mixture of experts"), "encoder": N_("Encoder (every position reads every other)")}
#: The columns, in order (their headings are translated).
COLUMNS = (("family", N_("family")), ("work", N_("work / token (T)")), ("span", N_("span (T)")),
           ("path_max", N_("max path (T)")), ("path_ends", N_("two-end path (T)")), ("order", N_("order")),
           ("decode_work", N_("decode work / token (t)")), ("cache", N_("cache bytes / token (t)")),
           ("real_work", N_("real: work / token")), ("real_decode", N_("real: decode work / token")),
           ("real_cache", N_("real: cache bytes / token")))
#: The order words.
ORDER_WORDS = {"equivariant": N_("equivariant"), "not equivariant": N_("not equivariant"),
               "cannot tell": N_("cannot tell")}
#: The growth words of :func:`seqlab.fit.growth_kind`.
GROWTH_WORDS = {"constant": N_("constant"), "linear": N_("linear"), "constant + linear": N_("constant + linear"),
                "capped": N_("capped"), "other": N_("other"), "linear + capped": N_("linear + capped"),
                "constant + capped": N_("constant + capped"), "constant + linear + capped":
                N_("constant + linear + capped")}


def _per(value: int, n: int, lang: str) -> str:
    """value / n: an integer when it divides, else ≈ the nearest integer from 100 up, else 4 significant digits."""
    ratio = Fraction(value, n)
    if ratio.denominator == 1 or ratio >= 100:
        return ("" if ratio.denominator == 1 else "≈ ") + format_integer(round(ratio), lang)
    return format_number(float(ratio), lang, 4)


def _grows(text: str, form: str | None) -> str:
    return f"{text} ~ {form}" if form else text


def cells(row: ZooRow, lang: str = "en") -> dict[str, str | tuple[str]]:
    """Each column's text for ``row``: a figure (and its growth), or a 1-tuple holding the reason it is absent.

    >>> cells(ZooRow("x", "transformers", None, kind="full", missing={"prefill": "boom"}))["work"]
    ('boom',)
    """
    _ = translator(lang)
    out: dict[str, str | tuple[str]] = {"family": row.family}
    p, d, r, missing = row.prefill, row.decode, row.real, row.missing
    if p is None:
        for key in ("work", "span", "path_max", "path_ends"):
            out[key] = (missing.get("prefill", _("not measured")),)
    else:
        T = p.T[-1]
        bound = "" if p.work_exact else "≥ "
        out["work"] = _grows(bound + _per(p.multiplications[-1], T, lang), _per_token_form(p.work_form))
        out["span"] = _grows(("≥ " if p.fused else "") + format_integer(p.span_ops[-1], lang), p.span_form)
        sign = "" if p.paths_exact else "≥ "
        for key, values, form in (("path_max", p.path_max, p.path_max_form),
                                  ("path_ends", p.path_ends, p.path_ends_form)):
            out[key] = (_grows(sign + format_integer(values[-1], lang), form) if values[-1] is not None
                        else (_("the two ends are not connected"),))
    out["order"] = _(ORDER_WORDS[row.order]) if row.order else (missing.get("order", _("not measured")),)
    if d is None:
        out["decode_work"] = out["cache"] = (missing.get("decode", _("not measured")),)
    else:
        growth = _(GROWTH_WORDS.get(d.work_growth, d.work_growth)) if d.work_growth else None
        out["decode_work"] = _grows(("" if d.work_exact else "≥ ") + format_integer(d.multiplications[-1], lang),
                                    growth)
        out["cache"] = _grows(_per(d.cache_bytes[-1], d.t[-1], lang),
                              _(GROWTH_WORDS.get(d.bytes_growth, d.bytes_growth)) if d.bytes_growth else None)
    if r is None:
        reason = missing.get("real", _("not measured"))
        out["real_work"] = out["real_decode"] = out["real_cache"] = (reason,)
    else:
        sign = "" if r.work_exact else "≥ "
        out["real_work"] = (f"{sign}{_per(r.prefill_multiplications, r.T, lang)} (T = {format_integer(r.T, lang)})"
                            if r.prefill_multiplications is not None else (missing.get("real prefill", "—"),))
        out["real_decode"] = (f"{sign}{format_integer(r.decode_multiplications, lang)} "
                              f"(t = {format_integer(r.t, lang)})" if r.decode_multiplications is not None
                              else (missing.get("real decode", "—"),))
        out["real_cache"] = (f"{_per(r.cache_bytes, r.t, lang)} ({r.dtype})" if r.cache_bytes is not None
                             else (missing.get("real decode", "—"),))
    return out


def _per_token_form(form: str | None) -> str | None:
    """A total's form in T as the form per token (total ÷ T)."""
    return {"T²": "T", "T": "1", "T log T": "log T", "T^1.5": "√T"}.get(form, form) if form else None


def _groups(result: ZooResult) -> list[tuple[str, list[ZooRow]]]:
    measured = [r for r in result.rows if r.refused is None]
    return [(kind, [r for r in measured if r.kind == kind]) for kind in KINDS
            if any(r.kind == kind for r in measured)]


def closing_note(result: ZooResult, lang: str = "en") -> str:
    """The counts: families measured and refused, and how long it took."""
    _ = translator(lang)
    text = _("{measured} families measured, {refused} refused, of {planned} planned "
             "(transformers {transformers}, PyTorch {torch}); {cpu} CPU seconds for the rows measured now, "
             "{resumed} read back from the results file.").format(
        measured=format_integer(result.measured, lang), refused=format_integer(result.refused, lang),
        planned=format_integer(result.planned, lang), transformers=result.transformers_version,
        torch=result.torch_version, cpu=format_number(result.cpu_seconds, lang), resumed=format_integer(result.resumed, lang))
    if result.partial:
        text += " " + _("Interrupted: the families not listed were not measured.")
    return text


def _legend(lang: str) -> str:
    _ = translator(lang)
    return _("Tiny twins (float64, eval, eager attention): work in multiplications (one per multiply-add) per token "
             "of the longest prefill T, with the form the total grows by in T shown per token; span in ops; paths "
             "in matrix products; decode at the last position t, the growth in t named; real: the config's own "
             "sizes, shapes alone on the meta device. ≥: a bound (ops the engine could not account for).")


def zoo_table(result: ZooResult, lang: str = "en"):
    """The catalogue on a terminal: one Rich table per kind, refusals, numbered notes and the closing note."""
    from rich.console import Group
    from rich.text import Text

    from seqlab.render.tables import FittedTable  # at 80 columns: stacked in parts or records, never a tall cell

    _ = translator(lang)
    notes: list[str] = []
    parts: list = [Text(_legend(lang))]
    for kind, rows in _groups(result):
        table = FittedTable(title=_(KIND_LABELS[kind]), title_justify="left", show_lines=False)
        for _key, heading in COLUMNS:
            table.add_column(_(heading), overflow="fold")
        table.columns[0].no_wrap = True  # the family's name, whole
        for row in rows:
            texts = []
            for key, _heading in COLUMNS:
                value = cells(row, lang)[key]
                if isinstance(value, tuple):
                    if value[0] not in notes:
                        notes.append(value[0])
                    value = f"— [{notes.index(value[0]) + 1}]"
                texts.append(value)
            table.add_row(*texts)
        parts.append(table)
    refused = [r for r in result.rows if r.refused is not None]
    if refused:
        parts.append(Text(_("Refused:")))
        parts.extend(Text(f"  {r.family}: {r.refused}") for r in refused)
    if notes:
        parts.append(Text(_("Not measured:")))
        parts.extend(Text(f"  [{i}] {note}") for i, note in enumerate(notes, 1))
    parts.append(Text(closing_note(result, lang)))
    return Group(*parts)


def _escaped(text: str) -> str:
    """Markdown-safe text: table pipes, and brackets that a reader would take for a link (``x['a'][0]``)."""
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
            .replace("\n", " "))


def _markdown_cell(value: str | tuple[str], lang: str) -> str:
    if isinstance(value, tuple):
        return _escaped(translator(lang)("not measured: {reason}").format(reason=value[0]))
    return _escaped(value)


def zoo_markdown(result: ZooResult, lang: str = "en") -> str:
    """The catalogue as Markdown: a table per kind, what could not be measured named in its cell, the refusals and
    the closing note (the manual's generated zoo page)."""
    _ = translator(lang)
    lines = [_legend(lang), ""]
    for kind, rows in _groups(result):
        lines += [f"### {_(KIND_LABELS[kind])}", "",
                  "| " + " | ".join(_(heading) for _key, heading in COLUMNS) + " |",
                  "|" + "---|" * len(COLUMNS)]
        for row in rows:
            texts = cells(row, lang)
            lines.append("| " + " | ".join(_markdown_cell(texts[key], lang) for key, _h in COLUMNS) + " |")
        lines.append("")
    refused = [r for r in result.rows if r.refused is not None]
    if refused:
        heading = _("Refused")
        lines += [f"### {heading}", ""]
        lines += [f"- `{r.family}`: {_escaped(r.refused)}" for r in refused]
        lines.append("")
    lines.append(closing_note(result, lang))
    return "\n".join(lines) + "\n"
