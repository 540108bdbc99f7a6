"""Render a :class:`~seqlab.studies.check.CheckResult`: per claim, what it says, what was measured, the figure,
the verdict and a note where the lesson simplifies. Terminal (Rich), JSON, and plain texts for the report.

Nothing here measures: every number comes from the result's ``values``; every sentence is an English message
id of the gettext domain ``check``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from seqlab.i18n import format_fraction, format_integer, format_number, format_seconds, translator
from seqlab.render.json_output import to_jsonable
from seqlab.studies.check import CLAIMS, CheckResult, ClaimCheck

DOMAIN = "check"
HOLDS, FAILS = "✓", "✗"
#: Columns of the hanging indent under each claim.
INDENT = 7
#: The lesson's rounding of 2000/512 = 3.906 (L9), formatted per language in the note.
LESSON_LAST_RATIO = 3.9
#: Fewest timed blocks with a spread worth quoting (as in the compare and bench tables).
MIN_BLOCKS = 3


@dataclass(frozen=True)
class ClaimText:
    """The words shown for one claim, in one language (``note`` may be empty)."""

    claim: str
    holds: bool
    verdict: str
    statement: str
    measured: str
    figure: str
    note: str


class _Numbers:
    """Language-bound number formatting for the figure lines."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def __call__(self, value: Any) -> str:
        if isinstance(value, bool):
            return str(value)
        if isinstance(value, int):
            return format_integer(value, self.lang)
        if isinstance(value, Fraction):
            return format_fraction(value, self.lang)
        return format_number(float(value), self.lang)


def _l1(_, v, n):
    T1, T2 = v["lengths"]
    return (_("The recurrence's states form a chain T steps long, however many processors run it"),
            _("Longest chain of matrix products (span) of the Elman loop at T = {T1} and {T2}, and of its W_xh x_t "
              "half done as one product").format(T1=n(T1), T2=n(T2)),
            _("{a} and {b} products in a row, one per position ({c} and {d} ops); the W_xh x_t half: {e} and "
              "{f}").format(
                a=n(v["span_products"][0]), b=n(v["span_products"][1]), c=n(v["span_ops"][0]),
                d=n(v["span_ops"][1]), e=n(v["input_half_products"][0]), f=n(v["input_half_products"][1])),
            "")


def _l2(_, v, n):
    T1, T2 = v["lengths"]
    return (_("One attention call is Q Kᵀ, a row softmax and A V: three operations in a row, whatever T"),
            _("Span of one attention call with the dot score (Q, K, V given) at T = {T1} and {T2}").format(
                T1=n(T1), T2=n(T2)),
            _("{a} and {b} ops in a row, {c} and {d} of them matrix products").format(
                a=n(v["span_ops"][0]), b=n(v["span_ops"][1]), c=n(v["span_products"][0]),
                d=n(v["span_products"][1])),
            _("With the scaled score the division by √d_k adds one op: {a} and {b} in a row, still flat.").format(
                a=n(v["scaled_dot_span_ops"][0]), b=n(v["scaled_dot_span_ops"][1])))


def _l3(_, v, n):
    T1, T2 = v["lengths"]
    lstm, gru = v["lstm_path_products_ops"], v["gru_path_products_ops"]
    return (_("Position 1 reaches position T of a recurrence through T-1 products by W_hh; the spectral radius "
              "decides whether the signal shrinks or grows"),
            _("Least matrix products from x_1 to h_T at T = {T1} and {T2}; per-step factor of ‖∂h_T/∂x_i‖ by "
              "autograd (float64, T = {T}) for spectral radius 0.5 and 1.5; paths of an LSTM and a GRU").format(
                T1=n(T1), T2=n(T2), T=n(v["reach_length"])),
            _("{a} and {b} products ({c} and {d} by W_hh); per step ×{z1} (ρ = 0.5) and ×{z2} (ρ = 1.5) at h = 0, "
              "×{i1} and ×{i2} with inputs; LSTM {l1} → {l2} ops, GRU {g1} → {g2} ops, {p} product").format(
                a=n(v["path_products"][0]), b=n(v["path_products"][1]), c=n(v["whh_products"][0]),
                d=n(v["whh_products"][1]), z1=n(v["decay_radius_0.5"][0]), z2=n(v["decay_radius_1.5"][0]),
                i1=n(v["decay_radius_0.5"][1]), i2=n(v["decay_radius_1.5"][1]), l1=n(lstm[0][1]), l2=n(lstm[1][1]),
                g1=n(gru[0][1]), g2=n(gru[1][1]), p=n(lstm[1][0])),
            _("At h = 0 (no input, no bias) tanh' is 1, so the gradient is exactly the repeated product and its "
              "per-step factor approaches ρ; with inputs tanh only shrinks it. The gated layers' path still grows "
              "in ops; in products it stays flat, along an additive bypass that crosses no W_hh: the cell state "
              "c_t in the LSTM, the (1 − z_t) ⊙ h_{t−1} term in the GRU, which has no cell state. Gradient "
              "clipping is not measured: it scales large gradients down and cannot bring small ones back."))


