"""The words of ``seqlab learn``: names, number formats, and one sentence per verdict (L3, L4, L10, Zoology).

Verdicts are decided in :mod:`seqlab.studies.learn_verdicts`; here each :class:`Finding` kind maps to
one sentence that quotes the finding's figures. A sentence that explains a result appears only for
the kind that supports it, so what is printed never claims more than the figures of every seed allow.
Accuracies are quoted as ``mean (minimum–maximum over seeds)``.

Words go through the gettext domain ``seqlab`` (``locale/es/LC_MESSAGES/seqlab.po``). The translation
function is called ``tl`` (``test_i18n`` extracts ``_``, ``tr`` and ``tl`` calls alike).
"""

from __future__ import annotations

from collections.abc import Callable

from seqlab.i18n import format_integer, format_number, format_seconds, translator
from seqlab.learn.models import LABELS
from seqlab.learn.tasks import TASKS, evaluation_positions, training_positions
from seqlab.studies.learn import Cut, LearnResult, PlannedRun
from seqlab.studies.learn_verdicts import Finding, learn_findings

__all__ = ["DOMAIN", "accuracy_text", "bytes_text", "duration_text", "finding_sentence", "task_names", "learn_sentences", "model_label", "progress_text", "range_text", "rate_text", "run_line", "task_titles"]

DOMAIN = "seqlab"


def model_labels(tl: Callable[[str], str]) -> dict[str, str]:
    """Every model's name, translated by ``tl``: the lesson's, then each mixer's registered label
    (:data:`seqlab.learn.models.LABELS`, marked for translation where :mod:`seqlab.layers.mixers` registers it)."""
    lesson = {"elman": tl("Elman RNN"), "lstm": tl("LSTM"), "gru": tl("GRU"), "attention": tl("Attention"),
              "attention-pe": tl("Attention + PE"), "mlp": tl("MLP (per position)")}
    return {**lesson, **{model: tl(label) for model, label in LABELS.items() if model not in lesson}}


def model_label(model: str, lang: str = "en") -> str:
    """A model's name in ``lang``.

    >>> model_label("mlp", "es")
    'MLP (por posición)'
    """
    return model_labels(translator(lang)).get(model, model)


def task_titles(tl: Callable[[str], str]) -> dict[str, str]:
    """Every task's title, translated by ``tl``."""
    return {"recall": tl("Recall the first token, T-1 positions back (L3, L4)"),
            "order": tl("Which of two marked tokens comes first (L10)"),
            "position": tl("A word trained in the first half, tested in the second (L10)"),
            "mqar": tl("Multi-query associative recall: the value of each key asked again (Zoology)")}


def task_names(tl: Callable[[str], str]) -> dict[str, str]:
    """Every task's short name, translated by ``tl``."""
    return {"recall": tl("recall"), "order": tl("order"), "position": tl("position"), "mqar": tl("mqar")}


def bytes_text(value: int | None, lang: str) -> str:
    """A byte count with its unit: ``1,088 B``; a dash when there is none.

    >>> bytes_text(1088, "en"), bytes_text(1088, "es"), bytes_text(None, "en")
    ('1,088 B', '1.088 B', '—')
    """
    return "—" if value is None else f"{format_integer(value, lang)} B"


def accuracy_text(value: float, lang: str) -> str:
    """An accuracy with three decimals, per language.

    >>> accuracy_text(0.5, "en"), accuracy_text(0.875, "es")
    ('0.500', '0,875')
    """
    from babel.numbers import format_decimal

    return format_decimal(value, format="0.000", locale=lang)


def range_text(mean: float, low: float, high: float, lang: str) -> str:
    """Mean and range over seeds: ``mean (low–high)``.

    >>> range_text(0.609, 0.236, 0.982, "es")
    '0,609 (0,236–0,982)'
    """
    return f"{accuracy_text(mean, lang)} ({accuracy_text(low, lang)}–{accuracy_text(high, lang)})"


def rate_text(lr: float) -> str:
    """A learning rate as a short power of ten: 0.01 -> ``1e-2``, 0.003 -> ``3e-3``.

    >>> rate_text(0.01), rate_text(0.003), rate_text(0.0025)
    ('1e-2', '3e-3', '2.5e-3')
    """
    mantissa, exponent = f"{lr:.2e}".split("e")
    return f"{float(mantissa):g}e{int(exponent)}"


