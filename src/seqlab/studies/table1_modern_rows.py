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
A mixer's module is imported when its row is built, so a row whose module is not installed is reported as
missing, never invented. :func:`build_machine` makes the module a row measures.

Shapes: T positions, t the decoded position, d = d_model = d_k = d_v = d_h, k kernel, r window, C chunk,
w sliding window.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.layers import restricted
from seqlab.layers.convolution import convolution_multiplications
from seqlab.studies.table1_results import CONSTANT, LINEAR, LOGARITHMIC, QUADRATIC, Growth

__all__ = ["MODERN_ROWS", "ROWS", "Machine", "RowSpec", "build_machine", "row_available"]


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
ROWS: dict[str, RowSpec] = {
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
    "linear_attention_parallel": RowSpec(_M, None, ("O(T²·d)", QUADRATIC), ("O(1)", CONSTANT), ("O(1)", CONSTANT),
                                         ("O(T²)", QUADRATIC), ("O(d²)", CONSTANT), ("O(d²)", CONSTANT),
                                         "Katharopoulos et al. 2020, §3.2–3.4"),
    "linear_attention_recurrent": RowSpec(_M, None, ("O(T·d_k·d_v)", LINEAR), ("O(T)", LINEAR), ("O(T)", LINEAR),
                                          ("O(T·d)", LINEAR), ("O(d²)", CONSTANT), ("O(d²)", CONSTANT),
                                          "Katharopoulos et al. 2020, §3.4"),
    "linear_attention_chunked": RowSpec(_M, None, ("O(T·(C + d)·d)", LINEAR), ("O(T/C)", LINEAR),
                                        ("O(T/C)", LINEAR), ("O(T·d)", LINEAR), ("O(d²)", CONSTANT),
                                        ("O(d²)", CONSTANT),
                                        "Katharopoulos et al. 2020, §3.3; Hua et al. 2022"),
    "diagonal_loop": RowSpec(_M, None, ("O(T·d²)", LINEAR), ("O(T)", LINEAR), ("O(T)", LINEAR), ("O(T·d)", LINEAR),
                             ("O(d²)", CONSTANT), ("O(d)", CONSTANT),
                             "S4D (Gu et al. 2022); LRU (Orvieto et al. 2023), §3"),
    "diagonal_scan": RowSpec(_M, None, ("O(T·d²)", LINEAR), ("O(log T)", LOGARITHMIC), ("O(log T)", LOGARITHMIC),
                             ("O(T·d)", LINEAR), ("O(d²)", CONSTANT), ("O(d)", CONSTANT),
                             "Hillis & Steele 1986; Blelloch 1990, §1.4; LRU (Orvieto et al. 2023)"),
    "selective_loop": RowSpec(_M, None, ("O(T·d²)", LINEAR), ("O(T)", LINEAR), ("O(T)", LINEAR), ("O(T·d)", LINEAR),
                              ("O(d²)", CONSTANT), ("O(d)", CONSTANT), "Mamba (Gu & Dao 2023), §3.2"),
    "selective_scan": RowSpec(_M, None, ("O(T·d²)", LINEAR), ("O(log T)", LOGARITHMIC), ("O(log T)", LOGARITHMIC),
                              ("O(T·d)", LINEAR), ("O(d²)", CONSTANT), ("O(d)", CONSTANT),
                              "Mamba (Gu & Dao 2023), §3.3.2; Blelloch 1990, §1.4"),
    "sliding_window": RowSpec(_M, None, ("O(w·T·d)", LINEAR), ("O(1)", CONSTANT), ("O(T/w)", LINEAR),
                              ("O(w·T·d)", LINEAR), ("O(w·d)", CONSTANT), ("O(w·d)", CONSTANT),
                              "Longformer (Beltagy et al. 2020), §3.1"),
}
"""Every row, in the table's order: the lesson's, the paper's, then the mixers."""

#: The mixers' rows (their modules may not all be installed).
MODERN_ROWS = tuple(name for name, spec in ROWS.items() if spec.group == _M)

#: Row -> (module, class, keyword arguments, the decode machine of :mod:`seqlab.measure.decode` or None).
_MIXERS: dict[str, tuple[str, str, dict[str, Any], str | None]] = {
    "linear_attention_parallel": ("seqlab.layers.linear_attention", "LinearAttention", {"form": "parallel"},
                                  "linear_attention"),
    "linear_attention_recurrent": ("seqlab.layers.linear_attention", "LinearAttention", {"form": "recurrent"},
                                   "linear_attention"),
    "linear_attention_chunked": ("seqlab.layers.linear_attention", "LinearAttention", {"form": "chunked"},
                                 "linear_attention"),
    "diagonal_loop": ("seqlab.layers.linear_recurrence", "DiagonalRecurrence", {"form": "loop"}, None),
    "diagonal_scan": ("seqlab.layers.linear_recurrence", "DiagonalRecurrence", {"form": "scan"}, None),
    "selective_loop": ("seqlab.layers.linear_recurrence", "SelectiveRecurrence", {"form": "loop"},
                       "selective_recurrence"),
    "selective_scan": ("seqlab.layers.linear_recurrence", "SelectiveRecurrence", {"form": "scan"},
                       "selective_recurrence"),
    "sliding_window": ("seqlab.layers.sliding_window", "SlidingWindowAttention", {"form": "banded"}, None),
}


