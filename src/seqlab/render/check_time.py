"""Words for the time claim of ``seqlab check`` (L8): four matched scopes, one thread and the machine's.

Same contract as :mod:`seqlab.render.check_structure`: ``(statement, measured, figure, condition, note)``
from the claim's values and condition; nothing measured here.
"""

from __future__ import annotations

DOMAIN = "seqlab"


def scope_words(_, scope: str, batch: int, n) -> str:
    """One of L8's scopes, in words."""
    return {"sdpa": _("the SDPA call"), "sdpa_projections": _("SDPA with Q, K, V projections"),
            "layer": _("the whole layer"),
            "layer_batch": _("the whole layer at batch {B}").format(B=n(batch))}[scope]


def _threads_words(_, threads: int, n) -> str:
    return _("1 thread") if threads == 1 else _("{t} threads").format(t=n(threads))


def _caveats(_, v, c, n) -> list[str]:
    """One sentence per caveat of the L8 verdict."""
    sentences = []
    for threads, scope in v["stops"].items():
        if scope is not None:
            sentences.append(_("Caveat: on {threads} attention stops finishing first at {scope}.").format(
                threads=_threads_words(_, int(threads), n), scope=scope_words(_, scope, v["batch"], n)))
    if "undecided_scopes" in c["caveats"]:
        sentences.append(_("Caveat: some comparisons were ties or too noisy to decide (a busy machine)."))
    speedups = v["speedups"]
    words = {
        "scaling_noisy": _("Caveat: the thread speed-ups were too noisy to compare."),
        "scaling_busy": _("Caveat: the machine's threads were busy (a plain matrix product sped up only ×{s} on "
                          "them), so spreading over processors was not judged.").format(s=n(speedups["control"])),
        "scaling_tie": _("Caveat: attention's thread speed-up (×{a}) does not exceed the recurrence's (×{r}) by the "
                         "margin.").format(a=n(speedups["sdpa"]), r=n(speedups["recurrence"])),
        "scaling_one_thread": _("Caveat: this machine runs one thread, so spreading over processors cannot be "
                                "measured here."),
    }
    sentences.extend(words[key] for key in c["caveats"] if key in words)
    return sentences


def l8(_, v, c, n):
    """L8: who finishes first at each scope, and who gains from more threads."""
    threads = [int(t) for t in v["threads"]]
    per_threads = []
    for t in threads:
        ratios = " · ".join(f"{scope_words(_, s, v['batch'], n)} ×{n(r)}" for s, r in v["ratios"][t].items())
        per_threads.append(_("on {threads}: {ratios}").format(threads=_threads_words(_, t, n), ratios=ratios))
    figure = _("recurrence time / attention time (above 1: attention finishes first), {parts}").format(
        parts="; ".join(per_threads))
    if v["advantage"] is not None:
        s = v["speedups"]
        figure += "; " + _("speed-up from 1 to {t} threads: nn.RNN ×{r}, SDPA ×{a}, control product ×{c}").format(
            t=n(threads[-1]), r=n(s["recurrence"]), a=n(s["sdpa"]), c=n(s["control"]))
    blocks = min(by["blocks"] for timing in v["timings"].values() for by in timing.values())
    condition = " ".join([
        _("a side finishes first when the time ratio passes {m} (or 1/{m}); attention spreads over processors when "
          "its thread speed-up exceeds the recurrence's by ×{m}; a timing whose spread (IQR) passes {noise} times its "
          "median, or with fewer than {blocks} timed blocks, decides nothing; the threads are judged only if a plain "
          "matrix product speeds up on them. The recurrence finishing first at the SDPA call on 1 thread, or "
          "scaling better, fails the claim.").format(
            m=n.short(c["speed_margin"]), noise=n.short(c["noise_fraction"]), blocks=n(c["min_blocks"])),
        *_caveats(_, v, c, n)])
    return (_("Attention's larger work spreads over processors and finishes before the recurrence's T waits"),
            _("Wall time of nn.RNN against attention at T = {T}, d = {d} (work ×{work}) at four scopes: the SDPA call, "
              "SDPA with Q, K, V projections, a whole nn.MultiheadAttention layer, and that layer at batch {B} (the "
              "RNN at batch {B} too); on {threads}; medians over at least {blocks} timed blocks").format(
                T=n(v["T"]), d=n(v["d"]), work=n(v["work_ratio"]), B=n(v["batch"]), blocks=n(blocks),
                threads=(_("{a} and {b}").format(a=_threads_words(_, threads[0], n), b=_threads_words(_, threads[1], n))
                         if len(threads) == 2 else _threads_words(_, threads[0], n))),
            figure, condition,
            _("Times depend on the machine and its load: under load the verdict can only fall to a caveat, never to "
              "'does not hold'. The lesson's scope is the SDPA call; a whole layer adds the projections, and batching "
              "gives the recurrence the wide products that attention had. seqlab bench times more."))
