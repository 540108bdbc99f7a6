"""Closed-form costs of the two machines, as exact integers (L1, L2, L5, L6, L7, L9).

Unit: **multiplications**, the lesson's unit; one multiply-add counts as one multiplication.
PyTorch's convention is FLOPs, which counts a multiply-add as two: ``flops(m) = 2 * m``.
Bias additions, the tanh, the softmax (exp, sum, division) and the -inf fill of a mask are
left out everywhere; the Q, K, V projections are counted apart, by
:func:`projection_multiplications`.

==================================  ===============================  =====
function                            closed form                      claim
==================================  ===============================  =====
recurrence_multiplications          T (d_h^2 + d_h d_model)          L5
attention_multiplications           T T_k (d_k + d_v)                L6
projection_multiplications          T d_model (2 d_k + d_v)          L6
work_ratio                          attention / recurrence           L7
crossover_length                    d_h (d_h + d_model) / (d_k+d_v)  L7
first_length_attention_costs_more   floor(crossover) + 1             L7
recurrence_sequential_steps         T                                L1
attention_sequential_products       2 (Q K^T, then A V)              L2
flops                               2 m                              --
==================================  ===============================  =====

With every width equal to d (L7): 2 T d^2 against 2 T^2 d, ratio T/d, equal at T = d.
The lesson's worked numbers (L9, d = 512):

>>> recurrence_multiplications(50, 512, 512), attention_multiplications(50, 512, 512)
(26214400, 2560000)
>>> work_ratio(1000, 512, 512, 512, 512)
Fraction(125, 64)

All functions are pure, take integers and return ``int`` or ``fractions.Fraction``; they never
round. Sizes are validated with :func:`seqlab.errors.require_positive_int`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from seqlab.errors import SeqlabError, require_positive_int

__all__ = [
    "CLOSED_FORMS",
    "attention_multiplications",
    "attention_sequential_products",
    "crossover_length",
    "first_length_attention_costs_more",
    "flops",
    "projection_multiplications",
    "recurrence_multiplications",
    "recurrence_sequential_steps",
    "scored_attention_multiplications",
    "scored_crossover_length",
    "work_ratio",
]


def recurrence_multiplications(T: int, d_model: int, d_h: int) -> int:
    """Multiplications of an Elman recurrence over T steps: T (d_h^2 + d_h d_model) (L5).

    Each step multiplies once per weight: d_h x d_h for W_hh h_{t-1}, d_h x d_model for
    W_xh x_t. Bias, tanh and h_0 are not counted.

    >>> recurrence_multiplications(50, 512, 512)  # 2 * 50 * 512**2
    26214400

    Returns:
        int, multiplications (FLOPs = 2x).

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    T = require_positive_int("T", T)
    d_model = require_positive_int("d_model", d_model)
    d_h = require_positive_int("d_h", d_h)
    return T * (d_h * d_h + d_h * d_model)


