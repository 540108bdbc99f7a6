"""Growth fits: how a measured quantity grows with T (Table 1's columns), judged by the big-O's own model.

Readings of one series:

* **the form** (the verdict's): :func:`fit_forms` fits y ≈ a + b·f(T) by least squares for each candidate
  :data:`FORMS` — 1, log T, √T, T, T log T, T^1.5, T² (the half powers give a series half an order off a
  big-O a form of its own, so that it is not read as the nearest whole one) — with the lower-order terms a closed form has (3Td² + 2T²d is
  b·T + c·T²; a scan's span 2⌈log₂T⌉ + 8 is a + b·⌈log₂T⌉), and chooses by :func:`choose_form`'s stated
  criterion. An exact count of a form is fitted by that form with no residual, so it is never judged
  against its own form; a series of another form leaves a residual or a leading coefficient of 0. A count that
  steps (⌈T/C⌉ chunks, ⌈(T − 1)/r⌉ layers, a scan's rounds and hops) brings its own whole-number term,
  :class:`Steps`, tried as one more variant of its form.
* **the verdict** (:func:`judge_form`): the form chosen is the expected one (match), another one while the lengths
  separate the two (mismatch), or the lengths cannot tell them apart (not separated: never a mismatch).
* **the exponent** (shown beside it): y ≈ c·x^p and y ≈ a + b·ln x, the log kept only when clearly
  better (:data:`LOG_PREFERENCE`); informative, never the verdict (3Td² + 2T²d reads as T^1.83 at small T).
* **the kind** of exact counts (:func:`growth_kind`, the one rule every study names a growth by — a decoding
  state, a step's multiplications): constant, linear, constant + linear, capped or other, from the exact line
  through the counts; :func:`grows_like_length` says whether a span grows like T between two lengths.

Numbers in, a frozen :class:`Fit` out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

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
        form: the growth form :func:`choose_form` chose (one of :data:`FORMS`), the verdict's reading; None
            from :func:`two_point_fit` (two points decide no form).
        form_residual: that form's RMS relative residual, RMS((ŷ − y)/y).
    """

    model: str
    exponent: float
    prefactor: float
    log_intercept: float
    log_slope: float
    power_error: float
    log_error: float
    form: str | None = None
    form_residual: float | None = None


