"""The figures the self-check answers rest on, measured on tiny seeded float64 layers (L12).

:func:`measure_facts` runs the lesson's measurements once (cached, a few hundred milliseconds once PyTorch is
imported) and returns a :class:`QuizFacts`; :func:`measure_in_background` runs it in a thread of its own and
returns a :class:`~concurrent.futures.Future` at once, so the questions can be asked while it measures (importing
this module imports no PyTorch). :mod:`seqlab.studies.quiz` turns each figure into a ``correct`` flag:

* q1 (L1) — span (:mod:`seqlab.measure.trace`) at two lengths of the Elman loop, of its W_xh x_t half
  done as one product, of a row softmax, and of the lookup that turns tokens into rows;
* q2 (L7) — :func:`seqlab.cost.crossover_length` with every width 512;
* q3 (L10) — :func:`seqlab.measure.order.measure_order` on self-attention, and whether the call on
  shuffled rows raised;
* q4 (L3, L4) — least products from position 1 to T (:mod:`seqlab.measure.paths`) and the gradient's
  reach back to position 1 (:mod:`seqlab.measure.reach`).
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: The width of question 2 (the paper's d_model) and the two lengths the measurements run at.
WIDTH = 512
LENGTHS = (8, 16)
#: Width of the tiny layers the facts are measured on.
FACT_WIDTH = 4


@dataclass(frozen=True)
class QuizFacts:
    """The figures the answers are computed from (float64 layers of width 4, seed 0).

    Attributes:
        lengths: the two T measured (8 and 16).
        recurrence_span: matrix products in a row through the Elman loop at each T (L1: T).
        input_span: matrix products in a row of the W_xh x_t half done as one product, at each T.
        softmax_span: ops in a row of a row softmax over a T x T grid, at each T.
        token_span: compute ops in a row of the embedding lookup that turns T token ids into rows, at each T
            (a gather: no arithmetic, so 0).
        crossover: T where attention's and the recurrence's counts are equal, every width 512 (L7).
        crossover_count: multiplications of each machine at that T.
        shuffled_change: max |f(x[pi]) - f(x)[pi]| of self-attention (0 up to rounding, L10).
        shuffled_tolerance: the rounding allowance it is judged against.
        unshuffled_change: max |f(x[pi]) - f(x)|: how far the shuffled call is from the original order.
        shuffled_call_raised: whether the attention call raised when given the shuffled rows.
        recurrence_path: least products from x_1 to h_T through the loop, at each T (L3: T, W_xh then
            T-1 by W_hh).
        attention_path: least products from x_1 to y_T through self-attention, at each T (L4).
        attention_reach_ratio: ||dy_T/dx_1|| / ||dy_T/dx_T|| through self-attention at the longer T.
    """

    lengths: tuple[int, int]
    recurrence_span: tuple[int, int]
    input_span: tuple[int, int]
    softmax_span: tuple[int, int]
    token_span: tuple[int, int]
    crossover: Fraction
    crossover_count: int
    shuffled_change: float
    shuffled_tolerance: float
    unshuffled_change: float
    shuffled_call_raised: bool
    recurrence_path: tuple[int, int]
    attention_path: tuple[int, int]
    attention_reach_ratio: float


@lru_cache(maxsize=1)
def measure_facts(seed: int = 0) -> QuizFacts:
    """Measure everything the answers rest on, on tiny seeded float64 layers (cached).

    >>> facts = measure_facts()
    >>> facts.crossover, facts.recurrence_span, facts.attention_path  # 512, T products, 2 products
    (Fraction(512, 1), (8, 16), (2, 2))

    Returns:
        A :class:`QuizFacts`; spans and paths in matrix products (softmax: ops).
    """
    import torch

    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.order import measure_order
    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach
    from seqlab.measure.trace import measure_span
    from seqlab.measure.traced_pass import measure_pass

    generator = torch.Generator().manual_seed(seed)
    d = FACT_WIDTH
    rnn = ElmanRNN(d, d, generator=generator, dtype=torch.float64).eval()
    attention = SelfAttention(d, generator=generator, dtype=torch.float64).eval()

    def attend(rows):
        return attention(rows)[0]  # (T, d_v)

    lookup = torch.nn.Embedding(max(LENGTHS), d, dtype=torch.float64)  # token id -> row
    spans, inputs, softmaxes, tokens, rnn_paths, att_paths = [], [], [], [], [], []
    for T in LENGTHS:
        x = torch.randn(T, d, generator=generator, dtype=torch.float64)  # (T, d_model)
        traced = measure_pass(rnn, x, sources=(0,), work=False)  # the span and the path: one traced pass
        spans.append(traced.span.products)
        inputs.append(measure_span(lambda rows: rows @ rnn.weight_xh.T, x).products)  # (T, d_h), one product
        softmaxes.append(measure_span(lambda e: torch.softmax(e, dim=-1), x @ x.T).ops)  # (T, T) grid
        tokens.append(measure_span(lookup, torch.arange(T)).ops)  # (T,) ids -> (T, d)
        rnn_paths.append(traced.paths.products[0][-1])
        att_paths.append(measure_paths(attend, x, sources=(0,)).products[0][-1])
    order = measure_order(attend, x, seed=seed, reference=attend)  # float64 already: the layer is its own twin
    with torch.no_grad():
        try:
            shuffled, raised = attend(x[list(order.permutation)]), False  # (T, d_v)
        except Exception:  # noqa: BLE001  a call that refuses shuffled rows is the fact measured
            shuffled, raised = None, True
        unshuffled = float((shuffled - attend(x)).abs().max()) if shuffled is not None else math.inf
    reach = measure_reach(attend, x)
    count = cost.recurrence_multiplications(int(cost.crossover_length(WIDTH, WIDTH, WIDTH, WIDTH)), WIDTH, WIDTH)
    return QuizFacts(
        lengths=LENGTHS, recurrence_span=tuple(spans), input_span=tuple(inputs), softmax_span=tuple(softmaxes),
        token_span=tuple(tokens),
        crossover=cost.crossover_length(WIDTH, WIDTH, WIDTH, WIDTH), crossover_count=count,
        shuffled_change=order.max_abs_change, shuffled_tolerance=order.tolerance, unshuffled_change=unshuffled,
        shuffled_call_raised=raised,
        recurrence_path=tuple(rnn_paths), attention_path=tuple(att_paths),
        attention_reach_ratio=reach.first / reach.norms[-1])


def measure_in_background(seed: int = 0) -> Future[QuizFacts]:
    """Start :func:`measure_facts` in a daemon thread and return its future at once (the facts, or the error).

    The thread does what :func:`measure_facts` does and nothing else: its traces hold PyTorch's process-wide
    switches through :mod:`seqlab.measure.switches` (given back on the way out, whatever other threads hold), its
    thread count and grad mode are its own thread's, and it leaves the garbage collector alone (only the main
    thread pauses it). A daemon thread: a reader who leaves early does not wait for the measurement to end.

    >>> measure_in_background().result().crossover  # the same cached facts as measure_facts()
    Fraction(512, 1)

    Returns:
        A :class:`~concurrent.futures.Future` whose ``result()`` is the :class:`QuizFacts`, or raises
        :class:`~seqlab.errors.SeqlabError`: the measurement's own, or one naming any other exception it raised
        (its type and first line), so a front end shows one line instead of a traceback.
    """
    future: Future[QuizFacts] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            facts = measure_facts(seed)
        except SeqlabError as error:
            future.set_exception(error)
        except BaseException as error:  # noqa: BLE001  any failure of the measurement is reported, as one line
            cause = (str(error).strip().splitlines() or [""])[0]
            wrapped = SeqlabError(N_("could not measure the figures the answers rest on: {error}"),
                                  error=f"{type(error).__name__}: {cause}" if cause else type(error).__name__)
            wrapped.__cause__ = error
            future.set_exception(wrapped)
        else:
            future.set_result(facts)

    threading.Thread(target=run, name="seqlab-quiz-facts", daemon=True).start()
    return future
