"""One traced pass: work, span and path distances of one forward, recorded by one dispatch mode (issue 34).

Table 1's three columns — work, sequential operations, maximum path length (L5–L8) — are three readings of one
and the same stream of ATen ops. Measured apart, each pays for a forward pass under its own dispatch mode (a
do-nothing ``TorchDispatchMode`` alone costs about 2× an Elman forward at d = 512, ENGINE-NOTES "The cost of
measuring"), and the same input is run three times. :class:`TracedPass` is one mode that, for every op,

1. lets the work counter (:mod:`seqlab.measure.work`) do what it does before an op: count an SDPA call's masked
   pairs, run an op that PyTorch decomposes by its parts (they come back to this mode, so every reading sees
   them), or run an op with no formula through its ``torch._decomp`` decomposition (its parts counted by the
   counter alone);
2. lets the path tracer (:mod:`seqlab.measure.path_tracer`) read what it must before the op writes
   (:meth:`~seqlab.measure.path_tracer.PathTracer.prepare`);
3. runs the op once;
4. hands the call and its result to each reading: the counter's census (:meth:`_NestedDispatch.count`), the
   span's depths (:meth:`~seqlab.measure.trace._SpanTracer.record`) and the path distances
   (:meth:`~seqlab.measure.path_tracer.PathTracer.record`).

Each reading keeps its own state and its own rules, so the figures are those of the separate functions
(:func:`~seqlab.measure.work.count_multiplications`, :func:`~seqlab.measure.trace.measure_span`,
:func:`~seqlab.measure.paths.measure_paths`), which stay as the views of one reading. A decomposition that one
reading runs for itself (the path tracer's for an op without a rule, the counter's for an op without a formula)
is seen by that reading alone: it enters its own mode, which sits above this one while it runs.

The pass runs as the path and span measurements always ran: with fused kernels switched off
(:func:`~seqlab.measure.switches.reference_kernels`) so that their chains are seen, under ``no_grad``, on one CPU
thread. The work of a fused kernel and of the reference ops it stands for are the same multiplications (the
formulas of :data:`~seqlab.measure.ops.EXTRA_FORMULAS` are checked against the reference ops), so the count is
the same either way; the names in :attr:`WorkCount.by_op` are those of the reference ops.

More sources than one pass holds (:data:`~seqlab.measure.paths.BATCH_BYTES`) are traced in further passes by the
path tracer alone (:func:`~seqlab.measure.paths.path_batches`): work and span are read from the first.

Shapes: x is (T, d), (B, T, d) or (…, T, d), positions on dim -2; S sources.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from seqlab.measure.distances import _ROW_FORM
from seqlab.measure.dispatch import OWN_RULE, passed_on
from seqlab.measure.modes import EngineMode
from seqlab.measure.path_tracer import PathTracer
from seqlab.measure.paths import BATCH_BYTES, PathMatrix, check_sources, checked, path_batches, path_matrices
from seqlab.measure.switches import collector_paused, eager_higher_order, one_thread, reference_kernels
from seqlab.measure.trace import Span, _SpanTracer
from seqlab.measure.work import WorkCount, _device_of, counted_work, plan_of, work_counter

__all__ = ["PassMeasurement", "Traced", "TracedPass", "measure_pass"]


@dataclass(frozen=True)
class Traced:
    """What one traced pass recorded: each reading, or None where it was not asked for.

    Attributes:
        work: the counted work (multiplications and FLOPs, :class:`~seqlab.measure.work.WorkCount`).
        span: the longest chain in ops and in matrix products (:class:`~seqlab.measure.trace.Span`).
        output: what the traced function returned (its tensors carry the distances of ``paths``).
    """

    work: WorkCount | None
    span: Span | None
    output: Any


class TracedPass(EngineMode):
    """The dispatch mode of one pass that feeds several readings (see the module's docstring).

    >>> from seqlab.measure.distances import seed
    >>> rnn, x = torch.nn.RNN(4, 4), torch.randn(6, 4)
    >>> paths = PathTracer(1, budget_bytes=1e6)
    >>> paths.store.write(x, seed(x, (0,), 2))
    >>> traced = TracedPass(work=True, span=True, paths=paths).run(rnn, x)
    >>> traced.work.multiplications, traced.span.products  # 6 * (16 + 16); one product by W_hh per step
    (192, 6)
    >>> paths.store(traced.output[0])[0, :, 0].tolist()  # products from x_1 to h_1 … h_6
    [1, 2, 3, 4, 5, 6]

    Args:
        work: count the work (both units). span: record the span.
        paths: a :class:`~seqlab.measure.path_tracer.PathTracer` whose sources are already seeded on the input
            (None: no path distances).

    Raises:
        SeqlabError: the path tracer's own refusals.
        Exception: whatever the traced function raises, unchanged.
    """

    supports_higher_order_operators = True  # run through their eager parts (ops.run_higher_order)

    def __init__(self, *, work: bool = True, span: bool = True, paths: PathTracer | None = None) -> None:
        super().__init__()
        self.counter = work_counter() if work else None
        self.counting = None  # the counter's dispatch object, while the pass runs
        self.span = _SpanTracer() if span else None
        self.paths = paths

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        answer = passed_on(self, func, types, args, kwargs)
        if answer is not OWN_RULE:
            return answer
        counting, span, paths = self.counting, self.span, self.paths
        out = NotImplemented
        if counting is not None:
            plan = plan_of(func) if isinstance(func, torch._ops.OpOverload) else None
            if plan is None or plan.metadata:
                return counting.__torch_dispatch__(func, types, args, kwargs)  # higher-order ops, nested sizes
            out = counting.before(func, args, kwargs, self, plan)
            if out is not NotImplemented and not plan.plain:
                return out  # PyTorch's own decomposition ran: its parts came back here, each recorded
            # else an op with no formula ran through the counter's own decomposition (its parts seen by the
            # counter alone): to the span and the path tracer it is still one op, recorded on that output
        prepared = paths.prepare(func, args, kwargs) if paths is not None else None
        if out is NotImplemented:
            out = func(*args, **kwargs)
            if counting is not None:
                counting.count(func, args, kwargs, out, plan)
        if span is not None:
            span.record(func, args, kwargs, out)
        if paths is not None:
            paths.record(func, args, kwargs, out, prepared)
        return out

    def run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Traced:
        """Run ``function(*args, **kwargs)`` once under this mode (fused kernels off, ``no_grad``, one thread)
        and return what each reading recorded.

        Raises:
            Exception: whatever ``function`` raises.
        """
        with one_thread(), collector_paused(), reference_kernels(), eager_higher_order(), torch.no_grad(), \
                self._entered():
            output = function(*args, **kwargs)
        return Traced(
            work=counted_work(self.counter, _device_of(args, kwargs)) if self.counter is not None else None,
            span=self.span.result() if self.span is not None else None,
            output=output)

    @contextlib.contextmanager
    def _entered(self):
        with contextlib.ExitStack() as stack:
            if self.counter is not None:
                self.counting = stack.enter_context(self.counter.driven())
            if self.paths is not None:  # the rules' row form, as PathTracer.__enter__ sets it
                row_form = _ROW_FORM.set(self.paths.store.positions)
                stack.callback(_ROW_FORM.reset, row_form)
            stack.callback(setattr, self, "counting", None)
            with self:
                yield


@dataclass(frozen=True)
class PassMeasurement:
    """Work, span and path lengths of one layer on one input, read from one traced pass (see the module).

    Attributes:
        work: counted work (:class:`~seqlab.measure.work.WorkCount`), None when not asked for.
        span: longest chains (:class:`~seqlab.measure.trace.Span`), None when not asked for.
        paths: least path lengths from the sources (:class:`~seqlab.measure.paths.PathMatrix`, a list of them
            with ``outputs``), None when no source was asked for.
        passes: forward passes the measurement ran (1, or more when the sources' distances did not fit in one).
    """

    work: WorkCount | None
    span: Span | None
    paths: PathMatrix | list[PathMatrix] | None
    passes: int


def measure_pass(layer: Callable[[Tensor], Any], x: Tensor, *, sources: Sequence[int] | None = (),
                 work: bool = True, span: bool = True, outputs: Callable[[Any], Sequence[Tensor]] | None = None,
                 batch_bytes: float | None = None, positions: bool | None = None,
                 check: bool | None = None) -> PassMeasurement:
    """Measure work, span and the path lengths from ``sources`` of ``layer`` on ``x`` in one traced pass.

    >>> rnn = torch.nn.RNN(4, 4)
    >>> m = measure_pass(rnn, torch.randn(6, 4), sources=(0, 5))
    >>> m.work.multiplications, m.span.products, m.paths.row(0), m.passes  # 6 * (16 + 16) multiplications
    (192, 6, (1, 2, 3, 4, 5, 6), 1)

    Args:
        layer: maps x to an output with positions on dim -2 (a tuple output is read at element 0 unless
            ``outputs`` selects tensors from it), as for :func:`~seqlab.measure.paths.measure_paths`.
        x: (T, d), (B, T, d) or (…, T, d).
        sources: input positions whose path lengths are traced: ``()`` for none (work and span only), None for
            all T. More sources than one pass holds are traced in further passes of the path tracer alone.
        work, span: which of the other readings to take from the first pass.
        outputs, batch_bytes, positions, check: as for :func:`~seqlab.measure.paths.measure_paths` (the
            perturbation check of the path matrix runs once, after the passes).

    Returns:
        A :class:`PassMeasurement`; its figures equal those of :func:`~seqlab.measure.work.count_multiplications`
        (run with fused kernels off), :func:`~seqlab.measure.trace.measure_span` and
        :func:`~seqlab.measure.paths.measure_paths` on the same input.

    Raises:
        SeqlabError: as :func:`~seqlab.measure.paths.measure_paths` (x's shape or layout, sources out of range,
            distances that would not fit in memory).
        Exception: whatever ``layer`` raises.
    """
    if sources is not None and not tuple(sources):
        traced = TracedPass(work=work, span=span).run(layer, x)
        return PassMeasurement(traced.work, traced.span, paths=None, passes=1)
    chosen = check_sources(layer, x, sources)

    def select(result: Any) -> Sequence[Tensor]:
        return outputs(result) if outputs is not None else [result[0] if isinstance(result, tuple) else result]

    def first(tracer: PathTracer, copy: Tensor) -> Traced:
        return TracedPass(work=work, span=span, paths=tracer).run(layer, copy)

    with one_thread(), collector_paused():
        batches = list(path_batches(layer, x, chosen, select, BATCH_BYTES if batch_bytes is None else batch_bytes,
                                    positions, first=first))
        checks = checked(layer, x, chosen, select, batches, check)
    matrices = path_matrices(batches, chosen, checks)
    first_pass = batches[0].traced
    return PassMeasurement(first_pass.work, first_pass.span, paths=matrices if outputs is not None else matrices[0],
                           passes=len(batches))

