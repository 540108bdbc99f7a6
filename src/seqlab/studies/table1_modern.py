"""``seqlab table1 --modern``: Table 1 extended to memory and decoding, with the mixers that brought recurrence back.

The paper's Table 1 (L7) compares work, sequential operations and path length. Two costs users pay every
day are missing from it: the memory a forward pass holds, and the cost of generating one more token. This
study measures all six columns for the rows of :mod:`seqlab.studies.table1_modern_rows` (the lesson's two
machines, the paper's other rows and the modern mixers), each at several T, fits each series against T
(:func:`seqlab.fit.fit_growth`: a power law or a logarithm) and sets the fit beside the row's big-O:

* **work** — multiplications counted while the *whole layer* runs (:func:`~seqlab.measure.work.count_multiplications`):
  its input projections, its mixing and its output projection W_O wherever the original layer has one (the
  attention rows get theirs, :class:`~seqlab.studies.table1_modern_rows.WithOutputProjection`, as every mixer has
  its own; the Elman RNN and the convolutions have none), so rows compare like with like (``seqlab table1`` counts
  attention's call alone, as the paper does); each count checked against the row's closed form;
* **span** — operations (and matrix products) in a row of one layer (:func:`~seqlab.measure.traced_pass.measure_pass`, with the work);
* **path** — least operations from position 1 to T (or T to 1), on the stack that connects all positions
  (:func:`~seqlab.measure.paths.measure_paths`; one layer except for the paper's convolution and restricted rows);
  beside it, not judged, the **signal path**: the transition factors a signal from x_1 meets on its way to y_T and
  the reach ‖∂y_T/∂x_1‖ (:func:`~seqlab.measure.signal_path.measure_signal_path`, float64), where the row's module
  declares its factor — the graph path says how long y_T waits, the signal path how many times the signal is
  multiplied; a parallel scan changes the first, never the second;
* **memory** — the allocator's peak: the most bytes held at once by memory the forward pass allocates,
  temporaries inside an op included (:attr:`~seqlab.measure.memory_peak.PeakMemory.allocator_peak_bytes`, from
  the allocator's events), inputs and weights excluded; attention on its math path. Where those events cannot
  be taken (another profiler running) the row's column is the peak of the tensors ops return, a lower bound,
  and says so (:attr:`ModernRow.memory_figure`);
* **decode cost** — multiplications of the one step that generates position t (:mod:`seqlab.measure.decode`,
  for the rows it does not name, the module's own ``step`` counted the same way), fitted against t;
* **decode state** — bytes of the state the step hands on (keys and values for attention's KV cache).

The path analysis carries a distance per element and source, and the paper's rows need stacks of many layers,
so it runs at the short ``lengths``; work, span, memory and decoding run at the ``long_lengths``, where the T²
terms dominate the T·d² ones at these widths and a chain's fixed part of a few ops no longer hides its growth.

A big-O describes a regime: past the window w, the chunk C, the restriction r, the kernel k or the Mamba block's
d_conv (below, the layer behaves like another one: one chunk is the parallel form, one window full attention).
Each row's :class:`~seqlab.layers.mixers.Regime` per column, derived from the row's own sizes, says from which
length its big-O applies and, for a count that steps (⌈T/C⌉ chunks, a stack's layers, a scan's rounds and
hops), its own whole-number term. A cell is judged on the lengths of its regime alone
(:func:`seqlab.fit.judge_form`): it *matches* when the form a + b·f(T) chosen is the big-O's, *mismatches*
when another form is chosen at lengths that separate the two, and is *not judged* — never a mismatch — when
fewer than 3 lengths lie in the regime or these lengths cannot tell the big-O's form from another
(⌈log₂T⌉ = 3 at T = 5, 6, 7). Measurements are counts and bytes, never times, and run on one CPU thread
(restored afterwards). Sizes that would not fit in memory are refused before anything is built.

Shapes: T positions, t the decoded position, d = every width, k kernel, r window, C chunk.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import torch

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.fit import MATCH, MISMATCH, Fit, fit_growth, form_of_growth, judge_form
from seqlab.layers.mixers import Regime
from seqlab.measure import memory_peak
from seqlab.measure.paths import measure_paths
from seqlab.measure.signal_path import declared_factors, measure_signal_path
from seqlab.measure.timing import fixed_threads
from seqlab.measure.traced_pass import measure_pass
from seqlab.memory import MemoryEstimate, require_fits
from seqlab.seeds import input_seed
from seqlab.studies import table1
from seqlab.studies.notebook_view import NotebookView
from seqlab.studies.table1_modern_rows import ROWS, Machine, build_machine, row_available
from seqlab.studies.table1_results import MAX_LENGTH, MAX_WIDTH, Growth, Table1Config

__all__ = ["DEFAULT_LONG_LENGTHS", "DEFAULT_SHORT_LENGTHS", "NOT_JUDGED", "QUICK_LONG_LENGTHS", "QUICK_SHORT_LENGTHS",
           "REASONS", "VERDICTS", "LongSample", "ModernCell", "ModernConfig", "ModernResult", "ModernRow",
           "ShortSample", "check_modern_size", "run_modern"]

DEFAULT_SHORT_LENGTHS = (32, 64, 128, 256)
QUICK_SHORT_LENGTHS = (32, 64, 128)
DEFAULT_LONG_LENGTHS = (256, 512, 1024, 2048)
QUICK_LONG_LENGTHS = (256, 512, 1024)
DEFAULT_D_MODEL = 32
QUICK_D_MODEL = 16
COLUMNS = ("work", "span", "path", "memory", "decode", "state")
NOT_JUDGED = "not_judged"
#: A cell's verdicts: its fit shows the big-O, shows another form, or is not judged (the reason says why).
VERDICTS = (MATCH, MISMATCH, NOT_JUDGED)
#: Why a cell is not judged: fewer than 3 lengths in its regime; a regime that no length reaches; lengths
#: that do not separate the big-O's form from another.
REASONS = ("below_regime", "no_regime", "not_separated")


@dataclass(frozen=True)
class ModernConfig:
    """What to measure: short ``lengths`` (path), ``long_lengths`` (work, span, memory, decoding), one width
    ``d_model``, kernel k, window (restricted r and sliding w), chunk C, seed, and the ``rows`` (None: all)."""

    lengths: tuple[int, ...] = DEFAULT_SHORT_LENGTHS
    long_lengths: tuple[int, ...] = DEFAULT_LONG_LENGTHS
    d_model: int = DEFAULT_D_MODEL
    kernel: int = 3
    window: int = 4
    chunk: int = 4
    seed: int = 0
    rows: tuple[str, ...] | None = None

    def validated(self) -> ModernConfig:
        """The same config with sorted, de-duplicated lengths and the rows in the table's order.

        Raises:
            SeqlabError: fewer than 3 distinct lengths in either set, a length outside [2, MAX_LENGTH], a width
                outside [1, MAX_WIDTH], a bad kernel, window or chunk, or an unknown row.
        """
        short = Table1Config(self.lengths, (self.d_model,), self.kernel, self.window, self.seed).validated()
        long = Table1Config(self.long_lengths, (self.d_model,), self.kernel, self.window, self.seed).validated()
        require_positive_int("chunk", self.chunk, MAX_LENGTH)
        rows = tuple(ROWS) if self.rows is None else tuple(self.rows)
        unknown = [row for row in rows if row not in ROWS]
        if unknown or not rows:
            raise SeqlabError(N_("rows must be among {rows}; received {rows2}"), rows=', '.join(ROWS), rows2=list(rows),
                              parameter="rows")
        return replace(self, lengths=short.lengths, long_lengths=long.lengths, d_model=short.d_models[0],
                       rows=tuple(row for row in ROWS if row in rows))


#: Why a row has no signal path at a T, beside :data:`seqlab.measure.signal_path.REASONS`: its module declares no
#: transition factor; its connecting stack is the paper's, built by ``seqlab table1``, whose layers are not offered;
#: or no stack connects its ends (a window of 1).
SIGNAL_ABSENT = ("no_factor", "stack_not_measured", "not_connected")


@dataclass(frozen=True)
class ModernCell:
    """One cell: the big-O, where it applies, the fit of the lengths there, and the verdict.

    Attributes:
        paper: the big-O as printed; expected: the growth it means.
        fit: the fit the verdict rests on, of the lengths in the regime (of every length when fewer than 3 are
            there; None when no value was measured: a path that no stack connects).
        verdict: one of :data:`VERDICTS`; ``matches`` is ``verdict == "match"``.
        lengths: the lengths judged (those in the regime).
        regime_start: the first length of the regime (None: none); regime_size, regime_symbol: the size that sets
            it (an English message id, empty when the big-O applies at every length) and its value (``"w = 4"``);
            regime_multiple: the regime holds only multiples of it (whole chunks), else 1.
        steps: the count's own whole-number term fitted with the big-O's form (:class:`seqlab.fit.Steps`), or None.
        reason: why the cell is not judged, one of :data:`REASONS` (None when judged).
        other: the form these lengths cannot tell from the big-O's (reason ``"not_separated"``).
    """

    paper: str
    expected: Growth
    fit: Fit | None
    verdict: Literal["match", "mismatch", "not_judged"]
    lengths: tuple[int, ...]
    regime_start: int | None
    regime_size: str
    regime_symbol: str
    regime_multiple: int
    steps: str | None
    reason: Literal["below_regime", "no_regime", "not_separated"] | None
    other: str | None

    @property
    def matches(self) -> bool | None:
        """The fit shows the big-O; None for a cell not judged (it neither matches nor mismatches)."""
        return None if self.verdict == NOT_JUDGED else self.verdict == MATCH

    @property
    def judged(self) -> bool:
        """The cell has a verdict, ✓ or ✗."""
        return self.verdict != NOT_JUDGED


@dataclass(frozen=True)
class ShortSample:
    """Path of one row at one short T (ops; products beside) and the depth of the stack that connects all T
    (0 and no path where no stack connects them: a window of 1).

    Beside the graph path, the signal path from x_1 to y_T on the same stack: ``signal_factors`` transition factors
    (``signal_factor`` names them; unit: factors) and ``signal_reach`` = ‖∂y_T/∂x_1‖_F (float64), or None with
    ``signal_absent`` saying why (a key of :data:`seqlab.measure.signal_path.REASONS` or of :data:`SIGNAL_ABSENT`).
    """

    T: int
    depth: int
    path_ops: int | None
    path_products: int | None
    signal_factors: int | None = None
    signal_factor: str | None = None
    signal_reach: float | None = None
    signal_absent: str | None = None


@dataclass(frozen=True)
class LongSample:
    """Work, memory and decoding of one row at one long T (= the decoded position t).

    Attributes:
        multiplications, closed_form: counted on the whole layer, and by the row's closed form.
        unaccounted: ops the counter could not count (name -> calls).
        span_ops, span_products: longest chain of one layer, in ops and in matrix products.
        peak_bytes: peak bytes held by tensors the pass's ops returned, between ops (a lower bound of the pass's
            peak: temporaries inside an op are not seen); peak_tensors: the largest live at that peak, as
            (op, shape, bytes).
        decode_multiplications, decode_closed_form, state_bytes: the step generating position t (None when the
            row has no step API; the closed form None when its module offers none).
        allocator_peak_bytes: the allocator's peak of the same pass, temporaries inside an op included (bytes;
            None when its events could not be taken); allocator_largest: the largest allocations live at it, as
            (innermost op, bytes).
    """

    T: int
    multiplications: int
    closed_form: int
    unaccounted: dict[str, int]
    span_ops: int
    span_products: int
    peak_bytes: int
    peak_tensors: tuple[tuple[str, tuple[int, ...], int], ...]
    decode_multiplications: int | None
    decode_closed_form: int | None
    state_bytes: int | None
    allocator_peak_bytes: int | None = None
    allocator_largest: tuple[tuple[str, int], ...] = ()


#: What a row's memory column holds: the allocator's peak, or the tensors' peak between ops (a lower bound).
ALLOCATOR, TENSOR_LOWER_BOUND = "allocator", "tensor_lower_bound"


def memory_figure(samples: Sequence[LongSample]) -> str:
    """:data:`ALLOCATOR` when every sample has the allocator's peak, else :data:`TENSOR_LOWER_BOUND` (one figure
    for a whole column: a fit over allocator peaks and tensor peaks mixed would mean neither).

    >>> sample = LongSample(8, 0, 0, {}, 0, 0, 96, (), None, None, None, allocator_peak_bytes=160)
    >>> memory_figure([sample]), memory_figure([sample, replace(sample, allocator_peak_bytes=None)])
    ('allocator', 'tensor_lower_bound')
    """
    return ALLOCATOR if all(s.allocator_peak_bytes is not None for s in samples) else TENSOR_LOWER_BOUND


def memory_bytes(samples: Sequence[LongSample]) -> list[int]:
    """The memory column's figure at each sample, by :func:`memory_figure` (bytes)."""
    if memory_figure(samples) == ALLOCATOR:
        return [s.allocator_peak_bytes for s in samples]
    return [s.peak_bytes for s in samples]