def _l4(_, v, n):
    T1, T2 = v["lengths"]
    return (_("Position 1 reaches position T through attention by a single weight, however far apart they are"),
            _("Least matrix products from x_1 to y_T through self-attention at T = {T1} and {T2}; ‖∂y_T/∂x_1‖ "
              "by autograd").format(T1=n(T1), T2=n(T2)),
            _("{a} and {b} products; the gradient reaches position 1 with norm {first}, per-step factor "
              "×{decay}").format(
                a=n(v["path_products"][0]), b=n(v["path_products"][1]), first=n(v["reach_first"]),
                decay=n(v["decay_per_step"])),
            _("The lesson counts the one factor α_T1; the path measured also crosses the value projection W_v, "
              "hence 2 products, the same at every T."))


def _l5(_, v, n):
    return (_("The recurrence does T(d_h² + d_h·d_model) multiplications"),
            _("Multiplications counted while the loop and nn.RNN run (T = {T}, d_model = {dm}, d_h = {dh})").format(
                T=n(v["T"]), dm=n(v["d_model"]), dh=n(v["d_h"])),
            _("{loop} (loop) = {library} (nn.RNN) = {closed} (closed form)").format(
                loop=n(v["counted_loop"]), library=n(v["counted_nn_rnn"]), closed=n(v["closed_form"])),
            "")


def _l6(_, v, n):
    return (_("One attention call does T²(d_k + d_v) multiplications; the projections are counted apart"),
            _("Multiplications counted on the attention call and on SDPA (T = {T}, d_k = {dk}, d_v = {dv}); the Q, K, "
              "V projections counted apart (d_model = {dm})").format(
                T=n(v["T"]), dk=n(v["d_k"]), dv=n(v["d_v"]), dm=n(v["d_model"])),
            _("{call} (call) = {sdpa} (SDPA) = {closed} (closed form); projections {projections} = {closed_p}").format(
                call=n(v["counted_call"]), sdpa=n(v["counted_sdpa"]), closed=n(v["closed_form"]),
                projections=n(v["projections_counted"]), closed_p=n(v["projections_closed_form"])),
            "")


def _l7(_, v, n):
    ratios = " · ".join(f"T = {n(T)}: {n(r)}" for T, r in v["ratios"].items())
    return (_("With every width d, attention over recurrence is T/d: the two cross at T = d"),
            _("Counted multiplications of SDPA over those of nn.RNN at T = d/2, d and 2d (d = {d})").format(
                d=n(v["d"])),
            _("{ratios} (= T/d); equal at T = {crossover}, attention costs more from T = {first}").format(
                ratios=ratios, crossover=n(v["crossover"]), first=n(v["first_length_attention_costs_more"])),
            _("The paper's Table 1 orders, O(T²d) against O(Td²), are measured by seqlab table1."))


def _l8(_, v, n):
    """L8 states what the verdict tests, time_ratio < work_ratio, with both ratios; not that attention is faster."""
    (T_half, (rec_half, att_half)), (_T, (rec_full, att_full)) = v["multiplications_per_link"].items()
    blocks = (v.get("recurrence_blocks", MIN_BLOCKS), v.get("attention_blocks", MIN_BLOCKS))
    note = _("Compared: nn.RNN with its W_xh products against SDPA's fused kernel without the projections, the "
             "scopes of the two closed forms, one thread each. The verdict is that time does not follow work, not "
             "that attention is always faster: on one thread and long enough texts it is not (seqlab bench).")
    margin = n(float(v["work_ratio"]) / v["time_ratio"])
    if min(blocks) < MIN_BLOCKS:
        note += " " + _("The timings are rough (fewer than 3 timed blocks, so no spread was measured). The margin "
                        "is ×{margin}.").format(margin=margin)
    elif v["noisy"]:
        note += " " + _("The timings were noisy (spread over a tenth of the median): the machine is busy. The "
                        "margin is ×{margin}.").format(margin=margin)
    return (_("Time does not follow work: attention does {work} times the recurrence's multiplications and takes "
              "{time} times its time").format(work=n(v["work_ratio"]), time=n(v["time_ratio"])),
            _("Wall time of SDPA and nn.RNN on one thread at T = {T}, d = {d} (medians of {rb} and {ab} timed "
              "blocks) against their work ratio; multiplications per link of the chain (work / span) at T = "
              "{T_half} and {T}").format(T=n(v["T"]), d=n(v["d"]), T_half=n(T_half), rb=n(blocks[0]),
                                        ab=n(blocks[1])),
            _("attention / recurrence: work ×{work}, time ×{time} (nn.RNN {rec}, SDPA {att}); per link: recurrence "
              "{r1} → {r2}, attention {a1} → {a2}").format(
                work=n(v["work_ratio"]), time=n(v["time_ratio"]), rec=format_seconds(v["recurrence_s"], n.lang),
                att=format_seconds(v["attention_s"], n.lang), r1=n(rec_half), r2=n(rec_full), a1=n(att_half),
                a2=n(att_full)),
            note)