def _least_squares(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through the points."""
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    s_xx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / s_xx
    return mean_y - slope * mean_x, slope


def _check_series(xs: Sequence[int], ys: Sequence[float]) -> None:
    """Refuse a series no growth can be fitted to (the rule of :func:`fit_growth` and :func:`fit_forms`)."""
    if len(xs) != len(ys) or len(set(xs)) < 3:
        raise SeqlabError(N_("a growth fit needs at least 3 distinct sizes with one value each, received {xs} and "
                             "{ys}"), xs=list(xs), ys=list(ys))
    if any(x <= 0 for x in xs) or any(y is None or not y > 0 for y in ys):
        raise SeqlabError(N_("a growth fit needs positive sizes and values, received {xs} and {ys}"), xs=list(xs),
                          ys=list(ys))


def fit_growth(xs: Sequence[int], ys: Sequence[float], steps: Steps | None = None) -> Fit:
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
        steps: the count's own whole-number term of a form (:class:`Steps`), or None.

    Returns:
        A :class:`Fit`.

    Raises:
        SeqlabError: fewer than 3 points, lengths differ, repeated or non-positive x, or y ≤ 0.
    """
    _check_series(xs, ys)
    log_x = [math.log(x) for x in xs]
    log_y = [math.log(y) for y in ys]
    intercept, exponent = _least_squares(log_x, log_y)
    power_error = math.sqrt(sum((intercept + exponent * lx - ly) ** 2 for lx, ly in zip(log_x, log_y)) / len(xs))
    a, b = _least_squares(log_x, [float(y) for y in ys])
    predicted = [a + b * lx for lx in log_x]
    log_error = math.inf if any(p <= 0 for p in predicted) else \
        math.sqrt(sum((math.log(p) - ly) ** 2 for p, ly in zip(predicted, log_y)) / len(xs))
    keep_log = b > 0 and log_error < LOG_PREFERENCE * power_error
    chosen = choose_form(fit_forms(xs, ys, steps))
    return Fit(model="log" if keep_log else "power", exponent=exponent, prefactor=math.exp(intercept),
               log_intercept=a, log_slope=b, power_error=power_error, log_error=log_error,
               form=chosen.form, form_residual=chosen.residual)


def two_point_fit(xs: Sequence[int], ys: Sequence[int]) -> Fit:
    """The power law through two points (no model choice is possible with two)."""
    exponent = math.log(ys[1] / ys[0]) / math.log(xs[1] / xs[0])
    return Fit(model="power", exponent=exponent, prefactor=ys[0] / xs[0] ** exponent, log_intercept=math.nan,
               log_slope=math.nan, power_error=0.0, log_error=math.nan)


# --- forms: y ≈ a + b·f(T), with the lower-order terms of a closed form ---------------------------------------

#: The candidate growth forms, slowest first.
FORMS = ("1", "log T", "√T", "T", "T log T", "T^1.5", "T²")

#: Each form's terms, lowest order first (the last one leads). "log T" is tried with ln T and with ⌈log₂T⌉ (a
#: scan's or a tree's depth is a whole number of levels) and keeps the closer.
_TERMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "1": (("1",),),
    "log T": (("1", "ln T"), ("1", "⌈log₂T⌉")),
    "√T": (("1", "√T"),),
    "T": (("1", "T"),),
    "T log T": (("1", "T", "T ln T"),),
    "T^1.5": (("1", "T", "T^1.5"),),
    "T²": (("1", "T", "T²"),),
}
_TERM_VALUES = {
    "1": lambda T: 1.0, "ln T": math.log, "⌈log₂T⌉": lambda T: float(math.ceil(math.log2(T))),
    "√T": math.sqrt, "T": float, "T ln T": lambda T: T * math.log(T), "T^1.5": lambda T: float(T) ** 1.5,
    "T²": lambda T: float(T) ** 2,
}
#: Residuals at most this (relative RMS) are exact: the form is the series' own.
EXACT = 1e-9
#: A form whose residual is within this factor of the best one's ties with it; the slowest of the tied is chosen.
TIE = 1.5
#: With no exact form, a form within this relative RMS residual accounts for the series (a count with ⌈T/C⌉
#: chunks wobbles about its line by 1e-4): a faster form fitting the wobble better does not win.
GOOD_ENOUGH = 1e-3
#: The leading term must reach this share of the largest value, else its coefficient is read as 0.
LEADING_SHARE = 1e-6


@dataclass(frozen=True)
class Steps:
    """A count's own whole-number version of a form's leading term, tried as one more variant of ``form``.

    A chunked layer's span grows by one op per chunk, a + b·⌈T/C⌉; a stack's path by a few ops per layer,
    a + b·⌈(T − 1)/r⌉; a parallel scan's path by the rounds and hops of the scan. Such a count is of its form
    (⌈T/C⌉ is Θ(T)) but leaves a residual against the smooth f(T) at lengths where the steps show.

    >>> chunks = Steps("T", "⌈T/4⌉", lambda T: -(-T // 4))
    >>> choose_form(fit_forms([5, 6, 9, 13], [7 + -(-T // 4) for T in (5, 6, 9, 13)], chunks)).form
    'T'

    Attributes:
        form: the form of :data:`FORMS` whose variant this is.
        name: the term as printed (``"⌈T/C⌉"``).
        values: T -> the term's value (positive).
        terms: the lower-order terms fitted with it (default the constant).
    """

    form: str
    name: str
    values: Callable[[int], float]
    terms: tuple[str, ...] = ("1",)

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise SeqlabError(N_("steps must belong to one of the forms {forms}, received {form!r}"),
                              forms=', '.join(FORMS), form=self.form, parameter="steps")