def attention_multiplications(T: int, d_k: int, d_v: int, T_k: int | None = None) -> int:
    """Multiplications of one attention call: T T_k (d_k + d_v) (L6).

    Q K^T has T x T_k cells of d_k products each; A V has T x d_v cells summing T_k products
    each. NOT included: the Q, K, V projections (see :func:`projection_multiplications`), the
    1/sqrt(d_k) scaling, the softmax, and the roughly half of the cells a causal mask could skip.

    >>> attention_multiplications(50, 512, 512)  # 2 * 50**2 * 512
    2560000
    >>> attention_multiplications(4, 8, 2, T_k=10)  # 4 * 10 * (8 + 2)
    400

    Args:
        T: number of queries T_q.
        d_k: query/key width. d_v: value width.
        T_k: number of keys (default T, as in self-attention).

    Returns:
        int, multiplications (FLOPs = 2x).

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    T = require_positive_int("T", T)
    d_k = require_positive_int("d_k", d_k)
    d_v = require_positive_int("d_v", d_v)
    T_k = T if T_k is None else require_positive_int("T_k", T_k)
    return T * T_k * (d_k + d_v)


def scored_attention_multiplications(score: str, T: int, d_k: int, d_v: int, T_k: int | None = None,
                                     d_attention: int | None = None) -> int:
    """Multiplications of one attention call with the given score (L2's pluggable a(q_i, k_j)).

    * ``dot``, ``scaled_dot``: T T_k (d_k + d_v), as :func:`attention_multiplications` (L6);
    * ``general`` (Luong, e = q^T W k): the product Q W adds T d_k^2 (queries of width d_k);
    * ``additive`` (Bahdanau, e = w^T tanh(W_q q + W_k k)): no Q K^T; instead W_q q and W_k k,
      T d_a d_k + T_k d_a d_k, and w^T of every (i, j) hidden vector, T T_k d_a; the mix A V
      stays T T_k d_v. d_a (``d_attention``) defaults to d_k.

    >>> scored_attention_multiplications("general", 40, 16, 16)  # 40*40*32 + 40*16*16
    61440
    >>> scored_attention_multiplications("additive", 40, 16, 16)  # 2*40*16*16 + 40*40*16 + 40*40*16
    71680

    Raises:
        SeqlabError: an unknown score, or a size that is not an integer >= 1.
    """
    T_k = T if T_k is None else require_positive_int("T_k", T_k)
    if score in ("dot", "scaled_dot"):
        return attention_multiplications(T, d_k, d_v, T_k)
    if score == "general":
        return attention_multiplications(T, d_k, d_v, T_k) + T * d_k * d_k
    if score == "additive":
        d_a = d_k if d_attention is None else require_positive_int("d_attention", d_attention)
        T = require_positive_int("T", T)
        d_k, d_v = require_positive_int("d_k", d_k), require_positive_int("d_v", d_v)
        return (T + T_k) * d_a * d_k + T * T_k * d_a + T * T_k * d_v
    raise SeqlabError(f"score must be one of dot, scaled_dot, general, additive; received {score!r}",
                      parameter="score")


def scored_crossover_length(score: str, d_model: int, d_h: int, d_k: int, d_v: int,
                            d_attention: int | None = None) -> Fraction | None:
    """The T at which attention with ``score`` and the recurrence do equal work, or None if never (L7).

    Every score's count is a·T² + b·T (see :func:`scored_attention_multiplications`) and the
    recurrence's is c·T, so they cross at T = (c - b) / a; when b ≥ c (the additive score with equal
    widths: its W_q q and W_k k products alone cost as much as the recurrence) attention costs more at
    every length and there is no crossover.

    >>> scored_crossover_length("scaled_dot", 512, 512, 512, 512)
    Fraction(512, 1)
    >>> scored_crossover_length("general", 16, 16, 16, 16)  # (512 - 256) / 32
    Fraction(8, 1)
    >>> scored_crossover_length("additive", 16, 16, 16, 16) is None
    True

    Raises:
        SeqlabError: an unknown score, or a width that is not an integer >= 1.
    """
    quadratic = scored_attention_multiplications(score, 2, d_k, d_v, d_attention=d_attention) \
        - 2 * scored_attention_multiplications(score, 1, d_k, d_v, d_attention=d_attention)  # 2a
    a = Fraction(quadratic, 2)
    b = scored_attention_multiplications(score, 1, d_k, d_v, d_attention=d_attention) - a
    c = recurrence_multiplications(1, d_model, d_h)
    return (c - b) / a if c > b else None


def projection_multiplications(T: int, d_model: int, d_k: int, d_v: int) -> int:
    """Multiplications of the Q, K, V projections of T rows: T d_model (2 d_k + d_v).

    Reported apart from :func:`attention_multiplications`, which leaves them out (L6).
    Bias-free projections are assumed.

    >>> projection_multiplications(50, 512, 512, 512)  # 50 * 512 * 3 * 512
    39321600

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    T = require_positive_int("T", T)
    d_model = require_positive_int("d_model", d_model)
    d_k = require_positive_int("d_k", d_k)
    d_v = require_positive_int("d_v", d_v)
    return T * d_model * (2 * d_k + d_v)