def duration_text(seconds: float, lang: str = "en") -> str:
    """A duration: minutes and seconds from one minute on, else :func:`~seqlab.i18n.format_seconds`.

    >>> duration_text(754.2), duration_text(41.0, "es")
    ('12 min 34 s', '41,0 s')
    """
    if seconds < 60:
        return format_seconds(seconds, lang)
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _number(value: object, lang: str) -> str:
    return "—" if value is None else format_number(value, lang)


def _values(finding: Finding, lang: str, tl: Callable[[str], str]) -> dict[str, str]:
    """Every figure of a finding as text, under the names the sentences use."""
    f = finding.figures
    values = {"T": format_integer(finding.T, lang), "steps_between": format_integer(finding.T - 1, lang)}
    for name in ("attention", "elman", "attention_pe", "mlp", "shared", "model", "few", "many"):
        if f.get(name) is not None:
            part = f[name]
            values[name] = range_text(part["mean"], part["low"], part["high"], lang)
            values["seeds"] = str(part["seeds"])
    for name in ("chance", "learnt", "near_chance", "far_below", "learnt_at"):
        if name in f:
            values[name] = accuracy_text(f[name], lang)
    for name in ("width", "pairs", "pairs_low", "pairs_high"):
        if f.get(name) is not None:
            values[name] = format_integer(f[name], lang)
    for name in ("state", "state_low", "state_high"):
        if name in f:
            values[name] = bytes_text(f[name], lang)
    if "lengths" in f:
        values["lengths"] = ", ".join(format_integer(T, lang) for T in f["lengths"]) or "—"
        values["pair_counts"] = ", ".join(format_integer(p, lang) for p in f["pair_counts"]) or "—"
    for name in ("elman_low", "elman_high", "attention_low", "attention_high"):
        if name in f:
            values[name] = _number(f[name], lang)
    if "margin" in f:
        values["margin"] = rate_text(f["margin"])
    for name in ("failed", "explained"):
        if name in f:
            values[name] = str(f[name])
    if "steps" in f:
        values["steps"] = format_integer(f["steps"], lang)
    if "rates" in f:
        values["learnt_seeds"] = str(f["learnt"])
        values["lr"] = rate_text(f["lr"])
        values["rates"] = ", ".join(rate_text(r) for r in f["rates"])
    if finding.model is not None:
        values["name"] = model_label(finding.model, lang)
    if finding.task == "position":
        trained, tested = training_positions(finding.T), evaluation_positions(finding.T)
        values.update(first=str(trained.start + 1), last=str(trained.stop), low=str(tested.start + 1),
                      high=str(tested.stop))
    return values


def _templates(tl: Callable[[str], str]) -> dict[str, str]:
    return {
        "recall_every_seed": tl(
            "As the lesson says (L3, L4): at T = {T} attention recalls the first token in every seed, {attention}, "
            "each at least {learnt}; the Elman RNN stays near chance in every seed, {elman}, each at most "
            "{near_chance} (chance {chance})."),
        "recall_on_average": tl(
            "As the lesson says (L3, L4), on average: at T = {T} attention recalls the first token in every seed, "
            "{attention}, and the Elman RNN scores {elman}, at least {far_below} below attention's lowest seed; "
            "{failed} of its {seeds} seeds stay near chance (chance {chance})."),
        "recall_no_contrast": tl(
            "At T = {T} this run does not separate the two: attention scores {attention} and the Elman RNN "
            "{elman} (chance {chance}); the lesson's contrast needs attention at {learnt} or more in every seed "
            "and the Elman RNN at least {far_below} lower."),
        "reach_explains": tl(
            "The measured path agrees: in each of the {failed} seeds where the Elman RNN stayed near chance, the "
            "gradient from y_T reaches x_1 with norm {elman_low}–{elman_high} after {steps_between} products by "
            "W_hh, at most {margin} times attention's ({attention_low}–{attention_high}) through its single "
            "weight α_T1."),
        "reach_does_not_separate": tl(
            "The reach measured after training does not explain the failure in every seed: it is at most {margin} "
            "times attention's in {explained} of the {failed} seeds where the Elman RNN stayed near chance "
            "(Elman {elman_low}–{elman_high}, attention {attention_low}–{attention_high}). It is measured once, "
            "after training, on one example: it describes the trained layer, not the gradient while it learnt, "
            "so the accuracy is the verdict here."),
        "bypass_learns": tl(
            "As the lesson says (L3): at T = {T} the {name} recalls the first token in every seed, {model}, its "
            "lowest seed at least {far_below} above the Elman RNN's highest, {elman}: its additive bypass carries "
            "the signal across the {steps_between} steps (rate {lr}, chosen on validation)."),
        "bypass_budget": tl(
            "At T = {T} the {name} stays near chance as well, {model}, but none of its runs learnt within "
            "{steps} steps at any rate tried ({rates}): the training budget ran out first, so this does not show "
            "that its bypass fails (L3)."),
        "bypass_partial": tl(
            "At T = {T} the {name} scores {model} where the Elman RNN scores {elman} (chance {chance}); "
            "{learnt_seeds} of {seeds} seeds learnt within {steps} steps: no verdict on its bypass (L3) at this "
            "budget."),
        "order_holds": tl(
            "As the lesson says (L10): at T = {T} attention without positional encoding stays near chance (chance "
            "{chance}) in every seed, {attention}, because both orders give it the same set of rows; with the "
            "sinusoidal encoding it scores {attention_pe}, above {near_chance} in every seed."),
        "order_not": tl(
            "At T = {T} this run does not show the lesson's order claim (L10) in every seed: attention without "
            "positional encoding scores {attention} and with it {attention_pe} (chance {chance}); see the table."),
        "position_holds": tl(
            "As the lesson says (L10): trained with the word in positions {first}–{last} and tested with it in "
            "positions {low}–{high} (T = {T}), the per-position MLP stays near chance in every seed, {mlp}: its "
            "weights for those positions never saw the word; {name}, which shares its weights over positions, "
            "scores {shared}, at least {learnt} in every seed."),
        "position_not": tl(
            "At T = {T} this run does not show the lesson's position claim (L10) in every seed: tested with the "
            "word in positions {low}–{high}, the per-position MLP scores {mlp} and {name} {shared} (chance "
            "{chance}); see the table."),
    }


