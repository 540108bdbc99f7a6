"""``seqlab table1``: Table 1 of "Attention Is All You Need", measured instead of quoted (L1–L4, L7).

The paper compares layer types on three columns, as orders of growth in the length n (= T):

=================================  ==============  ================  ======================
layer type                         work per layer  sequential ops    maximum path length
=================================  ==============  ================  ======================
self-attention                     O(n²·d)         O(1)              O(1)
recurrent (Elman RNN, LSTM, GRU)   O(n·d²)         O(n)              O(n)
convolutional, contiguous          O(k·n·d²)       O(1)              O(n/k)
convolutional, dilated             O(k·n·d²)       O(1)              O(log_k(n))
self-attention (restricted)        O(r·n·d)        O(1)              O(n/r)
=================================  ==============  ================  ======================

For every layer type and every T this study builds the layer (seeded, eval mode, float32, batch 1)
and measures, with the engine of :mod:`seqlab.measure`:

* **work** — multiplications counted while ONE layer runs (:func:`~seqlab.measure.work.count_multiplications`).
  Scope: recurrences and convolutions, the whole layer (input and recurrent products; bias, gates and
  activations are not multiplications by the lesson's convention); the two attention types, the
  attention call only — scores and mix, Q/K/V projections excluded — which is what the paper's
  O(n²·d) and O(r·n·d) count (L6). Each count is checked against its closed form.
* **sequential operations** — the span of ONE layer (:func:`~seqlab.measure.trace.measure_span`), in
  compute ops and in matrix products, projections included.
* **maximum path length** — on the *stack that connects all positions* (one layer for attention and
  the recurrences; :func:`~seqlab.layers.convolution.layers_to_connect` and
  :func:`~seqlab.layers.restricted.layers_to_connect` layers otherwise), the least path from position
  0 to T - 1 and from T - 1 to 0 (:func:`~seqlab.measure.paths.measure_paths` with ``sources=(0, T-1)``
  and every layer's output in one trace): the shallowest depth at which the two ends connect, the
  longer of the two directions that connect.

The verdicts use **ops**, the paper's unit for both columns: in matrix products the gated recurrences'
cell state is a path that crosses no W_hh (1 product however far), yet it still takes a few ops per
position (L3: a bypass, not a shortcut); products are measured and reported beside.

Each cell is judged by the big-O's own form (:func:`seqlab.fit.judge_form`): every form of
:data:`seqlab.fit.FORMS` is fitted as a + b·f(T) with the lower-order terms a closed form has (a stacked
layer's path also with its own whole-number term, the layers of the stack:
``stack_steps``), and the form chosen (:func:`seqlab.fit.choose_form`) is compared
with the paper's: the same form *matches*, another one at lengths that separate the two is a *mismatch*, and
lengths that cannot tell them apart are *not separated*, never a mismatch. An exact count is fitted by its own
form with no residual, so it is never marked against it. A paper's power with no form of its own falls back to
the exponent of the power law fitted beside it (slope of ln y on ln T), within
:data:`~seqlab.studies.table1_results.TOLERANCE` = 0.1. The power law and the logarithm (y ≈ a + b·ln T, kept
only when its RMS error of ln(ŷ/y) is under half the power law's) are shown beside each form, and the width fit
(work against d at the largest T) is read by that exponent.

Measurements are counts, not times: they run on one CPU thread (restored afterwards), which is much
faster for the many small tensors of a trace.

Shapes: T positions, d = d_model = d_k = d_v = d_h, k kernel width, r window.

The paper's entries, the config and the result dataclasses are in :mod:`seqlab.studies.table1_results`;
their names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab import cost
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers import convolution, restricted
from seqlab.layers.attention import SelfAttention
from seqlab.layers.convolution import ConvolutionStack
from seqlab.layers.recurrent import ElmanRNN
from seqlab.layers.restricted import RestrictedAttentionStack, RestrictedSelfAttention
from seqlab.measure.paths import PathMatrix, measure_paths
from seqlab.measure.timing import fixed_threads
from seqlab.fit import (MATCH, MISMATCH, NOT_SEPARATED, Fit, Steps, fit_growth, form_of_growth,  # noqa: F401
                        judge_form, two_point_fit)  # (Fit and fit_growth re-exported)
from seqlab.measure.trace import measure_span
from seqlab.measure.work import WorkCount, count_multiplications
from seqlab.memory import FLOAT32_BYTES, MemoryEstimate, require_fits
from seqlab.seeds import input_seed
from seqlab.studies.table1_results import (CONSTANT, DEFAULT_D_MODEL, DEFAULT_KERNEL, DEFAULT_LENGTHS, DEFAULT_WINDOW,
                                           LAYER_TYPES, LINEAR, LOGARITHMIC, MAX_LENGTH, MAX_WIDTH, PAPER, QUADRATIC,
                                           QUICK_D_MODEL, QUICK_LENGTHS, TOLERANCE, Cell, Growth, LayerRow, PaperRow,
                                           Sample, Table1Config, Table1Result, WidthFit)

__all__ = ["CONSTANT", "DEFAULT_D_MODEL", "DEFAULT_KERNEL", "DEFAULT_LENGTHS", "DEFAULT_WINDOW", "LAYER_TYPES",
           "LINEAR", "LOGARITHMIC", "MAX_LENGTH", "MAX_WIDTH", "PAPER", "QUADRATIC", "QUICK_D_MODEL",
           "QUICK_LENGTHS", "TOLERANCE", "Cell", "Fit", "Growth", "LayerRow", "PaperRow", "Sample", "Table1Config",
           "Table1Result", "WidthFit", "check_table1_size", "closed_form_work", "estimate_table1_bytes",
           "fit_growth", "measure_sample", "run_table1"]


# --- closed forms and fits -----------------------------------------------------------------------

def closed_form_work(layer: str, T: int, d: int, kernel: int, window: int) -> int:
    """Multiplications of one layer of type ``layer`` by its closed form (the scope of :func:`run_table1`).

    >>> closed_form_work("self_attention", 16, 8, 3, 4), closed_form_work("restricted", 16, 8, 3, 4)
    (4096, 2304)

    Raises:
        SeqlabError: unknown layer type or a size that is not a positive integer.
    """
    forms: dict[str, Callable[[], int]] = {
        "self_attention": lambda: cost.attention_multiplications(T, d, d),
        "rnn": lambda: cost.recurrence_multiplications(T, d, d),
        "lstm": lambda: cost.gated_recurrence_multiplications(T, d, d, "lstm"),
        "gru": lambda: cost.gated_recurrence_multiplications(T, d, d, "gru"),
        "convolution": lambda: cost.convolution_multiplications(T, d, kernel),
        "dilated_convolution": lambda: cost.convolution_multiplications(T, d, kernel),
        "restricted": lambda: cost.restricted_attention_multiplications(T, window, d, d),
    }
    if layer not in forms:
        raise SeqlabError(N_("layer must be one of {layer_types}; received {layer!r}"),
                          layer_types=', '.join(LAYER_TYPES), layer=layer, parameter="layer")
    return forms[layer]()


# --- building and measuring each layer type ------------------------------------------------------

@dataclass(frozen=True)
class _Built:
    """A layer type built at one (T, d): the one layer to count and trace, and the connecting stack."""

    work: Callable[[Tensor], WorkCount]  # counts exactly the scope of the work column
    layer: Callable[[Tensor], object]  # one whole layer (span)
    stack: Callable[[Tensor], list[Tensor]]  # every layer's output of the connecting stack (path)
    depth: int


def _seeded(seed: int, make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """A library module built from the global RNG under ``seed``, without changing the caller's RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make().eval()


