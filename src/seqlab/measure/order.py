"""Order: does a sequence layer notice when its input rows, or its key-value pairs, are shuffled?

Inside an attention score e_ij = a(q_i, k_j) the indices only pick vectors and the mix
c_i = sum_j alpha_ij v_j is a sum, so attention is blind to order (L10):

* permuting the input rows permutes the output rows the same way and changes no number
  (permutation *equivariance*: f(x[pi]) == f(x)[pi]);
* permuting the (k_j, v_j) pairs together leaves every output unchanged
  (key-value permutation *invariance*: attend(q, k[pi], v[pi]) == attend(q, k, v)).

A recurrence reads in order and fails both; so does any layer that adds a position-dependent
term. The check draws one seeded permutation that is never the identity and reports the largest
change next to a tolerance scaled to the output and the dtype, because the permuted sums are
added in another order and differ by rounding.

Below float64 the tolerance is wide (64 eps · sqrt(n): 4e-5 in float32 at T = 32), wide enough to hide
a real position-dependent term. So a change within it is not taken as "holds" at float32 (or bfloat16,
float16); the layer is run again in float64 when that is possible — the ``reference`` callable you pass;
else an ``nn.Module``, copied and cast; else any other callable, called on the inputs cast to float64
(kept only if it returns float64) — which gives both its own rounding band (the largest
|f(x) - f64(x)|, times :data:`ROUNDING_MARGIN`) and a float64 verdict. The verdict (:attr:`OrderResult.verdict`):

* ``"does not hold"`` — the change exceeds the tolerance; or it exceeds the layer's own rounding band
  and the float64 rerun confirms it;
* ``"holds"`` — the change is within the tolerance, and (below float64) the float64 rerun agrees;
* ``"cannot tell at float32"`` — below float64, the change is within the rounding band and either no
  float64 rerun could be made or the rerun sees a change the float32 run cannot resolve.

:attr:`OrderResult.holds` (and ``equivariant`` / ``invariant``) carries the same three values as a
``bool | None``: True, False, and None for "cannot tell" — never a bool the measurement did not reach
(:func:`holds_of`).

Side inputs aligned with the rows (a padding mask, position ids, any per-position tensor) are permuted
with x when passed as ``aligned={keyword: (tensor, dim)}``: the layer is then called as
``layer(x, keyword=tensor)`` and ``layer(x[pi], keyword=tensor.index_select(dim, pi))``, so the test asks
f(x[pi], m[pi]) == f(x, m)[pi]. A side input left out of ``aligned`` (closed over by the callable) stays
where it is, and a layer that reads it then sees the rows move against it.

Shapes: T rows (positions) of x, T_q queries, T_k keys/values, d_k, d_v widths; an aligned tensor has
T entries along its ``dim`` (e.g. a key padding mask (1, T) with dim 1, position ids (T,) with dim 0).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Rounding allowance per unit of eps, see :func:`tolerance`.
TOLERANCE_ULPS = 64
#: The rounding band below float64: this many times the layer's own rounding max |f(x) - f64(x)|
#: (a change is the difference of two rounded outputs, each off by up to that much).
ROUNDING_MARGIN = 4.0

HOLDS = "holds"
FAILS = "does not hold"
#: The third verdict's prefix: ``"cannot tell at float32"``.
CANNOT_TELL = "cannot tell at "

_ROWS = "rows"
_PAIRS = "key-value pairs"


@dataclass(frozen=True)
class OrderResult:
    """Largest change of a layer's output under one permutation, and the verdict.

    Attributes:
        kind: ``"rows"`` (input rows permuted, equivariance tested) or ``"key-value pairs"``
            ((k, v) pairs permuted together, invariance tested).
        permutation: the permutation pi used, as a tuple of 0-based indices (never identity).
        max_abs_change: for rows max |f(x[pi]) - f(x)[pi]|; for pairs
            max |attend(q, k[pi], v[pi]) - attend(q, k, v)|; in output units.
        max_abs_output: max |output| of the unpermuted call, the scale of the tolerance.
        tolerance: the allowance for rounding, see :func:`tolerance`.
        holds: the verdict as a ``bool | None``: True for "holds", False for "does not hold", None for
            "cannot tell at <dtype>" (see :func:`holds_of`).
        dtype: dtype of the output, e.g. ``"float32"``.
        seed: seed the permutation was drawn with.
        verdict: ``"holds"``, ``"does not hold"`` or ``"cannot tell at <dtype>"`` (see the module).
        rounding: below float64, the layer's own rounding max |f(x) - f64(x)| when a float64 rerun was
            made, else None.
        float64_change, float64_tolerance: the same check rerun in float64, or None.
    """

    kind: str
    permutation: tuple[int, ...]
    max_abs_change: float
    max_abs_output: float
    tolerance: float
    holds: bool | None
    dtype: str
    seed: int
    verdict: str = ""
    rounding: float | None = None
    float64_change: float | None = None
    float64_tolerance: float | None = None

    @property
    def equivariant(self) -> bool | None:
        """Rows permuted: the output rows moved the same way and nothing else changed (None: cannot tell)."""
        if self.kind != _ROWS:
            raise SeqlabError(N_("equivariant applies to kind 'rows', received kind {kind!r}"), kind=self.kind)
        return self.holds

    @property
    def invariant(self) -> bool | None:
        """(k, v) pairs permuted: every output stayed the same (None: cannot tell)."""
        if self.kind != _PAIRS:
            raise SeqlabError(N_("invariant applies to kind {pairs!r}, received kind {kind!r}"), pairs=_PAIRS,
                              kind=self.kind)
        return self.holds


def holds_of(said: str) -> bool | None:
    """An order verdict as ``bool | None``: True for "holds", False for "does not hold", None for "cannot tell".

    >>> holds_of("holds"), holds_of("does not hold"), holds_of("cannot tell at float32")
    (True, False, None)

    Raises:
        SeqlabError: a string that is not one of the three verdicts.
    """
    if said == HOLDS:
        return True
    if said == FAILS:
        return False
    if said.startswith(CANNOT_TELL):
        return None
    raise SeqlabError(N_("expected an order verdict ({holds!r}, {fails!r} or '{cannot_tell}<dtype>'), received "
                         "{said!r}"), holds=HOLDS, fails=FAILS, cannot_tell=CANNOT_TELL, said=said)


def tolerance(max_abs_output: float, n: int, dtype: torch.dtype) -> float:
    """Allowance for rounding: 64 * eps(dtype) * max(1, max_abs_output) * sqrt(n).

    A permuted input is summed in another order, so each output may move by a few units in the
    last place of the output scale, growing like sqrt(n) with the n terms summed.

    >>> tolerance(1.0, 4, torch.float64) == 64 * 2.0 ** -52 * 2
    True

    Args:
        max_abs_output: largest |output| (output units).
        n: number of permuted rows or pairs.
        dtype: floating dtype of the output.

    Returns:
        The tolerance, in output units.
    """
    eps = float(torch.finfo(dtype).eps)
    return TOLERANCE_ULPS * eps * max(1.0, max_abs_output) * math.sqrt(n)


def _permutation(n: int, seed: int) -> Tensor:
    """A seeded random permutation of range(n), n >= 2, never the identity: (n,) int64."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    if torch.equal(perm, torch.arange(n)):
        perm = perm.roll(1)  # a cyclic shift: not the identity for n >= 2
    return perm