def _mixer_class(row: str) -> Any:
    module, name, _, _ = _MIXERS[row]
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def row_available(row: str) -> bool:
    """Whether the module a row builds can be imported here (the lesson's and the paper's always can).

    >>> row_available("elman")
    True
    """
    return row not in _MIXERS or _mixer_class(row) is not None


@dataclass(frozen=True)
class Machine:
    """A row built at width d: the one layer (x (1, T, d) -> y), its closed-form work at T, the step API.

    Attributes:
        layer: the whole layer's forward, projections included, returning the output tensor.
        closed_form: T -> multiplications of ``layer`` by its closed form (same scope).
        decoder: an object with ``initial_state`` / ``step`` (None: the layer has no step API here).
        decode_machine: the machine name of :mod:`seqlab.measure.decode` measuring the decoder, or None when
            the table measures the decoder's step itself.
        step_closed_form: multiplications of one decode step by the module's closed form (None: none offered,
            or measured through ``decode_machine``, which brings its own).
        stack: T -> (x -> every layer's output) of the stack that connects all T positions, when one layer
            does not (None: one layer connects them).
    """

    layer: Callable[[Tensor], Tensor]
    closed_form: Callable[[int], int]
    decoder: Any
    decode_machine: str | None
    step_closed_form: Callable[[], int] | None = None
    stack: Callable[[int], Callable[[Tensor], list[Tensor]]] | None = None


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
        raise SeqlabError(f"row must be one of {', '.join(ROWS)}; received {row!r}", parameter="row")
    generator = torch.Generator().manual_seed(seed)
    if row == "elman":
        decoder = build_decoder("elman", d, seed=seed)
        return Machine(decoder.rnn, lambda T: cost.recurrence_multiplications(T, d, d), decoder, "elman")
    if row == "self_attention":
        attention = SelfAttention(d, causal=True, generator=generator).eval()
        return Machine(lambda x: attention(x)[0],
                       lambda T: cost.attention_multiplications(T, d, d) + cost.projection_multiplications(T, d, d, d),
                       build_decoder("attention_kv_cache", d, seed=seed), "attention_kv_cache")
    if row in ("convolution", "dilated_convolution"):
        one = ConvolutionStack(d, kernel, layers=1, generator=generator).eval()
        return Machine(one, lambda T: convolution_multiplications(T, d, kernel), None, None)
    if row == "restricted":
        one = RestrictedSelfAttention(d, window, generator=generator).eval()
        return Machine(lambda x: one(x)[0], lambda T: restricted.restricted_attention_multiplications(
            T, window, d, d) + cost.projection_multiplications(T, d, d, d), None, None)
    return _build_mixer(row, d, window=window, chunk=chunk, generator=generator)


def _build_mixer(row: str, d: int, *, window: int, chunk: int, generator: torch.Generator) -> Machine:
    cls = _mixer_class(row)
    if cls is None:
        raise SeqlabError(f"the row {row!r} needs {_MIXERS[row][0]}, which is not installed here", parameter="row")
    module_name, _, options, machine = _MIXERS[row]
    options = dict(options)
    if row.startswith("linear_attention"):
        options["chunk_size"] = chunk
    if row != "sliding_window":
        module = cls(d, generator=generator, **options).eval()
        step_form = None
        if row.startswith("diagonal"):
            formula = importlib.import_module(module_name).diagonal_recurrence_step_multiplications
            step_form = lambda: formula(d, module.d_state)  # noqa: E731
        return Machine(module, module.multiplications, module, machine, step_form)
    module = cls(d, window, generator=generator, **options).eval()
    formula = importlib.import_module(module_name).sliding_window_step_multiplications

    def stack(T: int) -> Callable[[Tensor], list[Tensor]]:
        """⌈(T - 1)/(w - 1)⌉ layers: each reaches w - 1 positions back, so that many connect 1 to T."""
        depth = max(1, -(-(T - 1) // max(window - 1, 1)))
        layers = [module] + [cls(d, window, generator=generator, **options).eval() for _ in range(depth - 1)]

        def forward_all(x: Tensor) -> list[Tensor]:
            outputs = []
            for layer in layers:
                x = layer(x)  # (1, T, d)
                outputs.append(x)
            return outputs
        return forward_all
    return Machine(module, module.multiplications, module, None, lambda: formula(d, window), stack)
