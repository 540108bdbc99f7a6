"""``seqlab profile``: Table 1's three measurements on any sequence module of your own (L1–L4).

Given a module that maps x (B, T, d) to y (B, T, d_out) — or to a tuple, list or mapping holding y, the element
measured named in the result (``output`` chooses another) — this measures, on one traced forward pass
(:func:`~seqlab.measure.traced_pass.measure_pass`; more passes only when many sources' distances do not fit in
one):

* **work** — multiplications counted while it runs (as :func:`~seqlab.measure.work.count_multiplications`
  counts them: one per multiply-add; ops that may multiply but have no formula are named, never counted as 0);
* **span** — the longest chain of dependent ops, in ops and in matrix products
  (as :func:`~seqlab.measure.trace.measure_span`; fused kernels are switched off and any that still ran
  are named);
* **path** — least products and ops between input and output positions
  (as :func:`~seqlab.measure.paths.measure_paths`), summarised as the longest path among the measured
  sources and the path from position 0 to T - 1; ops without a path rule are named;

  (a module holding PyTorch's Transformer fast path, :data:`~seqlab.measure.switches.FAST_PATH_MODULES`, has its
  work counted in a pass of its own under the default kernels: that path can skip the padding of a batch, and
  the count is of what runs by default);
* **signal path** — beside that graph path, the transition factors a signal from x_1 meets on its way to y_T and
  the reach ‖∂y_T/∂x_1‖ (:func:`~seqlab.measure.signal_path.read_signal_path`, float64), where the module (or a
  submodule) declares its factor; a module that declares none (``nn.RNN``, a Hugging Face layer, yours) gets no
  reading, named as absent.

The module is measured in eval mode (dropout would change each pass) and every submodule's
``training`` flag is put back as it was (:func:`~seqlab.measure.switches.evaluation_mode`; an eval-mode
child of a training model stays in eval mode), also when two threads profile at once; the global
switches the traces change (fast paths, oneDNN, SDPA backends) come back the same way. The traces
are counts, not times, and run on one CPU thread (the caller's setting is restored): their many small
tensors go much faster that way. If the trace fails inside PyTorch or the engine, the
error names the ATen op that was running (or the last one that ran), so you know what to rewrite or
report: the trace that failed runs once more under a recorder of ops, so a trace that succeeds pays nothing for it.

Where x holds its positions is found before anything is traced, by
:func:`~seqlab.measure.layout.find_positions`. A channels-first (B, d, T) layer is measured on its positions with
the dims moved; a sequence-first module needs its (T, B, d) layout named, and so does T = d where the shapes cannot
tell; a 2-D x (no batch dim) is refused. The result names the layout and how it was found.

``seqlab profile mymod:factory`` finds ``mymod.py`` in the current folder, as ``python -m`` would
(:func:`current_folder_importable`).

Shapes: B batch, T positions, d input width, d_out output width, S measured source positions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import torch
from torch import Tensor

from seqlab.measure.layout import POSITIONS_DIM, Positions, check_layout, find_positions
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.layout import check_positions_layout
from seqlab.measure.modes import EngineMode
from seqlab.measure.ops import op_name
from seqlab.measure.perturbation import PerturbationCheck
from seqlab.measure.signal_path import SignalReading, read_signal_path
from seqlab.measure.switches import evaluation_mode, has_fast_path
from seqlab.measure.timing import fixed_threads
from seqlab.measure.traced_pass import measure_pass
from seqlab.measure.work import count_multiplications
from seqlab.studies.notebook_view import NotebookView

__all__ = ["PathSummary", "ProfileResult", "build_from_factory", "current_folder_importable", "input_for",
           "load_factory", "profile"]


@dataclass(frozen=True)
class PathSummary:
    """What the path matrix says, in both units.

    Attributes:
        sources: input positions measured (0-based).
        longest_products, longest_ops: the longest least-path over every measured source and every
            output position that depends on it (Table 1's "maximum path length"); None if no output
            depends on any measured source.
        first_to_last_products, first_to_last_ops: from input position 0 to output position T - 1
            (None when y_{T-1} does not depend on x_0).
        last_to_first_products, last_to_first_ops: from T - 1 back to 0 (None for a causal module).
        fallbacks: ops the path engine **refused** (no rule, no decomposition, no Jacobian it could take),
            treated as all-to-all (name → calls). When any was refused the path figures above are **lower
            bounds** (an all-to-all op can only add dependence and shorten paths; "not connected" stays
            exact) and :attr:`exact` is False: every report says so instead of printing them as measured.
        undefined: output positions (0-based) whose value is NaN (:attr:`PathMatrix.undefined
            <seqlab.measure.paths.PathMatrix.undefined>`): no path is reported to them, never "depends".
        decomposed: ops traced through PyTorch's decompositions; derived: ops whose dependence came from their
            own Jacobian at this input (name → calls). Both exact.
        exact: no op was refused and the perturbation check agrees: the path figures are measurements.
        check: the perturbation check of the path matrix (:class:`~seqlab.measure.perturbation.PerturbationCheck`;
            None when it did not run): what moves when a traced source moves, against what the trace says.
    """

    sources: tuple[int, ...]
    longest_products: int | None
    longest_ops: int | None
    first_to_last_products: int | None
    first_to_last_ops: int | None
    last_to_first_products: int | None
    last_to_first_ops: int | None
    fallbacks: dict[str, int]
    undefined: tuple[int, ...] = ()
    decomposed: dict[str, int] = field(default_factory=dict)
    derived: dict[str, int] = field(default_factory=dict)
    exact: bool = True
    check: PerturbationCheck | None = None


@dataclass(frozen=True)
class ProfileResult(NotebookView):
    """The three measurements of one module on one input.

    Attributes:
        module: the module's class name.
        shape: the input's shape as given; T its positions, d_model its width (read in its :attr:`layout`).
        multiplications: counted (multiply-adds; FLOPs are 2×); by_op: per op name.
        unaccounted: ops that ran and may multiply but have no formula (name → calls).
        span_ops, span_products: the longest chain in ops and in matrix products.
        total_ops, total_products: every compute op and product of the pass (work in ops).
        fused: fused kernels that still ran as one op, their inner chain unseen (name → calls).
        path: :class:`PathSummary`.
        dtype: the input's dtype; threads: CPU threads the traces ran on (1); torch_version.
        padded_multiplications: when the module ran on nested tensors (``nn.TransformerEncoder``'s fast path
            with a padding mask), ``multiplications`` counts real tokens and this the bound with every
            sequence padded to the longest; None when no nested tensor ran.
        signal: the signal path from x_1 to y_T (:class:`~seqlab.measure.signal_path.SignalReading`: absent, and
            named, when the module declares no transition factor).
        layout: where x holds its positions, a key of :data:`~seqlab.measure.layout.LAYOUTS` (``"btd"`` (B, T, d),
            ``"bdt"`` (B, d, T) channels first, ``"tbd"`` (T, B, d) sequence first); the dims are moved so that
            the positions are measured, never the channels.
        layout_found: how: ``"named"`` (the ``layout`` argument), ``"shapes"`` (the one dim of x whose length the
            output follows), ``"as_given"`` (the shapes cannot tell and T ≠ d: x read as documented, (B, T, d)).
        output_index: which element of a tuple, list or mapping the module returns was measured (None: it returns
            one tensor); output_key: that element's key in a mapping (a Hugging Face output's field), else None;
            output_count: the container's length (None for a tensor).
        output_shape: the measured output's shape as the module returned it.
    """

    module: str
    shape: tuple[int, ...]
    T: int
    d_model: int
    multiplications: int
    by_op: dict[str, int]
    unaccounted: dict[str, int]
    span_ops: int
    span_products: int
    total_ops: int
    total_products: int
    fused: dict[str, int]
    path: PathSummary
    dtype: str
    threads: int
    torch_version: str
    padded_multiplications: int | None = None
    signal: SignalReading | None = None
    layout: str = "btd"
    layout_found: str = "shapes"
    output_index: int | None = None
    output_key: str | None = None
    output_count: int | None = None
    output_shape: tuple[int, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every op was counted, traced and given a path rule."""
        return not (self.unaccounted or self.fused or self.path.fallbacks)


