"""Counted work in two units, counted while the layer runs (L5, L6, L9): multiplications and all arithmetic.

Built on ``torch.utils.flop_counter.FlopCounterMode``, which sees every ATen op the forward pass
dispatches — whichever kernel PyTorch picks (fused CPU LSTM, fused SDPA, the ``MultiheadAttention``
fast path...). The formulas it lacks come from :data:`seqlab.measure.ops.EXTRA_FORMULAS`; a census
records every op that really ran (the counting mode reports each op it runs; a decomposed op's parts come
back to it one by one), so an op whose multiplications nobody can count is *named* in
:attr:`WorkCount.unaccounted` rather than silently counted as 0. Per-op cost (issue 17): one dispatch mode,
not two; an op that would not decompose runs at once; formulas get shapes without a pytree walk. A count that a
shape formula gives, and the census's arithmetic, depend on the op, the shapes and dtypes and the other arguments
alone: they are worked out once per such signature in a pass and kept (issue 34, item 2).

Which ops are accounted for (issue 21): an op with a formula is counted; an op on no floating-point data
(integer ``isin`` inside ``generate()``, ``bincount``, integer ``floor_divide``, boolean masks) multiplies
nothing and is never unaccounted; an op with no formula that PyTorch has a decomposition for
(``torch._decomp``: the core ATen table, then the global one; ``hardswish``, ``glu``, ``log_sigmoid``,
``prelu``...) runs through it and its parts are counted (:attr:`WorkCount.decomposed` names it; an op that
writes into its arguments runs as it is). Only what is left is :attr:`WorkCount.unaccounted`.

Unit 1, the lesson's: **multiplications**, one per multiply-add of a matrix product, convolution or attention
kernel (:attr:`WorkCount.multiplications`). PyTorch's FLOPs for the same contractions are twice that
(:attr:`WorkCount.flops`). Element-wise ops (bias adds, activations, gate products), softmax,
normalisations and reductions are not counted. Two exceptions keep hand-written contractions honest
(:func:`~seqlab.measure.ops.product_pairs`): an element-wise product that forms more distinct (element, element)
pairs than either factor holds — an outer product, as in ``(q[:, None] * k[None]).sum(-1)`` — is counted, one
multiplication per output element; and a product followed by a sum over a dim both factors step through —
``(q[..., None] * S).sum(-2)``, ``(x * w).sum(-1)``, ``torch.linalg.vecdot`` — is the contraction it is, counted
as its einsum is, one multiplication per element of the product, when the sum runs
(:class:`~seqlab.measure.ops.ProductLedger`; by_op key :data:`CONTRACTED_PRODUCT`). Distinct elements are read
from strides, so ``expand`` and ``broadcast_to`` forms count the same as broadcasting inside the product; a factor
materialised by ``repeat`` cannot be told from a gate. A gate product no sum contracts is not counted. Both are
charged to the modules running when they are charged (:attr:`WorkCount.by_module`).

Masked attention, executed beside useful: a causal or masked attention is charged its full L×S square in
``multiplications`` (what the kernels execute); the pairs its mask closes — those whose weight is exactly 0,
read from the mask's values whatever its form (``is_causal``, a boolean ``False``, an additive ``-inf`` or
``finfo.min``, a score_mod) — cost E + Ev each in :attr:`WorkCount.masked_multiplications`, and
:attr:`WorkCount.useful_multiplications` is the rest. Where SDPA reaches the dispatcher whole
(``aten.scaled_dot_product_attention`` under inference mode) or as a fused kernel, its mask is read there
(:func:`masked_attention_multiplications`); where attention runs as its parts — Hugging Face's eager attention,
SDPA's math path (forced when d_k ≠ d_v), FlexAttention's dense implementation, a hand-written masked softmax —
the weights a softmax of a product's scores gives exactly 0 are read from its output
(:class:`~seqlab.measure.ops.ZeroWeightLedger`).

Unit 2, all arithmetic: **FLOPs** (:attr:`WorkCount.arithmetic_flops`, per op in
:attr:`WorkCount.arithmetic_by_op`), per primitive ATen op, like fvcore's and the Mamba authors' counts, on
floating-point (or complex, an element counting 1) data only:

* a contraction: 2 per multiply-add (PyTorch's formula), plus 1 per output element for an additive input
  (``addmm``'s bias when ``beta != 0``, a convolution's bias);
* an element-wise op in the core ATen set: 1 per output element, whatever it computes inside (``exp``,
  ``tanh``, ``sigmoid``, ``gelu``, a comparison); ``where`` and ``masked_fill`` choose, 0;
* a reduction (``sum``, ``mean``, ``amax``, ``argmax``, ``prims.var``...): 1 per input element; a scan
  (``cumsum``): 1 per output element; ``index_add``, ``scatter_add``: 1 per source element;
* views, copies, casts, indexing, concatenation and fills: 0;
* any other op — softmax, log-softmax, the normalisations, and every op outside the core ATen set that
  PyTorch decomposes (``silu`` = ``sigmoid`` + ``mul``, ``addcmul``, ``var_mean``) — is charged the sum of
  its decomposition's parts, run on ``meta`` tensors of the same shapes (the real op is what runs; the
  decomposition is costed once per shape): softmax over n elements is ``amax`` n + ``sub`` n + ``exp`` n +
  ``sum`` n + ``div`` n = 5n;
* ops with no stated cost (``sort``, ``topk``; a fused kernel with no decomposition, such as oneDNN's LSTM
  layer, whose contractions are counted but whose gates are not seen) are named in
  :attr:`WorkCount.arithmetic_unaccounted`: the total is then a lower bound
  (:attr:`WorkCount.arithmetic_complete` is False).

An outer product written as broadcast-multiply-then-sum costs 1 (``mul``) + 1 (``sum``) per multiply-add:
the 2 a matrix product is charged. Example, a diagonal selective scan written as a loop (B batch, L
positions, D channels, N state size; A (D, N), delta and x (B, L, D), B_t and C_t (B, L, N))::

    h = x.new_zeros(B, D, N)
    for t in range(L):
        dA = torch.exp(delta[:, t, :, None] * A)                             # mul + exp: 2·B·D·N
        dBx = delta[:, t, :, None] * B_t[:, t, None, :] * x[:, t, :, None]   # mul + mul: 2·B·D·N
        h = dA * h + dBx                                                     # mul + add: 2·B·D·N
        y_t = (h * C_t[:, t, None, :]).sum(-1)                               # mul + sum: 2·B·D·N

counts ``arithmetic_flops`` = 8·B·L·D·N exactly (960 at B, L, D, N = 2, 5, 3, 4), and 3·B·L·D·N
multiplications (the outer products delta×A and delta×B_t, and the contraction h·C_t over N). The Mamba authors give 9·B·L·D·N FLOPs for the
selective scan (Albert Gu in state-spaces/mamba#110; the figure VMamba's counters use), counted for a
parallel (associative) scan, which by the same thread performs 2L associative operations for L positions
where this loop performs L steps. Different algorithms, so the figures are not expected to agree: this loop
counts 8/9 of theirs, 1·B·L·D·N fewer. The skip term D·x is in neither (VMamba adds B·L·D for it).

Nested tensors (``nn.TransformerEncoder``'s fast path packs a padded batch into one when given
``src_key_padding_mask`` under ``no_grad``): an op on a nested tensor of n sequences is counted as n
calls, one per sequence with its own length (batch 1), so the count is of real tokens only — what
the kernel computed. :attr:`WorkCount.padded_multiplications` gives the bound had every sequence been
padded to the longest (what the same call costs without the fast path). PyTorch's counter decomposes
composite ops (``linear``, ``matmul``) before counting them, which needs sizes a nested tensor does not
have; an op with a formula that receives a nested tensor therefore runs and is counted as it is (its
nested kernel, one call), with the formulas of :data:`~seqlab.measure.ops.EXTRA_FORMULAS`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._C import DispatchKey
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.flop_counter import FlopCounterMode, _FlopCounterMode, flop_registry, shape_wrapper
from torch.utils.module_tracker import ModuleTracker

from seqlab.measure.dispatch import OWN_RULE, passed_on
from seqlab.measure.modes import EngineMode, shield_from_dynamo
from seqlab.measure.ops import (
    ADDEND_OPS,
    EXTRA_FORMULAS,
    PYTORCH_TWINS,
    ProductLedger,
    ZeroWeightLedger,
    arithmetic_kind,
    bound_arguments,
    decomposition_of,
    has_floating,
    is_unknown,
    kept_decisions,
    op_name,
    tensors_in,
)
from seqlab.measure.switches import eager_higher_order, one_thread

aten = torch.ops.aten

#: The code of PyTorch's ``shape_wrapper`` around a formula: such a formula is called here on shapes directly.
_SHAPE_WRAPPED = shape_wrapper(lambda: 0).__code__

#: by_op key for multiplications done as broadcast element-wise products (outer products).
OUTER_PRODUCT = "aten.mul (outer product)"
#: by_op key for element-wise products that a sum over a shared dim makes contractions (``(q[..., None] * S).sum(-2)``).
CONTRACTED_PRODUCT = "aten.mul + aten.sum (contraction)"

#: Every formula the counter uses (FLOPs), shape-wrapped as ``FlopCounterMode`` wraps them: for the arithmetic of
#: a decomposition run on ``meta``.
_FORMULAS = {**flop_registry, **{k: shape_wrapper(v) for k, v in EXTRA_FORMULAS.items()}}


@dataclass(frozen=True)
class WorkCount:
    """Work counted on one run, in two units, with where it came from and what could not be counted.

    Attributes:
        multiplications: total multiply-adds in contractions (the lesson's unit, L5/L6), masked attention pairs
            included (what the kernels execute).
        by_op: multiplications per op name (``"aten.addmm"``, ``"aten.mkldnn_rnn_layer"``,
            ``"aten.mul (outer product)"``...).
        by_module: multiplications per module path as ``FlopCounterMode``'s module tracker names them, outer
            products included, each charged to the modules running when it ran (``"Global"`` is the whole call;
            nested modules such as ``"SelfAttention.query"`` are included in their parents).
        calls: how many times each op ran (every op, counted or not).
        unaccounted: ops that ran on floating-point data and may multiply but have no formula and no
            decomposition, with their number of calls. Empty means the count is complete.
        device: the device the counted call ran on (``"cpu"``; ``"meta"`` for :func:`count_on_meta`).
        padded_multiplications: when ops ran on nested tensors, the total had each of their sequences been
            padded to the longest (>= ``multiplications``); None when no nested tensor was multiplied.
        arithmetic_flops: every floating-point operation, by the convention of the module docstring
            (FLOPs: a multiply-add = 2, an element-wise op = 1 per output element...); None when not counted.
        arithmetic_by_op: ``arithmetic_flops`` per op name (a decomposed op under its own name).
        arithmetic_unaccounted: ops whose arithmetic has no stated cost (``sort``, ``topk``, the element-wise
            part of a fused kernel with no decomposition), with their calls; they add 0 to ``arithmetic_flops``.
        decomposed: ops with no formula that were counted through PyTorch's decomposition (``torch._decomp``),
            with their calls: their parts ran in their place and are in ``calls``.
        masked_multiplications: the multiplications of ``F.scaled_dot_product_attention`` calls spent on
            (query, key) pairs their mask closes (``is_causal``, a boolean or ``-inf`` mask): executed, not useful.
    """

    multiplications: int
    by_op: Mapping[str, int]
    by_module: Mapping[str, int]
    calls: Mapping[str, int]
    unaccounted: Mapping[str, int]
    device: str = "cpu"
    padded_multiplications: int | None = None
    arithmetic_flops: int | None = None
    arithmetic_by_op: Mapping[str, int] = field(default_factory=dict)
    arithmetic_unaccounted: Mapping[str, int] = field(default_factory=dict)
    decomposed: Mapping[str, int] = field(default_factory=dict)
    masked_multiplications: int = 0

    @property
    def seqlab_formula_ops(self) -> tuple[str, ...]:
        """Ops whose multiplications come from seqlab's own formulas (:data:`~seqlab.measure.ops.EXTRA_FORMULAS`
        or the outer-product rule) rather than from PyTorch's flop registry, sorted by name."""
        own = {str(packet) for packet in EXTRA_FORMULAS if packet not in PYTORCH_TWINS} | {OUTER_PRODUCT,
                                                                                           CONTRACTED_PRODUCT}
        return tuple(sorted(name for name, count in self.by_op.items() if name in own and count))

    @property
    def source(self) -> str:
        """Where the count comes from: ``"pytorch"`` when every counted op has a formula in PyTorch's own
        ``torch.utils.flop_counter`` registry (a count independent of seqlab's closed forms),
        ``"seqlab"`` when every one is seqlab's, ``"mixed"`` otherwise, ``"none"`` when nothing multiplied."""
        own = set(self.seqlab_formula_ops)
        counted = {name for name, count in self.by_op.items() if count}
        if not counted:
            return "none"
        return "seqlab" if counted <= own else "pytorch" if not own else "mixed"

    @property
    def flops(self) -> int:
        """FLOPs of the contractions in PyTorch's convention: 2 per multiply-add (element-wise ops excluded;
        :attr:`arithmetic_flops` has them)."""
        return 2 * self.multiplications

    @property
    def useful_multiplications(self) -> int:
        """``multiplications`` less those spent on masked (query, key) pairs of SDPA calls: the work the mask
        leaves open, beside the executed work, never mixed into it."""
        return self.multiplications - self.masked_multiplications

    @property
    def complete(self) -> bool:
        """True when every op that ran was accounted for (counted, or known to do no counted work)."""
        return not self.unaccounted

    @property
    def arithmetic_complete(self) -> bool:
        """True when ``arithmetic_flops`` was counted and every op in it has a stated cost."""
        return self.arithmetic_flops is not None and not self.arithmetic_unaccounted and self.complete

    def module(self, name: str) -> int:
        """Multiplications inside the module ``name`` (0 if it did no counted work), outer products included.

        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
        >>> work = count_multiplications(model, torch.randn(3, 4))
        >>> work.module("Sequential.0"), work.module("Sequential")  # 3 * 4 * 6, + 3 * 6 * 2
        (72, 108)

        Raises:
            KeyError: never; an unknown name simply did no counted work.
        """
        return self.by_module.get(name, 0)


