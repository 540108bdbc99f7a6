"""LSTM and GRU beside the Elman recurrence in ``seqlab compare``: span, path, reach and the gate bypass (L3).

The lesson says LSTM and GRU "do not shorten the path; they add an additive bypass so the signal survives
the trip" (L3). Measured on ``torch.nn.LSTM`` / ``torch.nn.GRU`` with seeded weights, batch-first:

* **span** — their chain still grows by a fixed number of ops per token (products: one W_hh per step);
* **path** from position 1 to T — in *ops* it still grows with T (the bypass is an element-wise chain: two ops
  per step in the LSTM, three in the GRU), but in *matrix products* it is 1 (W_ih x_1, then no weight product
  at all), where the Elman recurrence needs T: the bypass carries the signal past every W_hh;
* **reach** ‖∂y_T/∂x_1‖ by autograd in float64.

The bypass is named in PyTorch's own convention (``torch.nn.LSTM`` and ``torch.nn.GRU`` docstrings):
LSTM ``c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t`` (bypass f_t ⊙ c_{t-1}); GRU ``h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}``
(bypass z_t ⊙ h_{t-1}: in PyTorch's GRU z_t is the share *kept* from h_{t-1}).

The path tracer keeps int32 distances per element written, so on an LSTM at T = 744, d = 512 it takes
about 6 s (measured on 2 busy cores; 0.4 s at d = 16); the path is traced at a smaller width (``path_width``,
default 16) because its length in products and ops does not depend on the width (the same ops run in the
same order), and the result says so.

Shapes: T tokens, d_model input width, d_h hidden width.
"""

from __future__ import annotations

import copy
import math
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Self

import torch

from seqlab.glossary import NOTATION
from seqlab.measure.paths import PathMatrix, measure_paths
from seqlab.measure.reach import Reach, measure_reach
from seqlab.measure.signal_path import SignalReading, read_signal_path
from seqlab.measure.timing import Timing
from seqlab.measure.trace import Span
from seqlab.measure.traced_pass import PassMeasurement, measure_pass

#: The gated cells shown, in order.
CELLS = ("lstm", "gru")
#: Each cell's update with its bypass, in PyTorch's notation: (state update, the bypass term).
BYPASS = {cell: (NOTATION[f"{cell}_update"], NOTATION[f"{cell}_bypass"]) for cell in CELLS}  # seqlab.glossary
#: Module names as PyTorch spells them.
MODULES = {"lstm": "nn.LSTM", "gru": "nn.GRU"}
#: Width at which the gated paths are traced by default (the length does not depend on it).
PATH_WIDTH = 16
#: Cores that must have stood idle beside the caller (:class:`IdleCores`) for :meth:`AsideWork.start_if_idle` to start
#: the worker: half a core, on average over the window read.
IDLE_TO_START = 0.5


@dataclass(frozen=True)
class GatedMeasurements:
    """One gated recurrence measured on the text (work is in :mod:`seqlab.studies.compare_scopes`).

    Attributes:
        cell: ``"lstm"`` or ``"gru"``.
        update, bypass: the state update and its bypass term, in PyTorch's notation.
        span: longest chain of ops (and of matrix products) in the forward pass, at full width.
        path: least matrix products (and ops) from position 1 to every position, traced at ``path_width``.
        path_width: d_model = d_h of the copy the path was traced on (equal to ``d_h`` when traced at full width).
        reach: ‖∂y_T/∂x_i‖ for every i, float64, at full width.
        time_library: wall time of one forward of the module (None when not timed).
        signal: the signal path (:func:`~seqlab.measure.signal_path.read_signal_path`): absent, named, since
            ``nn.LSTM`` and ``nn.GRU`` declare no transition factor; None when not read.
    """

    cell: str
    update: str
    bypass: str
    span: Span
    path: PathMatrix
    path_width: int
    reach: Reach
    time_library: Timing | None
    signal: SignalReading | None = None


