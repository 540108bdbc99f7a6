"""Words for ``seqlab check``'s statements beyond the lesson (B1–B5): scan span, attention memory, decoding state,
the scan's two paths.

Same contract as :mod:`seqlab.render.check_structure`: each function returns ``(statement, measured, figure,
condition, note)`` from the check's values and condition; nothing is measured here. The messages live in their own
gettext domain, ``seqlab``; the language comes with the number formatter ``n``
(:class:`~seqlab.render.check.Numbers`).
"""

from __future__ import annotations

from seqlab.i18n import translator

DOMAIN = "seqlab"


def _tr(n):
    return translator(n.lang, DOMAIN)


def section_title(lang: str = "en") -> str:
    """The heading shown before the statements beyond the lesson.

    >>> section_title("es")
    'Más allá de la lección (B1–B5): lo que vino después, medido con las mismas reglas'
    """
    _ = translator(lang, DOMAIN)
    return _("Beyond the lesson (B1–B5): what came after it, measured by the same rules")


def summary_line(held: int, total: int, lang: str = "en") -> str:
    """How many statements beyond the lesson hold.

    >>> summary_line(3, 3, "en")
    'Beyond the lesson: 3 of 3 claims hold.'
    """
    _ = translator(lang, DOMAIN)
    return _("Beyond the lesson: {held} of {total} claims hold.").format(held=held, total=total)


def beyond_only_line(held: int, total: int, sizes: str, seconds: str, threads: str, torch: str, lang: str = "en"
                     ) -> str:
    """The summary when only statements beyond the lesson were checked (sizes, time and threads already worded).

    >>> beyond_only_line(3, 3, "default sizes", "0.2 s", "1", "2.13.0", "en")
    'Beyond the lesson: 3 of 3 claims hold (default sizes; 0.2 s, CPU threads: 1, PyTorch 2.13.0).'
    """
    _ = translator(lang, DOMAIN)
    return _("Beyond the lesson: {held} of {total} claims hold ({sizes}; {seconds}, CPU threads: {threads}, "
             "PyTorch {torch}).").format(held=held, total=total, sizes=sizes, seconds=seconds, threads=threads,
                                         torch=torch)


def _series(values, n) -> str:
    return ", ".join(n(v) for v in values)


def b1(_, v, c, n):
    """B1: a linear recurrence's span by parallel scan (log T) against its loop (T)."""
    _ = _tr(n)
    return (_("A linear recurrence's span grows as log T with a parallel scan, and as T with a loop"),
            _("Operations in a row of the selective recurrence (width {d}) by parallel scan and by loop, at T = "
              "{lengths}").format(d=n(v["width"]), lengths=_series(v["lengths"], n)),
            _("scan {scan} ops (grows as {scan_form}); loop {loop} ops (grows as {loop_form})").format(
                scan=_series(v["scan_ops"], n), scan_form=v["scan_form"], loop=_series(v["loop_ops"], n),
                loop_form=v["loop_form"]),
            _("holds when the form a + b·f(T) that fits the scan's span best is f = log T and the loop's is f = T "
              "(forms that fit as well tie to the slower); otherwise it does not hold."),
            _("Only a linear recurrence h_t = a_t ⊙ h_{t−1} + b_t is associative and can be scanned; the lesson's "
              "h_t = tanh(W_hh h_{t−1} + …) is not, so its T steps stay in a row (L1)."))


def b2(_, v, c, n):
    """B2: the math path holds the T×T scores; the fused kernel never holds them all (allocator peaks)."""
    _ = _tr(n)
    if "math_allocator_bytes" in v:
        figure = _("math path {math} bytes (grows as {math_form}); fused kernel {fused} bytes (grows as {fused_form}); "
                   "the T×T scores alone {scores} bytes").format(
            math=_series(v["math_allocator_bytes"], n), math_form=v["math_form"],
            fused=_series(v["fused_allocator_bytes"], n), fused_form=v["fused_form"],
            scores=_series(v["scores_bytes"], n))
    else:
        figure = _("no allocator events (another profiler was running): what the kernels allocate inside is unseen")
    return (_("Attention's math path holds the T² scores in memory; the fused kernel does not"),
            _("Peak bytes the allocator holds while scaled_dot_product_attention runs (one head, width {d}; every "
              "allocation, inside the kernel too) on its math path and on the fused flash CPU kernel, at T = "
              "{lengths}").format(d=n(v["width"]), lengths=_series(v["lengths"], n)),
            figure,
            _("holds when the math path's peak grows as T² and is at least the T×T scores' bytes at every T, and the "
              "fused kernel's stays below them at the largest T; not judged without allocator events; otherwise it "
              "does not hold."),
            _("Both compute the same T² scores (the same work, L6); the fused kernel walks them in blocks and never "
              "keeps them all. Its block buffers are counted here; they grow with T too, but stay below the scores."))


