"""How one ATen op moves path lengths from its inputs to its outputs (min-plus rules; see ``paths``).

Every tensor of the traced pass carries, per source position s and per element, a **distance**: the least
number of steps from x_s to that element, as a small integer (int32), with :data:`UNREACHABLE` (2^30) or
more meaning that the element does not depend on the source at all. "Take the shortest path" is then a
minimum, one more step is ``+ 1``, and movement ops run unchanged on distances: an op that inserts a
constant (padding, ``tril``, a zero tensor) inserts :data:`UNREACHABLE`. Distances past the sentinel stay
unreachable: a step adds 1 to them too, and every reader tests ``>= UNREACHABLE`` (a pass would need 2^30
dispatched ops to wrap int32).

A rule receives the op's arguments, a ``read(tensor)`` that returns the distances of a tensor as a
(S, *tensor.shape) int32 tensor or None (a constant: unreachable everywhere), and ``step(d)``, which adds
the op's cost (one op, or one matrix product) to a distance. It returns one distance tensor (or None) per
tensor output, never a tensor it will write to later (results may be expanded views). Dependencies are
*structural* — an element depends on every element the op reads to compute it — refined by value where a value
decides the derivative (issue 35), each rule for each source alone, so that no answer depends on which sources
share the pass:

* **integers and booleans carry no dependence** (piecewise constant: derivative 0 wherever defined), nor do the
  floating results of ``floor``, ``round``, ``sign`` …: a mask, a bucket id, an argmax, a comparison is a *value*
  that selects (``masked_fill``, ``where``, an index), whatever computed it;
* **the product rule**: a term of a product (``mul``, ``div``, ``addcmul``, ``addcdiv``, every matrix product)
  passes a factor's dependence only where its other factor is not exactly 0 — d(a·b) = b·da + a·db —, whatever made
  that 0 (a softmax, exp(-inf), ``masked_fill``, ``where``, a gather, a sort) and whatever it depends on: an attention
  weight 0 / Σ whose Σ depends on the open keys of its row cuts the masked key's value just as a constant 0 does;
  a quotient's divisor is cut where the dividend is 0 (−a/b² db), both where a constant divisor is infinite;
* **an output 0 with a derivative 0**: ``exp``, ``exp2``, ``sigmoid`` (d e^x = e^x dx …) and the softmax family: a
  weight that comes out exactly 0 in the dtype computed (exp of -inf, or of a finite score so low that it
  underflows) depends on nothing. A weight that stays above 0, however small, keeps its paths. A softmax row left
  with one nonzero weight is constant as well (that weight is 1 whatever the score: attention's query path is cut
  when only one key is open, as the Jacobian says);
* a sum with a constant infinity keeps the infinity whatever the other operand is.

Values are read only where they can change the answer, decided per op: the zeros of a factor whose partner carries
distances (a constant's once per storage and version, :meth:`~seqlab.measure.distance_store.DistanceStore.constant_zeros`),
the output of the ops above whose 0 has no derivative, and nothing else (a chain of ordinary ops reads no values).
What a local rule cannot see — an exact cancellation (e / e for a hand-written softmax row with one open key, x − x),
code outside the dispatcher — is the perturbation check's (:mod:`seqlab.measure.perturbation`).

In-place twins (``threshold_``, ``masked_fill_``, ``cumsum_`` …) follow the rule of their out-of-place
form (:func:`out_of_place`): writing into the input's storage changes where the result lives, not what
it depends on. Before issue 17 the same rules ran on float64 closeness 1 / (1 + distance);
``tests/reference_paths.py`` keeps that version, and the tests check that both give the same matrices.

Shapes: S sources (input positions, times two units), then the tensor's own shape.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from seqlab.measure.contraction_rules import contraction
from seqlab.measure.distances import DTYPE, UNREACHABLE, align, broadcast_min, everything, least, narrow, unreachable
from seqlab.measure.ops import bound_arguments as arguments
from seqlab.measure.ops import kept_decisions, schema_arguments
from seqlab.measure.ops import tensors_in

aten = torch.ops.aten

Distance = Tensor | None
Read = Callable[[Tensor], Distance]
Step = Callable[[Tensor], Tensor]

__all__ = ["UNREACHABLE", "arguments", "broadcast_min", "accumulates", "carries_derivative", "contraction", "everything", "flat_arguments", "is_inverse_transform", "is_pointwise",
           "is_reduction", "movement", "out_of_place", "pointwise", "reduction"]


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


@functools.cache
def is_pointwise(func: torch._ops.OpOverload) -> bool:
    """Whether the op, or the out-of-place twin of an in-place op, is tagged point-wise by PyTorch."""
    if torch.Tag.pointwise in func.tags:
        return True
    twin = out_of_place(func)
    return twin is not None and torch.Tag.pointwise in twin.tags


@functools.cache
def _name(func: torch._ops.OpOverload) -> str:
    """The op's name, that of its out-of-place twin for an in-place op (``cumsum_`` -> ``cumsum``)."""
    twin = out_of_place(func)
    return (twin or func).overloadpacket.__name__


# --- element-wise ------------------------------------------------------------------------------

