"""Dependence of an op without a path rule, derived exactly from its own Jacobian on the concrete inputs.

The path tracer (:mod:`seqlab.measure.path_tracer`) has hand rules for a small set of primitive ops and runs
composite ops through PyTorch's decompositions. An op that has neither (``aten._cdist_forward``,
``aten.avg_pool2d``, ``aten.glu``…) is not guessed: this module computes which input elements each output
element depends on **at the inputs the pass really gave it**, from the op's Jacobian in float64
(``torch.autograd.functional.jacobian``, reverse or forward mode, whichever needs fewer passes), and moves
the distances through that boolean pattern by a min-plus product:

    d_out[s, o] = min { d_in[s, i] : ∂out_o / ∂in_i ≠ 0 (or NaN) } + one step

This is *numerical* dependence at the point (the same reading as the Jacobian the tests compare with): a
max-pool output depends on its window's largest element only, a hard-swish below −3 on nothing. Integer
and boolean outputs have a derivative of 0 wherever they are defined (they are piecewise constant), so
they depend on no source. The Jacobian is only taken when it is small (:data:`LIMIT` entries); a larger
one, an op without a derivative, or a complex tensor is refused (returns None) and the tracer names the op.

A second exact reading by value covers what no single op's Jacobian can: a product of spectra closed by an inverse
DFT (:class:`SpectralProducts`). Each transform is all-to-all on its own; the chain forward DFT → product → inverse
DFT is a circular convolution, whose dependence the convolution theorem gives from the two time-domain signals'
values, so an FFT convolution zero-padded to 2T (Hyena) reads causal, exactly.

Shapes: S distance rows (sources × the two units), n input elements, m output elements.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from torch import Tensor

from seqlab.measure.distances import UNREACHABLE, unreachable

#: The most Jacobian entries (output elements × input elements, summed over pairs) derived for one op call.
LIMIT = 2**22
#: Below this fraction of its output element's largest derivative an entry is rounding, read as 0 (64 float64 eps).
ROUNDOFF = 64 * torch.finfo(torch.float64).eps
#: Ops that read one triangle of a matrix and take the other as its mirror (``UPLO``, "L" by default).
TRIANGLE_READERS = frozenset({torch.ops.aten._linalg_eigh.default, torch.ops.aten.linalg_eigh.default})
#: Elements per chunk of the boolean min-plus product (S · outputs · inputs int32 values, 64 MiB).
CHUNK_ELEMENTS = 2**24

Read = Callable[[Tensor], Tensor | None]


def _traced_floats(leaves: Sequence[Any], read: Read) -> list[int]:
    """Slots of the leaves that are floating tensors carrying distances."""
    return [i for i, leaf in enumerate(leaves)
            if isinstance(leaf, Tensor) and leaf.is_floating_point() and read(leaf) is not None]


def derive(func: torch._ops.OpOverload, leaves: list[Any], rebuild: Callable[[list[Any]], tuple[tuple, dict]],
           read: Read, outs: Sequence[Tensor], rows: int) -> list[Tensor | None] | None:
    """Distances (before the op's own step) of each output of ``func``, from its Jacobian; None when refused.

    Args:
        func: an op with no path rule (functional: it must not write into its inputs).
        leaves, rebuild: the op's arguments as a flat list and the function that rebuilds (args, kwargs)
            (:func:`seqlab.measure.path_rules.flat_arguments`).
        read: distances of a tensor, (rows, *shape), or None for a constant.
        outs: the op's real outputs (their shapes and dtypes).
        rows: distance rows.

    Returns:
        One (rows, *out.shape) distance (None: a constant) per output, or None when the op cannot be derived
        (a complex tensor, a Jacobian over :data:`LIMIT` entries, no derivative formula, an op that fails in float64).
    """
    slots = _traced_floats(leaves, read)
    if not slots:
        return [None for _ in outs]
    floats = [o for o in outs if o.is_floating_point()]
    if any(t.is_complex() for t in [*outs, *(leaf for leaf in leaves if isinstance(leaf, Tensor))]):
        return None
    if sum(o.numel() for o in floats) * sum(leaves[i].numel() for i in slots) > LIMIT:
        return None
    patterns = _patterns(func, leaves, rebuild, slots, outs)
    if patterns is None:
        return None
    result: list[Tensor | None] = []
    for k, out in enumerate(outs):
        if not out.is_floating_point():
            result.append(None)  # integer / boolean: piecewise constant, derivative 0
            continue
        if out.numel() == 0:
            result.append(unreachable(rows, out.shape))
            continue
        best = None
        for i, pattern in zip(slots, patterns[k], strict=True):
            if leaves[i].numel() == 0:
                continue
            d = _through(read(leaves[i]).reshape(rows, -1), pattern.reshape(out.numel(), -1))
            best = d if best is None else torch.minimum(best, d)
        result.append(unreachable(rows, out.shape) if best is None else best.reshape(rows, *out.shape))
    return result


def _patterns(func, leaves: list[Any], rebuild, slots: list[int], outs: Sequence[Tensor]) -> list[list[Tensor]] | None:
    """``patterns[k][a]``: bool ``(*outs[k].shape, *leaves[slots[a]].shape)``, True where the derivative is not 0."""
    inputs = tuple(leaves[i].detach().to(torch.float64) for i in slots)
    float_outputs = [k for k, o in enumerate(outs) if o.is_floating_point()]

    constants = [leaf.detach().to(torch.float64) if isinstance(leaf, Tensor) and leaf.is_floating_point() else leaf
                 for leaf in leaves]  # the op sees one float dtype, as in the pass

    def function(*values: Tensor) -> tuple[Tensor, ...]:
        changed = list(constants)
        for i, value in zip(slots, values, strict=True):
            changed[i] = value
        call_args, call_kwargs = rebuild(changed)
        call_args = _one_triangle(func, call_args, call_kwargs)
        produced = func(*call_args, **call_kwargs)
        produced = list(produced) if isinstance(produced, (list, tuple)) else [produced]
        return tuple(produced[k] for k in float_outputs)

    m = sum(outs[k].numel() for k in float_outputs)
    n = sum(t.numel() for t in inputs)
    strategy = "forward-mode" if n < m else "reverse-mode"
    try:
        jacobian = _worker().submit(_jacobian, function, inputs, strategy).result()
    except torch.OutOfMemoryError:
        raise
    except Exception:  # noqa: BLE001 - no derivative, no float64 kernel, a shape the op refuses: not derivable
        return None
    by_output: list[list[Tensor]] = [[] for _ in outs]
    for row, k in zip(jacobian, float_outputs, strict=True):
        by_output[k] = list(row)
    return by_output


@functools.cache
def _worker() -> ThreadPoolExecutor:
    """The thread Jacobians are taken on. A dispatch mode's handler runs below autograd (its thread excludes
    the autograd keys, and its modes are popped): a thread of its own starts from PyTorch's defaults, with
    no mode and autograd on, and changes nothing of the caller's thread."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="seqlab-jacobian")