def _build(layer: str, T: int, d: int, kernel: int, window: int, seed: int) -> _Built:
    generator = torch.Generator().manual_seed(seed)
    if layer == "self_attention":
        attention = SelfAttention(d, generator=generator).eval()
        return _Built(lambda x: count_multiplications(attention.attention, *attention.project(x)), attention,
                      lambda x: [attention(x)[0]], 1)
    if layer in ("rnn", "lstm", "gru"):
        module = ElmanRNN(d, d, generator=generator).eval() if layer == "rnn" else _seeded(
            seed, lambda: (torch.nn.LSTM if layer == "lstm" else torch.nn.GRU)(d, d, batch_first=True))
        output = (lambda x: module(x)) if layer == "rnn" else (lambda x: module(x)[0])
        return _Built(lambda x: count_multiplications(output, x), output, lambda x: [output(x)], 1)
    if layer in ("convolution", "dilated_convolution"):
        dilated = layer == "dilated_convolution"
        one = ConvolutionStack(d, kernel, layers=1, generator=generator).eval()
        stack = ConvolutionStack.connecting(T, d, kernel, dilated=dilated, generator=generator).eval()
        return _Built(lambda x: count_multiplications(one, x), one, stack.forward_all, stack.depth)
    if layer == "restricted":
        one = RestrictedSelfAttention(d, window, generator=generator).eval()
        stack = RestrictedAttentionStack.connecting(T, d, window, generator=generator).eval()
        return _Built(lambda x: count_multiplications(one.attend, *one.project(x)), lambda x: one(x)[0],
                      stack.forward_all, stack.depth)
    raise SeqlabError(N_("layer must be one of {layer_types}; received {layer!r}"), layer_types=', '.join(LAYER_TYPES),
                      layer=layer, parameter="layer")


