"""Every closed-form cost in seqlab, as exact integers: the one table the layers, measurements and reports call.

Unit: **multiplications**, the lesson's unit; one multiply-add counts as one multiplication.
PyTorch's convention is FLOPs, which counts a multiply-add as two: ``flops(m) = 2 * m``.
Bias additions, the tanh, the softmax (exp, sum, division) and the -inf fill of a mask are
left out everywhere, and so is every element-wise product inside a step (a gate, a decay): one rule for every
count, :mod:`seqlab.measure.work`'s — an outer product is counted (one multiplication per output element: Mamba's
(Δ_t ⊙ u_t) ⊗ B_t), and so is a product summed over a dimension (a contraction: a depthwise convolution over its
window, E·k in a Mamba step). A state's bytes are the storage it keeps alive, not the rows it will read: a sliding
window keeps w rows (:func:`sliding_window_cache_rows`), though the next token reads w − 1 (docs: engine.md, "One
convention per count"). The Q, K, V projections are counted apart, by
:func:`projection_multiplications`, and the output projection by :func:`output_projection_multiplications`.
Each function's docstring gives its source (a lesson claim L1…L12, or the paper). Each is registered where it
is defined, ``@closed_form(formula, source)``; the table below is :func:`closed_form_table`, written from that
registry (``tests/test_cost.py`` fails when they differ), and :data:`CLOSED_FORMS` reads the same registry.

==========================================  ===================================================  ===========
function                                    closed form                                          source
==========================================  ===================================================  ===========
recurrence_multiplications                  T (d_h^2 + d_h d_model)                              L5
attention_multiplications                   T T_k (d_k + d_v)                                    L6
scored_attention_multiplications            the call with a dot, general or additive score       L2, L6
scored_crossover_length                     the same with a score                                L7
projection_multiplications                  T d_model (2 d_k + d_v)                              L6
work_ratio                                  attention / recurrence                               L7
crossover_length                            d_h (d_h + d_model) / (d_k+d_v)                      L7
first_length_attention_costs_more           floor(crossover) + 1                                 L7
recurrence_sequential_steps                 T                                                    L1
attention_sequential_products               2 (Q K^T, then A V)                                  L2
flops                                       2 m                                                  --
gated_recurrence_multiplications            G T (d_h^2 + d_h d_model), G = 1, 3, 4 gates         L5
output_projection_multiplications           T d_v d_model                                        §3.2.2
attention_layer_multiplications             projections + call + W_O                             L6
kv_cache_step_multiplications               d_model (2 d_k + d_v) + t (d_k + d_v)                L6
kv_cache_layer_step_multiplications         the step above + d_v d_model (W_O)                   L6, §3.2.2
no_cache_step_multiplications               d_model d_k + t d_model (d_k + d_v) + t (d_k + d_v)  L6
convolution_multiplications                 k T d^2                                              Table 1
restricted_attention_multiplications        (2r + 1) T (d_k + d_v)                               Table 1
restricted_attention_layer_multiplications  projections + banded call + W_O                      Table 1
linear_attention_multiplications            T^2 (d_k + d_v) or T (2 d_k d_v + d_k), + proj.      Kath. 2020
linear_attention_step_multiplications       2 d_k d_v + d_k + projections                        Kath. 2020
diagonal_recurrence_multiplications         2 T d_model d_state                                  S4D, LRU
diagonal_recurrence_step_multiplications    2 d_model d_state                                    S4D, LRU
selective_recurrence_multiplications        4 T d_model d_state                                  Mamba
selective_recurrence_step_multiplications   4 d_model d_state                                    Mamba
sliding_window_multiplications              T w (d_k + d_v) + projections                        Longformer
sliding_window_step_multiplications         w (d_k + d_v) + projections                          Longformer
mamba_rank                                  ⌈d_model / 16⌉ (Δ's rank)                            Mamba
mamba_block_multiplications                 T (2dE + E(R + 5N) + RE + Ed) + (T + k − 1) E k      Mamba
mamba_block_step_multiplications            2dE + E(R + 5N) + RE + Ed + E k                      Mamba
kv_cache_bytes                              2 L H_kv d_head t b  (per batch row)                 §3.2.2
keys_values_cache_bytes                     L (w_k + w_v) t b                                    §3.2.2
latent_kv_cache_bytes                       L (d_c + d_R) t b  (latent attention)                DeepSeek-V2
alibi_bias_multiplications                  H keys                                               ALiBi
sliding_window_cache_rows                   min(t, w)                                            Mistral
ssm_state_bytes                             L E (d_conv + N) b                                   Mamba
mamba2_state_bytes                          L ((H P + 2 G N) d_conv + H P N) b                   Mamba-2
rwkv_state_bytes                            L (2 d + 3 d_att) b                                  RWKV
decoder_attention_step_multiplications      d H d_h + 2 d H_kv d_h + H d_h d + 2 H d_h keys      §3.2.2
mlp_step_multiplications                    2 d d_ff, or 3 d d_ff gated                          §3.3
hf_mamba_step_multiplications               mamba_block_step + E d_conv                          Mamba
hf_mamba2_step_multiplications              d (2E + 2GN + H) + 2 (E + 2GN) d_conv + 2EN + Ed     Mamba-2
rwkv_step_multiplications                   4 d d_att + 2 d d_ff + d^2                           RWKV
kaplan_step_multiplications                 N + L t d_attn                                       Kaplan
==========================================  ===================================================  ===========

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import TypeVar

from seqlab.errors import SeqlabError, check_form, require_positive_int
from seqlab.i18n import N_

_ClosedFormFunction = TypeVar("_ClosedFormFunction", bound=Callable[..., "int | Fraction | None"])


@dataclass(frozen=True)
class ClosedForm:
    """One registered closed form: the function, its formula as the table prints it, its source.

    Attributes:
        name: the function's name (unique).
        function: the pure function from integers to an ``int`` or a ``Fraction``.
        formula: the closed form in plain text (``"T (d_h^2 + d_h d_model)"``).
        source: a lesson claim (``"L5"``), a paper (``"Mamba"``) or ``"--"``.
    """

    name: str
    function: Callable[..., int | Fraction | None]
    formula: str
    source: str


_CLOSED_FORMS: dict[str, ClosedForm] = {}
_FUNCTIONS: dict[str, Callable[..., int | Fraction | None]] = {}
CLOSED_FORMS: Mapping[str, Callable[..., int | Fraction | None]] = MappingProxyType(_FUNCTIONS)
"""Every registered closed form as data: name -> function, in the order they are registered (read-only; filled by
:func:`closed_form`): this module's, and those a mixer's module defines beside its layer once it is imported."""


def closed_form(formula: str, source: str) -> Callable[[_ClosedFormFunction], _ClosedFormFunction]:
    """Register the decorated function as a closed form (in :data:`CLOSED_FORMS` and the table above), where it
    is defined.

    >>> closed_forms()[0].name, closed_forms()[0].formula, closed_forms()[0].source
    ('recurrence_multiplications', 'T (d_h^2 + d_h d_model)', 'L5')

    Raises:
        SeqlabError: a closed form of that name is already registered, or ``formula`` is empty.
    """
    if not formula.strip():
        raise SeqlabError(N_("a closed form needs its formula, received an empty one"), parameter="formula")

    def register(function: _ClosedFormFunction) -> _ClosedFormFunction:
        name = function.__name__
        if name in _CLOSED_FORMS:
            raise SeqlabError(N_("a closed form named {name!r} is already registered"), name=name,
                              parameter="closed_form")
        _CLOSED_FORMS[name] = ClosedForm(name, function, formula, source)
        _FUNCTIONS[name] = function
        return function

    return register


def closed_forms(module: str | None = None) -> tuple[ClosedForm, ...]:
    """Every registered closed form, in the order they are registered; with ``module``, those defined in it.

    A mixer's closed forms may live in the mixer's own module (``docs/en/contributing.md``): they join the registry
    when that module is imported, as every mixer is by :mod:`seqlab.layers.mixers`.
    """
    return tuple(c for c in _CLOSED_FORMS.values() if module is None or c.function.__module__ == module)


def closed_form_table(module: str | None = __name__) -> str:
    """The table of a module's closed forms (by default this one's: its docstring holds it, a test checks it),
    written from the registry; ``module=None`` tables every registered one.

    >>> closed_form_table().splitlines()[3].split("  ")[0]
    'recurrence_multiplications'
    """
    rows = [("function", "closed form", "source")] + [(c.name, c.formula, c.source) for c in closed_forms(module)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    rule = "  ".join("=" * w for w in widths)

    def line(row: tuple[str, str, str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()

    return "\n".join([rule, line(rows[0]), rule, *map(line, rows[1:]), rule])


@closed_form("T (d_h^2 + d_h d_model)", "L5")
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


@closed_form("T T_k (d_k + d_v)", "L6")
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


@closed_form("the call with a dot, general or additive score", "L2, L6")
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
    raise SeqlabError(N_("score must be one of dot, scaled_dot, general, additive; received {score!r}"), score=score,
                      parameter="score")


@closed_form("the same with a score", "L7")
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


@closed_form("T d_model (2 d_k + d_v)", "L6")
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


@closed_form("attention / recurrence", "L7")
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


@closed_form("d_h (d_h + d_model) / (d_k+d_v)", "L7")
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


@closed_form("floor(crossover) + 1", "L7")
def first_length_attention_costs_more(d_model: int, d_h: int, d_k: int, d_v: int) -> int:
    """The smallest integer T with attention_multiplications > recurrence_multiplications (L7).

    That is floor(crossover) + 1: at T = crossover the two are equal, not more.

    >>> first_length_attention_costs_more(512, 512, 512, 512)  # equal at 512, more from 513
    513

    Raises:
        SeqlabError: any argument is not an integer >= 1.
    """
    return math.floor(crossover_length(d_model, d_h, d_k, d_v)) + 1


@closed_form("T", "L1")
def recurrence_sequential_steps(T: int) -> int:
    """Chain depth of the recurrence: T steps that must run one after another (L1).

    h_t needs h_{t-1}, so no number of processors shortens it.

    >>> recurrence_sequential_steps(800)
    800

    Raises:
        SeqlabError: ``T`` is not an integer >= 1.
    """
    return require_positive_int("T", T)


@closed_form("2 (Q K^T, then A V)", "L2")
def attention_sequential_products() -> int:
    """Matrix products one attention call makes in a row: Q K^T, then A V — 2, whatever T (L2).

    The row softmax between them is elementwise per row and is not a product.

    >>> attention_sequential_products()
    2
    """
    return 2


@closed_form("2 m", "--")
def flops(multiplications: int) -> int:
    """FLOPs for a count of multiplications: 2 per multiply-add (PyTorch's convention).

    >>> flops(recurrence_multiplications(50, 512, 512))
    52428800

    Raises:
        SeqlabError: ``multiplications`` is not an integer >= 0 (0 is a valid count).
    """
    if isinstance(multiplications, bool) or not isinstance(multiplications, int):
        raise SeqlabError(N_("multiplications must be an integer >= 0, received {multiplications!r}"),
                          multiplications=multiplications)
    if multiplications < 0:
        raise SeqlabError(N_("multiplications must be an integer >= 0, received {multiplications}"),
                          multiplications=multiplications)
    return 2 * multiplications


# --- whole layers: gates, the output projection ------------------------------------------------------

#: Weight blocks per step of each recurrent cell: W_ih and W_hh each hold G·d_h rows (PyTorch's layout:
#: LSTM gates i, f, g, o; GRU gates r, z, n; a tanh RNN one).
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


@closed_form("G T (d_h^2 + d_h d_model), G = 1, 3, 4 gates", "L5")
def gated_recurrence_multiplications(T: int, d_model: int, d_h: int, cell: str = "rnn") -> int:
    """Multiplications of a recurrent layer over T steps: G·T(d_h² + d_h·d_model) (L5 with G gates).

    Every step multiplies W_ih (G·d_h × d_model) by x_t and W_hh (G·d_h × d_h) by h_{t-1}; gate products,
    activations and biases are left out.

    >>> gated_recurrence_multiplications(50, 512, 512, "lstm")  # 4 * 26,214,400
    104857600

    Args:
        T, d_model, d_h: integers >= 1.
        cell: ``"rnn"`` (Elman, G = 1), ``"gru"`` (G = 3) or ``"lstm"`` (G = 4): a key of :data:`GATES`.

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not an integer >= 1, or an unknown cell.

    Source: lesson claim L5, with PyTorch's gate layout (``torch.nn.LSTM`` / ``torch.nn.GRU``).
    """
    if cell not in GATES:
        raise SeqlabError(N_("cell must be one of {gates}; received {cell!r}"), gates=', '.join(GATES), cell=cell,
                          parameter="cell")
    return GATES[cell] * recurrence_multiplications(T, d_model, d_h)


@closed_form("T d_v d_model", "§3.2.2")
def output_projection_multiplications(T: int, d_v: int, d_model: int) -> int:
    """Multiplications of an output projection W_O (d_model × d_v) applied to T rows: T·d_v·d_model.

    >>> output_projection_multiplications(50, 512, 512)  # 50 * 512 * 512
    13107200

    Returns:
        int, multiplications (bias-free).

    Raises:
        SeqlabError: any argument is not an integer >= 1.

    Source: Vaswani et al. 2017, §3.2.2 (MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O).
    """
    T = require_positive_int("T", T)
    d_v = require_positive_int("d_v", d_v)
    return T * d_v * require_positive_int("d_model", d_model)


@closed_form("projections + call + W_O", "L6")
def attention_layer_multiplications(T: int, d_model: int, d_k: int, d_v: int, output_projection: bool = True) -> int:
    """Multiplications of a self-attention layer: projections, the call and (by default) W_O.

    T·d_model(2d_k + d_v) for Q, K, V, T²(d_k + d_v) for the call (L6), and T·d_v·d_model for the output
    projection back to d_model. With H heads of widths d_k/H and d_v/H the total is the same.

    >>> attention_layer_multiplications(50, 512, 512, 512)  # 4 * 50 * 512² + 2 * 50² * 512
    54988800

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: lesson claim L6 plus the projections of Vaswani et al. 2017, §3.2.2.
    """
    total = projection_multiplications(T, d_model, d_k, d_v) + attention_multiplications(T, d_k, d_v)
    return total + (output_projection_multiplications(T, d_v, d_model) if output_projection else 0)


# --- one decoding step ---------------------------------------------------------------------------------

@closed_form("d_model (2 d_k + d_v) + t (d_k + d_v)", "L6")
def kv_cache_step_multiplications(t: int, d_model: int, d_k: int, d_v: int) -> int:
    """Multiplications of the attention step generating position t with a KV cache: d_model(2d_k + d_v) + t(d_k + d_v).

    q_t, k_t, v_t are projected once (:func:`projection_multiplications` of one row); q_t scores the t cached
    keys and mixes the t cached values (:func:`attention_multiplications` with T_k = t). No output projection.
    The same for a cache grown by concatenation and for a static one preallocated to a capacity C >= t: a static
    step writes row t in place (a copy) and attends over the t rows written, never over all C.

    >>> kv_cache_step_multiplications(16, 256, 256, 256)  # 3 * 256**2 + 2 * 16 * 256
    204800

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: any argument is not an integer >= 1.

    Source: lesson claim L6 (a query over t keys: t(d_k + d_v)).
    """
    return projection_multiplications(1, d_model, d_k, d_v) + attention_multiplications(1, d_k, d_v, T_k=t)


@closed_form("the step above + d_v d_model (W_O)", "L6, §3.2.2")
def kv_cache_layer_step_multiplications(t: int, d_model: int, d_k: int, d_v: int) -> int:
    """The KV-cache step of a whole attention layer: :func:`kv_cache_step_multiplications` + d_v·d_model for W_O.

    d_model(2d_k + d_v) + t(d_k + d_v) + d_v·d_model: the step's own projections, its query over the t cached keys
    and values, then the output projection of its one row back to d_model (the scope of
    :func:`attention_layer_multiplications`, one position at a time).

    >>> kv_cache_layer_step_multiplications(16, 256, 256, 256)  # 4 * 256**2 + 2 * 16 * 256
    270336

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: any argument is not an integer >= 1.

    Source: lesson claim L6; Vaswani et al. 2017, §3.2.2 (W^O).
    """
    return kv_cache_step_multiplications(t, d_model, d_k, d_v) + d_v * d_model  # validated by the call before


@closed_form("d_model d_k + t d_model (d_k + d_v) + t (d_k + d_v)", "L6")
def no_cache_step_multiplications(t: int, d_model: int, d_k: int, d_v: int) -> int:
    """Multiplications of the attention step at position t without a cache.

    d_model·d_k + t·d_model(d_k + d_v) + t(d_k + d_v): the query of the new row, the keys and values of all
    t rows again, then the query over t keys.

    >>> no_cache_step_multiplications(16, 8, 8, 8)  # 8*8 + 2*16*8*8 + 2*16*8
    2368

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: any argument is not an integer >= 1.

    Source: lesson claim L6.
    """
    t, d_model = require_positive_int("t", t), require_positive_int("d_model", d_model)
    d_k, d_v = require_positive_int("d_k", d_k), require_positive_int("d_v", d_v)
    return d_model * d_k + t * d_model * (d_k + d_v) + attention_multiplications(1, d_k, d_v, T_k=t)


# --- the paper's other rows: convolution and restricted attention ----------------------------------------

@closed_form("k T d^2", "Table 1")
def convolution_multiplications(T: int, d: int, kernel: int) -> int:
    """Multiplications of one 'same' convolution layer d → d of width k over T positions: k·T·d².

    Every output position multiplies k input vectors by a d×d matrix each; the padded positions at
    the ends are multiplied too (they are zeros, but the kernel does not skip them). Bias excluded.

    >>> convolution_multiplications(64, 64, 3)  # 3 * 64 * 64**2
    786432

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: an argument is not an integer >= 1.

    Source: Vaswani et al. 2017, Table 1 (convolutional row, O(k·n·d²)).
    """
    return require_positive_int("kernel", kernel) * require_positive_int("T", T) * require_positive_int("d", d) ** 2


@closed_form("(2r + 1) T (d_k + d_v)", "Table 1")
def restricted_attention_multiplications(T: int, window: int, d_k: int, d_v: int) -> int:
    """Multiplications of one banded attention call: (2r + 1)·T·(d_k + d_v).

    Each of the T queries scores 2r + 1 keys (d_k each) and mixes 2r + 1 values (d_v each). The
    Q, K, V projections, the scaling and the softmax are not included (as in L6).

    >>> restricted_attention_multiplications(64, 4, 64, 64)  # 9 * 64 * 128
    73728

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: an argument is not an integer >= 1.

    Source: Vaswani et al. 2017, Table 1 (self-attention, restricted: O(r·n·d)).
    """
    slots = 2 * require_positive_int("window", window) + 1
    return slots * require_positive_int("T", T) * (require_positive_int("d_k", d_k) + require_positive_int("d_v", d_v))


@closed_form("projections + banded call + W_O", "Table 1")
def restricted_attention_layer_multiplications(T: int, window: int, d_model: int, d_k: int, d_v: int,
                                               output_projection: bool = True) -> int:
    """Multiplications of a restricted self-attention layer: Q, K, V, the banded call and (by default) W_O.

    T·d_model(2d_k + d_v) for the projections, (2r + 1)·T·(d_k + d_v) for the call, and T·d_v·d_model for the
    output projection back to d_model, as :func:`attention_layer_multiplications` counts full attention's layer.

    >>> restricted_attention_layer_multiplications(64, 4, 64, 64, 64)  # 4 * 64 * 64² + 9 * 64 * 128
    1122304

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Vaswani et al. 2017, Table 1 (self-attention, restricted) and §3.2.2 (the projections and W^O).
    """
    total = projection_multiplications(T, d_model, d_k, d_v) + restricted_attention_multiplications(T, window, d_k, d_v)
    return total + (output_projection_multiplications(T, d_v, d_model) if output_projection else 0)


# --- the modern mixers (seqlab.layers.linear_attention, linear_recurrence, sliding_window) -------------------

#: The forms of :class:`seqlab.layers.linear_attention.LinearAttention`.
LINEAR_ATTENTION_FORMS = ("parallel", "recurrent", "chunked")
#: The forms of the linear recurrences of :mod:`seqlab.layers.linear_recurrence`.
RECURRENCE_FORMS = ("loop", "scan")
#: The forms of :class:`seqlab.layers.sliding_window.SlidingWindowAttention`.
SLIDING_WINDOW_FORMS = ("banded", "masked")


def _mixer_projections(T: int, d_model: int, d_k: int, d_v: int) -> int:
    """W_q, W_k, W_v in and W_o out: T·d_model·(2·d_k + d_v) + T·d_v·d_model."""
    return projection_multiplications(T, d_model, d_k, d_v) + output_projection_multiplications(T, d_v, d_model)


@closed_form("T^2 (d_k + d_v) or T (2 d_k d_v + d_k), + proj.", "Kath. 2020")
def linear_attention_multiplications(T: int, d_model: int, d_k: int, d_v: int, form: str, chunk_size: int = 16, *,
                                     causal: bool = True, batch: int = 1, projections: bool = True) -> int:
    """Multiplications of one :class:`~seqlab.layers.linear_attention.LinearAttention` forward, in closed form.

    Per sequence: parallel T²·(d_k + d_v) (causal or not); recurrent T·(2·d_k·d_v + d_k); chunked (causal)
    (⌊T/C⌋·C² + (T mod C)²)·(d_k + d_v) + T·(2·d_k·d_v + d_k), and as recurrent when not causal; plus
    T·d_model·(2·d_k + d_v) + T·d_v·d_model for the projections unless ``projections=False``. φ, sums, the
    division and the causal tril are not counted.

    >>> linear_attention_multiplications(64, 8, 8, 8, "recurrent", projections=False)  # 64 * (2*64 + 8)
    8704
    >>> linear_attention_multiplications(64, 8, 8, 8, "parallel", projections=False)  # 64**2 * 16
    65536

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not a positive integer, or an unknown form.

    Source: Katharopoulos et al. 2020, §3.2–3.4.
    """
    T, d_model, d_k, d_v, batch = (require_positive_int(name, value) for name, value in
                                   (("T", T), ("d_model", d_model), ("d_k", d_k), ("d_v", d_v), ("batch", batch)))
    C = require_positive_int("chunk_size", chunk_size)
    check_form(form, LINEAR_ATTENTION_FORMS)
    if form == "parallel":
        mixing = T * T * (d_k + d_v)
    elif form == "recurrent" or not causal:
        mixing = T * (2 * d_k * d_v + d_k)
    else:
        mixing = ((T // C) * C * C + (T % C) ** 2) * (d_k + d_v) + T * (2 * d_k * d_v + d_k)
    return batch * (mixing + (_mixer_projections(T, d_model, d_k, d_v) if projections else 0))


@closed_form("2 d_k d_v + d_k + projections", "Kath. 2020")
def linear_attention_step_multiplications(d_model: int, d_k: int, d_v: int, *, batch: int = 1,
                                          projections: bool = True) -> int:
    """Multiplications of one decode step of linear attention: 2·d_k·d_v + d_k, plus projections.

    Fixed whatever the position: the state (S, z) does not grow.

    >>> linear_attention_step_multiplications(8, 8, 8)  # 2*64 + 8 + 8*24 + 64
    392

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not a positive integer.

    Source: Katharopoulos et al. 2020, §3.4 ("Transformers are RNNs").
    """
    return linear_attention_multiplications(1, d_model, d_k, d_v, "recurrent", batch=batch, projections=projections)


def _linear_recurrence_multiplications(projections: int, T: int, d_model: int, d_state: int, form: str,
                                       batch: int) -> int:
    """``projections`` products of d_model × d_state per position and sequence (the state update is element-wise)."""
    T, d_model, d_state, batch = (require_positive_int(name, value) for name, value in
                                  (("T", T), ("d_model", d_model), ("d_state", d_state), ("batch", batch)))
    check_form(form, RECURRENCE_FORMS)
    return batch * projections * T * d_model * d_state


@closed_form("2 T d_model d_state", "S4D, LRU")
def diagonal_recurrence_multiplications(T: int, d_model: int, d_state: int, form: str = "loop", *,
                                        batch: int = 1) -> int:
    """Multiplications of one diagonal linear recurrence forward: 2·T·d_model·d_state per sequence, both forms.

    W_B in and W_C out; the element-wise update h_t = a ⊙ h_{t-1} + b_t and the scan's combines are not counted.

    >>> diagonal_recurrence_multiplications(64, 8, 16, "scan")  # 2 * 64 * 8 * 16
    16384

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not a positive integer, or an unknown form.

    Source: S4D (Gu et al. 2022); LRU (Orvieto et al. 2023), §3.
    """
    return _linear_recurrence_multiplications(2, T, d_model, d_state, form, batch)


@closed_form("2 d_model d_state", "S4D, LRU")
def diagonal_recurrence_step_multiplications(d_model: int, d_state: int, *, batch: int = 1) -> int:
    """Multiplications of one decode step of the diagonal recurrence: 2·d_model·d_state, whatever the position.

    >>> diagonal_recurrence_step_multiplications(8, 16)
    256

    Raises:
        SeqlabError: a size that is not a positive integer.

    Source: S4D (Gu et al. 2022); LRU (Orvieto et al. 2023), §3.
    """
    return diagonal_recurrence_multiplications(1, d_model, d_state, batch=batch)


@closed_form("4 T d_model d_state", "Mamba")
def selective_recurrence_multiplications(T: int, d_model: int, d_state: int, form: str = "loop", *,
                                         batch: int = 1) -> int:
    """Multiplications of one selective recurrence forward: 4·T·d_model·d_state (W_Δ, W_u, W_C, W_o).

    >>> selective_recurrence_multiplications(64, 8, 16, "loop")  # 4 * 64 * 8 * 16
    32768

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not a positive integer, or an unknown form.

    Source: Mamba (Gu & Dao 2023), §3.2.
    """
    return _linear_recurrence_multiplications(4, T, d_model, d_state, form, batch)


@closed_form("4 d_model d_state", "Mamba")
def selective_recurrence_step_multiplications(d_model: int, d_state: int, *, batch: int = 1) -> int:
    """Multiplications of one decode step of the selective recurrence: 4·d_model·d_state, whatever the position.

    >>> selective_recurrence_step_multiplications(8, 16)
    512

    Raises:
        SeqlabError: a size that is not a positive integer.

    Source: Mamba (Gu & Dao 2023), §3.2.
    """
    return selective_recurrence_multiplications(1, d_model, d_state, batch=batch)


@closed_form("T w (d_k + d_v) + projections", "Longformer")
def sliding_window_multiplications(T: int, d_model: int, window: int, form: str, *, d_k: int | None = None,
                                   d_v: int | None = None, batch: int = 1, projections: bool = True) -> int:
    """Multiplications of one sliding-window attention call: T·w·(d_k + d_v) banded, T²·(d_k + d_v) masked.

    Plus T·d_model·(2·d_k + d_v) + T·d_v·d_model for the projections unless ``projections=False``.
    d_k and d_v default to d_model.

    >>> sliding_window_multiplications(64, 8, 4, "banded", projections=False)  # 64 * 4 * 16
    4096
    >>> sliding_window_multiplications(64, 8, 4, "masked", projections=False)  # 64**2 * 16
    65536

    Returns:
        int, multiplications.

    Raises:
        SeqlabError: a size that is not a positive integer, or an unknown form.

    Source: Longformer (Beltagy et al. 2020), §3.1.
    """
    T, d_model, window, batch = (require_positive_int(name, value) for name, value in
                                 (("T", T), ("d_model", d_model), ("window", window), ("batch", batch)))
    d_k = d_model if d_k is None else require_positive_int("d_k", d_k)
    d_v = d_model if d_v is None else require_positive_int("d_v", d_v)
    slots = window if check_form(form, SLIDING_WINDOW_FORMS) == "banded" else T
    mixing = T * slots * (d_k + d_v)
    return batch * (mixing + (_mixer_projections(T, d_model, d_k, d_v) if projections else 0))


@closed_form("w (d_k + d_v) + projections", "Longformer")
def sliding_window_step_multiplications(d_model: int, window: int, *, d_k: int | None = None, d_v: int | None = None,
                                        batch: int = 1, projections: bool = True) -> int:
    """Multiplications of one decode step of sliding-window attention: w·(d_k + d_v) plus the projections.

    Whatever the position: the cache holds the last w keys and values.

    >>> sliding_window_step_multiplications(8, 4)  # 4 * 16 + 8 * 24 + 64
    320

    Raises:
        SeqlabError: a size that is not a positive integer.

    Source: Longformer (Beltagy et al. 2020), §3.1.
    """
    return sliding_window_multiplications(1, d_model, window, "banded", d_k=d_k, d_v=d_v, batch=batch,
                                          projections=projections)


@closed_form("⌈d_model / 16⌉ (Δ's rank)", "Mamba")
def mamba_rank(d_model: int) -> int:
    """Δ's rank in a Mamba block when none is given: ⌈d_model / 16⌉ (Gu & Dao 2023, §3.6; the reference code's
    ``"auto"``).

    >>> mamba_rank(16), mamba_rank(17)
    (1, 2)

    Source: Gu & Dao 2023 (Mamba), §3.6; dt_rank="auto" in its reference code.
    """
    return math.ceil(require_positive_int("d_model", d_model) / 16)


def _mamba_sizes(d_model: int, d_state: int, d_conv: int, expand: int, dt_rank: int | None,
                 batch: int) -> tuple[int, int, int, int, int, int]:
    d_model, d_state, d_conv, expand, batch = (require_positive_int(n, v) for n, v in (
        ("d_model", d_model), ("d_state", d_state), ("d_conv", d_conv), ("expand", expand), ("batch", batch)))
    rank = mamba_rank(d_model) if dt_rank is None else require_positive_int("dt_rank", dt_rank)
    return d_model, d_state, d_conv, expand * d_model, rank, batch


@closed_form("T (2dE + E(R + 5N) + RE + Ed) + (T + k − 1) E k", "Mamba")
def mamba_block_multiplications(T: int, d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2,
                                dt_rank: int | None = None, *, batch: int = 1) -> int:
    """Multiplications of one Mamba block over T positions (batch B), E = expand·d_model channels, N states each.

    B times: T·(d_model·2E (W_in) + E·(R + 2N) (W_x) + R·E (W_Δ) + E·N (the outer product (Δ_t ⊙ u_t) ⊗ B_t)
    + E·N (h_t C_t) + E·d_model (W_out)) + (T + k − 1)·E·k for the depthwise convolution, which runs over the
    padded positions and drops the last k − 1 (executed work, as the reference code does it); plus B·T·E·N for
    Δ_t ⊗ A when B·T > 1 (with a single Δ_t it scales A entry for entry: a gate product, not counted). The same
    by loop or by scan: a scan rearranges the recurrence's element-wise products, not these.

    >>> mamba_block_multiplications(10, 4, 3, 2, 2, 1)  # 10 * (4·16 + 8·7 + 1·8 + 2·8·3 + 8·3 + 8·4) + 11·8·2
    2496

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Gu & Dao 2023 (Mamba), Figure 3 and Algorithm 2.
    """
    T = require_positive_int("T", T)
    d_model, N, k, E, R, batch = _mamba_sizes(d_model, d_state, d_conv, expand, dt_rank, batch)
    per_position = d_model * 2 * E + E * (R + 2 * N) + R * E + 2 * E * N + E * d_model
    return batch * (T * per_position + (T + k - 1) * E * k) + _decay_outer_product(batch * T, E * N)


def _decay_outer_product(rows: int, channel_states: int) -> int:
    """Δ_t ⊗ A over ``rows`` positions (B·T): an outer product (one multiplication per element) when there is more
    than one Δ_t; with one, Δ scales A's E·N entries one for one, a gate product (not counted; seqlab.measure.work's
    rule: a product is counted when it forms more pairs than either factor holds)."""
    return rows * channel_states if rows > 1 else 0


@closed_form("2dE + E(R + 5N) + RE + Ed + E k", "Mamba")
def mamba_block_step_multiplications(d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2,
                                     dt_rank: int | None = None, *, batch: int = 1) -> int:
    """Multiplications of one decode step of a Mamba block, whatever the position: the block's per-position
    terms (Δ_t ⊗ A counted only for a batch of more than one, as in :func:`mamba_block_multiplications`) and the
    convolution over its k-wide window, E·k: a product summed over the window is a contraction (issue 35, kind 5),
    as the forward pass's depthwise ``conv1d`` is.

    >>> mamba_block_step_multiplications(4, 3, 2, 2, 1)  # 4·16 + 8·7 + 1·8 + 8·3 + 8·3 + 8·4 + 8·2
    224
    >>> mamba_block_step_multiplications(4, 3, 2, 2, 1, batch=2)  # 2 · (224 + 8·3)
    496

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Gu & Dao 2023 (Mamba), §3.4 (the recurrent mode: constant time per step).
    """
    d_model, N, k, E, R, batch = _mamba_sizes(d_model, d_state, d_conv, expand, dt_rank, batch)
    return batch * (d_model * 2 * E + E * (R + 2 * N) + R * E + 2 * E * N + E * d_model + E * k) + \
        _decay_outer_product(batch, E * N)


# --- A checkpoint's decode step and its cache (issue 24): the forms ``seqlab decode --model`` checks -------------
# Shape letters: L layers (of the kind named), H query heads, H_kv key/value heads, d_h head width, d = d_model,
# d_ff the feed-forward width, E the SSM's inner width, N its state size, b bytes per element, t the position.


@closed_form("2 L H_kv d_head t b  (per batch row)", "§3.2.2")
def kv_cache_bytes(t: int, layers: int, kv_heads: int, head_dim: int, element_bytes: int, *, batch: int = 1) -> int:
    """Bytes of a key/value cache holding t positions: keys and values, (B, H_kv, t, d_h) each, in every layer.

    2 · L · H_kv · d_h · t · b · B. Grouped-query attention stores H_kv < H heads; d_h is the config's
    ``head_dim`` (not always d_model / H).

    >>> kv_cache_bytes(12, 2, 2, 16, 4)  # 2 · 2 · 2 · 16 · 12 · 4
    6144

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Vaswani et al. 2017, §3.2.2 (one key and one value per head and position); Ainslie et al. 2023 (GQA).
    """
    for name, value in (("t", t), ("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim),
                        ("element_bytes", element_bytes), ("batch", batch)):
        require_positive_int(name, value)
    return 2 * layers * kv_heads * head_dim * t * element_bytes * batch


@closed_form("L (w_k + w_v) t b", "§3.2.2")
def keys_values_cache_bytes(t: int, layers: int, key_width: int, value_width: int, element_bytes: int, *,
                            batch: int = 1) -> int:
    """Bytes of a key/value cache whose keys and values differ in width: L · (w_k + w_v) · t · b · B.

    w_k = H_kv·d_k and w_v = H_kv·d_v elements per position; :func:`kv_cache_bytes` is the case w_k = w_v =
    H_kv·d_h. A layer whose heads or widths differ from its neighbours' (a per-layer config) is a group of one.

    >>> keys_values_cache_bytes(12, 1, 2 * 16, 2 * 8, 4)  # (32 + 16) · 12 · 4
    2304

    Raises:
        SeqlabError: a size that is not an integer >= 1 (a width may be 0: a cache of keys only).

    Source: Vaswani et al. 2017, §3.2.2 (d_k and d_v are separate sizes).
    """
    for name, value in (("t", t), ("layers", layers), ("element_bytes", element_bytes), ("batch", batch)):
        require_positive_int(name, value)
    for name, value in (("key_width", key_width), ("value_width", value_width)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SeqlabError(N_("{name} must be an integer >= 0, received {value!r}"), name=name, value=value,
                              parameter=name)
    return layers * (key_width + value_width) * t * element_bytes * batch


@closed_form("L (d_c + d_R) t b  (latent attention)", "DeepSeek-V2")
def latent_kv_cache_bytes(t: int, layers: int, latent_rank: int, rope_dim: int, element_bytes: int, *,
                          batch: int = 1) -> int:
    """Bytes of a multi-head latent attention (MLA) cache: per position and layer the compressed key/value latent
    c_KV (d_c elements) and the one rotary key k_R shared by every head (d_R elements), whatever the head count.

    L · (d_c + d_R) · t · b · B — against 2·L·H·d_h·t·b for multi-head attention.

    >>> latent_kv_cache_bytes(12, 2, 16, 4, 4)  # 2 · (16 + 4) · 12 · 4
    1920

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: DeepSeek-AI 2024 (DeepSeek-V2), §2.1.2–2.1.3 (low-rank key-value joint compression; decoupled rotary
    key): "only c_KV and k_R need to be cached", (d_c + d_R)·l elements per token.
    """
    for name, value in (("t", t), ("layers", layers), ("latent_rank", latent_rank), ("rope_dim", rope_dim),
                        ("element_bytes", element_bytes), ("batch", batch)):
        require_positive_int(name, value)
    return layers * (latent_rank + rope_dim) * t * element_bytes * batch


@closed_form("H keys", "ALiBi")
def alibi_bias_multiplications(heads: int, keys: int) -> int:
    """Multiplications of building ALiBi's bias for one new token: each head's slope times each key's position,
    an outer product of H slopes and the positions of the keys: H · keys.

    >>> alibi_bias_multiplications(4, 16)
    64

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Press et al. 2022 (ALiBi), §3 (the bias m·[−(i − 1), …, −1, 0], one slope m per head).
    """
    require_positive_int("heads", heads)
    require_positive_int("keys", keys)
    return heads * keys


@closed_form("min(t, w)", "Mistral")
def sliding_window_cache_rows(t: int, window: int) -> int:
    """Positions whose keys a sliding-window cache holds in memory after the step at position t: min(t, w).

    The new token attends over min(t, w) keys (itself and w − 1 before it). transformers'
    ``DynamicSlidingWindowLayer`` then keeps a *view* of the last w − 1 rows, the ones the next token will need;
    the view keeps the whole storage of the concatenation alive, so min(t, w) rows stay allocated while
    min(t, w − 1) are visible.

    >>> sliding_window_cache_rows(4, 8), sliding_window_cache_rows(16, 8)
    (4, 8)

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Jiang et al. 2023 (Mistral 7B), §2 (rolling buffer cache of w entries).
    """
    require_positive_int("t", t)
    require_positive_int("window", window)
    return min(t, window)


@closed_form("L E (d_conv + N) b", "Mamba")
def ssm_state_bytes(layers: int, d_inner: int, d_state: int, d_conv: int, element_bytes: int, *,
                    batch: int = 1) -> int:
    """Bytes of a Mamba state whatever t: per layer a convolution window (B, E, d_conv) and an SSM state (B, E, N).

    L · E · (d_conv + N) · b · B. The recurrence itself needs only d_conv − 1 past inputs; transformers keeps
    d_conv columns (the oldest is overwritten before it is read).

    >>> ssm_state_bytes(2, 64, 4, 4, 4)  # 2 · 64 · (4 + 4) · 4
    4096

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Gu & Dao 2023 (Mamba), §3.4 (recurrent mode: a state of E·N per layer, plus the convolution's window).
    """
    for name, value in (("layers", layers), ("d_inner", d_inner), ("d_state", d_state), ("d_conv", d_conv),
                        ("element_bytes", element_bytes), ("batch", batch)):
        require_positive_int(name, value)
    return layers * d_inner * (d_conv + d_state) * element_bytes * batch


@closed_form("L ((H P + 2 G N) d_conv + H P N) b", "Mamba-2")
def mamba2_state_bytes(layers: int, heads: int, head_dim: int, groups: int, d_state: int, d_conv: int,
                       element_bytes: int, *, batch: int = 1) -> int:
    """Bytes of a Mamba-2 state whatever t: per layer a convolution window over x, B and C, (B, E + 2·G·N, d_conv),
    and an SSM state of N per channel, (B, H, P, N), with E = H·P.

    L · ((H·P + 2·G·N) · d_conv + H·P·N) · b · B.

    >>> mamba2_state_bytes(2, 4, 16, 1, 4, 4, 4)  # 2 · ((64 + 8) · 4 + 64 · 4) · 4
    4352

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Dao & Gu 2024 (Mamba-2, "Transformers are SSMs"), §7 (the SSD layer: heads of width P sharing one
    scalar decay, B and C shared by G groups, convolved with x).
    """
    for name, value in (("layers", layers), ("heads", heads), ("head_dim", head_dim), ("groups", groups),
                        ("d_state", d_state), ("d_conv", d_conv), ("element_bytes", element_bytes),
                        ("batch", batch)):
        require_positive_int(name, value)
    inner = heads * head_dim
    return layers * ((inner + 2 * groups * d_state) * d_conv + inner * d_state) * element_bytes * batch


@closed_form("L (2 d + 3 d_att) b", "RWKV")
def rwkv_state_bytes(layers: int, d_model: int, d_attention: int, element_bytes: int, *, batch: int = 1) -> int:
    """Bytes of an RWKV-4 state whatever t: per layer two token-shift inputs (time mix and channel mix, d each) and
    the WKV numerator, denominator and running maximum (d_att each).

    L · (2d + 3 d_att) · b · B.

    >>> rwkv_state_bytes(2, 32, 32, 4)  # 2 · (64 + 96) · 4
    1280

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Peng et al. 2023 (RWKV), §3 and its reference code (the state's five rows per layer).
    """
    for name, value in (("layers", layers), ("d_model", d_model), ("d_attention", d_attention),
                        ("element_bytes", element_bytes), ("batch", batch)):
        require_positive_int(name, value)
    return layers * (2 * d_model + 3 * d_attention) * element_bytes * batch


@closed_form("d H d_h + 2 d H_kv d_h + H d_h d + 2 H d_h keys", "§3.2.2")
def decoder_attention_step_multiplications(keys: int, d_model: int, heads: int, kv_heads: int, head_dim: int) -> int:
    """Multiplications of one attention layer's decode step over ``keys`` cached keys (the new one included).

    d·H·d_h (query) + 2·d·H_kv·d_h (key, value) + H·d_h·d (output) + 2·H·d_h·keys (q·Kᵀ and α·V). The score
    products run over all H query heads: grouped keys are repeated to H heads before the products.

    >>> decoder_attention_step_multiplications(13, 32, 4, 2, 16)  # 2048 + 2048 + 2048 + 1664
    7808

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Vaswani et al. 2017, §3.2.2; lesson claim L6 (a query over t keys: t(d_k + d_v)).
    """
    for name, value in (("keys", keys), ("d_model", d_model), ("heads", heads), ("kv_heads", kv_heads),
                        ("head_dim", head_dim)):
        require_positive_int(name, value)
    width, kv_width = heads * head_dim, kv_heads * head_dim
    return d_model * width + 2 * d_model * kv_width + width * d_model + 2 * width * keys


@closed_form("2 d d_ff, or 3 d d_ff gated", "§3.3")
def mlp_step_multiplications(d_model: int, d_ff: int, gated: bool) -> int:
    """Multiplications of one position through a feed-forward block: 2·d·d_ff, or 3·d·d_ff with a gate (SwiGLU).

    >>> mlp_step_multiplications(32, 128, False), mlp_step_multiplications(32, 48, True)
    (8192, 4608)

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Vaswani et al. 2017, §3.3; Shazeer 2020 (GLU variants: gate, up and down projections).
    """
    require_positive_int("d_model", d_model)
    require_positive_int("d_ff", d_ff)
    return (3 if gated else 2) * d_model * d_ff


@closed_form("mamba_block_step + E d_conv", "Mamba")
def hf_mamba_step_multiplications(d_model: int, d_inner: int, d_state: int, d_conv: int, dt_rank: int) -> int:
    """Multiplications of one decode step of a transformers Mamba mixer (its PyTorch path, batch 1).

    :func:`mamba_block_step_multiplications` + E·d_conv: transformers runs the step's convolution as a
    ``conv1d`` over the d_conv cached columns and the new one, which gives two outputs (one is dropped), E·d_conv
    multiplications each, where seqlab's own block contracts its window once (a product summed over it).

    >>> hf_mamba_step_multiplications(32, 64, 4, 4, 2)  # 4096 + 640 + 128 + 512 + 2048 + 512
    7936

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Gu & Dao 2023 (Mamba), §3.4; transformers' ``MambaMixer`` decode path.
    """
    require_positive_int("d_inner", d_inner)
    require_positive_int("d_conv", d_conv)
    if d_inner % d_model:
        raise SeqlabError(N_("d_inner must be a multiple of d_model, received {d_inner} and {d_model}"),
                          d_inner=d_inner, d_model=d_model)
    return mamba_block_step_multiplications(d_model, d_state, d_conv, d_inner // d_model, dt_rank) \
        + d_inner * d_conv


@closed_form("d (2E + 2GN + H) + 2 (E + 2GN) d_conv + 2EN + Ed", "Mamba-2")
def hf_mamba2_step_multiplications(d_model: int, heads: int, head_dim: int, groups: int, d_state: int,
                                   d_conv: int) -> int:
    """Multiplications of one decode step of a transformers Mamba-2 mixer (its PyTorch path, batch 1).

    Input projection d·(2E + 2·G·N + H) (x, the gate z, B, C and one Δ per head), the step's convolution over the
    E + 2·G·N convolved channels (run as a ``conv1d`` giving two outputs, one dropped: 2·(E + 2·G·N)·d_conv), the
    state update's outer product Δ·x ⊗ B (E·N), the read-out h·C (E·N) and the output projection E·d, with
    E = H·P. The gated norm and the decay are element-wise.

    >>> hf_mamba2_step_multiplications(32, 4, 16, 1, 4, 4)  # 4480 + 576 + 256 + 256 + 2048
    7616

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Dao & Gu 2024 (Mamba-2), §7; transformers' ``Mamba2Mixer`` decode path without the fused kernels.
    """
    for name, value in (("d_model", d_model), ("heads", heads), ("head_dim", head_dim), ("groups", groups),
                        ("d_state", d_state), ("d_conv", d_conv)):
        require_positive_int(name, value)
    inner = heads * head_dim
    convolved = inner + 2 * groups * d_state
    return (d_model * (inner + convolved + heads) + 2 * convolved * d_conv + 2 * inner * d_state
            + inner * d_model)


@closed_form("4 d d_att + 2 d d_ff + d^2", "RWKV")
def rwkv_step_multiplications(d_model: int, d_attention: int, d_ff: int) -> int:
    """Multiplications of one RWKV-4 layer's decode step: time mix (key, value, receptance d·d_att each, output
    d_att·d) and channel mix (key d·d_ff, value d_ff·d, receptance d·d); the WKV update is element-wise.

    4·d·d_att + 2·d·d_ff + d².

    >>> rwkv_step_multiplications(32, 32, 64)  # 4096 + 4096 + 1024
    9216

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Peng et al. 2023 (RWKV), §3 (time mixing and channel mixing).
    """
    for name, value in (("d_model", d_model), ("d_attention", d_attention), ("d_ff", d_ff)):
        require_positive_int(name, value)
    return 4 * d_model * d_attention + 2 * d_model * d_ff + d_model * d_model


@closed_form("N + L t d_attn", "Kaplan")
def kaplan_step_multiplications(non_embedding_parameters: int, layers: int, t: int, d_attention: int) -> int:
    """Kaplan et al.'s forward cost per token in multiplications: N + L·t·d_attn (their 2N + 2·n_layer·n_ctx·d_attn
    FLOPs, halved).

    It counts the q·Kᵀ products of the context but not α·V (another L·t·d_attn), and leaves the de-embedding
    (d·V) out of N: a measured step exceeds it by L·t·d_attn + d·V, less the biases' and norms' parameters.

    >>> kaplan_step_multiplications(24576, 2, 13, 32)
    25408

    Raises:
        SeqlabError: a size that is not an integer >= 1.

    Source: Kaplan et al. 2020 (Scaling laws), Table 1.
    """
    for name, value in (("non_embedding_parameters", non_embedding_parameters), ("layers", layers), ("t", t),
                        ("d_attention", d_attention)):
        require_positive_int(name, value)
    return non_embedding_parameters + layers * t * d_attention


__all__ = ["CLOSED_FORMS", "GATES", "LINEAR_ATTENTION_FORMS", "RECURRENCE_FORMS", "SLIDING_WINDOW_FORMS",
           "ClosedForm", "closed_form", "closed_form_table", "closed_forms"]
__all__ += list(CLOSED_FORMS)  # every registered closed form is public
