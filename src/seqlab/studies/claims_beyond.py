"""Statements beyond the lesson for ``seqlab check``: what came after it, each measured with a condition that can fail.

The lesson (L1–L12) stops at the choice between the recurrence and attention. Four statements about what the
field built since (issues 15 and 23) are checked the same way, and marked ``beyond_lesson`` in the output:

* **B1** — a *linear* recurrence's span grows as log T with a parallel scan, and as T with its loop (Hillis &
  Steele 1986; Blelloch 1990, §1.4; Mamba §3.3.2). Measured: :func:`~seqlab.measure.trace.measure_span` (ops) of the
  selective recurrence by scan and by loop at :data:`SCAN_LENGTHS`. Holds when the scan's growth form is log T and
  the loop's is T (:func:`seqlab.fit.choose_form`, the rule table1 judges its cells by).
* **B2** — attention's math path holds the T² scores in memory; the fused kernel does not (Dao et al. 2022,
  FlashAttention). Measured: the allocator's peak (every allocation, the kernel's own block buffers included) in
  :func:`~seqlab.measure.memory_peak.measure_peak_memory` of ``F.scaled_dot_product_attention`` on the math and
  on the flash CPU kernel at :data:`MEMORY_LENGTHS`. Holds when the math peak grows as T² and is at least the
  T×T scores' bytes at every T, and the fused peak stays below them at the largest T; not judged without
  allocator events.
* **B3** — in decoding, attention's KV cache grows with t while a recurrence's state is fixed (Katharopoulos et
  al. 2020, §3.4). Measured: :func:`~seqlab.measure.decode.measure_decode_step`'s state bytes of attention with a
  KV cache and of the Elman RNN at :data:`DECODE_POSITIONS`. Holds when the cache's growth form in t is T and the
  RNN's is 1 (constant), by the same rule.
* **B4** — a parallel scan shortens the chain of waits but not the chain of factors (Hillis & Steele 1986; Blelloch
  1990, §1.4; lesson L3/L4 read path as the factors a signal meets). Measured on the diagonal recurrence by loop and
  by scan at :data:`SIGNAL_LENGTHS`: the graph path from x_1 to y_T in ops
  (:func:`~seqlab.measure.paths.measure_paths`), the transition factors met on the way
  (:func:`~seqlab.measure.signal_path.measure_signal_path`) and the reach ‖∂y_T/∂x_1‖_F. Holds when the scan's graph path is shorter at every T and grows as log T while the loop's grows as
  T, the factor counts are T − 1 in both forms at every T, and the two reaches agree within
  :data:`REACH_TOLERANCE` (relative, float64).

* **B5** — on a real model's own code, a KV cache grows linearly with the tokens read, a sliding window caps it,
  and a recurrent (SSM) state stays constant (issue 24). Measured:
  :func:`seqlab.studies.decode_model.run_tiny_decode` (``seqlab decode --model``'s measurement) on tiny
  random-weight models built in memory from transformers configs (:mod:`seqlab.layers.tiny_lms`: Llama with
  grouped-query attention, Mistral with a window of 8, Mamba; random weights change neither bytes nor counts) at
  :data:`MODEL_POSITIONS`: the bytes read from the model's own cache object after each step, by kind of state,
  against the config's closed forms. Holds when every step's bytes per kind equal the closed form exactly, every
  growth class measured (the whole state's and each kind's) equals the one the closed forms give, and the whole
  state grows as the statement says (:data:`MODEL_STATES`); not judged without ``transformers`` (the ``[model]``
  extra).

Each check runs in well under a second on one thread (B5 in about three, most of it importing transformers); every
verdict is ``holds`` or ``does_not_hold`` (none of these statements has a caveat the measurement could show), except
B2's ``not_judged`` when the allocator's events cannot be taken and B5's without transformers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from seqlab.fit import fit_growth
from seqlab.measure import decode, memory_peak
from seqlab.measure.paths import measure_paths
from seqlab.measure.signal_path import measure_signal_path
from seqlab.measure.trace import measure_span
from seqlab.seeds import input_seed
from seqlab.studies import decode_model
from seqlab.studies.claims import CheckSizes
from seqlab.studies.verdicts import Judgement, verdict_of

#: T at which B1 traces the scan and the loop.
SCAN_LENGTHS = (32, 64, 128, 256)
#: T at which B2 measures the two kernels' peaks, and their width.
MEMORY_LENGTHS = (256, 512, 1024)
MEMORY_WIDTH = 8
#: Positions t at which B3 measures one decode step, and the width.
DECODE_POSITIONS = (64, 128, 256)
DECODE_WIDTH = 16
#: Width of B1's recurrence.
SCAN_WIDTH = 4
#: T at which B4 measures the diagonal recurrence by loop and by scan, and its width.
SIGNAL_LENGTHS = (16, 32, 64, 128)
SIGNAL_WIDTH = 4
#: Largest relative difference |r_loop − r_scan| / r_loop of the two reaches B4 accepts as the same (float64).
REACH_TOLERANCE = 1e-9
#: B5's tiny families (:data:`seqlab.layers.tiny_lms.TINY_FAMILIES`) and how the statement says each state grows.
MODEL_STATES = {"llama_gqa": "linear", "mistral_window": "capped", "mamba": "constant"}
#: Positions t at which B5 decodes one token (the window of 8 is reached by t = 8).
MODEL_POSITIONS = (4, 8, 16)


def _exponent(lengths, values) -> tuple[str, float]:
    fit = fit_growth(lengths, values)
    return fit.model, fit.exponent


def _form(lengths, values) -> str:
    """The growth form of a series (:func:`seqlab.fit.choose_form`: a + b·f(T), the rule of table1's cells)."""
    return fit_growth(lengths, values).form


def check_b1(sizes: CheckSizes, seed: int) -> Judgement:
    """B1: the selective recurrence's span grows as log T by scan and as T by loop."""
    import torch

    from seqlab.layers.linear_recurrence import SelectiveRecurrence

    spans: dict[str, list[int]] = {}
    for form in ("scan", "loop"):
        layer = SelectiveRecurrence(SCAN_WIDTH, form=form, generator=torch.Generator().manual_seed(seed)).eval()
        spans[form] = [measure_span(layer, torch.randn(1, T, SCAN_WIDTH)).ops for T in SCAN_LENGTHS]
    scan_model, scan_exponent = _exponent(SCAN_LENGTHS, spans["scan"])
    loop_model, loop_exponent = _exponent(SCAN_LENGTHS, spans["loop"])
    scan_form, loop_form = _form(SCAN_LENGTHS, spans["scan"]), _form(SCAN_LENGTHS, spans["loop"])
    scan_log, loop_linear = scan_form == "log T", loop_form == "T"
    values = {"lengths": SCAN_LENGTHS, "width": SCAN_WIDTH, "scan_ops": spans["scan"], "loop_ops": spans["loop"],
              "scan_model": scan_model, "scan_exponent": scan_exponent, "loop_model": loop_model,
              "loop_exponent": loop_exponent, "scan_form": scan_form, "loop_form": loop_form}
    condition = {"rule": "scan_log_loop_linear", "fit": "a + b·f(T), the chosen form", "caveats": []}
    return Judgement(verdict_of(not (scan_log and loop_linear)), values, condition)


def _sdpa_peaks(backends: tuple[bool, bool, bool, bool], seed: int) -> list:
    """:class:`~seqlab.measure.memory_peak.PeakMemory` of SDPA on one kernel at each of :data:`MEMORY_LENGTHS`."""
    import torch
    import torch.nn.functional as F

    from seqlab.measure.switches import SDPA_BACKENDS

    peaks = []
    for T in MEMORY_LENGTHS:
        q = torch.randn(1, 1, T, MEMORY_WIDTH, generator=torch.Generator().manual_seed(input_seed(seed, T)))  # (B, H, T, d)

        def run(q=q):
            with SDPA_BACKENDS.held(backends):
                return F.scaled_dot_product_attention(q, q, q)
        peaks.append(memory_peak.measure_peak_memory(run))
    return peaks


def check_b2(sizes: CheckSizes, seed: int) -> Judgement:
    """B2: the math path holds the T×T scores (its peak grows as T² and is at least their bytes); the fused kernel
    never holds them all (its peak, block buffers inside the one op included, stays below them at the largest T).

    Peaks are the allocator's (:attr:`~seqlab.measure.memory_peak.PeakMemory.allocator_peak_bytes`: every
    allocation, inside an op or not), so the fused kernel's own buffers count, and so does the math path's T×T
    boolean of ``isneginf`` inside ``_safe_softmax`` (``*_allocator_largest`` names what the peak holds). The
    peaks of the tensors ops return (``*_tensor_peak_bytes``) are kept as what they are, a lower bound: they do not
    see that mask. Without allocator events (another profiler running) the inside of the kernel is unseen and the
    statement is not judged."""
    math, fused = _sdpa_peaks((False, False, True, False), seed), _sdpa_peaks((True, False, False, False), seed)
    scores = [T * T * 4 for T in MEMORY_LENGTHS]  # one float32 T×T matrix
    values = {"lengths": MEMORY_LENGTHS, "width": MEMORY_WIDTH, "scores_bytes": scores,
              "math_tensor_peak_bytes": [p.peak_bytes for p in math],
              "fused_tensor_peak_bytes": [p.peak_bytes for p in fused],
              "math_tensor_peak_op": math[-1].peak_op, "fused_tensor_peak_op": fused[-1].peak_op}
    condition = {"rule": "math_holds_scores_fused_does_not", "peak": "allocator events",
                 "tensor_peak": "lower bound: ops' outputs between ops, not what an op allocates and frees inside",
                 "caveats": []}
    if any(p.allocator_peak_bytes is None for p in (*math, *fused)):
        return Judgement(verdict_of(False, ["allocator_events_unavailable"], decided=False), values,
                         {**condition, "caveats": ["allocator_events_unavailable"]})
    math_alloc = [p.allocator_peak_bytes for p in math]
    fused_alloc = [p.allocator_peak_bytes for p in fused]
    math_form, fused_form = _form(MEMORY_LENGTHS, math_alloc), _form(MEMORY_LENGTHS, fused_alloc)
    holds = (math_form == "T²" and all(m >= s for m, s in zip(math_alloc, scores))
             and fused_alloc[-1] < scores[-1])
    values |= {"math_allocator_bytes": math_alloc, "fused_allocator_bytes": fused_alloc, "math_form": math_form,
               "fused_form": fused_form, "fused_share_of_scores": fused_alloc[-1] / scores[-1],
               "math_allocator_op": math[-1].allocator_peak_op, "fused_allocator_op": fused[-1].allocator_peak_op,
               "math_allocator_largest": [list(pair) for pair in math[-1].allocator_largest],
               "fused_allocator_largest": [list(pair) for pair in fused[-1].allocator_largest]}
    return Judgement(verdict_of(not holds), values, condition)


def check_b3(sizes: CheckSizes, seed: int) -> Judgement:
    """B3: attention's KV cache grows as t per decoded token; the Elman RNN's state does not."""
    steps = {machine: [decode.measure_decode_step(machine, t, d_model=DECODE_WIDTH, time=False, seed=seed)
                       for t in DECODE_POSITIONS] for machine in ("attention_kv_cache", "elman")}
    cache = [s.state_bytes for s in steps["attention_kv_cache"]]
    state = [s.state_bytes for s in steps["elman"]]
    _, cache_exponent = _exponent(DECODE_POSITIONS, cache)
    _, state_exponent = _exponent(DECODE_POSITIONS, state)
    cache_form, state_form = _form(DECODE_POSITIONS, cache), _form(DECODE_POSITIONS, state)
    holds = cache_form == "T" and state_form == "1"
    values = {"positions": DECODE_POSITIONS, "width": DECODE_WIDTH, "cache_bytes": cache, "state_bytes": state,
              "cache_exponent": cache_exponent, "state_exponent": state_exponent, "cache_form": cache_form,
              "state_form": state_form,
              "cache_multiplications": [s.multiplications for s in steps["attention_kv_cache"]],
              "state_multiplications": [s.multiplications for s in steps["elman"]]}
    condition = {"rule": "cache_grows_state_fixed", "fit": "a + b·f(t), the chosen form", "caveats": []}
    return Judgement(verdict_of(not holds), values, condition)


def _graph_path(layer, x) -> int | None:
    """Least ops from x_1 to y_T (:func:`~seqlab.measure.paths.measure_paths`), None when they do not connect."""
    return measure_paths(layer, x, sources=(0,)).row(0, "ops")[-1]


def check_b4(sizes: CheckSizes, seed: int) -> Judgement:
    """B4: the diagonal recurrence's scan waits fewer ops than its loop (log T against T), yet from x_1 to y_T the
    signal meets the same T − 1 decays in both forms, and ‖∂y_T/∂x_1‖ is the same."""
    import torch

    from seqlab.layers.linear_recurrence import DiagonalRecurrence

    series: dict[str, dict[str, list]] = {form: {"path": [], "factors": [], "reach": []} for form in ("loop", "scan")}
    for T in SIGNAL_LENGTHS:
        x = torch.randn(1, T, SIGNAL_WIDTH, generator=torch.Generator().manual_seed(input_seed(seed, T)))  # (1, T, d)
        for form, out in series.items():
            layer = DiagonalRecurrence(SIGNAL_WIDTH, form=form, generator=torch.Generator().manual_seed(seed)).eval()
            signal = measure_signal_path(layer, x)
            out["path"].append(_graph_path(layer, x))
            out["factors"].append(signal.factors)
            out["reach"].append(signal.reach)
    loop, scan = series["loop"], series["scan"]
    connected = None not in loop["path"] and None not in scan["path"]
    loop_form = _form(SIGNAL_LENGTHS, loop["path"]) if connected else None
    scan_form = _form(SIGNAL_LENGTHS, scan["path"]) if connected else None
    differences = [abs(a - b) / a if a > 0 else math.inf for a, b in zip(loop["reach"], scan["reach"])]
    expected = [T - 1 for T in SIGNAL_LENGTHS]
    shorter = connected and all(s < lp for s, lp in zip(scan["path"], loop["path"]))
    slower = scan_form == "log T" and loop_form == "T"
    same_factors = loop["factors"] == scan["factors"] == expected
    same_reach = all(d <= REACH_TOLERANCE for d in differences)
    values = {"lengths": SIGNAL_LENGTHS, "width": SIGNAL_WIDTH, "loop_path_ops": loop["path"],
              "scan_path_ops": scan["path"], "loop_form": loop_form, "scan_form": scan_form,
              "loop_factors": loop["factors"], "scan_factors": scan["factors"], "expected_factors": expected,
              "loop_reach": loop["reach"], "scan_reach": scan["reach"], "reach_difference": max(differences),
              "reach_tolerance": REACH_TOLERANCE, "scan_shorter": shorter, "forms_hold": slower,
              "factors_equal": same_factors, "reach_equal": same_reach}
    condition = {"rule": "scan_shortens_waits_not_factors", "fit": "a + b·f(T), the chosen form", "caveats": []}
    return Judgement(verdict_of(not (shorter and slower and same_factors and same_reach)), values, condition)


def check_b5(sizes: CheckSizes, seed: int) -> Judgement:
    """B5: on tiny models' own code and cache objects, a KV cache grows linearly with t, a sliding window caps it,
    an SSM state stays constant; every byte equals the config's closed form, every growth class the closed forms'."""
    values: dict = {"positions": MODEL_POSITIONS, "families": list(MODEL_STATES)}
    condition = {"rule": "cache_growth_equals_closed_forms", "caveats": []}
    try:
        import transformers  # noqa: F401  (the [model] extra)
    except ImportError:
        return Judgement(verdict_of(False, ["transformers_missing"], decided=False), values,
                         {**condition, "caveats": ["transformers_missing"]})
    models, holds = {}, True
    for family, statement in MODEL_STATES.items():
        result = decode_model.run_tiny_decode(family, MODEL_POSITIONS, seed)
        steps = [s for s in result.steps if s.cache == "dynamic"]
        growth = {g.figure: g for g in result.growth if g.figure == "bytes" or g.figure.startswith("bytes:")}
        exact = all(s.closed_bytes is not None and dict(s.state.by_kind) == dict(s.closed_bytes)
                    for s in result.steps)
        classes = all(g.expected is not None and g.kind == g.expected for g in growth.values())
        holds = holds and exact and classes and growth["bytes"].kind == statement
        models[family] = {
            "statement": statement, "growth": growth["bytes"].kind, "closed_growth": growth["bytes"].expected,
            "bytes": [s.state.total_bytes for s in steps],
            "closed_bytes": [None if s.closed_bytes is None else sum(s.closed_bytes.values()) for s in steps],
            "kinds": {g.figure.removeprefix("bytes:"): [g.kind, g.expected] for g in growth.values()
                      if g.figure != "bytes"},
            "multiplications": [s.multiplications for s in steps], "closed_multiplications": [s.closed_form
                                                                                              for s in steps],
            "cap": growth["bytes"].cap, "bytes_exact": exact, "classes_match": classes,
            "container": steps[0].state.container}
    values["models"] = models
    return Judgement(verdict_of(not holds), values, condition)


BEYOND_CHECKS: dict[str, Callable[[CheckSizes, int], Judgement]] = {"B1": check_b1, "B2": check_b2, "B3": check_b3,
                                                                    "B4": check_b4, "B5": check_b5}
"""Statement -> its check, after the lesson's L1–L12."""

#: The statements beyond the lesson, in order.
BEYOND = tuple(BEYOND_CHECKS)
