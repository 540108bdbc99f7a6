"""Counted work: the multiplications a layer really performs, counted while it runs (L5, L6, L9).

Built on ``torch.utils.flop_counter.FlopCounterMode``, which sees every ATen op the forward pass
dispatches — whichever kernel PyTorch picks (fused CPU LSTM, fused SDPA, the ``MultiheadAttention``
fast path...). The formulas it lacks come from :data:`seqlab.measure.ops.EXTRA_FORMULAS`; a census
records every op that really ran (the counting mode reports each op it runs; a decomposed op's parts come
back to it one by one), so an op whose multiplications nobody can count is *named* in
:attr:`WorkCount.unaccounted` rather than silently counted as 0. Per-op cost (issue 17): one dispatch mode,
not two; an op that would not decompose runs at once; formulas get shapes without a pytree walk.

Convention (the lesson's unit): **multiplications**, one per multiply-add of a matrix product,
convolution or attention kernel. FLOPs in PyTorch's convention are twice that
(:attr:`WorkCount.flops`). Element-wise ops (bias adds, activations, gate products), softmax,
normalisations and reductions are not counted; a causal mask saves nothing in the count. One
exception keeps hand-written contractions honest: an element-wise product whose output is larger
than both factors (an outer product, as in ``(q[:, None] * k[None]).sum(-1)``) is counted, one
multiplication per output element. A same-shape product followed by a sum (``torch.linalg.vecdot``)
looks exactly like a gate product and is not counted.

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

import functools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch._C import DispatchKey
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.flop_counter import FlopCounterMode, _FlopCounterMode, shape_wrapper

from seqlab.measure.ops import EXTRA_FORMULAS, PYTORCH_TWINS, is_unknown, op_name, tensors_in
from seqlab.measure.switches import one_thread

aten = torch.ops.aten

#: The code of PyTorch's ``shape_wrapper`` around a formula: such a formula is called here on shapes directly.
_SHAPE_WRAPPED = shape_wrapper(lambda: 0).__code__

#: by_op key for multiplications done as broadcast element-wise products (outer products).
OUTER_PRODUCT = "aten.mul (outer product)"


@dataclass(frozen=True)
class WorkCount:
    """Multiplications counted on one run, with where they came from and what could not be counted.

    Attributes:
        multiplications: total multiply-adds in contractions (the lesson's unit, L5/L6).
        by_op: multiplications per op name (``"aten.addmm"``, ``"aten.mkldnn_rnn_layer"``...).
        by_module: multiplications per module path as ``FlopCounterMode`` reports it (outer products
            are in the total and in ``by_op`` only) (``"Global"``
            is the whole call; nested modules such as ``"SelfAttention.query"`` are included in
            their parents).
        calls: how many times each op ran (every op, counted or not).
        unaccounted: ops that ran and may multiply but have no formula, with their number of calls.
            Empty means the count is complete.
        device: the device the counted call ran on (``"cpu"``; ``"meta"`` for :func:`count_on_meta`).
        padded_multiplications: when ops ran on nested tensors, the total had each of their sequences been
            padded to the longest (>= ``multiplications``); None when no nested tensor was multiplied.
    """

    multiplications: int
    by_op: Mapping[str, int]
    by_module: Mapping[str, int]
    calls: Mapping[str, int]
    unaccounted: Mapping[str, int]
    device: str = "cpu"
    padded_multiplications: int | None = None

    @property
    def seqlab_formula_ops(self) -> tuple[str, ...]:
        """Ops whose multiplications come from seqlab's own formulas (:data:`~seqlab.measure.ops.EXTRA_FORMULAS`
        or the outer-product rule) rather than from PyTorch's flop registry, sorted by name."""
        own = {str(packet) for packet in EXTRA_FORMULAS if packet not in PYTORCH_TWINS} | {OUTER_PRODUCT}
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
        """FLOPs in PyTorch's convention: 2 per multiply-add."""
        return 2 * self.multiplications

    @property
    def complete(self) -> bool:
        """True when every op that ran was accounted for (counted, or known to do no counted work)."""
        return not self.unaccounted

    def module(self, name: str) -> int:
        """Multiplications inside the module ``name`` (0 if it did no counted work).

        Raises:
            KeyError: never; an unknown name simply did no counted work.
        """
        return self.by_module.get(name, 0)


class _OpCensus:
    """Records every ATen op that really executes: the counting mode reports each op it runs itself (the
    parts of a decomposed op come back to it one by one), so no second dispatch mode is needed."""

    def __init__(self) -> None:
        self.calls: Counter[torch._ops.OpOverload] = Counter()
        self.outer_products = 0
        self.paused = False  # while the counter reads nested sizes: its own ops are not the user's

    def record(self, func: torch._ops.OpOverload, args: tuple, out: object) -> None:
        if self.paused:
            return
        self.calls[func] += 1
        if func.overloadpacket in _PRODUCTS and _is_outer_product(args, out):
            self.outer_products += out.numel()


