"""``seqlab compare``: the recurrence against attention on one text, every figure measured (L1–L10).

Builds the two machines of the lesson on the same token vectors — an Elman RNN written as the loop
of L1 and self-attention (three projections, then the attention call of L2) — and measures, for each:
multiplications (closed form beside counted, both on the explicit machine and on the fastest library
implementation, ``nn.RNN`` and SDPA), span (ops and matrix products in a row), the path from position
1 to T (least products on a dependency path, L3/L4), reach from position 1 to T by autograd, the order
tests of L10 and wall time. Beside them: work at three scopes with independent counts
(:mod:`seqlab.studies.compare_scopes`), ``nn.LSTM`` and ``nn.GRU`` (:mod:`seqlab.studies.compare_gated`),
attention's reach at T/2 and T, and for a spectral radius above 1 the reach's spread under 1e-7 weight
perturbations (:mod:`seqlab.measure.sensitivity`). Returns a frozen :class:`CompareResult`; rendering is
:mod:`seqlab.render.compare`'s job. Tracing and autograd run on one CPU thread each (on a shared machine idle
threads spin on busy cores): the traces and counts on the caller's thread, and beside them, on one worker thread,
the float64 work (every reach, the spectral radius, the signal paths;
:class:`~seqlab.studies.compare_gated.AsideWork`), the caller taking back, once its own work is done, the jobs the
worker has not begun. The worker starts only once a core stands idle beside the caller
(:class:`~seqlab.studies.compare_gated.IdleCores`, read at each stage): on a machine whose cores other processes keep
busy, the second thread only took turns with the first, at a higher CPU cost, and the caller does it all. Each
machine is traced once per input: one pass gives its work, span and path
(:func:`~seqlab.measure.traced_pass.measure_pass`); the recurrent machines first, then attention, whose softmax is
costed on the meta device, then the scopes' counts there (the first meta op imports ``torch._dynamo``, after which
every dispatch mode pays Dynamo's wrapper per op). Only the timings use more threads: ``threads``, by default
PyTorch's count capped by the free cores, all machines in one set of interleaved rounds
(:mod:`seqlab.studies.compare_times`).

Shapes: T tokens, d_model token width, d_h hidden width, d_k query/key width, d_v value width.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import torch

from seqlab import cost
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.attention import SCORES, SelfAttention
from seqlab.layers.recurrent import ElmanRNN, spectral_radius
from seqlab.measure.order import OrderResult, measure_key_value_order, measure_order
from seqlab.measure.paths import PathMatrix, measure_paths
from seqlab.measure.reach import Reach, auto_probes, measure_reach
from seqlab.measure.rounds import Decision
from seqlab.measure.sensitivity import DRAWS, Sensitivity, measure_sensitivity
from seqlab.measure.signal_path import SignalReading, read_signal_path
from seqlab.measure.timing import MachineLoad, Timing, fixed_threads
from seqlab.measure.trace import Span
from seqlab.measure.traced_pass import TracedPass, measure_pass
from seqlab.measure.work import WorkCount, count_multiplications
from seqlab.memory import estimate_compare_bytes, require_fits
from seqlab.studies.compare_gated import (
    CELLS,
    PATH_WIDTH,
    AsideWork,
    GatedMeasurements,
    IdleCores,
    build_gated,
    gated_reach,
    measure_gated,
    trace_gated,
)
from seqlab.studies.compare_reach import query_row_reaches
from seqlab.studies.compare_scopes import (
    Scope,
    build_modules,
    count_gated,
    library_attention,
    measure_scopes,
)
from seqlab.studies.compare_times import time_modules
from seqlab.studies.notebook_view import NotebookView
from seqlab.text import Tokens, embed, seeded_generator, stream_seed

#: Widest width ``compare`` accepts (d_model, d_h, d_k, d_v): the spectral radius of W_hh is an O(d_h³)
#: eigen-solve (seconds at 4096, minutes at 8192); the memory guard still applies below it.
MAX_WIDTH = 4096


@dataclass(frozen=True)
class CompareConfig:
    """What to build and measure. Widths default to ``d_model`` (the lesson's all-equal case).

    Attributes:
        d_model: token-vector width (default 512, the paper's d_model).
        d_h, d_k, d_v: hidden, query/key and value widths (None: equal to d_model).
        score: attention score, one of ``seqlab.layers.attention.SCORES``.
        seed: seeds the embedding, every weight and every permutation.
        spectral_radius: rescale W_hh to this spectral radius (None: keep PyTorch's init, ≈ 0.58).
        probes: Gaussian probes of the Hutchinson estimate of reach (default 8: within a few per cent on
            attention's blocks, about ±25% on the recurrence's nearly rank-one far blocks — plenty for
            norms that differ by hundreds of orders of magnitude). None: exact when cheap, else 16
            (``seqlab.measure.reach.auto_probes``).
        exact_reach: push back every output direction (exact Frobenius norms; d_h and d_v times the cost).
        time: measure wall time of the library implementations (False skips it, for quick runs and tests).
        time_explicit: also time the explicit machines (the detailed output).
        min_run_time: seconds of timed runs per implementation.
        path_width: width at which the LSTM and GRU paths are traced (None: full width); the path's length
            does not depend on it, the tracer's time does.
        sensitivity_draws: perturbed copies of W_hh measured when its spectral radius exceeds 1 (0: none).
        gated: also measure ``nn.LSTM`` and ``nn.GRU`` (False leaves their columns out: quicker, for tests).
        threads: intra-op CPU threads of the timings (None: :func:`seqlab.measure.rounds.timing_threads_default`,
            PyTorch's count capped by the cores the machine's load leaves free); tracing always runs on one.
    """

    d_model: int = 512
    d_h: int | None = None
    d_k: int | None = None
    d_v: int | None = None
    score: str = "scaled_dot"
    seed: int = 0
    spectral_radius: float | None = None
    probes: int | None = 8
    exact_reach: bool = False
    time: bool = True
    time_explicit: bool = False
    min_run_time: float = 0.2
    path_width: int | None = PATH_WIDTH
    sensitivity_draws: int = DRAWS
    gated: bool = True
    threads: int | None = None

    def widths(self) -> tuple[int, int, int, int]:
        """(d_model, d_h, d_k, d_v), validated, each in [1, MAX_WIDTH].

        Raises:
            SeqlabError: a width is not an integer in [1, MAX_WIDTH].
        """
        d_model = require_positive_int("d_model", self.d_model, MAX_WIDTH)
        resolved = [d_model]
        for name in ("d_h", "d_k", "d_v"):
            value = getattr(self, name)
            resolved.append(d_model if value is None else require_positive_int(name, value, MAX_WIDTH))
        return tuple(resolved)  # type: ignore[return-value]


@dataclass(frozen=True)
class MachineMeasurements:
    """Everything measured on one machine.

    Attributes:
        closed_form: multiplications by the closed form (L5, or L6 for dot scores and its extension to
            the general and additive scores; projections excluded).
        counted: multiplications counted on the explicit machine, same scope as ``closed_form``.
        counted_library: multiplications counted on the library implementation (``nn.RNN`` / SDPA, with
            4-D inputs so its fused kernel runs); None for scores SDPA cannot compute.
        projections_closed_form, projections_counted: the Q, K, V projections (attention only; 0 for
            the recurrence, whose W_xh products are part of L5's count).
        span: longest chain of ops (and of matrix products) in a row, in the scope of ``closed_form``:
            the whole recurrence; attention's call on Q, K, V (the projections add one product ahead).
        span_half: the same at T // 2 tokens, to show how the span grows with T.
        path: least matrix products (and ops) on a dependency path from position 1 to every position,
            measured op by op (``seqlab.measure.paths``; the recurrence: T, attention: 2).
        reach: ‖∂y_T/∂x_i‖ for every i (float64).
        order: rows permuted (L10).
        key_value_order: (k, v) pairs permuted (attention only).
        time_library, time_explicit: wall time per forward pass (None when not timed).
        reach_half: attention only: the reach of y_{T/2} from x_1 on the first T/2 tokens (how the one
            weight α_T1 shrinks as the softmax spreads over more keys, L4); None for the recurrence.
        reach_quarter: attention only: the same on the first T/4 tokens; with ``reach_half`` and ``reach``, the
            three lengths spanning 4× that a trend in T needs (:func:`~seqlab.studies.compare_reach.reach_trend`).
        time_layer: attention only: wall time of ``nn.MultiheadAttention`` with H heads (the layer, fast path).
        signal: the signal path from x_1 to y_T (:func:`~seqlab.measure.signal_path.read_signal_path`: W_hh T − 1
            times in the recurrence, one α_T1 in attention), with the config's probes; None when not read.
    """

    closed_form: int
    counted: WorkCount
    counted_library: WorkCount | None
    projections_closed_form: int
    projections_counted: WorkCount | None
    span: Span
    span_half: Span
    path: PathMatrix
    reach: Reach
    order: OrderResult
    key_value_order: OrderResult | None
    time_library: Timing | None
    time_explicit: Timing | None
    reach_half: Reach | None = None
    time_layer: Timing | None = None
    reach_quarter: Reach | None = None
    signal: SignalReading | None = None


@dataclass(frozen=True)
class CompareResult(NotebookView):
    """The recurrence and attention measured side by side on one text.

    Attributes:
        source, tokenizer: where the tokens came from.
        T: number of tokens; d_model, d_h, d_k, d_v: widths; score: attention score.
        spectral_radius: spectral radius of W_hh as measured on the built layer.
        work_ratio: attention / recurrence multiplications by the closed forms (= T/d when equal, L7).
        crossover: the T at which the closed forms are equal (= d when widths are equal, L7); None
            when attention with this score costs more at every length.
        recurrence, attention: the measurements.
        threads: CPU threads of the timings (torch's count when not timed; tracing and counting ran on one);
            torch_version: the PyTorch that ran.
        scopes: work at the lesson's, the layer's and the kernels' scope (closed forms, independent counts).
        gated: ``nn.LSTM`` and ``nn.GRU`` on the same text (span, path, reach, time).
        heads: heads of the ``nn.MultiheadAttention`` layer (None when it cannot be built at these widths).
        sensitivity: the recurrence's reach under 1e-7 perturbations of W_hh (None unless ρ > 1).
        load: the machine's load when the timings began (None when not timed).
        time_decisions: who finishes first, from the interleaved rounds (:func:`seqlab.measure.rounds.decide`,
            margin :data:`~seqlab.measure.rounds.MARGIN`): nn.RNN against SDPA, then against the layer
            (``a`` is always ``"nn.RNN"``; empty when not timed).
    """

    source: str
    tokenizer: str
    T: int
    d_model: int
    d_h: int
    d_k: int
    d_v: int
    score: str
    seed: int
    spectral_radius: float
    work_ratio: Fraction
    crossover: Fraction | None
    recurrence: MachineMeasurements
    attention: MachineMeasurements
    threads: int
    torch_version: str
    scopes: tuple[Scope, ...] = ()
    gated: tuple[GatedMeasurements, ...] = ()
    heads: int | None = None
    sensitivity: Sensitivity | None = None
    load: MachineLoad | None = None
    time_decisions: tuple[Decision, ...] = ()


def check_compare_size(T: int, config: CompareConfig) -> None:
    """Refuse, before anything is allocated, a T and widths whose tensors would not fit in memory.

    Raises:
        SeqlabError: bad widths, T < 1, or the memory estimate exceeds what this machine has.
    """
    require_positive_int("T", T)
    d_model, d_h, d_k, d_v = config.widths()
    probes = _probes(config, max(d_h, d_v), T) or max(d_h, d_v)
    estimate = estimate_compare_bytes(T, d_model, d_h, d_k, d_v, probes,
                                      score_width=d_k if config.score == "additive" else 0, gated_width=d_h)
    require_fits(estimate, Message(N_("T = {T} at d_model = {d_model}"), T=T, d_model=d_model))


def _build(config: CompareConfig) -> tuple[ElmanRNN, SelfAttention]:
    d_model, d_h, d_k, d_v = config.widths()
    if config.score not in SCORES:
        raise SeqlabError(N_("score must be one of {scores}; received {score!r}"), scores=', '.join(SCORES),
                          score=config.score, parameter="score")
    recurrence = ElmanRNN(d_model, d_h, generator=seeded_generator(config.seed, "recurrence")).eval()
    if config.spectral_radius is not None:
        recurrence.set_spectral_radius(config.spectral_radius)
    attention = SelfAttention(d_model, d_k=d_k, d_v=d_v, score=config.score,
                              generator=seeded_generator(config.seed, "attention")).eval()
    return recurrence, attention


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _probes(config: CompareConfig, d_out: int, T: int) -> int | None:
    """Probes for the reach estimate (None = exact), as the config asks."""
    if config.exact_reach:
        return None
    return config.probes if config.probes is not None else auto_probes(d_out, T)


def _reach(layer: torch.nn.Module, x: torch.Tensor, d_out: int, config: CompareConfig) -> Reach:
    """The reach in float64 through R copies of x and one backward (the attention's: ``query_row_reach``)."""
    layer64 = copy.deepcopy(layer).double()
    probes, seed = _probes(config, d_out, x.shape[0]), config.seed
    return measure_reach(lambda rows: _first(layer64(rows)), x.double(), probes=probes, seed=seed, batched=True)


def _reach_by_forward(layer64: ElmanRNN, x: torch.Tensor, d_out: int, config: CompareConfig) -> Reach:
    """:func:`_reach` through a float64 copy the caller made (``copy.deepcopy(layer).double()``), called through
    ``forward``: the same calls, so the same bits, and no global module hook fires (a counter's module tracker on
    another thread sees nothing of it), so it may run on the reach thread. For a layer whose ``forward`` calls no
    submodule (the Elman RNN)."""
    probes, seed = _probes(config, d_out, x.shape[0]), config.seed
    return measure_reach(lambda rows: _first(layer64.forward(rows)), x.double(), probes=probes, seed=seed,
                         batched=True)


def _given(value):
    """A measurement given as a value, or as what gives it (a ``Future``'s ``result``): the value."""
    return value() if callable(value) else value


def _trace_recurrence(rnn: ElmanRNN, x: torch.Tensor, config: CompareConfig,
                      library: torch.nn.RNN | None = None) -> dict:
    """The fields of the Elman RNN's :class:`MachineMeasurements` read on this thread (all but reach, signal and
    times): one traced pass on x (T, d_model) gives work, span and the path from x_1; one more, span only, on the
    first T // 2 tokens; ``nn.RNN`` counted; the order test (L10)."""
    T, d_model = x.shape
    library = library if library is not None else rnn.to_torch(batch_first=True).eval()
    traced = measure_pass(rnn, x, sources=(0,))  # work, span and the path from x_1: one traced pass
    with torch.no_grad():
        counted_library = count_multiplications(library, x.unsqueeze(0))  # (1, T, d_model)
        order = measure_order(rnn, x, seed=config.seed)  # an nn.Module: the engine reruns a float64 copy
    span_half = measure_pass(rnn, x[: T // 2], work=False).span
    return {"closed_form": cost.recurrence_multiplications(T, d_model, rnn.d_h), "counted": traced.work,
            "counted_library": counted_library, "projections_closed_form": 0, "projections_counted": None,
            "span": traced.span, "span_half": span_half, "path": traced.paths, "order": order,
            "key_value_order": None, "time_library": None, "time_explicit": None}


def _recurrence_signal(rnn: ElmanRNN, x: torch.Tensor, config: CompareConfig) -> SignalReading:
    """The Elman RNN's signal path from x_1 to y_T, with the config's probes."""
    return read_signal_path(rnn, x, probes=_probes(config, rnn.d_h, x.shape[0]))


def _attention_signal(layer: SelfAttention, x: torch.Tensor, config: CompareConfig) -> SignalReading:
    """Attention's signal path from x_1 to y_T (one α_T1), with the config's probes."""
    return read_signal_path(layer, x, output=_first, probes=_probes(config, layer.d_v, x.shape[0]))


def _measure_recurrence(rnn: ElmanRNN, x: torch.Tensor, config: CompareConfig,
                        reach: Reach | Callable[[], Reach] | None = None,
                        library: torch.nn.RNN | None = None,
                        signal: SignalReading | Callable[[], SignalReading] | None = None) -> MachineMeasurements:
    """Everything but the times of the Elman RNN on x (T, d_model) (:func:`_trace_recurrence`, then the reach and
    the signal path).

    Args:
        reach: the reach (from :func:`_reach`), or a thunk that gives it (a ``Future``'s ``result``), read after
            everything else; None: measured here.
        library: ``nn.RNN`` with the loop's weights (from :func:`seqlab.studies.compare_scopes.build_modules`);
            None: made here.
        signal: the signal path (from :func:`_recurrence_signal`) or a thunk that gives it; None: read here.
    """
    fields = _trace_recurrence(rnn, x, config, library)
    return MachineMeasurements(
        **fields,
        signal=_recurrence_signal(rnn, x, config) if signal is None else _given(signal),
        reach=_reach(rnn, x, rnn.d_h, config) if reach is None else _given(reach),
    )


def _trace_attention(layer: SelfAttention, x: torch.Tensor, config: CompareConfig,
                     q_k_v: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> dict:
    """The fields of self-attention's :class:`MachineMeasurements` read on this thread (all but the reaches, the
    signal and the times), on x (T, d_model); ``q_k_v``: ``layer.project(x)`` under ``no_grad`` when the caller
    has it (None: projected here)."""
    T = x.shape[0]
    library = library_attention(config.score)
    with torch.no_grad():
        projections = count_multiplications(layer.project, x)
        q, k, v = q_k_v if q_k_v is not None else layer.project(x)  # (T, d_k), (T, d_k), (T, d_v)
    # the call on Q, K, V: the scope of the work count and of the span (projections add one product in front)
    call = TracedPass(work=True, span=True).run(layer.attention, q, k, v)
    with torch.no_grad():
        layer64 = copy.deepcopy(layer).double()  # the float64 twin that resolves a change within rounding
        order = measure_order(lambda rows: layer(rows)[0], x, seed=config.seed,
                              reference=lambda rows: layer64(rows)[0])
        pairs = measure_key_value_order(lambda q_, k_, v_: layer.attention(q_, k_, v_)[0], q, k, v,
                                        seed=config.seed,
                                        reference=lambda q_, k_, v_: layer64.attention(q_, k_, v_)[0])
        # (1, 1, T, ·): with a head dimension SDPA takes its fused CPU kernel, not the math fallback
        heads = tuple(t[None, None] for t in (q, k, v))
        counted_library = count_multiplications(library, *heads) if library is not None else None
    half = T // 2
    return {
        "closed_form": cost.scored_attention_multiplications(config.score, T, layer.d_k, layer.d_v),
        "counted": call.work,
        "counted_library": counted_library,
        "projections_closed_form": cost.projection_multiplications(T, layer.d_model, layer.d_k, layer.d_v),
        "projections_counted": projections,
        "span": call.span,
        "span_half": TracedPass(work=False, span=True).run(layer.attention, q[:half], k[:half], v[:half]).span,
        "path": measure_paths(lambda rows: layer(rows)[0], x, sources=(0,)),
        "order": order,
        "key_value_order": pairs,
        "time_library": None,
        "time_explicit": None,
    }


def _measure_attention(layer: SelfAttention, x: torch.Tensor, config: CompareConfig,
                       reaches: tuple[Reach, Reach | None, Reach | None] | Callable | None = None,
                       q_k_v: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
                       signal: SignalReading | Callable[[], SignalReading] | None = None) -> MachineMeasurements:
    """Everything but the times of self-attention on x (T, d_model) (:func:`_trace_attention`, then the reaches and
    the signal path).

    Args:
        reaches: the reaches at T, T/2 and T/4 (from :func:`~seqlab.studies.compare_reach.query_row_reaches`), or a
            thunk that gives them, read after everything else; None: measured here.
        q_k_v: ``layer.project(x)`` under ``no_grad`` when the caller has it; None: projected here.
        signal: the signal path (from :func:`_attention_signal`) or a thunk that gives it; None: read here.
    """
    if reaches is None:
        reaches = query_row_reaches(layer, x, lambda n: _probes(config, layer.d_v, n), config.seed)
    fields = _trace_attention(layer, x, config, q_k_v)
    reach, reach_half, reach_quarter = _given(reaches)
    return MachineMeasurements(**fields, reach=reach, reach_half=reach_half, reach_quarter=reach_quarter,
                               signal=_attention_signal(layer, x, config) if signal is None else _given(signal))


def run_compare(tokens: Tokens, source: str, config: CompareConfig = CompareConfig(),
                progress: Callable[[int, int, str], None] | None = None) -> CompareResult:
    """Measure the recurrence against attention on ``tokens``.

    >>> from seqlab.text import tokenize
    >>> result = run_compare(tokenize("el perro muerde al cartero", "words"), "example",
    ...                      CompareConfig(d_model=8, time=False))
    >>> result.T, result.recurrence.closed_form, result.attention.closed_form  # 5*(64+64), 25*16
    (5, 640, 400)

    Args:
        tokens: the text's tokens (T = len(tokens) ≥ 2).
        source: a label for where the text came from (shown in the report).
        config: widths, score, seed and options.
        progress: called as ``progress(done, total, what)`` before each of 4 stages and at the end.

    Returns:
        A :class:`CompareResult`.

    Raises:
        SeqlabError: fewer than 2 tokens, bad widths or score, a thread count that is not an integer >= 1, or
            sizes that would not fit in memory.
    """
    idle = IdleCores()  # from here to the first stage: the first window in which a core may stand idle beside this one
    T = len(tokens)
    if T < 2:
        raise SeqlabError(N_("compare needs a text of at least 2 tokens; {source} has {T}"), source=source, T=T,
                          parameter="T")
    check_compare_size(T, config)
    if config.threads is not None:  # refused before anything is traced, not after
        require_positive_int("threads", config.threads)
    recurrence, attention = _build(config)
    x = embed(tokens, recurrence.d_model, seed=config.seed)  # (T, d_model)
    d_model, d_h, d_k, d_v = config.widths()
    probes = _probes(config, d_h, T)
    said = progress or (lambda done, total, what: None)
    with fixed_threads(1):
        # Two threads, one CPU thread each. This one builds, traces and counts (Python-bound); beside it, from the
        # start, the aside worker takes the float64 work (BLAS-bound, mostly without the GIL) on copies of the
        # modules, from the first job given: the reaches, the spectral radius, the signal paths; once its own work is
        # done this thread takes, from the last, the jobs the worker has not begun. The worker starts at the first stage
        # that finds a core idle beside this thread (IdleCores; at once where that cannot be read): on a machine whose
        # other processes keep every core busy it would only take turns with this thread, at a higher CPU cost, and
        # every job then runs here, in help(). The recurrent machines are traced
        # first: attention's softmax is costed on the meta device, whose first op imports torch._dynamo, after which
        # every dispatch mode pays Dynamo's wrapper per op.
        with AsideWork() as aside:
            def step(done: int, total: int, what: str) -> None:
                aside.start_if_idle(idle)  # the worker starts at the first stage that finds a core idle beside this one
                said(done, total, what)

            said(0, 4, "recurrence")
            rec_reach = aside.add(_reach_by_forward, copy.deepcopy(recurrence).double(), x, d_h, config)
            gated_modules = {cell: build_gated(cell, d_model, d_h, seeded_generator(config.seed, cell))
                             for cell in (CELLS if config.gated else ())}
            reaches = {cell: aside.add(gated_reach, copy.deepcopy(module), x, seed=stream_seed(config.seed, cell),
                                       probes=probes)
                       for cell, module in gated_modules.items()}
            att_reaches = aside.add(query_row_reaches, copy.deepcopy(attention), x, lambda n: _probes(config, d_v, n),
                                    config.seed)
            radius = aside.add(spectral_radius, recurrence.weight_hh.detach().clone())
            rec_signal = aside.add(_recurrence_signal, copy.deepcopy(recurrence), x, config)
            att_signal = aside.add(_attention_signal, copy.deepcopy(attention), x, config)
            modules = build_modules(recurrence, attention, gated_modules, config.score,
                                    seeded_generator(config.seed, "output"), seeded_generator(config.seed, "heads"))
            with torch.no_grad():
                q_k_v = attention.project(x)  # (T, d_k), (T, d_k), (T, d_v): counted, traced and timed from here
            aside.start_if_idle(idle)  # the first window: building the machines
            rec_fields = _trace_recurrence(recurrence, x, config, library=modules.rnn)
            step(1, 4, "LSTM and GRU")
            gated_traces = {cell: trace_gated(cell, module, x, seed=stream_seed(config.seed, cell),
                                              path_width=config.path_width)
                            for cell, module in gated_modules.items()}
            with torch.no_grad():  # their kernels' scope, counted before Dynamo's wrapper comes (see above)
                gated_cpu = count_gated(gated_modules, x)
            step(2, 4, "attention and scopes")
            att_fields = _trace_attention(attention, x, config, q_k_v=q_k_v)
            with torch.no_grad():
                scopes = measure_scopes(modules, x, config.score, rec_fields["counted"], att_fields["counted"],
                                        rec_fields["counted_library"], att_fields["counted_library"],
                                        (d_model, d_h, d_k, d_v), q_k_v, gated_cpu)
            aside.help()
            rec = MachineMeasurements(**rec_fields, reach=rec_reach(), signal=rec_signal())
            gated = tuple(measure_gated(cell, module, x, seed=stream_seed(config.seed, cell), probes=probes,
                                        path_width=config.path_width, reach=reaches[cell],
                                        traced=gated_traces[cell])
                          for cell, module in gated_modules.items())
            reach, reach_half, reach_quarter = att_reaches()
            att = MachineMeasurements(**att_fields, reach=reach, reach_half=reach_half, reach_quarter=reach_quarter,
                                      signal=att_signal())
            radius = radius()
        sensitivity = measure_sensitivity(
            recurrence, "weight_hh", x, reach=rec.reach.first, draws=config.sensitivity_draws, seed=config.seed,
            probes=probes, probe_seed=config.seed) if radius > 1 and config.sensitivity_draws > 0 else None
    result = CompareResult(
        source=source,
        tokenizer=tokens.tokenizer,
        T=T,
        d_model=d_model,
        d_h=d_h,
        d_k=d_k,
        d_v=d_v,
        score=config.score,
        seed=config.seed,
        spectral_radius=radius,
        work_ratio=Fraction(att.closed_form, rec.closed_form),
        crossover=cost.scored_crossover_length(config.score, d_model, d_h, d_k, d_v),
        recurrence=rec,
        attention=att,
        threads=torch.get_num_threads(),
        torch_version=torch.__version__,
        scopes=scopes,
        gated=gated,
        heads=modules.heads.heads if modules.heads is not None else None,
        sensitivity=sensitivity,
    )
    said(3, 4, "time")
    if config.time:
        result = time_modules(result, modules, x, config.min_run_time, config.time_explicit, config.threads, q_k_v)
    said(4, 4, "done")
    return result