def _known_templates(tl: Callable[[str], str]) -> dict[str, str]:
    """The sentences of the known results: shown, and not reproduced (keyed by ``figures["result"]``)."""
    return {
        "gated_recalls": tl(
            "As known since the LSTM was built for it (Hochreiter & Schmidhuber 1997): at T = {T} the {name} "
            "recalls the first token in every seed, {model}, each at least {learnt_at} (gates with the chrono "
            "initialisation; rate {lr}, chosen on validation)."),
        "mqar_attention_recalls": tl(
            "As Zoology found (Arora et al. 2023): attention of width {width} recalls the queried values at every "
            "T ({lengths}) and number of pairs ({pair_counts}) tested, at least {learnt_at} in every seed; its worst "
            "cell scores {attention} (chance {chance}). Its state, the KV cache, grows with T: {state_low} to "
            "{state_high}."),
        "mqar_state_limits": tl(
            "As Zoology found: at T = {T}, {name} of width {width} keeps {state} of state, and its accuracy "
            "falls from {few} at {pairs_low} pairs to {many} at {pairs_high} pairs, at least {far_below} lower in "
            "every seed, while attention recalls {attention} at {pairs_high} pairs."),
        "mqar_state_no_drop": tl(
            "At T = {T}, {name} of width {width} ({state} of state) scores {few} at {pairs_low} pairs and {many} "
            "at {pairs_high} pairs: not a fall of {far_below} in every seed while attention recalls, at this "
            "budget (at most {steps} steps)."),
        "gated_recall": tl(
            "Known result not reproduced at this budget: the {name} should recall the first token at T = {T} (the "
            "problem the LSTM was built for, Hochreiter & Schmidhuber 1997), but scores {model} (chance {chance}); "
            "{learnt_seeds} of {seeds} seeds learnt within {steps} steps at rates {rates}."),
        "attention_mqar": tl(
            "Known result not reproduced at this budget: attention should recall the queried values at every T "
            "and number of pairs (Zoology), but at T = {T} with {pairs} pairs its width {width} scores {attention} "
            "(chance {chance}; at most {steps} steps, rates {rates})."),
        "state_limits": tl(
            "Known result not reproduced at this budget: no mixer of fixed state here loses {far_below} of "
            "accuracy in every seed from {pairs_low} to {pairs_high} pairs at T = {T} while attention recalls "
            "(Zoology); see the table (at most {steps} steps)."),
    }


