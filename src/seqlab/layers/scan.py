"""Linear recurrences h_t = a_t ⊙ h_{t-1} + b_t, by a loop (T steps) or a parallel prefix scan (log T steps).

The lesson's recurrence (L1) waits T steps because tanh sits between one step and the next. Drop the
nonlinearity and keep the state update element-wise, and each step is an affine map h ↦ a_t ⊙ h + b_t.
Affine maps compose associatively,

    (a_2, b_2) ∘ (a_1, b_1) = (a_2 ⊙ a_1,  a_2 ⊙ b_1 + b_2),

so every prefix h_t = (a_t, b_t) ∘ … ∘ (a_1, b_1) applied to h_0 is a *prefix scan* of that operator,
which a parallel machine computes in O(log T) rounds (Blelloch 1990, "Prefix sums and their
applications", §1.4 on recurrence equations; Hillis & Steele 1986, "Data parallel algorithms", the
doubling algorithm for sums of prefixes). This is the trick behind S5, LRU and Mamba's selective scan
(Gu & Dao 2023, §3.3.2; Smith et al. 2023, "Simplified state space layers", S5).

Two parallel methods, both written with plain tensor ops (slicing, ``torch.cat``, ``mul``, ``add``) so
that seqlab's dispatch-mode tracers (:func:`seqlab.measure.trace.measure_span`) see every round:

* ``"hillis_steele"``: ⌈log₂ T⌉ rounds; round k combines every position t ≥ 2^k with position t - 2^k.
  Work O(T log T) element-wise products, span 2 ops per round (one product, one sum on the b chain).
* ``"blelloch"``: the work-efficient recursive form: combine neighbouring pairs (T/2 maps), scan the
  pairs recursively, then fill in the positions between. Work O(T), span 4 ops per halving.

:func:`sequential_scan` is the loop reference: T steps in a row, span 2T ops.

Shape letters: T positions along ``dim``; every other dimension is carried element-wise.
Element-wise products are not counted as multiplications in seqlab's unit (see
:mod:`seqlab.measure.work`): a scan costs *no* counted multiplications, only span and element-wise ops.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_

__all__ = ["SCAN_METHODS", "associative_scan", "scan_path_steps", "scan_products", "scan_rounds", "sequential_scan"]

#: The parallel methods of :func:`associative_scan`.
SCAN_METHODS = ("hillis_steele", "blelloch")


def scan_rounds(T: int, method: str = "hillis_steele") -> int:
    """Rounds of a parallel scan over T positions: ⌈log₂ T⌉ (Hillis–Steele), or halvings (Blelloch).

    Blelloch's recursion halves ⌈T/2⌉ until one position is left, which is also ⌈log₂ T⌉ levels.

    >>> [scan_rounds(T) for T in (1, 2, 3, 16, 17)]
    [0, 1, 2, 4, 5]

    Raises:
        SeqlabError: T is not an integer >= 1 or the method is unknown.
    """
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise SeqlabError(N_("T must be an integer >= 1, received {T!r}"), T=T, parameter="T")
    _check_method(method)
    return (T - 1).bit_length()


def scan_path_steps(T: int, reach: int = 1) -> int:
    """Rounds and hops of the least path from position 1 to T through a Hillis–Steele scan: ⌈log₂ T⌉ + popcount(T − 1).

    Every round adds an op on each position's own chain; the path from 1 to T also jumps back 2^k positions in
    the rounds k of the binary digits of the distance T − 1. A layer that reaches ``reach`` − 1 positions back
    before the scan (Mamba's causal convolution of kernel d_conv) starts it from the nearest of those, the
    fewest hops: min over s < reach of popcount(T − 1 − s). Measured paths are this plus a fixed number of ops.

    >>> [scan_path_steps(T) for T in (2, 8, 9, 16, 17)]  # 1+1, 3+3, 4+1, 4+4, 5+1
    [2, 6, 5, 8, 6]
    >>> scan_path_steps(16, reach=4)  # 4 rounds; 15, 14, 13, 12 have 4, 3, 3, 2 binary ones
    6

    Raises:
        SeqlabError: T or reach not an integer >= 1, or reach >= T.

    Source: Hillis & Steele 1986, the doubling algorithm (round k combines t with t − 2^k).
    """
    T, reach = require_positive_int("T", T), require_positive_int("reach", reach)
    if reach >= T:
        raise SeqlabError(N_("reach must be below T, received reach={reach}, T={T}"), reach=reach, T=T,
                          parameter="reach")
    return (T - 1).bit_length() + min(bin(T - 1 - s).count("1") for s in range(reach))


def scan_products(T: int, method: str = "hillis_steele") -> int:
    """Element-wise products per channel of one scan over T positions: the extra work a parallel scan pays.

    ``"loop"``: T - 1 (a_t ⊙ h_{t-1} for t >= 2). ``"hillis_steele"``: every round multiplies all T rows of b,
    and all T rows of a except in the last round, (2⌈log₂ T⌉ - 1)·T — the shifted-in identity rows are
    multiplied too. ``"blelloch"``: with m = T rounded up to even, m products to pair up, m/2 to fill in the
    even rows, plus the products of the recursion on m/2 maps: about 3T. Not multiplications in seqlab's
    unit (element-wise; see :mod:`seqlab.measure.work`), and with no initial state.

    >>> [scan_products(1024, method) for method in ("loop", "hillis_steele", "blelloch")]  # 1023, 19 * 1024
    [1023, 19456, 3069]

    Raises:
        SeqlabError: T is not an integer >= 1 or the method is unknown.
    """
    if method == "loop":
        scan_rounds(T)  # validates T
        return T - 1
    rounds = scan_rounds(T, method)
    if method == "hillis_steele":
        return max(2 * rounds - 1, 0) * T
    products = 0
    while T > 1:
        m = T + T % 2
        products += m + m // 2
        T = m // 2
    return products


def _check_method(method: object) -> None:
    if method not in SCAN_METHODS:
        raise SeqlabError(N_("method must be one of {scan_methods}; received {method!r}"),
                          scan_methods=', '.join(SCAN_METHODS), method=method, parameter="method")


def _prepare(a: object, b: object, dim: int, initial: object) -> tuple[Tensor, Tensor]:
    """(a, b) with T moved to dim 0, a expanded to b's shape and h_0 folded into b_1; refuse bad input."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise SeqlabError(N_("a and b must be tensors, received {a_class} and {b_class}"), a_class=type(a).__name__,
                          b_class=type(b).__name__)
    if not b.is_floating_point() or a.dtype != b.dtype:
        raise SeqlabError(N_("a and b must share one floating dtype, received {dtype} and {dtype2}"), dtype=a.dtype,
                          dtype2=b.dtype)
    if b.dim() == 0 or not -b.dim() <= dim < b.dim():
        raise SeqlabError(N_("dim must be in [{value}, {value2}] for b of shape {shape}, received {dim}"),
                          value=-b.dim(), value2=b.dim() - 1, shape=tuple(b.shape), dim=dim, parameter="dim")
    try:
        a = a.expand_as(b)  # a view: a constant decay broadcasts over positions and batch
    except RuntimeError:
        raise SeqlabError(N_("a of shape {shape} does not broadcast to b's shape {shape2}"), shape=tuple(a.shape),
                          shape2=tuple(b.shape)) from None
    if b.shape[dim] == 0:
        raise SeqlabError(N_("the scanned dimension {dim} must hold at least one position, received b of shape "
                             "{shape}"), dim=dim, shape=tuple(b.shape))
    a, b = a.movedim(dim, 0), b.movedim(dim, 0)  # (T, …)
    if initial is not None:
        if not isinstance(initial, Tensor) or initial.dtype != b.dtype:
            raise SeqlabError(N_("initial must be a {dtype} tensor of shape {shape}, received {received}"),
                              dtype=b.dtype, shape=tuple(b.shape[1:]),
                              received=getattr(initial, 'dtype', type(initial).__name__))
        try:
            first = a[:1] * initial.unsqueeze(0) + b[:1]  # (1, …): h_1 = a_1 ⊙ h_0 + b_1
        except RuntimeError:
            raise SeqlabError(N_("initial of shape {shape} does not broadcast to {shape2}"), shape=tuple(initial.shape),
                              shape2=tuple(b.shape[1:])) from None
        if first.shape != b[:1].shape:
            raise SeqlabError(N_("initial of shape {shape} does not broadcast to {shape2}"), shape=tuple(initial.shape),
                              shape2=tuple(b.shape[1:]))
        b = torch.cat([first, b[1:]])  # (T, …)
    return a, b


