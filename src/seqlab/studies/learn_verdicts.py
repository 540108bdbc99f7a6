"""Which sentences the measurements of ``seqlab learn`` support (L3, L4, L10), with the margins that decide.

A sentence that explains a result ("attention learns where the Elman RNN does not", "the measured
reach explains the failure", "the LSTM's bypass lets it learn") is a claim, and it is printed only
when the measured figures of **every seed** support it with a margin; otherwise a neutral sentence
says what was measured instead. This module decides; :mod:`seqlab.render.learn` words the decision.
Each :class:`Finding` carries its kind (which sentence) and the figures the sentence quotes, so the
tests can patch a figure and see the sentence change.

The conditions, per task at its longest T that has the cells needed (ranges are over seeds, at each
cell's chosen rate):

* ``recall`` (L3, L4). ``recall_every_seed``: attention >= :data:`~seqlab.learn.selection.LEARNT`
  in every seed and the Elman RNN near chance in every seed
  (:func:`~seqlab.learn.selection.near_chance`). ``recall_on_average``: attention >= LEARNT in every
  seed and the Elman RNN's mean at least :data:`FAR_BELOW` under attention's lowest seed. Otherwise
  ``recall_no_contrast``.
* reach, only after one of the two contrasts above: ``reach_explains`` when in every seed where the
  Elman RNN stayed near chance its reach ||dy_T/dx_1|| is at most :data:`REACH_MARGIN` times
  attention's reach in the same seed; otherwise ``reach_does_not_separate``. (The reach of a trained
  recurrence with ρ > 1 varies between CPUs, so this verdict can differ between machines; the
  accuracy verdict above does not, by its margins.)
* bypass (L3), for the LSTM and the GRU: ``bypass_learns`` at the longest T where **every** seed of the
  gated model is >= LEARNT and its lowest seed is at least FAR_BELOW above the Elman RNN's highest; else,
  at the longest T where every seed of the Elman RNN is near chance, ``bypass_budget`` when every seed of
  the gated model is near chance too and **no** seed stopped early (every run used its whole step budget:
  the budget, not the model, is what this shows), otherwise ``bypass_partial``; else no bypass sentence.
* ``order`` (L10): ``order_holds`` when attention without encoding is near chance in every seed and
  with the encoding above it in every seed; otherwise ``order_not``.
* ``position`` (L10): ``position_holds`` when the per-position MLP is near chance in every seed and the
  best weight-sharing model (by mean) >= LEARNT in every seed; otherwise ``position_not``.

Known results beyond the lesson, each either shown, said to be **not reproduced at this budget**
(``known_not_reproduced``, with ``figures["result"]`` naming which, and the budget it had), or, when the run has
none of the cells it needs (``--quick`` trains recall without T = 64; an interrupted sweep), said **not run**
(``known_not_run``, with the lengths and pair counts the run had): none is left out silently. At ``--quick``'s own
mqar sizes the state limit cannot show (:data:`QUICK_STATE_LIMITS`, measured): a quick run that does not show it
says that its sizes cannot (``known_not_run``, ``figures["result"] == "state_limits_quick"``).

* ``gated_recall`` — the LSTM and the GRU recall the first token at T = :data:`GATED_T` (the problem
  the LSTM was built for, Hochreiter & Schmidhuber 1997): ``gated_recalls`` when every seed is >= LEARNT.
* ``attention_mqar`` — attention recalls MQAR at every T and number of pairs tested (Zoology, Arora et
  al. 2023, §3), at its widest width: ``mqar_attention_recalls`` when every seed of every such cell is
  >= LEARNT.
* ``state_limits`` — a mixer of fixed state loses accuracy as the pairs outgrow its state (Zoology §3,
  Based §3): per fixed-state model, at the longest T and the width where its mean falls most,
  ``mqar_state_limits`` when its lowest seed at the fewest pairs is at least :data:`FAR_BELOW` above
  its highest seed at the most pairs while attention (widest) is >= LEARNT in every seed at the most
  pairs; otherwise ``mqar_state_no_drop``. The known result counts as shown when one model shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seqlab.learn.models import FIXED_STATE
from seqlab.learn.selection import LEARNT, NEAR_CHANCE, Cell, near_chance
from seqlab.studies.learn import QUICK_SETTINGS, LearnResult

__all__ = ["FAR_BELOW", "GATED", "GATED_T", "KINDS", "KNOWN_RESULTS", "QUICK_STATE_LIMITS", "REACH_MARGIN", "SHARED",
           "Finding",
           "learn_findings"]

#: Accuracy gap from which one model counts as far below another.
FAR_BELOW = 0.3
#: The Elman RNN's reach must be at most this share of attention's, seed by seed, to explain the failure.
REACH_MARGIN = 1e-3
#: Gated recurrences whose additive bypass L3 names.
GATED = ("lstm", "gru")
#: Weight-sharing models of the position task, in the order preferred on a tie.
SHARED = ("attention", "gru", "lstm", "elman", "attention-pe")
#: The length at which the gated recurrences should recall (the known result ``gated_recall``).
GATED_T = 64
#: Whether ``--quick``'s mqar sizes (400 steps, width 16, 2 and 6 pairs, T = 24) can show the state limit: no.
#: Measured (seeds 0–1, rates 1e-2 and 3e-3, one thread): linear attention of width 16 scored 0.50–0.70 at 2 pairs
#: and 0.40–0.67 at 6 (rate 1e-2), attention 1.00 at 6: the fixed-state mixer is not yet recalling at the fewest
#: pairs, so no fall of FAR_BELOW in every seed can show. A quick run says so (``known_not_run``,
#: ``"state_limits_quick"``) rather than "not reproduced"; the full run's sizes are the ones that test it.
QUICK_STATE_LIMITS = False
#: Known results that a run shows or reports as not reproduced.
KNOWN_RESULTS = ("gated_recall", "attention_mqar", "state_limits")
KINDS = ("recall_every_seed", "recall_on_average", "recall_no_contrast", "reach_explains", "reach_does_not_separate",
         "bypass_learns", "bypass_budget", "bypass_partial", "order_holds", "order_not", "position_holds",
         "position_not", "gated_recalls", "mqar_attention_recalls", "mqar_state_limits", "mqar_state_no_drop",
         "known_not_reproduced", "known_not_run")


@dataclass(frozen=True)
class Finding:
    """One sentence's verdict: its kind (one of :data:`KINDS`), where, the model named and its figures.

    Attributes:
        kind: which sentence; ``task`` and ``T``: where it was measured.
        model: the model the sentence is about, when it is about one (the bypass sentences), else None.
        figures: the measured values the sentence quotes (accuracies, reaches, counts, thresholds).
    """

    kind: str
    task: str
    T: int
    model: str | None = None
    figures: dict[str, object] = field(default_factory=dict)

    @property
    def supports_lesson(self) -> bool:
        """True for the kinds that say the lesson's claim holds on these measurements."""
        return self.kind in {"recall_every_seed", "recall_on_average", "reach_explains", "bypass_learns",
                             "order_holds", "position_holds", "gated_recalls", "mqar_attention_recalls",
                             "mqar_state_limits"}