def _l9(_, v, n):
    parts = [_("T = {T}: {rec} against {att} (×{ratio}), chains {span_r} against {span_a}").format(
        T=n(T), rec=n(row["recurrence"]), att=n(row["attention"]), ratio=n(row["ratio"]),
        span_r=n(row["span_recurrence"]), span_a=n(row["span_attention"])) for T, row in v["lengths"].items()]
    exact = ", ".join(f"{n(T)}/{n(v['d'])} = {format_number(float(row['ratio']), n.lang, 4)}"
                      for T, row in v["lengths"].items())
    lengths = ", ".join(n(T) for T in v["lengths"])
    return (_("The worked numbers at d = {d}: T = {lengths}").format(d=n(v["d"]), lengths=lengths),
            _("Multiplications counted on nn.RNN and SDPA at d = {d}, and chain depth in matrix products").format(
                d=n(v["d"])),
            "; ".join(parts),
            _("The lesson rounds its ratios: {exact}; it writes 'about ten times less' for the first and {rounded} "
              "for the last.").format(exact=exact, rounded=format_number(LESSON_LAST_RATIO, n.lang, 2)))


def _l10(_, v, n):
    first, second = v["sentences"]
    return (_("Attention cannot see order: shuffled inputs come out shuffled, nothing else changes"),
            _("Rows of a self-attention layer shuffled (T = {T}); its (k, v) pairs shuffled together; the Elman loop's "
              "rows shuffled; '{first}' against '{second}'").format(T=n(v["T"]), first=first, second=second),
            _("rows: outputs shuffled alike (max |Δ| {rows}); pairs: outputs unchanged ({pairs}); recurrence: changes "
              "by {rec}; the two sentences: attention {sa}, recurrence {sr}").format(
                rows=n(v["rows_change"]), pairs=n(v["pairs_change"]), rec=n(v["recurrence_change"]),
                sa=n(v["sentences_attention_change"]), sr=n(v["sentences_recurrence_change"])),
            _("The lesson says that shuffling the rows of K and V shuffles the outputs the same way. Measured more "
              "exactly: shuffling only the (k, v) pairs leaves every output unchanged, and shuffling the input rows, "
              "queries included, shuffles the outputs alike. Rounding tolerance {tolerance}.").format(
                tolerance=n(v["tolerance"])))


def _l11(_, v, n, lang: str):
    from seqlab.render.figure import figure_translator

    titles = ", ".join(figure_translator(lang)(title) for title in v["lit_titles"])
    return (_("Figure 1: of the fifteen boxes, only the three attention boxes mix positions"),
            _("Dependence of every output row on every input row, box by box, in a one-layer Transformer (S = {S}, "
              "T = {T}, d_model = {d}, {h} heads)").format(S=n(v["T_source"]), T=n(v["T_target"]),
                                                         d=n(v["d_model"]), h=n(v["heads"])),
            _("{lit} of {boxes} boxes mix: {titles}").format(lit=n(len(v["lit"])), boxes=n(v["boxes"]), titles=titles),
            _("The paper draws 14 rectangles; the course draws both positional encodings as boxes and joins Linear "
              "and Softmax into one."))


def _l12(_, v, n):
    shown = " · ".join(f"{key} {answer}" for key, answer in v["answers"].items())
    return (_("The four self-check questions have the lesson's answers"),
            _("The quiz's answers, recomputed from spans, the crossover, the order test and paths (seqlab quiz)"),
            _("{answers} (the lesson's: the same)").format(answers=shown) if v["answers"] == v["lesson"] else
            _("{answers} (the lesson's: {lesson})").format(
                answers=shown, lesson=" · ".join(f"{k} {a}" for k, a in v["lesson"].items())),
            "")


