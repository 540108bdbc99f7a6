"""The rows of ``seqlab table1 --modern``: which machine each row builds, and the big-O each column expects.

Three groups of rows (issue 15, item 2):

* the lesson's machines — the Elman RNN (L1, L3, L5) and causal self-attention on its math path (L2, L4, L6);
* the paper's other rows already in ``seqlab table1`` — contiguous and dilated convolution, restricted
  attention (Vaswani et al. 2017, Table 1);
* the mixers of :mod:`seqlab.layers` that brought recurrence back — linear attention in its parallel,
  recurrent and chunked forms (Katharopoulos et al. 2020, §3.2–3.4), a diagonal linear recurrence
  (S4D / LRU) and a selective one (Mamba) as a loop and as a parallel associative scan (Hillis & Steele 1986;
  Blelloch 1990, §1.4), and sliding-window attention (Beltagy et al. 2020, §3.1).

Every row states, per column, the big-O in T (or in the decoded position t) and where it comes from;
:class:`~seqlab.studies.table1_results.Growth` turns it into the exponent (or logarithm) a fit must show.
The mixers' rows come from the one registry, :mod:`seqlab.layers.mixers` (a new mixer registers there and
its rows appear here). A mixer's module is imported when its row is built, so a row whose optional package
is not installed is reported as missing, never invented; a broken mixer module raises its ImportError.
:func:`build_machine` makes the module a row measures.

Shapes: T positions, t the decoded position, d = d_model = d_k = d_v = d_h, k kernel, r window, C chunk,
w sliding window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.fit import Steps
from seqlab.layers import mixers
from seqlab.layers.mixers import EVERY_LENGTH, N_, Regime
from seqlab.studies.table1_results import CONSTANT, LINEAR, LOGARITHMIC, QUADRATIC, Growth

__all__ = ["ROWS", "Machine", "RowSpec", "WithOutputProjection", "build_machine", "modern_rows", "row_available"]


@dataclass(frozen=True)
class RowSpec:
    """One row: its group, the paper/lesson row of ``seqlab table1`` it reuses (if any), and per column the
    big-O as printed with the growth it means. ``decode`` and ``state`` are None for a layer without a step API.
    """

    group: str
    table1_layer: str | None
    work: tuple[str, Growth]
    span: tuple[str, Growth]
    path: tuple[str, Growth]
    memory: tuple[str, Growth]
    decode: tuple[str, Growth] | None
    state: tuple[str, Growth] | None
    source: str


_L, _P, _M = "lesson", "paper", "mixer"
_FIXED_ROWS: dict[str, RowSpec] = {
    "elman": RowSpec(_L, "rnn", ("O(T·d²)", LINEAR), ("O(T)", LINEAR), ("O(T)", LINEAR), ("O(T·d)", LINEAR),
                     ("O(d²)", CONSTANT), ("O(d)", CONSTANT), "L1, L3, L5; Vaswani et al. 2017, Table 1"),
    "self_attention": RowSpec(_L, "self_attention", ("O(T²·d)", QUADRATIC), ("O(1)", CONSTANT), ("O(1)", CONSTANT),
                              ("O(T²)", QUADRATIC), ("O(t·d)", LINEAR), ("O(t·d)", LINEAR),
                              "L2, L4, L6; Vaswani et al. 2017, Table 1; §3.2"),
    "convolution": RowSpec(_P, "convolution", ("O(k·T·d²)", LINEAR), ("O(1)", CONSTANT), ("O(T/k)", LINEAR),
                           ("O(T·d)", LINEAR), None, None, "Vaswani et al. 2017, Table 1"),
    "dilated_convolution": RowSpec(_P, "dilated_convolution", ("O(k·T·d²)", LINEAR), ("O(1)", CONSTANT),
                                   ("O(log_k T)", LOGARITHMIC), ("O(T·d)", LINEAR), None, None,
                                   "Vaswani et al. 2017, Table 1"),
    "restricted": RowSpec(_P, "restricted", ("O(r·T·d)", LINEAR), ("O(1)", CONSTANT), ("O(T/r)", LINEAR),
                          ("O(r·T·d)", LINEAR), None, None, "Vaswani et al. 2017, Table 1"),
}
"""The lesson's rows and the paper's, in the table's order; the mixers' rows follow from the registry."""



def _stack_path(start: int, size: str, symbol: str, form: str, depth: Callable[[int], int]) -> Regime:
    """A stack's path: from the first T that one layer no longer connects, in steps of the stack's depth."""
    return Regime(start, size, symbol, Steps(form, f"layers ({symbol})", depth))


def _fixed_regimes(row: str, d: int, kernel: int, window: int) -> dict[str, Regime]:
    """The regimes of the lesson's and the paper's rows (a column not named applies at every length).

    A convolution of kernel k reaches (k − 1)/2 positions each way and restricted attention r, so one layer
    connects every position up to T = (k − 1)/2 + 1 and r + 1; past those the stack's depth
    (:func:`seqlab.layers.convolution.layers_to_connect`, :func:`seqlab.layers.restricted.layers_to_connect`)
    steps. Attention's peak holds the T×T scores only past T = 4·d (below, the T×d tensors; measured), restricted
    attention's its band of 2r + 1 slots per query past T = 2r + 1.
    """
    from seqlab.layers import convolution, restricted

    half = (kernel - 1) // 2
    if row in ("convolution", "dilated_convolution"):
        dilated = row == "dilated_convolution"
        return {"path": _stack_path(half + 2, N_("the kernel"), f"k = {kernel}", "log T" if dilated else "T",
                                    lambda T: convolution.layers_to_connect(T, kernel, dilated))}
    if row == "restricted":  # the peak holds the band of 2r + 1 slots per query once T passes it (measured)
        return {"path": _stack_path(window + 2, N_("the restriction"), f"r = {window}", "T",
                                    lambda T: restricted.layers_to_connect(T, window)),
                "memory": Regime(2 * window + 2, N_("the restriction"), f"r = {window}")}
    if row == "self_attention":
        return {"memory": Regime(4 * d, N_("the width"), f"d = {d}")}
    return {}


_GROWTHS = {"constant": CONSTANT, "linear": LINEAR, "quadratic": QUADRATIC, "logarithmic": LOGARITHMIC}


def _mixer_spec(row: mixers.MixerRow) -> RowSpec:
    """A registered mixer's row as a :class:`RowSpec` (its big-O strings turned into growths)."""
    def column(entry: tuple[str, str]) -> tuple[str, Growth]:
        return entry[0], _GROWTHS[entry[1]]
    return RowSpec(_M, None, column(row.work), column(row.span), column(row.path), column(row.memory),
                   column(row.decode), column(row.state), row.source)