@dataclass(frozen=True)
class FormFit:
    """One candidate form fitted to a series.

    Attributes:
        form: its name in :data:`FORMS`.
        terms: the terms fitted, lowest order first (the last leads); fewer than the form has when the series has
            no more points than terms (the lowest are dropped first, so that a residual can show).
        coefficients: least-squares coefficients of ``terms`` (relative residuals weighted alike).
        residual: RMS of (ŷ − y)/y.
        leads: the leading coefficient is positive and its term reaches :data:`LEADING_SHARE` of max y (always
            True for "1").
    """

    form: str
    terms: tuple[str, ...]
    coefficients: tuple[float, ...]
    residual: float
    leads: bool


def _solve(rows: list[list[float]], ys: list[float]) -> list[float] | None:
    """Least squares by the normal equations (at most 3 unknowns, Gaussian elimination); None if singular."""
    k = len(rows[0])
    normal = [[sum(r[i] * r[j] for r in rows) for j in range(k)] + [sum(r[i] * y for r, y in zip(rows, ys))]
              for i in range(k)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(normal[r][col]))
        if abs(normal[pivot][col]) < 1e-300:
            return None
        normal[col], normal[pivot] = normal[pivot], normal[col]
        for r in range(k):
            if r != col:
                factor = normal[r][col] / normal[col][col]
                normal[r] = [a - factor * b for a, b in zip(normal[r], normal[col])]
    return [normal[i][k] / normal[i][i] for i in range(k)]


def _fit_terms(form: str, terms: tuple[str, ...], xs: Sequence[int], ys: Sequence[float],
               values: Mapping[str, Callable[[int], float]] = _TERM_VALUES) -> FormFit | None:
    if len(terms) > 1 and len(terms) >= len(xs):
        terms = terms[len(terms) - len(xs) + 1:]  # keep a residual: drop the lowest-order terms first
    # relative least squares: each point weighted by 1/y, columns scaled to 1 for conditioning
    raw = [[values[t](x) / y for t in terms] for x, y in zip(xs, ys)]
    scale = [max(abs(r[i]) for r in raw) or 1.0 for i in range(len(terms))]
    solution = _solve([[v / s for v, s in zip(r, scale)] for r in raw], [1.0] * len(xs))
    if solution is None:
        return None
    coefficients = tuple(c / s for c, s in zip(solution, scale))
    predicted = [sum(c * values[t](x) for c, t in zip(coefficients, terms)) for x in xs]
    residual = math.sqrt(sum(((p - y) / y) ** 2 for p, y in zip(predicted, ys)) / len(xs))
    top = max(ys)
    lead = coefficients[-1] * max(values[terms[-1]](x) for x in xs)
    leads = form == "1" or (coefficients[-1] > 0 and lead >= LEADING_SHARE * top)
    return FormFit(form, terms, coefficients, residual, leads)


def fit_forms(xs: Sequence[int], ys: Sequence[float], steps: Steps | None = None) -> tuple[FormFit, ...]:
    """Fit every form of :data:`FORMS` (each with its lower-order terms) to y(x) by relative least squares.

    ``steps`` (:class:`Steps`) adds the count's own whole-number term as one more variant of its form.

    >>> fits = fit_forms([32, 64, 128], [3 * T * 64**2 + 2 * T**2 * 64 for T in (32, 64, 128)])
    >>> [(f.form, f.terms, f.residual < EXACT) for f in fits if f.form == "T²"]
    [('T²', ('T', 'T²'), True)]

    Args:
        xs: at least 3 distinct positive sizes.
        ys: as many positive values.

    Raises:
        SeqlabError: as :func:`fit_growth`.
    """
    _check_series(xs, ys)
    values: Mapping[str, Callable[[int], float]] = _TERM_VALUES
    if steps is not None:
        values = {**_TERM_VALUES, steps.name: lambda T: float(steps.values(T))}
    fits = []
    for form in FORMS:
        tried = _TERMS[form] + ((steps.terms + (steps.name,),) if steps is not None and steps.form == form else ())
        variants = [f for f in (_fit_terms(form, terms, xs, [float(y) for y in ys], values) for terms in tried)
                    if f is not None]
        if variants:  # the closest variant whose leading term leads, else the closest
            fits.append(min(variants, key=lambda f: (not f.leads, f.residual)))
    return tuple(fits)