def _longest(result: LearnResult, task: str, *models: str) -> int | None:
    """The longest T of ``task`` at which every one of ``models`` has a cell."""
    done = [T for T in result.lengths.get(task, ()) if all(result.cell(task, m, T) is not None for m in models)]
    return max(done) if done else None


def _range(cell: Cell) -> dict[str, object]:
    return {"mean": cell.mean, "low": cell.low, "high": cell.high, "seeds": len(cell.seeds)}


def _reach_finding(elman: Cell, att: Cell, T: int) -> Finding | None:
    """The reach verdict over the seeds where the Elman RNN stayed near chance (None when there is none)."""
    attention_reach = dict(zip(att.seeds, att.reaches))
    failed = [(s, acc, reach, rho) for s, acc, reach, rho in
              zip(elman.seeds, elman.accuracies, elman.reaches, elman.spectral_radii)
              if near_chance(acc, elman.chance) and reach is not None and attention_reach.get(s) is not None]
    if not failed:
        return None
    explained = [s for s, _, reach, _ in failed if reach <= REACH_MARGIN * attention_reach[s]]
    reaches, rhos = [f[2] for f in failed], [f[3] for f in failed if f[3] is not None]
    partner = [attention_reach[f[0]] for f in failed]
    figures = {"failed": len(failed), "explained": len(explained), "margin": REACH_MARGIN,
               "elman_low": min(reaches), "elman_high": max(reaches),
               "attention_low": min(partner), "attention_high": max(partner),
               "rho_low": min(rhos, default=None), "rho_high": max(rhos, default=None)}
    kind = "reach_explains" if len(explained) == len(failed) else "reach_does_not_separate"
    return Finding(kind, "recall", T, "elman", figures)