def _check_common(name: str, t: object, seed: object) -> Tensor:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SeqlabError(N_("seed must be an integer, received {seed!r}"), seed=seed)
    if not isinstance(t, Tensor) or t.dim() != 2:
        got = f"{t.dim()}-dim tensor" if isinstance(t, Tensor) else type(t).__name__
        raise SeqlabError(N_("{name} must be a 2-dim tensor, received {got}"), name=name, got=got)
    return t


def _output(out: object, rows: int, who: str) -> Tensor:
    y = out[0] if isinstance(out, tuple) else out
    if not isinstance(y, Tensor) or y.dim() < 1 or y.shape[0] != rows:
        got = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
        raise SeqlabError(N_("{who} must return a tensor with {rows} rows, received {got}"), who=who, rows=rows,
                          got=got)
    if not y.dtype.is_floating_point:
        raise SeqlabError(N_("{who} must return a floating tensor, received {dtype}"), who=who, dtype=y.dtype)
    if not bool(torch.isfinite(y).all()):
        raise SeqlabError(N_("{who} returned non-finite values; order cannot be judged"), who=who)
    return y


@dataclass(frozen=True)
class _Rerun:
    """The check rerun in float64: its change and tolerance, and the low-precision output's own rounding."""

    change: float
    tolerance: float
    rounding: float