_MASKED_FILL = (aten.masked_fill, aten.masked_fill_)
_PRODUCTS = (aten.mul, aten.mul_)
_QUOTIENTS = (aten.div, aten.div_)
_SUMS = (aten.add, aten.add_, aten.sub, aten.sub_)
#: Element-wise ops whose derivative vanishes wherever their output is exactly 0: d exp(x) = exp(x) dx,
#: d 2^x = 2^x ln 2 dx, d σ(x) = σ(x)(1 − σ(x)) dx. An output 0 (exp(−inf), or an underflow in the dtype computed)
#: depends on nothing; the softmax family follows the same rule in :func:`reduction`.
_ZERO_OUTPUT_NO_DERIVATIVE = frozenset({"exp", "exp2", "sigmoid"})
#: Element-wise ops that make no exact 0 of non-zero inputs (up to a coincidence of rounding, or an exact cancellation
#: such as x − x, which the perturbation check names): their output is proven zero-free when every input is, so a
#: product reads no values of it (:func:`zero_free`). ``mul`` and ``div`` need non-zero scalars too.
_KEEPS_ZERO_FREE = frozenset({"add", "sub", "rsub", "mul", "div", "neg", "tanh", "atan", "asinh", "sinh", "tan",
                              "expm1", "log1p", "sqrt", "reciprocal", "erf", "erfinv", "abs", "addcmul", "addcdiv"})
#: Floating ops that are piecewise constant (derivative 0 wherever defined), as integer and boolean results are.
_PIECEWISE_CONSTANT = frozenset({"floor", "ceil", "round", "trunc", "sign", "sgn", "heaviside"})


def carries_derivative(t: Tensor) -> bool:
    """Whether a tensor's elements can depend on a source: floating or complex. Integer and boolean tensors
    (masks, bucket ids, argmax, comparisons) are piecewise constant — their derivative is 0 wherever defined —
    so they carry no distances: a rule reads them as values, whatever computed them.

    >>> carries_derivative(torch.ones(2)), carries_derivative(torch.ones(2) > 0)
    (True, False)
    """
    return t.is_floating_point() or t.is_complex()


def pointwise(func, args, kwargs, out: Tensor, read: Read, step: Step, sources: int) -> Distance:
    """Element-wise ops (with broadcasting), with the product rule of derivatives on exact zeros.

    A mask or condition (boolean) is a value, never a dependence: ``masked_fill`` and ``where`` pass each element
    the distances of the operand it takes. A product term is cut where another factor of it is exactly 0, whatever
    made that 0 and whatever it depends on: d(a·b) = b·da + a·db, so where a = 0 the term b·… carries a's
    dependence only (a's own distances), never b's. A quotient a / b likewise: where a = 0, b's dependence is cut
    (−a/b² db = 0); where b is infinite, both are. A sum with a constant infinity keeps the infinity whatever the
    other operand is. Exact zeros are read only in a factor whose other factor carries distances (a constant's once
    per storage and version), so a chain of ordinary ops reads no values.
    """
    plan = _POINTWISE_PLANS.get(id(func))
    if plan is None:
        plan = _POINTWISE_PLANS[id(func)] = _pointwise_plan(func)
    packet, piecewise, select, keeps, sum_proof, scalar_proof, product, sums, zero_output = plan
    if piecewise or not (out.is_floating_point() or out.is_complex()):  # carries_derivative(out)
        return None
    if select:
        return _select(packet, arguments(func, args, kwargs), out, read, step, sources)
    tensors = [a for a in args if isinstance(a, Tensor)] if _flat(args) else list(tensors_in(args))
    if kwargs:
        tensors += tensors_in(kwargs.values())
    distances = [read(t) for t in tensors]
    if keeps and any(d is not None for d in distances):
        free = [zero_free(t, d, read) for t, d in zip(tensors, distances, strict=True)]
        if sum_proof:  # a sum is 0 only where its terms cancel, if one term is never 0
            proof = any(free)
        else:  # a product, a quotient's dividend, a function that is 0 only at 0: every input zero-free
            scalars = [v for v in [*args, *kwargs.values()] if isinstance(v, (int, float, complex)) and
                       not isinstance(v, bool)] if scalar_proof else []
            proof = all(free) and all(v != 0 for v in scalars)
        read.prove_zero_free(out, proof)
    if product:
        return _product_rule(func, args, kwargs, out, read, step, sources)
    if sums and any(d is None for d in distances):
        # a constant infinity absorbs the other operand: x + (-inf) = -inf (checked once per constant)
        infs = [read.constant_infs(t) if d is None and t.is_floating_point() else (None, False)
                for t, d in zip(tensors, distances, strict=True)]
        if any(found for _, found in infs):
            blocked = functools.reduce(torch.logical_or, [m for m, found in infs if found])
            return _terms([(d, blocked) for d in distances], out.shape, sources, step)
    result = broadcast_min(distances, out.shape, sources)
    if result is None:
        return None
    if zero_output:
        found = not bool(out.all())  # one reduction; the mask only where a 0 sits
        read.prove_zero_free(out, not found)  # read anyway: exact
        if found:
            result = torch.where(out == 0, UNREACHABLE, align(result, out.shape))
    return step(result)


#: id of an element-wise op -> what :func:`pointwise` decides about it (:func:`_pointwise_plan`), once per op.
_POINTWISE_PLANS: dict[int, tuple] = kept_decisions({})