@dataclass(frozen=True)
class ModernRow:
    """One row: its raw samples and a :class:`ModernCell` per column (None: no step API).

    ``memory_figure`` names what the memory cell was fitted on (:func:`memory_figure`): ``"allocator"``, the
    allocator's peaks, or ``"tensor_lower_bound"``, the tensors' peaks between ops, a lower bound.
    """

    row: str
    group: str
    source: str
    short: tuple[ShortSample, ...]
    long: tuple[LongSample, ...]
    work: ModernCell
    span: ModernCell
    path: ModernCell
    memory: ModernCell
    decode: ModernCell | None
    state: ModernCell | None
    span_products_fit: Fit
    memory_figure: str = ALLOCATOR

    def cells(self) -> dict[str, ModernCell]:
        """The cells by column name (decode and state only where the row decodes), judged or not."""
        return {c: getattr(self, c) for c in COLUMNS if getattr(self, c) is not None}


@dataclass(frozen=True)
class ModernResult(NotebookView):
    """Table 1 extended, measured: every row, the rows whose module is missing, and the conditions of the run."""

    lengths: tuple[int, ...]
    long_lengths: tuple[int, ...]
    d_model: int
    kernel: int
    window: int
    chunk: int
    seed: int
    rows: tuple[ModernRow, ...]
    missing: tuple[str, ...]
    dtype: str
    threads: int
    torch_version: str

    @property
    def matched(self) -> int:
        """Cells whose fit shows the row's big-O."""
        return sum(cell.verdict == MATCH for row in self.rows for cell in row.cells().values())

    @property
    def cells(self) -> int:
        """Cells judged (✓ or ✗)."""
        return sum(cell.judged for row in self.rows for cell in row.cells().values())

    @property
    def not_judged(self) -> int:
        """Cells not judged: their regime holds fewer than 3 lengths, or the lengths do not separate the forms."""
        return sum(not cell.judged for row in self.rows for cell in row.cells().values())

    @property
    def counts_differ(self) -> int:
        """Counted work or decode multiplications that differ from their closed form."""
        return sum((s.multiplications != s.closed_form) + (s.decode_closed_form is not None
                                                           and s.decode_multiplications != s.decode_closed_form)
                   for row in self.rows for s in row.long)