def _twin(function: Callable[..., object], reference: Callable[..., object] | None) -> Callable[..., object]:
    """A float64 version of ``function``: ``reference`` if given, a float64 copy of an ``nn.Module``, else the
    callable itself, to be called on float64 inputs (:func:`_rerun` keeps it only if it returns float64)."""
    if reference is not None:
        return reference
    if isinstance(function, torch.nn.Module):
        return copy.deepcopy(function).to(torch.float64)

    def on_float64(*args: object, **kwargs: object) -> object:
        try:
            return function(*args, **kwargs)
        except Exception as error:  # noqa: BLE001  whatever it raises on float64 inputs, it does not take them
            raise SeqlabError(N_("the callable does not run on float64 inputs: {error}"), error=error) from error
    return on_float64


def verdict(max_change: float, tol: float, dtype: torch.dtype, rerun: _Rerun | None) -> str:
    """The order verdict from the measured change, its tolerance, and the float64 rerun (if any).

    >>> verdict(1e-6, 4e-5, torch.float32, None)
    'cannot tell at float32'
    >>> verdict(1e-6, 4e-5, torch.float32, _Rerun(change=1e-6, tolerance=1e-13, rounding=5e-8))
    'does not hold'
    >>> verdict(1e-7, 4e-5, torch.float32, _Rerun(change=1e-16, tolerance=1e-13, rounding=5e-8))
    'holds'
    """
    if max_change > tol:
        return FAILS
    if torch.finfo(dtype).eps <= torch.finfo(torch.float64).eps:
        return HOLDS
    if rerun is None:
        return CANNOT_TELL + str(dtype).removeprefix("torch.")
    if rerun.change <= rerun.tolerance:
        return HOLDS
    if max_change > ROUNDING_MARGIN * rerun.rounding:
        return FAILS
    return CANNOT_TELL + str(dtype).removeprefix("torch.")


def _result(kind: str, perm: Tensor, change: Tensor, y: Tensor, n: int, seed: int,
            rerun: _Rerun | None = None) -> OrderResult:
    max_change = float(change.abs().max()) if change.numel() else 0.0
    max_out = float(y.abs().max()) if y.numel() else 0.0
    tol = tolerance(max_out, n, y.dtype)
    said = verdict(max_change, tol, y.dtype, rerun)
    return OrderResult(
        kind=kind,
        permutation=tuple(int(i) for i in perm),
        max_abs_change=max_change,
        max_abs_output=max_out,
        tolerance=tol,
        holds=holds_of(said),
        dtype=str(y.dtype).removeprefix("torch."),
        seed=seed,
        verdict=said,
        rounding=None if rerun is None else rerun.rounding,
        float64_change=None if rerun is None else rerun.change,
        float64_tolerance=None if rerun is None else rerun.tolerance,
    )


def _rerun(make_twin: Callable[[], Callable[..., object] | None], y: Tensor, n: int,
           run: Callable[[Callable[..., object]], tuple[Tensor, Tensor]]) -> _Rerun | None:
    """Rerun the check with the float64 twin: ``run(twin)`` -> (output, change), both float64; None if it fails.

    Only below float64, and only when a twin exists. A twin that fails (a callable that does not take
    float64), returns another shape, or returns another dtype than float64 (a callable that casts back
    down computes no better) leaves the verdict unresolved rather than failing the measurement.
    """
    if torch.finfo(y.dtype).eps <= torch.finfo(torch.float64).eps:
        return None
    twin = make_twin()
    if twin is None:
        return None
    try:
        with torch.no_grad():
            y64, change64 = run(twin)
    except (RuntimeError, TypeError, ValueError, SeqlabError):
        return None
    if y64.shape != y.shape or y64.dtype != torch.float64:
        return None
    scale = float(y64.abs().max()) if y64.numel() else 0.0
    return _Rerun(change=float(change64.abs().max()) if change64.numel() else 0.0,
                  tolerance=tolerance(scale, n, torch.float64),
                  rounding=float((y.to(torch.float64) - y64).abs().max()) if y.numel() else 0.0)