def _pointwise_plan(func: torch._ops.OpOverload) -> tuple:
    """What :func:`pointwise` decides about an op once, whatever its arguments (issue 34, item 2): its packet,
    whether it is piecewise constant, a selection (``masked_fill``, ``where``), an op that keeps inputs zero-free (and
    whether a sum's or a product's proof applies, scalars included), a product by the product rule, a sum (a
    constant infinity absorbs), an op whose output 0 has no derivative."""
    packet = func.overloadpacket
    name = _name(func)
    products = packet in _PRODUCTS or packet in _QUOTIENTS
    return (packet, name in _PIECEWISE_CONSTANT, packet in _MASKED_FILL or packet is aten.where,
            name in _KEEPS_ZERO_FREE, packet in _SUMS or name == "rsub", products,
            products or name in ("addcmul", "addcdiv"), packet in _SUMS, name in _ZERO_OUTPUT_NO_DERIVATIVE)


def _flat(args: tuple) -> bool:
    """Whether no argument is a list or a tuple (then the tensors are the arguments that are tensors)."""
    for a in args:
        if type(a) is list or type(a) is tuple:
            return False
    return True


def _select(packet, bound: dict, out: Tensor, read: Read, step: Step, sources: int) -> Distance:
    """``masked_fill`` and ``where``: each element takes the distances of the operand it selects (the mask is a
    value; a scalar fill is a constant)."""
    if packet is aten.where:
        mask, taken, other = bound["condition"], bound["self"], bound["other"]
    else:
        mask, taken, other = bound["mask"], bound["value"], bound["self"]
    chosen = [broadcast_min([read(v)] if isinstance(v, Tensor) else [], out.shape, sources) for v in (taken, other)]
    if chosen[0] is None and chosen[1] is None:
        return None
    never = unreachable(sources, out.shape)
    return step(torch.where(mask.expand(out.shape), chosen[0] if chosen[0] is not None else never,
                            chosen[1] if chosen[1] is not None else never))


def zero_free(value: Any, d: Distance, read: Read) -> bool:
    """Whether a factor holds no exact 0, without reading a traced tensor's values: a scalar by its value, a constant
    once per storage, view and version, a traced tensor by the proof of the ops that wrote it
    (:meth:`~seqlab.measure.distance_store.DistanceStore.holds_no_zeros`)."""
    if not isinstance(value, Tensor):
        return value != 0
    return not read.constant_zeros(value)[1] if d is None else read.holds_no_zeros(value)


def _zeros(value: Any, d: Distance, read: Read) -> Tensor | None:
    """Where a factor is exactly 0 (a bool tensor), None where it is nowhere 0. A scalar is a value; a constant is
    read once per storage, view and version (a weight read at every step of a recurrence is checked once); a traced
    tensor proven zero-free is not read at all."""
    if not isinstance(value, Tensor):
        return torch.tensor(True) if value == 0 else None
    if d is not None and read.holds_no_zeros(value):
        return None
    if d is None:
        zero, found = read.constant_zeros(value)
        return zero if found else None
    return value == 0 if not bool(value.all()) else None  # one reduction; the mask only where a 0 sits


def _infinite(value: Any, d: Distance, read: Read) -> Tensor | None:
    """Where a factor is infinite (a bool tensor), None where it is nowhere infinite."""
    if not isinstance(value, Tensor):
        return torch.tensor(True) if isinstance(value, float) and math.isinf(value) else None
    if not value.is_floating_point() and not value.is_complex():
        return None
    infinite, found = read.constant_infs(value) if d is None else (torch.isinf(value), None)
    if found is None:
        found = bool(infinite.any())
    return infinite if found else None


def _either(*masks: Tensor | None) -> Tensor | None:
    present = [m for m in masks if m is not None]
    return None if not present else functools.reduce(torch.logical_or, present)


def _terms(terms: list[tuple[Distance, Tensor | None]], shape, sources: int, step: Step) -> Distance:
    """The least over terms of each term's distances, a term dropped where its mask (a bool, broadcast) is True."""
    parts = [d if cut is None else torch.where(cut.expand(shape), UNREACHABLE, align(d, shape))
             for d, cut in terms if d is not None]
    result = broadcast_min(parts, shape, sources)
    return None if result is None else step(result)


def _product_rule(func, args, kwargs, out: Tensor, read: Read, step: Step, sources: int) -> Distance:
    """``mul``, ``div``, ``addcmul`` and ``addcdiv`` by the product rule: each factor's distances pass where no
    other factor of its term is exactly 0 (for a divisor: where the dividend is not 0); an infinite divisor
    passes nothing (a / inf = 0). Values are read only for a factor whose partner carries distances."""
    b = arguments(func, args, kwargs)
    name = _name(func)
    if name == "div" and b.get("rounding_mode") is not None:
        return None  # floor or truncated division: piecewise constant
    if name in ("mul", "div"):
        first, second, addend, scale = b["self"], b["other"], None, 1
    else:
        first, second, addend, scale = b["tensor1"], b["tensor2"], b["self"], b.get("value", 1)
    d_first, d_second = (read(v) if isinstance(v, Tensor) else None for v in (first, second))
    d_addend = read(addend) if isinstance(addend, Tensor) else None
    if d_first is None and d_second is None:
        return None if d_addend is None else step(broadcast_min([d_addend], out.shape, sources))
    scaled_out = _zeros(scale, None, read)  # value = 0: the term is not there
    if name in ("mul", "addcmul"):
        cut_first = _either(scaled_out, None if d_first is None else _zeros(second, d_second, read))
        cut_second = _either(scaled_out, None if d_second is None else _zeros(first, d_first, read))
    else:  # first / second
        # an infinite divisor is looked for in a constant only (a traced one would be an overflow)
        infinite = _infinite(second, d_second, read) if d_second is None else None
        cut_first = _either(scaled_out, infinite)
        cut_second = _either(scaled_out, infinite, None if d_second is None else _zeros(first, d_first, read))
    return _terms([(d_first, cut_first), (d_second, cut_second), (d_addend, None)], out.shape, sources, step)