class _OpRecorder(EngineMode):
    """Remembers the ATen op being dispatched (``current``) and the last one that finished (``last``)."""

    supports_higher_order_operators = True  # passed on whole to the engine's mode, named while it runs

    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None
        self.last: str | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.current = op_name(func)
        out = func(*args, **(kwargs or {}))
        self.last, self.current = self.current, None
        return out


def _first(output: object) -> object:
    return output[0] if isinstance(output, tuple) and output else output


@dataclass(frozen=True)
class _Output:
    """Which tensor of a module's return value is measured: the value itself, or one element of a container."""

    index: int | None  # position in the tuple, list or mapping; None: the module returns a tensor
    key: str | None  # the mapping's key (a Hugging Face ModelOutput's field name), None for a sequence
    count: int | None  # elements in the container

    def __call__(self, returned: Any) -> Any:
        if self.index is None:
            return returned
        if isinstance(returned, Mapping):
            return returned[self.key] if self.key is not None else list(returned.values())[self.index]
        return returned[self.index]


def _output_of(module: object, returned: object, output: int | str | None) -> _Output:
    """The :class:`_Output` that ``output`` (None: the first element) names in ``returned``, checked to be a tensor."""
    name = type(module).__name__
    if isinstance(returned, Tensor):
        if output not in (None, 0):
            raise SeqlabError(N_("output {output!r} names an element, but {module_class} returns one tensor; leave "
                                 "output out"), output=output, module_class=name, parameter="output")
        return _Output(None, None, None)
    if isinstance(returned, Mapping):
        keys = [str(key) for key in returned]
        index = keys.index(output) if isinstance(output, str) and output in keys else output
    elif isinstance(returned, (tuple, list)):
        keys, index = None, output
    else:
        raise SeqlabError(N_("{module_class} must return a tensor, or a tuple, list or mapping of them; received "
                             "{kind}"), module_class=name, kind=type(returned).__name__, parameter="module")
    count = len(returned)
    index = 0 if index is None else index
    if (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count) and keys:
        raise SeqlabError(N_("output must be an index in [0, {last}] or a key ({keys}) of what {module_class} "
                             "returns; received {output!r}"), last=count - 1, keys=", ".join(keys), module_class=name,
                          output=output, parameter="output")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise SeqlabError(N_("output must be an index in [0, {last}] of what {module_class} returns; received "
                             "{output!r}"), last=count - 1, module_class=name, output=output, parameter="output")
    chosen = _Output(index, keys[index] if keys else None, count)
    element = chosen(returned)
    if not isinstance(element, Tensor):
        raise SeqlabError(N_("output {index} of {module_class} is a {kind}, not a tensor; choose another with "
                             "output"), index=index, module_class=name, kind=type(element).__name__,
                          parameter="output")
    return chosen


