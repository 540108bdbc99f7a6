"""When does a measured strength mean "depends"? The one rule seqlab uses, in one place (L3, L4, L11).

Dependency matrices (:mod:`seqlab.measure.mixing`), reach norms (:mod:`seqlab.measure.reach`) and the
submodule census measure a *strength*: the norm of a Jacobian block ||dy_j/dx_i||, or the change of y_j
when token i is replaced. Two different questions hide behind "is it zero?":

* **structural** — the strength is not exactly 0.0: the computation touched x_i on its way to y_j.
  Autograd returns exact zeros where the graph does not connect, so a structural zero is an exact 0.0;
* **numerical** — the strength is above the *rounding band* of the block, the size that rounding alone
  leaves where the exact answer is 0. A fused kernel returns about 1e-17 in float64 (1e-8 in float32)
  for a Jacobian entry whose exact value is 0 (e.g. the query of an attention row with a single open
  key, whose weight is 1 whatever the query is: ENGINE-NOTES, "attention's query path").

The rule (:func:`judge`)::

    band = ROUNDING_ULPS * eps(dtype) * scale,      scale = the largest finite strength of the block
    depends[j][i]   = strength[j][i] > band                       (numerical: what verdicts use)
    structural[j][i] = strength[j][i] != 0                         (exact zeros are structural zeros)
    rounding[j][i]  = structural and not depends                   (the two disagree: reported, not hidden)
    undefined[j][i] = strength[j][i] is NaN                        (never "depends", never "independent")

``scale`` is relative to the block measured, not to one row: rounding in a backward pass is a few
units in the last place of the largest values that flow through it. A real dependence weaker than the
band (a gradient that has vanished over a long recurrence, 1e-20 of the largest entry) is reported
as ``rounding``: structural but below what the dtype can resolve next to the block's scale, and callers
that study vanishing (reach) keep the raw strengths beside the verdict.

Shapes: T_out output rows, T_in input rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Width of the rounding band in units of eps(dtype) times the block's scale (see :func:`band`).
ROUNDING_ULPS = 64

Matrix = tuple[tuple[bool, ...], ...]


def band(scale: float, dtype: torch.dtype) -> float:
    """The rounding band: ROUNDING_ULPS * eps(dtype) * scale, in the strength's own units.

    >>> band(1.0, torch.float64) == 64 * 2.0 ** -52
    True

    Args:
        scale: the block's largest finite strength (>= 0).
        dtype: the floating dtype the strengths were computed in.

    Raises:
        SeqlabError: ``dtype`` is not a floating dtype, or ``scale`` is negative or not finite.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise SeqlabError(N_("dtype must be a floating torch dtype, received {dtype!r}"), dtype=dtype)
    if not (math.isfinite(scale) and scale >= 0.0):
        raise SeqlabError(N_("scale must be a finite number >= 0, received {scale!r}"), scale=scale)
    return ROUNDING_ULPS * float(torch.finfo(dtype).eps) * scale


@dataclass(frozen=True)
class Dependence:
    """A strength matrix judged by the rule of this module.

    Attributes:
        depends: T_out x T_in, strength above the rounding band (numerical dependence).
        structural: strength not exactly 0.0 (and not NaN).
        rounding: structural but within the band: the two rules disagree here, so both are reported.
        undefined: the strength is NaN (the output or its derivative is not a number).
        scale: the largest finite strength; band: the rounding band (same units); dtype: its name.
    """

    depends: Matrix
    structural: Matrix
    rounding: Matrix
    undefined: Matrix
    scale: float
    band: float
    dtype: str

    @property
    def disagreements(self) -> tuple[tuple[int, int], ...]:
        """(j, i) pairs where the structural and the numerical rule disagree (rounding, not dependence)."""
        return tuple((j, i) for j, row in enumerate(self.rounding) for i, value in enumerate(row) if value)

    @property
    def undefined_rows(self) -> tuple[int, ...]:
        """Output rows whose every strength is NaN (typically a NaN output row)."""
        return tuple(j for j, row in enumerate(self.undefined) if row and all(row))


def judge(strength: Sequence[Sequence[float]], dtype: torch.dtype) -> Dependence:
    """Judge a T_out x T_in strength matrix: numerical and structural dependence, rounding, NaN.

    >>> d = judge(((4.0, 0.0, 3.8e-16), (float("nan"),) * 3), torch.float64)
    >>> d.depends, d.structural[0], d.disagreements, d.undefined_rows
    (((True, False, False), (False, False, False)), (True, False, True), ((0, 2),), (1,))

    Args:
        strength: rows of floats (>= 0 or NaN), the strength of output row j on input row i.
        dtype: the floating dtype the strengths were computed in (sets eps).

    Returns:
        A :class:`Dependence`.

    Raises:
        SeqlabError: a negative or infinite strength, or ``dtype`` not floating.
    """
    values = [float(v) for row in strength for v in row]
    if any(v < 0.0 or math.isinf(v) for v in values):
        bad = next(v for v in values if v < 0.0 or math.isinf(v))
        raise SeqlabError(N_("strengths must be finite numbers >= 0 or NaN, received {bad!r}"), bad=bad)
    scale = max((v for v in values if not math.isnan(v)), default=0.0)
    width = band(scale, dtype)
    undefined = tuple(tuple(math.isnan(float(v)) for v in row) for row in strength)
    structural = tuple(tuple(not math.isnan(float(v)) and float(v) != 0.0 for v in row) for row in strength)
    depends = tuple(tuple(float(v) > width for v in row) for row in strength)  # NaN > x is False
    rounding = tuple(tuple(s and not d for s, d in zip(srow, drow)) for srow, drow in zip(structural, depends))
    return Dependence(depends, structural, rounding, undefined, scale, width, str(dtype).removeprefix("torch."))