def _jacobian(function, inputs: tuple[Tensor, ...], strategy: str) -> tuple[tuple[Tensor, ...], ...]:
    """The Jacobian's nonzero (or NaN) pattern as blocks ``[output][input]``; vectorized first, one pass per row or
    column if vmap cannot run."""
    torch.set_grad_enabled(True)  # this worker thread's own grad mode
    try:
        blocks = torch.autograd.functional.jacobian(function, inputs, vectorize=True, strategy=strategy)
    except Exception:  # noqa: BLE001 - an op without a batching rule: plain passes
        blocks = torch.autograd.functional.jacobian(function, inputs)
    # read on this thread, where the blocks were made (a block of an output that does not depend on an input can
    # be a functorch wrapper that is unsafe to touch from another thread); plain booleans go back
    widths = [t.dim() for t in inputs]
    return tuple(_nonzero(row, widths) for row in blocks)


def _nonzero(row: Sequence[Tensor], widths: Sequence[int]) -> tuple[Tensor, ...]:
    """One output's Jacobian blocks, ``(*out.shape, *in_a.shape)`` for input a of ``widths[a]`` dims, as booleans:
    the derivative is not 0 (or is NaN).

    An entry at most :data:`ROUNDOFF` times the largest |∂out_o/∂in_i| of its output element is read as 0: it is
    rounding in the backward formula (a QR's R[i, j] against a column it never reads comes back as 1e-17), and a
    change that small cannot move a float32 or float64 output anyway.
    """
    largest = None
    for block, width in zip(row, widths, strict=True):
        flat = block.detach().abs().nan_to_num(nan=0.0).reshape(*block.shape[:block.dim() - width], -1)
        top = flat.amax(dim=-1) if flat.shape[-1] else flat.new_zeros(flat.shape[:-1])
        largest = top if largest is None else torch.maximum(largest, top)
    result = []
    for block, width in zip(row, widths, strict=True):
        floor = (ROUNDOFF * largest).reshape(*largest.shape, *([1] * width))
        result.append(((block.abs() > floor) | block.isnan()).clone())
    return tuple(result)