class _Measured(torch.nn.Module):
    """The user's module as the engine reads it: x (B, T, d) in, the chosen output with its positions on dim -2 out.

    Moving dims is a view (no op is counted or traced as computation); a (B, T, d) module whose output keeps its
    positions on dim -2 runs exactly as it is.
    """

    def __init__(self, module: Callable[..., Any], positions: Positions, select: _Output) -> None:
        super().__init__()
        self.module = module
        self.positions, self.select = positions, select
        self.measured_name = type(module).__name__

    def forward(self, x: Tensor) -> Tensor:  # x (B, T, d) -> y (…, T, d_out)
        if self.positions.input_dim != 1:
            x = x.movedim(1, self.positions.input_dim)  # the module's own layout
        y = self.select(self.module(x))
        return y if self.positions.output_dim == y.dim() - 2 else y.movedim(self.positions.output_dim, -2)


def _traced(stage: str, module: Callable[..., Any], x: Tensor, measure: Callable[[Callable[..., Any]], Any]) -> Any:
    """Run one measurement; if it fails, raise SeqlabError naming the stage and the ATen op.

    The measurement runs on the module as it is: the op that failed is named by running the same measurement once
    more with an :class:`_OpRecorder` inside (a dispatch mode of its own costs about 9 µs per op, ENGINE-NOTES "The
    cost of measuring": paid only when the first run failed). The module is passed as a plain callable either way,
    so the measurement treats it the same in both runs.
    """
    try:
        return measure(lambda z: module(z))
    except SeqlabError as error:
        _refused(stage, module, error)
    except Exception:  # noqa: BLE001 - the same measurement once more, to name the op that fails
        return _named(stage, module, measure)