def _least_over_depths(per_depth: Sequence[PathMatrix], source: int, target: int, unit: str
                       ) -> tuple[int | None, int | None]:
    """(least path from ``source`` to ``target`` over all depths, the first depth that connects them)."""
    values = [(matrix.row(source, unit)[target], depth + 1) for depth, matrix in enumerate(per_depth)]
    connected = [(value, depth) for value, depth in values if value is not None]
    if not connected:
        return None, None
    return min(v for v, _ in connected), min(depth for _, depth in connected)


def _path(per_depth: Sequence[PathMatrix], T: int, unit: str) -> tuple[int | None, int | None]:
    """The longer of the two directions 0 → T-1, T-1 → 0 that connect, and its first depth."""
    directions = [_least_over_depths(per_depth, s, t, unit) for s, t in ((0, T - 1), (T - 1, 0))]
    connected = [d for d in directions if d[0] is not None]
    return max(connected) if connected else (None, None)


def measure_sample(layer: str, T: int, d: int, kernel: int = DEFAULT_KERNEL, window: int = DEFAULT_WINDOW,
                   seed: int = 0) -> Sample:
    """Measure work, span and path of one layer type at one (T, d).

    >>> s = measure_sample("rnn", 8, 4)
    >>> s.multiplications == s.closed_form == 8 * (16 + 16), s.span_products, s.path_products
    (True, 8, 8)

    Args:
        layer: one of :data:`LAYER_TYPES`.
        T: positions (>= 2); d: width (d_model = d_k = d_v = d_h).
        kernel, window: convolution width k (odd, >= 3) and restricted window r (>= 1).
        seed: seeds the weights and the input.

    Returns:
        A :class:`Sample`.

    Raises:
        SeqlabError: an unknown layer type or a bad size.
    """
    built = _build(layer, T, d, kernel, window, seed)
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(input_seed(seed, T)))  # (1, T, d)
    with torch.no_grad():
        work = built.work(x)
    span = measure_span(built.layer, x)
    per_depth = measure_paths(built.stack, x, sources=(0, T - 1), outputs=lambda outputs: outputs)
    path_ops, first_depth = _path(per_depth, T, "ops")
    path_products, _ = _path(per_depth, T, "products")
    fallbacks: dict[str, int] = {}
    for matrix in per_depth[-1:]:  # the tracer's census is shared by every output of the trace
        fallbacks.update(matrix.fallbacks)
    return Sample(T=T, d_model=d, multiplications=work.multiplications,
                  closed_form=closed_form_work(layer, T, d, kernel, window), unaccounted=dict(work.unaccounted),
                  span_ops=span.ops, span_products=span.products, path_ops=path_ops, path_products=path_products,
                  depth=built.depth, first_depth=first_depth, fallbacks=fallbacks)


def _cell(paper: str, expected: Growth, lengths: Sequence[int], values: Sequence[int | None],
          steps: Steps | None = None) -> Cell:
    """A cell judged by :func:`seqlab.fit.judge_form` against the paper's form (with the count's own whole-number
    term ``steps`` as one more variant of it); a power with no form of its own by its exponent."""
    fit = fit_growth(lengths, values, steps)
    form = form_of_growth(expected.model, expected.exponent)
    if form is None:
        verdict, other = (MATCH if expected.matches(fit) else MISMATCH), None
    else:
        judged = judge_form(lengths, values, form, steps)
        verdict, other = judged.verdict, (judged.other if judged.verdict == NOT_SEPARATED else None)
    return Cell(paper=paper, expected=expected, fit=fit, verdict=verdict, other=other,
                steps=None if steps is None else steps.name)


