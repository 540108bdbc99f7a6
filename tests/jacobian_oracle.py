"""A second route to path dependence for the tests: the float64 Jacobian, position by position.

Output position j depends on input position i when the block ∂y_j/∂x_i has an entry above 64 eps times the
largest entry of the whole Jacobian (seqlab's own dependence threshold, :mod:`seqlab.measure.dependence`,
applied here independently of the tracer). Shapes: x (T, d_in) or (1, T, d_in); y (…, T_out, d_out).
"""

from __future__ import annotations

import torch


def dependence(layer, x: torch.Tensor) -> tuple[tuple[bool, ...], ...]:
    """depends[i][j]: y_j depends on x_i, from the float64 Jacobian (x and the layer in float64)."""
    x = x.detach().to(torch.float64)

    def flat(z):
        y = layer(z)
        y = y[0] if isinstance(y, tuple) else y
        return y

    jacobian = torch.autograd.functional.jacobian(flat, x)  # (*y.shape, *x.shape)
    y_shape = flat(x).shape
    T_out, T_in = y_shape[-2], x.shape[-2]
    blocks = jacobian.reshape(-1, T_out, y_shape[-1], *x.shape).movedim(1, 0)  # (T_out, batch, d_out, *x.shape)
    blocks = blocks.reshape(T_out, -1, *x.shape).movedim(-2, 1).reshape(T_out, T_in, -1).abs()
    scale = float(blocks.max()) if blocks.numel() else 0.0
    strength = blocks.amax(dim=-1)  # (T_out, T_in)
    limit = 64 * torch.finfo(torch.float64).eps * scale
    return tuple(tuple(bool(strength[j, i] > limit) for j in range(T_out)) for i in range(T_in))


def traced(paths) -> tuple[tuple[bool, ...], ...]:
    """The same reading of a :class:`~seqlab.measure.paths.PathMatrix`: a path exists."""
    return tuple(tuple(v is not None for v in row) for row in paths.products)