def _named(stage: str, module: Callable[..., Any], measure: Callable[[Callable[..., Any]], Any]) -> Any:
    """Run the measurement with an :class:`_OpRecorder` inside; raise SeqlabError naming the op that fails (or return
    what it measured, should it not fail again)."""
    recorder = _OpRecorder()

    def recorded(z: Tensor) -> Any:
        with recorder:  # entered inside the engine's own mode, so it sees every op first
            return module(z)

    try:
        return measure(recorded)  # fails again, now with the op in view
    except SeqlabError as error:
        _refused(stage, module, error)
    except Exception as error:  # noqa: BLE001 - any failure inside a trace is reported with its op
        name = getattr(module, "measured_name", type(module).__name__)
        if recorder.current is not None:
            where = Message(N_("op {current} failed"), current=recorder.current)
        elif recorder.last is not None:
            where = Message(N_("failed after op {last}"), last=recorder.last)
        else:
            where = Message(N_("failed before any op ran"))
        raise SeqlabError(N_("the {stage} cannot trace {name}: {where} ({error_class}: {error})"), stage=stage,
                          name=name, where=where, error_class=type(error).__name__, error=error,
                          parameter="module") from error


def _refused(stage: str, module: Callable[..., Any], error: SeqlabError) -> NoReturn:
    """Raise ``error`` again, or, when the engine refused something inside the module (a sparse tensor: parameter
    ``layer``), a SeqlabError that names the module and the stage."""
    if error.parameter != "layer":
        raise error
    raise SeqlabError(N_("the {stage} cannot trace {module_class}: {error}"), stage=stage,
                      module_class=getattr(module, "measured_name", type(module).__name__), error=error,
                      parameter="module") from error


def _check_input(module: object, x: object) -> Tensor:
    if not callable(module):
        raise SeqlabError(N_("module must be a torch.nn.Module (or callable) taking x (B, T, d), received "
                             "{module_class}"), module_class=type(module).__name__, parameter="module")
    if isinstance(x, Tensor) and x.dim() == 2:  # no batch dim: which of its two dims are positions is a guess
        raise SeqlabError(N_("x of shape {shape} has no batch dim: profile takes x (B, T, d) (or (B, d, T), (T, B, d) "
                             "with the layout named); add one with x.unsqueeze(0)"), shape=tuple(x.shape),
                          parameter="x")
    if not isinstance(x, Tensor) or x.dim() != 3 or not x.is_floating_point() or 0 in x.shape:
        got = Message(N_("{dtype} tensor of shape {shape}"), dtype=x.dtype, shape=tuple(x.shape)) \
            if isinstance(x, Tensor) else type(x).__name__
        raise SeqlabError(N_("x must be a floating tensor of shape (B, T, d) with B, T, d >= 1, received {got}"),
                          got=got, parameter="x")
    return x


def _resolve_sources(sources: Sequence[int] | str | None, T: int) -> tuple[int, ...]:
    if sources is None:
        return (0,) if T == 1 else (0, T - 1)
    if sources == "all":
        return tuple(range(T))
    if isinstance(sources, str) or not isinstance(sources, Sequence) or not sources or any(
            isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < T for s in sources):
        raise SeqlabError(N_("sources must be 'all' or positions in [0, {value}], received {sources!r}"), value=T - 1,
                          sources=sources, parameter="sources")
    return tuple(dict.fromkeys(sources))


