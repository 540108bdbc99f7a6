"""Words for the path claims of ``seqlab check`` (L3, L4): the path from position 1 to T and its strength.

Same contract as :mod:`seqlab.render.check_structure`: ``(statement, measured, figure, condition, note)``
from a claim's values and condition; nothing measured here.
"""

from __future__ import annotations

from seqlab.glossary import NOTATION
from seqlab.i18n import plural_translator

DOMAIN = "seqlab"


def _failed(_, keys) -> str:
    """The parts of a path check that failed, in words ('' when none)."""
    words = {"path": _("the path's length"), "gated": _("the gated layers' paths"),
             "no_decay_below_1": _("decay below ρ = 1"), "inputs_grow": _("tanh only shrinking"),
             "reach": _("the gradient reaching position 1")}
    return _("Failed: {parts}.").format(parts=", ".join(words[key] for key in keys)) if keys else ""


def l3(_, v, c, n):
    """L3: T-1 products by W_hh; decay below ρ = 1 and where growth starts with inputs."""
    T1, T2 = v["lengths"]
    lstm, gru = v["lstm_path_products_ops"], v["gru_path_products_ops"]
    ngettext = plural_translator(n.lang)  # the LSTM's path is measured: "1 product", "2 products"
    factors = v["factors"]
    with_inputs = " · ".join(f"{n.short(r)} ×{n(pair[1])}" for r, pair in factors.items())
    at_zero = " · ".join(f"{n.short(r)} ×{n(pair[0])}" for r, pair in factors.items())
    onset, last = c["onset_with_inputs"], max(factors)
    condition = _("decay means a per-step factor below 1 − {m} for every ρ < 1, at h = 0 and with inputs; growth "
                  "means above 1 + {m}. Plain 'holds' needs growth with inputs from ρ ≤ {slack}.").format(
        m=n.short(c["growth_margin"]), slack=n.short(c["onset_slack"]))
    if "growth_needs_large_radius" in c["caveats"]:
        condition += " " + (_("Caveat: with inputs the signal grows only from ρ = {onset}, well above 1: tanh "
                              "saturates and holds it down.").format(onset=n.short(onset)) if onset is not None else
                            _("Caveat: with inputs no ρ up to {last} makes the signal grow: tanh saturates and "
                              "holds it down.").format(last=n.short(last)))
    failed = _failed(_, c["failed"])
    condition += (" " + failed) if failed else ""
    return (_("Position 1 reaches position T of a recurrence through T-1 products by W_hh; the spectral radius "
              "decides whether the signal shrinks or grows"),
            _("Least matrix products from x_1 to h_T at T = {T1} and {T2}; per-step factor of ‖∂h_T/∂x_i‖ by "
              "autograd (float64, T = {T}) against the spectral radius ρ, at h = 0 and with inputs (median of {k} "
              "draws); paths of an LSTM and a GRU").format(T1=n(T1), T2=n(T2), T=n(v["reach_length"]),
                                                          k=n(v["draws"])),
            _("{a} and {b} products ({c} and {d} by W_hh); per step with inputs, by ρ: {inputs}; at h = 0: {zero}; "
              "LSTM {l1} → {l2} ops, GRU {g1} → {g2} ops, {p}").format(
                a=n(v["path_products"][0]), b=n(v["path_products"][1]), c=n(v["whh_products"][0]),
                d=n(v["whh_products"][1]), inputs=with_inputs, zero=at_zero, l1=n(lstm[0][1]), l2=n(lstm[1][1]),
                g1=n(gru[0][1]), g2=n(gru[1][1]),
                p=ngettext("{count} product", "{count} products", lstm[1][0]).format(count=n(lstm[1][0]))),
            condition,
            _("At h = 0 (no input, no bias) tanh' is 1: that factor is the bare repeated product, linear algebra that "
              "approaches ρ. The gated layers' path still grows in ops; in products it stays flat, along an additive "
              "bypass that crosses no W_hh, in PyTorch's notation the LSTM's {lstm_bypass} in {lstm_update} and "
              "the GRU's {gru_bypass} in {gru_update} (a GRU has no cell state). "
              "Gradient clipping is not measured: it scales large gradients down and cannot bring small ones back."
              ).format(**NOTATION))


def l4(_, v, c, n):
    """L4: one weight whatever T; that weight against T."""
    T1, T2 = v["lengths"]
    reach = " · ".join(f"T = {n(T)}: {n(value)}" for T, value in v["reach"].items())
    exponent = v["reach_exponent"]
    condition = _("the same number of products at both T, fewer than T − 1, and a gradient that reaches position "
                  "1; a reach exponent within ±{flat} counts as not depending on T.").format(
        flat=n.short(c["flat_exponent"]))
    if "weight_shrinks_with_T" in c["caveats"]:
        condition += " " + _("Caveat: the path stays {p} products long whatever T, but the one weight changes as "
                             "T^{k}: the softmax spreads over T keys, so the signal arrives direct, not "
                             "undiminished.").format(p=n(v["path_products"][1]), k=n(exponent))
    failed = _failed(_, c["failed"])
    condition += (" " + failed) if failed else ""
    if exponent is not None:
        fit = _("fit ≈ T^{k}").format(k=n(exponent))
    elif all(value > 0 for value in v["reach"].values()):
        fit = _("no fit (a trend needs 3 lengths spanning 4×)")
    else:
        fit = _("no fit (a reach of 0)")
    return (_("Position 1 reaches position T through attention by a single weight, however far apart they are"),
            _("Least matrix products from x_1 to y_T through self-attention at T = {T1} and {T2}; ‖∂y_T/∂x_1‖ by "
              "autograd (float64, median of {k} draws) at several T").format(T1=n(T1), T2=n(T2), k=n(v["draws"])),
            _("{a} and {b} products; reach {reach}; {fit}").format(
                a=n(v["path_products"][0]), b=n(v["path_products"][1]), reach=reach, fit=fit),
            condition,
            _("The lesson counts the one factor α_T1; the path measured also crosses the value projection W_v, "
              "hence 2 products, the same at every T."))