def work_ratio(T: int, d_model: int, d_h: int, d_k: int, d_v: int) -> Fraction:
    """Attention work over recurrence work, exactly: T (d_k + d_v) / (d_h (d_h + d_model)) (L7).

    Equals T/d when every width is d. Projections are not in either count.

    >>> work_ratio(50, 512, 512, 512, 512)  # 50 / 512
    Fraction(25, 256)
    >>> float(work_ratio(2000, 512, 512, 512, 512))  # 2000 / 512
    3.90625

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    return Fraction(attention_multiplications(T, d_k, d_v),
                    recurrence_multiplications(T, d_model, d_h))


def crossover_length(d_model: int, d_h: int, d_k: int, d_v: int) -> Fraction:
    """The T at which both counts are equal: d_h (d_h + d_model) / (d_k + d_v) (L7).

    From T^2 (d_k + d_v) = T (d_h^2 + d_h d_model). Below it attention does less work, above it
    more. With every width d it is d (L12, question 2: 512).

    >>> crossover_length(512, 512, 512, 512)
    Fraction(512, 1)
    >>> crossover_length(256, 128, 64, 32)  # 128 * 384 / 96
    Fraction(512, 1)

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    d_model = require_positive_int("d_model", d_model)
    d_h = require_positive_int("d_h", d_h)
    d_k = require_positive_int("d_k", d_k)
    d_v = require_positive_int("d_v", d_v)
    return Fraction(d_h * (d_h + d_model), d_k + d_v)


def first_length_attention_costs_more(d_model: int, d_h: int, d_k: int, d_v: int) -> int:
    """The smallest integer T with attention_multiplications > recurrence_multiplications (L7).

    That is floor(crossover) + 1: at T = crossover the two are equal, not more.

    >>> first_length_attention_costs_more(512, 512, 512, 512)  # equal at 512, more from 513
    513

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    return math.floor(crossover_length(d_model, d_h, d_k, d_v)) + 1


def recurrence_sequential_steps(T: int) -> int:
    """Chain depth of the recurrence: T steps that must run one after another (L1).

    h_t needs h_{t-1}, so no number of processors shortens it.

    >>> recurrence_sequential_steps(800)
    800

    Raises:
        SeqlabError: ``T`` is not an integer >= 1.
    """
    return require_positive_int("T", T)


def attention_sequential_products() -> int:
    """Matrix products one attention call makes in a row: Q K^T, then A V — 2, whatever T (L2).

    The row softmax between them is elementwise per row and is not a product.

    >>> attention_sequential_products()
    2
    """
    return 2


def flops(multiplications: int) -> int:
    """FLOPs for a count of multiplications: 2 per multiply-add (PyTorch's convention).

    >>> flops(recurrence_multiplications(50, 512, 512))
    52428800

    Raises:
        SeqlabError: ``multiplications`` is not an integer >= 0 (0 is a valid count).
    """
    if isinstance(multiplications, bool) or not isinstance(multiplications, int):
        raise SeqlabError(f"multiplications must be an integer >= 0, received {multiplications!r}")
    if multiplications < 0:
        raise SeqlabError(f"multiplications must be an integer >= 0, received {multiplications}")
    return 2 * multiplications


CLOSED_FORMS: dict[str, Callable[..., int | Fraction]] = {
    "recurrence_multiplications": recurrence_multiplications,
    "attention_multiplications": attention_multiplications,
    "scored_attention_multiplications": scored_attention_multiplications,
    "scored_crossover_length": scored_crossover_length,
    "projection_multiplications": projection_multiplications,
    "work_ratio": work_ratio,
    "crossover_length": crossover_length,
    "first_length_attention_costs_more": first_length_attention_costs_more,
    "recurrence_sequential_steps": recurrence_sequential_steps,
    "attention_sequential_products": attention_sequential_products,
    "flops": flops,
}
"""The table above as data: name -> closed-form function."""