def profile(module: Callable[..., Any], x: Tensor, *, sources: Sequence[int] | str | None = None,
            layout: str | None = None, output: int | str | None = None) -> ProfileResult:
    """Measure work, span and path of ``module`` on ``x``: Table 1's three columns for your own layer.

    >>> rnn = torch.nn.RNN(4, 4, batch_first=True)
    >>> result = profile(rnn, torch.randn(1, 6, 4))
    >>> result.multiplications, result.span_products, result.path.first_to_last_products  # 6 * (16 + 16)
    (192, 6, 6)

    A channels-first layer is measured on its positions, the dims moved (the layout is in the result):

    >>> conv = torch.nn.Conv1d(4, 4, 3, padding=2)  # (B, d, T) -> (B, d, T + 2): crop to stay causal
    >>> causal = torch.nn.Sequential(conv, torch.nn.ConstantPad1d((0, -2), 0.0))
    >>> result = profile(causal, torch.randn(1, 4, 4))  # T = d = 4: the shapes still tell
    >>> result.layout, result.layout_found, result.path.first_to_last_products, result.path.last_to_first_products
    ('bdt', 'shapes', None, None)

    Args:
        module: maps x to y (…, T, d_out), or to a tuple, list or mapping of tensors (as ``nn.RNN``'s (y, h))
            of which ``output`` is measured.
        x: (B, T, d) floating, or (B, d, T) / (T, B, d) where the module takes those (a 2-D x is refused).
        sources: input positions to measure paths from: None for the two ends 0 and T - 1 (enough for
            the layers of Table 1, and cheap), ``"all"`` for every position, or a list of positions.
            Path memory grows with their number.
        layout: None to find where x holds its positions (:func:`~seqlab.measure.layout.find_positions`: the
            module's ``batch_first``, else the one dim whose length the output follows), or ``"btd"``, ``"bdt"``,
            ``"tbd"`` to name it (needed when T = d and the shapes cannot tell, and for (T, B, d)).
        output: which element of a tuple, list or mapping output is measured: an index, or a mapping's key;
            None for the first. The result names it (:attr:`ProfileResult.output_index`).

    Returns:
        A :class:`ProfileResult`.

    Raises:
        SeqlabError: ``module`` is not callable; ``x`` is not a floating 3-D tensor (a 2-D x has no batch dim);
            the module fails on ``x`` or returns no tensor with the positions on a dim; ``output`` names no tensor
            element; ``layout`` is unknown, contradicts the module's ``batch_first``, or is needed (T = d and the
            shapes cannot tell; a ``batch_first=False`` module: it would read the positions as batch rows);
            ``sources`` are out of range; or a trace fails (the message names the op); or the path analysis would
            not fit in memory.
    """
    x = _check_input(module, x)
    layout = check_layout(layout)
    given = tuple(x.shape)
    with evaluation_mode(module), fixed_threads(1):
        threads = torch.get_num_threads()
        try:
            with torch.no_grad():
                returned = module(x)
        except Exception as error:  # noqa: BLE001 - the user's module failing on its input
            raise SeqlabError(N_("{module_class} fails on x of shape {shape}: {error_class}: {error}"),
                              module_class=type(module).__name__, shape=tuple(x.shape),
                              error_class=type(error).__name__, error=error, parameter="module") from error
        select = _output_of(module, returned, output)  # which tensor is measured, said in the result
        y = select(returned)
        # which dims hold the positions, in x and y (a sequence-first module's own flag, else the shapes): the
        # engine reads them on dim -2, so they are moved there; a (B, d, T) layer is never measured across channels
        positions = find_positions(module, x, y, layout=layout, select=select, element=select.index)
        x = x.movedim(positions.input_dim, 1).contiguous()  # (B, T, d)
        T = x.shape[-2]
        chosen = _resolve_sources(sources, T)
        canonical = positions.input_dim == 1 and positions.output_dim == y.dim() - 2
        layer = _Measured(module, positions, select)
        fast_path = has_fast_path(module)  # its fast path may skip padding: counted as it runs by default, apart
        measured = _traced(Message(N_("traced pass")), layer, x,
                           lambda run: measure_pass(run, x, sources=chosen, work=not fast_path))
        span, paths = measured.span, measured.paths
        if fast_path:
            with torch.no_grad():
                work = _traced(Message(N_("work counter")), layer, x, lambda run: count_multiplications(run, x))
        else:
            work = measured.work
        if canonical:
            signal = read_signal_path(module, x, output=select)
        else:  # read through the dims moved, under the module's own name
            signal = dataclasses.replace(read_signal_path(layer, x), module=type(module).__name__)

    def between(source: int, target: int, unit: str) -> int | None:
        return paths.row(source, unit)[target] if source in chosen else None

    summary = PathSummary(
        sources=chosen, longest_products=paths.longest("products"), longest_ops=paths.longest("ops"),
        first_to_last_products=between(0, T - 1, "products"), first_to_last_ops=between(0, T - 1, "ops"),
        last_to_first_products=between(T - 1, 0, "products"), last_to_first_ops=between(T - 1, 0, "ops"),
        fallbacks=dict(paths.fallbacks), undefined=tuple(paths.undefined), decomposed=dict(paths.decomposed),
        derived=dict(paths.derived), exact=paths.exact, check=paths.check)
    return ProfileResult(
        module=type(module).__name__, shape=given, T=T, d_model=x.shape[-1],
        multiplications=work.multiplications, by_op=dict(work.by_op), unaccounted=dict(work.unaccounted),
        span_ops=span.ops, span_products=span.products, total_ops=span.total_ops,
        total_products=span.total_products, fused=dict(span.fused), path=summary,
        dtype=str(x.dtype).removeprefix("torch."), threads=threads, torch_version=torch.__version__,
        padded_multiplications=work.padded_multiplications, signal=signal, layout=positions.layout,
        layout_found=positions.found, output_index=select.index, output_key=select.key, output_count=select.count,
        output_shape=tuple(y.shape))


