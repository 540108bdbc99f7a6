"""How matrix products and convolutions move path distances (min-plus rules; see ``path_rules``).

out[i, j] = Σ_k A[i, k] B[k, j] reads row i of the left factor and column j of the right one, so its
distance from a source is one product more than the least distance among them — except through a term
whose other factor is exactly 0 (the product rule of derivatives, for each source alone: a causal weight matrix,
exactly 0 above its diagonal, does not let later positions reach earlier rows, and neither does an attention
weight 0 / Σ whose Σ depends on other keys). A convolution reads every input channel of its group over the
dilated window around each output position.

The masked (min, +) product that a 0 calls for costs S·n·k·p; it runs only on the columns (rows) of the other factor
that hold a 0 — a mask, a fill, a padded block —, every other entry taking the plain row (column) minimum, which is the
same number there (issue 34, item 3): one stray 0 costs one column, not the whole product.

Distances are int32 with :data:`~seqlab.measure.distances.UNREACHABLE` for "no path" (see
:mod:`seqlab.measure.distances`). Shapes: S rows (sources × units), then the tensor's own shape.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.measure.distances import (DTYPE, ITEMSIZE, UNREACHABLE, align, broadcast_min, everything, least,
                                      narrow)
from seqlab.measure.ops import bound_arguments

aten = torch.ops.aten

Distance = Tensor | None
Read = Callable[[Tensor], Distance]
Step = Callable[[Tensor], Tensor]

#: Elements per chunk of the masked (min, +) product: S · rows · k · p int32 values (64 MiB).
CHUNK_ELEMENTS = 2**24
#: Bytes of the largest temporary of the chunked product (the web lab's memory estimate reads it).
CHUNK_BYTES = CHUNK_ELEMENTS * ITEMSIZE

_FACTORS = {aten.mm: ("self", "mat2"), aten.bmm: ("self", "mat2"), aten.addmm: ("mat1", "mat2"),
            aten.baddbmm: ("batch1", "batch2")}


def contraction(func, args, kwargs, out: Tensor, read: Read, step: Step, sources: int,
                addend_step: Step | None = None) -> Distance:
    """Matrix products: out[i, j] reads row i of the left factor and column j of the right one.

    The additive input of ``addmm``, ``baddbmm``, ``addmv``, ``addbmm`` and ``addr`` (β·self + α·A B) is added,
    not multiplied: its path takes ``addend_step`` (one op, no product; default ``step``), so an Elman step
    written ``addmm(x_t W_xhᵀ, h, W_hhᵀ)`` carries x_t's term through no product of the step.

    Returns NotImplemented for a product it has no rule for (the tracer then decomposes, derives or refuses it).
    """
    if not (out.is_floating_point() or out.is_complex()):
        return None  # an integer product: piecewise constant, no derivative
    b = bound_arguments(func, args, kwargs)
    packet = func.overloadpacket
    shape = out.shape
    addend = read(b["self"]) if packet in _ADDEND and isinstance(b["self"], Tensor) else None
    factors = _FACTORS.get(packet)
    if factors is not None:
        left, right = factors
        parts = list(_matrix_product(b[left], b[right], read, out))
    elif packet in (aten.mv, aten.addmv):  # M v = M @ v[:, None], column dim dropped
        parts = [None if p is None else p.squeeze(-1)
                 for p in _matrix_product(b["self" if packet is aten.mv else "mat"], b["vec"].unsqueeze(-1), read,
                                          out)]
    elif packet in (aten.dot, aten.vdot):
        other = b["tensor"] if packet is aten.dot else b["other"]  # their schemas name the second vector apart
        if shape != () or b["self"].dim() != 1:
            return None if read(b["self"]) is None and read(other) is None else \
                step(everything([read(b["self"]), read(other)], shape, sources))
        parts = [None if p is None else p.reshape(p.shape[0])  # a · b = a[None, :] @ b[:, None]
                 for p in _matrix_product(b["self"].unsqueeze(0), other.unsqueeze(-1), read)]
    elif packet is aten.addbmm:  # Σ_b A_b B_b: the batched product's terms, least over the batch
        parts = [None if p is None else least(p, 1) for p in _matrix_product(b["batch1"], b["batch2"], read)]
    elif packet is aten.addr:  # the outer product v1 v2ᵀ: a product over a contraction of width 1
        parts = list(_matrix_product(b["vec1"].unsqueeze(-1), b["vec2"].unsqueeze(0), read))
    elif packet in (aten.convolution, aten._convolution) and not b["transposed"]:
        return _convolution(b, out, read, step, sources)
    elif packet is aten.linalg_solve_triangular:
        return _triangular_solve(b, out, read, step, sources)
    elif packet is aten._grouped_mm:
        parts = _grouped_product(b, read)
        if parts is NotImplemented:
            return NotImplemented
        addend = read(b["bias"]) if isinstance(b["bias"], Tensor) else None
    else:
        return NotImplemented
    product = broadcast_min(parts, shape, sources)
    if addend is not None and _scaled_to_zero(b.get("beta", 1)):
        addend = None  # beta = 0: the addend is not read at all
    added = None if addend is None else (addend_step or step)(align(addend, shape))
    product = None if product is None else step(product)
    return broadcast_min([product, added], shape, sources)


def _grouped_product(b: dict, read: Read) -> list[Distance] | object:
    """``_grouped_mm``, the grouped product of mixture-of-experts layers: (G, M, K) @ (G, K, N) is a batched
    product; (M_total, K) @ (G, K, N) with ``offs`` (G,), the cumulative row ends, multiplies the rows of group
    g by expert g's matrix (rows past the last end are not written: constants). Other layouts: NotImplemented."""
    left, right, offs = b["self"], b["mat2"], b["offs"]
    if left.dim() == 3 and right.dim() == 3:
        return list(_matrix_product(left, right, read))
    if left.dim() != 2 or right.dim() != 3 or offs is None:
        return NotImplemented
    rows, columns = _rows(read(left)), _columns(read(right))  # (S, M, 1), (S, G, 1, N)
    group = torch.searchsorted(offs.to(torch.int64), torch.arange(left.shape[0]), right=True)  # (M,)
    written = group < right.shape[0]
    from_right = None
    if columns is not None:
        picked = columns[:, group.clamp(max=right.shape[0] - 1), 0, :]  # (S, M, N)
        from_right = torch.where(written[None, :, None], picked, UNREACHABLE)
    from_left = None if rows is None else torch.where(written[None, :, None], rows, UNREACHABLE)
    return [from_left, from_right]


