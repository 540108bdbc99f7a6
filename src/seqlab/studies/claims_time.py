"""The time claim of ``seqlab check``: more work, spread over processors, against T waits in a row (L8).

:func:`check_l8` times, with :func:`seqlab.measure.timing.measure_time` (warm-up, first call apart, median and
IQR over timed blocks), ``nn.RNN`` against attention at four matched scopes, each on one thread and on the
machine's threads (``torch.get_num_threads()`` when the check starts):

=====================  ============================================================  =====================
scope                  attention                                                     recurrence
=====================  ============================================================  =====================
``sdpa``               the SDPA call alone (the lesson's scope, L6)                   ``nn.RNN``, batch 1
``sdpa_projections``   SDPA with its Q, K, V projections (one ``nn.Linear``)          ``nn.RNN``, batch 1
``layer``              a whole ``nn.MultiheadAttention`` (Q, K, V, call, W_O)         ``nn.RNN``, batch 1
``layer_batch``        the whole layer at batch B                                     ``nn.RNN``, batch B
=====================  ============================================================  =====================

The ratio recurrence / attention says who finishes first (> 1: attention). A ratio counts only beyond
:data:`SPEED_MARGIN` (either way); between, it is a tie. A timing is noisy by the engine's one rule,
:func:`seqlab.measure.timing.is_noisy` (IQR over :data:`~seqlab.measure.timing.NOISY_IQR_FRACTION` of its
median, or fewer than :data:`~seqlab.measure.timing.MIN_BLOCKS` blocks), and a comparison resting on it decides
nothing: a busy machine can only downgrade the verdict to a caveat, never fail it.

Verdict:

* does not hold — measured cleanly beyond the margin, the recurrence finishes first at the lesson's own
  scope (SDPA alone) on one thread, or its thread speed-up exceeds attention's (the recurrence, not
  attention, is the one spread over processors);
* not judged — the lesson's own comparison (SDPA alone against the recurrence, on one thread) is noisy: the
  measurement decided nothing, and the other scopes cannot stand in for it;
* holds with a caveat — attention stops finishing first at some scope (named: the first one, in the order
  above, on each thread count), a comparison is a tie or noisy, or the machine has one thread (no scaling
  to measure);
* holds — attention finishes first at every scope on both thread counts, and its thread speed-up exceeds
  the recurrence's by the margin.

Shapes: B batch, T positions, d one width for all.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab import cost
from seqlab.studies.claims import CheckSizes, claim_generator
from seqlab.studies.verdicts import Judgement, verdict_of

#: The four scopes, from the lesson's to the whole layer at batch B.
SCOPES = ("sdpa", "sdpa_projections", "layer", "layer_batch")
#: A ratio of times (or of speed-ups) decides only beyond this factor, either way.
SPEED_MARGIN = 1.2
#: The control: one (n, n) @ (n, n) product, which any free core speeds up; if it does not get faster on the
#: machine's threads, those threads are busy and no thread comparison is judged.
CONTROL_SIZE = 384


def _functions(sizes: CheckSizes, seed: int) -> dict[str, object]:
    """The six callables timed: the recurrence at batch 1 and B, and attention at each scope."""
    import torch
    import torch.nn.functional as F

    T, d, B, g = sizes.time_length, sizes.time_width, sizes.time_batch, claim_generator(seed, 11)
    rnn = torch.nn.RNN(d, d, batch_first=True).eval()
    layer = torch.nn.MultiheadAttention(d, sizes.time_heads, batch_first=True).eval()
    projections = torch.nn.Linear(d, 3 * d).eval()
    x, xb = torch.randn(1, T, d, generator=g), torch.randn(B, T, d, generator=g)  # (1, T, d), (B, T, d)

    def sdpa():
        q = x[None]  # (1, 1, T, d): q = k = v
        return F.scaled_dot_product_attention(q, q, q)

    def sdpa_projections():
        q, k, v = projections(x).chunk(3, dim=-1)  # (1, T, d) each
        return F.scaled_dot_product_attention(q, k, v)

    a = torch.randn(CONTROL_SIZE, CONTROL_SIZE, generator=g)  # (n, n)
    return {"control": lambda: a @ a, "recurrence": lambda: rnn(x), "recurrence_batch": lambda: rnn(xb), "sdpa": sdpa,
            "sdpa_projections": sdpa_projections, "layer": lambda: layer(x, x, x, need_weights=False),
            "layer_batch": lambda: layer(xb, xb, xb, need_weights=False)}


def _classify(ratio: float, noisy: bool, high: str, low: str) -> str:
    """``high`` beyond the margin above 1, ``low`` beyond it below, ``"tie"`` between, ``"noisy"`` if noisy."""
    if noisy:
        return "noisy"
    return high if ratio > SPEED_MARGIN else low if ratio < 1 / SPEED_MARGIN else "tie"


def _time_all(sizes: CheckSizes, seed: int, thread_counts: tuple[int, ...]) -> dict[str, dict[int, dict]]:
    """function -> threads -> {median_s, iqr_s, blocks, noisy}."""
    from seqlab.measure import timing

    timings: dict[str, dict[int, dict]] = {}
    for name, function in _functions(sizes, seed).items():
        for threads in thread_counts:
            t = timing.measure_time(function, label=name, threads=threads, min_run_time=sizes.min_run_time)
            timings.setdefault(name, {})[threads] = {"median_s": t.median_s, "iqr_s": t.iqr_s,
                                                     "blocks": len(t.samples), "noisy": t.noisy}
    return timings


def _compare(timings: dict, thread_counts: tuple[int, ...], busy: bool) -> tuple[dict, dict]:
    """Per thread count and scope: the ratio recurrence / attention and its class (``attention_first``,
    ``recurrence_first``, ``tie``, ``noisy``; ``busy`` on the machine's threads when the control did not
    speed up)."""
    ratios: dict[int, dict[str, float]] = {}
    classes: dict[int, dict[str, str]] = {}
    for threads in thread_counts:
        ratios[threads], classes[threads] = {}, {}
        for scope in SCOPES:
            rec = timings["recurrence_batch" if scope == "layer_batch" else "recurrence"][threads]
            att = timings[scope][threads]
            ratios[threads][scope] = rec["median_s"] / att["median_s"]
            classes[threads][scope] = ("busy" if busy and threads > 1 else
                                       _classify(ratios[threads][scope], rec["noisy"] or att["noisy"],
                                                 "attention_first", "recurrence_first"))
    return ratios, classes


def check_l8(sizes: CheckSizes, seed: int) -> Judgement:
    """L8: attention's work is spread over processors and finishes first; the recurrence's T steps are not.
    Timed at four scopes on one thread and on the machine's; verdict rules: the module docstring."""
    import torch

    from seqlab.measure import timing

    machine = sizes.threads or torch.get_num_threads()
    thread_counts = (1,) if machine == 1 else (1, machine)
    timings = _time_all(sizes, seed, thread_counts)
    speedups = {name: by[1]["median_s"] / by[machine]["median_s"] for name, by in timings.items()}
    busy = machine > 1 and (timings["control"][machine]["noisy"] or speedups["control"] < SPEED_MARGIN)
    ratios, classes = _compare(timings, thread_counts, busy)
    stops = {threads: next((s for s in SCOPES if classes[threads][s] == "recurrence_first"), None)
             for threads in thread_counts}
    if machine == 1:
        advantage, scaling = None, "one_thread"
    else:
        advantage = speedups["sdpa"] / speedups["recurrence"]
        noisy = any(timings[name][t]["noisy"] for name in ("sdpa", "recurrence") for t in thread_counts)
        scaling = "busy" if busy else _classify(advantage, noisy, "attention_scales", "recurrence_scales")
    contradicted = classes[1]["sdpa"] == "recurrence_first" or scaling == "recurrence_scales"
    caveats = ["attention_stops_first"] if any(scope is not None for scope in stops.values()) else []
    if any(c in ("tie", "noisy", "busy") for by in classes.values() for c in by.values()):
        caveats.append("undecided_scopes")
    if scaling != "attention_scales":
        caveats.append(f"scaling_{scaling}")
    T, d = sizes.time_length, sizes.time_width
    values = {"T": T, "d": d, "batch": sizes.time_batch, "heads": sizes.time_heads, "threads": thread_counts,
              "work_ratio": Fraction(cost.attention_multiplications(T, d, d), cost.recurrence_multiplications(T, d, d)),
              "timings": timings, "ratios": ratios, "classes": classes, "stops": stops, "speedups": speedups,
              "advantage": advantage, "scaling": scaling}
    condition = {"rule": "matched_scopes_and_threads", "speed_margin": SPEED_MARGIN,
                 "noise_fraction": timing.NOISY_IQR_FRACTION, "min_blocks": timing.MIN_BLOCKS, "caveats": caveats}
    decided = classes[1]["sdpa"] not in ("noisy", "busy")
    return Judgement(verdict_of(contradicted, caveats, decided), values, condition)