class _OpCensus:
    """Records every ATen op that really executes: the counting mode reports each op it runs itself (the
    parts of a decomposed op come back to it one by one), so no second dispatch mode is needed. It also keeps
    the arithmetic unit's tallies and the masked attention pairs."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()  # op name -> calls
        self.unaccounted: Counter[str] = Counter()
        self.decomposed: Counter[str] = Counter()
        self.arithmetic: Counter[str] = Counter()
        self.arithmetic_unaccounted: Counter[str] = Counter()
        self.masked = 0
        self.zero_weights = ZeroWeightLedger()  # attention run as its parts: pairs whose weight is exactly 0
        self.inside_attention = 0  # while a whole SDPA call decomposes
        self.paused = False  # while the counter reads nested sizes: its own ops are not the user's

    def record(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object, flop: int | None,
               plan: _Plan | None = None, arithmetic: tuple[bool, int, str | None] | None = None) -> None:
        """One op ran: ``flop`` is what its formula charged (None without a formula); ``plan``: the op's
        decisions (:func:`plan_of`), looked up when not given; ``arithmetic``: (floating, FLOPs, uncosted name) of
        this call when already known (:meth:`arithmetic_of`, kept per argument signature), else computed here."""
        if self.paused:
            return
        plan = plan or plan_of(func)
        self.calls[plan.name] += 1
        if not self.inside_attention:  # a whole SDPA call's mask was read at its entry
            self.masked += self.zero_weights.observe(func, args, kwargs, out)
        if plan.free:
            return  # movement and selections: nothing to count in either unit (the common case, kept cheap)
        floating, flops, unseen = arithmetic or self.arithmetic_of(func, args, kwargs, out, flop)
        if plan.unknown and floating:
            self.unaccounted[plan.name] += 1
        if flops:
            self.arithmetic[plan.name] += flops
        if unseen:
            self.arithmetic_unaccounted[unseen] += 1

    @staticmethod
    def arithmetic_of(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object,
                      flop: int | None) -> tuple[bool, int, str | None]:
        """(whether the call touches floating data, its FLOPs in the all-arithmetic unit, the op's name when its cost
        is not stated): what :meth:`record` adds, from shapes, dtypes and non-tensor arguments alone."""
        floating = (isinstance(out, torch.Tensor) and (out.is_floating_point() or out.is_complex())) or \
            has_floating((args, kwargs.values(), out))  # a float result settles it without a walk
        flops, unseen = op_arithmetic(func, args, kwargs, out, flop, floating)
        return floating, flops, unseen

    def snapshot(self) -> tuple:
        return tuple(Counter(c) for c in (self.calls, self.unaccounted, self.decomposed, self.arithmetic,
                                          self.arithmetic_unaccounted)) + (self.masked,)

    def restore(self, saved: tuple) -> None:
        (self.calls, self.unaccounted, self.decomposed, self.arithmetic, self.arithmetic_unaccounted,
         self.masked) = saved


_PRODUCTS = (aten.mul, aten.mul_)
#: Element-wise products and the sums that may make them contractions (:class:`~seqlab.measure.ops.ProductLedger`).
_PAIRED = (aten.mul, aten.mul_, aten.sum)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the counter decides about an op once, not at every call (issue 34: the op's hash alone is a Python
    call, and a census asked a dozen questions of each op).

    Attributes:
        name: the op's short name (:func:`~seqlab.measure.ops.op_name`).
        metadata: a size or stride query (runs through PyTorch's own counting mode).
        plain: runs as it is (no ``CompositeImplicitAutograd`` decomposition).
        attention: an SDPA entry or kernel (its mask's pairs are counted).
        unknown: no formula, movement or known compute: named unaccounted, or run through its decomposition.
        free: known movement or selection: 0 in both units, nothing else to record.
        paired: ``mul``/``mul_``/``sum``: products counted by their distinct pairs, or as a contraction
            with the sum that follows (:class:`~seqlab.measure.ops.ProductLedger`).
    """

    name: str
    metadata: bool
    plain: bool
    attention: bool
    unknown: bool
    free: bool
    paired: bool