def stack_steps(layer: str, kernel: int, window: int) -> Steps | None:
    """The whole-number term a stacked layer type's path grows by: the layers of the shallowest stack that connects
    every pair of positions, by the rule that builds that stack (:func:`seqlab.layers.convolution.layers_to_connect`,
    :func:`seqlab.layers.restricted.layers_to_connect`); each layer adds the same ops, so the path is a + b·layers
    exactly. None for a layer type that is not a stack.

    >>> steps = stack_steps("dilated_convolution", 3, 4)
    >>> steps.form, steps.name, [steps.values(T) for T in (2, 3, 4, 9, 10)]
    ('log T', 'layers (⌈log₂T⌉)', [1, 2, 2, 4, 4])
    """
    if layer == "convolution":
        reach = (kernel - 1) // 2
        return Steps("T", f"layers (⌈(T − 1)/{reach}⌉)", lambda T: convolution.layers_to_connect(T, kernel, False))
    if layer == "dilated_convolution":
        base = (kernel + 1) // 2
        return Steps("log T", f"layers (⌈log{_subscript(base)}T⌉)",
                     lambda T: convolution.layers_to_connect(T, kernel, True))
    if layer == "restricted":
        return Steps("T", f"layers (⌈(T − 1)/{window}⌉)", lambda T: restricted.layers_to_connect(T, window))
    return None