def sequential_scan(a: Tensor, b: Tensor, dim: int = 1, *, initial: Tensor | None = None) -> Tensor:
    """The loop: h_t = a_t ⊙ h_{t-1} + b_t for t = 1 … T, one step after another (span 2T ops).

    >>> a, b = torch.full((1, 4, 1), 0.5), torch.ones(1, 4, 1)
    >>> sequential_scan(a, b).flatten().tolist()  # 1, 1.5, 1.75, 1.875
    [1.0, 1.5, 1.75, 1.875]

    Args:
        a: decays, broadcastable to ``b``'s shape (a constant per channel, or one per position).
        b: inputs (…, T, …), T along ``dim``; floating.
        dim: the position dimension (default 1: batch-first (B, T, d)).
        initial: h_0, shaped as ``b`` without ``dim`` (default zeros).

    Returns:
        h, the shape of ``b``: every h_t.

    Raises:
        SeqlabError: non-tensors, dtypes that differ, a bad ``dim``, shapes that do not broadcast, or T = 0.

    Source: the lesson's recurrence without its tanh (L1); Blelloch 1990, §1.4 (first-order recurrences).
    """
    a, b = _prepare(a, b, dim, initial)  # (T, …)
    h = b[0]  # (…): h_1 (h_0 already folded in)
    states = [h]
    for t in range(1, b.shape[0]):
        h = a[t] * h + b[t]  # (…): waits for h_{t-1}
        states.append(h)
    return torch.stack(states).movedim(0, dim)  # (…, T, …)


