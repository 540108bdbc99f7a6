"""The structural claims of ``seqlab check``: the chain, order, Figure 1 and the quiz (L1, L2, L10–L12).

One function per claim, ``check_lN(sizes, seed)``, builds small seeded layers, measures them with the engine
of :mod:`seqlab.measure` (or asks :mod:`seqlab.studies.figure` and :mod:`seqlab.studies.quiz`) and returns a
:class:`~seqlab.studies.verdicts.Judgement`: the verdict, the raw figures by name and the condition judged.
The path claims (L3, L4) are :mod:`seqlab.studies.claims_path`'s, the counts (L5–L7, L9)
:mod:`seqlab.studies.claims_cost`'s and the timing (L8) :mod:`seqlab.studies.claims_time`'s. The sizes of
every check are :class:`CheckSizes`; the registry, the runner and the result types are
:mod:`seqlab.studies.check`'s.

====  =====================================================================================================
L1    span of the Elman loop in matrix products at two T (= T), and of its W_xh x_t half as one product (1)
L2    span of one attention call (dot score) at two T: 3 ops, 2 products, both T
L10   shuffled rows (equivariance), shuffled (k, v) pairs (invariance), the recurrence (changes by more than
      :data:`RECURRENCE_MARGIN` times the rounding tolerance), and the two Spanish sentences
L11   Figure 1's fifteen boxes measured: exactly the three attention boxes mix positions
L12   the quiz's answers, recomputed from its facts, against the lesson's
====  =====================================================================================================

These verdicts compare counts, structure and seeded float64 values, which do not vary between runs. The one
caveat is L10's: a change within float32 rounding that the float64 rerun cannot settle (``order_cannot_tell``). The engine is imported inside each check, where it is used (and where a test can
replace it).

Shapes: T positions, d_model input width, d_h hidden width, d one width for all.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqlab.studies.verdicts import Judgement, verdict_of

#: The lesson's answers to its four questions (L12), which the quiz must reach by computation.
LESSON_ANSWERS = {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}
#: The lesson's own sentence pair for L10.
SENTENCES = ("el perro muerde al cartero", "al cartero muerde el perro")
#: L10: the recurrence must change its outputs by more than this many times the rounding tolerance.
RECURRENCE_MARGIN = 100


@dataclass(frozen=True)
class CheckSizes:
    """The sizes each check runs at. ``fast`` (the default) takes seconds; ``full`` is larger.

    ``radii`` is L3's grid of spectral radii and ``reach_draws`` the input draws per radius (medians);
    ``reach_lengths`` are L4's T for reach against T; ``time_*`` are L8's (T, d, batch of the last scope,
    heads of ``nn.MultiheadAttention``); ``threads`` is the machine's thread count L8 times on besides one
    (0: :func:`seqlab.measure.rounds.timing_threads_default` when the check starts, PyTorch's count capped by
    the free cores); ``layer_heads`` the head counts of the
    layer-scope counts (L7, L9); ``span_widths`` the two widths L9 traces its chains at.
    """

    span_lengths: tuple[int, int] = (400, 800)
    path_lengths: tuple[int, int] = (32, 64)
    width: int = 8
    radii: tuple[float, ...] = (0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
    reach_draws: int = 3
    reach_lengths: tuple[int, ...] = (8, 16, 32, 64, 128)
    count_length: int = 64
    count_widths: tuple[int, int] = (24, 40)  # (d_model, d_h) for L5; (d_k, d_v) for L6
    crossover_width: int = 32
    layer_heads: tuple[int, int] = (1, 8)
    time_length: int = 256
    time_width: int = 32
    time_batch: int = 16
    time_heads: int = 1
    threads: int = 0
    min_run_time: float = 0.05
    worked_lengths: tuple[int, ...] = (50, 1000, 2000)
    span_widths: tuple[int, int] = (4, 8)
    order_length: int = 16
    figure: tuple[int, int, int, int] = (10, 10, 512, 8)  # T_source, T_target, d_model, heads

    @classmethod
    def of(cls, full: bool) -> CheckSizes:
        """The fast sizes, or the larger ones of ``--full``."""
        if not full:
            return cls()
        return cls(span_lengths=(800, 1600), path_lengths=(64, 128), width=16, reach_draws=5,
                   reach_lengths=(8, 16, 32, 64, 128, 256), count_length=256, count_widths=(48, 80),
                   crossover_width=64, time_length=512, time_width=64, min_run_time=0.2, order_length=128,
                   figure=(24, 24, 512, 8))


def claim_generator(seed: int, offset: int):
    """The generator of one check: the run's ``seed`` and the check's own stream ``offset`` (1 … 13), by the one
    seed scheme (:func:`seqlab.text.seeded_generator`).

    >>> claim_generator(0, 1).initial_seed(), claim_generator(2, 3).initial_seed()  # seed * 1_000_003 + offset
    (1, 2000009)
    """
    from seqlab.text import seeded_generator

    return seeded_generator(seed, offset)


def span_products(function, *args) -> int:
    """Matrix products in a row when ``function(*args)`` runs (reference kernels, L1, L9).

    >>> import torch
    >>> span_products(lambda a: a @ a @ a, torch.ones(2, 2))  # the second product waits for the first
    2

    Args:
        function, args: the callable and its inputs, as for :func:`seqlab.measure.trace.measure_span`.

    Returns:
        The span in matrix products (an integer >= 0).
    """
    from seqlab.measure.trace import measure_span

    return measure_span(function, *args).products


# --- the two machines: the chain of steps (L1–L2) ----------------------------------------------------

def check_l1(sizes: CheckSizes, seed: int) -> Judgement:
    """L1: the recurrence's chain is T matrix products long; its W_xh x_t half is one product at any T.

    Holds when the span equals T at both lengths and the half is 1 product at both (exact integers, no
    margin); otherwise it does not.
    """
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.trace import measure_span

    g = claim_generator(seed, 1)
    rnn = ElmanRNN(sizes.width, sizes.width, generator=g).eval()
    chain, ops, half = [], [], []
    for T in sizes.span_lengths:
        x = torch.randn(T, sizes.width, generator=g)  # (T, d_model)
        span = measure_span(rnn, x)
        chain.append(span.products), ops.append(span.ops)
        half.append(span_products(lambda rows: rows @ rnn.weight_xh.T, x))  # (T, d_h) in one product
    holds = chain == list(sizes.span_lengths) and half[0] == half[1] == 1
    return Judgement(verdict_of(not holds),
                     {"lengths": sizes.span_lengths, "span_products": tuple(chain), "span_ops": tuple(ops),
                      "input_half_products": tuple(half)},
                     {"rule": "span_equals_T", "expected_span": sizes.span_lengths, "expected_half": (1, 1),
                      "caveats": []})


def check_l2(sizes: CheckSizes, seed: int) -> Judgement:
    """L2: one attention call (dot score) is Q Kᵀ, a row softmax and A V in a row, whatever T.

    Holds when the span is 3 ops, 2 of them products, at both lengths, and the scaled score's span is the
    same at both (exact integers); otherwise it does not.
    """
    import torch

    from seqlab.layers.attention import Attention
    from seqlab.measure.trace import measure_span

    g = claim_generator(seed, 2)
    ops, products, total, scaled = [], [], [], []
    for T in sizes.span_lengths:
        q, k, v = (torch.randn(T, sizes.width, generator=g) for _ in range(3))  # (T, d)
        span = measure_span(Attention("dot"), q, k, v)
        ops.append(span.ops), products.append(span.products), total.append(span.total_products)
        scaled.append(measure_span(Attention("scaled_dot"), q, k, v).ops)  # one division more
    holds = ops == [3, 3] and products == [2, 2] and total == [2, 2] and scaled[0] == scaled[1]
    return Judgement(verdict_of(not holds),
                     {"lengths": sizes.span_lengths, "span_ops": tuple(ops), "span_products": tuple(products),
                      "total_products": tuple(total), "scaled_dot_span_ops": tuple(scaled)},
                     {"rule": "three_ops_whatever_T", "expected_ops": 3, "expected_products": 2, "caveats": []})



# --- order and Figure 1, and the quiz (L10–L12) --------------------------------------------------------

def check_l10(sizes: CheckSizes, seed: int) -> Judgement:
    """L10: shuffled rows come out shuffled alike; shuffled (k, v) pairs change nothing; the recurrence
    notices both; the lesson's two sentences reach attention as the same vectors.

    Holds when neither attention reading (shuffled rows, shuffled pairs) is decided order-sensitive, the two
    sentences reach attention within the rounding tolerance of :func:`seqlab.measure.order.measure_order` (at most
    it), and the recurrence's changes (shuffled rows, the two sentences' last states) exceed
    :data:`RECURRENCE_MARGIN` times it (strictly, so the test can tell the two apart); otherwise it does not. A
    change within float32 rounding that the float64 rerun cannot settle holds with the caveat
    ``order_cannot_tell``.
    """
    import copy

    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.order import FAILS as ORDER_FAILS
    from seqlab.measure.order import HOLDS as ORDER_HOLDS
    from seqlab.measure.order import measure_key_value_order, measure_order
    from seqlab.text import embed, tokenize

    d, T, g = sizes.width, sizes.order_length, claim_generator(seed, 13)
    layer = SelfAttention(d, generator=g).eval()
    rnn = ElmanRNN(d, d, generator=g).eval()
    x = torch.randn(T, d, generator=g)  # (T, d_model)
    with torch.no_grad():
        q, k, v = layer.project(x)
    layer64 = copy.deepcopy(layer).double()  # the float64 twin: a change within float32 rounding is resolved
    rows = measure_order(lambda r: layer(r)[0], x, seed=seed, reference=lambda r: layer64(r)[0])
    pairs = measure_key_value_order(lambda q_, k_, v_: layer.attention(q_, k_, v_)[0], q, k, v, seed=seed,
                                    reference=lambda q_, k_, v_: layer64.attention(q_, k_, v_)[0])
    recurrence = measure_order(rnn, x, seed=seed)
    both = tokenize(" ".join(SENTENCES), "words")  # one vocabulary: the same word, the same id
    half = len(both) // 2
    first, second = both.pieces[:half], both.pieces[half:]
    order = [first.index(piece) for piece in second]  # second = first[order]
    x_both = embed(both, d, seed)  # (10, d)
    a, b = x_both[:half], x_both[half:]  # (5, d) each: the same rows, in another order
    with torch.no_grad():
        attention_gap = float((layer(b)[0] - layer(a)[0][order]).abs().max())
        recurrence_gap = float((rnn(b)[-1] - rnn(a)[-1]).abs().max())  # the last state, after reading all
    floor = RECURRENCE_MARGIN * rows.tolerance
    holds = (rows.verdict != ORDER_FAILS and pairs.verdict != ORDER_FAILS
             and attention_gap <= rows.tolerance and recurrence.max_abs_change > floor and recurrence_gap > floor)
    # a change within float32 rounding that the float64 rerun cannot settle is not equivariance shown
    unsettled = [r.verdict for r in (rows, pairs) if r.verdict not in (ORDER_HOLDS, ORDER_FAILS)]
    caveats = ["order_cannot_tell"] if unsettled else []
    condition = {"rule": "within_tolerance", "tolerance": rows.tolerance, "recurrence_margin": RECURRENCE_MARGIN,
                 "caveats": caveats, "dtype": rows.dtype}
    return Judgement(verdict_of(not holds, caveats), {"T": T, "rows_change": rows.max_abs_change,
                                             "pairs_change": pairs.max_abs_change,
                                             "rows_verdict": rows.verdict, "pairs_verdict": pairs.verdict,
                   "tolerance": rows.tolerance, "recurrence_change": recurrence.max_abs_change,
                   "sentences": SENTENCES, "sentences_attention_change": attention_gap,
                   "sentences_recurrence_change": recurrence_gap}, condition)


def check_l11(sizes: CheckSizes, seed: int) -> Judgement:
    """L11: of Figure 1's fifteen boxes, measured, exactly the three attention boxes mix positions.

    Holds when the figure has 15 boxes and the boxes measured to mix are exactly the three whose key names
    attention; otherwise it does not.
    """
    from seqlab.studies.figure import measure_figure

    T_source, T_target, d_model, heads = sizes.figure
    figure = measure_figure(T_source, T_target, d_model, heads, seed=seed)
    attention = tuple(box.key for box in figure.boxes if "attention" in box.key)
    holds = len(figure.boxes) == 15 and len(figure.lit) == 3 and set(figure.lit) == set(attention)
    condition = {"rule": "exactly_attention_boxes", "expected_boxes": 15, "expected_lit": attention, "caveats": []}
    return Judgement(verdict_of(not holds), {"boxes": len(figure.boxes), "lit": figure.lit,
                   "lit_titles": tuple(box.title for box in figure.boxes if box.mixes),
                   "patterns": {box.key: box.pattern for box in figure.boxes},
                   "T_source": T_source, "T_target": T_target, "d_model": d_model, "heads": heads}, condition)


def check_l12(sizes: CheckSizes, seed: int) -> Judgement:
    """L12: the quiz's answers, recomputed from its measured facts (not its cache), are the lesson's.

    Holds when all four agree; otherwise it does not, and the condition names the questions that differ.
    """
    from seqlab.studies import quiz

    answers = {q.key: q.answer for q in quiz.build_questions(quiz.measure_facts(), "en")}
    differ = [key for key in LESSON_ANSWERS if answers.get(key) != LESSON_ANSWERS[key]]
    return Judgement(verdict_of(bool(differ)), {"answers": answers, "lesson": LESSON_ANSWERS},
                     {"rule": "answers_equal_lesson", "differ": differ, "caveats": []})