def _subscript(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def _row(layer: str, d: int, samples: tuple[Sample, ...], kernel: int = DEFAULT_KERNEL,
         window: int = DEFAULT_WINDOW) -> LayerRow:
    paper = PAPER[layer]
    lengths = [s.T for s in samples]
    for sample in samples:
        if sample.path_ops is None:
            raise SeqlabError(N_("the {layer} stack never connected positions 0 and {value} at T = {T}"), layer=layer,
                              value=sample.T - 1, T=sample.T)
    return LayerRow(
        layer=layer, d_model=d, samples=samples,
        work=_cell(paper.complexity, paper.work, lengths, [s.multiplications for s in samples]),
        span=_cell(paper.sequential, paper.span, lengths, [s.span_ops for s in samples]),
        path=_cell(paper.path, paper.path_growth, lengths, [s.path_ops for s in samples],
                   stack_steps(layer, kernel, window)),
        path_products_fit=fit_growth(lengths, [s.path_products for s in samples]),
    )


def _width_fit(layer: str, rows: Sequence[LayerRow]) -> WidthFit:
    """Work against d at the largest T; a power law of the paper's exponent in d (2 or 1)."""
    d_models = tuple(row.d_model for row in rows)
    work = tuple(row.samples[-1].multiplications for row in rows)
    fit = fit_growth(d_models, work) if len(d_models) >= 3 else two_point_fit(d_models, work)
    expected = PAPER[layer].width_exponent
    return WidthFit(layer=layer, T=rows[0].samples[-1].T, d_models=d_models, multiplications=work,
                    expected_exponent=expected, fit=fit,
                    matches=fit.model == "power" and abs(fit.exponent - expected) <= TOLERANCE)


# --- memory and the study --------------------------------------------------------------------------

#: Sources of every path analysis here: the first and the last position.
_PATH_SOURCES = 2
_FIXED_BYTES = 256 * 2**20


def _elements(layer: str, T: int, d: int, kernel: int, window: int) -> int:
    """Generous count of the elements the traced pass of a layer type's connecting stack writes."""
    if layer == "self_attention":
        return 8 * T * d + 8 * T * T
    if layer == "rnn":
        return 8 * T * d
    if layer in ("lstm", "gru"):
        return 40 * T * d
    if layer in ("convolution", "dilated_convolution"):
        return (convolution.layers_to_connect(T, kernel, layer == "dilated_convolution") * 3 + 1) * T * d
    slots = 2 * window + 1
    per_layer = 10 * T * d + T * d * slots // 2 + 8 * T * slots
    return restricted.layers_to_connect(T, window) * per_layer


def estimate_table1_bytes(config: Table1Config) -> MemoryEstimate:
    """Memory the largest single measurement of the study needs (measurements run one at a time).

    The path analysis dominates, by the tracer's own estimate
    (:func:`seqlab.measure.distance_store.estimate_path_bytes`): every element its traced pass writes keeps
    int32 distances for 2 sources and 2 units beside the float32 value (element counts calibrated on measured
    peaks, with room to spare), attention's (T×d) @ (d×T) score product may take the tracer's masked-product
    chunk, plus 256 MiB for the interpreter's working set.

    >>> estimate = estimate_table1_bytes(Table1Config())
    >>> round(estimate.gib, 1), str(estimate.largest)
    (0.6, 'the path analysis of the restricted stack at T = 256, d = 64')
    """
    from seqlab.measure.distance_store import estimate_path_bytes

    worst, largest = 0, ""
    for d in config.d_models:
        for T in config.lengths:
            for layer in LAYER_TYPES:
                product = (T, d, T) if layer in ("self_attention", "restricted") else None
                held = estimate_path_bytes(_elements(layer, T, d, config.kernel, config.window), _PATH_SOURCES,
                                           value_bytes=FLOAT32_BYTES, product=product)
                nbytes = _FIXED_BYTES + held.total
                if nbytes > worst:
                    worst, largest = nbytes, Message(N_("the path analysis of the {layer} stack at T = {T}, d = {d}"),
                                                     layer=layer, T=T, d=d)
    return MemoryEstimate(total_bytes=worst, largest=largest)


def check_table1_size(config: Table1Config) -> Table1Config:
    """Validate ``config`` and refuse sizes whose measurements would not fit in memory, before building anything.

    Returns:
        The validated config.

    Raises:
        SeqlabError: a bad size (see :meth:`Table1Config.validated`) or too little memory.
    """
    config = config.validated()
    require_fits(estimate_table1_bytes(config), Message(N_("T up to {T} at d_model = {d_model}"), T=max(config.lengths),
                                                        d_model=max(config.d_models)))
    return config


def run_table1(config: Table1Config | None = None, *, layers: Sequence[str] = LAYER_TYPES,
               progress: Callable[[int, int, str], None] | None = None) -> Table1Result:
    """Measure every layer type of Table 1 at every T and d, fit the growth with T, judge each cell.

    >>> result = run_table1(Table1Config(lengths=(8, 16, 32), d_models=(4,)), layers=("rnn",))
    >>> [s.span_products for s in result.rows[0].samples], round(result.rows[0].span.fit.exponent, 6)
    ([8, 16, 32], 1.0)

    Args:
        config: sizes (default :class:`Table1Config`: T = 16…256, d = 64, k = 3, r = 4).
        layers: the layer types to measure (default all of :data:`LAYER_TYPES`).
        progress: called as ``progress(done, total, layer)`` as each layer type at each d is measured.

    Returns:
        A :class:`Table1Result`.

    Raises:
        SeqlabError: a bad size, an unknown layer type, or sizes that would not fit in memory.
    """
    config = check_table1_size(config or Table1Config())
    unknown = [layer for layer in layers if layer not in LAYER_TYPES]
    if unknown or not layers:
        raise SeqlabError(N_("layers must be among {layer_types}; received {layers}"),
                          layer_types=', '.join(LAYER_TYPES), layers=list(layers), parameter="layer")
    rows: list[LayerRow] = []
    total = len(config.d_models) * len(layers)
    with fixed_threads(1):
        for d in config.d_models:
            for layer in layers:
                if progress is not None:
                    progress(len(rows), total, layer)
                samples = tuple(measure_sample(layer, T, d, config.kernel, config.window, config.seed)
                                for T in config.lengths)
                rows.append(_row(layer, d, samples, config.kernel, config.window))
    if progress is not None:
        progress(total, total, "done")
    width_fits = ()
    if len(config.d_models) >= 2:
        width_fits = tuple(_width_fit(layer, [row for row in rows if row.layer == layer]) for layer in layers)
    return Table1Result(lengths=config.lengths, d_models=config.d_models, kernel=config.kernel,
                        window=config.window, seed=config.seed, rows=tuple(rows), width_fits=width_fits,
                        dtype="float32", threads=1, torch_version=torch.__version__)