def b3(_, v, c, n):
    """B3: per decoded token, attention's KV cache grows with t, the Elman RNN's state does not."""
    _ = _tr(n)
    return (_("In decoding, attention's KV cache grows with t while a recurrence's state stays fixed"),
            _("Bytes of the state after generating token t (width {d}), for attention with a KV cache and for the "
              "Elman RNN, at t = {positions}").format(d=n(v["width"]), positions=_series(v["positions"], n)),
            _("KV cache {cache} bytes (grows as {cache_form}), {cache_mult} multiplications per token (the step's "
              "Q, K, V and its query over the cache, no W_O); Elman RNN {state} bytes (grows as {state_form}), "
              "{state_mult} multiplications per token (W_xh and W_hh)").format(
                cache=_series(v["cache_bytes"], n), cache_form=v["cache_form"].replace("T", "t"),
                cache_mult=_series(v["cache_multiplications"], n), state=_series(v["state_bytes"], n),
                state_form=v["state_form"].replace("T", "t"), state_mult=_series(v["state_multiplications"], n)),
            _("holds when the form a + b·f(t) that fits the cache's bytes best is f = t and the RNN state's is "
              "f = 1 (constant); otherwise it does not hold."),
            _("In training attention's chain stays short (L2); in generation each token waits for the one before, as "
              "in the recurrence, and attention also reads a cache that grows with every token."))


def _counts(values, n, missing: str) -> str:
    return ", ".join(missing if v is None else n(v) for v in values)


def b4(_, v, c, n):
    """B4: the scan's graph path is shorter (log T against T); its signal path is the loop's T − 1 decays."""
    _ = _tr(n)
    missing = _("not measured")
    return (_("A parallel scan shortens the chain of waits, not the chain of factors"),
            _("The diagonal recurrence (width {d}) by loop and by parallel scan, at T = {lengths}: the graph path from "
              "x_1 to y_T (least ops in a row), the signal path (transition factors a_t met on the way: k in "
              "J(s) = s^k·J(1) with every decay scaled by s, float64) and the reach ‖∂y_T/∂x_1‖").format(
                d=n(v["width"]), lengths=_series(v["lengths"], n)),
            _("graph path: scan {scan} ops (grows as {scan_form}), loop {loop} ops (grows as {loop_form}); signal "
              "path: scan {scan_factors} factors, loop {loop_factors}; the reaches differ by at most {difference} "
              "(relative)").format(
                scan=_counts(v["scan_path_ops"], n, missing), scan_form=v["scan_form"] or missing,
                loop=_counts(v["loop_path_ops"], n, missing), loop_form=v["loop_form"] or missing,
                scan_factors=_counts(v["scan_factors"], n, missing),
                loop_factors=_counts(v["loop_factors"], n, missing),
                difference=n(float(v["reach_difference"]))),
            _("holds when the scan's graph path is shorter at every T, the form a + b·f(T) that fits it best is "
              "f = log T and the loop's is f = T, both forms meet T − 1 transition factors at every T, and their "
              "reaches agree within {tolerance} (relative); otherwise it does not hold.").format(
                tolerance=n(float(v["reach_tolerance"]))),
            _("The scan regroups the products a_T ⋯ a_2 into about log₂ T rounds, so y_T waits fewer steps for x_1; "
              "the signal from x_1 is still multiplied by each of the T − 1 decays and fades exactly as in the loop "
              "(L3)."))


def b5(_, v, c, n):
    """B5: on tiny models' own cache objects, a KV cache grows as t, a window caps it, an SSM state is constant."""
    from seqlab.render.decode_model import growth_label

    _ = _tr(n)
    names = {"llama_gqa": _("Llama with grouped-query attention"),
             "mistral_window": _("Mistral with a sliding window of 8"), "mamba": _("Mamba, a selective SSM")}
    measured = _("Bytes read from each model's own cache object after writing token t (every tensor's storage "
                 "once), against the config's closed form, at t = {positions}, on tiny models with random weights "
                 "built in memory from transformers configs ({families}; random weights change neither bytes nor "
                 "counts)").format(positions=_series(v["positions"], n),
                                   families="; ".join(names.get(f, f) for f in v["families"]))
    if "models" not in v:
        figure = _("transformers is not installed (the [model] extra): no model was built")
    else:
        parts = []
        for family, m in v["models"].items():
            closed = (_("equal to the closed form") if m["bytes_exact"] else
                      _("closed form {closed}").format(closed=_counts(m["closed_bytes"], n, "—")))
            parts.append(_("{model}: {bytes} bytes ({closed}), {growth} growth (the closed forms': {expected}), "
                           "{mult} multiplications per token").format(
                model=names.get(family, family), bytes=_series(m["bytes"], n), closed=closed,
                growth=growth_label(m["growth"], n.lang),
                expected=growth_label(m["closed_growth"] or "other", n.lang),
                mult=_series(m["multiplications"], n)))
        figure = "; ".join(parts)
    return (_("On a model's own code, a KV cache grows linearly with the tokens read, a sliding window caps it, and a "
              "recurrent (SSM) state stays constant"),
            measured, figure,
            _("holds when every step's bytes of each kind of state equal the closed form exactly, every growth "
              "measured (the whole state's and each kind's) is the one the closed forms give, and the three states "
              "grow as linear, capped and constant; not judged without transformers; otherwise it does not hold."),
            _("The same figures seqlab decode --model reads from any local checkpoint: the bytes come from the "
              "tensors the model keeps, not from a formula, so a head width or a window the formula forgot shows."))
