"""Transition factors: the multiplicative factor a layer puts between positions, declared to be scaled (issue 23).

A signal from x_i reaches y_j through products: the lesson's recurrence multiplies it by W_hh once per step (L3),
attention by one weight α_ji whatever the distance (L4), a diagonal or selective recurrence by one decay a_t per
step. A mixer *declares* that factor with three class attributes,

* ``transition_factor`` — its name as printed (``"W_hh"``, ``"a_t"``, ``"α_ji"``);
* ``transition_scaling`` — :data:`FORWARD` or :data:`BACKWARD`, how a measurement scales it;
* ``transition_scale`` — None by default; a measurement (:mod:`seqlab.measure.signal_path`) sets a float s,

and routes the factor through :func:`apply_transition` in its forward. While the scale is None that call returns
its input untouched and records nothing, so the default forward graph (every op count, span and path seqlab
measures) is the one it was without the declaration. With a scale s:

* :data:`FORWARD` (linear-in-state layers: the decays of a diagonal or selective recurrence, Mamba's block) — the
  factor is multiplied by s in the forward pass. The state is linear in the decays, so J_ji(s) = s^k J_ji(1) with
  k the decays met, whether the loop or a parallel scan computes the products (the scan groups the same factors).
* :data:`BACKWARD` (the Elman recurrence, whose tanh would see a scaled W_hh·h_{t-1}; attention's weighted sum
  Σ_i α_ji v_i, which every route through α_ji takes) — the identity in the forward, the gradient multiplied by s in
  the backward, so every route picks up one s per factor it crosses and J(s) = s^k J(1) exactly.

Shapes: whatever the factor's tensor has; scaling is element-wise by a Python float.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["BACKWARD", "FORWARD", "SCALINGS", "apply_transition", "declares_transition"]

FORWARD = "forward"
BACKWARD = "backward"
#: The ways a declared factor is scaled.
SCALINGS = (FORWARD, BACKWARD)


class _ScaleGradient(torch.autograd.Function):
    """Identity forward; gradient times s backward (a marker: one s on every route that crosses it)."""

    @staticmethod
    def forward(x: Tensor, s: float) -> Tensor:  # type: ignore[override]
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs: tuple[Tensor, float], output: Tensor) -> None:  # type: ignore[override]
        ctx.s = inputs[1]

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return grad * ctx.s, None


def declares_transition(module: object) -> bool:
    """Whether ``module`` declares a transition factor (the three attributes above, a known scaling).

    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> declares_transition(ElmanRNN(2, 2)), declares_transition(torch.nn.RNN(2, 2))
    (True, False)
    """
    return (isinstance(getattr(module, "transition_factor", None), str)
            and getattr(module, "transition_scaling", None) in SCALINGS and hasattr(module, "transition_scale"))


def apply_transition(module: torch.nn.Module, factor: Tensor) -> Tensor:
    """``factor`` as ``module``'s forward uses it: untouched while its ``transition_scale`` is None, else scaled.

    Each scaled call adds one to ``module.transition_applied`` (set by the measurement), so a measurement can tell
    a declared factor the forward never reached from a factor it did.

    >>> from seqlab.layers.linear_recurrence import DiagonalRecurrence
    >>> layer = DiagonalRecurrence(2)
    >>> a = torch.tensor([0.5, 0.25])
    >>> apply_transition(layer, a) is a
    True
    >>> layer.transition_scale = 2.0
    >>> apply_transition(layer, a).tolist()  # forward scaling: s · a_t
    [1.0, 0.5]

    Args:
        module: a module that :func:`declares_transition`.
        factor: the factor's tensor (the decays a_t; W_hh h_{t-1}; Σ_i α_ji v_i), any shape.

    Returns:
        ``factor`` itself, or s · factor (:data:`FORWARD`), or a marker on it (:data:`BACKWARD`).
    """
    s = module.transition_scale
    if s is None:
        return factor
    module.transition_applied = getattr(module, "transition_applied", 0) + 1
    if module.transition_scaling == FORWARD:
        return factor * s
    return _ScaleGradient.apply(factor, s)