def _one_triangle(func, args: tuple, kwargs: dict) -> tuple:
    """The arguments of a one-triangle reader with its matrix rebuilt from that triangle (the other mirrored), so
    that autograd's formula, which assumes a symmetric input and hands the gradient to both triangles, gives the
    other triangle none. Any other op's arguments as they are."""
    if func not in TRIANGLE_READERS or not args or not isinstance(args[0], Tensor):
        return args
    upper = str(args[1] if len(args) > 1 else kwargs.get("UPLO", "L")).upper() == "U"
    matrix = args[0]
    kept = matrix.triu() if upper else matrix.tril()
    mirrored = (matrix.triu(1) if upper else matrix.tril(-1)).mT
    return (kept + mirrored, *args[1:])


def _through(d: Tensor, pattern: Tensor) -> Tensor:
    """(S, n) distances through an (m, n) boolean dependence pattern: (S, m), the least over allowed inputs."""
    S, n = d.shape
    m = pattern.shape[0]
    if m == 0 or n == 0:
        return unreachable(S, (m,))
    rows = max(1, CHUNK_ELEMENTS // max(1, S * n))
    chunks = [torch.where(pattern[None, start:start + rows], d[:, None, :], UNREACHABLE).amin(dim=-1)
              for start in range(0, m, rows)]
    return torch.cat(chunks, dim=-1)


# --- transforms: a product in the frequency domain is a convolution ---------------------------------------------

_FORWARD, _INVERSE = "forward", "inverse"


def transform_direction(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> str | None:
    """``"forward"`` for a forward DFT (``_fft_r2c``, ``_fft_c2c`` with ``forward=True``), ``"inverse"`` for an
    inverse one (``_fft_c2r``, ``_fft_c2c`` with ``forward=False``), None for any other op."""
    name = func.overloadpacket.__name__
    if name == "_fft_r2c":
        return _FORWARD
    if name == "_fft_c2r":
        return _INVERSE
    if name == "_fft_c2c":
        forward = args[3] if len(args) > 3 else kwargs.get("forward", True)
        return _FORWARD if forward else _INVERSE
    return None


class SpectralProducts:
    """Dependence through a product in the frequency domain, exactly: the convolution theorem, read by value.

    The structural rule of a DFT is all-to-all (every frequency reads every point), and an inverse DFT after a
    product of spectra can cancel exactly — an FFT convolution zero-padded to 2T (Hyena, long convolutions, FNet
    variants) is causal, which no op-by-op structure sees. This rule follows the chain instead: a forward transform
    of a signal a (n points along one dim) gives a *spectrum*; element-wise scalings keep it one; the product of two
    spectra (of a and b, same dim and n) is the spectrum of their circular convolution; its inverse transform is

        y[t] = Σ_s a[s] · b[(t − s) mod n],

    so y[t] depends on a[s] exactly where b[(t − s) mod n] ≠ 0, and on b[s] where a[(t − s) mod n] ≠ 0 — read from
    the values of the two time-domain signals the forward transforms received (a zero padding is exactly 0). A
    spectrum transformed back alone gives its own signal, point for point. Its cost on a path: the two transforms
    are products (DFT matrices), the product and each scaling one op. Anything else on the chain (a sum of two
    products, a spectrum times a tensor that is not one, transforms over several dims) is not followed: the tracer
    keeps its structural rule and names the inverse transform (a bound).

    Shapes: S distance rows; signals (…, n) along their transformed dim, broadcast against each other.
    """

    def __init__(self) -> None:
        self._followed: dict[int, tuple] = {}  # id -> (tensor ref, entry)

    def _get(self, tensor: object) -> tuple | None:
        item = self._followed.get(id(tensor))
        return None if item is None or item[0]() is not tensor else item[1]

    def _put(self, tensor: Tensor, entry: tuple) -> None:
        import weakref

        key, followed = id(tensor), self._followed

        def forget(reference) -> None:
            if followed.get(key, (None,))[0] is reference:
                del followed[key]

        followed[key] = (weakref.ref(tensor, forget), entry)

    def forward(self, func, args: tuple, kwargs: dict, out: Tensor) -> None:
        """A forward transform ran: its output is the spectrum of its input along its one transformed dim."""
        dims = args[1] if len(args) > 1 else kwargs.get("dim")
        if transform_direction(func, args, kwargs) == _FORWARD and isinstance(args[0], Tensor) and len(dims) == 1:
            dim = dims[0] % args[0].dim()
            self._put(out, ("spectrum", ((args[0], dim),), 0))

    def pointwise(self, func, args: tuple, out: Tensor) -> None:
        """An element-wise op ran: a product of two spectra, or a spectrum scaled, stays followed."""
        if not self._followed:
            return
        tensors = [a for a in args if isinstance(a, Tensor) and a.dim()]
        entries = [self._get(t) for t in tensors]
        if not any(entries):
            return
        name = func.overloadpacket.__name__.rstrip("_")
        if name == "mul" and len(tensors) == 2 and all(e is not None and e[0] == "spectrum" for e in entries):
            (a,), (b,) = entries[0][1], entries[1][1]
            if a[1] - a[0].dim() == b[1] - b[0].dim() and a[0].shape[a[1]] == b[0].shape[b[1]]:
                self._put(out, ("product", (a, b), entries[0][2] + entries[1][2] + 1))
            return
        if len(tensors) == 1 and name in ("mul", "div", "to_copy", "clone") and out.shape == tensors[0].shape:
            kind, signals, ops = entries[0]
            self._put(out, (kind, signals, ops + (name in ("mul", "div"))))

    def inverse(self, func, args: tuple, kwargs: dict, out: Tensor, read: Read, rows: int,
                step_op: Callable[[Tensor], Tensor], step_product: Callable[[Tensor], Tensor]) -> Tensor | None:
        """Distances of an inverse transform's output from the signals of the chain it closes (steps included);
        None when its input is not a followed spectrum or product (the caller keeps its structural rule)."""
        if not self._followed:
            return None
        entry = self._get(args[0]) if args and isinstance(args[0], Tensor) else None
        dims = args[1] if len(args) > 1 else kwargs.get("dim")
        if entry is None or transform_direction(func, args, kwargs) != _INVERSE or len(dims) != 1:
            return None
        kind, signals, ops = entry
        dim = dims[0] % out.dim()
        n = out.shape[dim]
        if any(s.shape[d] != n or d - s.dim() != dim - out.dim() for s, d in signals):
            return None
        if kind == "spectrum":
            (a, _), = signals
            d = read(a)
            found = None if d is None else d
        else:
            (a, da), (b, db) = signals
            found = _least([_circular(read(a), da, b, db, n), _circular(read(b), db, a, da, n)])
        if found is None:
            return None
        found = _move_last(found, dim - out.dim()) if kind == "product" else found
        found = torch.broadcast_to(found, (rows, *out.shape)) if found.shape[1:] != out.shape else found
        steps = 2  # the forward and the inverse transform: two products
        for _ in range(steps):
            found = step_product(found)
        for _ in range(ops):
            found = step_op(found)
        return found.contiguous()


def _circular(d: Tensor | None, dim: int, kernel: Tensor, kernel_dim: int, n: int) -> Tensor | None:
    """(S, …, n) distances through y[t] = Σ_s x[s] k[(t − s) mod n] from x's distances ``d`` (S, *x.shape) along
    x's ``dim``, the kernel's nonzero values (along its ``kernel_dim``) deciding which s reach which t; the
    transformed dim last in the result, the other dims broadcast from the right."""
    if d is None:
        return None
    d = d.movedim(dim + 1, -1)  # (S, …, n_s)
    nonzero = (kernel.detach() != 0).movedim(kernel_dim, -1)  # (…, n)
    lead = torch.broadcast_shapes(d.shape[1:-1], nonzero.shape[:-1])
    s = torch.arange(n)
    rows = max(1, CHUNK_ELEMENTS // max(1, d.shape[0] * math.prod(lead) * n))  # output positions per chunk
    chunks = []
    for start in range(0, n, rows):
        t = torch.arange(start, min(start + rows, n))
        allowed = nonzero[..., (t[:, None] - s[None, :]) % n]  # (…, chunk of n_t, n_s)
        chunks.append(torch.where(allowed, d[..., None, :], UNREACHABLE).amin(dim=-1))  # (S, …, chunk)
    return torch.cat(chunks, dim=-1)  # (S, …, n_t)


def _least(ds: list[Tensor | None]) -> Tensor | None:
    present = [d for d in ds if d is not None]
    if not present:
        return None
    shape = torch.broadcast_shapes(*(d.shape for d in present))
    return functools.reduce(torch.minimum, (d.expand(shape) for d in present))


def _move_last(d: Tensor, dim_from_end: int) -> Tensor:
    """The transformed dim, last in ``d``, back to its place (``dim_from_end`` counted from the output's end)."""
    return d.movedim(-1, dim_from_end) if dim_from_end != -1 else d