def _recall(result: LearnResult) -> list[Finding]:
    T = _longest(result, "recall", "elman", "attention")
    if T is None:
        return []
    elman, att = result.cell("recall", "elman", T), result.cell("recall", "attention", T)
    failed = sum(near_chance(a, elman.chance) for a in elman.accuracies)
    figures = {"attention": _range(att), "elman": _range(elman), "chance": elman.chance, "learnt": LEARNT,
               "near_chance": elman.chance + _bound(elman), "failed": failed,
               "far_below": FAR_BELOW}
    if att.every_seed_learnt and elman.every_seed_near_chance:
        kind = "recall_every_seed"
    elif att.every_seed_learnt and elman.mean <= att.low - FAR_BELOW:
        kind = "recall_on_average"
    else:
        return [Finding("recall_no_contrast", "recall", T, None, figures)]
    reach = _reach_finding(elman, att, T)
    return [Finding(kind, "recall", T, None, figures)] + ([] if reach is None else [reach])


def _bound(cell: Cell) -> float:
    """The near-chance bound above chance: NEAR_CHANCE of the way from chance to 1."""
    return NEAR_CHANCE * (1.0 - cell.chance)


def _bypass_kind(elman: Cell, gated: Cell) -> str:
    """Every seed decides: the gated model's lowest seed against LEARNT and the Elman RNN's highest seed."""
    if gated.every_seed_learnt and gated.low - elman.high >= FAR_BELOW:
        return "bypass_learns"
    if gated.every_seed_near_chance and gated.learnt == 0:
        return "bypass_budget"
    return "bypass_partial"


def _bypass(result: LearnResult) -> list[Finding]:
    """Per gated model: the longest T where it learns far above the Elman RNN in every seed; else the longest T
    where the Elman RNN is near chance in every seed (the gated model then near chance too, or in between)."""
    findings = []
    for model in GATED:
        pairs = {T: (e, g) for T in result.lengths.get("recall", ())
                 if (e := result.cell("recall", "elman", T)) is not None
                 and (g := result.cell("recall", model, T)) is not None}
        kinds = {T: _bypass_kind(e, g) for T, (e, g) in pairs.items()}
        learns = [T for T in pairs if kinds[T] == "bypass_learns"]
        failing = [T for T, (e, _) in pairs.items() if e.every_seed_near_chance]
        if not learns and not failing:
            continue
        T = max(learns) if learns else max(failing)
        elman, gated = pairs[T]
        figures = {"model": _range(gated), "elman": _range(elman), "chance": gated.chance, "lr": gated.lr,
                   "rates": tuple(r.lr for r in gated.rates), "steps": gated.step_limit, "learnt": gated.learnt,
                   "far_below": FAR_BELOW}
        findings.append(Finding(kinds[T], "recall", T, model, figures))
    return findings


def _order(result: LearnResult) -> list[Finding]:
    T = _longest(result, "order", "attention", "attention-pe")
    if T is None:
        return []
    att, pe = result.cell("order", "attention", T), result.cell("order", "attention-pe", T)
    figures = {"attention": _range(att), "attention_pe": _range(pe), "chance": att.chance,
               "near_chance": att.chance + _bound(att)}
    holds = att.every_seed_near_chance and not near_chance(pe.low, pe.chance)
    return [Finding("order_holds" if holds else "order_not", "order", T, None, figures)]


