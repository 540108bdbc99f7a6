"""Words for the structural claims of ``seqlab check``: the chain, order, Figure 1 and the quiz (L1, L2, L10–L12).

Each function takes the translator ``_``, a claim's ``values`` and ``condition`` and a number formatter
``n`` (:class:`seqlab.render.check.Numbers`), and returns ``(statement, measured, figure, condition, note)``;
``note`` may be empty. Nothing is measured here: every number comes from the check's values, every sentence
is an English message id of the gettext domain ``seqlab``.
"""

from __future__ import annotations

DOMAIN = "seqlab"


def l1(_, v, c, n):
    """L1: the chain of states, T steps long."""
    T1, T2 = v["lengths"]
    return (_("The recurrence's states form a chain T steps long, however many processors run it"),
            _("Longest chain of matrix products (span) of the Elman loop at T = {T1} and {T2}, and of its W_xh x_t "
              "half done as one product").format(T1=n(T1), T2=n(T2)),
            _("{a} and {b} products in a row, one per position ({c} and {d} ops); the W_xh x_t half: {e} and "
              "{f}").format(
                a=n(v["span_products"][0]), b=n(v["span_products"][1]), c=n(v["span_ops"][0]),
                d=n(v["span_ops"][1]), e=n(v["input_half_products"][0]), f=n(v["input_half_products"][1])),
            _("the span equals T at both lengths and the W_xh x_t half is one product at both (exact counts)."),
            "")


def l2(_, v, c, n):
    """L2: one attention call, three ops in a row."""
    T1, T2 = v["lengths"]
    return (_("One attention call is Q Kᵀ, a row softmax and A V: three operations in a row, whatever T"),
            _("Span of one attention call with the dot score (Q, K, V given) at T = {T1} and {T2}").format(
                T1=n(T1), T2=n(T2)),
            _("{a} and {b} ops in a row, {c} and {d} of them matrix products").format(
                a=n(v["span_ops"][0]), b=n(v["span_ops"][1]), c=n(v["span_products"][0]),
                d=n(v["span_products"][1])),
            _("{ops} ops in a row, {products} of them products, at both lengths (exact counts).").format(
                ops=n(c["expected_ops"]), products=n(c["expected_products"])),
            _("With the scaled score the division by √d_k adds one op: {a} and {b} in a row, still flat.").format(
                a=n(v["scaled_dot_span_ops"][0]), b=n(v["scaled_dot_span_ops"][1])))


def _order_verdict(_, verdict: str) -> str:
    """An order verdict of :mod:`seqlab.measure.order` in words (holds / does not hold / cannot tell at <dtype>)."""
    if verdict.startswith("cannot tell at "):
        return _("cannot tell at {dtype}").format(dtype=verdict.removeprefix("cannot tell at "))
    return {"holds": _("holds"), "does not hold": _("does not hold")}[verdict]


def l10(_, v, c, n):
    """L10: order blindness."""
    first, second = v["sentences"]
    condition = _("attention's changes stay within the rounding tolerance {tolerance}; the recurrence's exceed "
                  "{margin} times it.").format(tolerance=n(c["tolerance"]), margin=n(c["recurrence_margin"]))
    if "order_cannot_tell" in c["caveats"]:
        condition += " " + _("Caveat: at {dtype} attention's change lies within the layer's own rounding and its "
                             "float64 rerun does not settle it, so this run cannot tell whether attention is blind to "
                             "order (rows: {rows}; pairs: {pairs}).").format(
            dtype=c["dtype"], rows=_order_verdict(_, v["rows_verdict"]), pairs=_order_verdict(_, v["pairs_verdict"]))
    return (_("Attention cannot see order: shuffled inputs come out shuffled, nothing else changes"),
            _("Rows of a self-attention layer shuffled (T = {T}); its (k, v) pairs shuffled together; the Elman loop's "
              "rows shuffled; '{first}' against '{second}'").format(T=n(v["T"]), first=first, second=second),
            _("rows: outputs shuffled alike (max |Δ| {rows}); pairs: outputs unchanged ({pairs}); recurrence: changes "
              "by {rec}; the two sentences: attention {sa}, recurrence {sr}").format(
                rows=n(v["rows_change"]), pairs=n(v["pairs_change"]), rec=n(v["recurrence_change"]),
                sa=n(v["sentences_attention_change"]), sr=n(v["sentences_recurrence_change"])),
            condition,
            _("The lesson says that shuffling the rows of K and V shuffles the outputs the same way. Measured more "
              "exactly: shuffling only the (k, v) pairs leaves every output unchanged, and shuffling the input rows, "
              "queries included, shuffles the outputs alike."))


def l11(_, v, c, n, lang: str):
    """L11: Figure 1's three attention boxes."""
    titles = ", ".join(_(title) for title in v["lit_titles"])  # the box titles are in the same catalogue
    return (_("Figure 1: of the fifteen boxes, only the three attention boxes mix positions"),
            _("Dependence of every output row on every input row, box by box, in a one-layer Transformer (S = {S}, "
              "T = {T}, d_model = {d}, {h} heads)").format(S=n(v["T_source"]), T=n(v["T_target"]),
                                                         d=n(v["d_model"]), h=n(v["heads"])),
            _("{lit} of {boxes} boxes mix: {titles}").format(lit=n(len(v["lit"])), boxes=n(v["boxes"]), titles=titles),
            _("of {boxes} boxes, exactly the three attention boxes are measured to mix positions.").format(
                boxes=n(c["expected_boxes"])),
            _("The paper draws 14 rectangles; the course draws both positional encodings as boxes and joins Linear "
              "and Softmax into one."))


def l12(_, v, c, n):
    """L12: the quiz's answers."""
    shown = " · ".join(f"{key} {answer}" for key, answer in v["answers"].items())
    figure = (_("{answers} (the lesson's: the same)").format(answers=shown) if v["answers"] == v["lesson"] else
              _("{answers} (the lesson's: {lesson})").format(
                  answers=shown, lesson=" · ".join(f"{k} {a}" for k, a in v["lesson"].items())))
    condition = _("the four answers, recomputed from the quiz's measured facts, equal the lesson's.")
    if c["differ"]:
        condition += " " + _("These differ: {keys}.").format(keys=", ".join(c["differ"]))
    return (_("The four self-check questions have the lesson's answers"),
            _("The quiz's answers, recomputed from spans, the crossover, the order test and paths (seqlab quiz)"),
            figure, condition, "")
