"""Words for the time claim of ``seqlab check`` (L8): four matched scopes, one thread and the machine's.

Same contract as :mod:`seqlab.render.check_structure`: ``(statement, measured, figure, condition, note)``
from the claim's values and condition; nothing measured or decided here. Every ratio is shown with its
quartiles over the interleaved rounds and the thread count it was timed on; every comparison the measurement
did not decide is named, with its spread.
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


def _at(table: dict, threads: int):
    """``table[threads]``, whether the keys are integers (a result) or strings (read back from JSON)."""
    return table[threads] if threads in table else table[str(threads)]


def _spread(n, entry: dict) -> str:
    """``×low–high``: the quartiles of the per-round ratios."""
    return "×{low}–{high}".format(low=n(entry["low"]), high=n(entry["high"]))


def _reason(_, entry: dict, n, margin: str) -> str:
    """Why one comparison was not decided, with its spread over the rounds."""
    if entry["class"] == "busy":
        return _("its threads were not judged")
    words = {"straddles": _("{spread} over {rounds} rounds, across the ×{m} margin"),
             "quickest_disagree": _("{spread} over {rounds} rounds, but the quickest rounds disagree"),
             "clocks_disagree": _("{spread} over {rounds} rounds by the wall clock, a winner the CPU clock did not "
                                  "confirm"),
             "few_rounds": _("only {rounds} rounds, too few to decide")}[entry["reason"]]
    return words.format(spread=_spread(n, entry), rounds=n(entry["rounds"]), m=margin)


def _named(_, v, pairs, n, describe) -> str:
    """``scope on threads (detail), …`` for each ``[threads, scope]`` in ``pairs``."""
    items = []
    for threads, scope in pairs:
        entry = _at(v["comparisons"], int(threads))[scope]
        items.append(_("{scope} on {threads} ({detail})").format(
            scope=scope_words(_, scope, v["batch"], n), threads=_threads_words(_, int(threads), n),
            detail=describe(entry)))
    return "; ".join(items)


def _caveats(_, v, c, n) -> list[str]:
    """One sentence per caveat of the L8 verdict; each comparison not decided is named."""
    margin = n.short(c["speed_margin"])
    sentences = []
    for threads in v["threads"]:
        scope = _at(v["stops"], int(threads))
        if scope is not None:
            sentences.append(_("Caveat: on {threads} attention stops finishing first at {scope}.").format(
                threads=_threads_words(_, int(threads), n), scope=scope_words(_, scope, v["batch"], n)))
    if "tie_scopes" in c["caveats"]:
        sentences.append(_("Caveat: a tie, within ×{m} either way: {named}.").format(
            m=margin, named=_named(_, v, c["ties"], n, lambda e: "×" + n(e["ratio"]) + ", " + _spread(n, e))))
    if "undecided_scopes" in c["caveats"]:
        sentences.append(_("Caveat: not decided: {named}.").format(
            named=_named(_, v, c["undecided"], n, lambda e: _reason(_, e, n, margin))))
    machine = int(v["threads"][-1])
    speedups, advantage = v["speedups"], v["advantage"]
    if "scaling_busy" in c["caveats"]:
        control = speedups["control"]
        sentences.append(_("Caveat: the machine's {threads} were busy: a plain matrix product ran only ×{s} as fast on "
                           "them as on 1 thread ({spread} over {rounds} rounds, decided below the ×{m} margin), so "
                           "spreading over processors was not judged.").format(
            threads=_threads_words(_, machine, n), s=n(control["ratio"]), spread=_spread(n, control),
            rounds=n(control["rounds"]), m=margin))
    if "scaling_control_not_judged" in c["caveats"]:
        control = speedups["control"]
        sentences.append(_("Caveat: the speed-up of a plain matrix product on {threads} (×{s}, {spread} over {rounds} "
                           "rounds) was not decided, so nothing on those threads was judged.").format(
            threads=_threads_words(_, machine, n), s=n(control["ratio"]), spread=_spread(n, control),
            rounds=n(control["rounds"])))
    if "scaling_not_judged" in c["caveats"]:
        sentences.append(_("Caveat: whether attention's thread speed-up (×{a}) exceeds the recurrence's (×{r}) was not "
                           "decided: their per-round ratio spread {spread} over {rounds} rounds.").format(
            a=n(speedups["sdpa"]["ratio"]), r=n(speedups["recurrence"]["ratio"]), spread=_spread(n, advantage),
            rounds=n(advantage["rounds"])))
    if "scaling_tie" in c["caveats"]:
        sentences.append(_("Caveat: attention's thread speed-up (×{a}) does not exceed the recurrence's (×{r}) by the "
                           "margin: their per-round ratio is ×{ratio} ({spread}), within ×{m} either way.").format(
            a=n(speedups["sdpa"]["ratio"]), r=n(speedups["recurrence"]["ratio"]), ratio=n(advantage["ratio"]),
            spread=_spread(n, advantage), m=margin))
    if "scaling_one_thread" in c["caveats"]:
        sentences.append(_("Caveat: L8 timed on 1 thread only (--threads, or the cores the machine's load leaves "
                           "free), so spreading over processors was not measured."))
    halves = {"finishes_first": _("whether attention finishes first at the lesson's own scope (the SDPA call against "
                                  "nn.RNN on 1 thread) was not decided"),
              "spreads_over_processors": _("whether its work spreads over processors was not measured in this run")}
    unjudged = [halves[half] for half in c.get("unjudged_halves", ())]
    if unjudged:
        sentences.append(_("Not judged: {halves}.").format(halves="; ".join(unjudged)))
    return sentences


def l8(_, v, c, n):
    """L8: who finishes first at each scope, and who gains from more threads."""
    threads = [int(t) for t in v["threads"]]
    per_threads = []
    for t in threads:
        ratios = " · ".join(f"{scope_words(_, s, v['batch'], n)} ×{n(e['ratio'])} ({_spread(n, e)})"
                            for s, e in _at(v["comparisons"], t).items())
        per_threads.append(_("on {threads}: {ratios}").format(threads=_threads_words(_, t, n), ratios=ratios))
    figure = _("recurrence time / attention time, per-round median (quartiles; above 1: attention finishes first), "
               "{parts}").format(parts="; ".join(per_threads))
    if len(threads) == 2:
        s = v["speedups"]
        figure += "; " + _("speed-up from 1 to {t} threads, per-round median (quartiles): nn.RNN ×{r} ({rs}), SDPA ×{a} "
                           "({as_}), control product ×{c} ({cs})").format(
            t=n(threads[-1]), r=n(s["recurrence"]["ratio"]), rs=_spread(n, s["recurrence"]), a=n(s["sdpa"]["ratio"]),
            as_=_spread(n, s["sdpa"]), c=n(s["control"]["ratio"]), cs=_spread(n, s["control"]))
    condition = " ".join([
        _("All machines are timed in {rounds} interleaved rounds, each round one block of each, and every comparison "
          "is judged round by round: a side finishes first when the lower quartile of its per-round time ratios and "
          "the ratio of the quickest rounds both pass ×{m}; within ×{m} either way it is a tie; otherwise it is not "
          "decided. Attention spreads over processors when its per-round thread speed-up exceeds the recurrence's by "
          "×{m}; the threads are judged only if a plain matrix product is decided faster on them. The recurrence "
          "finishing first at the SDPA call on 1 thread, or scaling better, fails the claim; the claim holds only "
          "when attention is decided first at that call and its spread over processors was measured and decided, "
          "and is not judged otherwise.").format(rounds=n(c["rounds"]), m=n.short(c["speed_margin"])),
        *_caveats(_, v, c, n)])
    return (_("Attention's larger work spreads over processors and finishes before the recurrence's T waits"),
            _("Wall time of nn.RNN against attention at T = {T}, d = {d} (work ×{work}) at four scopes: the SDPA call, "
              "SDPA with Q, K, V projections, a whole nn.MultiheadAttention layer, and that layer at batch {B} (the "
              "RNN at batch {B} too); on {threads}; {rounds} interleaved rounds").format(
                T=n(v["T"]), d=n(v["d"]), work=n(v["work_ratio"]), B=n(v["batch"]), rounds=n(v["rounds"]),
                threads=(_("{a} and {b}").format(a=_threads_words(_, threads[0], n), b=_threads_words(_, threads[1], n))
                         if len(threads) == 2 else _threads_words(_, threads[0], n))),
            figure, condition,
            _("Times depend on the machine and its load: under load a comparison is not decided rather than read "
              "either way, and the verdict can fall to a caveat or to 'not judged', never to 'does not hold'. The "
              "lesson's scope is the SDPA call; a whole layer adds the projections, and batching gives the recurrence "
              "the wide products that attention had. seqlab bench times more."))