_PLANS: dict[int, _Plan] = kept_decisions({})  # id of the op (an OpOverload lives as long as the process) -> plan


def plan_of(func: torch._ops.OpOverload) -> _Plan:
    """The counter's decisions about ``func``, made on its first call and kept (keyed by the op's identity).

    >>> plan_of(torch.ops.aten.mm.default).free, plan_of(torch.ops.aten.view.default).free
    (False, True)
    """
    plan = _PLANS.get(id(func))
    if plan is None:
        unknown = is_unknown(func)
        plan = _PLANS[id(func)] = _Plan(
            name=op_name(func), metadata=_is_metadata(func), plain=_plain(func),
            attention=func is _ATTENTION_ENTRY or func.overloadpacket in _ATTENTION_KERNELS, unknown=unknown,
            free=not unknown and arithmetic_kind(func) in _FREE, paired=func.overloadpacket in _PAIRED)
    return plan
#: Arithmetic kinds that cost 0 FLOPs whatever the data.
_FREE = frozenset({"movement", "selection"})


def _has_gradient_node(value: object) -> bool:
    """Whether autograd can hook ``value``: a tensor that requires grad and has a gradient node (its ``grad_fn``,
    or a leaf's accumulator). A view of a parameter made under ``no_grad`` requires grad but has neither: its
    gradient can flow nowhere, and PyTorch's module tracker raises "Expected gradient function to be set" on it."""
    if not isinstance(value, torch.Tensor) or not value.requires_grad:
        return False
    if value.grad_fn is not None or not value._is_view():
        return True
    try:
        _gradient_node(value)
    except (AssertionError, AttributeError, RuntimeError):
        return False
    return True


