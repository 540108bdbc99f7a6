"""Table 1's data: the paper's entries per layer type, what to measure, and what a measurement returns.

:data:`PAPER` holds the paper's three columns for each of :data:`LAYER_TYPES` with the growth in T each
means (:class:`Growth`); :class:`Table1Config` says which T and widths to measure; :class:`Sample`,
:class:`Cell`, :class:`LayerRow`, :class:`WidthFit` and :class:`Table1Result` are what
:func:`seqlab.studies.table1.run_table1` returns (every raw sample, the fits, the verdicts).

Shapes: T positions, d = d_model = d_k = d_v = d_h, k kernel width, r window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.fit import MATCH, NOT_SEPARATED, Fit, form_of_growth
from seqlab.fit import Fit, form_of_growth
from seqlab.i18n import N_
from seqlab.layers import convolution
from seqlab.studies.notebook_view import NotebookView

DEFAULT_LENGTHS = (16, 32, 64, 128, 256)
QUICK_LENGTHS = (16, 32, 64)
DEFAULT_D_MODEL = 64
QUICK_D_MODEL = 32
DEFAULT_KERNEL = 3
DEFAULT_WINDOW = 4
MAX_LENGTH = 4096
MAX_WIDTH = 4096
#: A power-law exponent within this of the paper's matches it.
TOLERANCE = 0.1

LAYER_TYPES = ("self_attention", "rnn", "lstm", "gru", "convolution", "dilated_convolution", "restricted")


@dataclass(frozen=True)
class Growth:
    """An order of growth in T: ``model`` "power" with ``exponent`` (n^exponent), or "log" (log n)."""

    model: str
    exponent: float = 0.0

    def matches(self, fit: Fit) -> bool:
        """Whether a fit shows this growth: the form the fit chose (:func:`seqlab.fit.choose_form`, a + b·f(T)
        with the closed forms' lower-order terms) is this big-O's; a two-point fit (no form) or a power with no
        form of its own falls back to the exponent, within :data:`TOLERANCE`."""
        expected = form_of_growth(self.model, self.exponent)
        if fit.form is not None and expected is not None:
            return fit.form == expected
        if fit.model != self.model:
            return False
        return self.model == "log" or abs(fit.exponent - self.exponent) <= TOLERANCE


CONSTANT, LINEAR, QUADRATIC, LOGARITHMIC = Growth("power", 0.0), Growth("power", 1.0), Growth("power", 2.0), \
    Growth("log")


@dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Table 1: the three entries as printed and the growth in T each means.

    ``width_exponent`` is the growth of the work in d at fixed T (2 for d², 1 for d).
    """

    complexity: str
    sequential: str
    path: str
    work: Growth
    span: Growth
    path_growth: Growth
    width_exponent: float


PAPER = {
    "self_attention": PaperRow("O(n²·d)", "O(1)", "O(1)", QUADRATIC, CONSTANT, CONSTANT, 1.0),
    "rnn": PaperRow("O(n·d²)", "O(n)", "O(n)", LINEAR, LINEAR, LINEAR, 2.0),
    "lstm": PaperRow("O(n·d²)", "O(n)", "O(n)", LINEAR, LINEAR, LINEAR, 2.0),
    "gru": PaperRow("O(n·d²)", "O(n)", "O(n)", LINEAR, LINEAR, LINEAR, 2.0),
    "convolution": PaperRow("O(k·n·d²)", "O(1)", "O(n/k)", LINEAR, CONSTANT, LINEAR, 2.0),
    "dilated_convolution": PaperRow("O(k·n·d²)", "O(1)", "O(log_k(n))", LINEAR, CONSTANT, LOGARITHMIC, 2.0),
    "restricted": PaperRow("O(r·n·d)", "O(1)", "O(n/r)", LINEAR, CONSTANT, LINEAR, 1.0),
}
"""Table 1 of Vaswani et al. (2017), one entry per layer type measured here (n = T)."""

# --- measurements --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sample:
    """Everything measured on one layer type at one (T, d).

    Attributes:
        T, d_model: the sizes.
        multiplications: counted on one layer (scope: see the module docstring).
        closed_form: the same by its closed form (:func:`closed_form_work`).
        unaccounted: ops the work counter could not count (name → calls); empty when complete.
        span_ops, span_products: longest chain of one layer, in ops and in matrix products.
        path_ops, path_products: least path between positions 0 and T - 1 (the longer direction of
            those that connect) on the stack that connects all positions; None if they never connect.
        depth: layers in that stack.
        first_depth: the shallowest depth at which positions 0 and T - 1 connect (None if never).
        fallbacks: ops the path engine had no rule for (treated as all-to-all), name → calls.
    """

    T: int
    d_model: int
    multiplications: int
    closed_form: int
    unaccounted: dict[str, int]
    span_ops: int
    span_products: int
    path_ops: int | None
    path_products: int | None
    depth: int
    first_depth: int | None
    fallbacks: dict[str, int]


@dataclass(frozen=True)
class Cell:
    """One cell of the table: the paper's entry, the fit of the measured series, the verdict.

    Attributes:
        paper: the paper's entry as printed; expected: the growth it means.
        fit: the measured series' fit (:func:`seqlab.fit.fit_growth`, with ``steps`` as one more variant).
        matches: the verdict is :data:`~seqlab.fit.MATCH` (None when not separated: nothing was decided).
        verdict: :data:`~seqlab.fit.MATCH`, :data:`~seqlab.fit.MISMATCH`, or :data:`~seqlab.fit.NOT_SEPARATED`
            when these lengths cannot tell the paper's form from ``other`` (:func:`seqlab.fit.judge_form`): never a
            mismatch for an exact count of the paper's form.
        other: the form the paper's could not be told from (``not_separated`` only), else None.
        steps: the count's own whole-number term the path was judged with (a stack's layers, ``⌈log₃T⌉``), or None.
    """

    paper: str
    expected: Growth
    fit: Fit
    verdict: str = MATCH
    other: str | None = None
    steps: str | None = None
    matches: bool | None = field(init=False)

    def __post_init__(self) -> None:  # one source, the verdict: None where the lengths decided nothing
        object.__setattr__(self, "matches", None if self.verdict == NOT_SEPARATED else self.verdict == MATCH)


@dataclass(frozen=True)
class LayerRow:
    """One layer type at one width: its raw samples (one per T) and the three cells.

    ``path_products_fit`` is the path fitted in matrix products (reported, not judged).
    """

    layer: str
    d_model: int
    samples: tuple[Sample, ...]
    work: Cell
    span: Cell
    path: Cell
    path_products_fit: Fit

    @property
    def matches(self) -> bool:
        """All three cells match the paper."""
        return all(cell.matches is True for cell in (self.work, self.span, self.path))


@dataclass(frozen=True)
class WidthFit:
    """Work against d at the largest T, when several widths were measured (d² or d, per the paper)."""

    layer: str
    T: int
    d_models: tuple[int, ...]
    multiplications: tuple[int, ...]
    expected_exponent: float
    fit: Fit
    matches: bool


@dataclass(frozen=True)
class Table1Config:
    """What to measure. ``lengths``: at least 3 distinct T in [2, MAX_LENGTH]; ``d_models``: widths."""

    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    d_models: tuple[int, ...] = (DEFAULT_D_MODEL,)
    kernel: int = DEFAULT_KERNEL
    window: int = DEFAULT_WINDOW
    seed: int = 0

    def validated(self) -> Table1Config:
        """The same config with sorted, de-duplicated sizes.

        Raises:
            SeqlabError: a T outside [2, MAX_LENGTH], fewer than 3 distinct T, a width outside
                [1, MAX_WIDTH], an even or too small kernel, a window < 1.
        """
        if isinstance(self.lengths, (str, bytes)) or not isinstance(self.lengths, Sequence):
            raise SeqlabError(N_("lengths must be a sequence of integers, received {lengths!r}"), lengths=self.lengths,
                              parameter="lengths")
        for T in self.lengths:
            require_positive_int("T", T, MAX_LENGTH)
            if T < 2:
                raise SeqlabError(N_("every length must be an integer in [2, {max_length}], received {T}"),
                                  max_length=MAX_LENGTH, T=T, parameter="lengths")
        lengths = tuple(sorted(set(self.lengths)))
        if len(lengths) < 3:
            raise SeqlabError(N_("lengths must hold at least 3 distinct values to fit a growth, received {lengths}"),
                              lengths=list(self.lengths), parameter="lengths")
        if isinstance(self.d_models, (str, bytes)) or not isinstance(self.d_models, Sequence) or not self.d_models:
            raise SeqlabError(N_("d_models must be a non-empty sequence of integers, received {d_models!r}"),
                              d_models=self.d_models, parameter="d_model")
        d_models = tuple(sorted({require_positive_int("d_model", d, MAX_WIDTH) for d in self.d_models}))
        convolution.dilation_base(self.kernel)  # odd, >= 3
        require_positive_int("window", self.window)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise SeqlabError(N_("seed must be an integer >= 0, received {seed!r}"), seed=self.seed, parameter="seed")
        return Table1Config(lengths, d_models, self.kernel, self.window, self.seed)


@dataclass(frozen=True)
class Table1Result(NotebookView):
    """Table 1 measured: every raw sample, the fits, the verdicts.

    Attributes:
        lengths, d_models, kernel, window, seed: what was measured.
        rows: one :class:`LayerRow` per layer type and width (widths in order, layer types as in
            :data:`LAYER_TYPES`).
        width_fits: work against d at the largest T (empty unless several widths).
        dtype: dtype of every layer and input; threads: CPU threads the measurements ran on;
        torch_version: the PyTorch that ran.
    """

    lengths: tuple[int, ...]
    d_models: tuple[int, ...]
    kernel: int
    window: int
    seed: int
    rows: tuple[LayerRow, ...]
    width_fits: tuple[WidthFit, ...]
    dtype: str
    threads: int
    torch_version: str

    @property
    def not_separated(self) -> int:
        """Cells whose lengths cannot tell the paper's form from another (judged neither way)."""
        return sum(c.verdict == NOT_SEPARATED for row in self.rows for c in (row.work, row.span, row.path))

    @property
    def matched(self) -> int:
        """Cells (three per row, plus the width fits) that match the paper."""
        cells = [c.matches is True for row in self.rows for c in (row.work, row.span, row.path)]
        return sum(cells) + sum(w.matches for w in self.width_fits)

    @property
    def cells(self) -> int:
        """Number of cells judged."""
        return 3 * len(self.rows) + len(self.width_fits)

    @property
    def all_match(self) -> bool:
        """Every cell matches the paper."""
        return self.matched == self.cells