@contextlib.contextmanager
def current_folder_importable() -> Iterator[None]:
    """The current folder first on ``sys.path`` for the block, as ``python -m`` puts it; removed after.

    Only an entry this block added is removed (``sys.path`` is otherwise left as it was); a module imported
    inside stays in ``sys.modules``, so its own later imports from the folder have happened already or
    run inside :func:`build_from_factory`, which holds the folder on the path while the factory runs.

    >>> import os, sys
    >>> with current_folder_importable():
    ...     os.getcwd() in [os.path.abspath(entry or os.curdir) for entry in sys.path]
    True
    """
    folder = os.getcwd()
    present = any(_same_folder(entry, folder) for entry in sys.path)
    if not present:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if not present and folder in sys.path:
            sys.path.remove(folder)


def _same_folder(entry: str, folder: str) -> bool:
    """A ``sys.path`` entry naming ``folder`` ("" is the current folder, as Python reads it)."""
    return isinstance(entry, str) and os.path.abspath(entry or os.curdir) == folder


def load_factory(spec: str) -> Callable[[int], Any]:
    """Import ``module.path:attribute`` or ``path/to/file.py:attribute`` and return the attribute, a factory
    called with d_model (the text read by :func:`seqlab.factory.parse_factory`).

    A dotted module is looked up as ``python -m`` would: the current folder first, then ``sys.path``
    (so Where x holds its positions is found before anything is traced, by
:func:`~seqlab.measure.layout.find_positions`. A channels-first (B, d, T) layer is measured on its positions with
the dims moved; a sequence-first module needs its (T, B, d) layout named, and so does T = d where the shapes cannot
tell; a 2-D x (no batch dim) is refused. The result names the layout and how it was found.

``seqlab profile mymod:factory`` finds ``mymod.py`` in the folder it runs from). A file is loaded from
    its path (``importlib.util.spec_from_file_location``) with its own folder first on ``sys.path`` while it
    runs, as ``python path/to/file.py`` would, so it can import the modules beside it.

    >>> load_factory("torch.nn:Identity")
    <class 'torch.nn.modules.linear.Identity'>

    Raises:
        SeqlabError: the text is not ``module:attribute``, the file is missing or unreadable, the module cannot
            be imported, it has no such attribute, or the attribute is not callable.
    """
    from seqlab.factory import parse_factory

    parsed = parse_factory(spec)
    module_name, attribute = parsed.module, parsed.attribute
    try:
        if parsed.file is not None:
            imported = _module_from_file(parsed.file)
        else:
            with current_folder_importable():
                imported = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - ImportError, or whatever the imported module raises
        raise SeqlabError(N_("cannot import {module_name!r} from {spec!r}: {error_class}: {error}"),
                          module_name=module_name, spec=spec, error_class=type(error).__name__, error=error,
                          parameter="factory") from error
    factory: Any = imported
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise SeqlabError(N_("{module_name!r} has no attribute {attribute!r} (from {spec!r})"),
                              module_name=module_name, attribute=attribute, spec=spec, parameter="factory")
        factory = getattr(factory, part)
    if not callable(factory):
        raise SeqlabError(N_("{spec!r} is a {factory_class}, not a callable factory"), spec=spec,
                          factory_class=type(factory).__name__, parameter="factory")
    return factory


