"""The order test of ``seqlab model`` (L10): shuffle a window's tokens, read every depth, give a verdict.

:func:`measure_model_order` shuffles the window's tokens by one seeded permutation π (never the identity)
and compares every depth's output with the unshuffled output shuffled by π, max |f(x[π]) − f(x)[π]|,
against :func:`seqlab.measure.order.tolerance` of that depth. Each depth gets the three-valued verdict of
:func:`seqlab.measure.order.verdict` ("holds", "does not hold", "cannot tell at <dtype>"): in float64 the
tolerance decides; below float64 the same window runs through the float64 encoder (the float64 twin), whose
own change and the depth's rounding |f(x) − f64(x)| settle a change within the tolerance, as in
:mod:`seqlab.measure.order`.

A padded batch of B windows is tested one sequence at a time *inside the batch*: sequence b's n_b real
tokens are shuffled (its padding stays where it is), the whole batch runs with its attention mask, and
only b's n_b real rows are compared, so no padded row is ever read. A padded query whose every key is masked
(under a sliding window) gets weights 0 (:class:`~seqlab.studies.model_mixing.KeylessRows`), so its NaN never
reaches a real row. The batch's verdict at a depth is
the sequence that decides it: one that does not hold, else one that cannot tell, else the one whose
change comes closest to its tolerance; ``LayerOrder.sequence`` says which.

Shapes: B sequences, T padded positions, n_b real positions of sequence b, L layers, d_model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.layers.anatomy import without_positions
from seqlab.layers.pretrained import Encoder, load_encoder
from seqlab.measure.order import OrderResult, _Rerun, holds_of, measure_order, tolerance, verdict
from seqlab.studies.model_mixing import KeylessRows, checked_mask, keyless_probe, keyless_rule, real_positions


@dataclass(frozen=True)
class LayerOrder:
    """The order test read at one depth: 0 = the embeddings' output, l = encoder layer l.

    ``verdict`` is "holds", "does not hold" or "cannot tell at <dtype>"; ``holds`` is the same verdict as
    ``bool | None`` (None: cannot tell; :func:`seqlab.measure.order.holds_of`).
    """

    depth: int
    max_abs_change: float
    max_abs_output: float
    tolerance: float
    holds: bool | None
    verdict: str = ""
    sequence: int = 1


@dataclass(frozen=True)
class OrderCheck:
    """Shuffle the window's tokens; do the outputs of every depth just move with them? (L10)

    Attributes:
        positions: the position vectors were on (the model as trained) or switched off.
        overall: :func:`seqlab.measure.order.measure_order` on all depths stacked (T, L + 1, d_model).
        depths: the same two passes read per depth, each judged against its own tolerance; in a batch,
            the sequence that decides: one that does not hold, else one that cannot tell, else the one
            closest to its tolerance.
        sequences: the overall result of every sequence, in batch order.
    """

    positions: bool
    overall: OrderResult
    depths: tuple[LayerOrder, ...]
    sequences: tuple[OrderResult, ...] = ()


def _stacker(encoder: Encoder, passes: list[tuple[Tensor, Tensor]], ids: Tensor, mask: Tensor, b: int,
             first: KeylessRows):
    """f_b: sequence b's n_b ids, as a column, -> its rows of every depth, read inside the padded batch (under the
    keyless-row rule where the batch's first pass, ``first``, met a query without keys)."""
    n = real_positions(mask, b)

    def stack(column: Tensor) -> Tensor:  # (n_b, 1) ids -> (n_b, L + 1, d_model), every depth's output
        batch = ids.clone()
        batch[b, :n] = column[:, 0].long()  # the float64 rerun hands the ids over as float64
        with keyless_rule(first):  # a padded query with no key contributes nothing (never NaN into the real rows)
            hidden = encoder.model(input_ids=batch, attention_mask=mask, output_hidden_states=True).hidden_states
        y = torch.stack(hidden, dim=2)[b, :n]  # real rows only: a padded row is never compared
        passes.append((column[:, 0].long(), y))
        return y
    return stack


def _pass(passes: list[tuple[Tensor, Tensor]], column: Tensor) -> Tensor:
    """The recorded output of the pass on ``column``'s ids. A text of one repeated token shuffles into the same ids:
    then both passes read the same input, so the first is taken."""
    return next(out for ids, out in passes if torch.equal(ids, column))


def _depth(depth: int, y: Tensor, y_shuffled: Tensor, perm: Tensor,
           twin: tuple[Tensor, Tensor] | None, sequence: int = 1, working: torch.dtype | None = None) -> LayerOrder:
    """One depth's change, tolerance and verdict; ``twin`` = the float64 (y, y_shuffled) or None; ``working``:
    a lower precision the model computes in inside (its softmax), which then sets the tolerance."""
    T = y.shape[0]
    change = float((y_shuffled[:, depth] - y[perm, depth]).abs().max())
    scale = float(y[:, depth].abs().max())
    if depth > 0 and working is not None and torch.finfo(working).eps > torch.finfo(y.dtype).eps:  # past a softmax
        allowed = tolerance(scale, T, working)
        said = verdict(change, allowed, working, None)  # no twin computes it better: "cannot tell" within it
        return LayerOrder(depth, change, scale, allowed, holds_of(said), said, sequence)
    allowed = tolerance(scale, T, y.dtype)
    rerun = None
    if twin is not None:
        y64, y64_shuffled = twin[0][:, depth], twin[1][:, depth]
        rerun = _Rerun(change=float((y64_shuffled - y64[perm]).abs().max()),
                       tolerance=tolerance(float(y64.abs().max()), T, torch.float64),
                       rounding=float((y[:, depth].double() - y64).abs().max()))
    said = verdict(change, allowed, y.dtype, rerun)
    return LayerOrder(depth, change, scale, allowed, holds_of(said), said, sequence)


