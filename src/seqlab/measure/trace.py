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

Identity of tensors: dependencies are kept per *storage*, and every tensor made during the trace is
held until the trace ends, so a freed tensor's ``id`` or storage pointer is never mistaken for a new
one. Views share their base's storage, so a read through a view sees the base's writers, and an
in-place write (``add_``, ``copy_`` into a slice) makes the written storage depend on the writer.
This is exact at storage granularity and conservative inside one storage: after a write into one
slice of a buffer, reading another slice also waits for that write.

Fused kernels (fused SDPA, the ``MultiheadAttention`` fast path, oneDNN's LSTM) run a whole chain as
one op. :func:`measure_span` therefore runs with them switched off by default
(:func:`reference_kernels`), so the chain inside is seen as ops; any fused op that still runs is
named in :attr:`Span.fused`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from seqlab.measure.ops import FUSED_OPS, is_contraction, is_movement, op_name


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


class _SpanTracer(TorchDispatchMode):
    """Dispatch mode that keeps, for every storage written during the trace, the depth of its last write."""

    def __init__(self) -> None:
        super().__init__()
        self.depth_of_storage: dict[int, _Depth] = {}
        self.alive: list[torch.Tensor] = []  # keeps storages alive so their keys are never reused
        self.span = _Depth()
        self.total_ops = 0
        self.total_products = 0
        self.fused: Counter[str] = Counter()
        self.op_counts: Counter[str] = Counter()

    @staticmethod
    def _key(tensor: torch.Tensor) -> int:
        return tensor.untyped_storage()._cdata

    def _depth(self, tensor: torch.Tensor) -> _Depth:
        return self.depth_of_storage.get(self._key(tensor), _Depth())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        out = func(*args, **kwargs)
        if is_movement(func) and not func.is_view:
            step_ops = step_products = 0
        elif func.is_view or torch.Tag.inplace_view in func.tags:
            return out  # same storage, same writers: nothing to record
        else:
            step_ops = 1
            step_products = 1 if is_contraction(func) else 0
            self.total_ops += 1
            self.total_products += step_products
            self.op_counts[op_name(func)] += 1
            if func.overloadpacket in FUSED_OPS:
                self.fused[op_name(func)] += 1
        before = [self._depth(t) for t in inputs]
        depth = _Depth(
            max((d.ops for d in before), default=0) + step_ops,
            max((d.products for d in before), default=0) + step_products,
        )
        for tensor in (t for t in tree_leaves(out) if isinstance(t, torch.Tensor)):
            self.depth_of_storage[self._key(tensor)] = depth
            self.alive.append(tensor)
        self.span.ops = max(self.span.ops, depth.ops)
        self.span.products = max(self.span.products, depth.products)
        return out


@contextlib.contextmanager
def reference_kernels() -> Iterator[None]:
    """Switch off fused CPU kernels so their inner chain runs as ordinary ops that a trace can see.

    SDPA uses its math reference (two ``bmm`` and a softmax), ``nn.MultiheadAttention`` and
    ``nn.TransformerEncoderLayer`` leave their fast path, and oneDNN's fused LSTM/GRU is disabled.
    Results are the same up to rounding; only the kernels change.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fast_path_was = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with warnings.catch_warnings():
            # mkldnn.flags() re-applies every oneDNN setting and warns about Intel-GPU TF32 on CPU builds.
            warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
            with torch.backends.mkldnn.flags(enabled=False), sdpa_kernel(SDPBackend.MATH):
                yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path_was)


def measure_span(function: Callable[..., Any], *args: Any, expand_fused: bool = True, **kwargs: Any) -> Span:
    """Run ``function(*args, **kwargs)`` once and measure its span (longest chain of dependent ops).

    >>> rnn = torch.nn.RNN(4, 4)
    >>> [measure_span(rnn, torch.randn(T, 4)).products for T in (8, 16)]  # one product by W_hh per step
    [8, 16]

    Args:
        function: any callable that runs PyTorch ops (a module, a function, a lambda).
        *args, **kwargs: passed through to ``function``. Tensors passed in count as depth 0.
        expand_fused: run under :func:`reference_kernels` (default) so fused kernels show their chain.

    Returns:
        A :class:`Span`: longest chain in compute ops and in matrix products, with totals.

    Raises:
        Whatever ``function`` raises; nothing of its own.
    """
    tracer = _SpanTracer()
    kernels = reference_kernels() if expand_fused else contextlib.nullcontext()
    with kernels, torch.no_grad(), tracer:
        function(*args, **kwargs)
    return Span(
        ops=tracer.span.ops,
        products=tracer.span.products,
        total_ops=tracer.total_ops,
        total_products=tracer.total_products,
        fused=dict(tracer.fused),
        op_counts=dict(tracer.op_counts),
    )
