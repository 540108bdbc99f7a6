"""Each threshold and comparison of :mod:`seqlab.fit` with the series exactly at it, just below and just above
(issue 38, item 9): the kind of exact counts, the fewest positions, a span that grows like T, the form's criteria.

Thresholds are written here by hand, never imported: a test that reads the constant it checks follows any change of
it. ``benchmarks/mutants.py`` reports which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from seqlab import fit
from seqlab.errors import SeqlabError
from seqlab.fit import (
    choose_form,
    classify_growth,
    fit_forms,
    fit_growth,
    grows_like_length,
    growth_kind,
    judge_form,
    sum_of_growths,
)

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


# --- fit_growth: the logarithm is kept when it rises and its error is under half the power law's ----------------


@pytest.mark.parametrize("slope, model", [(0.5, "log"), (1 / math.log(2), "log"), (-0.5, "power")])
def test_an_exact_logarithm_is_kept_at_any_rising_slope(slope, model):
    """y = 10 + b·ln x exactly: kept as a logarithm at b = 0.5 (below 1 too); at b = −0.5 (falling, above −1) never."""
    xs = [16, 32, 64, 128]
    got = fit_growth(xs, [10 + slope * math.log(x) for x in xs])
    assert got.model == model
    assert got.log_slope == pytest.approx(slope, rel=1e-12) and got.log_error == pytest.approx(0, abs=1e-12)


def test_a_logarithm_exactly_at_the_preference_is_not_kept(monkeypatch):
    """log_error < preference · power_error, strictly: a preference at which the two sides are equal keeps the power
    law; the next float above it keeps the logarithm."""
    xs, ys = [16, 32, 64, 128], [4.0, 5.01, 5.99, 7.0]  # nearly log2 x: both errors above 0
    got = fit_growth(xs, ys)
    assert got.model == "log" and 0 < got.log_error < 0.5 * got.power_error
    preference = got.log_error / got.power_error
    while preference * got.power_error < got.log_error:
        preference = math.nextafter(preference, 1.0)
    while preference * got.power_error > got.log_error:
        preference = math.nextafter(preference, 0.0)
    assert preference * got.power_error == got.log_error
    monkeypatch.setattr(fit, "LOG_PREFERENCE", preference)
    assert fit_growth(xs, ys).model == "power"
    monkeypatch.setattr(fit, "LOG_PREFERENCE", math.nextafter(preference, 1.0))
    assert fit_growth(xs, ys).model == "log"


# --- the least squares: a pivot of 1e-300 is the least one solved; the columns scaled, so any unit of y fits -------


@pytest.mark.parametrize("entry, solved", [(1e-150, True), (1e-150 * (1 - 2e-7), False), (1e-150 * (1 - 1e-5), False),
                                           (1e-150 * (1 + 2e-7), True)])
def test_the_least_pivot_solved_is_1e_300(entry, solved):
    """One unknown, one row (entry): the pivot is entry² (1e-150² is 1e-300 exactly); below 1e-300 it is singular,
    even 4e-7 below it."""
    assert (1e-150 * 1e-150 == 1e-300) and ((entry * entry >= 1e-300) is solved)
    got = fit._solve([[entry]], [2 * entry])
    assert (got is not None) is solved
    if solved:
        assert got[0] == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize("unit", [1.0, 1e160, 1e-160])
def test_a_fit_reads_the_same_form_in_any_unit_of_y(unit):
    """5 + 2T in any unit: the columns are scaled before the normal equations, which would otherwise underflow
    (1/y² at y ≈ 1e160) or overflow (T²/y² at y ≈ 1e-160)."""
    xs = (16, 32, 64, 128)
    fits = fit_forms(xs, [unit * (5 + 2 * T) for T in xs])
    chosen = choose_form(fits)
    assert chosen.form == "T" and chosen.residual <= 1e-9
    assert [f.form for f in fits] == ["1", "log T", "√T", "T", "T log T", "T^1.5", "T²"]


# --- fit_growth's logarithm: a prediction at or below 0 has an infinite error -------------------------------------


@pytest.mark.parametrize("ys, predicted", [((1, 1, 7), 0.0), ((1, 1, 7.5), -1 / 12)])
def test_a_logarithm_that_predicts_zero_or_just_below_has_an_infinite_error(ys, predicted):
    """At x = 1, 2, 4 the line in ln x through (1, 1, 7) is 3·log₂x: it predicts 0 at x = 1 (exactly, in floats);
    (1, 1, 7.5) predicts −1/12 there. Neither can be read in log space: the power law is kept. x = 1 is a size."""
    got = fit_growth([1, 2, 4], list(ys))
    assert got.log_intercept == pytest.approx(predicted, abs=1e-12) and (got.log_intercept == 0.0) == (predicted == 0)
    assert got.log_error == math.inf and got.model == "power"


def test_a_logarithm_that_predicts_values_below_one_is_kept():
    """y = (log₂x)/8 at x = 16…128: 0.5 to 0.875, exact, rising: a logarithm whatever the unit."""
    got = fit_growth([16, 32, 64, 128], [0.5, 0.625, 0.75, 0.875])
    assert got.model == "log" and got.log_error == pytest.approx(0, abs=1e-12)


# --- the form: exact is a residual at most EXACT; the leading term reaches LEADING_SHARE of the largest value ------


def test_a_residual_exactly_at_the_exactness_bound_is_exact(monkeypatch):
    """10⁶ + T: the form T fits with a residual of about 1e-16, the slower forms within 1e-3. With the bound set to
    T's own residual, T is exact and chosen; with the bound a float below it, no form is exact and the slowest of
    those within 1e-3 (the constant) is chosen."""
    xs = (16, 32, 64, 128)
    ys = [10**6 + T for T in xs]
    own = next(f for f in fit_forms(xs, ys) if f.form == "T").residual
    monkeypatch.setattr(fit, "EXACT", own)
    assert choose_form(fit_forms(xs, ys)).form == "T"
    monkeypatch.setattr(fit, "EXACT", math.nextafter(own, 0.0))
    assert choose_form(fit_forms(xs, ys)).form == "1"


def test_two_forms_exact_at_the_bound_are_not_separated(monkeypatch):
    """8 + 2⌈log₂T⌉ at T = 2, 4, 6 is 10, 12, 14: affine in T too; both fits leave a residual of exactly 0. With
    the exactness bound at 0, both are exact (at the bound): the lengths cannot separate log T from T."""
    xs, ys = [2, 4, 6], [10, 12, 14]
    assert {f.form: f.residual for f in fit_forms(xs, ys) if f.form in ("log T", "T")} == {"log T": 0.0, "T": 0.0}
    monkeypatch.setattr(fit, "EXACT", 0.0)
    assert judge_form(xs, ys, "log T") == fit.FormVerdict("not_separated", "log T", "T")


def test_a_leading_term_exactly_at_its_share_leads(monkeypatch):
    """(12, 14, 16) at T = 3, 6, 9 fitted by 10 + (2/3)·T: the leading term reaches (2/3)·9 = 6 of the largest
    value 16. With the share set to exactly that, T leads; a float above it, T does not."""
    xs, ys = [3, 6, 9], [12, 14, 16]
    linear = next(f for f in fit_forms(xs, ys) if f.form == "T")
    lead = linear.coefficients[-1] * 9
    share = lead / 16
    while share * 16 > lead:
        share = math.nextafter(share, 0.0)
    while share * 16 < lead:
        share = math.nextafter(share, 1.0)
    assert share * 16 == lead
    monkeypatch.setattr(fit, "LEADING_SHARE", share)
    assert next(f for f in fit_forms(xs, ys) if f.form == "T").leads
    monkeypatch.setattr(fit, "LEADING_SHARE", math.nextafter(share, 1.0))
    assert not next(f for f in fit_forms(xs, ys) if f.form == "T").leads


# --- a series is monotone when every rise has one sign, 0 counting as either ----------------------------------------


@pytest.mark.parametrize("ys, monotone", [
    ((1, 1, 2), True), ((2, 1, 1), True), ((3, 3, 3), True),  # a flat step goes with either sign
    ((1, 1.5, 2), True), ((2, 1.5, 1), True),  # rises and falls below 1 in size
    ((5, 4.5, 6), False), ((1, 1.5, 1), False), ((1, 3, 2), False),
])
def test_a_series_is_monotone_when_its_rises_never_change_sign(ys, monotone):
    assert fit._monotone(ys) is monotone


@pytest.mark.parametrize("ys, expected", [((1, 4, 16), "log T"), ((1, 4, 16), "T log T"), ((3, 3, 3), "log T")])
def test_lengths_from_one_judge_a_form_whose_term_is_zero_at_one(ys, expected):
    """ln T, ⌈log₂T⌉ and T ln T are 0 at T = 1: no series a fit can read, so they are not tried as a series of the
    expected form (they made judge_form raise 'a growth fit needs positive … values' about values no one passed)."""
    assert judge_form([1, 2, 4], list(ys), expected).verdict in ("mismatch", "not_separated")
    assert judge_form([1, 2, 4], [1, 4, 16], "log T") == fit.FormVerdict("mismatch", "T²")