def choose_form(fits: Sequence[FormFit]) -> FormFit:
    """The form a series grows by, among the forms whose leading term leads (:attr:`FormFit.leads`): the slowest
    exact one (residual under :data:`EXACT`); when none is exact, the slowest of the best and of those that tie
    with it (within :data:`TIE` times its residual, or under :data:`GOOD_ENOUGH`).

    An exact count of one of the forms is chosen as that form: it has no residual, a slower form cannot fit it
    exactly, and a faster one fits it only with a leading coefficient of 0. A count that steps around its form
    (⌈T/C⌉ chunks at T near C, a window's ⌈(T − 1)/r⌉ hops at a few small T) can still fit another form
    better: only ⌈log₂ T⌉ is among the terms tried.

    >>> choose_form(fit_forms([300, 600, 1000], [2 * math.ceil(math.log2(T)) + 8 for T in (300, 600, 1000)])).form
    'log T'
    >>> choose_form(fit_forms([16, 32, 64, 128], [5 + 2 * T for T in (16, 32, 64, 128)])).form
    'T'
    """
    usable = [f for f in fits if f.leads]
    exact = [f for f in usable if f.residual <= EXACT]
    if exact:  # a count of one of the forms (attention's 3Td² + 2T²d even where T² is 1 % of it)
        return min(exact, key=lambda f: FORMS.index(f.form))
    best = min(f.residual for f in usable)
    tied = [f for f in usable if f.residual <= max(GOOD_ENOUGH, TIE * best)]
    return min(tied, key=lambda f: FORMS.index(f.form))


def form_of_growth(model: str, exponent: float) -> str | None:
    """The form of :data:`FORMS` a big-O names: ("power", 0) → "1", ("power", 1) → "T", ("power", 2) → "T²",
    ("log", ·) → "log T"; None for any other power."""
    if model == "log":
        return "log T"
    return {0.0: "1", 1.0: "T", 2.0: "T²"}.get(float(exponent))


# --- the verdict: match, mismatch, or lengths that cannot tell ------------------------------------------------

#: The verdicts of :func:`judge_form`.
MATCH, MISMATCH, NOT_SEPARATED = "match", "mismatch", "not_separated"


@dataclass(frozen=True)
class FormVerdict:
    """What a series' fit says about an expected form.

    Attributes:
        verdict: :data:`MATCH` (the form chosen is the expected one), :data:`MISMATCH` (another one, at lengths that
            separate the two) or :data:`NOT_SEPARATED` (these lengths cannot tell the expected form from ``other``).
        chosen: the form :func:`choose_form` chose.
        other: the form the lengths cannot tell from the expected one (None unless not separated).
    """

    verdict: str
    chosen: str
    other: str | None = None


def _monotone(ys: Sequence[float]) -> bool:
    rises = [b - a for a, b in zip(ys, ys[1:])]
    return all(r >= 0 for r in rises) or all(r <= 0 for r in rises)


def _probes(fit: FormFit | None, form: str, xs: Sequence[int], steps: Steps | None) -> list[list[float]]:
    """Series of ``form`` at xs: its fit's prediction (when it leads), and each variant's leading term alone; only
    those above 0 at every x (a fit reads no other: ln T and ⌈log₂T⌉ are 0 at T = 1)."""
    values = {**_TERM_VALUES, **({steps.name: steps.values} if steps is not None else {})}
    probes = []
    if fit is not None and fit.leads:
        probes.append([sum(c * values[t](x) for c, t in zip(fit.coefficients, fit.terms)) for x in xs])
    leading = [terms[-1] for terms in _TERMS[form]] + ([steps.name] if steps is not None and steps.form == form else [])
    probes += [[float(values[term](x)) for x in xs] for term in leading]
    return [probe for probe in probes if all(p > 0 for p in probe)]


