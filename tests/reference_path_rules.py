"""Reference for the tests only: the float64 closeness rules as they were before issue 17 (see reference_paths).

How one ATen op moves path lengths from its inputs to its outputs (min-plus rules; see ``paths``).

Every tensor of the traced pass carries, per source position s and per element, a *closeness*
c = 1 / (1 + distance): 1 at the source itself, 1/(1 + n) after n steps, **0 where the element does
not depend on the source at all**. Working with closeness rather than distance makes "take the
shortest path" a maximum and lets movement ops run unchanged on closeness: an op that inserts a
constant (padding, ``tril``, a zero tensor) inserts 0, which already means "unreachable".

A rule receives the op's arguments, a ``read(tensor)`` that returns the closeness of a tensor as a
(S, *tensor.shape) float64 tensor or None (a constant: 0 everywhere), and ``step(c)``, which adds the
op's cost (one op, or one matrix product) to a closeness: c / (1 + c). It returns one closeness (or
None) per tensor output. Dependencies are *structural* — an element depends on every element the op
reads to compute it — with two refinements by value: where a constant mask or condition is known, the
rule uses its values (``masked_fill``, ``where``, a product with an exact 0), so a causal mask really
cuts the future; and a softmax weight that comes out exactly 0 in the dtype computed (exp of -inf, or
of a finite score so low that it underflows) depends on nothing and lets nothing through, since its
derivative is exactly 0 too. A weight that stays above 0, however small, keeps its paths. A row left
with one nonzero weight is constant as well (that weight is 1 whatever the score: attention's query
path is cut when only one key is open, as the Jacobian says).

In-place twins (``threshold_``, ``masked_fill_``, ``cumsum_`` …) follow the rule of their out-of-place
form (:func:`out_of_place`): writing into the input's storage changes where the result lives, not what
it depends on.

Shapes: S sources (input positions), then the tensor's own shape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils._pytree import tree_flatten, tree_unflatten

aten = torch.ops.aten

Closeness = Tensor | None
Read = Callable[[Tensor], Closeness]
Step = Callable[[Tensor], Tensor]


def arguments(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by schema name (defaults filled in)."""
    bound = {}
    for index, argument in enumerate(func._schema.arguments):
        if index < len(args):
            bound[argument.name] = args[index]
        elif argument.name in kwargs:
            bound[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            bound[argument.name] = argument.default_value
    return bound


def broadcast_max(closeness: Sequence[Closeness], shape: torch.Size, sources: int) -> Closeness:
    """Element-wise maximum of closeness tensors broadcast to (S, *shape); None if all are None."""
    present = [c for c in closeness if c is not None]
    if not present:
        return None
    result = torch.zeros((sources, *shape), dtype=torch.float64)
    for c in present:
        result = torch.maximum(result, _align(c, shape))
    return result


def _align(c: Tensor, shape: torch.Size) -> Tensor:
    """Broadcast a (S, *own_shape) closeness to (S, *shape) with numpy rules on the trailing dims."""
    own = c.shape[1:]
    padded = c.reshape(c.shape[0], *([1] * (len(shape) - len(own))), *own)
    return padded.expand(c.shape[0], *shape)


@functools.cache
def out_of_place(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The out-of-place twin of an in-place ATen op, same overload; None for an op that is not in-place.

    >>> out_of_place(aten.threshold_.default)
    <OpOverload(op='aten.threshold', overload='default')>
    >>> out_of_place(aten.threshold.default) is None
    True
    """
    schema = func._schema
    name = schema.name.split("::")[-1]
    first = schema.arguments[0] if schema.arguments else None
    writes_self = first is not None and first.alias_info is not None and first.alias_info.is_write
    if not name.endswith("_") or name.endswith("__") or not writes_self:
        return None
    packet = getattr(aten, name[:-1], None)
    return None if packet is None else getattr(packet, func._overloadname, None)


def is_pointwise(func: torch._ops.OpOverload) -> bool:
    """Whether the op, or the out-of-place twin of an in-place op, is tagged point-wise by PyTorch."""
    if torch.Tag.pointwise in func.tags:
        return True
    twin = out_of_place(func)
    return twin is not None and torch.Tag.pointwise in twin.tags


def _name(func: torch._ops.OpOverload) -> str:
    """The op's name, that of its out-of-place twin for an in-place op (``cumsum_`` -> ``cumsum``)."""
    twin = out_of_place(func)
    return (twin or func).overloadpacket.__name__


def everything(closeness: Sequence[Closeness], shape: torch.Size, sources: int) -> Closeness:
    """All-depends-on-all: every output element is as close as the closest input element."""
    present = [c.reshape(c.shape[0], -1).amax(dim=1) for c in closeness if c is not None and c.numel()]
    if not present:
        return None
    best = torch.stack(present).amax(dim=0)  # (S,)
    return best.reshape(sources, *([1] * len(shape))).expand(sources, *shape).clone()


# --- element-wise ------------------------------------------------------------------------------

def pointwise(func, args, kwargs, out: Tensor, read: Read, step: Step, sources: int) -> Closeness:
    """Element-wise ops (with broadcasting); constants known by value can cut a dependency."""
    bound = arguments(func, args, kwargs)
    packet = func.overloadpacket
    if packet in (aten.masked_fill, aten.masked_fill_) and read(bound["mask"]) is None:
        kept = broadcast_max([read(bound["self"])], out.shape, sources)
        filled = read(bound["value"]) if isinstance(bound["value"], Tensor) else None
        if kept is None and filled is None:
            return None
        mask = bound["mask"].expand(out.shape)
        kept = torch.zeros((sources, *out.shape), dtype=torch.float64) if kept is None else kept
        result = torch.where(mask, 0.0 if filled is None else _align(filled, out.shape), kept)
        return step(result)
    if packet is aten.where and read(bound["condition"]) is None:
        condition = bound["condition"].expand(out.shape)
        chosen = [broadcast_max([read(bound[name])] if isinstance(bound[name], Tensor) else [], out.shape, sources)
                  for name in ("self", "other")]
        if chosen[0] is None and chosen[1] is None:
            return None
        zero = torch.zeros((sources, *out.shape), dtype=torch.float64)
        return step(torch.where(condition, chosen[0] if chosen[0] is not None else zero,
                                chosen[1] if chosen[1] is not None else zero))
    tensors = [leaf for leaf in tree_flatten((args, kwargs))[0] if isinstance(leaf, Tensor)]
    result = broadcast_max([read(t) for t in tensors], out.shape, sources)
    if result is None:
        return None
    for t in tensors:  # a constant that absorbs the other operand: x * 0 = 0, x + (-inf) = -inf
        if read(t) is None and t.is_floating_point():
            if packet in (aten.mul, aten.mul_):
                result = torch.where(t.expand(out.shape) == 0, 0.0, result)
            elif packet in (aten.add, aten.add_, aten.sub, aten.sub_):
                result = torch.where(torch.isinf(t.expand(out.shape)), 0.0, result)
    return step(result)


# --- contractions ------------------------------------------------------------------------------

def _rows(c: Closeness) -> Closeness:
    """(S, ..., n, k) -> (S, ..., n, 1): best over the contracted (last) dim."""
    return None if c is None else c.amax(dim=-1, keepdim=True)


def _columns(c: Closeness) -> Closeness:
    """(S, ..., k, p) -> (S, ..., 1, p): best over the contracted (second-to-last) dim."""
    return None if c is None else c.amax(dim=-2, keepdim=True)


def contraction(func, args, kwargs, out: Tensor, read: Read, step: Step, sources: int) -> Closeness:
    """Matrix products: out[i, j] reads row i of the left factor and column j of the right one."""
    b = arguments(func, args, kwargs)
    packet = func.overloadpacket
    shape = out.shape
    if packet in (aten.mm, aten.bmm, aten.addmm, aten.baddbmm):
        left, right = {aten.mm: ("self", "mat2"), aten.bmm: ("self", "mat2"),
                       aten.addmm: ("mat1", "mat2"), aten.baddbmm: ("batch1", "batch2")}[packet]
        parts = list(_matrix_product(b[left], b[right], read))
        if packet in (aten.addmm, aten.baddbmm):
            parts.append(read(b["self"]))
    elif packet in (aten.mv, aten.addmv):
        matrix, vector = read(b["self" if packet is aten.mv else "mat"]), read(b["vec"])
        parts = [None if matrix is None else matrix.amax(dim=-1),
                 None if vector is None else vector.amax(dim=-1, keepdim=True)]
        parts += [read(b["self"])] if packet is aten.addmv else []
    elif packet in (aten.dot, aten.vdot):
        return everything([read(b["self"]), read(b["tensor"])], shape, sources) if shape == () else None
    elif packet is aten.addbmm:
        first, second = read(b["batch1"]), read(b["batch2"])
        parts = [read(b["self"]),
                 None if first is None else first.amax(dim=(1, 3)).unsqueeze(-1),
                 None if second is None else second.amax(dim=(1, 2)).unsqueeze(-2)]
    elif packet is aten.addr:
        first, second = read(b["vec1"]), read(b["vec2"])
        parts = [read(b["self"]), None if first is None else first.unsqueeze(-1),
                 None if second is None else second.unsqueeze(-2)]
    elif packet in (aten.convolution, aten._convolution) and not b["transposed"]:
        return _convolution(b, out, read, step, sources)
    else:
        return NotImplemented
    result = broadcast_max(parts, shape, sources)
    return None if result is None else step(result)


def _constant_zeros(tensor: Tensor, closeness: Closeness, read: Read) -> Tensor:
    """Elements that are exactly 0 and depend on no source: their products contribute nothing.

    For a constant (no closeness) the reader may cache the answer: a weight read at every step of a
    recurrence is checked once.
    """
    if closeness is None and hasattr(read, "constant_zeros"):
        return read.constant_zeros(tensor)
    zeros = tensor == 0
    return zeros if closeness is None else zeros & (closeness.amax(dim=0) == 0)


#: Elements per chunk of the masked (max, ×) product: S · rows · k · p float64 values (~128 MiB).
_CHUNK_ELEMENTS = 2**24


def _matrix_product(left: Tensor, right: Tensor, read: Read) -> tuple[Closeness, Closeness]:
    """Closeness of left @ right from each factor: (…, n, k) @ (…, k, p) -> two (S, …, n, p) parts.

    Term k of out[i, j] = Σ_k A[i, k] B[k, j] carries A[i, k]'s dependencies unless B[k, j] is a
    constant 0 (and B's unless A's is): a causal weight matrix, exactly 0 above the diagonal, does
    not let the values of later positions reach earlier rows. Without constant zeros this is the
    plain rule: row maxima of A and column maxima of B.
    """
    c_left, c_right = read(left), read(right)
    zero_left = _constant_zeros(left, c_left, read) if c_right is not None else None
    zero_right = _constant_zeros(right, c_right, read) if c_left is not None else None
    if not (zero_left is not None and zero_left.any()) and not (zero_right is not None and zero_right.any()):
        return _rows(c_left), _columns(c_right)
    from_left = None if c_left is None else _max_times(c_left, (~zero_right).to(torch.float64))
    from_right = None if c_right is None else _max_times(
        c_right.transpose(-2, -1), (~zero_left).transpose(-2, -1).to(torch.float64)).transpose(-2, -1)
    return from_left, from_right


def _max_times(closeness: Tensor, allowed: Tensor) -> Tensor:
    """max_k closeness[s, …, i, k] · allowed[…, k, j], in row chunks: (S, …, n, k), (…, k, p) -> (S, …, n, p)."""
    S, n, k, p = closeness.shape[0], closeness.shape[-2], closeness.shape[-1], allowed.shape[-1]
    batch = closeness.shape[1:-2]
    rows = max(1, _CHUNK_ELEMENTS // max(1, S * k * p * max(1, batch.numel())))
    chunks = [(closeness[..., start:start + rows, :, None] * allowed[..., None, :, :]).amax(dim=-2)
              for start in range(0, n, rows)]
    return torch.cat(chunks, dim=-2)


def _convolution(b: dict, out: Tensor, read: Read, step: Step, sources: int) -> Closeness:
    """out[n, o, t] reads every input channel of its group over the dilated window around t."""
    data, weight = read(b["input"]), read(b["weight"])
    spatial = out.dim() - 2
    if spatial not in (1, 2):
        return NotImplemented
    parts: list[Closeness] = [everything([weight], out.shape, sources), None]
    if b["bias"] is not None and read(b["bias"]) is not None:
        parts.append(_align(read(b["bias"]), (out.shape[1],) + (1,) * spatial).expand(sources, *out.shape))
    if data is not None:
        groups = b["groups"]
        S, N, C, *size = data.shape
        grouped = data.reshape(S, N, groups, C // groups, *size).amax(dim=3)  # (S, N, G, *size)
        padding = [p for pad in reversed(b["padding"]) for p in (pad, pad)]
        grouped = F.pad(grouped.reshape(S * N * groups, 1, *size), padding, value=0.0)
        pool = F.max_pool1d if spatial == 1 else F.max_pool2d
        kernel = tuple(b["weight"].shape[2:])
        window = pool(grouped, kernel, stride=tuple(b["stride"]), dilation=tuple(b["dilation"]))
        window = window.reshape(S, N, groups, *window.shape[2:])
        parts[1] = window.repeat_interleave(out.shape[1] // groups, dim=2)  # (S, N, C_out, *out_size)
    result = broadcast_max(parts, out.shape, sources)
    return None if result is None else step(result)


# --- reductions and normalisations -------------------------------------------------------------

_SAME_SHAPE_ALONG_DIM = {"_softmax", "_safe_softmax", "_log_softmax", "softmax", "log_softmax",
                         "sort", "topk", "max", "min", "logsumexp", "argmax", "argmin"}
_SOFTMAX = {"_softmax", "_safe_softmax", "_log_softmax", "softmax", "log_softmax"}
_PREFIX_ALONG_DIM = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}


def reduction(func, args, kwargs, outs: list[Tensor], read: Read, step: Step, sources: int) -> list[Closeness]:
    """Ops that read a whole dim (or several) for each output element: sums, softmax, norms, sorts."""
    b = arguments(func, args, kwargs)
    name = _name(func)
    data = b.get("self", b.get("input"))
    c = read(data)
    if c is None:
        return [None] * len(outs)
    if name == "native_layer_norm":
        dims = list(range(data.dim() - len(b["normalized_shape"]), data.dim()))
    else:
        dims = b.get("dim")
        dims = list(range(data.dim())) if dims is None or dims == [] else ([dims] if isinstance(dims, int) else dims)
    dims = [d % max(data.dim(), 1) for d in dims]
    blocked = None
    if name in _SOFTMAX and data.is_floating_point() and outs[0].shape == data.shape:
        # a weight exactly 0 in the dtype (exp(-inf), or an underflowing finite score) is a constant:
        # it depends on nothing and passes nothing on (its derivative is 0 too)
        weight_zero = torch.isneginf(outs[0]) if name.startswith(("_log", "log")) else outs[0] == 0
        blocked = torch.isneginf(data) | weight_zero
        # a row with a single weight left open: that weight is exactly 1 whatever its score (query) is
        alone = (~blocked).sum(dim=dims[0], keepdim=True) == 1
        blocked = blocked | alone.expand_as(blocked)
        c = torch.where(blocked, 0.0, c)
    if name in _PREFIX_ALONG_DIM:
        reduced = torch.cummax(c, dim=dims[0] + 1).values
    else:
        reduced = c.amax(dim=[d + 1 for d in dims], keepdim=True) if data.dim() else c
    results = []
    for out in outs:
        if out.shape == reduced.shape[1:] or _broadcastable(reduced.shape[1:], out.shape):
            result = reduced.expand(sources, *out.shape)
        else:
            result = reduced.reshape(sources, *out.shape)
        if name == "native_layer_norm" and out.shape == data.shape:
            result = broadcast_max([result, *(read(b[k]) for k in ("weight", "bias") if b[k] is not None)],
                                   out.shape, sources)
        if blocked is not None and out.shape == data.shape:
            result = torch.where(blocked, 0.0, result)
        results.append(step(result.clone()))
    return results


def _broadcastable(source: torch.Size, target: torch.Size) -> bool:
    return len(source) == len(target) and all(s in (1, t) for s, t in zip(source, target))


def is_reduction(func: torch._ops.OpOverload) -> bool:
    """Whether :func:`reduction` handles the op (``reduction`` tag, softmax family, layer norm, sorts)."""
    name = _name(func)
    return (torch.Tag.reduction in func.tags or name in _SAME_SHAPE_ALONG_DIM or name in _PREFIX_ALONG_DIM
            or name == "native_layer_norm")


# --- movement ----------------------------------------------------------------------------------

def movement(func, args, kwargs, outs: list[Tensor], read: Read, sources: int) -> list[Closeness] | None:
    """Ops that only move data: run the very same op on element ids, then gather the closeness.

    Every floating-point argument is replaced by the ids of its elements (1, 2, …, offset past the
    previous argument's; float64 holds them exactly), integer and bool arguments (indices, masks)
    are kept, and the op is run once: each output element then holds the id of the input element it
    copies, or 0 where the op wrote a constant (padding, ``tril``, a fill). The output's closeness
    is the closeness of that element. Returns None when the op cannot run on ids (the caller falls
    back to all-to-all).
    """
    packet = func.overloadpacket
    if packet in (aten.fill_, aten.zero_):
        return [None for _ in outs]
    if packet in (aten.copy_, aten._to_copy, aten.lift_fresh_copy):
        source = arguments(func, args, kwargs)["src" if packet is aten.copy_ else "self"]
        return [broadcast_max([read(source)], out.shape, sources) for out in outs]
    if packet is aten.constant_pad_nd:
        args = (args[0], args[1], 0.0)  # padding is a constant: id 0
    leaves, spec = tree_flatten((args, kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor) and leaf.is_floating_point()]
    closeness = [read(leaves[i]) for i in slots]
    if all(c is None for c in closeness):
        return [None for _ in outs]
    offset, flat = 1, [torch.zeros((sources, 1), dtype=torch.float64)]  # id 0: a constant
    for i, c in zip(slots, closeness):
        size = leaves[i].numel()
        leaves[i] = torch.arange(offset, offset + size, dtype=torch.float64).reshape(leaves[i].shape)
        flat.append(torch.zeros((sources, size), dtype=torch.float64) if c is None else c.reshape(sources, size))
        offset += size
    call_args, call_kwargs = tree_unflatten(leaves, spec)
    try:
        moved = func(*call_args, **call_kwargs)
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, TypeError, ValueError, IndexError):  # an op that cannot run on float64 ids
        return None
    moved = [leaf for leaf in tree_flatten(moved)[0] if isinstance(leaf, Tensor)]
    if len(moved) != len(outs) or any(m.shape != o.shape for m, o in zip(moved, outs)):
        return None
    table = torch.cat(flat, dim=1)  # (S, 1 + all input elements)
    return [table.index_select(1, m.reshape(-1).long()).reshape(sources, *o.shape) if m.is_floating_point() else None
            for m, o in zip(moved, outs)]
