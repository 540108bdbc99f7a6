"""Path length between positions, measured on a real forward pass (L3, L4; Table 1's third column).

For input position i and output position j, the **path length** is the least number of matrix
products — and, separately, of compute ops — on any chain of data dependencies that carries x_i to
y_j. The lesson's two cases: through an Elman recurrence x_i reaches h_j after j - i + 1 products
(W_xh once, then W_hh at every step, L3); through self-attention every pair is the same few
products apart, however far the positions are (L4).

Method (min-plus propagation, :mod:`seqlab.measure.path_tracer`): beside every storage the pass writes,
the tracer keeps the least distance from each source position to each element, in both units, as int32
(:mod:`seqlab.measure.distances`; "no path" is a sentinel). Each dispatched op maps the distances of its
inputs to its outputs by a rule of :mod:`seqlab.measure.path_rules`; an op without a rule is traced through
PyTorch's decomposition of it, or derived from its own Jacobian on the concrete inputs, or — when neither can
be done — refused: named in :attr:`PathMatrix.fallbacks`, treated as all-to-all, and the matrix is then a bound
(:attr:`PathMatrix.exact` is False), never a measurement (see :mod:`seqlab.measure.path_tracer`).

Memory, bounded (issue 17): the distances of a pass take S × (elements written) × 8 bytes (two int32
units) — at T = 512, d = 256 a self-attention pass takes about 11 MiB per source. The sources are
therefore traced in **batches**: the first pass takes :data:`FIRST_BATCH` of them and measures the bytes
one source costs; every later pass takes as many as fit in ``batch_bytes`` (default :data:`BATCH_BYTES`).
So the distances held at once stay under max(``batch_bytes``, :data:`FIRST_BATCH` × one source's bytes)
whatever the number of sources; the time grows with the number of passes. Every pass runs the layer
again on a fresh copy of x (a layer in eval mode computes the same thing each time). One source whose
pass alone would take more than half of the available memory is refused with a clear error. The passes
run on one CPU thread (:func:`~seqlab.measure.switches.one_thread`): the tracer pays Python per op.
With ``positions=True`` a storage whose distances an op proves uniform along the features is kept as one
distance per position (:mod:`seqlab.measure.distance_store`): an Elman pass holds d times fewer bytes,
so a batch takes d times more sources; the matrices are the same.

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

The float64 closeness tracer this replaced is kept in ``tests/reference_paths.py``; the tests check that
both give the same matrices on every layer seqlab ships and on the tests' own modules.

Per source, whatever the batching (issue 35): no rule judges "constant" across the sources of a pass (an exact zero
cuts by the product rule, for each source alone), so a source's distances are those it has traced alone, whatever
sources share its pass and whatever ``batch_bytes``. **Checked by perturbation** (issue 35): after the trace, the
traced sources (at most :data:`~seqlab.measure.perturbation.MAX_SOURCES` of them) are perturbed in float64 and what
moves is compared with what the trace reaches (:mod:`seqlab.measure.perturbation`): a pair that moves where the
trace has no path (NumPy or C the dispatcher never sees), or a path whose derivative is exactly 0 at this input (an
exact cancellation), makes the matrices a named bound (:attr:`PathMatrix.exact` False, :attr:`PathMatrix.bound_reason`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.measure import perturbation
from seqlab.measure.distances import seed, to_lengths
from seqlab.measure.layout import check_positions_layout
from seqlab.measure.path_tracer import UNITS, PathTracer
from seqlab.measure.perturbation import PerturbationCheck, check_paths
from seqlab.measure.switches import collector_paused, one_thread, reference_kernels
from seqlab.memory import GIB, available_memory_bytes

#: Sources of the first pass, which measures what one source costs (two: the two ends in one pass).
FIRST_BATCH = 2
#: Bytes of distances a later pass may hold (its sources: as many as fit).
BATCH_BYTES = GIB // 4
#: Whether passes keep distances at position level where an op proves them uniform along the features (exact either
#: way: both forms read the same distances). None: position level. The rules take the row form only for distances
#: of at least :data:`~seqlab.measure.distances.ROW_FORM_MIN` entries, so a recurrence's one-position steps run the
#: element rules while its input, attention's scores and a transformer's activations are kept per position.
#: Measured (2026-12-07, the two ends, ``check=False``, CPU time, one thread, medians of 5–9 interleaved rounds,
#: position level against element level): all-MiniLM-L6-v2 at T = 512 539 against 826 ms, self-attention at
#: T = 1000, d = 512 64 against 71 ms, the selective scan 214 against 261 ms, the Elman RNN 475 against 466 ms and
#: ``nn.LSTM`` 1,216 against 1,158 ms; before the floor every uniform tensor took the row form and the Elman RNN took
#: 507 against 425 ms. With every source (T = 128, d = 256) the position level was already 24x a forward pass
#: against 65x (T = 512: 2 passes and 14 MiB against 16 passes and 252 MiB).
POSITIONS: bool | None = None


def position_level(positions: bool | None) -> bool:
    """Whether a trace keeps distances at position level (``positions``, or :data:`POSITIONS` when None).

    >>> position_level(None), position_level(False), position_level(True)
    (True, False, True)
    """
    chosen = POSITIONS if positions is None else positions
    return True if chosen is None else bool(chosen)


@dataclass(frozen=True)
class PathMatrix:
    """Least path lengths from each source (input) position i to each output position j.

    Attributes:
        products: ``products[a][j]``: least matrix products from input position ``sources[a]`` to
            output position j; None where y_j does not depend on that input at all.
        ops: the same in compute ops (element-wise ops, reductions and products each count 1).
        sources: the input positions measured (0-based), rows of the two matrices.
        fallbacks: ops **refused**: no rule, no decomposition, no Jacobian that could be taken; each was treated
            as all-to-all (name → calls). When it is not empty the matrices are a **bound**, not a measurement:
            every dependence through such an op is over-stated and every path length under-stated
            (:attr:`exact` is False).
        undefined: output positions whose value is NaN somewhere (batch or feature); their entries are
            None: a NaN has no path, and it is not "independent" either — read this list.
        decomposed: ops traced through PyTorch's own decompositions (``torch._decomp``), name → calls: exact.
        derived: ops whose dependence came from their own Jacobian on the concrete inputs, name → calls: exact
            at this input (numerical dependence, as the Jacobian reads it).
        check: the perturbation check of the traced sources (:mod:`seqlab.measure.perturbation`), None when not
            asked for. A disagreement (a pair the trace calls unreachable that moves, or one it calls reachable
            whose derivative is exactly 0 here) makes the matrices a bound (:attr:`exact` False,
            :attr:`bound_reason` names it and the ops it suspects).

    Each row has T_out entries, one per output position (T_out may differ from the T_in input positions).
    """

    products: tuple[tuple[int | None, ...], ...]
    ops: tuple[tuple[int | None, ...], ...]
    sources: tuple[int, ...]
    fallbacks: dict[str, int]
    undefined: tuple[int, ...] = ()
    decomposed: dict[str, int] = field(default_factory=dict)
    derived: dict[str, int] = field(default_factory=dict)
    check: PerturbationCheck | None = None

    @property
    def exact(self) -> bool:
        """True when every op went through a rule, a decomposition or its Jacobian (no op was refused) and the
        perturbation check (:attr:`check`, when it ran) agrees with every pair."""
        return not self.fallbacks and (self.check is None or self.check.agrees)

    @property
    def bound_reason(self) -> str | None:
        """Why the matrices are a bound (English; None when :attr:`exact`): the refused ops, the check's
        disagreement, or both."""
        reasons = []
        if self.fallbacks:
            reasons.append("ops without a rule, taken as all-to-all: " + ", ".join(sorted(self.fallbacks)))
        if self.check is not None and not self.check.agrees:
            reasons.append(self.check.disagreement)
        return "; ".join(reasons) or None

    def longest(self, unit: str = "products") -> int | None:
        """The maximum path length over all connected pairs (Table 1's "maximum path length").

        Raises:
            SeqlabError: ``unit`` is not ``"products"`` or ``"ops"``.
        """
        if unit not in UNITS:
            raise SeqlabError(N_("unit must be one of {units}; received {unit!r}"), units=', '.join(UNITS), unit=unit)
        values = [v for row in getattr(self, unit) for v in row if v is not None]
        return max(values) if values else None

    def row(self, source: int, unit: str = "products") -> tuple[int | None, ...]:
        """Path lengths from input position ``source`` to every output position."""
        return getattr(self, unit)[self.sources.index(source)]


@dataclass(frozen=True)
class PathBatch:
    """One pass of the tracer over some of the sources (see the module's "Memory, bounded").

    Attributes:
        sources: the input positions of this pass.
        stored_bytes: bytes of distances the tracer held at the end of the pass; a pass frees none, so this
            is its peak (rule temporaries aside).
        products, ops: per selected output, one row of path lengths per source (None: no path).
        undefined: per selected output, its NaN positions.
        fallbacks: ops that had no rule (name → calls) in this pass.
        traced: what ``first`` returned for the first pass (the work and span read in the same pass,
            :class:`~seqlab.measure.traced_pass.Traced`), else None.

    >>> batch = next(path_batches(torch.nn.RNN(4, 4), torch.randn(3, 4), (0,), lambda r: [r[0]]))
    >>> batch.products[0], batch.ops[0]  # the one output selected: one row, for source 0
    (((1, 2, 3),), ((3, 6, 9),))
    """

    sources: tuple[int, ...]
    stored_bytes: int
    products: tuple[tuple[tuple[int | None, ...], ...], ...]
    ops: tuple[tuple[tuple[int | None, ...], ...], ...]
    undefined: tuple[tuple[int, ...], ...]
    fallbacks: dict[str, int]
    decomposed: dict[str, int] = field(default_factory=dict)
    derived: dict[str, int] = field(default_factory=dict)
    traced: Any = None


def path_batches(layer: Callable[[Tensor], Any], x: Tensor, sources: Sequence[int],
                 select: Callable[[Any], Sequence[Tensor]], batch_bytes: float = BATCH_BYTES,
                 positions: bool | None = None,
                 first: Callable[[PathTracer, Tensor], Any] | None = None) -> Iterator[PathBatch]:
    """Trace ``layer`` on ``x`` once per batch of ``sources``, the batches sized to ``batch_bytes``.

    >>> [b.sources for b in path_batches(torch.nn.RNN(4, 4), torch.randn(5, 4), range(5), lambda r: [r[0]])]
    [(0, 1), (2, 3, 4)]

    Args:
        layer, x: as for :func:`measure_paths` (x already checked).
        sources: input positions, in order. select: the output tensors to measure from what ``layer`` returns.
        batch_bytes: bytes of distances a pass after the first may hold.
        positions: position-level distances where proven (default: :func:`position_level`; the answers are the same).
        first: runs the first pass itself, given its tracer (sources seeded) and the input copy, and returns
            what it read, with ``.output`` what ``layer`` returned (one pass for several readings:
            :func:`~seqlab.measure.traced_pass.measure_pass`); kept in the first :attr:`PathBatch.traced`.

    Returns:
        An iterator of :class:`PathBatch`, in the order of ``sources``.

    Raises:
        SeqlabError: an output is not a tensor with positions on dim -2, or one pass would exceed half the
            available memory.
    """
    pending, size, budget = list(sources), FIRST_BATCH, available_memory_bytes() / 2
    level = position_level(positions)
    while pending:
        batch, pending = tuple(pending[:size]), pending[size:]
        tracer = PathTracer(len(batch), budget_bytes=budget, positions=level)
        copy = x.detach().clone()
        tracer.store.prove_zero_free(copy, bool((copy != 0).all()))  # read once: no product need read x again
        tracer.store.write(copy, seed(copy, batch, len(UNITS)))
        traced = None
        if first is not None:  # the first pass reads more than the distances
            traced, first = first(tracer, copy), None
            selected = select(traced.output)
        else:
            with reference_kernels(), torch.no_grad(), tracer:
                selected = select(layer(copy))
        lengths = [_lengths(tracer, y, len(batch)) for y in selected]
        yield PathBatch(batch, tracer.used_bytes, tuple(p for p, _, _ in lengths), tuple(o for _, o, _ in lengths),
                        tuple(u for _, _, u in lengths), dict(tracer.fallbacks), dict(tracer.decomposed),
                        dict(tracer.derived), traced)
        size = max(1, int(batch_bytes * len(batch) // max(tracer.used_bytes, 1)))


def _lengths(tracer: PathTracer, y: Any, sources: int) -> tuple[tuple, tuple, tuple[int, ...]]:
    """Path lengths (products, ops) to one output, and its NaN positions."""
    if not isinstance(y, Tensor) or y.dim() < 2:
        raise SeqlabError(N_("an output must be a tensor with its positions on dim -2, (T_out, d_out) or (B, T_out, "
                             "d_out), received {received}"), received=getattr(y, 'shape', type(y)))
    d = tracer.store(y)
    undefined = _nan_positions(y)
    halves = (None, None) if d is None else (d[:sources], d[sources:])
    return (to_lengths(halves[0], sources, y.shape[-2], undefined),
            to_lengths(halves[1], sources, y.shape[-2], undefined), undefined)


def _nan_positions(y: Tensor) -> tuple[int, ...]:
    """Output positions (dim -2) holding a NaN anywhere in the batch or the features."""
    if not y.is_floating_point():
        return ()
    rows = y.detach().movedim(-2, 0).reshape(y.shape[-2], -1).isnan().any(dim=-1)  # (T_out,)
    return tuple(int(j) for j in rows.nonzero().flatten())


def measure_paths(layer: Callable[[Tensor], Any], x: Tensor, *, sources: Sequence[int] | None = None,
                  outputs: Callable[[Any], Sequence[Tensor]] | None = None,
                  batch_bytes: float | None = None, positions: bool | None = None,
                  check: bool | None = None) -> list[PathMatrix] | PathMatrix:
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
        sources: input positions to measure from (default: all T). Time grows with their number; memory is
            bounded by ``batch_bytes`` (see the module's "Memory, bounded").
        outputs: picks the tensors to measure from what ``layer`` returns (e.g. every layer of a
            stack); when given, a list of :class:`PathMatrix` is returned, one per tensor.
        batch_bytes: bytes of distances one pass may hold (default :data:`BATCH_BYTES`).
        positions: keep distances at position level where an op proves them uniform along the features
            (default: :func:`position_level`, on for more than two sources): fewer bytes, the very same matrices.
        check: perturb the traced sources in float64 after the trace and compare what moves with what the trace
            reaches (:mod:`seqlab.measure.perturbation`; default :data:`~seqlab.measure.perturbation.CHECK`, on);
            a disagreement makes the matrices a named bound.

    Returns:
        A :class:`PathMatrix` (or a list of them with ``outputs``), in products and in ops: one row
        per source, one entry per output position; NaN output positions listed as ``undefined``.

    Raises:
        SeqlabError: x has fewer than 2 dimensions, a (B, T, d) x for a module with ``batch_first=False``
            (its layout contradicts the positions on dim -2), a source is out of range, an output is not a
            tensor with positions on dim -2, or one source's pass would exceed half the available memory.

    >>> memory = torch.randn(7, 4)  # decoding: one query reads 7 keys and values
    >>> measure_paths(lambda m: torch.softmax(torch.ones(1, 4) @ m.T, -1) @ m, memory).products
    ((1,), (1,), (1,), (1,), (1,), (1,), (1,))
    """
    sources = check_sources(layer, x, sources)

    def select(result: Any) -> Sequence[Tensor]:
        return outputs(result) if outputs is not None else [result[0] if isinstance(result, tuple) else result]

    with one_thread(), collector_paused():
        batches = list(path_batches(layer, x, sources, select, BATCH_BYTES if batch_bytes is None else batch_bytes,
                                    positions))
        checks = checked(layer, x, sources, select, batches, check)
    matrices = path_matrices(batches, sources, checks)
    return matrices if outputs is not None else matrices[0]


def check_sources(layer: Callable[[Tensor], Any], x: Tensor, sources: Sequence[int] | None) -> tuple[int, ...]:
    """The source positions to trace, checked against ``x`` (positions on dim -2) and the layer's layout.

    Raises:
        SeqlabError: x has fewer than 2 dimensions, its layout contradicts the module's ``batch_first``, or a
            source is not a position of x.
    """
    if not isinstance(x, Tensor) or x.dim() < 2:
        got = getattr(x, "shape", type(x))
        raise SeqlabError(N_("x must have shape (T, d), (B, T, d) or (..., T, d), received {got}"), got=got)
    check_positions_layout(layer, x)
    T = x.shape[-2]
    sources = tuple(range(T)) if sources is None else tuple(sources)
    if not sources or any(not isinstance(s, int) or not 0 <= s < T for s in sources):
        raise SeqlabError(N_("sources must be positions in [0, {value}], received {sources!r}"), value=T - 1,
                          sources=sources)
    return sources


def checked(layer: Callable[[Tensor], Any], x: Tensor, sources: tuple[int, ...],
            select: Callable[[Any], Sequence[Tensor]], batches: Sequence[PathBatch],
            check: bool | None) -> list[PerturbationCheck | None]:
    """The perturbation check of each selected output (:func:`~seqlab.measure.perturbation.check_paths`), once per
    input whatever the number of passes; ``check`` None follows :data:`~seqlab.measure.perturbation.CHECK`. The
    output of a first pass that read more than distances (:attr:`PathBatch.traced`, a run of x with fused kernels
    off) is handed over, so that the check need not repeat that run (``check_paths``' ``ran``)."""
    if not (perturbation.CHECK if check is None else check):
        return [None] * len(batches[0].products)
    reachable = [[[v is not None for v in row] for b in batches for row in b.products[k]]
                 for k in range(len(batches[0].products))]
    first = batches[0].traced
    return check_paths(layer, x, sources, select, reachable, batches[0].undefined,
                       ran=select(first.output) if first is not None else None)


def path_matrices(batches: Sequence[PathBatch], sources: tuple[int, ...],
                  checks: Sequence[PerturbationCheck | None]) -> list[PathMatrix]:
    """One :class:`PathMatrix` per selected output, joined from the batches' rows (in the order of ``sources``),
    with its perturbation check."""
    return [PathMatrix(
        products=tuple(row for b in batches for row in b.products[k]),
        ops=tuple(row for b in batches for row in b.ops[k]),
        sources=sources,
        fallbacks=batches[0].fallbacks,
        undefined=batches[0].undefined[k],
        decomposed=batches[0].decomposed,
        derived=batches[0].derived,
        check=checks[k],
    ) for k in range(len(batches[0].products))]
