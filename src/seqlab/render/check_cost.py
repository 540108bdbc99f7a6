"""Words for the work claims of ``seqlab check`` (L5–L7, L9): counts, their sources, and the two scopes.

Same contract as :mod:`seqlab.render.check_structure`: ``(statement, measured, figure, condition, note)``
from a claim's values and condition; nothing measured here. Every count is shown with its source:
PyTorch's own flop formulas (independent of seqlab's closed forms) or seqlab's formula for a fused kernel.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab.i18n import format_number

DOMAIN = "seqlab"
#: The lesson's rounding of 2000/512 = 3.906 (L9), formatted per language in the note.
LESSON_LAST_RATIO = 3.9


def source_words(_, source: str) -> str:
    """Where a count comes from, in words."""
    return {"pytorch": _("PyTorch's formulas"), "seqlab": _("seqlab's formula only"),
            "mixed": _("PyTorch's and seqlab's formulas"), "none": _("nothing counted")}[source]


def _sources(_, sources) -> str:
    return ", ".join(source_words(_, s) for s in sources)


def _layer_caveat(_, c, n, text: str) -> str:
    """The layer-scope caveat or, if the counts disagreed, what failed."""
    parts = []
    if "layer_scope_attention_costs_more" in c["caveats"]:
        parts.append(text)
    if not c["lesson_holds"]:
        parts.append(_("Failed: the lesson's scope."))
    if not c["layer_counts_agree"]:
        parts.append(_("Failed: the layer counts against seqlab.scopes' closed forms."))
    return " ".join(parts)


def l5(_, v, c, n):
    """L5: the recurrence's count, three ways."""
    s = v["sources"]
    return (_("The recurrence does T(d_h² + d_h·d_model) multiplications"),
            _("Multiplications counted while the loop and nn.RNN run, and nn.RNN on the meta device (T = {T}, "
              "d_model = {dm}, d_h = {dh})").format(T=n(v["T"]), dm=n(v["d_model"]), dh=n(v["d_h"])),
            _("{loop} (loop, {sl}) = {library} (nn.RNN, {sr}) = {meta} (nn.RNN on meta, {sm}) = {closed} (closed "
              "form)").format(loop=n(v["counted_loop"]), library=n(v["counted_nn_rnn"]),
                              meta=n(v["counted_nn_rnn_meta"]), closed=n(v["closed_form"]),
                              sl=source_words(_, s["counted_loop"]), sr=source_words(_, s["counted_nn_rnn"]),
                              sm=source_words(_, s["counted_nn_rnn_meta"])),
            _("every count equals the closed form exactly."), "")


def l6(_, v, c, n):
    """L6: the call's count; the fused kernel's formula named as the only source there."""
    s = v["sources"]
    counted = {"counted_call": _("the hand-written call"), "counted_sdpa_meta": _("SDPA on the meta device")}
    condition = _("every count equals the closed form exactly; independent of seqlab's formulas: {names}.").format(
        names=", ".join(counted.get(name, name) for name in c["independent"]) or "—")
    if "seqlab_formula_only" in c["caveats"]:
        condition += " " + _("Caveat: no count here is independent of seqlab's own formulas.")
    return (_("One attention call does T²(d_k + d_v) multiplications; the projections are counted apart"),
            _("Multiplications counted on the hand-written call, on SDPA on the meta device and on SDPA's fused CPU "
              "kernel (T = {T}, d_k = {dk}, d_v = {dv}); the Q, K, V projections counted apart (d_model = "
              "{dm})").format(T=n(v["T"]), dk=n(v["d_k"]), dv=n(v["d_v"]), dm=n(v["d_model"])),
            _("{call} (call, {sc}) = {meta} (SDPA on meta, {sm}) = {closed} (closed form); fused SDPA {sdpa} "
              "({sf}); projections {projections} = {closed_p}").format(
                call=n(v["counted_call"]), meta=n(v["counted_sdpa_meta"]), closed=n(v["closed_form"]),
                sdpa=n(v["counted_sdpa"]), projections=n(v["projections_counted"]),
                closed_p=n(v["projections_closed_form"]), sc=source_words(_, s["counted_call"]),
                sm=source_words(_, s["counted_sdpa_meta"]), sf=source_words(_, s["counted_sdpa"])),
            condition,
            _("The fused CPU kernel has no formula in PyTorch's counter, so its count is seqlab's own; on the meta "
              "device the same call decomposes into matrix products that PyTorch's formulas count.")
            if s["counted_sdpa"] != "pytorch" else
            _("With d_k ≠ d_v SDPA runs its math kernel on the CPU, whose matrix products PyTorch's formulas count; "
              "with equal widths it runs a fused kernel that only seqlab's formula counts."))