def judge_form(xs: Sequence[int], ys: Sequence[float], expected: str, steps: Steps | None = None) -> FormVerdict:
    """Whether y(x) shows the form ``expected``, or whether these lengths cannot tell.

    The fit (:func:`fit_forms`, :func:`choose_form`) decides, except where it cannot tell two forms apart:

    * the expected form is chosen and exact, and a faster form fits exactly too (T = 3, 6, 9 are affine in
      ⌈log₂T⌉ = 2, 3, 4): not separated from that form;
    * another form is chosen, and the series is not monotone (no a + b·f(T) is: it steps around its form), or the
      expected form ties with the chosen one by :func:`choose_form`'s criterion (within :data:`TIE` of its residual,
      or under :data:`GOOD_ENOUGH`, and the slower won), or a series of the expected form at these lengths (its
      fit's prediction, or one of its terms alone: ⌈log₂T⌉ = 3 at T = 5, 6, 7) is chosen as the same other form:
      not separated from the chosen form;
    * otherwise another form chosen is a mismatch.

    >>> judge_form([5, 6, 7], [14, 14, 14], "log T")  # a scan's 2⌈log₂T⌉ + 8: ⌈log₂T⌉ = 3 throughout
    FormVerdict(verdict='not_separated', chosen='1', other='1')
    >>> judge_form([64, 128, 256], [128, 256, 512], "log T").verdict  # a chain of 2T ops is not O(log T)
    'mismatch'

    Args:
        xs: at least 3 distinct positive sizes.
        ys: as many positive values.
        expected: a form of :data:`FORMS`.
        steps: the count's own whole-number term (:class:`Steps`), or None.

    Raises:
        SeqlabError: an unknown form, or as :func:`fit_forms`.
    """
    if expected not in FORMS:
        raise SeqlabError(N_("expected must be one of the forms {forms}, received {expected!r}"),
                          forms=', '.join(FORMS), expected=expected, parameter="expected")
    fits = fit_forms(xs, ys, steps)
    chosen = choose_form(fits)
    own = next((f for f in fits if f.form == expected), None)
    rank = FORMS.index
    if chosen.form == expected:
        faster = [f for f in fits if f.leads and f.residual <= EXACT and rank(f.form) > rank(expected)]
        if chosen.residual <= EXACT and faster:
            return FormVerdict(NOT_SEPARATED, chosen.form, min(faster, key=lambda f: rank(f.form)).form)
        return FormVerdict(MATCH, chosen.form)
    best = min(f.residual for f in fits if f.leads)
    tied = own is not None and own.leads and own.residual <= max(GOOD_ENOUGH, TIE * best)
    if expected != "1" and not _monotone(ys) or tied:
        return FormVerdict(NOT_SEPARATED, chosen.form, chosen.form)
    if any(choose_form(fit_forms(xs, probe, steps)).form == chosen.form for probe in _probes(own, expected, xs, steps)):
        return FormVerdict(NOT_SEPARATED, chosen.form, chosen.form)
    return FormVerdict(MISMATCH, chosen.form)


# --- the kind of growth of exact counts: the one rule every study names a growth by ---------------------------

#: What :func:`growth_kind` calls a growth (a sum of parts is named by its parts': ``linear + capped``,
#: :func:`sum_of_growths`).
GROWTHS = ("constant", "linear", "constant + linear", "capped", "other")
#: Fewest distinct positions :func:`classify_growth` names a growth and its form from (two points fit any line).
MIN_POSITIONS = 3
#: A span grows like T between T1 and T2 when span(T2)/span(T1) is at least this share of T2/T1
#: (:func:`grows_like_length`).
GROWTH_SHARE = 0.9


def _exact_line(ts: Sequence[int], ys: Sequence[int]) -> tuple[Fraction, Fraction] | None:
    """(slope, intercept) of the line through the first two points when every point lies on it, else None."""
    slope = Fraction(ys[1] - ys[0], ts[1] - ts[0])
    intercept = ys[0] - slope * ts[0]
    return (slope, intercept) if all(y == intercept + slope * t for t, y in zip(ts, ys)) else None


