"""The dispatch mode that carries path distances through a forward pass, op by op (see ``paths``).

Beside every storage the pass writes, :class:`PathTracer` keeps an int32 tensor of shape
(2·S, storage elements): for each unit (products, then ops) and source position s, the least number of
steps from x_s to that element, :data:`~seqlab.measure.distances.UNREACHABLE` where there is no
dependency. Each dispatched op maps the distances of its inputs to its outputs by a rule of
:mod:`seqlab.measure.path_rules`; views read the storage through their own strides, so views and in-place
writes need no rule. Fills and creations (``full_like``, ``ones_like``, ``zeros``, ``arange``, random draws) write
constants: their fill value is a value, never an element id.

Coverage by design (issue 21): the rules cover a small primitive set (views, movement, products, reductions,
element-wise ops). An op without a rule is, in this order,

1. **decomposed** — traced through PyTorch's own decomposition (``torch._decomp``; its parts come back to
   this mode; they count as the one op they make up, and the products among them as products), named in
   :attr:`PathTracer.decomposed`;
2. **derived** — its dependence taken from its own Jacobian on the concrete inputs
   (:mod:`seqlab.measure.jacobian_rule`), named in :attr:`PathTracer.derived`;
3. **refused** — named in :attr:`PathTracer.fallbacks` and treated as "every output element depends on every
   input element": the figures through it are then a bound (dependence over-stated, paths under-stated),
   and every report says so instead of printing them as measured.

An in-place op without a rule is decomposed or derived through its out-of-place twin, before it writes.

Kinds by design (issue 35): a product followed by a sum over a dim both factors step through is one matrix product
(:class:`~seqlab.measure.ops.ProductLedger`); a DFT is a product (its DFT matrix), and a product of spectra closed
by an inverse DFT is read as the convolution it is (:class:`~seqlab.measure.jacobian_rule.SpectralProducts`); a
quantised linear takes the rule of the float product it stands for (:func:`~seqlab.measure.ops.float_twin`);
higher-order ops (FlexAttention, ``cond``, ``while_loop``) run through their eager kernels, their parts traced
(:func:`~seqlab.measure.ops.run_higher_order`); a tensor subclass with a dispatch of its own (a jagged nested
tensor) computes through its dense parts, which come back to the tracer.

Per-op cost (issue 17): what kind an op is (view, movement, product, reduction, element-wise, other) is
decided once per op (``functools.cache``), arguments are bound by a schema read once per op, tensors are
found without a pytree walk, and whether a constant holds an exact 0 or an infinity is computed once per
storage, view and version (a recurrence reads the same weight at every step). Where a movement op sends each element
(its id map, :func:`~seqlab.measure.path_rules.movement`) depends on the op, the shapes and the other arguments
alone: it is worked out once per signature in a pass and kept by the store (issue 34, item 2); an op that moves
elements along named dims and is defined for any leading dims (``cat``, ``stack``, the split copies, ``index_select``,
``flip``, ``roll``) runs on the distances themselves, no ids at all. What the element-wise rule decides about an op
(selection, product rule, zero-free proof, sum with infinities) is kept per op as well.

Tensor identity: distances are kept per storage, keyed by the storage's data pointer. Every storage
written (or cached) during the trace is held alive in :attr:`PathTracer.alive` until the trace ends, so a
pointer is never reused for another storage while it is a key; tensors that come from outside the trace
(weights, the input) are alive for the caller anyway.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.measure import jacobian_rule
from seqlab.measure import path_rules as rules
from seqlab.measure.dispatch import OWN_RULE, passed_on
from seqlab.measure.distance_store import DistanceStore
from seqlab.measure.distances import _ROW_FORM, DTYPE, UNITS, narrow, widen
from seqlab.measure.modes import EngineMode
from seqlab.measure.ops import (
    CREATION_NAMES,
    ProductLedger,
    decomposition_of,
    float_twin,
    is_contraction,
    is_movement,
    kept_decisions,
    op_name,
    tensors_in,
)

VIEW, MOVEMENT, PRODUCT, REDUCTION, POINTWISE, OTHER, CONSTANT = range(7)

#: Element-wise ops PyTorch does not tag ``pointwise``: rrelu's output element reads its input element (and the
#: noise buffer, a constant drawn apart); re-running it to take a Jacobian would draw other noise.
_POINTWISE_UNTAGGED = frozenset({"rrelu_with_noise", "rrelu_with_noise_", "rrelu_with_noise_functional"})


@functools.cache
def op_kind(func: torch._ops.OpOverload) -> int:
    """Which rule an op takes, decided once per op: VIEW, MOVEMENT, PRODUCT, REDUCTION, POINTWISE, CONSTANT
    or OTHER (no rule).

    >>> op_kind(torch.ops.aten.mm.default) == PRODUCT, op_kind(torch.ops.aten.view.default) == VIEW
    (True, True)
    >>> op_kind(torch.ops.aten.full_like.default) == CONSTANT
    True
    """
    if func.is_view or torch.Tag.inplace_view in func.tags:
        return VIEW
    if func.overloadpacket.__name__ in CREATION_NAMES:
        return CONSTANT
    if func.overloadpacket.__name__ in _POINTWISE_UNTAGGED or func.overloadpacket is torch.ops.aten.where:
        return POINTWISE  # where's scalar overloads (where(c, x, -inf)) are untagged
    if is_movement(func):
        return MOVEMENT
    if is_contraction(func) and not rules.is_reduction(func):  # a DFT is both: its rule reads whole dims
        return PRODUCT
    if rules.is_reduction(func):
        return REDUCTION
    return POINTWISE if rules.is_pointwise(func) else OTHER


class PathTracer(EngineMode):
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

    supports_higher_order_operators = True  # run through their eager parts (ops.run_higher_order)

    def __init__(self, sources: int, budget_bytes: float, positions: bool = False) -> None:
        super().__init__()
        self.per_unit = sources
        self.store = DistanceStore(len(UNITS) * sources, budget_bytes, sources, positions)
        self.fallbacks: Counter[str] = Counter()
        self.decomposed: Counter[str] = Counter()
        self.derived: Counter[str] = Counter()
        self._costs = {  # (op, product) cost per row, outside and inside a decomposition
            False: (torch.tensor([0] * sources + [1] * sources, dtype=DTYPE), torch.ones(2 * sources, dtype=DTYPE)),
            True: (torch.zeros(2 * sources, dtype=DTYPE), torch.tensor([1] * sources + [0] * sources, dtype=DTYPE)),
        }
        self.products = ProductLedger()  # element-wise products a later sum makes contractions (one product then)
        self.spectra = jacobian_rule.SpectralProducts()  # DFT chains: a product of spectra is a convolution
        self._inside = 0  # depth of decompositions being traced: their parts are one op of the op they make up
        self._shaped: dict[tuple[bool, bool, int], Tensor] = {}
        self._row_forms: list = []

    def __enter__(self):
        # rules take the row form only at position level; re-entered for a decomposition's parts
        self._row_forms.append(_ROW_FORM.set(self.store.positions))
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _ROW_FORM.reset(self._row_forms.pop())

    @property
    def used_bytes(self) -> int:
        """Bytes of distances held now (a pass frees none: this is also the trace's peak)."""
        return self.store.used_bytes

    def _cost(self, product: bool, dims: int) -> Tensor:
        key = (self._inside > 0, product, dims)
        cost = self._shaped.get(key)
        if cost is None:
            cost = self._shaped[key] = self._costs[key[0]][int(product)].reshape(-1, *([1] * (dims - 1)))
        return cost

    def _step(self, d: Tensor, product: bool) -> Tensor:
        rows = narrow(d)
        base = d if rows is None else rows
        cost = self._cost(product, base.dim())
        return d + cost if rows is None or rows is d else widen(rows + cost, d.shape[1:])

    def step_op(self, d: Tensor) -> Tensor:
        """One compute op further: +1 in the ops rows (on the row form when ``d`` is uniform along features).
        Inside a decomposition its parts cost nothing: the op they make up takes its one step at the end."""
        return self._step(d, False)

    def step_product(self, d: Tensor) -> Tensor:
        """One matrix product further: +1 in both units (a product is an op too); inside a decomposition
        +1 product only (the products inside an op are real products; the op is one op)."""
        return self._step(d, True)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        answer = passed_on(self, func, types, args, kwargs)
        if answer is not OWN_RULE:
            return answer
        prepared = self.prepare(func, args, kwargs)
        out = func(*args, **kwargs)
        self.record(func, args, kwargs, out, prepared)
        return out

    def prepare(self, func, args: tuple, kwargs: dict) -> tuple:
        """What must be read before an op runs: its kind, the distances of an op without a rule that writes its
        arguments (its functional form, on the arguments as they are), and the generator's state for a random
        op. Returns what :meth:`record` takes once the op has run."""
        kind, may_accumulate, seeded, functional = _plan(func)
        if may_accumulate and rules.accumulates(func, args, kwargs):
            kind = OTHER  # a movement that sums what it moves: no id can go through it
        early = None
        # the generator's state before an op the tracer may run again (a functional form, a decomposition): those
        # runs replay the op's draws (SDPA's dropout, rrelu's noise), so that its distances are those of the values
        # it really drew, and the pass draws what it draws untraced
        draws = torch.get_rng_state() if kind == OTHER or seeded else None
        if kind == OTHER and functional is not None:
            # an op without a rule that writes an argument: its functional form, on the arguments before it writes
            early = self._without_rule(functional, args, kwargs, None, refuse=False)
            if draws is not None:
                torch.set_rng_state(draws)
        _check_strided(func, args if _flat_tensors(args) else tensors_in(args))
        if kwargs:
            _check_strided(func, tensors_in(kwargs.values()))
        return kind, early, draws

    def record(self, func, args: tuple, kwargs: dict, out: Any, prepared: tuple) -> None:
        """Write the distances of what an op returned (``out``), by its rule (see :meth:`prepare`)."""
        kind, early, draws = prepared
        replay = None if draws is None else (draws, torch.get_rng_state())
        outs = _outputs(out)
        _check_strided(func, outs)
        if kind == VIEW:
            if _aliases(outs, args):
                return  # shares its base's storage: read through its own strides
            kind = MOVEMENT  # a view op that copied (reshape of a transposed tensor inside a decomposition)
        if not outs:
            return
        if kind == CONSTANT:
            if self._reads_data(func, args, kwargs):  # linspace(start, end) with traced tensor ends
                values = self._without_rule(func, args, kwargs, outs)
            else:
                values = [self._filled(func, args, kwargs, tensor) for tensor in outs]
        elif early is not None and len(early) >= len(outs):
            values = early[:len(outs)]  # a ``_functional`` form returns the written arguments after the outputs
        else:
            values = None if kind == OTHER else self._propagate(kind, func, args, kwargs, outs)
            if values is None:  # no rule applies to these arguments: a functional op is decomposed or derived
                values = self._without_rule(func, args, kwargs, outs, replay=replay)
        for tensor, value in zip(outs, values, strict=True):
            self.store.write(tensor, value)

    def _reads_data(self, func, args, kwargs) -> bool:
        """Whether a creation reads the values of a traced tensor argument (``linspace(start, end)`` with tensor
        ends); ``self`` of a ``*_like`` / ``new_*`` op gives only its shape, and a fill's value is read by
        :meth:`_filled`."""
        bound = rules.arguments(func, args, kwargs)
        return any(isinstance(value, Tensor) and self.store(value) is not None
                   for name, value in bound.items() if name not in ("self", "value"))

    def _filled(self, func, args, kwargs, tensor: Tensor) -> Tensor | None:
        """A fill or a creation writes constants (its fill value is a value, never an element id); ``fill_`` with
        a tensor value depends on that value."""
        value = rules.arguments(func, args, kwargs).get("value")
        d = self.store(value) if isinstance(value, Tensor) else None
        return None if d is None else rules.broadcast_min([d], tensor.shape, self.store.rows)

    def _without_rule(self, func, args, kwargs, outs: list[Tensor] | None, refuse: bool = True,
                      replay: tuple[Tensor, Tensor] | None = None) -> list[Tensor | None] | None:
        """An op no rule handles: PyTorch's decomposition, else its Jacobian on these inputs, else refused.

        ``outs``: the op's outputs once it has run (a functional op leaves its arguments as they were); None
        for the out-of-place twin of an in-place op, run before the op (its shapes from a meta run). A refused
        op (``refuse``; else None is returned) is named in :attr:`fallbacks` and treated as all-to-all: every
        figure through it is then a bound (dependence over-stated, path lengths under-stated). ``replay``: a random
        op's generator states before and after it ran (its decomposition draws the same values, then the state
        is where the op left it).
        """
        if not func._schema.is_mutable:
            values = self._decomposition(func, args, kwargs, replay)
            if values is not None and (outs is None or len(values) == len(outs)):
                self.decomposed[op_name(func)] += 1
                return values
            shapes = outs if outs is not None else _outputs_of(func, args, kwargs)
            if torch.Tag.nondeterministic_seeded in func.tags:
                shapes = None  # a random op run again is another op: its Jacobian would not be this call's
            leaves, rebuild = rules.flat_arguments(args, kwargs)
            derived = None if shapes is None else jacobian_rule.derive(func, leaves, rebuild, self.store,
                                                                       shapes, self.store.rows)
            if derived is not None:
                self.derived[op_name(func)] += 1
                step = self.step_product if op_kind(func) == PRODUCT else self.step_op
                return [None if d is None else step(d) for d in derived]
        if not refuse or outs is None:
            return None
        self.fallbacks[op_name(func)] += 1
        inputs = [self.store(t) for t in [*tensors_in(args), *tensors_in(kwargs.values())]]
        spread = [rules.everything(inputs, o.shape, self.store.rows) for o in outs]
        return [None if d is None else self.step_op(d) for d in spread]

    def _decomposition(self, func, args, kwargs,
                       replay: tuple[Tensor, Tensor] | None = None) -> list[Tensor | None] | None:
        """Trace PyTorch's own decomposition of ``func`` (its parts come back to this mode); None if it has none
        or it does not apply. The parts are one op of ``func``; the products among them are real products.
        ``replay``: see :meth:`_without_rule`."""
        decompose = decomposition_of(func)
        if decompose is None:
            return None
        before = (Counter(self.fallbacks), Counter(self.decomposed), Counter(self.derived))
        self._inside += 1
        if replay is not None:
            torch.set_rng_state(replay[0])
        try:
            with self:
                produced = decompose(*args, **kwargs)
        except torch.OutOfMemoryError:
            raise
        except Exception:  # noqa: BLE001 - a decomposition that does not apply to these arguments
            self.fallbacks, self.decomposed, self.derived = before
            return None
        finally:
            self._inside -= 1
            if replay is not None:
                torch.set_rng_state(replay[1])
        return [None if d is None else self.step_op(d) for d in map(self.store, _outputs(produced))]

    def _propagate(self, kind: int, func, args, kwargs, outs: list[Tensor]) -> list[Tensor | None] | None:
        """The rule's distances for each output, or None when no rule applies to these arguments."""
        read, rows = self.store, self.store.rows
        step = self.step_product if kind == PRODUCT else self.step_op
        twin = float_twin(func, args, kwargs) if kind == PRODUCT and len(outs) == 1 else None
        if twin is not None:  # a quantised linear: the float product it stands for, reshaped to its output
            twin_func, twin_args, shape = twin
            result = rules.contraction(twin_func, twin_args, {}, torch.empty(shape, device="meta"), read, step, rows)
            return None if result is NotImplemented else [result.reshape(rows, *outs[0].shape)]
        if kind == MOVEMENT:
            return rules.movement(func, args, kwargs, outs, read, rows)
        if kind == PRODUCT and len(outs) == 1:
            result = rules.contraction(func, args, kwargs, outs[0], read, step, rows, addend_step=self.step_op)
            return None if result is NotImplemented else [result]
        if kind == REDUCTION:
            if self.products.reduction(func, args, kwargs)[1] or is_contraction(func):
                step = self.step_product  # a sum that makes a product a contraction, a DFT: one matrix product
            if len(outs) == 1 and rules.is_inverse_transform(func, args, kwargs):
                closed = self.spectra.inverse(func, args, kwargs, outs[0], read, rows, self.step_op, self.step_product)
                if closed is not None:  # a convolution by the convolution theorem, read by value: exact
                    return [closed]
            result = rules.reduction(func, args, kwargs, outs, read, step, rows)
            if len(outs) == 1:
                self.spectra.forward(func, args, kwargs, outs[0])
            if rules.is_inverse_transform(func, args, kwargs) and any(d is not None for d in result):
                self.fallbacks[op_name(func)] += 1  # structural: exact cancellations unseen, the figures a bound
            return result
        if kind == POINTWISE and len(outs) == 1:
            self.products.product(func, args, outs[0])  # remembered for a sum that may contract it
            self.spectra.pointwise(func, args, outs[0])  # a product of spectra: a convolution
            return [rules.pointwise(func, args, kwargs, outs[0], read, step, rows)]
        return None


_PLANS: dict[int, tuple[int, bool, bool, torch._ops.OpOverload | None]] = kept_decisions({})  # id of the op -> plan


def _plan(func: torch._ops.OpOverload) -> tuple[int, bool, bool, torch._ops.OpOverload | None]:
    """What the tracer decides about an op once, kept by the op's identity (an op lives as long as the process):
    its kind (:func:`op_kind`), whether it may accumulate what it moves (then its arguments are asked), whether it
    draws random numbers, and the functional form of a mutating op that may have no rule (else None)."""
    plan = _PLANS.get(id(func))
    if plan is None:
        kind = op_kind(func)
        # a mutating op's functional form: for an op without a rule, or a movement that turns out to accumulate
        functional = _functional_form(func) if func._schema.is_mutable and kind in (OTHER, MOVEMENT) else None
        plan = _PLANS[id(func)] = (kind, kind == MOVEMENT and rules.may_accumulate(func),
                                   torch.Tag.nondeterministic_seeded in func.tags, functional)
    return plan


_STRIDED = torch.strided


def _check_strided(func: torch._ops.OpOverload, tensors) -> None:
    """Refuse an op on a sparse (or other non-strided) tensor: the distance store keeps one entry per stored
    element of a dense tensor, and a sparse tensor's elements are not where its strides say.

    Raises:
        SeqlabError: the op and the layout it met.
    """
    for tensor in tensors:
        if isinstance(tensor, Tensor) and tensor.layout != _STRIDED:
            raise SeqlabError(N_("the path tracer follows dense (strided) tensors only; {op_name} met a tensor of "
                                 "layout {layout}: pass dense tensors (Tensor.to_dense())"),
                              op_name=op_name(func), layout=str(tensor.layout).removeprefix('torch.'),
                              parameter="layer")


@functools.cache
def _functional_form(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The form of a mutating op that writes nothing: its out-of-place twin (``foo_`` -> ``foo``), or PyTorch's
    ``foo_functional`` (``rrelu_with_noise`` -> ``rrelu_with_noise_functional``, which returns the written
    arguments after the outputs); None if it has neither."""
    twin = rules.out_of_place(func)
    if twin is not None:
        return twin
    packet = getattr(torch.ops.aten, f"{func.overloadpacket.__name__}_functional", None)
    return None if packet is None else getattr(packet, func._overloadname, None)


def _aliases(outs: list[Tensor], args) -> bool:
    """Whether every output of a view op (``outs``: its tensors) shares the storage of one of its tensor arguments."""
    inputs = {t.untyped_storage().data_ptr() for t in tensors_in(args)}
    return all(t.untyped_storage().data_ptr() in inputs for t in outs)


def _outputs(out) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]  # the common case, without a walk
    return list(tensors_in(out if isinstance(out, (list, tuple)) else (out,)))


def _flat_tensors(args: tuple) -> bool:
    """Whether no argument is a list or a tuple: then :func:`_check_strided` may walk ``args`` itself (it looks at
    tensors only)."""
    for a in args:
        if type(a) is list or type(a) is tuple:
            return False
    return True


def _outputs_of(func, args, kwargs) -> list[Tensor] | None:
    """The outputs ``func`` would give (shapes and dtypes), from a run on meta copies of its arguments; None if
    the op has no meta kernel."""
    def meta(value):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta") \
            if isinstance(value, Tensor) else value
    leaves, rebuild = rules.flat_arguments(args, kwargs)
    call_args, call_kwargs = rebuild([meta(leaf) for leaf in leaves])
    try:
        return _outputs(func(*call_args, **call_kwargs))
    except Exception:  # noqa: BLE001 - no meta kernel, or a data-dependent shape
        return None
