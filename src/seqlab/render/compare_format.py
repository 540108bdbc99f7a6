"""How ``compare`` writes one figure: counts, times with their spread, paths, reaches and order tests.

Shared by the table (:mod:`seqlab.render.compare`) and the sentences (:mod:`seqlab.render.compare_prose`), so
a figure reads the same in both. Nothing here measures or decides a verdict.
"""

from __future__ import annotations

import math

from seqlab.errors import SeqlabError
from seqlab.i18n import format_integer, format_number, format_seconds, translator
from seqlab.measure.order import OrderResult
from seqlab.measure.paths import PathMatrix
from seqlab.measure.reach import Reach
from seqlab.measure.timing import MIN_BLOCKS, Timing
from seqlab.measure.work import WorkCount

DASH = "—"

__all__ = ["DASH", "MIN_BLOCKS", "Formatter", "timed_blocks", "timing_quality"]


def timed_blocks(timing: Timing) -> int:
    """How many timed blocks the median comes from (``Timing.runs`` counts calls, not blocks)."""
    return len(timing.samples)


def timing_quality(*timings: Timing | None) -> str | None:
    """Why some of ``timings`` should be read loosely: ``"few"`` (a timing from fewer than 3 timed blocks,
    so no spread was measured), ``"noisy"`` (a spread over a tenth of the median, or torch warned: the
    machine was busy), or None when every one is steady.

    ``Timing.noisy`` also holds for fewer than 3 blocks; the two causes are told apart here, so the words
    say which one it was.
    """
    present = [timing for timing in timings if timing is not None]
    if any(timed_blocks(timing) < MIN_BLOCKS for timing in present):
        return "few"
    if any(timing.noisy for timing in present):
        return "noisy"
    return None


class Formatter:
    """Language-bound helpers so the row builders and sentences stay short."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._ = translator(lang)

    def integer(self, value: int) -> str:
        return format_integer(value, self.lang)

    def number(self, value: float) -> str:
        return format_number(value, self.lang)

    def time(self, timing: Timing | None) -> str:
        """Median with its spread and the number of timed blocks; no IQR from fewer than 3 blocks (L8)."""
        if timing is None:
            return DASH
        median, blocks = format_seconds(timing.median_s, self.lang), timed_blocks(timing)
        if blocks == 1:
            return self._("{median} (one timed block, no spread)").format(median=median)
        if blocks < MIN_BLOCKS:
            return self._("{median} ({blocks} timed blocks, no spread)").format(median=median, blocks=blocks)
        text = self._("{median} (IQR {spread}, {blocks} timed blocks)").format(
            median=median, spread=format_seconds(timing.iqr_s, self.lang), blocks=blocks)
        return text + (" " + self._("noisy") if timing.noisy else "")

    def path(self, path: PathMatrix, width: int | None = None) -> str:
        """``products (ops)`` from position 1 to T, and the width it was traced at when narrower."""
        products, ops = path.products[0][-1], path.ops[0][-1]
        if products is None:
            return self._("no path")
        text = f"{self.integer(products)} ({self.integer(ops)})"
        return text if width is None else text + " " + self._("traced at d = {width}").format(width=width)

    def reach(self, reach: Reach) -> str:
        if reach.first == 0.0:
            return self._("0: below the smallest {dtype} ({floor})").format(
                dtype=reach.dtype, floor=self.number(reach.smallest_subnormal))
        return self.number(reach.first)

    def decay(self, reach: Reach) -> float | None:
        """The log-linear fit of the reach over every distance (``--detailed`` only)."""
        try:
            return reach.decay_per_step()
        except SeqlabError:  # fewer than two representable norms: nothing to fit
            return None

    def orders(self, value: float) -> str:
        """A spread in orders of magnitude (``∞`` when some values underflowed to 0)."""
        return "∞" if math.isinf(value) else self.number(value)

    def counted(self, counted: WorkCount | None, closed_form: int) -> str:
        if counted is None:
            return DASH
        counted = counted.multiplications
        mark = "= " + self._("formula") if counted == closed_form else "≠ " + self._("formula")
        return f"{self.integer(counted)} ({mark})"

    def order(self, result: OrderResult | None) -> str:
        if result is None:
            return DASH
        change = self.number(result.max_abs_change)
        if result.verdict.startswith("cannot tell at "):  # within the layer's own rounding, unsettled in float64
            verdict = self._("cannot tell at {dtype}: the change is within rounding").format(dtype=result.dtype)
        elif result.verdict == "does not hold":
            verdict = self._("outputs change")
        elif result.kind == "rows":
            verdict = self._("outputs shuffled the same way")
        else:
            verdict = self._("outputs unchanged")
        return f"{verdict} (max |Δ| = {change})"