def _not_run_templates(tl: Callable[[str], str]) -> dict[str, str]:
    """The sentences of the known results this run has no cells for (keyed by ``figures["result"]``)."""
    return {
        "gated_recall": tl(
            "Known result not run: the LSTM and the GRU should recall the first token at T = {T} (Hochreiter & "
            "Schmidhuber 1997), but this run has no recall cell of either at T = {T} (recall at T = {lengths})."),
        "attention_mqar": tl(
            "Known result not run: attention should recall the queried values at every T and number of pairs "
            "(Zoology), but this run has no mqar cell of attention."),
        "state_limits": tl(
            "Known result not run: a mixer of fixed state should lose accuracy as the pairs outgrow its state "
            "(Zoology), which needs a mixer of fixed state and attention at two numbers of pairs or more at one T; "
            "this run has mqar at T = {lengths} with pairs {pair_counts} at the longest."),
        "state_limits_quick": tl(
            "Known result out of reach of --quick: a mixer of fixed state should lose accuracy as the pairs outgrow "
            "its state (Zoology), but these sizes ({pairs_low} and {pairs_high} pairs, at most {steps} steps) are "
            "too small to show it: measured at them, the mixer does not yet recall even the fewest pairs; run "
            "seqlab learn without --quick to test it."),
    }


def _one_seed(tl: Callable[[str], str]) -> dict[str, str]:
    """The reach sentences when a single seed of the Elman RNN stayed near chance ("the one seed", not "1 seeds")."""
    return {
        "reach_explains": tl(
            "The measured path agrees: in the one seed where the Elman RNN stayed near chance, the gradient from "
            "y_T reaches x_1 with norm {elman_low} after {steps_between} products by W_hh, at most {margin} times "
            "attention's ({attention_low}–{attention_high}) through its single weight α_T1."),
        "reach_does_not_separate": tl(
            "The reach measured after training does not explain the failure: in the one seed where the Elman RNN "
            "stayed near chance it is more than {margin} times attention's (Elman {elman_low}, attention "
            "{attention_low}–{attention_high}). It is measured once, after training, on one example: it describes "
            "the trained layer, not the gradient while it learnt, so the accuracy is the verdict here."),
    }


def finding_sentence(finding: Finding, lang: str = "en") -> str:
    """The sentence of one :class:`~seqlab.studies.learn_verdicts.Finding`, in ``lang``."""
    tl = translator(lang)
    one = finding.figures.get("failed") == 1  # then none explained, or the one did
    known = _known_templates(tl)
    if finding.kind == "known_not_reproduced":
        return known[finding.figures["result"]].format(**_values(finding, lang, tl))
    if finding.kind == "known_not_run":
        return _not_run_templates(tl)[finding.figures["result"]].format(**_values(finding, lang, tl))
    if finding.kind == "mqar_attention_recalls" and len(finding.figures["lengths"]) == 1:
        known[finding.kind] = tl(
            "As Zoology found (Arora et al. 2023): attention of width {width} recalls the queried values at T = {T} "
            "with every number of pairs ({pair_counts}) tested, at least {learnt_at} in every seed; its worst cell "
            "scores {attention} (chance {chance}). Its state, the KV cache, holds {state_high} at T = {T} and grows "
            "with T.")
    if finding.kind in known:
        return known[finding.kind].format(**_values(finding, lang, tl))
    templates = _one_seed(tl) if one and finding.kind in _one_seed(tl) else _templates(tl)
    return templates[finding.kind].format(**_values(finding, lang, tl))


def _cut_text(cut: Cut, lang: str, tl: Callable[[str], str]) -> str:
    if cut.what == "rates":
        used, full = (", ".join(rate_text(r) for r in values) for values in (cut.used, cut.full))
    elif cut.what == "models":
        labels = model_labels(tl)
        used, full = (", ".join(labels.get(m, m) for m in values) for values in (cut.used, cut.full))
    elif cut.what in ("lengths", "pairs", "widths"):
        used, full = (", ".join(format_integer(T, lang) for T in values) for values in (cut.used, cut.full))
    else:
        used, full = format_integer(cut.used[0], lang), format_integer(cut.full[0], lang)
    phrases = {"seeds": tl("seeds: {used} (full run: {full})"),
               "steps": tl("at most {used} steps per run (full run: {full})"),
               "rates": tl("learning rates {used} (full run: {full})"),
               "test_size": tl("{used} test examples (full run: {full})"),
               "validation_size": tl("{used} validation examples (full run: {full})"),
               "lengths": tl("{task} at T = {used} (full run: {full})"),
               "pairs": tl("{task} with {used} pairs (full run: {full})"),
               "widths": tl("{task} at widths {used} (full run: {full})"),
               "models": tl("{task} with {used} (full run: {full})")}
    tasks = task_names(tl)
    return phrases[cut.what].format(used=used, full=full, task=tasks.get(cut.task, cut.task))