def _triangular_solve(b: dict, out: Tensor, read: Read, step: Step, sources: int) -> Distance:
    """``linalg_solve_triangular``: A X = B with A (…, n, n) lower (upper) triangular, by substitution.

    Row i of X reads rows 1…i of B in its own column and the rows 1…i of A's triangle (i…n for an upper A),
    so its distance is the least over those, one product further (the solve is one product of the
    contraction family); ``unitriangular`` leaves A's diagonal unread. ``left=False`` (X A = B) is the
    transposed system Aᵀ Xᵀ = Bᵀ, upper and lower swapped.
    """
    a, rhs = read(b["self"]), read(b["B"])
    upper, left = b["upper"], b["left"]
    n = b["self"].shape[-1]
    if not left:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        a = None if a is None else a.transpose(-2, -1)
        rhs = None if rhs is None else rhs.transpose(-2, -1)
        upper = not upper
    parts: list[Distance] = []
    if rhs is not None:
        prefix = rhs.flip(-2).cummin(dim=-2).values.flip(-2) if upper else rhs.cummin(dim=-2).values
        parts.append(prefix)
    if a is not None:
        offset = 0 if not b["unitriangular"] else 1
        triangle = torch.ones(n, n, dtype=torch.bool)
        triangle = triangle.triu(offset) if upper else triangle.tril(-offset)
        rows = least(torch.where(triangle, a, UNREACHABLE), -1, keepdim=True)  # (S, …, n, 1)
        parts.append(rows.flip(-2).cummin(dim=-2).values.flip(-2) if upper else rows.cummin(dim=-2).values)
    if not parts:
        return None
    shape = out.shape if left else (*out.shape[:-2], out.shape[-1], out.shape[-2])
    result = broadcast_min(parts, shape, sources)
    result = step(result)
    return result if left else result.transpose(-2, -1)


