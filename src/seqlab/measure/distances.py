"""Path distances as small integers: the sentinel for "no path" and the min-plus building blocks (issue 17).

The path tracer (:mod:`seqlab.measure.paths`) keeps, per source position and per element written, the
least number of steps from the source to the element as an **int32** (4 bytes, where the float64
closeness 1 / (1 + distance) it replaced took 8). :data:`UNREACHABLE` = 2^30 stands for "does not depend
on the source"; a value at or above it reads as unreachable, so adding a step to it needs no test.

Shapes: S rows (sources, times the two units products and ops), then the tensor's own shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import Tensor

#: Distance of an element that does not depend on the source (any value at or above it means the same).
UNREACHABLE = 2**30
#: The dtype of distances: exact small integers, half the bytes of float64.
DTYPE = torch.int32
#: Bytes per distance.
ITEMSIZE = 4
#: The two units, in the order of their rows: rows [0, S) count products, rows [S, 2S) count ops.
UNITS = ("products", "ops")


def unreachable(rows: int, shape: Sequence[int]) -> Tensor:
    """A (rows, *shape) tensor of :data:`UNREACHABLE`: no element depends on any source.

    >>> unreachable(2, (3,)).tolist() == [[UNREACHABLE] * 3] * 2
    True
    """
    return torch.full((rows, *shape), UNREACHABLE, dtype=DTYPE)


#: Whether rules may work on the row form (set by a position-level pass; element level keeps the old paths).
_ROW_FORM: ContextVar[bool] = ContextVar("seqlab_row_form", default=False)


def least(d: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """``d.amin(dim, keepdim)``, and :data:`UNREACHABLE` where a reduced dim is empty (a product over a 0-wide
    contraction, a sum over nothing: no term, so no dependence), where ``amin`` would raise.

    >>> least(torch.zeros(2, 3, 0, dtype=torch.int32), -1).tolist() == [[UNREACHABLE] * 3] * 2
    True
    """
    reduced = {k % d.dim() for k in ([dim] if isinstance(dim, int) else dim)}
    if all(d.shape[k] for k in reduced):
        return d.amin(dim=dim, keepdim=keepdim)
    kept = [1 if k in reduced else n for k, n in enumerate(d.shape)]
    full = torch.full(kept, UNREACHABLE, dtype=d.dtype, device=d.device)
    return full if keepdim else full.reshape([n for k, n in enumerate(d.shape) if k not in reduced])


@contextmanager
def row_form(on: bool = True) -> Iterator[None]:
    """Let :func:`narrow` hand rules the row form inside the block (this thread or task only; restored after).

    >>> with row_form():
    ...     narrow(torch.zeros(2, 3, 1, dtype=DTYPE).expand(2, 3, 2**12)).shape
    torch.Size([2, 3, 1])
    """
    token = _ROW_FORM.set(on)
    try:
        yield
    finally:
        _ROW_FORM.reset(token)


def rows_of(d: Tensor | None) -> Tensor | None:
    """The (S, ..., 1) row form of a distance that is provably the same along its last (feature) dim, else None.

    Proof by layout, never by value: a last dim of size 1, or of stride 0 (an expanded view: every feature
    reads the same int32), holds one distance per row.

    >>> rows_of(torch.zeros(2, 3, 1, dtype=DTYPE).expand(2, 3, 5)).shape, rows_of(torch.zeros(2, 3, 5))
    (torch.Size([2, 3, 1]), None)
    """
    if not uniform(d):
        return None
    return d if d.shape[-1] == 1 else d[..., :1]


def uniform(d: Tensor | None) -> bool:
    """Whether a distance is provably the same along its last (feature) dim, by layout (see :func:`rows_of`), without
    making its row form.

    >>> uniform(torch.zeros(2, 3, 1, dtype=DTYPE).expand(2, 3, 5)), uniform(torch.zeros(2, 3, 5))
    (True, False)
    """
    return d is not None and d.dim() >= 2 and (d.shape[-1] == 1 or d.stride(-1) == 0)


#: The fewest distances (rows × elements, as a rule sees them) for which a rule takes the row form (the store keeps
#: every uniform storage of a position-level pass per position, whatever its size). Below it an element-wise op on the
#: whole tensor costs no more than the row form's own views (a narrow, a widen and a copy per op, about 1 µs each), so
#: a small tensor takes the element rules, with the same answers: an Elman step's state at the two ends is 4 rows × 512 = 2,048 distances; its input (T positions),
#: attention's scores (T × T) and a transformer's activations are far more. Measured (T = 1000, d = 512, the two ends,
#: ``check=False``, CPU time, medians of 5 interleaved rounds, 2026-12-07): with every uniform tensor in the row form
#: the Elman RNN took 507 ms against 425 ms per element; with this floor see :data:`seqlab.measure.paths.POSITIONS`.
ROW_FORM_MIN = 2**14


def narrow(d: Tensor | None) -> Tensor | None:
    """:func:`rows_of` inside a position-level pass (:func:`row_form`) for a distance of at least
    :data:`ROW_FORM_MIN` entries, None otherwise: the rules run on the row form only where the store keeps it and
    where it pays, and element-level passes take the element paths unchanged (exact either way).

    >>> narrow(torch.zeros(2, 3, 1, dtype=DTYPE)) is None  # outside a position-level pass
    True
    >>> with row_form():
    ...     narrow(torch.zeros(2, 3, 1, dtype=DTYPE).expand(2, 3, 5)) is None  # 30 entries: the element rules
    True
    """
    if d is None or not _ROW_FORM.get() or d.numel() < ROW_FORM_MIN:
        return None
    return rows_of(d)


def widen(rows: Tensor, shape: Sequence[int]) -> Tensor:
    """A (S, ..., 1) row form expanded to (S, *shape) (a view, stride 0 along the features)."""
    return align(rows, shape)


def align(d: Tensor, shape: Sequence[int]) -> Tensor:
    """Broadcast a (S, *own_shape) distance to (S, *shape) with numpy rules on the trailing dims (a view).

    >>> align(torch.zeros(2, 3, dtype=DTYPE), (4, 3)).shape
    torch.Size([2, 4, 3])
    """
    own = d.shape[1:]
    if own == shape:
        return d
    if len(own) == len(shape):  # the same rank: size-1 dims expand as they are
        return d.expand(d.shape[0], *shape)
    padded = d.reshape(d.shape[0], *([1] * (len(shape) - len(own))), *own)
    return padded.expand(d.shape[0], *shape)


def broadcast_min(distances: Sequence[Tensor | None], shape: Sequence[int], sources: int) -> Tensor | None:
    """Element-wise minimum of distances broadcast to (S, *shape); None if all are None.

    The result may be an expanded view of an input (one present): callers never write into it.

    >>> a, b = torch.tensor([[1, 5]], dtype=DTYPE), torch.tensor([[3]], dtype=DTYPE)
    >>> broadcast_min([a, None, b], (2,), 1).tolist()
    [[1, 3]]
    """
    present = [d for d in distances if d is not None]
    if not present:
        return None
    if len(present) == 1 and present[0].shape[1:] == shape:
        return present[0]  # one operand of the output's shape: its own distances (a row form stays one, by layout)
    if _ROW_FORM.get() and len(shape) and all(d.dim() >= 2 for d in present):  # every input uniform: rows
        rows = [narrow(d) for d in present]
        if all(r is not None for r in rows):
            row_shape = (*shape[:-1], 1)
            result = align(rows[0], row_shape)
            for r in rows[1:]:
                result = torch.minimum(result, align(r, row_shape))
            return widen(result, shape)
    result = align(present[0], shape)
    for d in present[1:]:
        result = torch.minimum(result, align(d, shape))
    return result


def everything(distances: Sequence[Tensor | None], shape: Sequence[int], sources: int) -> Tensor | None:
    """All-depends-on-all: every output element is as close as the closest input element.

    >>> everything([torch.tensor([[4, 2], [7, 9]], dtype=DTYPE)], (3,), 2).tolist()
    [[2, 2, 2], [7, 7, 7]]
    """
    present = [d.reshape(d.shape[0], -1).amin(dim=1) for d in distances if d is not None and d.numel()]
    if not present:
        return None
    best = torch.stack(present).amin(dim=0)  # (S,)
    return best.reshape(sources, *([1] * len(shape))).expand(sources, *shape)


def to_lengths(d: Tensor | None, sources: int, length: int,
               undefined: tuple[int, ...] = ()) -> tuple[tuple[int | None, ...], ...]:
    """(S, ..., T_out, d) distances of an output -> per (source, position) least distance, None if none.

    Positions in ``undefined`` (NaN outputs) are None whatever their distance.

    >>> to_lengths(torch.tensor([[[3, 1], [UNREACHABLE, UNREACHABLE]]], dtype=DTYPE), 1, 2)
    ((1, None),)
    """
    if d is None:
        return tuple((None,) * length for _ in range(sources))
    d = rows_of(d) if rows_of(d) is not None else d
    best = d.movedim(-2, 1).reshape(sources, length, -1).amin(dim=-1)  # (S, T_out)
    return tuple(tuple(None if v >= UNREACHABLE or j in undefined else int(v) for j, v in enumerate(row))
                 for row in best.tolist())


def seed(x: Tensor, sources: Sequence[int], units: int) -> Tensor:
    """Distances of the input itself: 0 at the source position, unreachable elsewhere: (units·S, *x.shape).

    >>> seed(torch.zeros(3, 1), (1,), 2)[:, :, 0].tolist() == [[UNREACHABLE, 0, UNREACHABLE]] * 2
    True
    """
    T = x.shape[-2]
    rows = unreachable(len(sources), (T,))
    rows[torch.arange(len(sources)), torch.tensor(sources)] = 0  # (S, T)
    shape = (len(sources),) + (1,) * (x.dim() - 2) + (T, 1)
    rows = rows.repeat(units, 1).reshape(units * len(sources), *shape[1:])
    return rows.expand(units * len(sources), *x.shape)  # one distance per position: stride 0 along features
