"""Guards of the reach (:mod:`seqlab.measure.reach`): the module's own batch layout, and NaN (issue 13).

Layout: ``measure_reach(..., batched=True)`` replicates x (T, d_in) R times and reads the R outputs
as a batch. A sequence-first module (``nn.RNN`` with ``batch_first=False``) reads (R, T, d_in) as R
positions of a batch of T, and the reach comes out silently wrong (0.0 at every position but one).
So the copies go along the module's own batch dimension (:func:`batch_dim`: its ``batch_first`` where
it has one), and the first copy's output must equal the output on x alone (:func:`check_layout`):
a layer whose output contradicts the layout (a sequence-first module behind a wrapper) is refused.

NaN: an output row that is NaN poisons the backward pass of every other row (0 · NaN = NaN in the
softmax backward). Forward mode (:func:`forward_rows`) carries tangents only where the values flow,
so a finite y_p keeps its true derivative, as the dependence rule (:mod:`seqlab.measure.dependence`)
wants: NaN is undefined, never "depends".

Shapes: T positions, d_in input width, d_out output width, R copies, N tangents.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from seqlab.measure.switches import warnings_ignored
from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.measure.layout import batch_first_of


def batch_dim(layer: object) -> int:
    """The layer's own batch dimension: 1 for a module with ``batch_first=False`` (sequence-first), else 0."""
    return 1 if batch_first_of(layer) is False else 0


def check_layout(layer: Callable[[Tensor], Tensor], y_first: Tensor, alone: Tensor) -> None:
    """Refuse a layer whose output on the first of R copies differs from its output on x alone (T, d_out).

    The two runs may take different kernels, whose rounding a chaotic recurrence (spectral radius > 1)
    amplifies step by step, so the outputs are compared where no long chain has run yet: the gap is
    the smaller of the largest |difference| at the first two positions and at the last two (a causal
    layer's start, an anti-causal one's end), over the finite entries, within
    64 eps · max(1, |y|) · sqrt(T). A layout mistake changes both ends by far more: a sequence-first
    RNN fed (R, T, d) starts every one of the T "sequences" from a zero state, so its position 1
    lacks x_0's contribution and its position T - 1 lacks the whole history. NaN must sit at the same places.
    """
    first = y_first.detach()
    finite = ~alone.isnan()
    scale = max(1.0, float(alone[finite].abs().max())) if bool(finite.any()) else 1.0
    allowed = 64 * float(torch.finfo(alone.dtype).eps) * scale * math.sqrt(alone.shape[0])
    difference = torch.where(finite, (first - alone).abs(), 0.0).reshape(alone.shape[0], -1)  # (T, d_out)
    per_position = difference.amax(dim=-1) if difference.numel() else torch.zeros(alone.shape[0])  # (T,)
    gap = min(float(per_position[:2].max()), float(per_position[-2:].max()))
    if not bool((first.isnan() == alone.isnan()).all()) or not gap <= allowed:
        raise SeqlabError(N_("batched=True needs a layer that maps (R, T, d_in) to (R, T, d_out) row by row, but "
                             "{layer_class}'s output on x replicated along dim {batch_dim} differs from its output "
                             "on x alone by {gap:.3g} (allowed {allowed:.3g}); a sequence-first module behind a "
                             "wrapper? Pass batched=False, or the module itself so that its batch_first is read"),
                          layer_class=type(layer).__name__, batch_dim=batch_dim(layer), gap=gap, allowed=allowed)


def forward_rows(layer: Callable[[Tensor], Tensor], x: Tensor, p: int, probes: int | None,
                  seed: int) -> Tensor:
    """Forward-mode rows for ``reach._block_norms``: (N, T, 1), row n holding ||J t_n|| at t_n's position.

    Exact: one unit tangent per input element (N = T d_in), so the squares add up to ||J_i||_F^2;
    probes: k Gaussian tangents per position (N = k T), E||J_i t||^2 = ||J_i||_F^2. A NaN output row
    carries NaN tangents only to itself.
    """
    import torch.autograd.forward_ad as fwAD

    T, d_in = x.shape
    if probes is None:
        tangents = torch.eye(T * d_in, dtype=x.dtype).reshape(T * d_in, T, d_in)
    else:
        generator = torch.Generator().manual_seed(seed)
        tangents = torch.zeros(probes * T, T, d_in, dtype=x.dtype)
        for i in range(T):
            tangents[i * probes:(i + 1) * probes, i] = torch.randn(probes, d_in, generator=generator, dtype=x.dtype)
    lengths = []
    for tangent in tangents.to(x.device):
        # PyTorch's first forward-mode call scripts its jvp decompositions (a deprecation warning)
        with fwAD.dual_level(), torch.enable_grad(), warnings_ignored(".*torch.jit.script.*deprecated",
                                                                      DeprecationWarning):
            out = layer(fwAD.make_dual(x.detach(), tangent))
            out = out[0] if isinstance(out, tuple) else out
            lengths.append(fwAD.unpack_dual(out).tangent[p].detach().norm())  # ||J t||
    where = (tangents.abs().sum(dim=-1) > 0).to(x.dtype).to(x.device)  # (N, T): the position of each tangent
    return (where * torch.stack(lengths)[:, None])[..., None]  # (N, T, 1)