# --- reductions and normalisations -------------------------------------------------------------

_SAME_SHAPE_ALONG_DIM = {"_softmax", "_safe_softmax", "_log_softmax", "softmax", "log_softmax",
                         "sort", "topk", "max", "min", "logsumexp", "argmax", "argmin"}
_SOFTMAX = {"_softmax", "_safe_softmax", "_log_softmax", "softmax", "log_softmax"}
_PREFIX_ALONG_DIM = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}
#: Reductions whose first output holds no exact 0 when their input holds none (a sum's cancellation aside: the
#: perturbation check's); sorts and extremes move values, a prefix sum adds them.
_KEEPS_ZERO_FREE_ALONG_DIM = frozenset({"sum", "mean", "amax", "amin", "max", "min", "cumsum", "logsumexp", "sort",
                                        "topk", "prod", "cumprod", "cummax", "cummin"})
#: Reductions to an extreme value: they depend on the elements that attain it (see :func:`reduction`).
_EXTREMES = {"max", "min", "amax", "amin"}
#: Discrete Fourier transforms: every output frequency reads every input element along the transformed dims.
_TRANSFORM_ALONG_DIMS = {"_fft_r2c", "_fft_c2c", "_fft_c2r"}


def reduction(func, args, kwargs, outs: list[Tensor], read: Read, step: Step, sources: int) -> list[Distance]:
    """Ops that read a whole dim (or several) for each output element: sums, softmax, norms, sorts."""
    b = arguments(func, args, kwargs)
    name = _name(func)
    data = b.get("self", b.get("input"))
    d = read(data)
    if d is None:
        return [None] * len(outs)
    if name == "native_layer_norm":
        dims = list(range(data.dim() - len(b["normalized_shape"]), data.dim()))
    else:
        dims = b.get("dim")
        dims = list(range(data.dim())) if dims is None or dims == [] else ([dims] if isinstance(dims, int) else dims)
    dims = [i % max(data.dim(), 1) for i in dims]
    blocked = None
    if name in _KEEPS_ZERO_FREE_ALONG_DIM and data.is_floating_point():
        read.prove_zero_free(outs[0], read.holds_no_zeros(data))
    if name in _SOFTMAX and data.is_floating_point() and outs[0].shape == data.shape:
        # a weight exactly 0 in the dtype (exp(-inf), or an underflowing finite score) is a constant:
        # it depends on nothing and passes nothing on (its derivative is 0 too)
        weight_zero = torch.isneginf(outs[0]) if name.startswith(("_log", "log")) else outs[0] == 0
        zero_weights = bool(weight_zero.any())
        if not name.startswith(("_log", "log")):
            read.prove_zero_free(outs[0], not zero_weights)  # the weights are read anyway: exact
        masked = torch.isneginf(data)
        # nothing to cut unless a weight is 0, a score is -inf or a row holds one weight: then no mask is built and
        # no distance is rewritten (the common attention row: every weight open)
        if zero_weights or data.dim() == 0 or data.shape[dims[0]] == 1 or bool(masked.any()):
            blocked = masked | weight_zero
            # a row with a single weight left open: that weight is exactly 1 whatever its score (query) is
            alone = (~blocked).sum(dim=dims[0], keepdim=True) == 1
            blocked = blocked | alone.expand_as(blocked)
            d = torch.where(blocked, UNREACHABLE, d)
    if name == "logsumexp" and data.is_floating_point() and data.dim():
        # d logsumexp(x) / d x_i = exp(x_i − logsumexp(x)), a softmax weight: where it is exactly 0 in the dtype
        # (exp(−inf), or a score far under the row's, an additive finfo.min mask) x_i passes nothing on
        lse = outs[0] if b.get("keepdim") else outs[0].unsqueeze(dims[0]) if len(dims) == 1 else None
        if lse is not None:
            d = torch.where(torch.exp(data - lse) == 0, UNREACHABLE, d)
    if name in _EXTREMES and data.is_floating_point() and data.dim():
        # a max (min) moves with the elements that attain it, and with no other: its derivative is 0 elsewhere
        # (a masked logit at finfo.min under the row max of an attention does not reach the row through it)
        extreme = (data.amax if name in ("max", "amax") else data.amin)(dim=dims, keepdim=True)
        d = torch.where((data == extreme) | extreme.isnan(), d, UNREACHABLE)
    if name in _PREFIX_ALONG_DIM and data.dim():
        reduced = torch.cummin(d, dim=dims[0] + 1).values
    else:
        reduced = least(d, [i + 1 for i in dims], keepdim=True) if data.dim() else d
    results = []
    for out in outs:
        if not carries_derivative(out):  # argmax, a sort's indices, a count: piecewise constant
            results.append(None)
            continue
        if out.shape == reduced.shape[1:] or _broadcastable(reduced.shape[1:], out.shape):
            result = reduced.expand(sources, *out.shape)
        else:
            result = reduced.reshape(sources, *out.shape)
        if name == "native_layer_norm" and out.shape == data.shape:
            result = broadcast_min([result, *(read(b[k]) for k in ("weight", "bias") if b[k] is not None)],
                                   out.shape, sources)
        if blocked is not None and out.shape == data.shape:
            result = torch.where(blocked, UNREACHABLE, result)
        results.append(step(result))
    return results