class _Rows(Mapping[str, RowSpec]):
    """A live, read-only view of every row: the lesson's and the paper's, then each registered mixer's rows."""

    def _all(self) -> dict[str, RowSpec]:
        return {**_FIXED_ROWS, **{name: _mixer_spec(row) for name, (_, row) in mixers.mixer_rows().items()}}

    def __getitem__(self, row: str) -> RowSpec:
        return self._all()[row]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


#: Every row, in the table's order: the lesson's, the paper's, then the mixers' (:mod:`seqlab.layers.mixers`).
ROWS: Mapping[str, RowSpec] = _Rows()


def modern_rows() -> tuple[str, ...]:
    """The mixers' rows, in the table's order (their modules may not all be installed).

    >>> modern_rows()[-1]
    'mamba_scan'
    """
    return tuple(mixers.mixer_rows())


def row_available(row: str) -> bool:
    """Whether a row can be built here (the lesson's and the paper's always can; a mixer's unless a package
    it requires is missing; a mixer whose own module is broken raises its ImportError).

    >>> row_available("elman")
    True
    """
    rows = mixers.mixer_rows()
    return row not in rows or rows[row][0].available()


class WithOutputProjection(torch.nn.Module):
    """An attention layer (``attention(x)`` -> (outputs, weights)) followed by its output projection W_O, d_v -> d.

    Every Transformer layer maps the mixed values back to d_model with W^O (Vaswani et al. 2017, §3.2.2), as every
    mixer of :mod:`seqlab.layers.mixers` does with its ``o_proj`` / ``out_proj``; with it the attention rows count
    in-projections + mixing + W_O like the mixers' rows. Bias-free, drawn from ``generator``.

    >>> from seqlab.layers.attention import SelfAttention
    >>> layer = WithOutputProjection(SelfAttention(4), torch.Generator().manual_seed(0))
    >>> layer(torch.zeros(1, 3, 4)).shape, tuple(layer.o_proj.weight.shape)  # (1, T, d_model); W_O (d_model, d_v)
    (torch.Size([1, 3, 4]), (4, 4))
    """

    def __init__(self, attention: torch.nn.Module, generator: torch.Generator | None) -> None:
        from seqlab.layers.mixer_common import linear

        super().__init__()
        self.attention = attention
        self.o_proj = linear(attention.d_v, attention.d_model, generator, attention.q_proj.weight.dtype)

    def forward(self, x: Tensor) -> Tensor:
        """y (…, T, d_model) = attention(x) W_Oᵀ for x (…, T, d_model)."""
        return self.o_proj(self.attention(x)[0])  # (…, T, d_v) -> (…, T, d_model)


