"""The attention reach of ``seqlab compare`` through the one query it is read at (L4).

The reach ‖∂y_T/∂x_i‖ reads one output row, y_T. In self-attention without a mask each output row is the
softmax-weighted mix of every value for *its own* query only (the softmax normalises each row on its own), so

    y_T = attention(q_T, K, V),   q_T = x_T W_q^T,  K = X W_k^T,  V = X W_v^T

is the same function of x as row T of the full layer: the other T - 1 queries change nothing in it. Pushing
the probe rows back through that one-query call gives the same Jacobian rows as pushing them back through
the full T x T attention (the same norms to float64 rounding), without forming the T x T scores that nobody
reads: at T = 2,917, d = 512 about 1 s of CPU instead of 9 s.

A causal layer (or any other) is measured through its full output, as before.

Shapes: T positions, d_model input width, d_v output width.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from seqlab.layers.attention import SelfAttention
from seqlab.measure.reach import Reach, measure_reach
from seqlab.studies.verdicts import power_trend


def query_row_reach(layer: SelfAttention, x: torch.Tensor, *, probes: int | None, seed: int) -> Reach:
    """‖∂y_T/∂x_i‖ for every i through a float64 copy of ``layer``, computed from the last query alone.

    The function handed to :func:`~seqlab.measure.reach.measure_reach` returns (T, d_v) whose last row is
    ``attention(q_T, K, V)`` and whose other rows are zeros (never read: the reach reads row T only). It
    equals, to rounding, ``measure_reach(lambda rows: layer64(rows)[0], x, batched=False)`` (the route used
    before; tests/test_compare_speed_routes.py compares the two). A causal layer takes that old route.

    >>> sa = SelfAttention(8, generator=torch.Generator().manual_seed(0))
    >>> r = query_row_reach(sa, torch.randn(5, 8), probes=None, seed=0)
    >>> len(r.norms), r.position, r.estimator, r.dtype
    (5, 4, 'exact', 'float64')

    Args:
        layer: a :class:`~seqlab.layers.attention.SelfAttention` in eval mode (it is copied, not changed).
        x: (T, d_model) token vectors, T >= 2.
        probes: Hutchinson probes (None: exact); seed: their seed.

    Returns:
        A :class:`~seqlab.measure.reach.Reach` in float64 at the last position.

    Raises:
        SeqlabError: as :func:`~seqlab.measure.reach.measure_reach` (e.g. T < 2).

    Source: lesson claim L4 (one weight α_Ti between any two positions).
    """
    layer64 = copy.deepcopy(layer).double()
    if layer64.causal:
        return measure_reach(lambda rows: layer64(rows)[0], x.double(), probes=probes, seed=seed)

    def last_row(rows: torch.Tensor) -> torch.Tensor:  # (T, d_model) -> (T, d_v), row T the only one read
        q, k, v = layer64.project(rows)  # (T, d_k), (T, d_k), (T, d_v)
        y_last = layer64.attention(q[-1:], k, v)[0]  # (1, d_v)
        return torch.cat([y_last.new_zeros(rows.shape[0] - 1, y_last.shape[-1]), y_last])

    return measure_reach(last_row, x.double(), probes=probes, seed=seed)


def query_row_reaches(layer: SelfAttention, x: torch.Tensor, probes: Callable[[int], int | None],
                      seed: int) -> tuple[Reach, Reach | None, Reach | None]:
    """:func:`query_row_reach` of y_T on the T tokens, of y_{T/2} on the first T // 2 and of y_{T/4} on the first
    T // 4 (each None when that prefix is shorter than 2 tokens).

    >>> layer = SelfAttention(4, generator=torch.Generator().manual_seed(0)).eval()
    >>> full, half, quarter = query_row_reaches(layer, torch.randn(8, 4), lambda T: 2, seed=0)
    >>> len(full.norms), len(half.norms), len(quarter.norms)
    (8, 4, 2)

    Args:
        layer: the attention layer; x: (T, d_model) token vectors.
        probes: the probe count for a length (None: exact); seed: seed of the probes.
    """
    def prefix(n: int) -> Reach | None:
        return query_row_reach(layer, x[:n], probes=probes(n), seed=seed) if n >= 2 else None

    T = x.shape[0]
    return query_row_reach(layer, x, probes=probes(T), seed=seed), prefix(T // 2), prefix(T // 4)


@dataclass(frozen=True)
class ReachTrend:
    """How position 1's reach through attention follows T: a power T^exponent fitted by least squares in log-log.

    Attributes:
        lengths: the T of each reading, shortest first; reaches: ‖∂y_T/∂x_1‖ at each (float64).
        exponent: the fitted power (-1: the one weight α_T1 falls as 1/T, as a uniform softmax would).
    """

    lengths: tuple[int, ...]
    reaches: tuple[float, ...]
    exponent: float


def reach_trend(readings: Sequence[Reach | None]) -> ReachTrend | None:
    """The power of T that position 1's reach follows over ``readings`` (each a :class:`Reach` at its last position),
    or None when they cannot carry a trend (:func:`~seqlab.studies.verdicts.power_trend`: three lengths spanning 4×;
    no trend is stated from two lengths or from a narrow range, issue 37).

    >>> from seqlab.measure.reach import Reach
    >>> at = lambda T, first: Reach((first,) + (1.0,) * (T - 1), T - 1, "exact", "float64", 2.2e-308, 5e-324, 0, 0,
    ...                              "batched")
    >>> trend = reach_trend([at(4, 0.25), at(8, 0.125), at(16, 0.0625)])
    >>> trend.lengths, round(trend.exponent, 6)
    ((4, 8, 16), -1.0)
    >>> reach_trend([at(8, 0.125), at(16, 0.0625)]) is None, reach_trend([at(6, .2), at(8, .1), at(12, .05)]) is None
    (True, True)
    """
    points = sorted((r.position + 1, r.first) for r in readings if r is not None and r.first > 0.0)
    exponent = power_trend([T for T, _ in points], [value for _, value in points])
    if exponent is None:
        return None
    return ReachTrend(tuple(T for T, _ in points), tuple(value for _, value in points), exponent)
