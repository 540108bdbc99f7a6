"""Each threshold and comparison of :mod:`seqlab.fit` with the series exactly at it, just below and just above
(issue 38, item 9): the kind of exact counts, the fewest positions, a span that grows like T, the form's criteria.

Thresholds are written here by hand, never imported: a test that reads the constant it checks follows any change of
it. ``benchmarks/mutants.py`` reports which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from seqlab.errors import SeqlabError
from seqlab.fit import classify_growth, growth_kind, grows_like_length, sum_of_growths

# --- growth_kind: exact integers on an exact line, no tolerance --------------------------------------------------


@pytest.mark.parametrize("ts, ys, kind", [
    ((4, 8), (256, 512), "linear"),  # y = 64·t: slope 64 > 0, intercept 0
    ((4, 8), (4, 8), "linear"),  # slope 1 exactly: any slope above 0 grows
    ((4, 8), (2, 4), "linear"),  # slope 1/2: below 1 still grows
    ((4, 8), (256, 320), "constant + linear"),  # slope 16, intercept 192 > 0
    ((4, 8), (5, 9), "constant + linear"),  # slope 1, intercept 1: the least positive whole intercept
    ((4, 8), (3, 7), "other"),  # slope 1, intercept −1: a line that starts below 0 is no count's growth
    ((4, 8), (10, 8), "other"),  # slope −1/2: falls
    ((4, 8), (16, 64), "other"),  # two points of y = t²: an exact line, intercept −32
    ((4, 8, 16), (64, 64, 64), "constant"),  # one value
    ((4, 8), (7, 7), "constant"),
    ((4, 8, 16), (4, 7, 7), "capped"),  # grows, then the last two equal
    ((4, 8, 16, 32), (4, 7, 8, 8), "capped"),
    ((4, 8, 16), (16, 64, 256), "other"),  # grows on no line and never stops
    ((4, 8, 16), (7, 7, 4), "other"),  # falls to its last value
    ((4, 8, 16), (4, 8, 8), "capped"),  # on y = t up to 8, then stops: not on one line
])
def test_the_kind_of_exact_counts(ts, ys, kind):
    assert growth_kind(ts, ys) == kind


@pytest.mark.parametrize("ts, ys", [((4,), (1,)), ((4, 4), (1, 2)), ((4, 8), (1, 2, 3)), ((4, 8, 16), (1, 2))])
def test_a_kind_needs_two_distinct_positions_with_one_value_each(ts, ys):
    with pytest.raises(SeqlabError, match="a growth needs at least 2 distinct positions with one value each"):
        growth_kind(ts, ys)


# --- classify_growth: three positions at least -----------------------------------------------------------------


def test_classify_growth_names_a_form_from_three_positions():
    # 64·t at t = 4, 8, 16: linear, the form T, slope 64, intercept 0, no cap
    assert classify_growth((4, 8, 16), (256, 512, 1024)) == ("linear", "T", Fraction(64), Fraction(0), None)
    assert classify_growth((4, 8, 16), (4, 7, 7)) == ("capped", None, None, None, 7)
    assert classify_growth((4, 8, 16), (100, 100, 100)) == ("constant", "1", Fraction(0), Fraction(100), None)
    kind, form, slope, intercept, cap = classify_growth((4, 8, 16), (16, 64, 256))  # t²
    assert (kind, form, slope, intercept, cap) == ("other", "T²", None, None, None)


@pytest.mark.parametrize("ts, ys", [((4, 8), (1, 2)), ((4, 8, 8), (1, 2, 2)), ((4, 8, 16), (1, 2)),
                                    ((4, 8, 16, 32), (1, 2, 3))])
def test_classify_growth_refuses_two_positions_and_unequal_lengths(ts, ys):
    with pytest.raises(SeqlabError, match="a growth needs at least 3 distinct positions with one value each"):
        classify_growth(ts, ys)


def test_sum_of_growths_is_unnamed_when_a_part_is():
    assert sum_of_growths(["constant", "other"]) is None
    assert sum_of_growths(["other"]) is None
    assert sum_of_growths(["linear", None]) is None
    assert sum_of_growths(["linear", "capped", "constant"]) == "constant + linear + capped"
    assert sum_of_growths(["constant + linear", "linear"]) == "constant + linear"


# --- grows_like_length: value(T2)/value(T1) >= 0.9 · T2/T1 -------------------------------------------------------

#: 0.9 · 2 as the float the rule computes: 1.8000000000000000444 = 8106479329266893 / 2**52.
_AT = Fraction(0.9 * 2)


@pytest.mark.parametrize("values, grows", [
    ((_AT.denominator, _AT.numerator), True),  # exactly at 0.9 · T2/T1 (T2/T1 = 2): enough
    ((_AT.denominator, _AT.numerator - 1), False),  # one part in 8e15 below it
    ((10**7, 18_000_002), True),  # 1.8000002: 1e-7 above
    ((10**7, 17_999_998), False),  # 1.7999998: 1e-7 below
    ((24, 48), True), ((24, 30), False),
    ((1, 2), True),  # value(T1) = 1: the least value that can grow
    ((0, 5), False), ((0, 0), False),  # value(T1) = 0: no ratio to read
])
def test_a_span_grows_like_t_from_nine_tenths_of_t2_over_t1(values, grows):
    assert grows_like_length((8, 16), values) is grows