def _aligned(aligned: Mapping[str, tuple[Tensor, int]] | None, T: int) -> dict[str, tuple[Tensor, int]]:
    """Check ``aligned``: keyword -> (tensor, dim) with T entries along dim; returns it with dim made >= 0."""
    if aligned is None:
        return {}
    if not isinstance(aligned, Mapping):
        raise SeqlabError(N_("aligned must map keyword names to (tensor, dim) pairs, received {aligned_class}"),
                          aligned_class=type(aligned).__name__)
    checked = {}
    for name, pair in aligned.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SeqlabError(N_("aligned keys must be keyword names, received {name!r}"), name=name)
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Tensor)
                and isinstance(pair[1], int) and not isinstance(pair[1], bool)):
            raise SeqlabError(N_("aligned[{name!r}] must be a (tensor, dim) pair, received {pair!r:.80}"), name=name,
                              pair=pair)
        tensor, dim = pair
        if not -tensor.dim() <= dim < tensor.dim():
            raise SeqlabError(N_("aligned[{name!r}]: dim must be in [{value}, {value2}] for its {dim}-dim tensor, "
                                 "received {dim2}"), name=name, value=-tensor.dim(), value2=tensor.dim() - 1,
                              dim=tensor.dim(), dim2=dim)
        dim %= tensor.dim()
        if tensor.shape[dim] != T:
            raise SeqlabError(N_("aligned[{name!r}] must have T = {T} entries along dim {dim} (the rows of x), "
                                 "received shape {shape}"), name=name, T=T, dim=dim, shape=tuple(tensor.shape))
        checked[name] = (tensor, dim)
    return checked


