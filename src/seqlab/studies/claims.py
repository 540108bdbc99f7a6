"""The structural claims of ``seqlab check``: the chain, the path, order, Figure 1 and the quiz (L1–L4, L10–L12).

One function per claim, ``check_lN(sizes, seed)``, builds small seeded layers, measures them with the engine
of :mod:`seqlab.measure` (or asks :mod:`seqlab.studies.figure` and :mod:`seqlab.studies.quiz`) and returns
``(holds, values)``: the verdict and the raw figures by name (integers exact, floats as measured). The
lesson's sections here are the two machines (L1–L2), distance (L3–L4), and order, Figure 1 and the quiz
(L10–L12); cost (L5–L9) is :mod:`seqlab.studies.claims_cost`'s. The sizes of every check are
:class:`CheckSizes`; the registry, the runner and the result types are :mod:`seqlab.studies.check`'s.

====  =====================================================================================================
L1    span of the Elman loop in matrix products at two T (= T), and of its W_xh x_t half as one product (1)
L2    span of one attention call (dot score) at two T: 3 ops, 2 products, both T
L3    path x_1 → h_T (T products: W_xh, then T-1 by W_hh); the per-step factor of ‖∂h_T/∂x_i‖ at h = 0 for
      spectral radius 0.5 and 1.5 (below and above 1) and, with tanh working, no larger; LSTM and GRU paths
      still grow in ops, while their products stay flat (the additive bypass)
L4    path x_1 → y_T through self-attention at two T (the same); the gradient reaches position 1
L10   shuffled rows (equivariance), shuffled (k, v) pairs (invariance), the recurrence (neither), and the two
      Spanish sentences with the same words
L11   Figure 1's fifteen boxes measured: exactly the three attention boxes mix positions
L12   the quiz's answers, recomputed, against the lesson's
====  =====================================================================================================

The verdicts compare counts, structure and seeded float64 values, which do not vary between runs. The
engine is imported inside each check, where it is used (and where a test can replace it).

Shapes: T positions, d_model input width, d_h hidden width, d one width for all.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The lesson's answers to its four questions (L12), which the quiz must reach by computation.
LESSON_ANSWERS = {"q1": "c", "q2": "512", "q3": "b", "q4": "a, b, c"}
#: The lesson's own sentence pair for L10.
SENTENCES = ("el perro muerde al cartero", "al cartero muerde el perro")


@dataclass(frozen=True)
class CheckSizes:
    """The sizes each check runs at. ``fast`` (the default) takes seconds; ``full`` is larger."""

    span_lengths: tuple[int, int] = (400, 800)
    path_lengths: tuple[int, int] = (32, 64)
    width: int = 8
    count_length: int = 64
    count_widths: tuple[int, int] = (24, 40)  # (d_model, d_h) for L5; (d_k, d_v) for L6
    crossover_width: int = 32
    time_length: int = 1024
    time_width: int = 32
    min_run_time: float = 0.1
    worked_lengths: tuple[int, ...] = (50, 1000, 2000)
    order_length: int = 16
    figure: tuple[int, int, int, int] = (10, 10, 512, 8)  # T_source, T_target, d_model, heads

    @classmethod
    def of(cls, full: bool) -> CheckSizes:
        """The fast sizes, or the larger ones of ``--full``."""
        if not full:
            return cls()
        return cls(span_lengths=(800, 1600), path_lengths=(64, 128), width=16, count_length=256,
                   count_widths=(48, 80), crossover_width=64, time_length=2048, time_width=64, min_run_time=0.3,
                   order_length=128, figure=(24, 24, 512, 8))


def claim_generator(seed: int, offset: int):
    """The generator of one check: seeded by the run's ``seed`` and the check's own ``offset`` (1 … 13).

    >>> claim_generator(0, 1).initial_seed(), claim_generator(2, 3).initial_seed()  # seed * 1_000_003 + offset
    (1, 2000009)
    """
    import torch

    return torch.Generator().manual_seed(seed * 1_000_003 + offset)


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

def check_l1(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L1: the recurrence's chain is T matrix products long; its W_xh x_t half is one product at any T."""
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
    return holds, {"lengths": sizes.span_lengths, "span_products": tuple(chain), "span_ops": tuple(ops),
                   "input_half_products": tuple(half)}


