"""Sensitivity of a reach to tiny weight perturbations: is the figure a property of the layer or of one draw? (L3)

A recurrence whose W_hh has spectral radius ρ > 1 does not simply blow the gradient up: tanh saturates,
the trajectory of h_t becomes sensitive to its initial conditions, and ‖∂y_T/∂x_1‖ after hundreds of steps
can move by many orders of magnitude when W_hh changes in its seventh significant digit. A single number
printed for such a layer is then one draw from a wide distribution, not a fact about it.

:func:`measure_sensitivity` measures the reach again on a few seeded copies of the layer whose chosen weight
is multiplied element-wise by (1 + ε·n), n ~ N(0, 1), ε = 1e-7 by default, and reports the spread in orders
of magnitude, log10(max / min), over the unperturbed and the perturbed reaches. The reach is *chaotic* when
that spread exceeds :data:`CHAOTIC_ORDERS` (a perturbation far below float32's resolution moves it by more
than a factor of 10); otherwise the figure stands.

Shapes: T positions, d_in input width. Units: reach in units of y per unit of x; spread in decades.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.reach import measure_reach

#: Relative size of each weight perturbation: far below float32's resolution (1.2e-7 relative).
PERTURBATION = 1e-7
#: Perturbed copies measured.
DRAWS = 5
#: Spread (orders of magnitude, log10 max/min) above which a reach is called chaotic.
CHAOTIC_ORDERS = 1.0


@dataclass(frozen=True)
class Sensitivity:
    """The reach of one layer and of ``len(perturbed)`` copies whose weight was perturbed by ``relative``.

    Attributes:
        reach: the unperturbed ‖∂y_T/∂x_1‖_F.
        perturbed: the same on each perturbed copy (seeded, in draw order).
        weight: the parameter perturbed (e.g. ``"weight_hh"``).
        relative: ε, the relative size of the perturbation (each entry times 1 + ε·n, n ~ N(0, 1)).
        seed: seed of the perturbations.
        threshold_orders: spread above which the reach is called chaotic.
        low, high: the smallest and largest of all the reaches (computed).
        spread_orders: log10(high / low); ``inf`` when some reaches are 0 (underflow) and others are not,
            0.0 when all are 0 (computed).
        chaotic: ``spread_orders > threshold_orders`` (computed; a test patches ``perturbed`` and sees it flip).
    """

    reach: float
    perturbed: tuple[float, ...]
    weight: str
    relative: float
    seed: int
    threshold_orders: float = CHAOTIC_ORDERS
    low: float = field(init=False)
    high: float = field(init=False)
    spread_orders: float = field(init=False)
    chaotic: bool = field(init=False)

    def __post_init__(self) -> None:
        values = (self.reach, *self.perturbed)
        low, high = min(values), max(values)
        if high == 0.0:
            spread = 0.0
        elif low <= 0.0 or not math.isfinite(high):
            spread = math.inf
        else:
            spread = math.log10(high / low)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "spread_orders", spread)
        object.__setattr__(self, "chaotic", spread > self.threshold_orders)


def measure_sensitivity(layer: torch.nn.Module, weight: str, x: Tensor, *, reach: float | None = None,
                        relative: float = PERTURBATION, draws: int = DRAWS, seed: int = 0,
                        probes: int | None = 8, probe_seed: int = 0,
                        threshold_orders: float = CHAOTIC_ORDERS) -> Sensitivity:
    """Measure ‖∂y_T/∂x_1‖ on ``draws`` copies of ``layer`` whose ``weight`` is perturbed by ``relative``.

    Every copy is measured in float64 with the same probes (``probe_seed``) as the unperturbed layer, so
    the spread comes from the weights alone. ``layer`` itself is never modified.

    >>> rnn = torch.nn.RNN(3, 4, batch_first=True)
    >>> s = measure_sensitivity(rnn, "weight_hh_l0", torch.randn(6, 3), draws=2, probes=None)
    >>> len(s.perturbed), s.chaotic  # a short, contracting recurrence does not care about 1e-7
    (2, False)

    Args:
        layer: a module mapping batches of (T, d_in) rows to (T, d_out) rows along its own batch dimension
            (a tuple output is read at 0).
        weight: name of the parameter to perturb (``dict(layer.named_parameters())``).
        x: (T, d_in) input, T >= 2.
        reach: the unperturbed reach if already measured with the same probes (else measured here).
        relative: ε > 0. draws: copies (>= 1). seed: seed of the perturbations.
        probes: Hutchinson probes (None: exact), as :func:`~seqlab.measure.reach.measure_reach`.
        threshold_orders: spread in orders of magnitude above which the reach is called chaotic.

    Returns:
        A :class:`Sensitivity`.

    Raises:
        SeqlabError: an unknown weight name, ε not a finite number > 0, draws < 1, or bad reach arguments.

    Source: lesson claim L3 (repeated products by W_hh: growth for ρ > 1, with tanh saturation).
    """
    parameters = dict(layer.named_parameters())
    if weight not in parameters:
        raise SeqlabError(N_("weight must be one of {parameters}; received {weight!r}"),
                          parameters=', '.join(parameters), weight=weight, parameter="weight")
    if isinstance(relative, bool) or not isinstance(relative, (int, float)) or not 0 < relative < math.inf:
        raise SeqlabError(N_("relative must be a finite number > 0; received {relative!r}"), relative=relative,
                          parameter="relative")
    require_positive_int("draws", draws)
    base = copy.deepcopy(layer).double()  # float64: the reach may be 1e-250
    x64 = x.detach().double()

    def reach_of(module: torch.nn.Module) -> float:
        # the module itself, so that measure_reach replicates x along its own batch dim (batch_first)
        return measure_reach(module, x64, probes=probes, seed=probe_seed, batched=True).first

    unperturbed = reach_of(base) if reach is None else float(reach)
    generator = torch.Generator().manual_seed(seed)
    values = []
    for _ in range(draws):
        copy_ = copy.deepcopy(base)
        with torch.no_grad():
            w = dict(copy_.named_parameters())[weight]
            noise = torch.randn(w.shape, generator=generator, dtype=torch.float64)
            w.mul_(1.0 + relative * noise)
        values.append(reach_of(copy_))
    return Sensitivity(reach=unperturbed, perturbed=tuple(values), weight=weight, relative=float(relative),
                       seed=seed, threshold_orders=threshold_orders)