def build_gated(cell: str, d_model: int, d_h: int, generator: torch.Generator) -> torch.nn.RNNBase:
    """``torch.nn.LSTM`` or ``torch.nn.GRU`` (batch-first, eval) with weights drawn from ``generator``.

    PyTorch's own distribution, U(-1/√d_h, 1/√d_h) for every weight and bias, drawn from the generator
    instead of the global RNG (the module is made on the meta device first, so the global RNG is untouched).

    >>> lstm = build_gated("lstm", 3, 4, torch.Generator().manual_seed(0))
    >>> tuple(lstm.weight_ih_l0.shape), lstm.batch_first  # 4 gates i, f, g, o stacked: (4·d_h, d_model)
    ((16, 3), True)

    Raises:
        KeyError: an unknown cell (the study passes only :data:`CELLS`).
    """
    module_class = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell]
    module = module_class(d_model, d_h, batch_first=True, device="meta").to_empty(device="cpu")
    bound = 1.0 / math.sqrt(d_h)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.uniform_(-bound, bound, generator=generator)
    module.flatten_parameters()
    return module.eval()


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def trace_path(cell: str, d_model: int, d_h: int, x: torch.Tensor, seed: int) -> PathMatrix:
    """Least products and ops from position 1 to every position through a gated cell of these widths.

    ``x`` (T, d_model) is read at its first ``d_model`` columns, so one text gives the path at any width.

    >>> trace_path("gru", 4, 4, torch.randn(6, 4), 0).row(0)  # W_ih x_1, then z_t ⊙ h_{t-1}: no product
    (1, 1, 1, 1, 1, 1)
    """
    module = build_gated(cell, d_model, d_h, torch.Generator().manual_seed(seed))
    return measure_paths(module, x[None, :, :d_model], sources=(0,))  # the module: its path check runs in float64


def gated_reach(module: torch.nn.RNNBase, x: torch.Tensor, *, seed: int, probes: int | None) -> Reach:
    """‖∂y_T/∂x_i‖ for every i through a float64 copy of ``module``: one forward of x (T, d_model) and one
    vmapped backward of the probe rows (the same norms to rounding as R replicated copies, without R - 1
    forwards through the T steps: at T = 744, d = 512, 1.2 s instead of 1.8 s for the LSTM).

    The copy is called through ``forward``, not ``__call__``, so no global module hook fires (PyTorch's
    ``FlopCounterMode`` tracks modules with them): the reach may run on another thread while the caller
    counts, as :func:`seqlab.studies.compare.run_compare` does. Call it on a thread set to one CPU thread.

    Args:
        module: ``nn.LSTM`` or ``nn.GRU`` (batch-first, eval), from :func:`build_gated`.
        x: (T, d_model) token vectors.
        seed: seed of the probes; probes: their number (None: exact).

    Returns:
        A :class:`~seqlab.measure.reach.Reach` in float64 at full width.
    """
    module64 = copy.deepcopy(module).double()
    return measure_reach(lambda rows: _first(module64.forward(rows)), x.double(), probes=probes, seed=seed)


def trace_gated(cell: str, module: torch.nn.RNNBase, x: torch.Tensor, *, seed: int,
                path_width: int | None = PATH_WIDTH) -> PassMeasurement:
    """Span and path of one gated recurrence on ``x`` (T, d_model), from one traced pass of its copy at ``path_width``.

    The cell's chain of ops does not depend on its widths (the same ops at every step), so the narrow copy's span is
    the full-width module's; the path's length in products and ops does not depend on them either.

    >>> lstm = build_gated("lstm", 4, 4, torch.Generator().manual_seed(0))
    >>> traced = trace_gated("lstm", lstm, torch.randn(6, 4), seed=0)
    >>> traced.span.products, traced.paths.row(0)  # one W_hh per step; W_ih x_1, then f_t ⊙ c_{t-1}: no product
    (6, (1, 1, 1, 1, 1, 1))

    Args:
        cell: ``"lstm"`` or ``"gru"``; module: the layer (its widths are read, its weights are not).
        x: (T, d_model) token vectors, read at the narrow copy's first columns.
        seed: the seed ``module`` was built with (the narrow copy is built with it too).
        path_width: width of the copy the pass runs on (None: full width); capped at d_model and d_h.

    Returns:
        A :class:`~seqlab.measure.traced_pass.PassMeasurement` (span and path; work not read) of the copy, whose
        width is ``min(path_width, d_model, d_h)``.
    """
    d_model, d_h = module.input_size, module.hidden_size
    widths = (d_model, d_h) if path_width is None else (min(path_width, d_model, d_h),) * 2
    narrow = build_gated(cell, *widths, torch.Generator().manual_seed(seed))
    # the module itself, not a function around it: the path check then runs a float64 copy (a float32 one cannot tell a
    # fading signal from an unmoved pair, and certified ~700 still pairs of each cell by forward mode, 1.2 s of compare)
    return measure_pass(narrow, x[None, :, :widths[0]], sources=(0,), work=False)