class StepWithOutputProjection(torch.nn.Module):
    """A decoder's step followed by the layer's output projection W_O (d_v -> d_model), state handed on unchanged.

    The decode column then counts the same scope as the work column: a KV-cache step of the attention row projects
    its mixed value back to d_model, as every mixer's step does with its ``o_proj`` (Vaswani et al. 2017, §3.2.2).

    >>> from seqlab.layers.attention import SelfAttention
    >>> from seqlab.layers.decoding import KVCacheDecoder
    >>> g = torch.Generator().manual_seed(0)
    >>> layer = WithOutputProjection(SelfAttention(4, causal=True, generator=g), g)
    >>> step = StepWithOutputProjection(KVCacheDecoder(layer.attention), layer.o_proj)
    >>> y, state = step.step(torch.zeros(1, 4), step.initial_state(1))
    >>> y.shape, state[0].shape  # (B, d_model), keys (B, t, d_k)
    (torch.Size([1, 4]), torch.Size([1, 1, 4]))
    """

    def __init__(self, decoder: Any, o_proj: torch.nn.Linear) -> None:
        super().__init__()
        self.decoder, self.o_proj = decoder, o_proj
        self.d_model = decoder.d_model

    def initial_state(self, batch: int, **options: Any) -> tuple[Tensor, ...]:
        """The wrapped decoder's empty state (see its ``initial_state``)."""
        return self.decoder.initial_state(batch, **options)

    def state_from_prefix(self, prefix: Tensor) -> tuple[Tensor, ...]:
        """The wrapped decoder's state after ``prefix`` (B, t-1, d_model)."""
        return self.decoder.state_from_prefix(prefix)

    def step(self, x_t: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        """y_t (B, d_model) = step(x_t) W_Oᵀ for x_t (B, d_model); the state as the wrapped step hands it on."""
        y, state = self.decoder.step(x_t, state)  # (B, d_v)
        return self.o_proj(y), state


@dataclass(frozen=True)
class Machine:
    """A row built at width d: the one layer (x (1, T, d) -> y), its closed-form work at T, the step API.

    Attributes:
        layer: the whole layer's forward, projections included, returning the output tensor.
        closed_form: T -> multiplications of ``layer`` by its closed form (same scope).
        decoder: an object with ``initial_state`` / ``step`` (None: the layer has no step API here).
        decode_machine: the machine name of :mod:`seqlab.measure.decode` measuring the decoder, or None when
            the table measures the decoder's step itself.
        step_closed_form: t -> multiplications of the step generating position t by the module's closed form (None: none offered,
            or measured through ``decode_machine``, which brings its own).
        stack: T -> (x -> every layer's output) of the stack that connects all T positions, when one layer
            does not (None: one layer connects them).
        regimes: column -> where its big-O applies (:class:`~seqlab.layers.mixers.Regime`; see :meth:`regime`).
        module: the ``torch.nn.Module`` behind ``layer``, whose declared transition factors the signal path scales
            (:mod:`seqlab.measure.signal_path`); None when the row has none to offer.
        module_output: picks the (1, T, d) output from what ``module`` returns (None: the return value itself).
    """

    layer: Callable[[Tensor], Tensor]
    closed_form: Callable[[int], int]
    decoder: Any
    decode_machine: str | None
    step_closed_form: Callable[[int], int] | None = None
    stack: Callable[[int], Callable[[Tensor], list[Tensor]]] | None = None
    regimes: Mapping[str, Regime] = field(default_factory=dict)
    module: torch.nn.Module | None = None
    module_output: Callable[[Any], Tensor] | None = None

    def regime(self, column: str) -> Regime:
        """Where the big-O of ``column`` applies (:data:`~seqlab.layers.mixers.EVERY_LENGTH` unless the row says)."""
        return self.regimes.get(column, EVERY_LENGTH)


def build_machine(row: str, d: int, *, kernel: int, window: int, chunk: int, seed: int = 0) -> Machine:
    """Build ``row`` at width d (weights from ``seed``, eval mode, float32).

    >>> machine = build_machine("elman", 4, kernel=3, window=2, chunk=4)
    >>> machine.layer(torch.zeros(1, 8, 4)).shape, machine.closed_form(8), machine.decode_machine
    (torch.Size([1, 8, 4]), 256, 'elman')

    Raises:
        SeqlabError: an unknown row, or a mixer whose module is not installed.
    """
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.convolution import ConvolutionStack
    from seqlab.layers.restricted import RestrictedSelfAttention
    from seqlab.measure.decode import build_decoder

    if row not in ROWS:
        raise SeqlabError(N_("row must be one of {rows}; received {row!r}"), rows=', '.join(ROWS), row=row,
                          parameter="row")
    generator = torch.Generator().manual_seed(seed)
    if row == "elman":
        decoder = build_decoder("elman", d, seed=seed)
        return Machine(decoder.rnn, lambda T: cost.recurrence_multiplications(T, d, d), decoder, "elman",
                       module=decoder.rnn)
    regimes = _fixed_regimes(row, d, kernel, window)
    if row == "self_attention":  # Q, K, V, the call and W_O, as the mixers count theirs
        attention = WithOutputProjection(SelfAttention(d, causal=True, generator=generator), generator).eval()
        decoder = StepWithOutputProjection(build_decoder("attention_kv_cache", d, seed=seed), attention.o_proj)
        return Machine(attention, lambda T: cost.attention_layer_multiplications(T, d, d, d), decoder, None,
                       lambda t: cost.kv_cache_layer_step_multiplications(t, d, d, d), regimes=regimes,
                       module=attention)
    if row in ("convolution", "dilated_convolution"):
        one = ConvolutionStack(d, kernel, layers=1, generator=generator).eval()
        return Machine(one, lambda T: cost.convolution_multiplications(T, d, kernel), None, None, regimes=regimes,
                       module=one)
    if row == "restricted":
        one = WithOutputProjection(RestrictedSelfAttention(d, window, generator=generator), generator).eval()
        return Machine(one, lambda T: cost.restricted_attention_layer_multiplications(T, window, d, d, d), None, None,
                       regimes=regimes, module=one)
    return _build_mixer(row, d, window=window, chunk=chunk, generator=generator)


def _build_mixer(row: str, d: int, *, window: int, chunk: int, generator: torch.Generator) -> Machine:
    mixer, spec = mixers.mixer_rows()[row]
    if not mixer.available():
        raise SeqlabError(N_("the row {row!r} needs {requires}, which is not installed here"), row=row,
                          requires=', '.join(mixer.requires), parameter="row")
    sizes = {"window": window, "chunk": chunk}
    module = mixer.build(d, generator=generator, **sizes, **spec.options)
    machine = mixer.name if mixer.decode is not None else None
    step_form = None
    if mixer.step_multiplications is not None:  # the row's own module (its options may differ from the machine's)
        step_form = lambda t: mixer.step_multiplications(module)  # noqa: E731  (a fixed state: the same at every t)
    stack = None
    if mixer.connecting_depth is not None:
        def stack(T: int) -> Callable[[Tensor], list[Tensor]]:
            """The stack of :attr:`~seqlab.layers.mixers.Mixer.connecting_depth` layers that connects 1 to T."""
            depth = mixer.connecting_depth(T, window)
            layers = [module] + [mixer.build(d, generator=generator, **sizes, **spec.options)
                                 for _ in range(depth - 1)]

            def forward_all(x: Tensor) -> list[Tensor]:
                outputs = []
                for layer in layers:
                    x = layer(x)  # (1, T, d)
                    outputs.append(x)
                return outputs
            return forward_all
    regimes = {column: regime(module) for column, regime in spec.regimes.items()}
    return Machine(module, module.multiplications, module, machine, step_form, stack, regimes, module=module)