def _broadcastable(source: torch.Size, target: torch.Size) -> bool:
    return len(source) == len(target) and all(s in (1, t) for s, t in zip(source, target, strict=True))


def is_inverse_transform(func, args, kwargs) -> bool:
    """An inverse DFT (``_fft_c2r``, or ``_fft_c2c`` with ``forward=False``): after a product in the frequency
    domain it can cancel exactly (an FFT convolution zero-padded to be causal), which its structure cannot
    see, so the tracer takes its rule as a bound and names it."""
    name = _name(func)
    return name == "_fft_c2r" or (name == "_fft_c2c" and not arguments(func, args, kwargs)["forward"])


@functools.cache
def is_reduction(func: torch._ops.OpOverload) -> bool:
    """Whether :func:`reduction` handles the op (``reduction`` tag, softmax family, layer norm, sorts)."""
    name = _name(func)
    if name in _EXTREMES and func._overloadname == "other":  # max(a, b): element-wise, not a reduction
        return False
    return (torch.Tag.reduction in func.tags or name in _SAME_SHAPE_ALONG_DIM or name in _PREFIX_ALONG_DIM
            or name in _TRANSFORM_ALONG_DIMS or name == "native_layer_norm")


# --- movement ----------------------------------------------------------------------------------

_ACCUMULATE = (aten.index_put, aten.index_put_, aten._index_put_impl_, aten._unsafe_index_put, aten.put, aten.put_)
_REDUCE = (aten.scatter, aten.scatter_)


def may_accumulate(func: torch._ops.OpOverload) -> bool:
    """Whether :func:`accumulates` can be true for some arguments of the op (decided once per op)."""
    return func.overloadpacket in _ACCUMULATE or func.overloadpacket in _REDUCE


def accumulates(func, args, kwargs) -> bool:
    """Whether a movement op sums or reduces what it moves (``index_put(accumulate=True)``, ``scatter(reduce=…)``):
    it then computes, and element ids cannot go through it; the tracer decomposes or derives it instead."""
    packet = func.overloadpacket
    if packet not in _ACCUMULATE and packet not in _REDUCE:
        return False
    bound = arguments(func, args, kwargs)
    if packet in _ACCUMULATE:
        return bool(bound.get("accumulate")) or _repeats(bound.get("indices"))
    return bound.get("reduce") is not None


def _repeats(indices) -> bool:
    """Whether an ``index_put``'s index tuples name one place twice: which write lands there is the kernel's
    choice, so no element id can say (the Jacobian, as autograd defines it, reads every writer)."""
    present = [i for i in (indices or ()) if isinstance(i, Tensor)]
    if not present or any(i.dtype == torch.bool for i in present):
        return False
    places = torch.stack([i.reshape(-1) for i in torch.broadcast_tensors(*present)], dim=-1)  # (writes, dims)
    return places.shape[0] > 1 and torch.unique(places, dim=0).shape[0] < places.shape[0]

