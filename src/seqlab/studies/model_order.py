"""The order test of ``seqlab model`` (L10): shuffle a window's tokens, read every depth, give a verdict.

:func:`measure_model_order` shuffles the window's tokens by one seeded permutation π (never the identity)
and compares every depth's output with the unshuffled output shuffled by π, max |f(x[π]) − f(x)[π]|,
against :func:`seqlab.measure.order.tolerance` of that depth. Each depth gets the three-valued verdict of
:func:`seqlab.measure.order.verdict` ("holds", "does not hold", "cannot tell at <dtype>"): in float64 the
tolerance decides; below float64 the same window runs through the float64 encoder (the float64 twin), whose
own change and the depth's rounding |f(x) − f64(x)| settle a change within the tolerance, as in
:mod:`seqlab.measure.order`.

Shapes: B = 1, T positions of the window, L layers, d_model.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.layers.pretrained import Encoder, load_encoder, without_positions
from seqlab.measure.order import HOLDS, OrderResult, _Rerun, measure_order, tolerance, verdict


@dataclass(frozen=True)
class LayerOrder:
    """The order test read at one depth: 0 = the embeddings' output, l = encoder layer l.

    ``verdict`` is "holds", "does not hold" or "cannot tell at <dtype>"; ``holds`` is ``verdict == "holds"``.
    """

    depth: int
    max_abs_change: float
    max_abs_output: float
    tolerance: float
    holds: bool
    verdict: str = ""


@dataclass(frozen=True)
class OrderCheck:
    """Shuffle the window's tokens; do the outputs of every depth just move with them? (L10)

    Attributes:
        positions: the position vectors were on (the model as trained) or switched off.
        overall: :func:`seqlab.measure.order.measure_order` on all depths stacked (T, L + 1, d_model).
        depths: the same two passes read per depth, each judged against its own tolerance.
    """

    positions: bool
    overall: OrderResult
    depths: tuple[LayerOrder, ...]


def _stacker(encoder: Encoder, passes: list[tuple[Tensor, Tensor]]):
    def stack(column: Tensor) -> Tensor:  # (T, 1) ids -> (T, L + 1, d_model), every depth's output
        ids = column.T.long()  # the float64 rerun hands the ids over as float64
        hidden = encoder.model(input_ids=ids, output_hidden_states=True).hidden_states
        y = torch.stack(hidden, dim=2)[0]
        passes.append((ids.T, y))
        return y
    return stack


def _pass(passes: list[tuple[Tensor, Tensor]], column: Tensor) -> Tensor:
    (y,) = [out for ids, out in passes if torch.equal(ids, column)]
    return y


def _depth(depth: int, y: Tensor, y_shuffled: Tensor, perm: Tensor,
           twin: tuple[Tensor, Tensor] | None) -> LayerOrder:
    """One depth's change, tolerance and verdict; ``twin`` = the float64 (y, y_shuffled) or None."""
    T = y.shape[0]
    change = float((y_shuffled[:, depth] - y[perm, depth]).abs().max())
    scale = float(y[:, depth].abs().max())
    allowed = tolerance(scale, T, y.dtype)
    rerun = None
    if twin is not None:
        y64, y64_shuffled = twin[0][:, depth], twin[1][:, depth]
        rerun = _Rerun(change=float((y64_shuffled - y64[perm]).abs().max()),
                       tolerance=tolerance(float(y64.abs().max()), T, torch.float64),
                       rounding=float((y[:, depth].double() - y64).abs().max()))
    said = verdict(change, allowed, y.dtype, rerun)
    return LayerOrder(depth, change, scale, allowed, said == HOLDS, said)


def measure_model_order(encoder: Encoder, ids: Tensor, *, positions: bool, seed: int = 0) -> OrderCheck:
    """Shuffle the tokens by a seeded π and compare every depth's output with the original, shuffled (L10).

    >>> from seqlab.layers.pretrained import encode
    >>> encoder = load_encoder()
    >>> ids = torch.tensor([encode(encoder, "el perro muerde al cartero").ids])
    >>> measure_model_order(encoder, ids, positions=False).overall.equivariant
    True
    >>> measure_model_order(encoder, ids, positions=True).overall.verdict
    'does not hold'

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`; below float64 the float64 encoder
            is loaded too, as the twin that settles a change within rounding.
        ids: token ids, shape (1, T), T >= 2.
        positions: keep the learned position vectors (True) or switch them off (False).
        seed: seed of π.

    Returns:
        An :class:`OrderCheck`; depth 0 is the embeddings' output, depth l the output of layer l.

    Raises:
        SeqlabError: ``ids`` not of shape (1, T) with T >= 2.
    """
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 2:
        raise SeqlabError(f"ids must have shape (1, T) with T >= 2, received {tuple(ids.shape)}")
    passes: list[tuple[Tensor, Tensor]] = []
    passes64: list[tuple[Tensor, Tensor]] = []
    below = encoder.dtype != "float64"
    twin = load_encoder(torch.float64) if below else None
    reference = _stacker(twin, passes64) if twin is not None else None
    if positions:
        overall = measure_order(_stacker(encoder, passes), ids.T, seed=seed, reference=reference)
    else:
        with without_positions(encoder.model):
            if twin is None:
                overall = measure_order(_stacker(encoder, passes), ids.T, seed=seed)
            else:
                with without_positions(twin.model):
                    overall = measure_order(_stacker(encoder, passes), ids.T, seed=seed, reference=reference)
    perm = torch.tensor(overall.permutation)
    column = ids.T
    y, y_shuffled = _pass(passes, column), _pass(passes, column[perm])  # (T, L + 1, d_model) each
    pair = (_pass(passes64, column), _pass(passes64, column[perm])) if len(passes64) == 2 else None
    depths = tuple(_depth(depth, y, y_shuffled, perm, pair) for depth in range(y.shape[1]))
    return OrderCheck(positions, overall, depths)