def _shift(x: Tensor, k: int, fill: float) -> Tensor:
    """(T, …) -> (T, …): rows moved down by k, the first k rows ``fill`` (a constant: no dependency)."""
    pad = torch.full((k, *x.shape[1:]), fill, dtype=x.dtype, device=x.device)  # (k, …)
    return torch.cat([pad, x[:-k]])  # (T, …)


def _hillis_steele(a: Tensor, b: Tensor) -> Tensor:
    """Inclusive scan of (T, …) maps: round k composes each map with the one 2^k before it (identity past 0)."""
    k = 1
    while k < b.shape[0]:
        b = a * _shift(b, k, 0.0) + b  # (T, …): b_t ← a_t ⊙ b_{t-k} + b_t
        if 2 * k < b.shape[0]:  # the last round needs no new decays
            a = a * _shift(a, k, 1.0)  # (T, …): a_t ← a_t ⊙ a_{t-k}
        k *= 2
    return b


def _blelloch(a: Tensor, b: Tensor) -> Tensor:
    """Inclusive scan of (T, …) maps, work-efficient: pairs up, recurse on T/2 maps, fill in the even rows."""
    T = b.shape[0]
    if T == 1:
        return b
    if T % 2:  # pad with the identity map (a = 1, b = 0) to an even length
        a = torch.cat([a, torch.ones_like(a[:1])])  # (T + 1, …)
        b = torch.cat([b, torch.zeros_like(b[:1])])  # (T + 1, …)
    a_even, a_odd, b_even, b_odd = a[0::2], a[1::2], b[0::2], b[1::2]  # (T/2, …) each: positions 2i, 2i + 1
    pair_a = a_odd * a_even  # (T/2, …): map of positions 2i then 2i + 1
    pair_b = a_odd * b_even + b_odd  # (T/2, …)
    h_odd = _blelloch(pair_a, pair_b)  # (T/2, …): h at positions 2i + 1
    before = _shift(h_odd, 1, 0.0)  # (T/2, …): h at positions 2i - 1 (zero before the start)
    h_even = a_even * before + b_even  # (T/2, …): h at positions 2i
    return torch.stack([h_even, h_odd], dim=1).flatten(0, 1)[:T]  # (T, …): interleaved back


def associative_scan(a: Tensor, b: Tensor, *, dim: int = 1, method: str = "hillis_steele",
                     initial: Tensor | None = None) -> Tensor:
    """Every h_t = a_t ⊙ h_{t-1} + b_t at once, by a parallel prefix scan in ⌈log₂ T⌉ rounds.

    Equal to :func:`sequential_scan` up to rounding (the products are grouped differently).

    >>> a, b = torch.full((1, 4, 1), 0.5), torch.ones(1, 4, 1)
    >>> associative_scan(a, b).flatten().tolist()  # 1, 1.5, 1.75, 1.875
    [1.0, 1.5, 1.75, 1.875]
    >>> from seqlab.measure.trace import measure_span
    >>> [measure_span(associative_scan, torch.rand(1, T, 1), torch.rand(1, T, 1)).ops  # 2 ops x log2 T rounds
    ...  for T in (16, 256)]
    [8, 16]

    Args:
        a: decays, broadcastable to ``b``'s shape.
        b: inputs (…, T, …), T along ``dim``; floating.
        dim: the position dimension (default 1: batch-first (B, T, d)).
        method: ``"hillis_steele"`` (T log T work, span 2 ops per round) or ``"blelloch"`` (T work,
            4 ops per round).
        initial: h_0, shaped as ``b`` without ``dim`` (default zeros).

    Returns:
        h, the shape of ``b``.

    Raises:
        SeqlabError: as :func:`sequential_scan`, or an unknown method.

    Source: Hillis & Steele 1986 (prefix doubling); Blelloch 1990, §1.4; used by Gu & Dao 2023 (Mamba), §3.3.2.
    """
    _check_method(method)
    a, b = _prepare(a, b, dim, initial)  # (T, …)
    scan = _hillis_steele if method == "hillis_steele" else _blelloch
    return scan(a, b).movedim(0, dim)  # (…, T, …)