def measure_gated(cell: str, module: torch.nn.RNNBase, x: torch.Tensor, *, seed: int, probes: int | None,
                  path_width: int | None = PATH_WIDTH, reach: Reach | Callable[[], Reach] | None = None,
                  traced: PassMeasurement | None = None) -> GatedMeasurements:
    """Span, path and reach of one gated recurrence on the token vectors ``x`` (T, d_model); no timing.

    Args:
        cell: ``"lstm"`` or ``"gru"``.
        module: the layer, from :func:`build_gated` with ``torch.Generator().manual_seed(seed)``.
        x: (T, d_model) token vectors.
        seed: the seed ``module`` was built with (the narrow copy for the path is built with it too) and of
            the reach probes.
        probes: Hutchinson probes of the reach (None: exact).
        path_width: width of the copy the path is traced on (None: full width); capped at d_model and d_h.
        reach: the reach, or what gives it, read after the path and span (e.g. a ``Future``'s ``result`` of
            :func:`gated_reach` run on another thread); None: :func:`gated_reach` here.
        traced: :func:`trace_gated` of the same arguments when the caller has it (None: traced here).

    Returns:
        A :class:`GatedMeasurements` with ``time_library`` None (the study times apart).
    """
    d_model, d_h = module.input_size, module.hidden_size
    width = d_h if path_width is None else min(path_width, d_model, d_h)
    if traced is None:
        traced = trace_gated(cell, module, x, seed=seed, path_width=path_width)
    if reach is None:
        measured = gated_reach(module, x, seed=seed, probes=probes)
    else:
        measured = reach() if callable(reach) else reach
    update, bypass = BYPASS[cell]
    return GatedMeasurements(cell=cell, update=update, bypass=bypass, span=traced.span,
                             path=traced.paths, path_width=width, reach=measured, time_library=None,
                             signal=read_signal_path(module, x[None]))


def cpu_times(text: str | None = None) -> tuple[int, int] | None:
    """(idle, total) ticks of all CPUs together from the first line of ``/proc/stat`` (``text``: its content; None
    reads the file), idle counting ``idle`` and ``iowait``; None where there is no such file (not Linux).

    >>> cpu_times("cpu  100 0 50 800 50 0 0 0 0 0\\ncpu0 ...")  # user nice system idle iowait irq softirq steal
    (850, 1000)
    """
    if text is None:
        try:
            with open("/proc/stat", encoding="ascii") as stat:
                text = stat.readline()
        except OSError:
            return None
    fields = text.split("\n", 1)[0].split()
    if len(fields) < 5 or fields[0] != "cpu" or not all(field.isdigit() for field in fields[1:9]):
        return None
    ticks = [int(field) for field in fields[1:9]]  # user nice system idle iowait irq softirq steal (guests are in user)
    return ticks[3] + ticks[4], sum(ticks)


class IdleCores:
    """How many CPU cores stood idle, as the kernel counts them, between two readings (``/proc/stat``).

    Each :meth:`read` gives the idle cores since the reading before (the first since the object was made), averaged
    over that window: a quiet 2-core machine with one busy thread reads about 1, a machine whose other processes keep
    every core busy about 0. None where the kernel keeps no such count or no tick has passed.

    >>> idle = IdleCores(cpus=2, times=iter([(800, 1000), (900, 1200)]).__next__)
    >>> idle.read()  # 100 of 200 ticks idle, over 2 CPUs
    1.0
    """

    def __init__(self, cpus: int | None = None, times: Callable[[], tuple[int, int] | None] = cpu_times) -> None:
        self._cpus = cpus or os.cpu_count() or 1
        self._times = times
        self._last = times()

    def read(self) -> float | None:
        """Cores idle on average since the last reading (None: unknown)."""
        now = self._times()
        last, self._last = self._last, now
        if now is None or last is None or now[1] <= last[1]:
            return None
        return self._cpus * (now[0] - last[0]) / (now[1] - last[1])


