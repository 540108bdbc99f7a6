"""Transition factors: the multiplicative factor a layer puts between positions, declared to be scaled (issues 23, 38).

A signal from x_i reaches y_j through products: the lesson's recurrence multiplies it by W_hh once per step (L3),
attention by one weight α_ji whatever the distance (L4), a diagonal or selective recurrence by one decay a_t per
step. A mixer *declares* that factor with three class attributes,

* ``transition_factor`` — its name as printed (``"W_hh"``, ``"a_t"``, ``"α_ji"``);
* ``transition_scaling`` — :data:`FORWARD` or :data:`BACKWARD`, how a measurement scales it;
* ``transition_scale`` — None by default; a measurement (:mod:`seqlab.measure.signal_path`) sets a float s or a
  :class:`Scaling`,

and routes the factor through :func:`apply_transition` in its forward. While the scale is None that call returns
its input untouched and records nothing, so the default forward graph (every op count, span and path seqlab
measures) is the one it was without the declaration. With a scale s:

* :data:`FORWARD` — the factor itself (the decays a_t of a diagonal or selective recurrence, Mamba's decays,
  attention's weights α) is multiplied by s in the forward pass. This is a measurement of the *function*: y is
  homogeneous of degree k in the factor along every route exactly when J_ji(s) = s^k J_ji(1), whether the loop or a
  parallel scan computes the products. A layer that marks the wrong tensor fails it: scores instead of weights give
  no power at all (the softmax is not homogeneous), weights used twice give k = 2, a route around them mixes powers.
* :data:`BACKWARD` (the Elman recurrence, whose tanh would see a scaled W_hh·h_{t-1}; the weighted sums Σ_i α_ji v_i
  of layers that never form α as a tensor) — the identity in the forward, the gradient multiplied by s in the
  backward: the *marked product* scales every route that crosses it, so k counts crossings of the marked product.
  A route around the mark still shows (a mixture of powers); what the product multiplies by is declared, not
  measured, and the reading says so (:attr:`seqlab.measure.signal_path.SignalPath.counted_at`).

A :class:`Scaling` (rather than a float) is what :mod:`seqlab.measure.signal_path` sets: its s is read when the
gradient crosses a :data:`BACKWARD` mark, so one recorded forward serves every scale, and it keeps the gradient in
float64's range *factor by factor*: a gradient leaving a mark with its largest magnitude outside
[2^-:data:`BAND`, 2^:data:`BAND`] is multiplied by an exact power of two, whose exponent is recorded (and replayed,
mark by mark, in the other backward passes of the same measurement, or with one more factor 2 in a shadow pass).

Shapes: whatever the factor's tensor has; scaling is element-wise by a Python float.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["BACKWARD", "BAND", "FORWARD", "SCALINGS", "Scaling", "apply_transition", "declares_transition"]

FORWARD = "forward"
BACKWARD = "backward"
#: The ways a declared factor is scaled.
SCALINGS = (FORWARD, BACKWARD)


#: A gradient leaving a :data:`BACKWARD` mark with its largest magnitude below 2^-BAND or above 2^BAND is brought
#: back to about 1 by an exact power of two (float64 keeps about 2^±1022: the margin leaves room for the other
#: scales and probes of one measurement, which replay the same exponents).
BAND = 256


class Scaling:
    """A measurement's scale s for every declared factor, shared by the declaring modules of one measurement.

    >>> scaling = Scaling(2.0)
    >>> scaling.s, scaling.applied, scaling.exponent
    (2.0, 0, 0)

    Attributes:
        s: the scale (a float > 0): read by :data:`FORWARD` factors in the forward, by :data:`BACKWARD` marks when
            the gradient crosses them (so it may change between two backward passes over one recorded forward).
        applied: marks applied in the forward so far (each mark's index in :attr:`decisions`).
        applied_by: ids of the modules whose factor was applied (a declared factor never applied is refused).
        decisions: mark index -> the power of two its gradient was multiplied by (recorded while ``replay`` is
            None; only indices whose exponent is not 0).
        replay: None (decide: rescale where the gradient leaves the band, record it), or the decisions of an
            earlier pass to apply again, each exponent plus ``offset`` (1: a shadow pass with one more factor 2 at
            every rescaled mark, so the marks the routes cross can be counted from the result itself).
        offset: see ``replay``.
        exponent: the sum of the exponents applied in this backward pass (the gradient read at the end is the true
            one times 2^exponent).
    """

    def __init__(self, s: float = 1.0) -> None:
        self.s = float(s)
        self.applied = 0
        self.applied_by: set[int] = set()
        self.decisions: dict[int, int] = {}
        self.replay: dict[int, int] | None = None
        self.offset = 0
        self.exponent = 0

    def start(self, s: float, replay: dict[int, int] | None = None, offset: int = 0) -> None:
        """Prepare one backward pass at scale s: decide afresh (``replay`` None) or replay earlier decisions."""
        self.s, self.replay, self.offset, self.exponent = float(s), replay, offset, 0
        if replay is None:
            self.decisions = {}

    def rescale(self, index: int, grad: Tensor) -> Tensor:
        """``grad`` times s, then times the power of two decided (or replayed) for mark ``index``."""
        grad = grad * self.s if self.s != 1.0 else grad
        if self.replay is not None:
            e = self.replay.get(index, 0)
            e = e + self.offset if e else 0
        else:
            largest = float(grad.abs().max()) if grad.numel() else 0.0
            e = 0
            if 0.0 < largest < math.inf:
                power = math.frexp(largest)[1]  # largest = m · 2^power, 0.5 <= m < 1
                if not -BAND <= power <= BAND:
                    e = -power
                    self.decisions[index] = e
        if e:
            self.exponent += e
            grad = grad * math.ldexp(1.0, e)  # exact: a power of two
        return grad


class _ScaleGradient(torch.autograd.Function):
    """Identity forward; gradient times s backward (a marker: one s on every route that crosses it).

    Written with ``ctx`` in ``forward`` (no ``setup_context``): ``Function.apply`` then skips binding default
    arguments through ``inspect.signature``, which costs more than the whole step of a small recurrence.
    """

    @staticmethod
    def forward(ctx, x: Tensor, s: float) -> Tensor:  # type: ignore[override]
        ctx.s = s
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return grad * ctx.s, None


class _MarkGradient(torch.autograd.Function):
    """Identity forward; backward: the gradient through :meth:`Scaling.rescale` (s read when the gradient crosses)."""

    @staticmethod
    def forward(ctx, x: Tensor, scaling: Scaling, index: int) -> Tensor:  # type: ignore[override]
        ctx.scaling, ctx.index = scaling, index
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        return ctx.scaling.rescale(ctx.index, grad), None, None


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

    Each scaled call is recorded — in the :class:`Scaling` (``applied``, ``applied_by``), or with a float scale in
    ``module.transition_applied`` — so a measurement can tell a declared factor the forward never reached from a
    factor it did.

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
        factor: the factor's tensor (the decays a_t; the weights α; W_hh h_{t-1}; Σ_i α_ji v_i), any shape.

    Returns:
        ``factor`` itself, or s · factor (:data:`FORWARD`), or a marker on it (:data:`BACKWARD`); with a
        :class:`Scaling`, the marker's gradient goes through :meth:`Scaling.rescale`.
    """
    s = module.transition_scale
    if s is None:
        return factor
    if isinstance(s, Scaling):
        s.applied += 1
        s.applied_by.add(id(module))
        if module.transition_scaling == FORWARD:
            return factor * s.s if s.s != 1.0 else factor
        return _MarkGradient.apply(factor, s, s.applied)
    module.transition_applied = getattr(module, "transition_applied", 0) + 1
    if module.transition_scaling == FORWARD:
        return factor * s
    return _ScaleGradient.apply(factor, s)