# --- memory guard ------------------------------------------------------------------------------------

def _pass_bytes(T: int, d: int) -> int:
    """Generous bytes of one forward at T: four T×T float32 maps, 256 T×d tensors, 64 MiB of working set."""
    return 16 * T * T + 1024 * T * d + 64 * 2**20


def check_modern_size(config: ModernConfig) -> ModernConfig:
    """Validate ``config`` and refuse sizes that would not fit in memory, before building anything.

    >>> check_modern_size(ModernConfig(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=8)).d_model
    8

    Raises:
        SeqlabError: a bad size (see :meth:`ModernConfig.validated`) or too little memory for the largest pass.
    """
    config = config.validated()
    require_positive_int("d_model", config.d_model, MAX_WIDTH)
    T = max(config.long_lengths)
    require_fits(MemoryEstimate(_pass_bytes(T, config.d_model), Message(N_("the forward pass at T = {T}"), T=T)),
                 Message(N_("T up to {T} at d_model = {d_model}"), T=T, d_model=config.d_model))
    table1.check_table1_size(Table1Config(config.lengths, (config.d_model,), config.kernel, config.window))
    return config


# --- measuring one row ---------------------------------------------------------------------------------

def _input(T: int, d: int, seed: int) -> torch.Tensor:
    return torch.randn(1, T, d, generator=torch.Generator().manual_seed(input_seed(seed, T)))  # (1, T, d)