def cuts_line(result: LearnResult, lang: str = "en") -> str | None:
    """What this run cut from the full preset, and what that means for its verdicts; None when nothing."""
    tl = translator(lang)
    cuts = result.cuts
    if not cuts:
        return None
    return tl("This run is smaller than the full one: {cuts}. A model whose runs all used every step may "
              "still have been learning; run seqlab learn without --quick for the full budget.").format(
        cuts="; ".join(_cut_text(c, lang, tl) for c in cuts))


def run_line(result: LearnResult, lang: str = "en") -> str:
    """How it was run: runs, rates, seeds, steps, threads, PyTorch, time; and the partial-result flag."""
    tl = translator(lang)
    settings = result.config.settings
    line = tl("{runs} runs: each model at each learning rate ({rates}) and each seed (seeds: {seeds}), the rate chosen "
              "on {validation} validation examples held out from the training data; at most {steps} steps of "
              "{batch} examples, tested on {test} examples; CPU threads: {threads}, deterministic kernels (the "
              "same numbers on this machine, not bit for bit on another CPU), PyTorch {torch}; {time}.").format(
        runs=format_integer(len(result.runs), lang), rates=", ".join(rate_text(r) for r in result.config.rates),
        seeds=result.config.seeds, validation=format_integer(settings.validation_size, lang),
        steps=format_integer(settings.steps, lang), batch=settings.batch, test=format_integer(settings.test_size, lang),
        threads=result.threads, torch=result.torch_version, time=duration_text(result.seconds, lang))
    if result.partial:
        line += " " + tl("Interrupted: {done} of {planned} runs finished; the tables show those.").format(
            done=format_integer(len(result.runs), lang), planned=format_integer(result.planned, lang))
    return line


def _listing(result: LearnResult, task: str, T: int, lang: str, labels: dict[str, str],
             pairs: int | None = None) -> str:
    if pairs is None:
        return ", ".join(f"{labels[m]} {range_text(c.mean, c.low, c.high, lang)}" for m in result.models[task]
                         if (c := result.cell(task, m, T)) is not None)
    return ", ".join(f"{labels[c.model]} (w = {format_integer(c.width, lang)}, {bytes_text(c.state_bytes, lang)}) "
                     f"{range_text(c.mean, c.low, c.high, lang)}" for m in result.models[task]
                     for c in result.cells(task, m) if (c.T, c.pairs) == (T, pairs))


def learn_sentences(result: LearnResult, lang: str = "en") -> list[str]:
    """Plain sentences: what was measured at each task's longest T, the verdicts it supports, how it ran."""
    tl = translator(lang)
    labels, titles = model_labels(tl), task_titles(tl)
    findings = learn_findings(result)
    sentences = []
    for task in result.lengths:
        done = [c.T for c in result.summary if c.task == task]
        if not done:
            continue
        T = max(done)
        if TASKS[task].per_position:
            pairs = max(c.pairs for c in result.summary if c.task == task and c.T == T)
            sentences.append(tl("{title} at T = {T} with {pairs} pairs, mean (range over seeds), with each model's "
                                "width and the bytes of its decode state: {listing}.").format(
                title=titles[task], T=format_integer(T, lang), pairs=format_integer(pairs, lang),
                listing=_listing(result, task, T, lang, labels, pairs)))
        else:
            sentences.append(tl("{title} at T = {T}, mean (range over seeds): {listing}.").format(
                title=titles[task], T=format_integer(T, lang), listing=_listing(result, task, T, lang, labels)))
        sentences += [finding_sentence(f, lang) for f in findings if f.task == task]
    cuts = cuts_line(result, lang)
    if cuts is not None:
        sentences.append(cuts)
    sentences.append(run_line(result, lang))
    return sentences


def progress_text(run: PlannedRun | None, lang: str = "en") -> str:
    """The progress bar's description of the run about to start.

    >>> progress_text(PlannedRun("recall", "elman", 64, 1, 0.003))
    'recall · Elman RNN · T = 64 · seed 1 · lr 3e-3'
    >>> progress_text(PlannedRun("mqar", "linear_attention", 64, 0, 0.01, pairs=8, width=16))
    'mqar · Linear attention · T = 64 · seed 0 · lr 1e-2 · 8 pairs · w = 16'
    """
    tl = translator(lang)
    if run is None:
        return tl("Done")
    text = tl("{task} · {model} · T = {T} · seed {seed} · lr {lr}").format(
        task=task_names(tl).get(run.task, run.task), model=model_label(run.model, lang), T=run.T, seed=run.seed,
        lr=rate_text(run.lr))
    if run.pairs is not None:
        text += " · " + tl("{pairs} pairs").format(pairs=run.pairs)
    if run.width is not None:
        text += f" · w = {run.width}"
    return text