def _rank(said: str) -> int:
    """Which verdict a batch reports: one sequence that does not hold outweighs a doubt, a doubt a hold."""
    return 2 if said == "does not hold" else (1 if said.startswith("cannot tell") else 0)


def _worst(rows: list[LayerOrder]) -> LayerOrder:
    return max(rows, key=lambda row: (_rank(row.verdict), row.max_abs_change / row.tolerance if row.tolerance
                                      else math.inf))


def _at(result: OrderResult, working: torch.dtype | None) -> OrderResult:
    """The engine's overall result judged again at the model's lower working precision, if it has one."""
    if working is None or torch.finfo(working).eps <= torch.finfo(getattr(torch, result.dtype)).eps:
        return result
    allowed = tolerance(result.max_abs_output, len(result.permutation), working)
    said = verdict(result.max_abs_change, allowed, working, None)
    return dataclasses.replace(result, tolerance=allowed, verdict=said, holds=holds_of(said))


def _sequence(encoder: Encoder, twin: Encoder | None, ids: Tensor, mask: Tensor, b: int,
              seed: int, working: torch.dtype | None = None,
              first: KeylessRows | None = None) -> tuple[OrderResult, list[LayerOrder]]:
    """The order test of sequence b of the batch: the overall result and one row per depth."""
    passes: list[tuple[Tensor, Tensor]] = []
    passes64: list[tuple[Tensor, Tensor]] = []
    first = first if first is not None else KeylessRows(met=1)  # not probed: the rule on every pass
    reference = _stacker(twin, passes64, ids, mask, b, first) if twin is not None else None
    column = ids[b, :real_positions(mask, b)].unsqueeze(1)  # (n_b, 1)
    overall = measure_order(_stacker(encoder, passes, ids, mask, b, first), column, seed=seed, reference=reference)
    perm = torch.tensor(overall.permutation)
    y, y_shuffled = _pass(passes, column[:, 0]), _pass(passes, column[perm, 0])  # (n_b, L + 1, d_model) each
    pair = (_pass(passes64, column[:, 0]), _pass(passes64, column[perm, 0])) if len(passes64) == 2 else None
    return _at(overall, working), [_depth(depth, y, y_shuffled, perm, pair, b + 1, working)
                                   for depth in range(y.shape[1])]


def measure_model_order(encoder: Encoder, ids: Tensor, mask: Tensor | None = None, *, positions: bool,
                        seed: int = 0, working: torch.dtype | None = None,
                        probe: KeylessRows | None = None) -> OrderCheck:
    """Shuffle each sequence's tokens by a seeded π and compare every depth's output with the original, shuffled (L10).

    >>> from seqlab.layers.pretrained import encode
    >>> encoder = load_encoder()
    >>> ids = torch.tensor([encode(encoder, "el perro muerde al cartero").ids])
    >>> measure_model_order(encoder, ids, positions=False).overall.equivariant
    True
    >>> measure_model_order(encoder, ids, positions=True).overall.verdict
    'does not hold'

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`; below float64 the float64 encoder
            of the same folder is loaded too, as the twin that settles a change within rounding.
        ids: token ids, shape (B, T), right-padded.
        mask: (B, T), 1 on real positions, 0 on padding; None: all real. Only real positions are
            shuffled and compared; the batch runs padded, with its mask.
        positions: keep the position information (True) or switch it off (False, see
            :func:`~seqlab.layers.anatomy.without_positions`).
        seed: seed of π (the same seed for every sequence).
        working: the precision the model really computes in where it is below the encoder's dtype (LLaMA's,
            GPT-NeoX's and ModernBERT's eager softmax runs in float32 inside a float64 model; see
            :func:`seqlab.studies.model.working_precision`): the tolerance is then that dtype's, and a change
            within it is "cannot tell at <dtype>" (no twin computes that softmax better). None: the dtype's.
        probe: the batch's :func:`~seqlab.studies.model_mixing.keyless_probe` on these ids and mask (the model as
            trained) when the caller made it already; None: this function probes (one forward pass).

    Returns:
        An :class:`OrderCheck`; depth 0 is the embeddings' output, depth l the output of layer l; each
        depth and ``overall`` report the sequence that decided (see the module).

    Raises:
        SeqlabError: ``ids`` not of shape (B, T), a mask of another shape, a sequence with fewer than 2 real
            positions, or a model whose positions cannot be switched off.
    """
    mask = checked_mask(ids, mask)
    sizes = [real_positions(mask, b) for b in range(ids.shape[0])]
    if min(sizes) < 2:
        raise SeqlabError(N_("every sequence needs at least 2 positions to shuffle, received {sizes}"), sizes=sizes,
                          parameter="text")
    below = encoder.dtype != "float64"
    twin = load_encoder(torch.float64, None if encoder.config.bundled else encoder.folder) if below else None
    first = probe if probe is not None else keyless_probe(encoder, ids, mask)  # does any query read no key?
    with contextlib.ExitStack() as stack:
        if not positions:
            stack.enter_context(without_positions(encoder.model))
            if twin is not None:
                stack.enter_context(without_positions(twin.model))
        measured = [_sequence(encoder, twin, ids, mask, b, seed, working, first) for b in range(ids.shape[0])]
    depths = tuple(_worst([rows[depth] for _, rows in measured]) for depth in range(len(measured[0][1])))
    overall = max((result for result, _ in measured), key=lambda r: (_rank(r.verdict), r.max_abs_change / r.tolerance
                                                                    if r.tolerance else math.inf))
    return OrderCheck(positions, overall, depths, tuple(result for result, _ in measured))