def _short(row: str, machine: Machine, T: int, config: ModernConfig) -> ShortSample:
    """Path at T: the paper's rows through ``seqlab table1``'s own measurement (connecting stacks)."""
    if machine.regime("path").start is None:  # no stack connects the ends (a window of 1): nothing to trace
        return ShortSample(T, 0, None, None, signal_absent="not_connected")
    layer = ROWS[row].table1_layer
    if layer is not None:
        s = table1.measure_sample(layer, T, config.d_model, config.kernel, config.window, config.seed)
        return ShortSample(T, s.depth, s.path_ops, s.path_products, **_signal(machine, T, s.depth, config))
    x = _input(T, config.d_model, config.seed)
    stack = machine.stack(T) if machine.stack is not None else (lambda inputs: [machine.layer(inputs)])
    per_depth = measure_paths(stack, x, sources=(0, T - 1), outputs=lambda outputs: outputs)
    path_ops, _ = table1._path(per_depth, T, "ops")
    path_products, _ = table1._path(per_depth, T, "products")
    return ShortSample(T, len(per_depth), path_ops, path_products, **_signal(machine, T, len(per_depth), config))


def _signal(machine: Machine, T: int, depth: int, config: ModernConfig) -> dict:
    """The signal path from x_1 to y_T on the row's connecting stack (``depth`` copies of its module), as fields."""
    module = machine.module
    if module is None or not declared_factors(module):
        return {"signal_absent": "no_factor"}
    if depth > 1:
        if machine.stack is None or machine.module_output is not None:
            return {"signal_absent": "stack_not_measured"}
        module = torch.nn.Sequential(*(copy.deepcopy(module) for _ in range(depth)))  # the same weights per layer
    signal = measure_signal_path(module, _input(T, config.d_model, config.seed), source=0, target=T - 1,
                                 output=machine.module_output)
    return {"signal_factors": signal.factors, "signal_factor": signal.factor, "signal_reach": signal.reach,
            "signal_absent": signal.reason}