#: Products with an additive input ``self`` (β·self + α·A B).
_ADDEND = (aten.addmm, aten.baddbmm, aten.addmv, aten.addbmm, aten.addr)


def _scaled_to_zero(beta: object) -> bool:
    return not isinstance(beta, Tensor) and beta == 0


def _rows(d: Distance) -> Distance:
    """(S, ..., n, k) -> (S, ..., n, 1): least over the contracted (last) dim (the row form if uniform)."""
    if d is None:
        return None
    rows = narrow(d)
    return least(d, -1, keepdim=True) if rows is None else rows


def _columns(d: Distance) -> Distance:
    """(S, ..., k, p) -> (S, ..., 1, p): least over the contracted (second-to-last) dim (on the row form if
    uniform along p: the least row is the least of every column)."""
    if d is None:
        return None
    rows = narrow(d)
    if rows is None:
        return least(d, -2, keepdim=True)
    return align(least(rows, -2, keepdim=True), (*d.shape[1:-2], 1, d.shape[-1]))


def _exact_zeros(tensor: Tensor, d: Distance, read: Read) -> tuple[Tensor | None, bool]:
    """Elements that are exactly 0, whatever made them and whatever they depend on, and whether there is any
    (the product rule: the other factor's dependence through them is cut; None: none). For a constant (no
    distances) the reader caches the answer per storage, view and version: a weight read at every step of a
    recurrence is checked once; a traced factor proven zero-free by the ops that made it is not read."""
    if d is None:
        return read.constant_zeros(tensor)
    if read.holds_no_zeros(tensor):
        return None, False
    if bool(tensor.all()):  # one reduction; the mask only where a 0 sits
        return None, False
    return tensor == 0, True


def _matrix_product(left: Tensor, right: Tensor, read: Read, out: Tensor | None = None) -> tuple[Distance, Distance]:
    """Distances of left @ right from each factor: (…, n, k) @ (…, k, p) -> two (S, …, n, p) parts.

    Term k of out[i, j] = Σ_k A[i, k] B[k, j] carries A[i, k]'s dependencies unless B[k, j] is exactly 0
    (and B's unless A's is): the product rule, d(A B) = dA·B + A·dB, for each source alone — a 0 cuts the
    other factor's dependence whether the 0 is a constant or depends on some source (an attention weight 0 / Σ
    that depends on the open keys of its row). A factor's zeros are read only when the other factor carries
    distances. Without zeros this is the plain rule: row minima of A and column minima of B.
    """
    d_left, d_right = read(left), read(right)
    zero_left, any_left = _exact_zeros(left, d_left, read) if d_right is not None else (None, False)
    zero_right, any_right = _exact_zeros(right, d_right, read) if d_left is not None else (None, False)
    if out is not None and (d_left is not None or d_right is not None):  # no exact 0 when neither factor has one
        read.prove_zero_free(out, _free(left, d_left, any_left, d_right, read) and
                             _free(right, d_right, any_right, d_left, read))
    if not any_left and not any_right:
        return _rows(d_left), _columns(d_right)
    from_left = _rows(d_left) if not any_right else _masked_where_zero(d_left, zero_right)
    from_right = _columns(d_right) if not any_left else None if d_right is None else _masked_where_zero(
        d_right.transpose(-2, -1), zero_left.transpose(-2, -1)).transpose(-2, -1)
    return from_left, from_right


