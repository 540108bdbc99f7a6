"""Reference for the tests only: the float64-closeness path tracer as it was before issue 17 (commit 76379b9).

The engine's tracer (seqlab.measure.paths) must give exactly the same path matrices; this copy is kept
unchanged apart from its imports and its doctests (removed: they are the engine's). Original docstring:

Path length between positions, measured on a real forward pass (L3, L4; Table 1's third column).

For input position i and output position j, the **path length** is the least number of matrix
products — and, separately, of compute ops — on any chain of data dependencies that carries x_i to
y_j. The lesson's two cases: through an Elman recurrence x_i reaches h_j after j - i + 1 products
(W_xh once, then W_hh at every step, L3); through self-attention every pair is the same few
products apart, however far the positions are (L4).

Method (min-plus propagation): beside every storage the pass writes, the tracer keeps a closeness
tensor of shape (2·S, storage elements) — for each unit and source position s, 1 / (1 + the least
distance from x_s to that element), 0 where there is no dependency. Each dispatched op maps the
closeness of its inputs to its outputs by a rule of :mod:`seqlab.measure.path_rules`; views read the
storage through their own strides, so views and in-place writes need no rule. An op without a rule
falls back to "every output element depends on every input element" and is named in the result.

What limits it: memory, S × (elements written in the pass) × 16 bytes (two float64 units). At
T = 128 and d = 256 a self-attention layer needs about 1 GiB and an LSTM a few GiB; pass ``sources``
(e.g. the first and last positions) to measure fewer rows. The tracer stops with a clear error
before it would use more than half of the memory available.

Dependencies are *structural* (the op reads the element), refined where a constant mask or zero is
known by value — see :mod:`seqlab.measure.path_rules`. Run layers in eval mode. Three rules on values:

* **cuts** — a softmax weight that is exactly 0 in the dtype computed (a score of -inf, or a finite fill
  so negative that exp underflows, e.g. -1e30 in float32) cuts every path through it, as a constant
  mask does; a finite fill that leaves a nonzero weight (-10, -1e3 in float64 … whatever stays > 0)
  does not;
* **NaN** — an output position whose value is NaN (an attention row whose every key is masked) is
  *undefined*: listed in :attr:`PathMatrix.undefined`, with None (never a path) in its column;
* **lengths** — input and output positions are separate axes: a cross-attention (3 queries reading 7
  memory rows) or a decoding step (1 query, T keys) gives a (sources x T_out) matrix.

Tensor identity: closeness is kept per storage, keyed by the storage's data pointer. Every storage
written (or cached) during the trace is held alive in ``_PathTracer.alive`` until the trace ends, so a
pointer is never reused for another storage while it is a key; tensors that come from outside the
trace (weights, the input) are alive for the caller anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from seqlab.errors import SeqlabError
from seqlab.measure.ops import is_contraction, is_movement, op_name
from seqlab.measure.trace import reference_kernels
from seqlab.memory import GIB, available_memory_bytes

import reference_path_rules as rules  # noqa: I001 - this folder's module, put on sys.path by pytest

UNITS = ("products", "ops")


@dataclass(frozen=True)
class PathMatrix:
    """Least path lengths from each source (input) position i to each output position j.

    Attributes:
        products: ``products[a][j]``: least matrix products from input position ``sources[a]`` to
            output position j; None where y_j does not depend on that input at all.
        ops: the same in compute ops (element-wise ops, reductions and products each count 1).
        sources: the input positions measured (0-based), rows of the two matrices.
        fallbacks: ops that had no rule and were treated as all-to-all (name → calls).
        undefined: output positions whose value is NaN somewhere (batch or feature); their entries are
            None: a NaN has no path, and it is not "independent" either — read this list.

    Each row has T_out entries, one per output position (T_out may differ from the T_in input positions).
    """

    products: tuple[tuple[int | None, ...], ...]
    ops: tuple[tuple[int | None, ...], ...]
    sources: tuple[int, ...]
    fallbacks: dict[str, int]
    undefined: tuple[int, ...] = ()

    def longest(self, unit: str = "products") -> int | None:
        """The maximum path length over all connected pairs (Table 1's "maximum path length").

        Raises:
            SeqlabError: ``unit`` is not ``"products"`` or ``"ops"``.
        """
        if unit not in UNITS:
            raise SeqlabError(f"unit must be one of {', '.join(UNITS)}; received {unit!r}")
        values = [v for row in getattr(self, unit) for v in row if v is not None]
        return max(values) if values else None

    def row(self, source: int, unit: str = "products") -> tuple[int | None, ...]:
        """Path lengths from input position ``source`` to every output position."""
        return getattr(self, unit)[self.sources.index(source)]


class _PathTracer(TorchDispatchMode):
    """Carries one closeness tensor per written storage and unit, op by op."""

    def __init__(self, sources: int, budget_bytes: float) -> None:
        super().__init__()
        # Both units ride in one tensor: rows [0, S) count products, rows [S, 2S) count ops, so every
        # rule runs once per op; only ``step`` tells the halves apart.
        self.sources = len(UNITS) * sources
        self.per_unit = sources
        self.closeness: dict[int, Tensor] = {}
        self.zeros_of_constants: dict[tuple, Tensor] = {}
        self.reader = _Reader(self)
        self.alive: list[Tensor] = []  # keeps storages alive so their keys are never reused
        self.fallbacks: Counter[str] = Counter()
        self.budget_bytes = budget_bytes
        self.used_bytes = 0

    # storage bookkeeping ------------------------------------------------------------------------
    @staticmethod
    def _key(tensor: Tensor) -> int:
        """The storage's data pointer: unique among live storages (see the module's "Tensor identity")."""
        return tensor.untyped_storage().data_ptr()

    def constant_zeros(self, tensor: Tensor) -> Tensor:
        """``tensor == 0`` for a tensor with no closeness, computed once per storage, view and version."""
        key = (self._key(tensor), tensor._version, tuple(tensor.shape), tensor.stride(), tensor.storage_offset())
        if key not in self.zeros_of_constants:
            self.zeros_of_constants[key] = tensor == 0
            self.alive.append(tensor)  # its storage key must not be reused while cached
        return self.zeros_of_constants[key]

    def read(self, tensor: Tensor) -> Tensor | None:
        storage = self.closeness.get(self._key(tensor))
        if storage is None:
            return None
        return storage.as_strided((self.sources, *tensor.shape), (storage.stride(0), *tensor.stride()),
                                  tensor.storage_offset())

    def write(self, tensor: Tensor, value: Tensor | None) -> None:
        key = self._key(tensor)
        storage = self.closeness.get(key)
        if storage is None:
            if value is None:
                return
            elements = tensor.untyped_storage().nbytes() // tensor.element_size()
            self._charge(self.sources * elements * 8)
            storage = torch.zeros((self.sources, elements), dtype=torch.float64)
            self.closeness[key] = storage
            self.alive.append(tensor)
        view = storage.as_strided((self.sources, *tensor.shape), (storage.stride(0), *tensor.stride()),
                                  tensor.storage_offset())
        view.copy_(0.0 if value is None else value)

    def _charge(self, nbytes: int) -> None:
        self.used_bytes += nbytes
        if self.used_bytes > self.budget_bytes:
            raise SeqlabError(
                f"path analysis needs more than {self.budget_bytes / GIB:.1f} GiB here (half the memory "
                f"available) for {self.per_unit} source positions; measure fewer sources or a smaller T or d")

    # dispatch -------------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view or torch.Tag.inplace_view in func.tags:
            return out  # shares its base's storage: read through its own strides
        outs = [leaf for leaf in tree_flatten(out)[0] if isinstance(leaf, Tensor)]
        if not outs:
            return out
        for tensor, value in zip(outs, self._propagate(func, args, kwargs, outs)):
            self.write(tensor, value)
        return out

    def _propagate(self, func, args, kwargs, outs: list[Tensor]) -> list[Tensor | None]:
        read = self.reader
        product = is_contraction(func)
        S = self.per_unit

        def step(c: Tensor) -> Tensor:
            """One op (and, for a contraction, one product) further: c -> c / (1 + c) in the units it costs."""
            if product:
                return c / (1.0 + c)
            return torch.cat([c[:S], c[S:] / (1.0 + c[S:])])

        if is_movement(func):
            moved = rules.movement(func, args, kwargs, outs, read, self.sources)
            if moved is not None:
                return moved
        elif is_contraction(func) and len(outs) == 1:
            result = rules.contraction(func, args, kwargs, outs[0], read, step, self.sources)
            if result is not NotImplemented:
                return [result]
        elif rules.is_reduction(func):
            return rules.reduction(func, args, kwargs, outs, read, step, self.sources)
        elif rules.is_pointwise(func) and len(outs) == 1:
            return [rules.pointwise(func, args, kwargs, outs[0], read, step, self.sources)]
        self.fallbacks[op_name(func)] += 1
        inputs = [read(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        spread = [rules.everything(inputs, o.shape, self.sources) for o in outs]
        return [None if c is None else step(c) for c in spread]


class _Reader:
    """What a rule may ask of the tracer: a tensor's closeness, and a constant's zeros (cached)."""

    def __init__(self, tracer: _PathTracer) -> None:
        self.tracer = tracer

    def __call__(self, tensor: Tensor) -> Tensor | None:
        return self.tracer.read(tensor)

    def constant_zeros(self, tensor: Tensor) -> Tensor:
        return self.tracer.constant_zeros(tensor)


def _distances(closeness: Tensor | None, sources: int, length: int,
               undefined: tuple[int, ...] = ()) -> tuple[tuple[int | None, ...], ...]:
    """(S, ..., T_out, d) closeness of an output -> per (source, position) least distance, None if none.

    Positions in ``undefined`` (NaN outputs) are None whatever their closeness.
    """
    if closeness is None:
        return tuple((None,) * length for _ in range(sources))
    best = closeness.movedim(-2, 1).reshape(sources, length, -1).amax(dim=-1)  # (S, T_out)
    return tuple(tuple(None if c <= 0 or j in undefined else int(round(1.0 / c - 1.0)) for j, c in enumerate(row))
                 for row in best.tolist())


def _nan_positions(y: Tensor) -> tuple[int, ...]:
    """Output positions (dim -2) holding a NaN anywhere in the batch or the features."""
    if not y.is_floating_point():
        return ()
    rows = y.detach().movedim(-2, 0).reshape(y.shape[-2], -1).isnan().any(dim=-1)  # (T_out,)
    return tuple(int(j) for j in rows.nonzero().flatten())


def _seed_closeness(x: Tensor, sources: Sequence[int]) -> Tensor:
    """Closeness of the input itself: 1 at the source position, 0 elsewhere: (S, *x.shape)."""
    T = x.shape[-2]
    one_hot = torch.zeros((len(sources), T), dtype=torch.float64)
    one_hot[torch.arange(len(sources)), torch.tensor(sources)] = 1.0  # (S, T)
    shape = (len(sources),) + (1,) * (x.dim() - 2) + (T, 1)
    return one_hot.reshape(shape).expand(len(sources), *x.shape)


def measure_paths(layer: Callable[[Tensor], Any], x: Tensor, *, sources: Sequence[int] | None = None,
                  outputs: Callable[[Any], Sequence[Tensor]] | None = None) -> list[PathMatrix] | PathMatrix:
    """Measure least path lengths from input positions to output positions of ``layer`` on ``x``.

    >>> rnn = torch.nn.RNN(4, 4)
    >>> paths = measure_paths(rnn, torch.randn(5, 4))
    >>> paths.row(0)  # x_1 reaches h_j after j products: W_ih x_1, then W_hh at every later step
    (1, 2, 3, 4, 5)
    >>> paths.row(3)  # the future does not reach the past
    (None, None, None, 1, 2)

    Args:
        layer: maps x to an output of shape (T_out, d_out) or (B, T_out, d_out); a tuple output is read
            at element 0 unless ``outputs`` selects tensors from it. T_out may differ from T: a
            cross-attention's queries (x is its memory) or one decoding query over T keys.
        x: (T, d_in), (B, T, d_in) or (B, H, T, d_in): positions on dim -2.
        sources: input positions to measure from (default: all T). Memory grows with their number.
        outputs: picks the tensors to measure from what ``layer`` returns (e.g. every layer of a
            stack); when given, a list of :class:`PathMatrix` is returned, one per tensor.

    Returns:
        A :class:`PathMatrix` (or a list of them with ``outputs``), in products and in ops: one row
        per source, one entry per output position; NaN output positions listed as ``undefined``.

    Raises:
        SeqlabError: x has fewer than 2 dimensions, a (B, T, d) x for a module with ``batch_first=False``
            (its layout contradicts the positions on dim -2), a source is out of range, an output is not a
            tensor with positions on dim -2, or the analysis would exceed half the available memory.

    >>> memory = torch.randn(7, 4)  # decoding: one query reads 7 keys and values
    >>> measure_paths(lambda m: torch.softmax(torch.ones(1, 4) @ m.T, -1) @ m, memory).products
    ((1,), (1,), (1,), (1,), (1,), (1,), (1,))
    """
    if not isinstance(x, Tensor) or x.dim() < 2:
        got = getattr(x, "shape", type(x))
        raise SeqlabError(f"x must have shape (T, d), (B, T, d) or (..., T, d), received {got}")
    if getattr(layer, "batch_first", None) is False and x.dim() == 3:
        raise SeqlabError(f"{type(layer).__name__} has batch_first=False: it reads x {tuple(x.shape)} as (T, B, d), "
                          "but the positions here are on dim -2; pass x as (T, d) or a batch_first module")
    T = x.shape[-2]
    sources = tuple(range(T)) if sources is None else tuple(sources)
    if not sources or any(not isinstance(s, int) or not 0 <= s < T for s in sources):
        raise SeqlabError(f"sources must be positions in [0, {T - 1}], received {sources!r}")
    x = x.detach().clone()
    tracer = _PathTracer(len(sources), budget_bytes=available_memory_bytes() / 2)
    tracer.write(x, _seed_closeness(x, sources).repeat(len(UNITS), *([1] * x.dim())))
    with reference_kernels(), torch.no_grad(), tracer:
        result = layer(x)
    selected = outputs(result) if outputs is not None else [result[0] if isinstance(result, tuple) else result]
    matrices = []
    for y in selected:
        if not isinstance(y, Tensor) or y.dim() < 2:
            raise SeqlabError(f"an output must be a tensor with its positions on dim -2, (T_out, d_out) or "
                              f"(B, T_out, d_out), received {getattr(y, 'shape', type(y))}")
        closeness = tracer.read(y)
        halves = (None, None) if closeness is None else (closeness[:len(sources)], closeness[len(sources):])
        undefined = _nan_positions(y)
        matrices.append(PathMatrix(
            products=_distances(halves[0], len(sources), y.shape[-2], undefined),
            ops=_distances(halves[1], len(sources), y.shape[-2], undefined),
            sources=sources,
            fallbacks=dict(tracer.fallbacks),
            undefined=undefined,
        ))
    return matrices if outputs is not None else matrices[0]