def _gradient_node(tensor: torch.Tensor) -> object:
    from torch.autograd.graph import _get_grad_fn_or_grad_acc
    return _get_grad_fn_or_grad_acc(tensor)


class _ModuleTracker(ModuleTracker):
    """PyTorch's module tracker (which modules are running, for :attr:`WorkCount.by_module`), except that only tensors
    autograd can hook get its backward hooks: a tensor that requires grad with no gradient node (a view of a
    parameter made under ``no_grad``, as state-space layers slice ``A_log`` or a convolution's weight, handed to a
    submodule) crosses the module boundary unhooked instead of crashing the count. Its gradient reaches no module, so
    nothing a backward pass could charge is lost. Its hooks are process-wide, so only the thread that entered it is
    tracked: a module called meanwhile on another thread (``seqlab compare``'s reach thread) is not this count's."""

    def __enter__(self):
        self._thread = threading.get_ident()
        return super().__enter__()

    def _fw_pre_hook(self, mod, input) -> None:
        if threading.get_ident() == self._thread:
            super()._fw_pre_hook(mod, [t for t in tree_leaves(input) if _has_gradient_node(t)])

    def _fw_post_hook(self, mod, input, output) -> None:
        if threading.get_ident() == self._thread:
            super()._fw_post_hook(mod, input, [t for t in tree_leaves(output) if _has_gradient_node(t)])


