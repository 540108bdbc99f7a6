"""Measured chain depth: the longest run of operations that must happen one after another (L1, L2, L8).

A forward pass is recorded op by op (``TorchDispatchMode``) as a dependency graph: an op depends on
the ops that last wrote the storage of each tensor it reads. The **span** (critical path) is the
longest chain in that graph, given in two units:

* ``ops`` — compute ops in a row (matrix products, element-wise ops, reductions, softmax...).
  Movement ops (views, reshapes, copies, concatenation, tensor creation; see
  :func:`seqlab.measure.ops.is_movement`) cost nothing;
* ``products`` — matrix products (contractions) in a row.

With unlimited processors the span is the least number of waits; work / span is the parallelism
the pass offers. The recurrence's span grows as T; attention's does not grow at all (L1 vs L2).
A product followed by a sum over a dim both factors step through (``(q[..., None] * S).sum(-2)``) is a
contraction: the sum is one product on the chain, as the einsum would be (:class:`~seqlab.measure.ops.
ProductLedger`). Higher-order ops (FlexAttention, ``cond``, ``while_loop``) are traced through their eager parts
(:func:`~seqlab.measure.ops.run_higher_order`); a jagged nested tensor through its dense ones.

Identity of tensors: dependencies are kept per *storage*, keyed by the storage's device and data
pointer (``untyped_storage().data_ptr()``, public API; PyTorch's private ``_cdata`` is not used). Every
tensor made or written during the trace is held until the trace ends, so a storage's memory is never
freed and its pointer never reused for another tensor inside one trace. A storage without memory (zero
bytes, the meta device) has no pointer of its own and is keyed by the tensor that owns it (its view
base), held alive as well. Views share their base's storage, so a read through a view sees the
base's writers, and an in-place write (``add_``, ``copy_`` into a slice) makes the written elements
depend on the writer.

Granularity, exact to the element: a storage written whole (the output of an out-of-place op, an
in-place op on the whole tensor) has one depth. The first write into *part* of a storage (PyTorch's
CPU LSTM and GRU cells run ``sigmoid_`` / ``tanh_`` on slices of one gates buffer) gives that storage
one depth per element, and a read then takes the largest depth among the elements the view reaches
(its size, strides and offset). So independent slices of one buffer are independent chains, as in
an out-of-place cell doing the same ops (issue 13, kind 5). A view of another element size than the
map's (a dtype view) is treated conservatively: it reads the whole storage's largest depth.

Fused kernels (fused SDPA, the ``MultiheadAttention`` fast path, oneDNN's LSTM) run a whole chain as
one op. :func:`measure_span` therefore runs with them switched off by default
(:func:`reference_kernels`, from :mod:`seqlab.measure.switches`: re-entrant and thread-safe, every switch
back as it was), so the chain inside is seen as ops; any fused op that still runs is named in
:attr:`Span.fused`.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from seqlab.measure.dispatch import OWN_RULE, passed_on
from seqlab.measure.modes import EngineMode
from seqlab.measure.ops import (
    FUSED_OPS,
    ProductLedger,
    is_contraction,
    is_movement,
    kept_decisions,
    op_name,
    tensors_in,
)
from seqlab.measure.switches import one_thread, reference_kernels

__all__ = ["Span", "measure_span", "reference_kernels"]


@dataclass(frozen=True)
class Span:
    """Longest dependency chain of one forward pass, and the totals it is part of.

    Attributes:
        ops: compute ops on the longest chain (the span in ops).
        products: matrix products on the chain with the most products (the span in products).
        total_ops: compute ops recorded in the whole pass (the work in ops).
        total_products: matrix products recorded in the whole pass.
        fused: fused kernels that ran as one opaque op (name → calls); their inner chain is not seen.
        op_counts: every compute op recorded (name → calls).
    """

    ops: int
    products: int
    total_ops: int
    total_products: int
    fused: dict[str, int]
    op_counts: dict[str, int]

    @property
    def parallelism(self) -> float:
        """Work over span in ops: how many ops could run at once on average with unlimited processors."""
        return self.total_ops / self.ops if self.ops else 0.0


class _Depth:
    """Chain depth of a value: compute ops and matrix products on the longest path that produced it."""

    __slots__ = ("ops", "products")

    def __init__(self, ops: int = 0, products: int = 0) -> None:
        self.ops = ops
        self.products = products


class _StorageDepth:
    """Depth of one storage: one :class:`_Depth` while it is written whole; after a partial write, depths per
    run of elements (``segments``, while every write is contiguous) or per element (``ops`` and ``products``
    maps, int64 tensors over the storage's elements, once a strided view is written or read across runs)."""

    __slots__ = ("whole", "segments", "starts", "elements", "ops", "products", "itemsize")

    def __init__(self, whole: _Depth) -> None:
        self.whole = whole
        self.segments: list[tuple[int, int, _Depth]] | None = None  # disjoint [start, end) element runs, sorted
        self.starts: list[int] = []  # each run's start, for bisection (a buffer written row by row has T runs)
        self.elements = 0
        self.ops: torch.Tensor | None = None
        self.products: torch.Tensor | None = None
        self.itemsize = 0

    def read(self, tensor: torch.Tensor) -> _Depth:
        if tensor.numel() == 0:
            return _Depth()
        if self.segments is None and self.ops is None:
            return self.whole
        if tensor.is_nested or tensor.element_size() != self.itemsize or tensor.layout != torch.strided:
            return self._deepest()
        if self.segments is not None:
            start, end = _extent(tensor)
            lo = max(bisect.bisect_right(self.starts, start) - 1, 0)
            touched = [depth for a, b, depth in self.segments[lo:bisect.bisect_left(self.starts, end)]
                       if a < end and start < b]
            if len(touched) == 1 or tensor.is_contiguous():
                return _Depth(max(d.ops for d in touched), max(d.products for d in touched))
            self._to_maps()
        where = (tensor.shape, tensor.stride(), tensor.storage_offset())
        return _Depth(int(self.ops.as_strided(*where).max()), int(self.products.as_strided(*where).max()))

    def write_part(self, tensor: torch.Tensor, depth: _Depth) -> bool:
        """Record a write into part of the storage; False when it cannot be mapped (then written whole)."""
        itemsize = tensor.element_size()
        if tensor.is_nested or tensor.layout != torch.strided or (self.itemsize and itemsize != self.itemsize):
            return False
        if not self.itemsize:
            self.itemsize = itemsize
            self.elements = tensor.untyped_storage().nbytes() // itemsize
            self.segments, self.starts = [(0, self.elements, self.whole)], [0]
        if self.segments is not None and tensor.is_contiguous():
            start, end = _extent(tensor)
            lo, hi = max(bisect.bisect_right(self.starts, start) - 1, 0), bisect.bisect_left(self.starts, end)
            kept = [piece for a, b, old in self.segments[lo:hi]
                    for piece in ((a, min(b, start), old), (max(a, end), b, old)) if piece[0] < piece[1]]
            kept = sorted([*kept, (start, end, depth)], key=lambda piece: piece[0])
            self.segments[lo:hi], self.starts[lo:hi] = kept, [piece[0] for piece in kept]
            return True
        if self.segments is not None:
            self._to_maps()
        where = (tensor.shape, tensor.stride(), tensor.storage_offset())
        self.ops.as_strided(*where).fill_(depth.ops)
        self.products.as_strided(*where).fill_(depth.products)
        return True

    def _to_maps(self) -> None:
        """From runs to one depth per element (exact for strided views)."""
        self.ops = torch.empty(self.elements, dtype=torch.int64)
        self.products = torch.empty(self.elements, dtype=torch.int64)
        for start, end, depth in self.segments:
            self.ops[start:end] = depth.ops
            self.products[start:end] = depth.products
        self.segments = None

    def _deepest(self) -> _Depth:
        if self.segments is not None:
            return _Depth(max(d.ops for *_, d in self.segments), max(d.products for *_, d in self.segments))
        return _Depth(int(self.ops.max()), int(self.products.max()))


def _extent(tensor: torch.Tensor) -> tuple[int, int]:
    """[first, last + 1) element of the storage a strided view reaches (exactly its elements when contiguous)."""
    start = tensor.storage_offset()
    if tensor.is_contiguous():
        return start, start + tensor.numel()
    return start, start + 1 + sum((size - 1) * abs(stride) for size, stride in zip(tensor.shape, tensor.stride(),
                                                                                   strict=True))


@functools.cache
def _mutated(func: torch._ops.OpOverload) -> tuple[tuple[int, str], ...]:
    """(position, name) of each argument the op's schema says it writes (``Tensor(a!)``)."""
    return tuple((i, argument.name) for i, argument in enumerate(func._schema.arguments)
                 if argument.alias_info is not None and argument.alias_info.is_write)


_tensors = tensors_in
#: The ops a :class:`~seqlab.measure.ops.ProductLedger` pairs: element-wise products, and the sums that contract them.
_LEDGER_PRODUCTS = frozenset({torch.ops.aten.mul, torch.ops.aten.mul_})
_LEDGER_SUMS = frozenset({torch.ops.aten.sum})


def _covers_storage(tensor: torch.Tensor) -> bool:
    """The tensor is its whole storage, element for element (a write to it replaces every element)."""
    if tensor.is_nested or tensor.layout != torch.strided:
        return True
    return (tensor.storage_offset() == 0 and tensor.is_contiguous()
            and tensor.numel() * tensor.element_size() == tensor.untyped_storage().nbytes())


class _SpanTracer(EngineMode):
    """Dispatch mode that keeps, for every storage written during the trace, the depth of its last writes."""

    supports_higher_order_operators = True  # run through their eager parts (ops.run_higher_order)

    def __init__(self) -> None:
        super().__init__()
        self.depth_of_storage: dict[tuple, _StorageDepth] = {}
        self.alive: list[torch.Tensor] = []  # keeps storages alive so their keys are never reused
        self.span = _Depth()
        self.total_ops = 0
        self.total_products = 0
        self.fused: Counter[str] = Counter()
        self.op_counts: Counter[str] = Counter()
        self.products = ProductLedger()  # element-wise products a later sum makes contractions

    def _contracts(self, func, args: tuple, kwargs: dict, out: object) -> int:
        """1 when this op is a sum that makes an element-wise product a contraction (one matrix product more on the
        chain), else 0; an element-wise product is remembered for such a sum (:class:`~seqlab.measure.ops.
        ProductLedger`)."""
        packet = func.overloadpacket
        if packet in _LEDGER_PRODUCTS:
            self.products.product(func, args, out)
        elif packet in _LEDGER_SUMS:
            return int(self.products.reduction(func, args, kwargs)[1])
        return 0

    @staticmethod
    def _key(tensor: torch.Tensor) -> tuple:
        """Storage identity: (device, data pointer); the owning tensor's id where the storage has no memory."""
        try:
            pointer = tensor.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # a tensor subclass without a storage of its own
            pointer = 0
        if pointer:
            return tensor.device, pointer
        base = tensor._base if tensor._base is not None else tensor
        return "object", id(base)

    def _depth(self, tensor: torch.Tensor) -> _Depth:
        stored = self.depth_of_storage.get(self._key(tensor))
        return stored.read(tensor) if stored is not None else _Depth()

    def _write(self, tensor: torch.Tensor, depth: _Depth) -> None:
        key = self._key(tensor)
        stored = self.depth_of_storage.get(key)
        if stored is None or _covers_storage(tensor) or not stored.write_part(tensor, depth):
            self.depth_of_storage[key] = _StorageDepth(depth)
        self.alive.append(tensor)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        answer = passed_on(self, func, types, args, kwargs)
        if answer is not OWN_RULE:
            return answer
        out = func(*args, **kwargs)
        self.record(func, args, kwargs, out)
        return out

    def record(self, func, args: tuple, kwargs: dict, out: Any) -> None:
        """Record one op that ran (``out`` its result): the depth of what it wrote is one step past the deepest
        of what it read. In-place ops return their input, and the reads are taken before the writes, so
        recording after the op ran sees the storages as the op found them."""
        kind = _KINDS.get(id(func), _UNKNOWN)
        if kind is _UNKNOWN:
            kind = _KINDS[id(func)] = _kind(func)
        if kind is None:  # a view: same storage, same writers, nothing to record
            return
        step_ops, step_products, name, fused, mutated, paired = kind
        inputs = [*_tensors(args), *_tensors(kwargs.values())]
        if paired and not step_products:  # decided per op: only mul and sum meet the ledger
            step_products = self._contracts(func, args, kwargs, out)
        if step_ops:
            self.total_ops += 1
            self.total_products += step_products
            self.op_counts[name] += 1
            if fused:
                self.fused[name] += 1
        ops = products = 0
        depths = self.depth_of_storage
        for tensor in inputs:
            stored = depths.get(self._key(tensor))
            if stored is not None:
                depth = stored.read(tensor)
                ops, products = max(ops, depth.ops), max(products, depth.products)
        depth = _Depth(ops + step_ops, products + step_products)
        if mutated:  # an in-place op returns the argument it wrote: that storage is written once
            written = list({id(t): t for t in _tensors((out, *(args[i] if i < len(args) else kwargs.get(n)
                                                                for i, n in mutated)))}.values())
        else:
            written = _tensors((out,))
        for tensor in written:
            self._write(tensor, depth)
        self.span.ops = max(self.span.ops, depth.ops)
        self.span.products = max(self.span.products, depth.products)

    def result(self) -> Span:
        """The span recorded so far."""
        return Span(ops=self.span.ops, products=self.span.products, total_ops=self.total_ops,
                    total_products=self.total_products, fused=dict(self.fused), op_counts=dict(self.op_counts))


_KINDS: dict[int, tuple | None] = kept_decisions({})  # id of the op (lives as long as the process)
_UNKNOWN = object()


def _kind(func: torch._ops.OpOverload) -> tuple[int, int, str, bool, tuple[tuple[int, str], ...], bool] | None:
    """What one op adds to a chain, decided once per op (the tracer asks for every op it sees): None for a view
    (nothing to record); else (ops, products, name, fused, written arguments, paired): 0 and 0 for movement, 1 op
    (and 1 product for a contraction) for compute; the (position, name) of each argument it writes
    (:func:`_mutated`); whether a :class:`~seqlab.measure.ops.ProductLedger` pairs it (``mul``, ``sum``)."""
    if func.is_view:
        return None
    paired = func.overloadpacket in _LEDGER_PRODUCTS or func.overloadpacket in _LEDGER_SUMS
    if is_movement(func):  # in-place views (``transpose_``) included: recorded, at no cost
        return 0, 0, op_name(func), False, _mutated(func), paired
    return 1, int(is_contraction(func)), op_name(func), func.overloadpacket in FUSED_OPS, _mutated(func), paired


def measure_span(function: Callable[..., Any], *args: Any, expand_fused: bool = True, **kwargs: Any) -> Span:
    """Run ``function(*args, **kwargs)`` once and measure its span (longest chain of dependent ops).

    >>> rnn = torch.nn.RNN(4, 4)
    >>> [measure_span(rnn, torch.randn(T, 4)).products for T in (8, 16)]  # one product by W_hh per step
    [8, 16]

    Args:
        function: any callable that runs PyTorch ops (a module, a function, a lambda).
        *args, **kwargs: passed through to ``function``. Tensors passed in count as depth 0.
        expand_fused: run under :func:`reference_kernels` (default) so fused kernels show their chain.
            The call runs on one CPU thread (:func:`~seqlab.measure.switches.one_thread`): a trace pays per op.

    Returns:
        A :class:`Span`: longest chain in compute ops and in matrix products, with totals.

    Raises:
        Exception: whatever ``function`` raises, unchanged; nothing of its own.
    """
    tracer = _SpanTracer()
    kernels = reference_kernels() if expand_fused else contextlib.nullcontext()
    with one_thread(), kernels, torch.no_grad(), tracer:
        function(*args, **kwargs)
    return tracer.result()