def movement(func, args, kwargs, outs: list[Tensor], read: Read, sources: int) -> list[Distance] | None:
    """Ops that only move data: run the very same op on element ids, then gather the distances — or, for an op that
    moves elements along named dims (:data:`_ALONG_DIMS`), run it on the distances themselves.

    Every floating-point argument is replaced by the ids of its elements (1, 2, …, offset past the
    previous argument's; float64 holds them exactly), integer and bool arguments (indices, masks)
    are kept, and the op is run once: each output element then holds the id of the input element it
    copies, or 0 where the op wrote a constant (padding, ``tril``, a fill). The output's distance
    is the distance of that element (unreachable for id 0). Returns None when the op cannot run on ids
    (the caller falls back to all-to-all).
    """
    packet = func.overloadpacket
    if packet in (aten.fill_, aten.zero_):
        return [None for _ in outs]
    if packet in (aten.copy_, aten._to_copy, aten.lift_fresh_copy, aten.clone):
        if not all(carries_derivative(out) for out in outs):
            return [None for _ in outs]  # a cast to integers or booleans: piecewise constant
        source = arguments(func, args, kwargs)["src" if packet is aten.copy_ else "self"]
        d = read(source)
        for out in outs:
            read.prove_zero_free(out, d is not None and source.is_floating_point() and zero_free(source, d, read))
        return [broadcast_min([d], out.shape, sources) for out in outs]
    if packet is aten._unsafe_view and args[0].is_contiguous():  # a reshape: elements keep their order
        d = read(args[0])
        return [None if d is None else d.reshape(sources, *outs[0].shape)]
    if packet is aten.constant_pad_nd:
        args = (args[0], args[1], 0.0)  # padding is a constant: id 0
    args, kwargs = _scalar_fill_as_constant(func, args, kwargs)
    leaves, rebuild = flat_arguments(args, kwargs)
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor) and _carries_data(leaf)]
    distances = [read(leaves[i]) for i in slots]
    if all(d is None for d in distances):
        return [None for _ in outs]
    rows = [narrow(d) if d is not None else None for d in distances]
    # the outputs hold no exact 0 when no input does and the op writes no constant (id 0) of its own
    inputs_free = all(zero_free(leaves[i], d, read) for i, d in zip(slots, distances, strict=True))
    if func in _ALONG_DIMS:
        moved = _along_dims(func, leaves, rebuild, slots, distances, rows, outs, sources)
        if moved is not None:
            if inputs_free:  # every element copies an input's: no constant of its own
                for out in outs:
                    if out.is_floating_point() or out.is_complex():
                        read.prove_zero_free(out, True)
            return moved
    kept = getattr(read, "moved_ids", None)  # the store keeps the id mappings of this pass
    key = None if kept is None else movement_key(func, args, kwargs, outs)
    if all(leaves[i].dim() and (d is None or r is not None) for i, d, r in zip(slots, distances, rows, strict=True)):
        moved = _move_rows(func, leaves, slots, rows, rebuild, outs, sources, read if inputs_free else None, key,
                           kept)
        if moved is not None:
            return moved
    return _move_elements(func, leaves, slots, distances, rebuild, outs, sources, read if inputs_free else None, key,
                          kept)


#: Movement ops that PyTorch defines for any number of leading dims, acting along the dims their ``dim`` (``dims``)
#: argument names, and whose every output element copies one input element (no constant of their own): the tensors
#: laid side by side (``cat``, ``stack``), cut along one dim (the ``split`` and ``chunk`` copies, ``unbind_copy``),
#: picked along one dim by an index (``index_select``: the index is a value, the same for every source), reversed or
#: rotated along named dims (``flip``, ``roll`` with its dims). The op applied to the inputs' distances, (S, *shape)
#: each, with those dims one place further right (a negative dim counts from the end and stays) gives each source's
#: distances of the outputs at once (issue 34, item 2), where the id route builds, moves and gathers an id per element.
#: op -> (the data argument, the dim argument, whether the dim argument is a list).
_ALONG_DIMS = {
    aten.cat.default: ("tensors", "dim", False),
    aten.stack.default: ("tensors", "dim", False),
    aten.unsafe_split.Tensor: ("self", "dim", False),
    aten.unsafe_split_with_sizes.default: ("self", "dim", False),
    aten.split_copy.Tensor: ("self", "dim", False),
    aten.split_with_sizes_copy.default: ("self", "dim", False),
    aten.unsafe_chunk.default: ("self", "dim", False),
    aten.unbind_copy.int: ("self", "dim", False),
    aten.index_select.default: ("self", "dim", False),
    aten.flip.default: ("self", "dims", True),
    aten.roll.default: ("self", "dims", True),
}


def _along_dims(func, leaves: list[Any], rebuild, slots: list[int], distances: list[Distance],
                rows: list[Distance], outs: list[Tensor], sources: int) -> list[Distance] | None:
    """An op of :data:`_ALONG_DIMS` run on the distances themselves: one op. On the row form when every input has it
    and no dim it acts along is the last (the rows stay rows). None where the id route must answer: a tensor in a
    list that is an index or a mask, a 0-dim input, ``roll`` without dims (it rolls the flattened tensor), shapes that
    do not come out as the op's."""
    data_name, dim_name, many = _ALONG_DIMS[func]
    bound = arguments(func, *rebuild(leaves))
    data, dims = bound[data_name], bound[dim_name]
    tensors = list(data) if isinstance(data, (list, tuple)) else [data]
    given = {id(t) for t in tensors}
    if slots != [i for i, leaf in enumerate(leaves) if id(leaf) in given] or len(slots) != len(tensors):
        return None  # every data argument a floating tensor, met once, and no other floating tensor
    dims = list(dims) if many else [dims]
    if not dims or not all(isinstance(k, int) and not isinstance(k, bool) for k in dims):
        return None
    if func is aten.cat.default:  # cat skips a 1-D empty input whatever the other shapes (its legacy rule)
        present = [(t, d, r) for t, d, r in zip(tensors, distances, rows, strict=True)
                   if not (t.dim() == 1 and t.numel() == 0)]
    else:
        present = list(zip(tensors, distances, rows, strict=True))
    if not present or any(t.dim() == 0 for t, _, _ in present):
        return None
    acting = present[0][0].dim() + (func is aten.stack.default)  # the dims a dim argument counts in
    if any(not -acting <= k < acting for k in dims):
        return None
    use_rows = all(k % acting != acting - 1 for k in dims) and all(d is None or r is not None for _, d, r in present)
    never = torch.full((), UNREACHABLE, dtype=DTYPE)
    if use_rows:
        parts = [never.expand(sources, *t.shape[:-1], 1) if d is None else r for t, d, r in present]
    else:
        parts = [never.expand(sources, *t.shape) if d is None else d for t, d, _ in present]
    shifted = [k + 1 if k >= 0 else k for k in dims]
    bound[data_name] = parts if isinstance(data, (list, tuple)) else parts[0]
    bound[dim_name] = shifted if many else shifted[0]
    try:
        moved = func(*bound.values())
    except (RuntimeError, IndexError, TypeError, ValueError):
        return None
    moved = list(tensors_in(moved if isinstance(moved, (list, tuple)) else (moved,)))
    if len(moved) != len(outs):
        return None
    if use_rows:
        if any(m.shape[1:-1] != o.shape[:-1] or m.shape[-1] != 1 for m, o in zip(moved, outs, strict=True)):
            return None
        return [align(m, o.shape) for m, o in zip(moved, outs, strict=True)]
    if any(m.shape[1:] != o.shape for m, o in zip(moved, outs, strict=True)):
        return None
    return moved