def _layer_ratios(layer, n, heads) -> str:
    return " · ".join(f"T = {n(T)}: {n(row['ratio'][heads])}" for T, row in layer.items())


def l7(_, v, c, n):
    """L7: the crossover at the lesson's scope, and none at layer scope."""
    ratios = " · ".join(f"T = {n(T)}: {n(r)}" for T, r in v["ratios"].items())
    h1, h2 = c["heads"]
    return (_("With every width d, attention over recurrence is T/d: the two cross at T = d"),
            _("Counted multiplications at T = d/2, d and 2d (d = {d}): SDPA on meta over nn.RNN (the lesson's "
              "scope), and nn.MultiheadAttention with {h1} and {h2} heads on meta over nn.RNN (layer scope: Q, K, V "
              "and W_O against W_xh and W_hh); {sources}").format(d=n(v["d"]), h1=n(h1), h2=n(h2),
                                                                 sources=_sources(_, v["sources"])),
            _("lesson's scope: {ratios} (= T/d), equal at T = {crossover}, attention costs more from T = {first}; "
              "layer scope: {layer} (= 2 + T/d, with {h1} or {h2} heads alike)").format(
                ratios=ratios, crossover=n(v["crossover"]), first=n(v["first_length_attention_costs_more"]),
                layer=_layer_ratios(v["layer"], n, h1), h1=n(h1), h2=n(h2)),
            " ".join(filter(None, [
                _("at the lesson's scope the counted ratio equals T/d exactly and the counts cross at T = d; at layer "
                  "scope the counts equal the closed forms exactly."),
                _layer_caveat(_, c, n, _("Caveat: at layer scope with equal widths attention costs more at every T "
                                         "measured (2 + T/d), so there is no crossover: the lesson's T = d leaves "
                                         "attention's projections out.")),
            ])),
            _("The paper's Table 1 orders, O(T²d) against O(Td²), are measured by seqlab table1."))


def l9(_, v, c, n):
    """L9: the worked numbers at d = 512, counted at d = 512, with the layer scope beside them."""
    parts = [_("T = {T}: {rec} against {att} (×{ratio}), chains {span_r} against {span_a}").format(
        T=n(T), rec=n(row["recurrence"]), att=n(row["attention"]), ratio=n(row["ratio"]),
        span_r=n(row["span_recurrence"]), span_a=n(row["span_attention"])) for T, row in v["lengths"].items()]
    heads = c["heads"][-1]
    exact = ", ".join(f"{n(T)}/{n(v['d'])} = {format_number(float(Fraction(T, v['d'])), n.lang, 4)}"
                      for T in v["lengths"])
    lengths = ", ".join(n(T) for T in v["lengths"])
    first = next(iter(v["layer"]))
    w1, w2 = v["span_widths"]
    figure = "; ".join(parts) + "; " + _("layer scope, {h} heads: {layer}").format(
        h=n(heads), layer=_layer_ratios(v["layer"], n, heads))
    return (_("The worked numbers at d = {d}: T = {lengths}").format(d=n(v["d"]), lengths=lengths),
            _("Multiplications counted at d = {d} (nn.RNN on the CPU, SDPA and nn.MultiheadAttention on the meta "
              "device; {sources}); chain depth in matrix products traced at widths {w1} and {w2}").format(
                d=n(v["d"]), sources=_sources(_, v["sources"]), w1=n(w1), w2=n(w2)),
            figure,
            " ".join(filter(None, [
                _("the counts equal the closed forms and the lesson's own figures exactly; the chains are T and 2 "
                  "at both traced widths, so they do not depend on the width."),
                _layer_caveat(_, c, n, _("Caveat: at layer scope attention costs more already at T = {T} ({ratio} "
                                         "times the recurrence): the lesson's 'about ten times less' holds at its "
                                         "own scope only.").format(
                    T=n(first), ratio=n(v["layer"][first]["ratio"][heads]))),
            ])),
            _("The lesson rounds its ratios: {exact}; it writes 'about ten times less' for the first and {rounded} "
              "for the last.").format(exact=exact, rounded=format_number(LESSON_LAST_RATIO, n.lang, 2)))