_TEXTS: dict[str, Callable] = {"L1": _l1, "L2": _l2, "L3": _l3, "L4": _l4, "L5": _l5, "L6": _l6, "L7": _l7,
                               "L8": _l8, "L9": _l9, "L10": _l10, "L12": _l12}


def claim_text(check: ClaimCheck, lang: str = "en") -> ClaimText:
    """The translated words for one checked claim.

    Raises:
        SeqlabError: unknown language.
    """
    _ = translator(lang, DOMAIN)
    verdict = _("holds") if check.holds else _("does not hold")
    if check.error is not None:
        return ClaimText(check.claim, False, verdict, _("Claim {claim}").format(claim=check.claim),
                         _("the measurement failed"), _("could not be measured: {error}").format(error=check.error), "")
    n = _Numbers(lang)
    if check.claim == "L11":
        statement, measured, figure, note = _l11(_, check.values, n, lang)
    else:
        statement, measured, figure, note = _TEXTS[check.claim](_, check.values, n)
    return ClaimText(check.claim, check.holds, verdict, statement, measured, figure, note)


def summary(result: CheckResult, lang: str = "en", command: str = "check") -> str:
    """One line: how many claims hold, at which sizes, in how long.

    ``command`` is where the line is shown: ``"check"`` points at its own ``--full``; ``"report"`` (which has
    no ``--full``) says which claims and sizes the report ran and names ``seqlab check`` for the rest.
    """
    _ = translator(lang, DOMAIN)
    if command == "report":
        sizes = (_("the default sizes of seqlab check; seqlab check --full runs larger ones")
                 if len(result.checks) == len(CLAIMS) else
                 _("a preview: {checked} of the {total} claims; seqlab check checks all of them").format(
                     checked=len(result.checks), total=len(CLAIMS)))
    else:
        sizes = _("full sizes") if result.full else _("default sizes; --full for larger ones")
    return _("{held} of {total} claims hold ({sizes}; {seconds}, CPU threads: {threads}, PyTorch {torch}).").format(
        held=result.held, total=len(result.checks), sizes=sizes, seconds=format_seconds(result.elapsed_s, lang),
        threads=result.threads, torch=result.torch_version)


def render_check(result: CheckResult, lang: str = "en", width: int = 100):
    """A Rich renderable: per claim a verdict line, then what was measured, the figure and any note, wrapped
    to ``width`` columns with a hanging indent (no trailing spaces); then the summary."""
    import textwrap

    from rich.console import Group
    from rich.text import Text

    _ = translator(lang, DOMAIN)
    width = max(width, 40)
    parts: list[Any] = [Text(_("The lesson's claims, measured"), style="bold")]
    for check in result.checks:
        text = claim_text(check, lang)
        mark, style = (HOLDS, "green") if text.holds else (FAILS, "bold red")
        prefix = f"{mark} {text.claim:<4}{text.verdict}: "
        head = textwrap.wrap(prefix + text.statement, width, subsequent_indent=" " * INDENT)
        parts.append(Text.assemble((prefix, style), head[0][len(prefix):]))
        parts.extend(Text(line) for line in head[1:])
        lines = [_("Measured: {text}").format(text=text.measured), _("Figure: {text}").format(text=text.figure)]
        if text.note:
            lines.append(_("Note: {text}").format(text=text.note))
        for i, line in enumerate(lines):
            parts.extend(Text(row, style="dim" if i == 2 else "")
                         for row in textwrap.wrap(line, width, initial_indent=" " * INDENT,
                                                  subsequent_indent=" " * INDENT))
    parts.append(Text("\n".join(textwrap.wrap(summary(result, lang), width)), style="bold"))
    return Group(*parts)


def check_json(result: CheckResult, lang: str = "en") -> str:
    """Every claim with its verdict, words and raw figures, as JSON text."""
    claims = []
    for check in result.checks:
        text = claim_text(check, lang)
        claims.append({"claim": check.claim, "holds": check.holds, "statement": text.statement,
                       "measured": text.measured, "figure": text.figure, "note": text.note,
                       "values": to_jsonable(check.values), "seconds": check.seconds, "error": check.error})
    document = {"all_hold": result.all_hold, "held": result.held, "total": len(result.checks), "full": result.full,
                "seed": result.seed, "threads": result.threads, "torch_version": result.torch_version,
                "elapsed_s": result.elapsed_s, "claims": claims}
    return json.dumps(document, indent=2, ensure_ascii=False)