def _decode(machine: Machine, t: int, config: ModernConfig) -> tuple[int | None, int | None, int | None]:
    """(multiplications, closed form, state bytes) of the step generating position t, or Nones."""
    from seqlab.measure import decode

    if machine.decoder is None:
        return None, None, None
    if machine.decode_machine is not None:
        step = decode.measure_decode_step(machine.decode_machine, t, d_model=config.d_model, time=False,
                                          seed=config.seed, decoder=machine.decoder)
        formula = machine.step_closed_form  # the row's own module, when its options differ from the machine's
        return step.multiplications, (int(formula(t)) if formula is not None else step.closed_form), step.state_bytes
    from seqlab.layers.decoding import state_bytes
    from seqlab.measure.work import count_multiplications

    generator = torch.Generator().manual_seed(input_seed(config.seed, t))
    state = decode.prepared_state(machine.decoder, t, 1, generator, torch.float32)
    x_t = torch.randn(1, config.d_model, generator=generator)  # (1, d)
    with torch.no_grad():
        counted = count_multiplications(machine.decoder.step, x_t, state)
        _, after = machine.decoder.step(x_t, state)
    formula = machine.step_closed_form
    return counted.multiplications, (int(formula(t)) if formula is not None else None), state_bytes(after)


def _long(machine: Machine, T: int, config: ModernConfig) -> LongSample:
    x = _input(T, config.d_model, config.seed)
    traced = measure_pass(machine.layer, x)  # work and span: one traced pass (fused kernels off)
    work, span = traced.work, traced.span
    peak = memory_peak.measure_peak_memory(machine.layer, x)
    decode_count, decode_form, state = _decode(machine, T, config)
    return LongSample(T, work.multiplications, machine.closed_form(T), dict(work.unaccounted), span.ops,
                      span.products, peak.peak_bytes,
                      tuple((t.op, t.shape, t.nbytes) for t in peak.largest[:3]), decode_count, decode_form, state,
                      peak.allocator_peak_bytes, tuple(peak.allocator_largest[:3]))


def _cell(entry: tuple[str, Growth] | None, lengths: Sequence[int], values: Sequence[int | None],
          regime: Regime) -> ModernCell | None:
    """The cell of one column: fitted on the lengths of its regime, judged by :func:`seqlab.fit.judge_form`."""
    if entry is None or (regime.start is not None and any(v is None for v in values)):
        return None
    paper, expected = entry
    steps = regime.steps
    where = dict(regime_start=regime.start, regime_size=regime.size, regime_symbol=regime.symbol,
                 regime_multiple=regime.multiple, steps=None if steps is None else steps.name)
    if regime.start is None:
        return ModernCell(paper, expected, None, NOT_JUDGED, (), **where, reason="no_regime", other=None)
    judged = [(T, v) for T, v in zip(lengths, values) if regime.holds(T)]
    if len(judged) < 3:
        return ModernCell(paper, expected, fit_growth(lengths, values), NOT_JUDGED,
                          tuple(T for T, _ in judged), **where, reason="below_regime", other=None)
    xs, ys = [T for T, _ in judged], [v for _, v in judged]
    fit = fit_growth(xs, ys, steps)
    form = form_of_growth(expected.model, expected.exponent)
    if form is None:  # a power with no form of its own: the exponent decides (Growth.matches)
        verdict, other = (MATCH if expected.matches(fit) else MISMATCH), None
    else:
        judgement = judge_form(xs, ys, form, steps)
        verdict, other = (NOT_JUDGED, judgement.other) if judgement.verdict not in (MATCH, MISMATCH) else \
            (judgement.verdict, None)
    return ModernCell(paper, expected, fit, verdict, tuple(xs), **where,
                      reason="not_separated" if verdict == NOT_JUDGED else None, other=other)