def _module_from_file(path) -> Any:
    """Execute the Python file ``path`` as a module of its own (named after the file, under ``seqlab_factory_``,
    registered in ``sys.modules`` so dataclasses and pickling inside it work), its folder first on ``sys.path``
    while it runs."""
    import importlib.util

    resolved = path.resolve()
    name = f"seqlab_factory_{resolved.stem}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise ImportError(f"no loader for {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    folder = str(resolved.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def build_from_factory(spec: str, d_model: int) -> torch.nn.Module:
    """``load_factory(spec)(d_model)``, checked to be a module.

    Raises:
        SeqlabError: as :func:`load_factory`; the factory fails; or it returns no ``nn.Module``.
    """
    d_model = require_positive_int("d_model", d_model)
    factory = load_factory(spec)
    try:
        with current_folder_importable():
            module = factory(d_model)
    except Exception as error:  # noqa: BLE001 - the user's factory failing
        raise SeqlabError(N_("{spec}({d_model}) failed: {error_class}: {error}"), spec=spec, d_model=d_model,
                          error_class=type(error).__name__, error=error, parameter="factory") from error
    if not isinstance(module, torch.nn.Module):
        raise SeqlabError(N_("{spec}({d_model}) must return a torch.nn.Module, received {module_class}"), spec=spec,
                          d_model=d_model, module_class=type(module).__name__, parameter="factory")
    return module


def input_for(module: Callable[..., Any], *, batch: int, seq_len: int, d_model: int, layout: str | None = None,
              seed: int = 0) -> Tensor:
    """A seeded random input for ``module`` of B sequences of T positions and width d, in the module's layout.

    The values are those of ``torch.randn(B, T, d)`` from a generator seeded with ``seed``, with the dims moved to
    ``layout`` ((B, T, d) when None). When no layout is named and T ≠ d, a module that fails on (B, T, d) but runs
    on (B, d, T) (a channels-first layer) gets (B, d, T): with d known the shapes tell the layout;
    :func:`profile` then checks it (:func:`~seqlab.measure.layout.find_positions`). At T = d both read the same.

    >>> input_for(torch.nn.Conv1d(4, 4, 1), batch=1, seq_len=6, d_model=4).shape
    torch.Size([1, 4, 6])

    Raises:
        SeqlabError: ``layout`` is not one of :data:`~seqlab.measure.layout.LAYOUTS`.
    """
    layout = check_layout(layout)
    x = torch.randn(batch, seq_len, d_model, generator=torch.Generator().manual_seed(seed))  # (B, T, d)
    if layout is None and seq_len != d_model:
        channels_first = x.transpose(1, 2).contiguous()  # (B, d, T)
        return channels_first if not _runs(module, x) and _runs(module, channels_first) else x
    return x.movedim(1, POSITIONS_DIM[layout or "btd"]).contiguous()


def _runs(module: Callable[..., Any], x: Tensor) -> bool:
    """Whether ``module`` runs on ``x`` (eval mode, no gradients); a failure is the answer, never raised."""
    with evaluation_mode(module), torch.no_grad():
        try:
            module(x)
        except Exception:  # noqa: BLE001 - a layout the module does not take
            return False
    return True