_PRODUCTS = (aten.mul, aten.mul_)


class _NestedCounter(FlopCounterMode):
    """``FlopCounterMode`` that counts an op on nested tensors once per sequence (see the module's docstring).

    PyTorch's formulas read ``tensor.shape``, which a nested tensor does not have; each nested tensor is
    replaced by the shape (1, *component) of its i-th sequence, for i over the sequences, and by
    (n, *longest) for the padded bound.
    """

    def __init__(self, census: _OpCensus, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.census = census
        self.padded_extra = 0  # FLOPs the padded bound adds to the per-sequence count
        self.nested_seen = False

    def __enter__(self) -> _NestedCounter:
        # FlopCounterMode.__enter__, with the dispatch mode below: the one place PyTorch's internals are used
        self.flop_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _NestedDispatch(self)
        self.mode.__enter__()
        return self

    def _count_flops(self, func_packet, out, args, kwargs):
        if not _any_nested((args, kwargs, out)):
            formula = self.flop_registry.get(func_packet)
            if getattr(formula, "__code__", None) is not _SHAPE_WRAPPED:
                return super()._count_flops(func_packet, out, args, kwargs)
            raw = formula.__wrapped__  # PyTorch's formula inside its pytree shape wrapper
            flop = raw(*_shapes(args), out_shape=_shapes((out,))[0], **dict(zip(kwargs, _shapes(kwargs.values()))))
            for parent in set(self.mod_tracker.parents):
                self.flop_counts[parent][func_packet] += flop
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
    tensor does not have."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not isinstance(func, torch._ops.OpOverload) or str(func) in _METADATA:
            return super().__torch_dispatch__(func, types, args, kwargs)  # higher-order ops, nested sizes
        registry = self.counter.flop_registry
        if not _plain(func) and not (func.overloadpacket in registry and _any_nested((args, kwargs))):
            # PyTorch's rule: an op that decomposes is counted by its parts, which come back here
            with self:
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        self.counter.census.record(func, args, out)
        if func.overloadpacket in registry:
            return self.counter._count_flops(func.overloadpacket, out, args, kwargs)
        return out


#: Ops PyTorch's counting mode answers with NotImplemented (sizes and strides of nested tensors).
_METADATA = frozenset(str(op) for op in (
    aten.sym_is_contiguous.default, aten.is_contiguous.default, aten.is_contiguous.memory_format,
    aten.is_strides_like_format.default, aten.is_non_overlapping_and_dense.default, aten.size.default,
    aten.sym_size.default, aten.stride.default, aten.sym_stride.default, aten.storage_offset.default,
    aten.sym_storage_offset.default, aten.numel.default, aten.sym_numel.default, aten.dim.default))


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


def _padded(shapes: list[torch.Size]) -> torch.Size:
    """(n, *longest): every sequence padded to the largest size in each dim."""
    return torch.Size((len(shapes), *(max(dims) for dims in zip(*(s[1:] for s in shapes), strict=True))))


def _is_outer_product(args: tuple, out: object) -> bool:
    """A multiplication whose output is larger than either factor: a contraction written as
    broadcast-multiply-then-sum (``(q[:, None] * k[None]).sum(-1)``) does its work here."""
    factors = [a for a in args[:2] if isinstance(a, torch.Tensor)]
    return (len(factors) == 2 and isinstance(out, torch.Tensor) and not out.is_nested
            and out.numel() > max(factors[0].numel(), factors[1].numel()))


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
    census = _OpCensus()
    counter = _NestedCounter(census, display=False, custom_mapping=dict(EXTRA_FORMULAS))
    with one_thread(), counter:
        function(*args, **kwargs)
    flop_counts = counter.get_flop_counts()
    by_op = {str(packet): flop // 2 for packet, flop in flop_counts.get("Global", {}).items()}
    if census.outer_products:
        by_op[OUTER_PRODUCT] = census.outer_products
    by_module = {name: sum(ops.values()) // 2 for name, ops in flop_counts.items()}
    calls: Counter[str] = Counter()
    unaccounted: Counter[str] = Counter()
    for func, number in census.calls.items():
        calls[op_name(func)] += number
        if is_unknown(func):
            unaccounted[op_name(func)] += number
    return WorkCount(
        multiplications=counter.get_total_flops() // 2 + census.outer_products,
        by_op=by_op,
        by_module=by_module,
        calls=dict(calls),
        unaccounted=dict(unaccounted),
        device=_device_of(args, kwargs),
        padded_multiplications=((counter.get_total_flops() + counter.padded_extra) // 2 + census.outer_products
                                if counter.nested_seen else None),
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
