"""Where a module expects its positions: its own ``batch_first``, read through PyTorch's containers, and its shapes.

The engine reads x with its positions on dim -2: (T, d) or (B, T, d). A sequence-first module
(``batch_first=False``, the default of ``nn.RNN``, ``nn.GRU``, ``nn.LSTM``, ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer``) reads a (B, T, d) tensor as (T, B, d): its "positions" would be batch rows, and
every figure would be measured on the wrong axis with no error. :func:`check_positions_layout` refuses that
case before anything is traced; :func:`batch_first_of` finds the flag on the module itself or, for PyTorch's
Transformer containers (which keep it on their attention), on the attention inside.

A module without the flag tells its layout by its shapes: :func:`find_positions` runs it with each of x's two
non-batch dims one longer and takes the dim whose length the output follows (a channels-first (B, d, T) layer,
``nn.Conv1d`` and its kind, fails or keeps its output on a longer width), so a layer is never measured across its
channels; where the shapes cannot tell at T = d, the layout must be named (:data:`LAYOUTS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from seqlab.errors import SeqlabError
from seqlab.i18n import N_


def batch_first_of(layer: object) -> bool | None:
    """The module's ``batch_first`` (None when it has none: the layout is the caller's to know).

    >>> batch_first_of(nn.GRU(2, 2)), batch_first_of(nn.TransformerEncoderLayer(4, 1, batch_first=True))
    (False, True)
    >>> batch_first_of(nn.Linear(2, 2)) is None
    True
    """
    flag = getattr(layer, "batch_first", None)
    if isinstance(flag, bool):
        return flag
    if isinstance(layer, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return batch_first_of(layer.self_attn)
    if isinstance(layer, (nn.TransformerEncoder, nn.TransformerDecoder)) and len(layer.layers):
        return batch_first_of(layer.layers[0])
    if isinstance(layer, nn.Transformer):
        return batch_first_of(layer.encoder)
    return None


def check_positions_layout(layer: object, x: Tensor) -> None:
    """Refuse a (B, T, d) x for a sequence-first module (it would read the positions as batch rows).

    Raises:
        SeqlabError: ``x`` is 3-D and the module has ``batch_first=False``; the message says what to pass instead.
    """
    if isinstance(x, Tensor) and x.dim() == 3 and batch_first_of(layer) is False:
        raise SeqlabError(N_("{layer_class} has batch_first=False: it reads x {shape} as (T, B, d), but the "
                             "positions here are on dim -2; pass x as (T, d) or a batch_first module"),
                          layer_class=type(layer).__name__, shape=tuple(x.shape), parameter="module")


#: The input layouts ``profile`` measures, by name: where batch (B), positions (T) and width (d) sit in x.
LAYOUTS: dict[str, str] = {"btd": "(B, T, d)", "bdt": "(B, d, T)", "tbd": "(T, B, d)"}
#: The dim of x that holds the positions, per layout.
POSITIONS_DIM: dict[str, int] = {"btd": 1, "bdt": 2, "tbd": 0}
#: How a layout was decided: named by the caller, the module's shapes (the one dim of x whose length the output
#: follows), or the documented (B, T, d) kept because the shapes cannot tell (T ≠ d).
FOUND = ("named", "shapes", "as_given")


@dataclass(frozen=True)
class Positions:
    """Where the positions sit in a module's input and in the output measured (:func:`find_positions`).

    Attributes:
        layout: a key of :data:`LAYOUTS`.
        found: one of :data:`FOUND`.
        input_dim: the dim of x holding the positions (:data:`POSITIONS_DIM`).
        output_dim: the dim (non-negative) of the measured output holding them.
    """

    layout: str
    found: str
    input_dim: int
    output_dim: int


def check_layout(layout: object) -> str | None:
    """``layout`` if it is None or a key of :data:`LAYOUTS` (any case).

    >>> check_layout("BDT"), check_layout(None)
    ('bdt', None)

    Raises:
        SeqlabError: any other value; the message lists the layouts.
    """
    if layout is None:
        return None
    if not isinstance(layout, str) or layout.strip().lower() not in LAYOUTS:
        raise SeqlabError(N_("layout must be one of {layouts}; received {layout!r}"), layouts=", ".join(LAYOUTS),
                          layout=layout, parameter="layout")
    return layout.strip().lower()


def _grown(module: Callable[[Tensor], Any], x: Tensor, dim: int, y: Tensor,
           select: Callable[[Any], Any]) -> tuple[int, ...] | None:
    """The output dims whose length follows x's dim ``dim`` when it grows by one (its last slice repeated): each is
    x.shape[dim] long in ``y`` and one longer in the new output. None when the module fails on the longer x or gives
    no tensor of ``y``'s rank."""
    n = x.shape[dim]
    longer = torch.cat([x, x.narrow(dim, n - 1, 1)], dim)
    try:
        with torch.no_grad():
            stretched = select(module(longer))
    except Exception:  # noqa: BLE001 - a module of fixed width fails on the longer dim: that is the answer sought
        return None
    if not isinstance(stretched, Tensor) or stretched.dim() != y.dim():
        return None
    return tuple(k for k in range(y.dim()) if y.shape[k] == n and stretched.shape[k] == n + 1)


