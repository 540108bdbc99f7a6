"""Growth fits: how a measured quantity grows with T — a power law, or a logarithm (Table 1's columns).

``fit_growth`` fits y ≈ c·x^p and y ≈ a + b·ln x by least squares and keeps the logarithm only when it
is clearly better, so the paper's O(1), O(n), O(n²) and O(log_k n) can be told apart from a handful of
measured sizes. Pure Python: numbers in, a frozen :class:`Fit` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from seqlab.errors import SeqlabError

#: The logarithm is kept only when its error is below this share of the power law's.
LOG_PREFERENCE = 0.5


@dataclass(frozen=True)
class Fit:
    """Growth of a series y(x) fitted two ways by least squares, and the model kept.

    Attributes:
        model: "power" or "log", the kept model (see :func:`fit_growth`).
        exponent: slope of ln y on ln x (the power law's exponent).
        prefactor: exp(intercept): y ≈ prefactor · x^exponent.
        log_intercept, log_slope: a and b of y ≈ a + b·ln x.
        power_error, log_error: RMS of ln(ŷ/y) of each model (inf where the logarithm predicts y ≤ 0).
    """

    model: str
    exponent: float
    prefactor: float
    log_intercept: float
    log_slope: float
    power_error: float
    log_error: float


def _least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through the points."""
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    s_xx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / s_xx
    return mean_y - slope * mean_x, slope


def fit_growth(xs: Sequence[int], ys: Sequence[float]) -> Fit:
    """Fit y ≈ c·x^p and y ≈ a + b·ln x; keep the logarithm only if its error is under half the power law's.

    Errors are compared in the same space, RMS of ln(ŷ/y), so a constant (both exact) stays a power
    law of exponent 0.

    >>> round(fit_growth([16, 32, 64], [512, 2048, 8192]).exponent, 6)  # y = 2 x²
    2.0
    >>> fit = fit_growth([16, 32, 64, 128], [4, 5, 6, 7])  # y = log2 x
    >>> fit.model, round(fit.log_slope * math.log(2), 6)
    ('log', 1.0)

    Args:
        xs: at least 3 distinct positive sizes.
        ys: as many positive values.

    Returns:
        A :class:`Fit`.

    Raises:
        SeqlabError: fewer than 3 points, lengths differ, repeated or non-positive x, or y ≤ 0.
    """
    if len(xs) != len(ys) or len(set(xs)) < 3:
        raise SeqlabError(f"a growth fit needs at least 3 distinct sizes with one value each, received "
                          f"{list(xs)} and {list(ys)}")
    if any(x <= 0 for x in xs) or any(y is None or not y > 0 for y in ys):
        raise SeqlabError(f"a growth fit needs positive sizes and values, received {list(xs)} and {list(ys)}")
    log_x = [math.log(x) for x in xs]
    log_y = [math.log(y) for y in ys]
    intercept, exponent = _least_squares(log_x, log_y)
    power_error = math.sqrt(sum((intercept + exponent * lx - ly) ** 2 for lx, ly in zip(log_x, log_y)) / len(xs))
    a, b = _least_squares(log_x, [float(y) for y in ys])
    predicted = [a + b * lx for lx in log_x]
    log_error = math.inf if any(p <= 0 for p in predicted) else \
        math.sqrt(sum((math.log(p) - ly) ** 2 for p, ly in zip(predicted, log_y)) / len(xs))
    keep_log = b > 0 and log_error < LOG_PREFERENCE * power_error
    return Fit(model="log" if keep_log else "power", exponent=exponent, prefactor=math.exp(intercept),
               log_intercept=a, log_slope=b, power_error=power_error, log_error=log_error)


def two_point_fit(xs: Sequence[int], ys: Sequence[int]) -> Fit:
    """The power law through two points (no model choice is possible with two)."""
    exponent = math.log(ys[1] / ys[0]) / math.log(xs[1] / xs[0])
    return Fit(model="power", exponent=exponent, prefactor=ys[0] / xs[0] ** exponent, log_intercept=math.nan,
               log_slope=math.nan, power_error=0.0, log_error=math.nan)