def _prove_by_ids(read, indices: list[Tensor | None], constants: list[bool], outs: list[Tensor]) -> None:
    """Each floating output is zero-free when every element holds an input's id (none holds 0, a constant)."""
    if read is None:
        return
    for m, constant, out in zip(indices, constants, outs, strict=True):
        if m is not None:
            read.prove_zero_free(out, not constant)


def _scalar_fill_as_constant(func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A scalar ``value`` an op writes (``scatter(dim, index, value=2.5)``, ``index_fill``) becomes 0, the id of a
    constant: a fill value is a value, never an element id."""
    for index, (name, _has_default, _default) in enumerate(schema_arguments(func)):
        if name != "value":
            continue
        if index < len(args) and not isinstance(args[index], Tensor):
            return (*args[:index], 0.0, *args[index + 1:]), kwargs
        if name in kwargs and not isinstance(kwargs[name], Tensor):
            return args, {**kwargs, name: 0.0}
    return args, kwargs


def _carries_data(t: Tensor) -> bool:
    """A floating or complex tensor: its elements are data the op moves (integer and bool ones are indices, masks)."""
    return t.is_floating_point() or t.is_complex()


def _ids(start: int, shape, like: Tensor) -> Tensor:
    """Element ids start, start + 1, … as float64, or as complex128 with imaginary part 0 for a complex argument."""
    ids = torch.arange(start, start + math.prod(shape), dtype=torch.float64).reshape(shape)
    return ids.to(torch.complex128) if like.is_complex() else ids


def _id_values(moved: list[Tensor]) -> list[Tensor]:
    """The ids an op's outputs hold (the real part of a complex output; integer outputs as they are)."""
    return [m.real if m.is_complex() else m for m in moved]


def _move_rows(func, leaves: list[Any], slots: list[int], rows: list[Distance], rebuild, outs: list[Tensor],
               sources: int, prover=None, key: tuple | None = None, kept: dict | None = None) -> list[Distance] | None:
    """Position level: every input's distances are uniform along its features, so each element gets the id of
    its row (ids repeat along the last dim). Where every output row copies from one input row (all its ids
    equal: a stack, a cat or a slice along the positions) that row's distance holds for all its features;
    None otherwise (the caller then moves single elements). ``key``, ``kept``: see :func:`_id_mapping`."""

    def mapping() -> tuple[list[Tensor | None], list[bool]] | None:
        ids = list(leaves)
        offset = 1
        for i in slots:
            shape = ids[i].shape
            ids[i] = _ids(offset, (*shape[:-1], 1), ids[i]).expand(shape).contiguous()
            offset += shape[:-1].numel()
        moved = _run_on_ids(func, ids, rebuild, outs)
        moved = None if moved is None else _id_values(moved)
        if moved is None or any(m.is_floating_point() and (not m.dim() or not bool((m == m[..., :1]).all()))
                                for m in moved):
            return None
        return ([m[..., 0].reshape(-1).long() if m.is_floating_point() else None for m in moved],
                [m.is_floating_point() and bool((m == 0).any()) for m in moved])

    found = _id_mapping(("rows", key), kept, mapping)
    if found is None:
        return None
    indices, constants = found
    _prove_by_ids(prover, indices, constants, outs)
    flat = [unreachable(sources, (1,))]  # id 0: a constant
    for i, r in zip(slots, rows, strict=True):
        count = leaves[i].shape[:-1].numel()
        # an empty input (a slice past a head's last feature) moves no element: its rows read as constants
        flat.append(unreachable(sources, (count,)) if r is None or not r.numel() else r.reshape(sources, count))
    table = torch.cat(flat, dim=1)  # (S, 1 + all input rows)
    return [align(table.index_select(1, m).reshape(sources, *o.shape[:-1], 1), o.shape) if m is not None else None
            for m, o in zip(indices, outs, strict=True)]


def _run_on_ids(func, leaves: list[Any], rebuild, outs: list[Tensor]) -> list[Tensor] | None:
    """Run the op on id tensors; None if it cannot run on float64 ids or returns other shapes."""
    call_args, call_kwargs = rebuild(leaves)
    try:
        moved = func(*call_args, **call_kwargs)
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, TypeError, ValueError, IndexError):  # an op that cannot run on float64 ids
        return None
    moved = list(tensors_in(moved if isinstance(moved, (list, tuple)) else (moved,)))
    if len(moved) != len(outs) or any(m.shape != o.shape for m, o in zip(moved, outs, strict=True)):
        return None
    return moved


