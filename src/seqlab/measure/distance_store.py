"""Where the path tracer keeps its distances: one int32 tensor per storage, per element or per position.

The tracer (:mod:`seqlab.measure.path_tracer`) keeps, beside every storage the pass writes, the least
distance from each source to each element. Most tensors of a sequence layer never mix features across
positions in a way the distances can see: a row-wise matmul ``x @ W`` with a weight, an element-wise op, a
layer norm give every feature of a position the same distance. Such a storage is kept **at position level**
(issue 17): one distance per (row, run of ``f`` features), ``f`` its last dim, so an Elman pass holds d times
fewer bytes. The form is taken only when the value written proves it by layout (last dim of stride 0, see
:func:`~seqlab.measure.distances.rows_of`), never by looking at values, and it is exact: reading gives the
very tensor the element form would, as an expanded view.

A read or a write that cannot be expressed on rows — a view across the position axis (a transpose, a flat
reshape, part of a row), or a write that makes a row's features differ (a mask cut, one feature written) —
first expands that storage to element level (:meth:`DistanceStore.expand`) and goes on there.

Shapes: ``rows`` = sources × the two units; a storage of ``n`` elements is (rows, n) per element or
(rows, n / f) per position.

Beside the distances the store keeps, per storage, whether it is proven to hold no exact 0 (issue 35):
the rule of each op that writes it says whether its output can hold one (:meth:`DistanceStore.prove_zero_free`), so
the product rule reads the values of a traced factor only where a 0 can sit (:meth:`DistanceStore.holds_no_zeros`).

:func:`estimate_path_bytes` is the one estimate of what a pass holds, from these very sizes (int32 distances,
the chunk of the masked min-plus product): every front end that refuses a size before tracing calls it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.contraction_rules import CHUNK_ELEMENTS
from seqlab.measure.distances import DTYPE, ITEMSIZE, UNITS, UNREACHABLE, least, uniform
from seqlab.memory import GIB


@dataclass(frozen=True)
class PathBytes:
    """What one path-tracing pass holds, in bytes (:func:`estimate_path_bytes`).

    Attributes:
        distances: the store's int32 distances, exactly :attr:`DistanceStore.used_bytes` at element level.
        values: the written tensors the tracer keeps alive (0 when not asked for).
        temporary: the masked min-plus product's chunk (0 without such a product).
    """

    distances: int
    values: int
    temporary: int

    @property
    def total(self) -> int:
        """distances + values + temporary."""
        return self.distances + self.values + self.temporary


def estimate_path_bytes(elements: int, sources: int, *, value_bytes: int = 0,
                        product: tuple[int, int, int] | None = None) -> PathBytes:
    """Bytes one path-tracing pass holds, from the tracer's own sizes: its distances, the values it keeps
    alive, and the temporary of its chunked min-plus product. The one path-memory estimate.

    distances = E · 2S · ITEMSIZE;   values = E · value_bytes;
    temporary = ITEMSIZE · min(2S · n·k·p, max(CHUNK_ELEMENTS, 2S · k·p))

    with E the elements of every storage the pass writes (the traced copy of x included), S its sources, two
    distance rows per source (:data:`~seqlab.measure.distances.UNITS`: products, ops), ``ITEMSIZE`` = 4 (int32
    distances, :mod:`seqlab.measure.distances`) and ``CHUNK_ELEMENTS`` = 2^24 (64 MiB: the row chunks of the
    masked product in :mod:`seqlab.measure.contraction_rules`, of which one row may pass it). ``distances`` is
    what :class:`DistanceStore` charges at element level (``used_bytes``); at position level it holds less,
    so the estimate is then an upper bound.

    >>> estimate_path_bytes(3 * 5 * 4, 1)  # 60 elements x 2 rows x 4 bytes
    PathBytes(distances=480, values=0, temporary=0)
    >>> estimate_path_bytes(60, 2, value_bytes=4, product=(512, 64, 512)).temporary // 2**20  # the 64 MiB chunk
    64

    Args:
        elements: elements written by the pass (an integer >= 1), counted by the caller for its layer.
        sources: source positions traced in the one pass (an integer >= 1).
        value_bytes: bytes of one written value, to count the tensors the tracer keeps alive (4 for float32;
            0: distances only).
        product: ``(n, k, p)`` of the largest (n×k) @ (k×p) product the pass may trace as masked (a factor
            holding a constant exact 0), batch dimensions folded into n; None when it has none.

    Returns:
        A :class:`PathBytes` (``.total`` for the sum).

    Raises:
        SeqlabError: ``elements``, ``sources`` or a product size not a positive integer, ``value_bytes``
            not an integer >= 0.
    """
    require_positive_int("elements", elements)
    require_positive_int("sources", sources)
    if isinstance(value_bytes, bool) or not isinstance(value_bytes, int) or value_bytes < 0:
        raise SeqlabError(N_("value_bytes must be an integer >= 0, received {value_bytes!r}"), value_bytes=value_bytes)
    rows = len(UNITS) * sources
    temporary = 0
    if product is not None:
        n, k, p = (require_positive_int(name, size) for name, size in zip("nkp", product, strict=True))
        temporary = ITEMSIZE * min(rows * n * k * p, max(CHUNK_ELEMENTS, rows * k * p))
    return PathBytes(distances=elements * rows * ITEMSIZE, values=elements * value_bytes, temporary=temporary)


def _fresh(value: Tensor) -> bool:
    """A distance tensor no one else holds a view of: computed by the rule (not a view of a stored one),
    contiguous, of the store's dtype."""
    return value._base is None and value.dtype == DTYPE and value.is_contiguous()


@functools.lru_cache(maxsize=4096)
def _row_layout(shape: tuple[int, ...], stride: tuple[int, ...], offset: int,
                features: int) -> tuple[tuple[int, ...], int] | None:
    """Strides and offset, in rows of ``features`` elements, of a view's dims but the last; None when a dim
    crosses rows unevenly or the last dim leaves its row (the view needs element level). Once per layout."""
    if 0 in shape:  # an empty view reads nothing: any in-bounds layout (its offset may sit one row past the end)
        return (0,) * (len(shape) - 1), 0
    offset, within = divmod(offset, features)
    if not shape:
        return (), offset
    if shape[-1] > 1 and (stride[-1] != 1 or within + shape[-1] > features):
        return None
    strides = []
    for size, step in zip(shape[:-1], stride[:-1], strict=True):
        if size > 1 and step % features:
            return None
        strides.append(step // features if size > 1 else 0)
    return tuple(strides), offset


@functools.lru_cache(maxsize=4096)
def _row_read(rows: int, row_stride: int, shape: tuple[int, ...], stride: tuple[int, ...], offset: int,
              features: int) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """``as_strided`` arguments (size, stride, offset) that read a view of ``shape``/``stride``/``offset`` from a
    position-level storage (``rows`` distance rows, ``row_stride`` apart, one distance per run of ``features``
    elements), every feature of a run reading its one distance (stride 0); None when the view crosses runs (it
    needs element level). Decided once per signature.

    >>> _row_read(4, 6, (2, 8), (8, 1), 16, 8)  # positions 2 and 3 of a (6, 8) tensor
    ((4, 2, 8), (6, 1, 0), 2)
    """
    layout = _row_layout(shape, stride, offset, features)
    if layout is None:
        return None
    strides, start = layout
    return (rows, *shape), (row_stride, *strides, *((0,) if shape else ())), start


@functools.lru_cache(maxsize=4096)
def _new_storage(shape: tuple[int, ...], stride: tuple[int, ...], offset: int, size: int, nbytes: int,
                 contiguous: bool) -> tuple[bool, bool, int, int, bool]:
    """What the store decides about a tensor written to a storage it does not hold yet, once per signature: whether
    it covers its whole storage's elements laid out as it (then its distances are the storage's), whether it covers
    every byte of it (then a rule's zero-free proof holds for the storage, :meth:`DistanceStore._whole`), the
    storage's elements, the features of a position (its last dim) and whether it covers whole runs of them (so a row
    form can hold it).

    >>> _new_storage((3, 4), (4, 1), 0, 4, 48, True), _new_storage((3, 2), (4, 1), 0, 4, 48, False)
    ((True, True, 12, 4, True), (False, False, 12, 2, True))
    """
    elements = nbytes // size
    numel = math.prod(shape)
    whole = offset == 0 and contiguous and numel == elements
    proven_whole = offset == 0 and contiguous and numel * size == nbytes
    features = shape[-1] if shape else 1
    whole_rows = bool(shape) and features > 1 and elements % features == 0 and offset % features == 0 and \
        _row_layout(shape, stride, offset, features) is not None
    return whole, proven_whole, elements, features, whole_rows


def _scalar_bytes(tensor: Tensor) -> int:
    """Bytes of one real scalar of the tensor: a complex element is two (its real and imaginary parts)."""
    return tensor.element_size() // (2 if tensor.is_complex() else 1)


def _layout(tensor: Tensor, features: int) -> tuple[tuple[int, ...], int] | None:
    return _row_layout(tuple(tensor.shape), tensor.stride(), tensor.storage_offset(), features)


class DistanceStore:
    """Distances per storage, and what a rule may ask: ``store(tensor)`` reads a tensor's distances (None: a
    constant), :meth:`constant_zeros` and :meth:`constant_infs` answer once per constant, :meth:`holds_no_zeros`
    whether a traced storage is proven to hold no exact 0.

    >>> store, x = DistanceStore(rows=2, budget_bytes=1e6, per_unit=1), torch.zeros(3, 4)
    >>> store(x) is None
    True
    >>> store.write(x, torch.zeros(2, 3, 4, dtype=DTYPE)); store(x[1:]).shape, store.used_bytes  # 2 x 12 int32
    (torch.Size([2, 2, 4]), 96)
    >>> store = DistanceStore(rows=2, budget_bytes=1e6, per_unit=1, positions=True)
    >>> y = torch.zeros(3, 4); store.write(y, torch.zeros(2, 3, 1, dtype=DTYPE).expand(2, 3, 4))
    >>> store.used_bytes, store(y.T).shape, store.used_bytes  # 2 x 3 rows, then expanded to 2 x 12
    (24, torch.Size([2, 4, 3]), 96)

    Args:
        rows: distance rows (sources times the two units). budget_bytes: the most bytes the store may hold
        before it refuses. per_unit: sources, for the refusal's message. positions: keep storages whose
        distances are proven uniform along features at position level (False: every storage per element).

    Raises:
        SeqlabError: (from :meth:`write`) a new storage would take the store past ``budget_bytes``.
    """

    def __init__(self, rows: int, budget_bytes: float, per_unit: int, positions: bool = False) -> None:
        self.rows = rows
        self.positions = positions
        self.per_unit = per_unit
        self.by_storage: dict[int, Tensor] = {}
        self.features: dict[int, int] = {}  # storages kept per position: features per row
        self.facts: dict[tuple, tuple[Tensor, bool]] = {}
        self.alive: list[Tensor] = []  # keeps storages alive so their keys are never reused
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self.expansions = 0  # position-level storages expanded to element level
        self.scalar_bytes: dict[int, int] = {}  # per storage: bytes of the scalar one distance stands for
        self.zero_free: dict[int, bool] = {}  # per storage: proven to hold no exact 0 (see :meth:`holds_no_zeros`)
        self._proofs: dict[int, tuple[bool, int]] = {}  # a rule's proof for an output, and the writes that take it
        #: a movement's id mapping per op and signature, decided once per pass (:func:`~seqlab.measure.path_rules.movement`)
        self.moved_ids: dict[tuple, object] = {}

    def __call__(self, tensor: Tensor) -> Tensor | None:
        key = tensor.untyped_storage().data_ptr()
        storage = self.by_storage.get(key)
        if storage is None:
            return None
        if tensor.is_complex() or self.scalar_bytes[key] != tensor.element_size():
            return self._read_scalars(key, tensor)  # complex parts, or a view in scalars of another size
        features = self.features.get(key)
        if features is not None:
            # one view of the row form, expanded along the features (stride 0), its layout decided once per
            # signature: the very tensor ``rows.unsqueeze(-1).expand(...)`` gave, in one call
            read = _row_read(self.rows, storage.stride(0), tuple(tensor.shape), tensor.stride(), tensor.storage_offset(),
                             features)
            if read is not None:
                return storage.as_strided(*read)
            storage = self.expand(key)
        return storage.as_strided((self.rows, *tensor.shape), (storage.stride(0), *tensor.stride()),
                                  tensor.storage_offset())

    def _scalars_view(self, key: int, tensor: Tensor) -> Tensor | None:
        """(rows, *tensor.shape, 2) view of a complex tensor's distances, its real and imaginary parts (the store
        keeps one distance per real scalar, so ``view_as_real`` and ``.imag`` read their own); None when the
        storage was written in scalars of another size."""
        if self.scalar_bytes.get(key) != _scalar_bytes(tensor):
            return None
        storage = self.by_storage[key] if key not in self.features else self.expand(key)
        return storage.as_strided((self.rows, *tensor.shape, 2), (storage.stride(0), *(2 * s for s in tensor.stride()), 1),
                                  2 * tensor.storage_offset())

    def _read_scalars(self, key: int, tensor: Tensor) -> Tensor:
        """A complex tensor depends on what either part depends on; a view of another scalar size (a dtype view)
        reads the least distance of the whole storage (conservative: every element could be any of them)."""
        view = self._scalars_view(key, tensor) if tensor.is_complex() else None
        if view is not None:
            return view.amin(dim=-1)
        storage = self.by_storage[key]
        best = least(storage.reshape(self.rows, -1), 1)
        return best.reshape(self.rows, *([1] * tensor.dim())).expand(self.rows, *tensor.shape)

    def _rows_view(self, key: int, storage: Tensor, tensor: Tensor) -> Tensor | None:
        """(rows, *tensor.shape[:-1]) view of a position-level storage, or None if the view crosses rows."""
        layout = _layout(tensor, self.features[key])
        if layout is None:
            return None
        strides, offset = layout
        shape = tensor.shape[:-1] if tensor.dim() else ()
        return storage.as_strided((self.rows, *shape), (storage.stride(0), *strides), offset)

    def expand(self, key: int) -> Tensor:
        """Turn a position-level storage into element level (a view or write needs single elements)."""
        features = self.features.pop(key)
        compact = self.by_storage[key]
        self._charge(compact.numel() * (features - 1) * ITEMSIZE)
        full = compact.unsqueeze(-1).expand(*compact.shape, features).reshape(self.rows, -1).contiguous()
        self.by_storage[key] = full
        self.expansions += 1
        return full

    def prove_zero_free(self, tensor: Tensor, free: bool) -> None:
        """A rule's proof, for an output it is computing, that no element of it is an exact 0 by construction (every
        input zero-free and an op that makes no 0 of non-zeros, or the output read). The write that stores the
        output takes it (:meth:`write`)."""
        key = tensor.untyped_storage().data_ptr()
        earlier, pending = self._proofs.get(key, (True, 0))
        self._proofs[key] = (earlier and free, pending + 1)  # outputs sharing a storage (a split): one write each

    def holds_no_zeros(self, tensor: Tensor) -> bool:
        """Whether ``tensor``'s storage is proven to hold no exact 0: its whole storage written by rules that proved
        it, op after op (a storage written in part, or by an op without such a proof, may hold zeros). A rule then
        skips reading its values for the product rule: the read that costs most (issue 34, item 3).

        >>> store, x = DistanceStore(rows=2, budget_bytes=1e6, per_unit=1), torch.ones(3)
        >>> store.prove_zero_free(x, True); store.write(x, torch.zeros(2, 3, dtype=DTYPE)); store.holds_no_zeros(x)
        True
        >>> store.write(x[:1], None); store.holds_no_zeros(x)  # a constant written into part of it
        False
        """
        return self.zero_free.get(tensor.untyped_storage().data_ptr(), False)

    def write(self, tensor: Tensor, value: Tensor | None) -> None:
        """Store ``value`` ((rows, *tensor.shape), or None: no dependency) where ``tensor`` lives."""
        key = tensor.untyped_storage().data_ptr()
        storage = self.by_storage.get(key)
        proof, pending = self._proofs.pop(key, (False, 1))
        if pending > 1:
            self._proofs[key] = (proof, pending - 1)
        if storage is None:
            if value is not None and not tensor.is_complex():
                self._write_new(key, tensor, value, proof)
            elif value is not None:
                self.zero_free[key] = proof and self._whole(tensor)
                self._write_scalars(key, tensor, value)
            return
        # written over: the proof holds alone; written in part: with the rest's
        self.zero_free[key] = proof and value is not None and (self._whole(tensor) or self.zero_free.get(key, False))
        if tensor.is_complex() or self.scalar_bytes[key] != _scalar_bytes(tensor):
            self._write_scalars(key, tensor, value)
            return
        if key in self.features:
            by_rows = self.positions and value is not None and tensor.dim() and uniform(value)
            if (value is None or by_rows) and tensor.dim() and self._whole_rows(tensor, self.features[key]):
                view = self._rows_view(key, storage, tensor)
                if value is None:
                    view.fill_(UNREACHABLE)
                else:
                    view.copy_(value.select(-1, 0).clone())  # it may read the very rows it overwrites
                return
            storage = self.expand(key)
        view = storage.as_strided((self.rows, *tensor.shape), (storage.stride(0), *tensor.stride()),
                                  tensor.storage_offset())
        if value is None:
            view.fill_(UNREACHABLE)
        else:
            view.copy_(value)

    def _write_new(self, key: int, tensor: Tensor, value: Tensor, proof: bool) -> None:
        """The first write to a real storage: kept at position level where ``value`` is uniform along the features
        by layout and ``tensor`` covers whole rows, else per element. What the tensor's layout decides is decided
        once per signature (:func:`_new_storage`)."""
        size = tensor.element_size()
        whole, proven_whole, elements, features, whole_rows = _new_storage(
            tuple(tensor.shape), tensor.stride(), tensor.storage_offset(), size, tensor.untyped_storage().nbytes(),
            tensor.is_contiguous())
        self.zero_free[key] = proof and proven_whole
        self.scalar_bytes[key] = size
        if self.positions and whole_rows and uniform(value):
            positions = elements // features
            self._charge(self.rows * positions * ITEMSIZE)
            self.features[key] = features
            self.alive.append(tensor)
            rows = value.select(-1, 0)
            if whole:  # a copy: the row form may be a view of another storage's distances
                self.by_storage[key] = rows.reshape(self.rows, positions).clone(memory_format=torch.contiguous_format)
                return
            self.by_storage[key] = torch.full((self.rows, positions), UNREACHABLE, dtype=DTYPE)
            self._rows_view(key, self.by_storage[key], tensor).copy_(rows)
            return
        self._charge(self.rows * elements * ITEMSIZE)
        self.alive.append(tensor)
        if whole:  # a new result laid out as its storage: kept as it is (a view or a row form: copied once)
            fresh = value if _fresh(value) else value.clone(memory_format=torch.contiguous_format)
            self.by_storage[key] = fresh.view(self.rows, elements)
            return
        storage = self.by_storage[key] = torch.full((self.rows, elements), UNREACHABLE, dtype=DTYPE)
        storage.as_strided((self.rows, *tensor.shape), (storage.stride(0), *tensor.stride()),
                           tensor.storage_offset()).copy_(value)

    def _write_scalars(self, key: int, tensor: Tensor, value: Tensor | None) -> None:
        """A write in scalars of a complex tensor (both parts get the value's distance), or through a view of
        another scalar size than the storage's (a dtype view: the whole storage takes the least distance)."""
        if key not in self.by_storage:
            if value is None:
                return
            scalar = _scalar_bytes(tensor)
            elements = tensor.untyped_storage().nbytes() // scalar
            self._charge(self.rows * elements * ITEMSIZE)
            self.by_storage[key] = torch.full((self.rows, elements), UNREACHABLE, dtype=DTYPE)
            self.scalar_bytes[key] = scalar
            self.alive.append(tensor)
        view = self._scalars_view(key, tensor) if tensor.is_complex() else None
        if view is not None:
            view.copy_(UNREACHABLE if value is None else value.unsqueeze(-1).expand(view.shape))
            return
        storage = self.by_storage[key] if key not in self.features else self.expand(key)
        if value is not None:
            best = least(value.reshape(self.rows, -1), 1, keepdim=True)
            storage.copy_(torch.minimum(storage, best))

    @staticmethod
    def _whole(tensor: Tensor) -> bool:
        """Whether ``tensor`` covers its whole storage, laid out as it (asked only where a proof depends on it)."""
        return tensor.storage_offset() == 0 and tensor.is_contiguous() and \
            tensor.numel() * tensor.element_size() == tensor.untyped_storage().nbytes()

    @staticmethod
    def _whole_rows(tensor: Tensor, features: int) -> bool:
        """Whether ``tensor`` covers whole rows of ``features`` elements (a write keeps each row uniform)."""
        return tensor.shape[-1] == features and tensor.storage_offset() % features == 0 and \
            _layout(tensor, features) is not None

    def _fact(self, name: str, tensor: Tensor, compute) -> tuple[Tensor, bool]:
        key = (name, tensor.untyped_storage().data_ptr(), tensor._version, tensor.shape, tensor.stride(),
               tensor.storage_offset())
        fact = self.facts.get(key)
        if fact is None:
            mask = compute(tensor)
            fact = self.facts[key] = (mask, bool(mask.any()))
            self.alive.append(tensor)  # its storage key must not be reused while cached
        return fact

    def constant_zeros(self, tensor: Tensor) -> tuple[Tensor, bool]:
        """(``tensor == 0``, whether any) for a tensor with no distances, once per storage, view and version."""
        return self._fact("zeros", tensor, lambda t: t == 0)

    def constant_infs(self, tensor: Tensor) -> tuple[Tensor, bool]:
        """(``isinf(tensor)``, whether any) for a tensor with no distances, once per storage, view and version."""
        return self._fact("infs", tensor, torch.isinf)

    def _charge(self, nbytes: int) -> None:
        self.used_bytes += nbytes
        if self.used_bytes > self.budget_bytes:
            raise SeqlabError(N_("path analysis needs more than {value:.1f} GiB here (half the memory available) for "
                                 "{per_unit} source positions; measure fewer sources or a smaller T or d"),
                              value=self.budget_bytes / GIB, per_unit=self.per_unit)