def growth_kind(ts: Sequence[int], ys: Sequence[int]) -> str:
    """How exact counts ys grow with increasing positions ts, one of :data:`GROWTHS`.

    constant (all equal); linear (an exact line through 0: y = b·t, b > 0); constant + linear (an exact line with
    a positive intercept: a fixed part plus a growing one); capped (grows, then the last two are equal: a window);
    other. Exact integers, no tolerance: a count either lies on the line or it does not. Two positions decide
    every kind but capped.

    >>> growth_kind((4, 8), (256, 512)), growth_kind((4, 8), (256, 320)), growth_kind((4, 8), (16, 64))
    ('linear', 'constant + linear', 'other')
    >>> growth_kind((4, 8, 16), (64, 64, 64)), growth_kind((4, 8, 16), (4, 7, 7))
    ('constant', 'capped')

    Args:
        ts: at least 2 distinct positions, increasing. ys: one count at each (bytes, multiplications...).

    Raises:
        SeqlabError: fewer than 2 distinct positions, or not one value per position.
    """
    if len(set(ts)) < 2 or len(ts) != len(ys):
        raise SeqlabError(N_("a growth needs at least {min_positions} distinct positions with one value each, "
                             "received {ts} and {ys}"), min_positions=2, ts=list(ts), ys=list(ys))
    if len(set(ys)) == 1:
        return "constant"
    line = _exact_line(ts, ys)
    if line is not None and line[0] > 0 and line[1] >= 0:
        return "linear" if line[1] == 0 else "constant + linear"
    if all(a <= b for a, b in zip(ys, ys[1:])) and ys[-1] == ys[-2] and ys[0] < ys[-1]:
        return "capped"
    return "other"


def classify_growth(ts: tuple[int, ...], ys: tuple[int, ...]) -> tuple[str, str | None, Fraction | None,
                                                                         Fraction | None, int | None]:
    """Name how ys grows with ts (:func:`growth_kind`), with its fitted form: (kind, form, slope, intercept, cap).

    The form is :func:`choose_form`'s over a + b·f(T), None for a capped series; slope and intercept are the exact
    line's (0 and the value for a constant), None when there is none; cap is the value a capped series stops at.

    >>> classify_growth((4, 8, 16), (64, 128, 256))[0], classify_growth((4, 8, 16), (4, 7, 7))[0]
    ('linear', 'capped')
    >>> classify_growth((4, 8, 16), (100, 100, 100))[0], classify_growth((4, 8, 16), (104, 108, 116))[0]
    ('constant', 'constant + linear')

    Raises:
        SeqlabError: fewer than :data:`MIN_POSITIONS` distinct positions, or a value that is not > 0.
    """
    if len(set(ts)) < MIN_POSITIONS or len(ts) != len(ys):
        raise SeqlabError(N_("a growth needs at least {min_positions} distinct positions with one value each, "
                             "received {ts} and {ys}"), min_positions=MIN_POSITIONS, ts=list(ts), ys=list(ys))
    kind = growth_kind(ts, ys)
    if kind == "capped":
        return kind, None, None, None, ys[-1]
    form = choose_form(fit_forms(ts, ys)).form
    if kind == "constant":
        return kind, form, Fraction(0), Fraction(ys[0]), None
    if kind == "other":
        return kind, form, None, None, None
    slope, intercept = _exact_line(ts, ys)
    return kind, form, slope, intercept, None


def sum_of_growths(kinds: Sequence[str | None]) -> str | None:
    """The growth of a sum of parts, named by its parts' growths: ``constant + linear`` (a hybrid's attention
    cache beside its fixed Mamba state), ``linear + capped`` (full and sliding-window layers); None when a part
    is unnamed (``other``) or unknown.

    >>> sum_of_growths(["linear", "capped"]), sum_of_growths(["constant", "other"])
    ('linear + capped', None)
    """
    if any(kind is None or kind == "other" for kind in kinds):
        return None
    parts = {part for kind in kinds for part in kind.split(" + ")}
    return " + ".join(part for part in ("constant", "linear", "capped") if part in parts)


def grows_like_length(lengths: tuple[int, int], values: tuple[int, int]) -> bool:
    """A span grows like T from T1 to T2: value(T2)/value(T1) >= :data:`GROWTH_SHARE` · T2/T1 (value(T1) > 0).

    >>> grows_like_length((8, 16), (24, 48)), grows_like_length((8, 16), (24, 30))
    (True, False)
    """
    (T1, T2), (v1, v2) = lengths, values
    return v1 > 0 and Fraction(v2, v1) >= GROWTH_SHARE * Fraction(T2, T1)
