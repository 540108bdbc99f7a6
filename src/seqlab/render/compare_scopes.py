"""Render ``compare``'s work at three scopes: a table of closed forms beside counts, and who wins where (L5–L7).

Results in, text out: every figure comes from :class:`seqlab.studies.compare_scopes.Scope`, every verdict from
its *counted* figures (:attr:`Scope.winner`), and each count names its source — PyTorch's own flop
formulas, or seqlab's formula for a fused kernel, which is then said to be the only count of what ran, with
PyTorch's count on the meta device beside it.
"""

from __future__ import annotations

from fractions import Fraction

from rich.table import Table

from seqlab.i18n import format_fraction, format_integer, plural_translator, translator
from seqlab.render.labels import machine_label
from seqlab.studies.compare_scopes import HEADS, Scope, ScopeCount
from seqlab.render.tables import FittedTable


def _machine(entry: ScopeCount, scope: str, heads: str, _, lang: str) -> str:
    """What the entry measures, in words, with the module that was counted."""
    names = {
        "rnn": _("Elman RNN: W_xh and W_hh"),
        "attention": _("attention call, Q, K, V left out") if scope == "lesson" else
        _("attention, one head: Q, K, V, the call, W_O"),
        "attention_heads": _("attention, {heads}: Q, K, V, the call, W_O").format(heads=heads),
        "attention_call": _("attention call alone"),
        "lstm": _("LSTM: 4 gate blocks"),
        "gru": _("GRU: 3 gate blocks"),
    }
    return f"{names[entry.machine]}\n{machine_label(entry.module, lang)}"


def _source(entry: ScopeCount, lang: str, _) -> str:
    """Who counted: PyTorch's formulas, or seqlab's formula with PyTorch's independent count beside it."""
    ops = ", ".join(entry.ops) or "—"
    if entry.source == "pytorch":
        text = _("PyTorch's formulas: {ops} ({device})").format(ops=ops, device=entry.device)
    else:
        text = _("seqlab's formula only: {ops} ({device})").format(ops=ops, device=entry.device)
        if entry.independent is not None:
            mark = "=" if entry.independent == entry.closed_form else "≠"
            text += "; " + _("PyTorch's formulas on meta: {count} ({mark} formula)").format(
                count=format_integer(entry.independent, lang), mark=mark)
    if entry.unaccounted:
        text += "; " + _("not counted: {ops}").format(ops=", ".join(entry.unaccounted))
    return text


SCOPE_NAMES = ("lesson", "layer", "kernels")


def scope_name(scope: str, lang: str) -> str:
    """The scope's name in the output language."""
    _ = translator(lang)
    return {"lesson": _("lesson (L5, L6)"), "layer": _("layer"), "kernels": _("kernels (what ran)")}[scope]


def heads_text(heads: int | None, lang: str = "en") -> str:
    """``1 head``, ``8 heads`` (``1 cabeza``, ``8 cabezas``): the count with its noun agreeing.

    >>> heads_text(1, "en"), heads_text(8, "es")
    ('1 head', '8 cabezas')
    """
    ngettext = plural_translator(lang)
    return ngettext("{count} head", "{count} heads", heads or 0).format(count=format_integer(heads or 0, lang))


def scopes_table(scopes: tuple[Scope, ...], heads: int | None, lang: str = "en") -> Table:
    """One row per machine and scope: closed form, counted value (= or ≠ the formula) and who counted it.

    The LSTM and GRU rows are shown at layer and kernel scope only: a recurrence is charged all its weights
    at every scope, so the lesson's rows would repeat the layer's (``--json`` has them).
    """
    _ = translator(lang)
    heads = heads_text(heads, lang)
    table = FittedTable(title=_("Work at three scopes (multiplications = multiply-adds)"), title_justify="left",
                        notes=(4,))  # who counted: keys with a legend below where the full texts do not fit
    for header in (_("Scope"), _("Machine (what was counted)"), _("Closed form"), _("Counted"), _("Counted by")):
        table.add_column(header)
    for scope in scopes:
        entries = [scope.recurrence, scope.attention, *scope.others]
        if scope.name == "lesson":
            entries = [e for e in entries if e is not None and e.machine not in ("lstm", "gru")]
        first = True
        for entry in (e for e in entries if e is not None):
            mark = "=" if entry.counted == entry.closed_form else "≠"
            table.add_row(scope_name(scope.name, lang) if first else "", _machine(entry, scope.name, heads, _, lang),
                          format_integer(entry.closed_form, lang),
                          f"{format_integer(entry.counted, lang)} ({mark} {_('formula')})", _source(entry, lang, _))
            first = False
    return table