def _position(result: LearnResult) -> list[Finding]:
    T = _longest(result, "position", "mlp")
    shared = [] if T is None else [c for m in SHARED if (c := result.cell("position", m, T)) is not None]
    if T is None or not shared:
        return []
    mlp = result.cell("position", "mlp", T)
    best = max(shared, key=lambda c: c.mean)  # the first of SHARED on a tie
    figures = {"mlp": _range(mlp), "shared": _range(best), "chance": mlp.chance, "learnt": LEARNT,
               "near_chance": mlp.chance + _bound(mlp)}
    holds = mlp.every_seed_near_chance and best.every_seed_learnt
    return [Finding("position_holds" if holds else "position_not", "position", T, best.model, figures)]


def _budget(result: LearnResult, cell: Cell) -> dict[str, object]:
    """The budget a cell had: its step limit, the rates tried, how many seeds stopped early."""
    return {"steps": cell.step_limit, "rates": tuple(r.lr for r in cell.rates), "lr": cell.lr,
            "learnt": cell.learnt}


def _gated_recall(result: LearnResult) -> list[Finding]:
    """Per gated model with a recall cell at :data:`GATED_T`: it recalls in every seed, or not reproduced."""
    findings = []
    for model in GATED:
        cell = result.cell("recall", model, GATED_T)
        if cell is None:
            continue
        figures = {"model": _range(cell), "chance": cell.chance, "learnt_at": LEARNT, **_budget(result, cell)}
        if cell.every_seed_learnt:
            findings.append(Finding("gated_recalls", "recall", GATED_T, model, figures))
        else:
            findings.append(Finding("known_not_reproduced", "recall", GATED_T, model,
                                    {"result": "gated_recall", **figures}))
    return findings


def _widest(result: LearnResult, model: str) -> int | None:
    widths = [c.width for c in result.cells("mqar", model)]
    return max(widths) if widths else None


def _mqar_attention(result: LearnResult) -> tuple[list[Finding], int | None]:
    """Attention at its widest width over every (T, pairs): recalls in every seed, or not reproduced."""
    width = _widest(result, "attention")
    if width is None:
        return [], None
    cells = [c for c in result.cells("mqar", "attention") if c.width == width]
    worst = min(cells, key=lambda c: (c.low, -c.T, -(c.pairs or 0)))
    figures = {"attention": _range(worst), "chance": worst.chance, "learnt_at": LEARNT, "width": width,
               "pairs": worst.pairs, "cells": len(cells), "lengths": tuple(sorted({c.T for c in cells})),
               "pair_counts": tuple(sorted({c.pairs for c in cells})),
               "state_low": min(c.state_bytes or 0 for c in cells), "state_high": max(c.state_bytes or 0 for c in cells),
               **_budget(result, worst)}
    if worst.every_seed_learnt:
        return [Finding("mqar_attention_recalls", "mqar", max(c.T for c in cells), "attention", figures)], width
    return [Finding("known_not_reproduced", "mqar", worst.T, "attention", {"result": "attention_mqar", **figures})], width


