"""The time claim of ``seqlab check``: more work, spread over processors, against T waits in a row (L8).

:func:`check_l8` times ``nn.RNN`` against attention at four matched scopes, each on one thread and on the
machine's threads (``--threads``, else :func:`seqlab.measure.rounds.timing_threads_default`: PyTorch's count
capped by the free cores), and a control product — all fourteen machines in one interleaved
:func:`seqlab.measure.rounds.measure_rounds` (every round times one block of each, the order rotating), so
every comparison is made round by round between blocks that met the same machine:

=====================  ============================================================  =====================
scope                  attention                                                     recurrence
=====================  ============================================================  =====================
``sdpa``               the SDPA call alone (the lesson's scope, L6)                   ``nn.RNN``, batch 1
``sdpa_projections``   SDPA with its Q, K, V projections (one ``nn.Linear``)          ``nn.RNN``, batch 1
``layer``              a whole ``nn.MultiheadAttention`` (Q, K, V, call, W_O)         ``nn.RNN``, batch 1
``layer_batch``        the whole layer at batch B                                     ``nn.RNN``, batch B
=====================  ============================================================  =====================

Every comparison is judged by the one rule :func:`seqlab.measure.rounds.decide` with margin
:data:`~seqlab.measure.rounds.MARGIN` (a ratio of times, or of speed-ups, decides only beyond it, either way):
who finishes first at a scope from the per-round ratios recurrence / attention (> 1: attention first); a machine's thread speed-up from its per-round t_1 / t_n; who scales better from the
per-round ratio of the two speed-ups (:func:`_speedup_rounds`). Each is decided one way, a tie (within the
margin), or not judged (the per-round ratios straddle the margin, or the quickest rounds disagree). The
control, one (n, n) @ (n, n) product, must be decided faster on the machine's threads; otherwise those
threads are busy (decided not to speed it up) or their speed-up was not decided, and nothing on them is judged.

Verdict:

* does not hold — decided beyond the margin, the recurrence finishes first at the lesson's own scope (SDPA
  alone) on one thread, or its thread speed-up exceeds attention's (the recurrence, not attention, is the one
  spread over processors);
* not judged — either half of the claim was not judged in this run (:func:`unjudged_halves`, named in the
  condition): attention was not decided first at the lesson's own scope (SDPA alone against the recurrence, on
  one thread: a tie or an undecided comparison, which the other scopes cannot stand in for), or the spread over
  processors was not measured (one thread, busy threads, a speed-up not decided or tied);
* holds with a caveat — both halves judged, and attention stops finishing first at some other scope (named: the
  first one, in the order above, on each thread count), or another comparison is a tie or not decided (each one
  named);
* holds — every comparison it rests on is decided: attention finishes first at every scope on both thread
  counts, and its thread speed-up exceeds the recurrence's by the margin.

Shapes: B batch, T positions, d one width for all.
"""

from __future__ import annotations

from fractions import Fraction

from seqlab import cost
from seqlab.measure.rounds import DEFAULT_ROUNDS, MARGIN
from seqlab.i18n import N_
from seqlab.studies.claims import CheckSizes, claim_generator
from seqlab.studies.verdicts import Judgement, verdict_of

#: The four scopes, from the lesson's to the whole layer at batch B.
SCOPES = ("sdpa", "sdpa_projections", "layer", "layer_batch")
#: Interleaved rounds of L8's measurement: those of every interleaved comparison.
ROUNDS = DEFAULT_ROUNDS
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


def _time_all(sizes: CheckSizes, seed: int, thread_counts: tuple[int, ...]):
    """Every callable on every thread count, in one interleaved :func:`~seqlab.measure.rounds.measure_rounds`
    (names from :func:`~seqlab.measure.rounds.timed_name`); each machine gets ``sizes.min_run_time`` seconds of
    timed blocks in all."""
    from seqlab.measure import rounds
    from seqlab.measure.rounds import on_threads, timed_name

    functions = _functions(sizes, seed)
    timed = {timed_name(name, t): on_threads(function, t) for t in thread_counts for name, function in functions.items()}
    return rounds.measure_rounds(timed, rounds=ROUNDS, block_seconds=sizes.min_run_time / ROUNDS,
                                 threads=thread_counts[0])


