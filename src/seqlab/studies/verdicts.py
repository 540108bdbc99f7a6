"""Three-valued verdicts for ``seqlab check``: a measurement, a condition that can fail, and a margin.

Every claim L1–L12 is judged as one of :data:`VERDICTS`:

* ``"holds"`` — the measurement meets the claim's condition with its margin;
* ``"holds_with_caveat"`` — it meets the claim as the lesson means it, but the measurement shows a limit
  the lesson's wording leaves out (a scope at which the other side wins, a weight that shrinks with T,
  growth that needs a spectral radius well above 1 once tanh works), or it was too noisy to decide;
* ``"not_judged"`` — the measurement decided nothing (every comparison the claim rests on was inside its
  noise, or the machine was busy): neither held nor failed, and said so, rather than a guess;
* ``"does_not_hold"`` — the measurement contradicts the claim beyond its margin.

A check returns a :class:`Judgement`: the verdict, the raw figures, and the condition as structured data
(what was compared, the threshold or margin, which caveats apply). The renderers turn the condition into a
sentence; nothing here is worded for a reader. :func:`verdict_of` is the one rule that maps "contradicted"
and a list of caveats to a verdict, so every claim uses the same logic. :func:`loglog_slope` fits the
exponent k of y ≈ c·x^k (L4's reach against T).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

HOLDS = "holds"
CAVEAT = "holds_with_caveat"
FAILS = "does_not_hold"
NOT_JUDGED = "not_judged"
#: The verdicts, from best to worst (``not_judged`` is no verdict on the claim: nothing was decided).
VERDICTS = (HOLDS, CAVEAT, NOT_JUDGED, FAILS)


@dataclass(frozen=True)
class Judgement:
    """What a claim's check returns.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        values: every figure measured, by name (integers and Fractions exact, floats as measured, seconds
            for times).
        condition: the rule applied, as data: ``"rule"`` names it, the thresholds and margins it used are
            given by name, and ``"caveats"`` lists the caveats that apply (empty when none).
    """

    verdict: str
    values: dict[str, Any] = field(default_factory=dict)
    condition: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise SeqlabError(N_("verdict must be one of {verdicts}; received {verdict!r}"),
                              verdicts=', '.join(VERDICTS), verdict=self.verdict)


def verdict_of(contradicted: bool, caveats: Sequence[str] = (), decided: bool = True) -> str:
    """The verdict from whether the measurement contradicts the claim, which caveats apply, and whether the
    measurement decided anything at all (``decided=False``: ``not_judged``, never ``holds``).

    >>> verdict_of(False), verdict_of(False, ["layer_scope"]), verdict_of(True, ["layer_scope"])
    ('holds', 'holds_with_caveat', 'does_not_hold')
    >>> verdict_of(False, ["undecided_scopes"], decided=False)
    'not_judged'
    """
    if contradicted:
        return FAILS
    if not decided:
        return NOT_JUDGED
    return CAVEAT if caveats else HOLDS


#: A trend in T (a power, "falls", "does not fall") is stated from at least this many lengths ...
TREND_LENGTHS = 3
#: ... spanning at least this ratio, longest over shortest: through two points any power fits, and over a narrow
#: range noise does (issue 37).
TREND_SPAN = 4


def power_trend(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The exponent k of y ≈ c·x^k (:func:`loglog_slope`) when the points can carry a trend, else None: at least
    :data:`TREND_LENGTHS` points with finite y > 0 whose x span at least :data:`TREND_SPAN` times.

    >>> power_trend([8, 16, 32], [1 / 8, 1 / 16, 1 / 32]), power_trend([16, 32], [1 / 16, 1 / 32])
    (-1.0, None)
    >>> power_trend([10, 20, 39], [1, 1, 1]), power_trend([10, 20, 40], [1, 0.0, 1])
    (None, None)
    """
    points = sorted((x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y) and y > 0)
    if len({x for x, _ in points}) < TREND_LENGTHS or points[-1][0] < TREND_SPAN * points[0][0]:
        return None
    return loglog_slope([x for x, _ in points], [y for _, y in points])


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope k of log y on log x: the exponent of y ≈ c·x^k.

    >>> round(loglog_slope([8, 16, 32], [1 / 8, 1 / 16, 1 / 32]), 6)  # y = 1/x
    -1.0

    Raises:
        SeqlabError: fewer than two points, or a value that is not finite and > 0.
    """
    points = [(float(x), float(y)) for x, y in zip(xs, ys)]
    if len(points) < 2 or any(not (math.isfinite(v) and v > 0) for point in points for v in point):
        raise SeqlabError(N_("expected two or more points with finite values > 0, received {points!r}"), points=points)
    lx, ly = [math.log(x) for x, _ in points], [math.log(y) for _, y in points]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    if sxx == 0:
        raise SeqlabError(N_("expected at least two different x, received {xs!r}"), xs=list(xs))
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx
