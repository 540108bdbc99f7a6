"""Peak memory of a forward pass: the most bytes held at once by tensors the pass allocated (issue 15).

Attention's math path writes all T×T scores, and then their softmax, before the mix A V reads them: its
peak grows as T². A fused kernel (PyTorch's flash attention for CPU) walks the scores in blocks and never
holds them all, so its peak grows as T; so does a recurrence's, which keeps one state per position. The
lesson's Table 1 (L6, L7) counts work and steps; this module measures the memory a user pays for them.

How it is tracked: a :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees every ATen op of the
pass. An op's output whose storage is neither one of the op's inputs' storages (a view, an in-place
write, ``_unsafe_view``) nor a storage already tracked is a new allocation of ``nbytes`` bytes. Storages
are keyed by (device, data pointer) and identified by their Python object: PyTorch keeps one Python
object per storage while the storage lives (it is preserved while C++ still holds the storage), so a
``weakref.finalize`` on that object fires exactly when the memory goes back to the allocator. That is
the release event. ``id()`` is never used (it is reused after a free); a pointer that comes back for a
new storage while an old record has not been finalised yet is seen as a new storage (its Python object
differs) and the old record is retired.

Temporaries inside one op: a dispatch mode sees an op's inputs and outputs, not what its kernel allocates
and frees inside itself — SDPA's math path, dispatched as one ``_safe_softmax``, holds a T×T boolean
(``isneginf`` of the scores) beside the scores and weights; the flash kernel's per-thread block buffers;
oneDNN's workspaces. So the pass also runs under ``torch.profiler`` with ``profile_memory=True``, whose
allocator events ([memory] alloc/free, with pointer and size, from c10's allocator) see every allocation,
inside an op or not. :attr:`PeakMemory.allocator_peak_bytes` is the peak of those events: each allocation
made during the pass adds its bytes, the free of that pointer takes them back; frees of memory allocated
before the pass are ignored, and so are the few bytes the dispatch mode itself allocates to hand scalars to
Python (events inside PyTorch's ``PythonDispatchMode`` scope). :attr:`PeakMemory.peak_bytes` stays the peak
of the tensors ops return, between ops (the dispatch mode names each: the op that made it, its shape and
dtype); :attr:`PeakMemory.inside_op_bytes` is what the temporaries add. When another profiler is already
running (only one may run in a process), the allocator events are not taken (``allocator_peak_bytes`` is
None); passes on several threads take turns with the profiler. Kineto's start/stop log lines are muted
(``KINETO_LOG_LEVEL`` set for the first profiler run when the user has not set it; the variable is restored,
and kineto keeps the level it read). Not seen either way: allocator rounding and caching (CPU bytes are
exact; a CUDA caching allocator reports its block sizes). Scope of every figure: memory allocated during the
pass; the inputs, parameters and any other tensor that existed before the pass are *excluded* from the peak
and reported apart as ``external_bytes``. The pass runs under ``torch.no_grad()`` (an inference forward: no
activations are saved for a backward).

Shapes: T positions, d width.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from seqlab.errors import SeqlabError
from seqlab.fit import Fit, fit_growth
from seqlab.i18n import N_
from seqlab.measure.modes import EngineMode
from seqlab.measure.ops import op_name
from seqlab.memory import MemoryEstimate, require_fits

__all__ = ["LiveTensor", "PeakGrowth", "PeakMemory", "measure_peak_memory", "peak_growth"]

#: How many of the largest live tensors at the peak are reported.
LARGEST = 5


@dataclass(frozen=True)
class LiveTensor:
    """One storage live at the peak: the op that allocated it, the shape and dtype it was made with, bytes."""

    op: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int


@dataclass(frozen=True)
class PeakMemory:
    """Memory held by the tensors of one forward pass.

    Attributes:
        peak_bytes: the most bytes held at once by storages that ops of the pass returned (bytes; between ops:
            temporaries inside one op are in ``allocator_peak_bytes``).
        final_bytes: bytes of those storages still held when the function returned (its outputs, mostly).
        allocated_bytes: every byte allocated during the pass, summed (bytes; not a peak).
        allocations: how many storages the pass allocated.
        external_bytes: bytes of storages the pass read that existed before it (inputs, parameters,
            buffers, captured tensors); excluded from ``peak_bytes``.
        largest: the :data:`LARGEST` largest tensors live at the tensor peak, largest first.
        peak_op: the op whose output made the peak.
        unseen: ops whose outputs have no storage to measure (nested, sparse, subclass), name → calls.
        allocator_peak_bytes: the most bytes held at once by memory allocated during the pass, temporaries
            inside an op included, from the allocator's events (bytes; >= ``peak_bytes``); None when another
            profiler was running.
        allocator_peak_op: the innermost op running when ``allocator_peak_bytes`` was reached: the op of the
            allocation that tipped the count, which may be a small one (``"aten.scalar_tensor"`` inside SDPA's
            math path, allocated while the T×T mask of ``aten.isneginf`` is live); ``""`` for an allocation
            outside any op. What the peak *holds* is :attr:`allocator_largest`.
        allocator_largest: the :data:`LARGEST` largest allocations live at ``allocator_peak_bytes``, as
            (innermost op that allocated it, bytes), largest first: on SDPA's math path the scores
            (``aten.bmm``), the weights (``aten._safe_softmax``) and the T×T boolean of ``aten.isneginf`` that
            ``peak_bytes`` does not see.
    """

    peak_bytes: int
    final_bytes: int
    allocated_bytes: int
    allocations: int
    external_bytes: int
    largest: tuple[LiveTensor, ...]
    peak_op: str
    unseen: dict[str, int]
    allocator_peak_bytes: int | None = None
    allocator_peak_op: str = ""
    allocator_largest: tuple[tuple[str, int], ...] = ()

    @property
    def held_bytes(self) -> int:
        """The pass's peak as a figure to print: the allocator's (every allocation, temporaries inside an op
        included) when its events were taken, else ``peak_bytes``, a lower bound (see :attr:`held_is_bound`)."""
        return self.peak_bytes if self.allocator_peak_bytes is None else self.allocator_peak_bytes

    @property
    def held_is_bound(self) -> bool:
        """True when :attr:`held_bytes` is only a lower bound: no allocator events (another profiler running),
        so what ops allocate and free inside themselves is unseen."""
        return self.allocator_peak_bytes is None

    @property
    def inside_op_bytes(self) -> int | None:
        """What temporaries inside ops add to the peak: ``allocator_peak_bytes - peak_bytes`` (bytes; None
        without allocator events)."""
        return None if self.allocator_peak_bytes is None else self.allocator_peak_bytes - self.peak_bytes


@dataclass
class _Record:
    """A tracked storage: its object (weakly), its bytes, what made it, when it was allocated and freed."""

    storage: weakref.ref
    nbytes: int
    live: LiveTensor
    allocated_at: int
    freed_at: int | None = None
    finalizer: Any = None


def _tensors(values: Iterable[Any]) -> Iterator[torch.Tensor]:
    """Every tensor in a (possibly nested) tuple/list/dict of op arguments or results."""
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _tensors(value)
        elif isinstance(value, dict):
            yield from _tensors(value.values())


def _storage(tensor: torch.Tensor) -> torch.UntypedStorage | None:
    """The tensor's storage if it has memory of its own to count, else None."""
    if tensor.is_nested or tensor.layout != torch.strided or tensor.device.type == "meta":
        return None
    try:
        storage = tensor.untyped_storage()
    except (RuntimeError, NotImplementedError):  # a subclass without a storage of its own
        return None
    return storage if storage.data_ptr() else None


class _PeakTracker(EngineMode):
    """Records the allocation and release of every storage an op of the pass creates."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.records: dict[tuple, _Record] = {}
        self.retired: list[_Record] = []
        self.external: dict[tuple, int] = {}
        self.events = 0
        self.current = self.peak = self.peak_event = self.allocated = self.allocations = 0
        self.peak_op = ""
        self.unseen: dict[str, int] = {}

    @staticmethod
    def _key(storage: torch.UntypedStorage) -> tuple:
        return storage.device.type, storage.device.index, storage.data_ptr()

    def _release(self, key: tuple, record: _Record) -> None:
        """The storage's memory went back (its Python object died), or its record is retired."""
        with self.lock:
            if record.freed_at is not None:
                return
            self.events += 1
            record.freed_at = self.events
            self.current -= record.nbytes
            if self.records.get(key) is record:
                del self.records[key]
            self.retired.append(record)

    def _allocate(self, key: tuple, storage: torch.UntypedStorage, tensor: torch.Tensor, func) -> None:
        stale = self.records.get(key)
        if stale is not None:  # the pointer came back for a new storage before the old record was finalised
            stale.finalizer.detach()
            self._release(key, stale)
        nbytes = storage.nbytes()
        with self.lock:
            self.events += 1
            live = LiveTensor(op_name(func), tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."), nbytes)
            record = _Record(weakref.ref(storage), nbytes, live, self.events)
            self.records[key] = record
            self.current += nbytes
            self.allocated += nbytes
            self.allocations += 1
            if self.current > self.peak:
                self.peak, self.peak_event, self.peak_op = self.current, self.events, live.op
        record.finalizer = weakref.finalize(storage, self._release, key, record)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = {}
        for tensor in _tensors((args, kwargs)):
            storage = _storage(tensor)
            if storage is not None:
                key = self._key(storage)
                inputs[key] = storage
                record = self.records.get(key)
                if record is None or record.storage() is not storage:
                    self.external[key] = storage.nbytes()
        out = func(*args, **kwargs)
        for tensor in _tensors((out,)):
            storage = _storage(tensor)
            if storage is None:
                if tensor.numel():
                    self.unseen[op_name(func)] = self.unseen.get(op_name(func), 0) + 1
                continue
            key = self._key(storage)
            if inputs.get(key) is storage:
                continue  # a view of, or a write into, an input: no new memory
            record = self.records.get(key)
            if record is not None and record.storage() is storage:
                continue  # already tracked
            self._allocate(key, storage, tensor, func)
        return out

    def live_at_peak(self) -> list[LiveTensor]:
        """The storages allocated at or before the peak and freed after it, largest first."""
        with self.lock:
            every = [*self.records.values(), *self.retired]
        live = [r.live for r in every
                if r.allocated_at <= self.peak_event and (r.freed_at is None or r.freed_at > self.peak_event)]
        return sorted(live, key=lambda t: t.nbytes, reverse=True)

    def close(self) -> None:
        """Detach every finalizer still pending, so outputs that outlive the pass do not call back."""
        with self.lock:
            pending = list(self.records.values())
        for record in pending:
            record.finalizer.detach()


def measure_peak_memory(function: Callable[..., Any], *args: Any, **kwargs: Any) -> PeakMemory:
    """Run ``function(*args, **kwargs)`` once under ``torch.no_grad()`` and measure its peak live bytes.

    >>> q = torch.zeros(1, 1, 64, 8)  # (B, heads, T, d)
    >>> peak = measure_peak_memory(lambda: torch.softmax(q @ q.transpose(-2, -1), dim=-1) @ q)
    >>> peak.peak_bytes, [t.op for t in peak.largest[:2]]  # scores and weights at once: 2 * 64 * 64 * 4
    (32768, ['aten.bmm', 'aten._softmax'])

    Args:
        function: any callable that runs PyTorch ops (a module, a function, a lambda).
        *args, **kwargs: passed through to ``function``; their tensors are external (not in the peak).

    Returns:
        A :class:`PeakMemory` (bytes; scope: storages allocated by ATen ops during the pass, see the
        module docstring).

    Raises:
        Exception: whatever ``function`` raises, unchanged; nothing of its own. Estimate and refuse sizes that
            would not fit (:func:`seqlab.memory.require_fits`) before calling this: it measures, it does not
            guard.
    """
    tracker = _PeakTracker()
    with _allocator_events() as events:
        try:
            with torch.no_grad(), tracker:
                result = function(*args, **kwargs)
            final = tracker.current
            del result
        finally:
            tracker.close()
    largest = tuple(tracker.live_at_peak()[:LARGEST])
    return PeakMemory(peak_bytes=tracker.peak, final_bytes=final, allocated_bytes=tracker.allocated,
                      allocations=tracker.allocations, external_bytes=sum(tracker.external.values()),
                      largest=largest, peak_op=tracker.peak_op, unseen=dict(tracker.unseen),
                      allocator_peak_bytes=events.peak if events.taken else None,
                      allocator_peak_op=events.peak_op, allocator_largest=events.largest)


#: PyTorch's profiler scope around a call into a Python dispatch mode.
_DISPATCH_MODE_SCOPE = "PythonDispatchMode"

#: One profiler runs in a process at a time: passes measured on several threads take turns.
_PROFILER_LOCK = threading.RLock()  # re-entrant: a pass measured inside another sees its profiler


class _AllocatorPeak:
    """The peak of the allocator's [memory] events recorded by ``torch.profiler`` during one pass."""

    def __init__(self) -> None:
        self.taken = False
        self.peak = 0
        self.peak_op = ""
        self.largest: tuple[tuple[str, int], ...] = ()

    def read(self, profiler: Any) -> None:
        """Replay the allocation events in time order: + size on an allocation, - its size when that pointer
        is freed; frees of pointers allocated before the pass are ignored."""
        from torch._C._profiler import _EventType

        events, stack = [], list(profiler.profiler.kineto_results.experimental_event_tree())
        while stack:
            event = stack.pop()
            stack.extend(event.children)
            if event.typed[0] == _EventType.Allocation:
                events.append(event)
        events.sort(key=lambda e: (e.start_time_ns, e.extra_fields.id))
        events = [e for e in events if e.parent is None or e.parent.name != _DISPATCH_MODE_SCOPE]  # the
        # dispatch mode's own scalars, wrapped for its Python call, are the measurement's bytes, not the pass's
        peak_at = self._replay(events, len(events), find=True)
        live = self._replay(events, peak_at + 1, find=False)  # again, up to the peak: what it holds
        self.largest = tuple(sorted(((op, size) for size, op in live.values()), key=lambda p: -p[1]))[:LARGEST]
        self.taken = True

    def _replay(self, events: list, stop: int, *, find: bool) -> Any:
        """+ size on an allocation, − its size on that pointer's free, over ``events[:stop]``. ``find``: sets
        ``peak`` and ``peak_op`` and returns the index of the peak's event (−1: no allocation); else returns the
        blocks live after ``events[:stop]`` ({(device, pointer): (bytes, innermost op)})."""
        live: dict[tuple, tuple[int, str]] = {}
        current, peak_at = 0, -1
        for index, event in enumerate(events[:stop]):
            fields = event.extra_fields
            key = (str(fields.device), fields.ptr)
            if fields.alloc_size > 0:
                stale = live.pop(key, (0, ""))[0]  # a pointer allocated again without its free seen
                current += fields.alloc_size - stale
                op = event.parent.name.replace("::", ".") if event.parent is not None else ""
                live[key] = (fields.alloc_size, op)
                if find and current > self.peak:
                    self.peak, self.peak_op, peak_at = current, op, index
            else:
                current -= live.pop(key, (0, ""))[0]
        return peak_at if find else live


@contextlib.contextmanager
def _allocator_events() -> Iterator[_AllocatorPeak]:
    """Run the block under ``torch.profiler`` with memory events, unless another profiler is running."""
    peak = _AllocatorPeak()
    with _PROFILER_LOCK:
        if torch.autograd.profiler._is_profiler_enabled:
            yield peak
            return
        from torch.profiler import ProfilerActivity, profile

        muted = "KINETO_LOG_LEVEL" not in os.environ
        if muted:
            os.environ["KINETO_LOG_LEVEL"] = "6"  # kineto's start/stop lines: the library never prints
        try:
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
                yield peak
        finally:
            if muted:
                os.environ.pop("KINETO_LOG_LEVEL", None)
        peak.read(profiler)


@dataclass(frozen=True)
class PeakGrowth:
    """Peak bytes of one pass at several T and their growth fitted against T (a power law or a logarithm)."""

    lengths: tuple[int, ...]
    peaks: tuple[PeakMemory, ...]
    fit: Fit

    @property
    def peak_bytes(self) -> tuple[int, ...]:
        """The peak of each pass, bytes, in the order of ``lengths``."""
        return tuple(p.peak_bytes for p in self.peaks)


def peak_growth(make: Callable[[int], Callable[[], Any]], lengths: Iterable[int],
                estimate: Callable[[int], int]) -> PeakGrowth:
    """Measure the peak of ``make(T)()`` at each T and fit its growth; refuse a T that would not fit first.

    >>> x = torch.zeros(8)
    >>> g = peak_growth(lambda T: lambda: x.repeat(T), (64, 128, 256), lambda T: 4 * T)
    >>> g.peak_bytes, round(g.fit.exponent, 6)  # 4 bytes * 8 * T
    ((2048, 4096, 8192), 1.0)

    Args:
        make: T -> a zero-argument callable that builds nothing big and runs the pass at T (build the
            inputs inside it or before; inputs built before are external and excluded).
        lengths: at least 3 distinct T >= 1.
        estimate: T -> generous bytes the pass at T needs; checked with :func:`seqlab.memory.require_fits`
            before anything is built at that T.

    Returns:
        A :class:`PeakGrowth`.

    Raises:
        SeqlabError: fewer than 3 distinct lengths, or a pass that would not fit in memory.
    """
    lengths = tuple(sorted(set(lengths)))
    if len(lengths) < 3:
        raise SeqlabError(N_("a peak growth needs at least 3 distinct lengths, received {lengths}"),
                          lengths=list(lengths), parameter="lengths")
    for T in lengths:
        require_fits(MemoryEstimate(estimate(T), f"the pass at T = {T}"), f"T = {T}")
    peaks = tuple(measure_peak_memory(make(T)) for T in lengths)
    return PeakGrowth(lengths, peaks, fit_growth(lengths, [p.peak_bytes for p in peaks]))