def _move_elements(func, leaves: list[Any], slots: list[int], distances: list[Distance], rebuild,
                   outs: list[Tensor], sources: int, prover=None, key: tuple | None = None,
                   kept: dict | None = None) -> list[Distance] | None:
    """Element level: each element gets its own id; the output's distances are gathered by id. ``key``,
    ``kept``: see :func:`_id_mapping`."""

    def mapping() -> tuple[list[Tensor | None], list[bool]] | None:
        ids = list(leaves)
        offset = 1
        for i in slots:
            ids[i] = _ids(offset, ids[i].shape, ids[i])
            offset += ids[i].numel()
        moved = _run_on_ids(func, ids, rebuild, outs)
        if moved is None:
            return None
        moved = _id_values(moved)
        return ([m.reshape(-1).long() if m.is_floating_point() else None for m in moved],
                [m.is_floating_point() and bool((m == 0).any()) for m in moved])

    found = _id_mapping(("elements", key), kept, mapping)
    if found is None:
        return None
    indices, constants = found
    _prove_by_ids(prover, indices, constants, outs)
    flat = [unreachable(sources, (1,))]  # id 0: a constant
    for i, d in zip(slots, distances, strict=True):
        size = leaves[i].numel()
        flat.append(unreachable(sources, (size,)) if d is None else d.reshape(sources, size))
    table = torch.cat(flat, dim=1)  # (S, 1 + all input elements)
    return [table.index_select(1, m).reshape(sources, *o.shape) if m is not None else None
            for m, o in zip(indices, outs, strict=True)]


_UNSET = object()


def _id_mapping(key: tuple, kept: dict | None, mapping: Callable[[], Any]) -> Any:
    """Where each output element of a movement takes its id from (per output: the flat ids, None for a non-floating
    output; whether any element holds a constant), from ``mapping()`` — or from ``kept`` under ``key``, where a call of
    the same op on the same shapes, dtypes and other arguments put it (:func:`movement_key`): the ids an op moves
    depend on nothing else, so they are decided once per op kind and signature (issue 34, item 2)."""
    if kept is None or key[1] is None:
        return mapping()
    found = kept.get(key, _UNSET)
    if found is _UNSET:
        found = mapping()
        if found is None or sum(m.numel() for m in found[0] if m is not None) <= KEPT_IDS:
            kept[key] = found  # a large map (a whole sequence moved once) is not kept: its bytes would stay
    return found


#: The most output elements whose id map a pass keeps per op signature (a recurrence's per-step chunks and stacks:
#: thousands); a map of a whole sequence's tensor is worked out again instead, so the pass holds no more than the
#: distances that :func:`~seqlab.measure.distance_store.estimate_path_bytes` counts (1 MiB of int64 ids at most each).
KEPT_IDS = 2**17


def movement_key(func, args: tuple, kwargs: dict, outs: list[Tensor]) -> tuple | None:
    """The signature under which a movement's id mapping is kept: the op, each floating tensor's shape and dtype, the
    other arguments' values, the outputs' shapes; None when a tensor argument is an index or a mask (its values
    decide where elements go) or an argument cannot be a key."""
    def signature(value):
        if isinstance(value, Tensor):
            if not _carries_data(value) or value.is_nested or value.layout != torch.strided:
                raise TypeError("values decide")
            return value.shape, value.dtype
        if isinstance(value, (list, tuple)):
            return type(value), tuple(signature(v) for v in value)
        return value
    try:
        key = (id(func), signature(args), tuple((name, signature(v)) for name, v in kwargs.items()),
               tuple(o.shape for o in outs))
        hash(key)
    except TypeError:
        return None
    return key


def flat_arguments(args: tuple, kwargs: dict) -> tuple[list[Any], Callable[[list[Any]], tuple[tuple, dict]]]:
    """The op's arguments as one flat list (a tensor list argument, as ``cat`` takes, flattened in place),
    and the function that puts a changed list back into (args, kwargs)."""
    leaves: list[Any] = []
    shape: list[tuple[str, object, int]] = []  # per argument: ("arg" | "list" | "tuple", key, length)
    for key, value in [*enumerate(args), *kwargs.items()]:
        if isinstance(value, (list, tuple)):
            shape.append(("list" if isinstance(value, list) else "tuple", key, len(value)))
            leaves.extend(value)
        else:
            shape.append(("arg", key, 1))
            leaves.append(value)

    def rebuild(values: list[Any]) -> tuple[tuple, dict]:
        rebuilt_args, rebuilt_kwargs, at = [], {}, 0
        for kind, key, length in shape:
            value = values[at] if kind == "arg" else (list if kind == "list" else tuple)(values[at:at + length])
            at += length
            if isinstance(key, int):
                rebuilt_args.append(value)
            else:
                rebuilt_kwargs[key] = value
        return tuple(rebuilt_args), rebuilt_kwargs

    return leaves, rebuild