def _mqar_state(result: LearnResult, attention_width: int | None) -> list[Finding]:
    """Per fixed-state model at the longest T: does its accuracy fall from the fewest to the most pairs?"""
    cells = result.cells("mqar")
    if not cells:
        return []
    T = max(c.T for c in cells)
    counts = sorted({c.pairs for c in cells if c.T == T})
    if len(counts) < 2:
        return []
    few, many = counts[0], counts[-1]
    reference = None if attention_width is None else result.cell("mqar", "attention", T, many, attention_width)
    attention_recalls = reference is not None and reference.every_seed_learnt
    findings = []
    for model in result.models.get("mqar", ()):
        if model not in FIXED_STATE:
            continue
        pairs_of = {}
        for c in result.cells("mqar", model):
            if c.T == T and c.pairs in (few, many):
                pairs_of.setdefault(c.width, {})[c.pairs] = c
        both = {w: (p[few], p[many]) for w, p in pairs_of.items() if few in p and many in p}
        if not both:
            continue
        width = max(both, key=lambda w: (both[w][0].mean - both[w][1].mean, w))
        low_cell, high_cell = both[width]
        figures = {"few": _range(low_cell), "many": _range(high_cell), "pairs_low": few, "pairs_high": many,
                   "width": width, "state": high_cell.state_bytes, "far_below": FAR_BELOW, "chance": low_cell.chance,
                   "attention": None if reference is None else _range(reference), **_budget(result, high_cell)}
        drops = low_cell.low - high_cell.high >= FAR_BELOW
        kind = "mqar_state_limits" if drops and attention_recalls else "mqar_state_no_drop"
        findings.append(Finding(kind, "mqar", T, model, figures))
    if findings and not any(f.kind == "mqar_state_limits" for f in findings):
        steps = max(f.figures["steps"] for f in findings)
        if _quick_sizes(result):  # measured: these sizes cannot show it (QUICK_STATE_LIMITS); said so, not "not reproduced"
            findings.append(Finding("known_not_run", "mqar", T, None,
                                    {"result": "state_limits_quick", "steps": steps, "pairs_low": few,
                                     "pairs_high": many}))
            return findings
        findings.append(Finding("known_not_reproduced", "mqar", T, None,
                                {"result": "state_limits", "pairs_low": few, "pairs_high": many,
                                 "far_below": FAR_BELOW, "steps": steps,
                                 "attention": None if reference is None else _range(reference)}))
    return findings


def _quick_sizes(result: LearnResult) -> bool:
    """The run trains mqar at ``--quick``'s own sizes (steps, pairs, widths, models): too small to show the state
    limit (see :data:`QUICK_STATE_LIMITS`)."""
    config = result.config
    return (config.preset == "quick" and config.pairs is None and config.widths is None and config.models is None
            and config.settings.steps <= QUICK_SETTINGS.steps)


def _mqar(result: LearnResult) -> list[Finding]:
    attention, width = _mqar_attention(result)
    return attention + _mqar_state(result, width)


def _not_run(result: LearnResult, task: str, findings: list[Finding]) -> list[Finding]:
    """The known results of ``task`` that got no finding, shown or not reproduced: each said not run (``known_not_run``).

    A known result needs cells this run may not have (``--quick`` trains recall without T = :data:`GATED_T`; an
    interrupted sweep may not reach it; ``--models`` may leave attention out). ``figures["result"]`` names it and
    the figures say what the run had instead: the task's lengths, and for mqar the pair counts at its longest T.
    """
    mine = {"recall": ("gated_recall",), "mqar": ("attention_mqar", "state_limits")}.get(task, ())
    told = {f.figures.get("result") for f in findings if f.kind == "known_not_reproduced"}
    told |= {"gated_recall" for f in findings if f.kind == "gated_recalls"}
    told |= {"attention_mqar" for f in findings if f.kind == "mqar_attention_recalls"}
    told |= {"state_limits" for f in findings if f.kind in ("mqar_state_limits", "mqar_state_no_drop")
             or f.figures.get("result") == "state_limits_quick"}
    done = sorted({c.T for c in result.cells(task)})
    longest = max(done, default=None)
    pair_counts = tuple(sorted({c.pairs for c in result.cells(task) if c.T == longest and c.pairs is not None}))
    missing = []
    for name in mine:
        if name in told:
            continue
        T = GATED_T if name == "gated_recall" else (longest or 0)
        missing.append(Finding("known_not_run", task, T, None,
                               {"result": name, "lengths": tuple(done), "pair_counts": pair_counts}))
    return missing


def learn_findings(result: LearnResult) -> tuple[Finding, ...]:
    """Every verdict the result allows, task by task (recall with its reach and bypass, order, position).

    >>> from seqlab.studies.learn import LearnConfig
    >>> empty = LearnResult(LearnConfig(), {}, {}, (), (), 0, False, 1, True, "", 0.0)
    >>> learn_findings(empty)
    ()
    """
    makers = {"recall": lambda r: _recall(r) + _bypass(r) + _gated_recall(r), "order": _order,
              "position": _position, "mqar": _mqar}
    findings: list[Finding] = []
    for task in result.lengths:
        found = makers[task](result)
        findings += found + _not_run(result, task, found)
    return tuple(findings)