def _speedup_rounds(measured, a: str, b: str, machine: int):
    """A :class:`~seqlab.measure.rounds.Rounds` whose ratio a/b in each round is ``a``'s thread speed-up over
    ``b``'s: a_k = t_a,1 · t_b,n and b_k = t_a,n · t_b,1 (seconds², round k), so
    a_k / b_k = (t_a,1 / t_a,n) / (t_b,1 / t_b,n). The quickest-round reading of the rule then reads the round
    least disturbed for both products."""
    from seqlab.measure.rounds import Rounds, timed_name

    t = measured.per_round
    a1, an, b1, bn = (t[timed_name(x, k)] for x, k in ((a, 1), (a, machine), (b, 1), (b, machine)))
    per_round = {a: tuple(x * y for x, y in zip(a1, bn)), b: tuple(x * y for x, y in zip(an, b1))}
    return Rounds(per_round=per_round, calls={a: 1, b: 1}, first_call_s={a: 0.0, b: 0.0}, threads=machine,
                  device=measured.device, load=measured.load)


def undecided_reason(decision) -> str:
    """Why a :class:`~seqlab.measure.rounds.Decision` was not judged: ``"few_rounds"`` (fewer than
    :data:`~seqlab.measure.rounds.MIN_ROUNDS`), ``"clocks_disagree"`` (the wall clock named a winner the CPU clock
    did not, :data:`~seqlab.measure.rounds.CLOCKS_DISAGREE`), ``"quickest_disagree"`` (the quartiles clear the margin, or sit
    inside it, but the quickest rounds do not agree) or ``"straddles"`` (the quartiles of the per-round ratios
    straddle the margin).

    >>> from seqlab.measure.rounds import Decision
    >>> undecided_reason(Decision("a", "b", "not_judged", 1.3, 0.9, 1.45, 1.2, 7))
    'straddles'
    >>> undecided_reason(Decision("a", "b", "not_judged", 3.0, 3.0, 3.0, 1.2, 7))  # quartiles clear, best not
    'quickest_disagree'

    Raises:
        SeqlabError: ``decision`` was decided (it needs no reason).
    """
    from seqlab.errors import SeqlabError
    from seqlab.measure.rounds import CLOCKS_DISAGREE, MIN_ROUNDS

    if decision.decided:
        raise SeqlabError(N_("the decision {a} / {b} was decided ({outcome})"), a=decision.a, b=decision.b,
                          outcome=decision.outcome)
    if decision.rounds < MIN_ROUNDS:
        return "few_rounds"
    if getattr(decision, "reason", None) == CLOCKS_DISAGREE:
        return CLOCKS_DISAGREE  # the wall clock named a winner the CPU clock did not
    m = decision.margin
    clear = decision.low > m or decision.high < 1 / m or (decision.low >= 1 / m and decision.high <= m)
    return "quickest_disagree" if clear else "straddles"


def _judged(decision) -> dict:
    """A decision as data for the check's values: outcome, median ratio a/b, its quartiles over rounds."""
    return {"outcome": decision.outcome, "ratio": decision.ratio, "low": decision.low, "high": decision.high,
            "rounds": decision.rounds}


#: rounds.decide's outcome (a = recurrence, b = attention) -> the scope's class.
_SCOPE_CLASS = {"b_first": "attention_first", "a_first": "recurrence_first", "tie": "tie", "not_judged": "not_judged"}
#: the speed-up decision's outcome (a = attention, b = recurrence) -> the scaling class.
_SCALING_CLASS = {"b_first": "attention_scales", "a_first": "recurrence_scales", "tie": "tie",
                  "not_judged": "not_judged"}


def _compare(measured, thread_counts: tuple[int, ...], threads_work: bool) -> dict[int, dict[str, dict]]:
    """Per thread count and scope: the decision recurrence / attention (> 1: attention first) and its class
    (``attention_first``, ``recurrence_first``, ``tie``, ``not_judged``; ``busy`` on the machine's threads when the
    control was decided not to speed up on them, or its speed-up was not decided)."""
    from seqlab.measure.rounds import decide, timed_name

    judged: dict[int, dict[str, dict]] = {}
    for threads in thread_counts:
        judged[threads] = {}
        for scope in SCOPES:
            rec = "recurrence_batch" if scope == "layer_batch" else "recurrence"
            d = decide(measured, timed_name(rec, threads), timed_name(scope, threads), MARGIN)
            entry = _judged(d)
            entry["class"] = "busy" if threads > 1 and not threads_work else _SCOPE_CLASS[d.outcome]
            if not d.decided:
                entry["reason"] = undecided_reason(d)
            judged[threads][scope] = entry
    return judged