def check_l2(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L2: one attention call (dot score) is Q Kᵀ, a row softmax and A V in a row, whatever T."""
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
    return holds, {"lengths": sizes.span_lengths, "span_ops": tuple(ops), "span_products": tuple(products),
                   "total_products": tuple(total), "scaled_dot_span_ops": tuple(scaled)}



# --- distance: the path from position 1 to T (L3–L4) -------------------------------------------------

def check_l3(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L3: x_1 reaches h_T after T-1 products by W_hh; the signal scales per step like the spectral radius;
    LSTM and GRU keep a path that grows in ops, with a bypass that crosses no W_hh."""
    import torch

    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    d, g = sizes.width, claim_generator(seed, 3)
    rnn = ElmanRNN(d, d, generator=g).eval()
    paths, gated = [], {"lstm": [], "gru": []}
    for T in sizes.path_lengths:
        x = torch.randn(T, d, generator=g)  # (T, d_model)
        paths.append(measure_paths(rnn, x, sources=(0,)).products[0][-1])
        for name, kind in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
            layer = kind(d, d, batch_first=True).eval()  # weights from the global RNG, seeded by run_check
            matrix = measure_paths(lambda rows, layer=layer: layer(rows)[0], x[None], sources=(0,))  # (1, T, d)
            gated[name].append((matrix.products[0][-1], matrix.ops[0][-1]))
    T = sizes.path_lengths[1]
    decay = {}
    for radius in (0.5, 1.5):
        loop = ElmanRNN(d, d, bias=False, generator=claim_generator(seed, 4), dtype=torch.float64).eval()
        loop.set_spectral_radius(radius)
        at_zero = measure_reach(loop, torch.zeros(T, d, dtype=torch.float64)).decay_per_step()  # tanh' = 1
        with_inputs = measure_reach(loop, torch.randn(T, d, generator=g, dtype=torch.float64)).decay_per_step()
        decay[radius] = (at_zero, with_inputs)
    holds = (paths == list(sizes.path_lengths)
             and decay[0.5][0] < 1 < decay[1.5][0]
             and all(inputs <= zero for zero, inputs in decay.values())
             and all(p[0][1] < p[1][1] and p[0][0] == p[1][0] for p in gated.values()))
    return holds, {"lengths": sizes.path_lengths, "path_products": tuple(paths),
                   "whh_products": tuple(p - 1 for p in paths), "reach_length": T,
                   "decay_radius_0.5": decay[0.5], "decay_radius_1.5": decay[1.5],
                   "lstm_path_products_ops": tuple(gated["lstm"]), "gru_path_products_ops": tuple(gated["gru"])}


def check_l4(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L4: position 1 reaches position T through self-attention in the same few products at any T; the
    gradient comes back along it."""
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    g = claim_generator(seed, 5)
    layer = SelfAttention(sizes.width, generator=g, dtype=torch.float64).eval()
    paths = []
    for T in sizes.path_lengths:
        x = torch.randn(T, sizes.width, generator=g, dtype=torch.float64)  # (T, d_model)
        paths.append(measure_paths(lambda rows: layer(rows)[0], x, sources=(0,)).products[0][-1])
    reach = measure_reach(lambda rows: layer(rows)[0], x)
    holds = paths[0] == paths[1] is not None and paths[1] < sizes.path_lengths[0] - 1 and reach.first > 0
    return holds, {"lengths": sizes.path_lengths, "path_products": tuple(paths), "reach_first": reach.first,
                   "reach_last": reach.norms[-1], "decay_per_step": reach.decay_per_step()}


# --- order and Figure 1, and the quiz (L10–L12) --------------------------------------------------------

def check_l10(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L10: shuffled rows come out shuffled alike; shuffled (k, v) pairs change nothing; the recurrence
    notices both; the lesson's two sentences reach attention as the same vectors."""
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.order import measure_key_value_order, measure_order
    from seqlab.text import embed, tokenize

    d, T, g = sizes.width, sizes.order_length, claim_generator(seed, 13)
    layer = SelfAttention(d, generator=g).eval()
    rnn = ElmanRNN(d, d, generator=g).eval()
    x = torch.randn(T, d, generator=g)  # (T, d_model)
    with torch.no_grad():
        q, k, v = layer.project(x)
    rows = measure_order(lambda r: layer(r)[0], x, seed=seed)
    pairs = measure_key_value_order(lambda q_, k_, v_: layer.attention(q_, k_, v_)[0], q, k, v, seed=seed)
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
    holds = (rows.equivariant and pairs.invariant and not recurrence.equivariant
             and attention_gap <= rows.tolerance and recurrence_gap > rows.tolerance)
    return holds, {"T": T, "rows_change": rows.max_abs_change, "pairs_change": pairs.max_abs_change,
                   "tolerance": rows.tolerance, "recurrence_change": recurrence.max_abs_change,
                   "sentences": SENTENCES, "sentences_attention_change": attention_gap,
                   "sentences_recurrence_change": recurrence_gap}


def check_l11(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L11: of Figure 1's fifteen boxes, measured, exactly the three attention boxes mix positions."""
    from seqlab.studies.figure import measure_figure

    T_source, T_target, d_model, heads = sizes.figure
    figure = measure_figure(T_source, T_target, d_model, heads, seed=seed)
    attention = tuple(box.key for box in figure.boxes if "attention" in box.key)
    holds = len(figure.boxes) == 15 and len(figure.lit) == 3 and set(figure.lit) == set(attention)
    return holds, {"boxes": len(figure.boxes), "lit": figure.lit,
                   "lit_titles": tuple(box.title for box in figure.boxes if box.mixes),
                   "patterns": {box.key: box.pattern for box in figure.boxes},
                   "T_source": T_source, "T_target": T_target, "d_model": d_model, "heads": heads}


def check_l12(sizes: CheckSizes, seed: int) -> tuple[bool, dict]:
    """L12: the quiz reaches the lesson's four answers by computation."""
    from seqlab.studies.quiz import questions

    answers = {q.key: q.answer for q in questions("en")}
    return answers == LESSON_ANSWERS, {"answers": answers, "lesson": LESSON_ANSWERS}