def measure_row(row: str, config: ModernConfig, step: Callable[[str], None] | None = None) -> ModernRow:
    """Measure one row at every length of ``config`` (validated) and judge its six cells; ``step(what)`` is called
    after each length's measurement (a progress bar's tick).

    >>> config = ModernConfig(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=4).validated()
    >>> r = measure_row("elman", config)
    >>> [s.span_products for s in r.long], r.long[0].multiplications, r.work.matches, r.state.fit.exponent
    ([64, 128, 256], 2048, True, 0.0)

    Raises:
        SeqlabError: an unknown or unavailable row, or a stack that never connects the ends.
    """
    spec = ROWS[row]
    machine = build_machine(row, config.d_model, kernel=config.kernel, window=config.window, chunk=config.chunk,
                            seed=config.seed)
    tick = step or (lambda what: None)

    def measured(value, what: str):
        tick(what)
        return value

    short = tuple(measured(_short(row, machine, T, config), f"{row} · T = {T}") for T in config.lengths)
    if machine.regime("path").start is not None and any(s.path_ops is None for s in short):
        raise SeqlabError(N_("the {row} row never connected positions 1 and T at T = {lengths}"), row=row,
                          lengths=config.lengths)
    long = tuple(measured(_long(machine, T, config), f"{row} · T = {T}") for T in config.long_lengths)
    lengths, long_lengths = config.lengths, config.long_lengths
    return ModernRow(
        row=row, group=spec.group, source=spec.source, short=short, long=long,
        work=_cell(spec.work, long_lengths, [s.multiplications for s in long], machine.regime("work")),
        span=_cell(spec.span, long_lengths, [s.span_ops for s in long], machine.regime("span")),
        path=_cell(spec.path, lengths, [s.path_ops for s in short], machine.regime("path")),
        memory=_cell(spec.memory, long_lengths, memory_bytes(long), machine.regime("memory")),
        decode=_cell(spec.decode, long_lengths, [s.decode_multiplications for s in long], machine.regime("decode")),
        state=_cell(spec.state, long_lengths, [s.state_bytes for s in long], machine.regime("state")),
        span_products_fit=fit_growth(long_lengths, [s.span_products for s in long]), memory_figure=memory_figure(long))


def run_modern(config: ModernConfig | None = None,
               progress: Callable[[int, int, str], None] | None = None) -> ModernResult:
    """Measure every available row of ``config`` and judge each cell against its big-O.

    >>> result = run_modern(ModernConfig(lengths=(8, 16, 32), long_lengths=(64, 128, 256), d_model=4,
    ...                                  rows=("elman", "self_attention")))
    >>> [(r.row, r.memory.expected.exponent, r.memory.matches) for r in result.rows]
    [('elman', 1.0, True), ('self_attention', 2.0, True)]

    Args:
        config: sizes and rows (default :class:`ModernConfig`).
        progress: called as ``progress(done, total, what)`` after every length of every row (a progress bar).

    Returns:
        A :class:`ModernResult`; rows whose module is not installed are listed in ``missing``.

    Raises:
        SeqlabError: a bad size, an unknown row, or sizes that would not fit in memory.
    """
    config = check_modern_size(config or ModernConfig())
    available = [row for row in config.rows if row_available(row)]
    total, done = len(available) * (len(config.lengths) + len(config.long_lengths)), 0

    def step(what: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, what)

    with fixed_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        rows = tuple(measure_row(row, config, step) for row in available)
    return ModernResult(lengths=config.lengths, long_lengths=config.long_lengths, d_model=config.d_model,
                        kernel=config.kernel, window=config.window, chunk=config.chunk, seed=config.seed, rows=rows,
                        missing=tuple(row for row in config.rows if row not in available), dtype="float32",
                        threads=1, torch_version=torch.__version__)