class AsideWork:
    """The float64 work of ``seqlab compare`` run beside its traces: the reaches, the signal paths, the spectral radius.

    :meth:`start` starts one worker thread (named ``seqlab-reach``, set to one CPU thread: under OpenMP the count is per
    thread, and the caller's is already 1) that runs the jobs from the first given (:meth:`add`, before or after the
    start), while the caller builds, traces and counts (Python-bound: the float64 work is BLAS-bound and mostly runs
    without the GIL, so the two overlap on two cores; :meth:`start_if_idle` starts it only once a core stands idle
    beside the caller). Once the caller has given every job and done its own work, :meth:`help` runs
    on the caller's thread the jobs the worker has not begun, from the last given, so that the two
    threads finish together whatever the machine and whichever of them is faster. Leaving the ``with`` block cancels
    the jobs not begun and joins the worker.

    The figures are those of the same calls made in turn, whichever thread runs them: each job gets copies of the
    modules it runs, every thread computes on one CPU thread, dispatch modes, grad mode and vmap levels are per thread
    in PyTorch, the warning filters are held process-wide (:func:`~seqlab.measure.switches.warnings_ignored`), and a
    work counter's module tracker sees only the thread that entered it (:mod:`seqlab.measure.work`).

    >>> with AsideWork() as aside:
    ...     aside.start()
    ...     two, three = aside.add(sum, (1, 1)), aside.add(sum, (1, 2))
    ...     aside.help()
    ...     two(), three()
    (2, 3)
    """

    def __init__(self) -> None:
        self._jobs: deque[tuple[Future, Callable, tuple, dict]] = deque()
        self._given = threading.Condition()  # guards _jobs and _closed; the worker waits on it for jobs
        self._closed = False  # every job has been given
        self._worker: threading.Thread | None = None

    def add(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
        """Queue ``function(*args, **kwargs)``; returns what gives its result (waits for it, raises its error). After
        :meth:`help` it runs here, at once."""
        future: Future = Future()
        job = (future, function, args, kwargs)
        with self._given:
            if not self._closed:
                self._jobs.append(job)
                self._given.notify()
                return future.result
        self._run(job)
        return future.result

    def _take(self, caller: bool) -> tuple[Future, Callable, tuple, dict] | None:
        with self._given:
            if caller:
                return self._jobs.pop() if self._jobs else None
            while not self._jobs and not self._closed:
                self._given.wait()
            return self._jobs.popleft() if self._jobs else None

    @staticmethod
    def _run(job: tuple[Future, Callable, tuple, dict]) -> None:
        future, function, args, kwargs = job
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(function(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - handed to whoever reads the result
            future.set_exception(error)

    def _work(self) -> None:
        torch.set_num_threads(1)  # this thread's count (OpenMP: per thread); the thread ends with the block
        while (job := self._take(caller=False)) is not None:
            self._run(job)

    def start(self) -> None:
        """Start the worker: it runs the jobs given, and waits for more until :meth:`help` or the block's end."""
        self._worker = threading.Thread(target=self._work, name="seqlab-reach", daemon=True)
        self._worker.start()

    def start_if_idle(self, idle: IdleCores) -> bool:
        """Start the worker (once, before :meth:`help`) if at least :data:`IDLE_TO_START` cores stood idle beside the
        caller since ``idle``'s last reading, or if that is unknown; returns whether the worker runs.

        On a machine whose cores other processes keep busy a second thread buys no time: it takes turns with the
        caller on the same cores, and the two cost more CPU time together than in turn (on a 2-core machine under
        load 3-8, ``seqlab compare`` took 13.4-14.4 s of CPU with the worker and 11.9-12.3 s without it, its wall time
        no shorter). The caller then asks again at its next stage, and runs in :meth:`help` whatever the worker did not
        take. The figures are the same either way.
        """
        if self._worker is not None:
            return True
        with self._given:
            if self._closed:
                return False
        spare = idle.read()
        if spare is not None and spare < IDLE_TO_START:
            return False
        self.start()
        return True

    def _close(self) -> None:
        with self._given:
            self._closed = True
            self._given.notify_all()

    def help(self) -> None:
        """Every job is given: run here, from the last given, the jobs the worker has not begun."""
        self._close()
        while (job := self._take(caller=True)) is not None:
            self._run(job)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._given:
            left, self._jobs = list(self._jobs), deque()
        self._close()
        for future, *_ in left:
            future.cancel()
        if self._worker is not None:
            self._worker.join()
