"""The dispatch mode that carries path distances through a forward pass, op by op (see ``paths``).

Beside every storage the pass writes, :class:`PathTracer` keeps an int32 tensor of shape
(2·S, storage elements): for each unit (products, then ops) and source position s, the least number of
steps from x_s to that element, :data:`~seqlab.measure.distances.UNREACHABLE` where there is no
dependency. Each dispatched op maps the distances of its inputs to its outputs by a rule of
:mod:`seqlab.measure.path_rules`; views read the storage through their own strides, so views and in-place
writes need no rule. An op without a rule falls back to "every output element depends on every input
element" and is named in :attr:`PathTracer.fallbacks`.

Per-op cost (issue 17): what kind an op is (view, movement, product, reduction, element-wise, other) is
decided once per op (``functools.cache``), arguments are bound by a schema read once per op, tensors are
found without a pytree walk, and whether a constant holds an exact 0 or an infinity is computed once per
storage, view and version (a recurrence reads the same weight at every step).

Tensor identity: distances are kept per storage, keyed by the storage's data pointer. Every storage
written (or cached) during the trace is held alive in :attr:`PathTracer.alive` until the trace ends, so a
pointer is never reused for another storage while it is a key; tensors that come from outside the trace
(weights, the input) are alive for the caller anyway.
"""

from __future__ import annotations

import functools
from collections import Counter

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.measure import path_rules as rules
from seqlab.measure.distance_store import DistanceStore
from seqlab.measure.distances import _ROW_FORM, DTYPE, narrow, widen
from seqlab.measure.ops import is_contraction, is_movement, op_name, tensors_in

#: The two units, in the order of their rows: rows [0, S) count products, rows [S, 2S) count ops.
UNITS = ("products", "ops")

VIEW, MOVEMENT, PRODUCT, REDUCTION, POINTWISE, OTHER = range(6)


@functools.cache
def op_kind(func: torch._ops.OpOverload) -> int:
    """Which rule an op takes, decided once per op: VIEW, MOVEMENT, PRODUCT, REDUCTION, POINTWISE or OTHER.

    >>> op_kind(torch.ops.aten.mm.default) == PRODUCT, op_kind(torch.ops.aten.view.default) == VIEW
    (True, True)
    """
    if func.is_view or torch.Tag.inplace_view in func.tags:
        return VIEW
    if is_movement(func):
        return MOVEMENT
    if is_contraction(func):
        return PRODUCT
    if rules.is_reduction(func):
        return REDUCTION
    return POINTWISE if rules.is_pointwise(func) else OTHER


class PathTracer(TorchDispatchMode):
    """Carries one distance tensor per written storage (both units in its rows), op by op.

    >>> tracer, x = PathTracer(sources=1, budget_bytes=1e6), torch.ones(3, 2)
    >>> tracer.store.write(x, torch.tensor([0, 0]).reshape(2, 1, 1).expand(2, 3, 2).to(DTYPE))
    >>> with tracer:
    ...     y = (x @ torch.ones(2, 2)).tanh()
    >>> tracer.store(y)[:, 0, 0].tolist()  # (products, ops): one product, then tanh
    [1, 2]

    Args:
        sources: source positions traced in this pass. budget_bytes: the most bytes of distances it may hold.
        positions: keep distances at position level where an op proves them uniform along the features
            (exact; see :mod:`seqlab.measure.distance_store`).

    Raises:
        SeqlabError: the distances would exceed ``budget_bytes``.
    """

    def __init__(self, sources: int, budget_bytes: float, positions: bool = False) -> None:
        super().__init__()
        self.per_unit = sources
        self.store = DistanceStore(len(UNITS) * sources, budget_bytes, sources, positions)
        self.fallbacks: Counter[str] = Counter()
        self._op_cost = torch.tensor([0] * sources + [1] * sources, dtype=DTYPE)  # one op: the ops rows only
        self._op_costs: dict[int, Tensor] = {}

    def __enter__(self):
        self._row_form = _ROW_FORM.set(self.store.positions)  # rules take the row form only at position level
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _ROW_FORM.reset(self._row_form)

    @property
    def used_bytes(self) -> int:
        """Bytes of distances held now (a pass frees none: this is also the trace's peak)."""
        return self.store.used_bytes

    def step_op(self, d: Tensor) -> Tensor:
        """One compute op further: +1 in the ops rows (on the row form when ``d`` is uniform along features)."""
        rows = narrow(d)
        base = d if rows is None else rows
        cost = self._op_costs.get(base.dim())
        if cost is None:
            cost = self._op_costs[base.dim()] = self._op_cost.reshape(-1, *([1] * (base.dim() - 1)))
        return d + cost if rows is None or rows is d else widen(rows + cost, d.shape[1:])

    @staticmethod
    def step_product(d: Tensor) -> Tensor:
        """One matrix product further: +1 in both units (a product is an op too)."""
        rows = narrow(d)
        return d + 1 if rows is None or rows is d else widen(rows + 1, d.shape[1:])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        kind = op_kind(func)
        if kind == VIEW:
            return out  # shares its base's storage: read through its own strides
        outs = list(tensors_in(out if isinstance(out, (list, tuple)) else (out,)))
        if not outs:
            return out
        for tensor, value in zip(outs, self._propagate(kind, func, args, kwargs, outs), strict=True):
            self.store.write(tensor, value)
        return out

    def _propagate(self, kind: int, func, args, kwargs, outs: list[Tensor]) -> list[Tensor | None]:
        read, rows = self.store, self.store.rows
        step = self.step_product if kind == PRODUCT else self.step_op
        if kind == MOVEMENT:
            moved = rules.movement(func, args, kwargs, outs, read, rows)
            if moved is not None:
                return moved
        elif kind == PRODUCT and len(outs) == 1:
            result = rules.contraction(func, args, kwargs, outs[0], read, step, rows)
            if result is not NotImplemented:
                return [result]
        elif kind == REDUCTION:
            return rules.reduction(func, args, kwargs, outs, read, step, rows)
        elif kind == POINTWISE and len(outs) == 1:
            return [rules.pointwise(func, args, kwargs, outs[0], read, step, rows)]
        self.fallbacks[op_name(func)] += 1
        inputs = [read(t) for t in [*tensors_in(args), *tensors_in(kwargs.values())]]
        spread = [rules.everything(inputs, o.shape, rows) for o in outs]
        return [None if d is None else step(d) for d in spread]