def measure_order(layer: Callable[..., Tensor], x: Tensor, *, seed: int = 0,
                  reference: Callable[..., Tensor] | None = None,
                  aligned: Mapping[str, tuple[Tensor, int]] | None = None) -> OrderResult:
    """Permute the T input rows and report max |f(x[pi]) - f(x)[pi]| (0 for attention).

    >>> r = measure_order(lambda x: x.cumsum(0), torch.eye(3, dtype=torch.float64))
    >>> r.kind, len(r.permutation), r.equivariant
    ('rows', 3, False)

    A padding mask aligned with the rows moves with them (row 2 is padding here):

    >>> mask = torch.tensor([True, True, False])
    >>> f = lambda x, keep: x * keep[:, None]
    >>> measure_order(f, torch.eye(3, dtype=torch.float64), aligned={"keep": (mask, 0)}).equivariant
    True

    Args:
        layer: maps x (T, d_in) to y (T, ...); a tuple result is read at element 0. Run in
            ``eval()`` mode: dropout breaks equivariance. Called twice under ``no_grad`` (four times below
            float64, with the rerun), as ``layer(x, **side)`` with the ``aligned`` side inputs.
        x: input rows, shape (T, d_in), T >= 2, any dtype the layer accepts.
        seed: seed of the permutation pi of the T rows (pi is never the identity).
        reference: the same layer computing in float64 (takes x as float64), used below float64 to
            resolve a change within the tolerance; default: a float64 copy when ``layer`` is an
            ``nn.Module``, else ``layer`` itself called on float64 x, kept when it returns float64; when
            neither runs, such a change is "cannot tell at <dtype>".
        aligned: side inputs aligned with the rows, by keyword: ``{name: (tensor, dim)}`` where
            ``tensor.shape[dim] == T`` (a key padding mask (1, T) with dim 1, position ids (T,) or (1, T),
            a per-position float tensor (T, k) with dim 0). Each is passed as ``name=tensor`` and permuted
            along ``dim`` by the same pi as x; a floating one is cast to float64 with x for the rerun, any
            other (bool, integer) is passed as it is. None: no side input.

    Returns:
        An :class:`OrderResult` of kind ``"rows"``; ``verdict`` says holds / does not hold /
        cannot tell, judged against :func:`tolerance` with n = T and, below float64, the rerun;
        ``equivariant`` is True, False or None (cannot tell).

    Raises:
        SeqlabError: x not 2-D, T < 2, an ``aligned`` entry that is not a (tensor, dim) pair with T
            entries along dim, or the layer's output lacks T rows, changes shape under the
            permutation, or is not finite.

    Source: lesson claim L10 (shuffled rows come out shuffled the same way, unchanged).
    """
    _check_common("x", x, seed)
    T = x.shape[0]
    if T < 2:
        raise SeqlabError(N_("x must have T >= 2 rows to permute, received T = {T}"), T=T)
    side = _aligned(aligned, T)
    perm = _permutation(T, seed)

    def inputs(rows: Tensor, shuffled: bool, dtype: torch.dtype | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        """x (or x[pi]) and every side input (permuted along its dim), floating ones cast to ``dtype``."""
        moved = {}
        for name, (tensor, dim) in side.items():
            t = tensor.index_select(dim, perm.to(tensor.device)) if shuffled else tensor
            moved[name] = t.to(dtype) if dtype is not None and t.is_floating_point() else t
        r = rows.to(dtype) if dtype is not None else rows
        return (r[perm.to(r.device)] if shuffled else r), moved

    with torch.no_grad():
        rows, kwargs = inputs(x, False)
        y = _output(layer(rows, **kwargs), T, "layer")  # (T, ...)
        rows, kwargs = inputs(x, True)
        y_perm = _output(layer(rows, **kwargs), T, "layer")  # (T, ...)
    if y_perm.shape != y.shape:
        raise SeqlabError(N_("layer output shape changed under permutation: {shape} vs {shape2}"), shape=tuple(y.shape),
                          shape2=tuple(y_perm.shape))
    change = y_perm - y[perm.to(y.device)]  # (T, ...)

    def run(twin: Callable[..., Tensor]) -> tuple[Tensor, Tensor]:
        rows64, kwargs64 = inputs(x, False, torch.float64)
        y64 = _output(twin(rows64, **kwargs64), T, "reference")  # (T, ...)
        rows64, kwargs64 = inputs(x, True, torch.float64)
        return y64, _output(twin(rows64, **kwargs64), T, "reference") - y64[perm.to(y64.device)]

    rerun = _rerun(lambda: _twin(layer, reference) if x.is_floating_point() else reference, y, T, run)
    return _result(_ROWS, perm, change, y, T, seed, rerun)


def measure_key_value_order(
    attend: Callable[[Tensor, Tensor, Tensor], Tensor],
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    seed: int = 0,
    reference: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None,
) -> OrderResult:
    """Permute the (k, v) pairs together; report max |attend(q, k[pi], v[pi]) - attend(q, k, v)|.

    >>> attend = lambda q, k, v: torch.softmax(q @ k.T, dim=-1) @ v
    >>> q = k = v = torch.eye(4, dtype=torch.float64)
    >>> r = measure_key_value_order(attend, q, k, v)
    >>> r.kind, r.invariant
    ('key-value pairs', True)

    Args:
        attend: maps q (T_q, d_k), k (T_k, d_k), v (T_k, d_v) to an output with T_q rows; a
            tuple result is read at element 0. Called twice under ``no_grad``.
        q: queries, shape (T_q, d_k); not permuted.
        k: keys, shape (T_k, d_k), T_k >= 2.
        v: values, shape (T_k, d_v); row j is paired with key j.
        seed: seed of the permutation pi of the T_k pairs (pi is never the identity).
        reference: ``attend`` computing in float64, as for :func:`measure_order` (default: a float64
            copy when ``attend`` is an ``nn.Module``, else ``attend`` itself on float64 q, k, v, kept when it
            returns float64).

    Returns:
        An :class:`OrderResult` of kind ``"key-value pairs"``; ``verdict`` is its verdict,
        judged against :func:`tolerance` with n = T_k and, below float64, the rerun; ``invariant`` is
        True, False or None (cannot tell).

    Raises:
        SeqlabError: q, k or v not 2-D, k and v with different row counts, T_k < 2, or the
            output lacks T_q rows, changes shape, or is not finite.

    Source: lesson claim L10 (indices only select vectors; the mix is a sum).
    """
    _check_common("q", q, seed)
    _check_common("k", k, seed)
    _check_common("v", v, seed)
    T_k = k.shape[0]
    if v.shape[0] != T_k:
        raise SeqlabError(N_("k and v must have the same number of rows, received {T_k} and {shape}"), T_k=T_k,
                          shape=v.shape[0])
    if T_k < 2:
        raise SeqlabError(N_("k and v must have T_k >= 2 rows to permute, received T_k = {T_k}"), T_k=T_k)
    perm = _permutation(T_k, seed)
    with torch.no_grad():
        out = _output(attend(q, k, v), q.shape[0], "attend")  # (T_q, d_v)
        out_perm = _output(
            attend(q, k[perm.to(k.device)], v[perm.to(v.device)]), q.shape[0], "attend"
        )  # (T_q, d_v)
    if out_perm.shape != out.shape:
        raise SeqlabError(N_("attend output shape changed under permutation: {shape} vs {shape2}"),
                          shape=tuple(out.shape), shape2=tuple(out_perm.shape))
    def run(twin: Callable[[Tensor, Tensor, Tensor], Tensor]) -> tuple[Tensor, Tensor]:
        q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
        out64 = _output(twin(q64, k64, v64), q.shape[0], "reference")  # (T_q, d_v)
        moved = _output(twin(q64, k64[perm.to(k.device)], v64[perm.to(v.device)]), q.shape[0], "reference")
        return out64, moved - out64

    floating = all(t.is_floating_point() for t in (q, k, v))
    rerun = _rerun(lambda: _twin(attend, reference) if floating else reference, out, T_k, run)
    return _result(_PAIRS, perm, out_perm - out, out, T_k, seed, rerun)