def _masked_where_zero(d: Distance, zeros: Tensor) -> Distance:
    """min over k of d[s, …, i, k] where the other factor's [k, j] is not exactly 0: (S, …, n, k), (…, k, p) ->
    (S, …, n, p), the masked (min, +) product run only on the columns j where a 0 sits (issue 34, item 3).

    A column of the other factor with no 0 (in any batch) lets every term through: its entry is the row minimum
    of d, the plain rule's, so the masked product over the few columns a mask or a fill zeroes gives the same
    tensor as over all of them, at their cost alone."""
    if d is None:
        return None
    p = zeros.shape[-1]
    columns = zeros.reshape(-1, p).any(dim=0).nonzero().squeeze(-1)  # (m,): columns holding a 0
    if columns.numel() == p:
        return _min_plus(d, ~zeros)
    masked = _min_plus(d, ~zeros.index_select(-1, columns))  # (S, …, n, m)
    plain = least(d, -1, keepdim=True)  # (S, …, n, 1)
    result = plain.expand(*masked.shape[:-1], p).clone(memory_format=torch.contiguous_format)
    result.index_copy_(-1, columns, masked)
    return result


def _free(factor: Tensor, d: Distance, found: bool, d_other: Distance, read: Read) -> bool:
    """Whether a factor holds no exact 0, from what :func:`_matrix_product` already knows (no new read of a traced
    factor: one that was not read and is not proven zero-free counts as holding zeros)."""
    if d is None:  # a constant: ``found`` is already its answer where the other factor carries distances
        return not found if d_other is not None else not read.constant_zeros(factor)[1]
    return read.holds_no_zeros(factor) or (d_other is not None and not found)


def _min_plus(d: Tensor, allowed: Tensor) -> Tensor:
    """min over k of d[s, …, i, k] where allowed[…, k, j], in row chunks: (S, …, n, k), (…, k, p) -> (S, …, n, p)."""
    S, n, k, p = d.shape[0], d.shape[-2], d.shape[-1], allowed.shape[-1]
    batch = d.shape[1:-2]
    rows = max(1, CHUNK_ELEMENTS // max(1, S * k * p * max(1, batch.numel())))
    chunks = [torch.where(allowed[..., None, :, :], d[..., start:start + rows, :, None], UNREACHABLE).amin(dim=-2)
              for start in range(0, n, rows)]
    return torch.cat(chunks, dim=-2)


def _convolution(b: dict, out: Tensor, read: Read, step: Step, sources: int) -> Distance:
    """out[n, o, t] reads every input channel of its group over the dilated window around t."""
    data, weight = read(b["input"]), read(b["weight"])
    spatial = out.dim() - 2
    if spatial not in (1, 2):
        return NotImplemented
    parts: list[Distance] = [everything([weight], out.shape, sources), None]
    if b["bias"] is not None and read(b["bias"]) is not None:
        parts.append(align(read(b["bias"]), (out.shape[1],) + (1,) * spatial).expand(sources, *out.shape))
    if data is not None:
        groups = b["groups"]
        S, N, C, *size = data.shape
        grouped = data.reshape(S, N, groups, C // groups, *size).amin(dim=3)  # (S, N, G, *size)
        # a min-pool is minus a max-pool; PyTorch pools floats only (float64 holds these integers exactly)
        negated = -grouped.reshape(S * N * groups, 1, *size).to(torch.float64)
        padding = [p for pad in reversed(b["padding"]) for p in (pad, pad)]
        negated = F.pad(negated, padding, value=-float(UNREACHABLE))
        pool = F.max_pool1d if spatial == 1 else F.max_pool2d
        kernel = tuple(b["weight"].shape[2:])
        window = -pool(negated, kernel, stride=tuple(b["stride"]), dilation=tuple(b["dilation"]))
        window = window.to(DTYPE).reshape(S, N, groups, *window.shape[2:])
        parts[1] = window.repeat_interleave(out.shape[1] // groups, dim=2)  # (S, N, C_out, *out_size)
    result = broadcast_min(parts, out.shape, sources)
    return None if result is None else step(result)