class _NestedCounter(FlopCounterMode):
    """``FlopCounterMode`` that counts an op on nested tensors once per sequence (see the module's docstring).

    PyTorch's formulas read ``tensor.shape``, which a nested tensor does not have; each nested tensor is
    replaced by the shape (1, *component) of its i-th sequence, for i over the sequences, and by
    (n, *longest) for the padded bound.
    """

    def __init__(self, census: _OpCensus, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mod_tracker = _ModuleTracker()  # PyTorch's, hooking only tensors with a gradient node
        self.census = census
        self.padded_extra = 0  # FLOPs the padded bound adds to the per-sequence count
        self.nested_seen = False
        self.products = ProductLedger()  # element-wise products a later sum may make contractions
        self._formulas: dict[int, Callable | None] = {}  # id of the op -> its formula in this counter's registry
        #: (op, argument signature) -> (formula's FLOPs, census arithmetic): decided once per op kind and shapes
        self.by_signature: dict[tuple, tuple[int | None, tuple[bool, int, str | None]]] = {}

    def formula_of(self, func: torch._ops.OpOverload) -> Callable | None:
        """The op's FLOP formula in this counter's registry, or None; looked up once per op (an op packet's hash is
        a Python call)."""
        key = id(func)
        if key not in self._formulas:
            self._formulas[key] = self.flop_registry.get(func.overloadpacket)
        return self._formulas[key]

    def signature_key(self, func: torch._ops.OpOverload, formula: Callable | None, args: tuple, kwargs: dict,
                      out: object) -> tuple | None:
        """The key under which one call's count is kept (:attr:`by_signature`): the op and the shapes and dtypes of
        its tensors with its other arguments, or None where the count may depend on more than that (a formula
        that reads the tensors themselves, a nested tensor, an argument that cannot be a key)."""
        if formula is not None and getattr(formula, "__code__", None) is not _SHAPE_WRAPPED:
            return None
        try:
            key = (id(func), _signature(args), _signature(kwargs.values()), tuple(kwargs), _signature((out,)))
            hash(key)
        except TypeError:
            return None
        return key

    def __enter__(self) -> _NestedCounter:
        # FlopCounterMode.__enter__, with the dispatch mode below: the one place PyTorch's internals are used
        self.flop_counts.clear()
        if "torch._dynamo" in sys.modules:  # as EngineMode.__enter__: Dynamo must not trace the counting mode
            shield_from_dynamo()
        self.mod_tracker.__enter__()
        self.mode = _NestedDispatch(self)
        self.mode.__enter__()
        return self

    @contextlib.contextmanager
    def driven(self) -> Iterator[_NestedDispatch]:
        """Track the modules running (for :attr:`WorkCount.by_module`) without entering the counting mode: the
        caller's own mode calls :meth:`_NestedDispatch.before` and :meth:`_NestedDispatch.count` per op (one pass
        for several measurements, :mod:`seqlab.measure.traced_pass`). Yields the dispatch object to call."""
        self.flop_counts.clear()
        self.mode = _NestedDispatch(self)
        with self.mod_tracker:
            yield self.mode

    def charge(self, key: object, flop: int) -> None:
        """Add ``flop`` FLOPs under ``key`` to every module running now (and to ``"Global"``)."""
        for parent in set(self.mod_tracker.parents):
            self.flop_counts[parent][key] += flop

    def charge_products(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> None:
        """An element-wise product or a sum ran: charge an outer product where the product runs, and a product
        contracted by a sum where the sum runs (:class:`~seqlab.measure.ops.ProductLedger`)."""
        if func.overloadpacket in _PRODUCTS:
            outer = self.products.product(func, args, out)
            if outer:
                self.charge(OUTER_PRODUCT, 2 * outer)
            return
        contracted, _ = self.products.reduction(func, args, kwargs)
        if contracted:
            self.charge(CONTRACTED_PRODUCT, 2 * contracted)

    def snapshot(self) -> dict:
        return {name: dict(ops) for name, ops in self.flop_counts.items()}

    def restore(self, saved: dict) -> None:
        self.flop_counts.clear()
        for name, ops in saved.items():
            self.flop_counts[name].update(ops)

    def _count_flops(self, func_packet, out, args, kwargs):
        if not _any_nested((args, kwargs, out)):
            formula = self.flop_registry.get(func_packet)
            if getattr(formula, "__code__", None) is not _SHAPE_WRAPPED:
                return super()._count_flops(func_packet, out, args, kwargs)
            raw = formula.__wrapped__  # PyTorch's formula inside its pytree shape wrapper
            flop = raw(*_shapes(args), out_shape=_shapes((out,))[0], **dict(zip(kwargs, _shapes(kwargs.values()))))
            self.charge(func_packet, flop)
            return out
        if func_packet not in self.flop_registry:
            return out
        self.nested_seen = True
        sequences = self._sequences((args, kwargs, out))
        before = self.flop_counts["Global"][func_packet]
        for i in range(len(next(iter(sequences.values())))):
            a, k, o = tree_map(lambda t: sequences[id(t)][i] if id(t) in sequences else t, (args, kwargs, out))
            super()._count_flops(func_packet, o, a, k)
        a, k, o = tree_map(lambda t: _padded(sequences[id(t)]) if id(t) in sequences else t, (args, kwargs, out))
        self.padded_extra += self.flop_registry[func_packet](*a, **k, out_val=o) - (
            self.flop_counts["Global"][func_packet] - before)
        return out

    def _sequences(self, tree: object) -> dict[int, list[torch.Size]]:
        """id of each nested tensor -> the shape (1, *component) of each of its sequences."""
        self.census.paused = True
        try:
            return {id(t): [torch.Size((1, *c.shape)) for c in t.unbind()]
                    for t in tree_leaves(tree) if isinstance(t, torch.Tensor) and t.is_nested}
        finally:
            self.census.paused = False


class _NestedDispatch(_FlopCounterMode):
    """PyTorch's counting mode, except that an op with a formula that receives a nested tensor runs as it is:
    PyTorch would first decompose composite ops (``linear`` into ``matmul``...), which needs sizes a nested
    tensor does not have. An op with no formula that PyTorch cannot count runs through its ``torch._decomp``
    decomposition when it has one (its parts are counted); outer products are charged where they run."""

    _should_skip_dynamo = EngineMode._should_skip_dynamo  # a PyTorch mode: the engine's switch set here

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        answer = passed_on(self, func, types, args, kwargs)
        if answer is not OWN_RULE:
            return answer
        plan = plan_of(func) if isinstance(func, torch._ops.OpOverload) else None
        if plan is None or plan.metadata:
            return super().__torch_dispatch__(func, types, args, kwargs)  # higher-order ops, nested sizes
        decomposed = self.before(func, args, kwargs, self, plan)
        if decomposed is not NotImplemented:
            return decomposed
        out = func(*args, **kwargs)
        self.count(func, args, kwargs, out, plan)
        return out

    def count(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object, plan: _Plan) -> None:
        """Charge one op that ran (``out`` its result): its formula's FLOPs to the modules running now, an
        outer product's multiplications, and the census of both units (``plan``: :func:`plan_of`)."""
        counter = self.counter
        flop = arithmetic = None
        if not plan.free:
            packet = func.overloadpacket
            formula = counter.formula_of(func)
            key = counter.signature_key(func, formula, args, kwargs, out)
            known = None if key is None else counter.by_signature.get(key)
            if known is not None:  # the same op on the same shapes: its formula's count and census, kept
                flop, arithmetic = known
                if formula is not None:
                    counter.charge(packet, flop)
            elif formula is not None:
                before = counter.flop_counts["Global"][packet]
                counter._count_flops(packet, out, args, kwargs)
                flop = counter.flop_counts["Global"][packet] - before
            if plan.paired and formula is None and not counter.census.paused:
                counter.charge_products(func, args, kwargs, out)
            if known is None and key is not None:
                arithmetic = counter.census.arithmetic_of(func, args, kwargs, out, flop)
                counter.by_signature[key] = (flop, arithmetic)
        counter.census.record(func, args, kwargs, out, flop, plan, arithmetic)

    def before(self, func: torch._ops.OpOverload, args: tuple, kwargs: dict, mode: TorchDispatchMode,
               plan: _Plan) -> object:
        """What the counter does before an op runs: count an SDPA call's masked pairs; run an op that PyTorch
        decomposes by its parts (under ``mode``, so that they come back to it); run an op with no formula through
        its ``torch._decomp`` decomposition (under this counter alone). Returns the output when the op was run
        that way, else NotImplemented (the op is still to run, then :meth:`count`)."""
        counter = self.counter
        census = counter.census
        if plan.attention and not (census.paused or census.inside_attention):
            census.masked += _masked_in_call(func, args, kwargs)
        if not plan.plain and not (func.overloadpacket in counter.flop_registry and _any_nested((args, kwargs))):
            # PyTorch's rule: an op that decomposes is counted by its parts, which come back here
            entry = func is _ATTENTION_ENTRY
            census.inside_attention += entry  # its kernel comes back here: its mask is counted once
            try:
                with mode:
                    decomposed = func.decompose(*args, **kwargs)
            finally:
                census.inside_attention -= entry
            if decomposed is not NotImplemented:
                return decomposed
        if plan.unknown and not census.paused and has_floating((args, kwargs.values())):
            return self._through_decomposition(func, args, kwargs)
        return NotImplemented

    def _through_decomposition(self, func, args: tuple, kwargs: dict) -> object:
        """Run an op with no formula through its ``torch._decomp`` decomposition, its parts counted here; on
        failure undo what the parts recorded and return NotImplemented (the op then runs, named unaccounted)."""
        decomposition = decomposition_of(func)
        if decomposition is None or func._schema.is_mutable:  # an op that writes its arguments runs as it is
            return NotImplemented
        census, counter = self.counter.census, self.counter
        saved = census.snapshot(), counter.snapshot()
        try:
            with self:
                out = decomposition(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a decomposition that cannot run here: the op runs itself
            census.restore(saved[0])
            counter.restore(saved[1])
            return NotImplemented
        census.decomposed[op_name(func)] += 1
        return out


#: Where an SDPA call is seen with its mask: the whole op (it reaches a dispatch mode under inference mode, before
#: it decomposes), and the kernels it dispatches to (the fused CPU kernel, the CUDA ones).
_ATTENTION_ENTRY = aten.scaled_dot_product_attention.default
_ATTENTION_KERNELS = frozenset({
    aten._scaled_dot_product_flash_attention_for_cpu, aten._scaled_dot_product_fused_attention_overrideable,
    aten._scaled_dot_product_flash_attention, aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention})


def _masked_in_call(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> int:
    """Masked multiplications of one SDPA entry or kernel call (0 for any other op)."""
    if func is not _ATTENTION_ENTRY and func.overloadpacket not in _ATTENTION_KERNELS:
        return 0
    b = bound_arguments(func, args, kwargs)
    mask = b.get("attn_mask", b.get("attn_bias"))
    return masked_attention_multiplications(b["query"], b["key"], b["value"], attn_mask=mask,
                                            is_causal=bool(b.get("is_causal", False)))


def masked_attention_multiplications(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                     attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                     is_causal: bool = False, scale: float | None = None,
                                     enable_gqa: bool = False) -> int:
    """Multiplications an SDPA call spends on (query, key) pairs its mask closes (the arguments of
    ``F.scaled_dot_product_attention``).

    The kernel is charged every pair, (…, L, S)·(E + Ev) multiply-adds (:func:`~seqlab.measure.ops.
    attention_kernel_flop`); the pairs a mask closes are executed, not useful. ``is_causal``: key j is open
    to query i when j <= i (PyTorch's top-left causal mask), so an L = S = T square leaves T(T+1)/2 pairs
    open. A mask is read by its values, whatever its form: a pair is closed when the mask makes its attention
    weight exactly 0 — a boolean ``False``, an additive ``-inf``, or an additive value so low (``finfo.min``, as
    Hugging Face's eager and SDPA masks add) that softmax(scale·q·kᵀ + mask) is exactly 0 there in the query's dtype
    (the weights are computed once, on these inputs); masks broadcast over the query's leading dims.

    >>> q = torch.zeros(1, 2, 8, 4)  # (B, heads, T, d)
    >>> masked_attention_multiplications(q, q, q, is_causal=True)  # 2 heads * (64 - 36) * (4 + 4)
    448
    >>> additive = torch.full((8, 8), torch.finfo(torch.float32).min).triu(1)  # Hugging Face's causal mask
    >>> masked_attention_multiplications(q, q, q, attn_mask=additive)  # the same 28 closed pairs per head
    448

    Returns:
        multiplications (0 with no mask, or for nested tensors, whose mask is the nesting itself).
    """
    if query.is_nested or key.is_nested or (attn_mask is None and not is_causal):
        return 0
    *leading, length_q, width_qk = query.shape
    length_k, width_v = key.shape[-2], value.shape[-1]
    if attn_mask is None:
        closed = math.prod(leading) * sum(max(length_k - (i + 1), 0) for i in range(length_q))
    elif attn_mask.dtype == torch.bool:
        with _disable_current_modes(), torch.no_grad():
            full = torch.broadcast_shapes(attn_mask.shape, (*leading, length_q, length_k))
            closed = math.prod(full) - int(attn_mask.sum()) * (math.prod(full) // max(attn_mask.numel(), 1))
    else:
        closed = _closed_by_values(query, key, attn_mask, scale, enable_gqa)
    return closed * (width_qk + width_v)


def _closed_by_values(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor, scale: float | None,
                      enable_gqa: bool) -> int:
    """(query, key) pairs an additive mask closes: its ``-inf`` entries, and those where softmax(scale·q·kᵀ + mask)
    is exactly 0 in the query's dtype (a ``finfo.min`` entry), computed outside any dispatch mode; 0 on the meta
    device, which holds no values."""
    if "meta" in (query.device.type, key.device.type, mask.device.type):
        return 0
    with _disable_current_modes(), torch.no_grad():
        if enable_gqa and key.dim() >= 3 and query.shape[-3] != key.shape[-3]:
            key = key.repeat_interleave(query.shape[-3] // key.shape[-3], dim=-3)
        factor = scale if scale is not None else 1 / math.sqrt(query.shape[-1])
        logits = (query @ key.transpose(-2, -1)) * factor + mask  # (…, L, S)
        weights = torch.softmax(logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits, -1)
        return int((torch.isneginf(logits) | (weights == 0)).sum())


#: Ops PyTorch's counting mode answers with NotImplemented (sizes and strides of nested tensors).
_METADATA = frozenset(str(op) for op in (
    aten.sym_is_contiguous.default, aten.is_contiguous.default, aten.is_contiguous.memory_format,
    aten.is_strides_like_format.default, aten.is_non_overlapping_and_dense.default, aten.size.default,
    aten.sym_size.default, aten.stride.default, aten.sym_stride.default, aten.storage_offset.default,
    aten.sym_storage_offset.default, aten.numel.default, aten.sym_numel.default, aten.dim.default))


@functools.cache
def _is_metadata(func: torch._ops.OpOverload) -> bool:
    """A size, stride or contiguity query (decided once per op)."""
    return str(func) in _METADATA


@functools.cache
def _plain(func: torch._ops.OpOverload) -> bool:
    """An op that PyTorch's counting mode would run as it is: no metadata query, no decomposition
    (``func.decompose`` returns NotImplemented for it), decided once per op."""
    implicit = DispatchKey.CompositeImplicitAutograd
    if str(func) in _METADATA or implicit in func.py_kernels:
        return False
    return not torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), implicit)


def _any_nested(tree: tuple) -> bool:
    return any(t.is_nested for t in tensors_in(_flat(tree)))


def _flat(tree: tuple) -> list:
    """(args, kwargs, out) -> a list of the values in them (kwargs by value)."""
    return [tuple(value.values()) if isinstance(value, dict) else value for value in tree]


def _shapes(values) -> list:
    """Each tensor replaced by its shape, inside lists and tuples too: what PyTorch's formula wrapper
    (``shape_wrapper``) passes on, without a pytree walk per op."""
    return [value.shape if isinstance(value, torch.Tensor) else
            type(value)(_shapes(value)) if isinstance(value, (list, tuple)) else value for value in values]


def _signature(values) -> tuple:
    """Each tensor as (shape, dtype), lists as tuples, other values as they are: what a count can depend on.

    Raises:
        TypeError: a nested tensor (no sizes to key by).
    """
    return tuple((value.shape, value.dtype) if isinstance(value, torch.Tensor) and not value.is_nested else
                 _signature(value) if isinstance(value, (list, tuple)) else
                 _refuse_nested() if isinstance(value, torch.Tensor) else value for value in values)


def _refuse_nested():
    raise TypeError("a nested tensor has no shape")


def _padded(shapes: list[torch.Size]) -> torch.Size:
    """(n, *longest): every sequence padded to the largest size in each dim."""
    return torch.Size((len(shapes), *(max(dims) for dims in zip(*(s[1:] for s in shapes), strict=True))))


def op_arithmetic(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object, flop: int | None,
                  floating: bool | None = None) -> tuple[int, str | None]:
    """FLOPs of one call in the all-arithmetic unit, and the name of the op when its cost is not stated.

    The convention is the module docstring's; the kind of each op is :func:`~seqlab.measure.ops.arithmetic_kind`.
    ``flop`` is what the op's contraction formula charged (None when it has none). A ``"decomposed"`` op is
    charged the arithmetic of its ``torch._decomp`` decomposition run on ``meta`` tensors of the same shapes
    (nothing is computed, the real op is what ran); a part with no stated cost names the op.

    >>> op_arithmetic(torch.ops.aten.exp.default, (torch.zeros(3, 4),), {}, torch.zeros(3, 4), None)
    (12, None)

    Returns:
        (FLOPs, None) or (FLOPs counted, name of the op whose cost is not stated).
    """
    if floating is None:
        floating = has_floating((args, kwargs.values(), out))
    if not floating:
        return 0, None
    kind = arithmetic_kind(func)
    if kind in ("movement", "selection"):
        return 0, None
    if kind == "contraction":
        return (flop or 0) + _addend(func, args, kwargs, out), None
    if kind == "fused":
        return flop or 0, op_name(func)
    if kind == "decomposed":
        flops, uncosted = _decomposed_arithmetic(func, args, kwargs)
        if flops is None:  # the decomposition did not run on meta: contractions only
            return flop or 0, op_name(func)
        return flops, (op_name(func) if uncosted else None)
    if kind in ("pointwise", "scan"):
        return max((t.numel() for t in tensors_in((out,))), default=0), None
    if kind == "reduction":
        return max((t.numel() for t in tensors_in((args, tuple(kwargs.values())))), default=0), None
    if kind == "scatter":
        b = bound_arguments(func, args, kwargs)
        source = b.get("source", b.get("src"))
        return (source.numel() if isinstance(source, torch.Tensor) else 0), None
    return 0, op_name(func)


def _addend(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> int:
    """1 FLOP per output element for the additive input of ``addmm``-like ops (when ``beta != 0``) and for a
    convolution's bias."""
    packet = func.overloadpacket
    name = packet.__name__.removesuffix("_")
    if not isinstance(out, torch.Tensor) or out.is_nested:
        return 0
    if getattr(aten, name, None) in ADDEND_OPS:
        return out.numel() if bound_arguments(func, args, kwargs).get("beta", 1) != 0 else 0
    if packet in (aten.convolution, aten._convolution, aten.linear):
        return out.numel() if bound_arguments(func, args, kwargs).get("bias") is not None else 0
    return 0


#: Arithmetic of decompositions already run on meta: (op, shapes, dtypes, other arguments) -> (FLOPs, uncosted).
_DECOMPOSED_CACHE: dict[tuple, tuple[int | None, bool]] = {}


def _describe(value: object) -> object:
    if isinstance(value, torch.Tensor):
        if value.is_nested:  # no sizes to key by: not cached
            raise TypeError("a nested tensor has no shape")
        return ("tensor", tuple(value.shape), value.dtype)
    if isinstance(value, (list, tuple)):
        return tuple(_describe(v) for v in value)
    hash(value)
    return value


def _decomposed_arithmetic(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> tuple[int | None, bool]:
    """(FLOPs, whether a part had no stated cost) of the op's decomposition run on meta tensors; (None, True)
    when it does not run there."""
    try:
        key = (func, _describe(args), _describe(tuple(sorted(kwargs.items()))))
    except TypeError:  # an unhashable argument: not cached
        key = None
    if key is not None and key in _DECOMPOSED_CACHE:
        return _DECOMPOSED_CACHE[key]
    decomposition = decomposition_of(func)

    def to_meta(value: object) -> object:
        if isinstance(value, torch.Tensor):
            if value.is_nested or value.layout != torch.strided:
                raise NotImplementedError("no meta copy")
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        return value

    probe = _ArithmeticProbe()
    try:
        with _disable_current_modes():
            meta_args, meta_kwargs = tree_map(to_meta, (args, kwargs))
            with probe:
                decomposition(*meta_args, **meta_kwargs)
        result = (probe.flops, probe.uncosted)
    except Exception:  # noqa: BLE001 - a decomposition that will not run on meta: no figure from it
        result = (None, True)
    if key is not None:
        _DECOMPOSED_CACHE[key] = result
    return result


class _ArithmeticProbe(EngineMode):
    """Runs a decomposition on meta tensors and adds up the arithmetic of its parts, by the same rules."""

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0
        self.uncosted = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if isinstance(func, torch._ops.OpOverload):
            formula = _FORMULAS.get(func.overloadpacket)
            flop = formula(*args, **kwargs, out_val=out) if formula is not None else None
            flops, unseen = op_arithmetic(func, args, kwargs, out, flop)
            self.flops += flops
            self.uncosted |= unseen is not None
        return out


def count_multiplications(function: Callable[..., Any], *args: Any, **kwargs: Any) -> WorkCount:
    """Run ``function(*args, **kwargs)`` once and count the multiplications it performs.

    The call runs as it would anyway (same kernels, same mode, same grad setting), so what is
    counted is what ran — on one CPU thread (:func:`~seqlab.measure.switches.one_thread`): counting pays
    Python per op, and the thread count changes no multiplication.

    >>> layer = torch.nn.Linear(3, 8)
    >>> count_multiplications(layer, torch.randn(5, 10, 3)).multiplications  # 5 * 10 * 3 * 8
    1200
    >>> count_multiplications(torch.mv, torch.randn(4, 8), torch.randn(8)).multiplications
    32

    Args:
        function: any callable that runs PyTorch ops (a module, a function, a lambda).
        *args, **kwargs: passed through to ``function``.

    Returns:
        A :class:`WorkCount` in multiplications (``.flops`` for 2×).

    Raises:
        Exception: whatever ``function`` raises, unchanged; nothing of its own.
    """
    counter = work_counter()
    with one_thread(), eager_higher_order(), counter:
        function(*args, **kwargs)
    return counted_work(counter, _device_of(args, kwargs))


def work_counter() -> _NestedCounter:
    """A fresh counting mode (PyTorch's formulas and :data:`~seqlab.measure.ops.EXTRA_FORMULAS`, with its census);
    :func:`counted_work` reads it once the pass is over. :func:`count_multiplications` enters it as a mode;
    :mod:`seqlab.measure.traced_pass` drives it from its own mode (module tracking only)."""
    return _NestedCounter(_OpCensus(), display=False, custom_mapping=dict(EXTRA_FORMULAS))


def counted_work(counter: _NestedCounter, device: str) -> WorkCount:
    """The :class:`WorkCount` a counter recorded (``device``: where the pass ran)."""
    census = counter.census
    flop_counts = counter.get_flop_counts()
    by_op = {str(packet): flop // 2 for packet, flop in flop_counts.get("Global", {}).items()}
    by_module = {name: sum(ops.values()) // 2 for name, ops in flop_counts.items()}
    total = counter.get_total_flops()
    return WorkCount(
        multiplications=total // 2,
        by_op=by_op,
        by_module=by_module,
        calls=dict(census.calls),
        unaccounted=dict(census.unaccounted),
        device=device,
        padded_multiplications=(total + counter.padded_extra) // 2 if counter.nested_seen else None,
        arithmetic_flops=sum(census.arithmetic.values()),
        arithmetic_by_op=dict(census.arithmetic),
        arithmetic_unaccounted=dict(census.arithmetic_unaccounted),
        decomposed=dict(census.decomposed),
        masked_multiplications=census.masked,
    )


def _device_of(args: tuple, kwargs: dict) -> str:
    """The device of the first tensor among the arguments (``"cpu"`` when none is a tensor)."""
    return next((leaf.device.type for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)),
                "cpu")


def count_on_meta(function: Callable[..., Any], *args: Any, **kwargs: Any) -> WorkCount:
    """Count ``function(*args, **kwargs)`` on the meta device: an independent second route to the count.

    On ``meta`` tensors PyTorch runs no fused CPU kernel: ``nn.LSTM``, SDPA and ``nn.MultiheadAttention``
    decompose into ``addmm`` / ``bmm``, which PyTorch's own ``torch.utils.flop_counter`` formulas count. So a
    count whose :attr:`WorkCount.source` is ``"pytorch"`` owes nothing to seqlab's formulas (for fused kernels)
    nor to its closed forms, and no global flag is flipped to get it. Nothing is computed and no memory is
    allocated for the data, so the sizes may be large.

    >>> layer = torch.nn.LSTM(12, 128, batch_first=True)
    >>> counted = count_on_meta(layer, torch.randn(1, 250, 12))  # 4 gates * 250 * 128 * (12 + 128)
    >>> counted.multiplications, counted.source, counted.device
    (17920000, 'pytorch', 'meta')

    Args:
        function: a callable; an ``nn.Module`` is deep-copied to the meta device (the original is untouched).
        *args, **kwargs: passed through, every tensor replaced by an empty meta tensor of its shape and dtype.

    Returns:
        A :class:`WorkCount` in multiplications, ``device == "meta"``.

    Raises:
        NotImplementedError: an op with no meta kernel ran (and whatever else ``function`` raises on meta
            tensors).
    """
    import copy

    def to_meta(value: Any) -> Any:
        return torch.empty_like(value, device="meta") if isinstance(value, torch.Tensor) else value

    if isinstance(function, torch.nn.Module):
        function = copy.deepcopy(function).to("meta")
    return count_multiplications(function, *tree_map(to_meta, args), **tree_map(to_meta, kwargs))