def check_l8(sizes: CheckSizes, seed: int) -> Judgement:
    """L8: attention's work is spread over processors and finishes first; the recurrence's T steps are not.
    Timed at four scopes on one thread and on the machine's, all in one interleaved measurement; verdict rules:
    the module docstring."""
    from seqlab.measure.rounds import MIN_ROUNDS, decide, timed_name, timing_threads_default

    machine = sizes.threads or timing_threads_default()
    thread_counts = (1,) if machine == 1 else (1, machine)
    measured = _time_all(sizes, seed, thread_counts)
    names = ("control", "recurrence", "recurrence_batch", *SCOPES)
    timings = {name: {t: _timing_values(measured, name, t) for t in thread_counts} for name in names}
    if machine == 1:
        speedups, control, advantage, scaling, threads_work = {}, None, None, "one_thread", True
    else:
        speedups = {name: _judged(decide(measured, timed_name(name, 1), timed_name(name, machine), MARGIN))
                    for name in names}
        control = speedups["control"]
        threads_work = control["outcome"] == "b_first"  # the plain product sped up beyond the margin
        advantage = None
        if not threads_work:
            scaling = "busy" if control["outcome"] != "not_judged" else "control_not_judged"
        else:
            decision = decide(_speedup_rounds(measured, "sdpa", "recurrence", machine), "sdpa", "recurrence",
                              MARGIN)
            advantage = _judged(decision)
            scaling = _SCALING_CLASS[decision.outcome]
            if not decision.decided:
                advantage["reason"] = undecided_reason(decision)
    judged = _compare(measured, thread_counts, threads_work)
    classes = {t: {s: judged[t][s]["class"] for s in SCOPES} for t in thread_counts}
    stops = {t: next((s for s in SCOPES if classes[t][s] == "recurrence_first"), None) for t in thread_counts}
    undecided = [[t, s] for t in thread_counts for s in SCOPES if classes[t][s] in ("not_judged", "busy")]
    ties = [[t, s] for t in thread_counts for s in SCOPES if classes[t][s] == "tie"]
    contradicted = classes[1]["sdpa"] == "recurrence_first" or scaling == "recurrence_scales"
    caveats = ["attention_stops_first"] if any(scope is not None for scope in stops.values()) else []
    if ties:
        caveats.append("tie_scopes")
    if undecided:
        caveats.append("undecided_scopes")
    if scaling != "attention_scales":
        caveats.append(f"scaling_{scaling}")
    T, d = sizes.time_length, sizes.time_width
    values = {"T": T, "d": d, "batch": sizes.time_batch, "heads": sizes.time_heads, "threads": thread_counts,
              "rounds": measured.rounds,
              "work_ratio": Fraction(cost.attention_multiplications(T, d, d), cost.recurrence_multiplications(T, d, d)),
              "timings": timings, "comparisons": judged, "ratios": {t: {s: judged[t][s]["ratio"] for s in SCOPES}
                                                                    for t in thread_counts},
              "classes": classes, "stops": stops, "speedups": speedups, "advantage": advantage, "scaling": scaling}
    unjudged = unjudged_halves(classes[1]["sdpa"], scaling)
    condition = {"rule": "interleaved_rounds_matched_scopes_and_threads", "speed_margin": MARGIN,
                 "rounds": ROUNDS, "min_rounds": MIN_ROUNDS, "undecided": undecided, "ties": ties,
                 "caveats": caveats, "unjudged_halves": unjudged}
    return Judgement(verdict_of(contradicted, caveats, decided=not unjudged), values, condition)


#: L8's two halves: attention finishes first at the lesson's scope; its work spreads over processors.
HALVES = ("finishes_first", "spreads_over_processors")


def unjudged_halves(lesson_scope: str, scaling: str) -> list[str]:
    """The halves of L8 (:data:`HALVES`) this run could not judge: attention was not *decided* first at the lesson's
    own scope (SDPA alone against the recurrence, one thread: a tie or an undecided comparison shows nothing), or
    its spread over processors was not measured (one thread, busy threads, a speed-up not decided or tied). The
    claim holds only with both halves judged; a half contradicted fails it (see the module docstring).

    >>> unjudged_halves("attention_first", "attention_scales"), unjudged_halves("tie", "one_thread")
    ([], ['finishes_first', 'spreads_over_processors'])
    """
    halves = []
    if lesson_scope not in ("attention_first", "recurrence_first"):
        halves.append("finishes_first")
    if scaling not in ("attention_scales", "recurrence_scales"):
        halves.append("spreads_over_processors")
    return halves


def _timing_values(measured, name: str, threads: int) -> dict:
    """One machine's times as data: median and IQR over rounds (seconds per call), every round, calls per block."""
    from seqlab.measure.rounds import timed_name

    t = measured.timing(timed_name(name, threads))
    return {"median_s": t.median_s, "iqr_s": t.iqr_s, "per_round_s": t.samples,
            "calls": measured.calls[timed_name(name, threads)], "threads": threads}