def find_positions(module: Callable[[Tensor], Any], x: Tensor, y: Tensor, *, layout: str | None = None,
                   select: Callable[[Any], Any] = lambda out: out, element: int | None = None) -> Positions:
    """Which dim of x, and of the output y = select(module(x)), holds the positions.

    The rule, in order: a layout named by the caller; a module's own ``batch_first`` (False: x is (T, B, d), which
    must be named, since a (B, T, d) x would be read with its positions as batch rows); else the shapes: x (B, ·, ·)
    is run once more with dim 1 one longer and once with dim 2 one longer, and the dim whose length an output dim
    follows (and the other does not: a layer of fixed width fails, or keeps its output, on a longer width) holds
    the positions; when no output dim follows either, the one dim the module runs with longer (the other, a fixed
    width, fails) holds them, and an output that lost their length is refused (a strided or pooling layer). When
    both dims or neither are followed the shapes cannot tell: with the two dims of different
    lengths x is read as documented, (B, T, d) (``found`` says so); with equal lengths (T = d) the layout must be
    named. The output's positions are the dim that followed the input's (preferring the layout's own place: dim -2
    for (B, T, d) and (T, B, d)... as y's rank allows, dim -1 for (B, d, T)), else that place if it is T long.

    >>> conv = nn.Conv1d(4, 4, 3, padding=1)  # channels first: (B, d, T)
    >>> x = torch.randn(1, 4, 4)  # T = d = 4
    >>> find_positions(conv, x, conv(x))
    Positions(layout='bdt', found='shapes', input_dim=2, output_dim=2)

    Args:
        module: the callable measured; run without gradients, in whatever mode the caller set (eval).
        x: the module's input, 3-D.
        y: the output measured of ``module(x)``: a tensor with at least x's dims (batch, positions, width).
        layout: None to find it, or a key of :data:`LAYOUTS`.
        select: picks the measured tensor from what the module returns.
        element: its index when the module returns a container (said in a refusal), else None.

    Returns:
        A :class:`Positions`.

    Raises:
        SeqlabError: the named layout contradicts the module's ``batch_first``; a sequence-first module without the
            layout named; T = d and the shapes cannot tell; the output has fewer dims than x or no dim of the
            positions' length.
    """
    name = type(module).__name__
    flag = batch_first_of(module)
    shape = tuple(x.shape)
    if y.dim() < x.dim():  # no batch, positions and width left: nothing to read positions on (a pooled output)
        _no_positions(name, shape[POSITIONS_DIM[layout or ("btd" if flag is not False else "tbd")]], -2, y, element)
    if layout is not None and flag is not None and (layout == "tbd") == flag:
        reads = "(B, T, d)" if flag else "(T, B, d)"
        raise SeqlabError(N_("{module_class} has batch_first={flag}: it reads x {shape} as {reads}, not as "
                             "{layout}; name the layout {name}"), module_class=name, flag=flag, shape=shape,
                          reads=reads, layout=LAYOUTS[layout], name="btd" if flag else "tbd", parameter="layout")
    if layout is None and flag is False:
        raise SeqlabError(N_("{module_class} has batch_first=False: it reads x {shape} as (T, B, d), but the "
                             "positions here are on dim 1; pass x as (T, B, d) and name the layout tbd, or a "
                             "batch_first module"), module_class=name, shape=shape, parameter="module")
    if layout is not None:
        found = "named"
        followed = _grown(module, x, POSITIONS_DIM[layout], y, select)
    else:
        grown = {dim: _grown(module, x, dim, y, select) for dim in (1, 2)}
        by_shape = [dim for dim, outputs in grown.items() if outputs]
        runs = [dim for dim, outputs in grown.items() if outputs is not None]
        if len(by_shape) == 1 or not by_shape and len(runs) == 1:  # the one dim followed, or the one not fixed
            found, layout = "shapes", "btd" if (by_shape or runs)[0] == 1 else "bdt"
        elif shape[1] != shape[2]:
            found, layout = "as_given", "btd"
        else:
            if by_shape:
                raise SeqlabError(N_("cannot tell which dim of x {shape} holds the positions: T = d and "
                                     "{module_class} runs with either dim longer; name the layout: btd for (B, T, d) "
                                     "or bdt for (B, d, T)"), shape=shape, module_class=name, parameter="layout")
            raise SeqlabError(N_("cannot tell which dim of x {shape} holds the positions: T = d and {module_class} "
                                 "runs with neither dim longer; name the layout: btd for (B, T, d) or bdt for "
                                 "(B, d, T)"), shape=shape, module_class=name, parameter="layout")
        followed = grown[POSITIONS_DIM[layout]]
    T = shape[POSITIONS_DIM[layout]]
    own = y.dim() - 1 if layout == "bdt" else max(y.dim() - 2, 0)
    if followed and own in followed or not followed and y.dim() >= 2 and y.shape[own] == T:
        output_dim = own
    elif followed and len(followed) == 1:
        output_dim = followed[0]
    else:
        _no_positions(name, T, own - y.dim(), y, element)
    return Positions(layout, found, POSITIONS_DIM[layout], output_dim)


def _no_positions(name: str, T: int, dim: int, y: Tensor, element: int | None) -> None:
    """Refuse an output measured that holds no positions (a pooled tensor, a last state)."""
    if element is not None:
        raise SeqlabError(N_("output {index} of {module_class} has no dim of the {T} positions, received shape "
                             "{shape}; choose another with output"), index=element, module_class=name, T=T,
                          shape=tuple(y.shape), parameter="output")
    raise SeqlabError(N_("{module_class} must return a tensor with the {T} positions on dim {dim} (or a tuple whose "
                         "first element is one), received shape {shape}"), module_class=name, T=T, dim=dim,
                      shape=tuple(y.shape), parameter="module")