def _verdict(scope: Scope, lang: str, _) -> str:
    """Less or more work than the recurrence at this scope, and where the closed forms cross."""
    ratio = format_fraction(scope.ratio, lang)
    values = dict(ratio=ratio, crossover=format_fraction(scope.crossover, lang) if scope.crossover else "")
    if scope.winner == "tie":
        return _("attention and the recurrence do the same number of multiplications").format(**values)
    if scope.crossover is None:
        if scope.winner == "attention":
            return _("attention does {ratio} times the recurrence's multiplications: less work").format(**values)
        return _("attention does {ratio} times the recurrence's multiplications: more work at every length "
                 "with these widths").format(**values)
    if scope.winner == "attention":
        return _("attention does {ratio} times the recurrence's multiplications: less work, below the "
                 "crossover at T = {crossover}").format(**values)
    return _("attention does {ratio} times the recurrence's multiplications: more work, past the crossover at "
             "T = {crossover}").format(**values)


def scope_sentences(scopes: tuple[Scope, ...], T: int, widths: tuple[int, int, int, int], heads: int | None,
                    lang: str = "en") -> list[str]:
    """One sentence per scope saying which side does less work there and why, from the counted figures."""
    _ = translator(lang)
    d_model, d_h, d_k, d_v = widths
    by_name = {scope.name: scope for scope in scopes}
    sentences = []
    lesson, layer, kernels = (by_name.get(name) for name in SCOPE_NAMES)
    if lesson is not None:
        sentences.append(_("Lesson's scope (L5 against L6: the recurrence with W_xh, the attention call without "
                           "its Q, K, V projections): {verdict}.").format(verdict=_verdict(lesson, lang, _)))
    if layer is not None:
        text = _("Layer's scope (every weight: W_xh and W_hh against W_Q, W_K, W_V and W_O): {verdict}.").format(
            verdict=_verdict(layer, lang, _))
        if len({d_model, d_h, d_k, d_v}) == 1 and layer.winner == "recurrence" and layer.crossover is None:
            text += " " + _("With every width d = {d} the ratio is 2 + T/d = {formula} (1.5 + T/d = {without} "
                            "without W_O): the four projections alone cost 4·T·d², twice the recurrence's 2·T·d², "
                            "so the lesson's crossover at T = d exists only at its own scope.").format(
                d=format_integer(d_model, lang), formula=format_fraction(2 + Fraction(T, d_model), lang),
                without=format_fraction(Fraction(3, 2) + Fraction(T, d_model), lang))
        sentences.append(text)
    if kernels is not None and kernels.attention is not None:
        fused = [e for e in (kernels.recurrence, kernels.attention, *kernels.others) if e.source != "pytorch"]
        text = _("Kernels' scope (nn.RNN against nn.MultiheadAttention with {heads}, as they run on this "
                 "CPU): {verdict}.").format(heads=heads_text(heads, lang), verdict=_verdict(kernels, lang, _))
        if heads != HEADS:
            text += " " + _("(The paper's {paper} heads do not divide d_model = {d}.)").format(paper=HEADS, d=d_model)
        if fused:
            agree = all(e.independent == e.counted for e in fused)
            names = ", ".join(sorted({op for e in fused for op in e.ops if op != "aten.addmm"}))
            text += " " + (_("The fused kernels ({ops}) are counted by seqlab's formulas, and PyTorch's own "
                             "formulas on the meta device give the same counts.") if agree else
                           _("The fused kernels ({ops}) are counted by seqlab's formulas, and PyTorch's own "
                             "formulas on the meta device give different counts: see the table.")).format(ops=names)
        sentences.append(text)
    elif kernels is not None:
        sentences.append(_("Kernels' scope: nn.MultiheadAttention needs d_k = d_v = d_model and the scaled dot "
                           "score, so no attention layer was run at these settings."))
    return sentences

