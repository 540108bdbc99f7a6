"""Each threshold and comparison of ``seqlab check``'s verdicts with the measurement exactly at it, just below and just
above (issue 38, item 9): the verdict and the sentence the reader gets (:func:`seqlab.render.check.claim_text`).

The measurement behind each claim is patched (the engine function the check calls, or the check's own measuring
helper) so that a figure sits on its threshold; nothing here reads a clock. Thresholds are written here by hand,
never imported: a test that reads the constant it checks follows any change of it. ``benchmarks/mutants.py``
reports which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

import seqlab.measure.order
import seqlab.measure.paths
import seqlab.measure.reach
from seqlab.render.check import claim_text
from seqlab.studies import claims_path
from seqlab.studies.check import CAVEAT, CHECKS, FAILS, HOLDS, CheckSizes, ClaimCheck

SIZES = CheckSizes(span_lengths=(8, 16), path_lengths=(8, 16), radii=(0.5, 0.8, 1.0, 1.25, 1.5, 3.0), reach_draws=1,
                   reach_lengths=(8, 16, 32), count_length=8, count_widths=(4, 6), crossover_width=8,
                   layer_heads=(1, 2), time_length=16, time_width=4, time_batch=2, threads=2, min_run_time=0.001,
                   worked_lengths=(50,), span_widths=(2, 4), order_length=8, figure=(4, 4, 16, 2))


def judged(claim: str):
    """(verdict, condition, the condition's sentence in English) of one claim checked at :data:`SIZES`."""
    judgement = CHECKS[claim](SIZES, 0)
    text = claim_text(ClaimCheck(claim, judgement.verdict, judgement.values, judgement.condition))
    return judgement.verdict, judgement.condition, text.condition


# --- L3: decay below ρ = 1 means a factor below 1 − 0.05; growth above 1 + 0.05; plain holds from ρ <= 1.25 -------

#: Per-step factors (at h = 0, with inputs) by radius that make L3 hold plainly: decay below 1, growth with inputs
#: from ρ = 1.25, inputs never above h = 0's factor.
_FACTORS = {0.5: (0.5, 0.45), 0.8: (0.8, 0.7), 1.0: (1.0, 0.9), 1.25: (1.25, 1.1), 1.5: (1.5, 1.2), 3.0: (3.0, 1.5)}
#: (products, ops) from x_1 to h_T at the two lengths: ops grow, products stay flat (the bypass).
_GATED = {"lstm": [(1, 10), (1, 18)], "gru": [(1, 12), (1, 22)]}


def l3_with(monkeypatch, changes=None, gated=None, drop=()):
    factors = {r: pair for r, pair in _FACTORS.items() if r not in drop} | (changes or {})
    monkeypatch.setattr(claims_path, "_factors", lambda sizes, seed: dict(sorted(factors.items())))
    monkeypatch.setattr(claims_path, "_gated_paths", lambda sizes, x_rows: gated or _GATED)
    return judged("L3")


def test_l3_holds_with_growth_from_the_slack_radius_and_a_factor_of_one_at_one(monkeypatch):
    """Growth with inputs from ρ = 1.25 exactly is enough; ρ = 1 (factor 1.0) is not a radius below 1."""
    verdict, condition, sentence = l3_with(monkeypatch)
    assert (verdict, condition["onset_with_inputs"], condition["onset_at_zero"], condition["failed"]) == \
        (HOLDS, 1.25, 1.25, [])
    assert "Caveat" not in sentence and "Failed" not in sentence


def test_l3_growth_from_just_above_the_slack_radius_is_a_caveat(monkeypatch):
    verdict, condition, sentence = l3_with(monkeypatch, {1.250001: (1.250001, 1.1)}, drop=(1.25,))
    assert (verdict, condition["onset_with_inputs"]) == (CAVEAT, 1.250001)
    assert "Caveat: with inputs the signal grows only from ρ = 1.25, well above 1" in sentence


@pytest.mark.parametrize("inputs, verdict, onset", [(1.05, CAVEAT, 1.5), (1.05 + 1e-8, HOLDS, 1.25)])
def test_l3_growth_is_a_factor_above_one_plus_the_margin(monkeypatch, inputs, verdict, onset):
    """A factor of exactly 1.05 with inputs is no growth (growth starts at the next radius, 1.5: a caveat)."""
    found, condition, sentence = l3_with(monkeypatch, {1.25: (1.25, inputs)})
    assert (found, condition["onset_with_inputs"]) == (verdict, onset)
    assert ("grows only from ρ = 1.5" in sentence) == (verdict == CAVEAT)


def test_l3_no_growth_at_any_radius_is_a_caveat(monkeypatch):
    verdict, condition, sentence = l3_with(monkeypatch, {1.25: (1.25, 1.0), 1.5: (1.5, 1.05), 3.0: (3.0, 1.05)})
    assert (verdict, condition["onset_with_inputs"], condition["caveats"]) == \
        (CAVEAT, None, ["growth_needs_large_radius"])
    assert "Caveat: with inputs no ρ up to 3 makes the signal grow" in sentence


@pytest.mark.parametrize("factor, verdict", [(0.95, FAILS), (0.95 - 1e-8, HOLDS)])
def test_l3_decay_below_one_is_a_factor_below_one_minus_the_margin(monkeypatch, factor, verdict):
    """At ρ = 0.8 a factor of exactly 0.95 (1 − 0.05) is no decay: the claim fails, naming it."""
    found, condition, sentence = l3_with(monkeypatch, {0.8: (factor, factor)})
    assert found == verdict
    assert condition["failed"] == (["no_decay_below_1"] if verdict == FAILS else [])
    assert ("Failed: decay below ρ = 1." in sentence) == (verdict == FAILS)


def test_l3_decay_is_asked_at_every_radius_below_one(monkeypatch):
    """The least radius counts too (ρ = 0.5 with a factor of 1 at h = 0 fails)."""
    verdict, condition, _ = l3_with(monkeypatch, {0.5: (1.0, 0.45)})
    assert (verdict, condition["failed"]) == (FAILS, ["no_decay_below_1"])


@pytest.mark.parametrize("inputs, verdict", [(1.05, HOLDS), (1.05 + 1e-8, FAILS)])
def test_l3_inputs_may_not_grow_the_factor_beyond_the_margin(monkeypatch, inputs, verdict):
    """At ρ = 1 (factor 1.0 at h = 0) inputs may give up to 1.0 × 1.05 exactly; beyond, tanh would have grown it."""
    found, condition, sentence = l3_with(monkeypatch, {1.0: (1.0, inputs)})
    assert (found, condition["failed"]) == (verdict, ["inputs_grow"] if verdict == FAILS else [])
    assert ("Failed: tanh only shrinking." in sentence) == (verdict == FAILS)


@pytest.mark.parametrize("zero, onset", [(1.05, 1.25), (1.05 + 1e-8, 1.0)])
def test_l3_growth_at_h_zero_starts_above_one_plus_the_margin(monkeypatch, zero, onset):
    _, condition, _ = l3_with(monkeypatch, {1.0: (zero, 0.9)})
    assert condition["onset_at_zero"] == onset


@pytest.mark.parametrize("gated", [
    {"lstm": [(1, 18), (1, 18)], "gru": _GATED["gru"]},  # ops equal at both lengths: the path did not grow
    {"lstm": [(1, 10), (2, 18)], "gru": _GATED["gru"]},  # ops grow, but so do the products: no bypass
    {"lstm": _GATED["lstm"], "gru": [(1, 22), (1, 12)]},  # ops fall
])
def test_l3_a_gated_path_must_grow_in_ops_and_stay_flat_in_products(monkeypatch, gated):
    verdict, condition, sentence = l3_with(monkeypatch, gated=gated)
    assert (verdict, condition["failed"]) == (FAILS, ["gated"])
    assert "Failed: the gated layers' paths." in sentence


# --- L4: the same products at both T, fewer than T1 − 1; a reach above 0; an exponent within ±0.25 --------------


def l4_with(monkeypatch, products=(2, 2), exponent=0.0, reach=0.5):
    real = seqlab.measure.paths.measure_paths
    lengths = list(SIZES.path_lengths)

    def paths(function, x, *args, **kwargs):  # the path's products at this T
        measured = real(function, x, *args, **kwargs)
        return replace(measured, products=((*measured.products[0][:-1], products[lengths.index(x.shape[0])]),))

    monkeypatch.setattr(seqlab.measure.paths, "measure_paths", paths)
    real_reach = seqlab.measure.reach.measure_reach
    monkeypatch.setattr(seqlab.measure.reach, "measure_reach",
                        lambda layer, x, *a, **k: replace(real_reach(layer, x, *a, **k), norms=(reach,) * x.shape[0]))
    monkeypatch.setattr(claims_path, "power_trend", lambda xs, ys: exponent)
    return judged("L4")


@pytest.mark.parametrize("products, verdict", [((6, 6), HOLDS), ((7, 7), FAILS), ((2, 3), FAILS), ((3, 2), FAILS)])
def test_l4_the_path_is_the_same_at_both_t_and_shorter_than_t1_minus_1(monkeypatch, products, verdict):
    """At T = 8 and 16: 6 products at both is a short path; 7 = T1 − 1 is as long as a chain; 2 then 3 grows."""
    found, condition, sentence = l4_with(monkeypatch, products)
    assert (found, condition["failed"]) == (verdict, [] if verdict == HOLDS else ["path"])
    assert ("Failed: the path's length." in sentence) == (verdict == FAILS)


@pytest.mark.parametrize("reach, verdict", [(0.0, FAILS), (5e-324, HOLDS), (1.0, HOLDS)])
def test_l4_the_gradient_reaches_position_1_when_above_zero(monkeypatch, reach, verdict):
    found, condition, sentence = l4_with(monkeypatch, reach=reach)
    assert (found, condition["failed"]) == (verdict, [] if verdict == HOLDS else ["reach"])
    assert ("Failed: the gradient reaching position 1." in sentence) == (verdict == FAILS)


@pytest.mark.parametrize("exponent, verdict", [(0.25, HOLDS), (-0.25, HOLDS), (0.25 + 1e-8, CAVEAT),
                                               (-0.25 - 1e-8, CAVEAT), (None, HOLDS)])
def test_l4_a_reach_exponent_within_a_quarter_is_flat(monkeypatch, exponent, verdict):
    found, condition, sentence = l4_with(monkeypatch, exponent=exponent)
    assert (found, condition["exponent"]) == (verdict, exponent)
    assert ("Caveat: the path stays 2 products long whatever T, but the one weight changes as T^" in sentence) == \
        (verdict == CAVEAT)


# --- L10: attention within the rounding tolerance; the recurrence beyond 100 times it ---------------------------


def l10_with(monkeypatch, tolerance=None, recurrence_change=None):
    """L10 with the rows' rounding tolerance (attention's measurement) and the recurrence's change set."""
    real = seqlab.measure.order.measure_order

    def measured(layer, x, **kwargs):
        result = real(layer, x, **kwargs)
        if not isinstance(layer, torch.nn.Module):  # attention's rows (a lambda)
            return result if tolerance is None else replace(result, tolerance=tolerance)
        return result if recurrence_change is None else replace(result, max_abs_change=recurrence_change)

    monkeypatch.setattr(seqlab.measure.order, "measure_order", measured)
    judgement = CHECKS["L10"](SIZES, 0)
    return judgement.verdict, judgement.values


def test_l10_attention_exactly_at_the_tolerance_holds(monkeypatch):
    """The tolerance set to the sentences' measured attention change itself: within it (<=), so L10 holds."""
    _, values = l10_with(monkeypatch)
    gap = values["sentences_attention_change"]
    verdict, values = l10_with(monkeypatch, tolerance=gap, recurrence_change=1.0)
    assert (verdict, values["tolerance"], values["sentences_attention_change"]) == (HOLDS, gap, gap)


def test_l10_a_recurrence_change_exactly_at_the_floor_does_not_hold(monkeypatch):
    """The recurrence must change by more than 100 × the tolerance: exactly 100 × is not more."""
    _, values = l10_with(monkeypatch)
    tolerance = values["tolerance"]
    assert l10_with(monkeypatch, recurrence_change=100 * tolerance)[0] == FAILS
    assert l10_with(monkeypatch, recurrence_change=100 * tolerance * (1 + 1e-9))[0] == HOLDS


def test_l10_the_sentences_recurrence_change_exactly_at_the_floor_does_not_hold(monkeypatch):
    """The two sentences' last states must differ by more than 100 × the tolerance: a tolerance whose floor is
    that very difference fails L10; a floor a hair below it holds."""
    _, values = l10_with(monkeypatch)
    gap = values["sentences_recurrence_change"]
    tolerance = gap / 100
    while 100 * tolerance < gap:  # the float whose 100 × is the gap (or the least above it)
        tolerance = float(torch.nextafter(torch.tensor(tolerance, dtype=torch.float64),
                                          torch.tensor(1.0, dtype=torch.float64)))
    verdict, values = l10_with(monkeypatch, tolerance=tolerance, recurrence_change=1.0)
    assert 100 * tolerance >= gap and verdict == FAILS
    assert l10_with(monkeypatch, tolerance=tolerance * (1 - 1e-9), recurrence_change=1.0)[0] == HOLDS


# --- L8: why a comparison was not decided, at each edge of the margin -----------------------------------------------


def reason_and_words(low: float, high: float, rounds: int = 7, margin: float = 1.2):
    """(undecided_reason of a not-judged decision with these quartiles, its words in the L8 sentence)."""
    from seqlab.i18n import translator
    from seqlab.measure.rounds import Decision
    from seqlab.render.check import Numbers
    from seqlab.render.check_time import _reason
    from seqlab.studies.claims_time import undecided_reason

    reason = undecided_reason(Decision("recurrence", "sdpa", "not_judged", (low + high) / 2, low, high, margin, rounds))
    entry = {"class": "not_judged", "reason": reason, "low": low, "high": high, "rounds": rounds}
    return reason, _reason(translator("en", "seqlab"), entry, Numbers("en"), "1.2")


@pytest.mark.parametrize("low, high, reason", [
    (1.2, 1.5, "straddles"),  # the lower quartile exactly at the margin: not beyond it
    (1.2 + 1e-9, 1.5, "quickest_disagree"),  # beyond it: the quartiles clear the margin
    (0.5, 1 / 1.2, "straddles"),  # the upper quartile exactly at 1/margin
    (0.5, 1 / 1.2 - 1e-9, "quickest_disagree"),
    (1 / 1.2, 1.2, "quickest_disagree"),  # both inside the margin, at its two edges: a tie by the quartiles
    (1 / 1.2 - 1e-9, 1.2, "straddles"),
    (1 / 1.2, 1.2 + 1e-9, "straddles"),
    (0.5, 1.0, "straddles"),  # below 1/margin to inside: straddles the lower edge
    (1.0, 1.5, "straddles"),
])
def test_l8_a_comparison_clears_the_margin_or_straddles_it(low, high, reason):
    found, words = reason_and_words(low, high)
    assert found == reason
    tail = "across the ×1.2 margin" if reason == "straddles" else "but the quickest rounds disagree"
    assert words.endswith(tail) and "over 7 rounds" in words


@pytest.mark.parametrize("rounds, reason", [(2, "few_rounds"), (3, "straddles")])
def test_l8_three_rounds_are_enough_to_say_why(rounds, reason):
    found, words = reason_and_words(1.0, 1.5, rounds)
    assert found == reason
    assert words == ("only 2 rounds, too few to decide" if rounds == 2 else
                     "×1.00–1.50 over 3 rounds, across the ×1.2 margin")


# --- L7: at layer scope attention "costs more" only when counted strictly more at every T -----------------------


@pytest.mark.parametrize("extra, verdict", [(0, HOLDS), (1, CAVEAT)])
def test_l7_a_layer_counted_equal_to_the_recurrence_does_not_cost_more(monkeypatch, extra, verdict):
    """nn.MultiheadAttention counted (and closed-formed) at exactly nn.RNN's count, T(d² + d²), at every T: no
    crossover is missing, L7 holds plainly; one multiplication more at every T is "costs more": the caveat."""
    import seqlab.measure.work
    from seqlab import cost

    real = seqlab.measure.work.count_on_meta

    def equal(function, *args, **kwargs):
        counted = real(function, *args, **kwargs)
        if isinstance(function, torch.nn.MultiheadAttention):
            _, T, d = args[0].shape  # (1, T, d)
            return replace(counted, multiplications=cost.gated_recurrence_multiplications(T, d, d) + extra)
        return counted

    monkeypatch.setattr(seqlab.measure.work, "count_on_meta", equal)
    monkeypatch.setattr(cost, "attention_layer_multiplications",
                        lambda T, d_model, d_k, d_v: cost.gated_recurrence_multiplications(T, d_model, d_model) + extra)
    found, condition, sentence = judged("L7")
    assert (found, condition["caveats"], condition["layer_counts_agree"]) == \
        (verdict, ["layer_scope_attention_costs_more"] if extra else [], True)
    assert ("Caveat: at layer scope with equal widths attention costs more at every T" in sentence) == bool(extra)


# --- B2: the math path's peak at least the T×T scores at every T; the fused kernel's below them at the largest T --


def b2_with(monkeypatch, math_bytes, fused_bytes):
    """B2 with the allocator's peaks patched: the math path's at T = 256, 512, 1024, then the fused kernel's."""
    from seqlab.measure.memory_peak import PeakMemory
    from seqlab.studies import claims_beyond

    peaks = iter([*math_bytes, *fused_bytes])

    def patched(function, *args, **kwargs):
        value = next(peaks)
        return PeakMemory(value, 0, value, 1, 0, (), "patched", {}, allocator_peak_bytes=value)

    monkeypatch.setattr(claims_beyond.memory_peak, "measure_peak_memory", patched)
    judgement = claims_beyond.check_b2(CheckSizes(), 0)
    return judgement, claim_text(ClaimCheck("B2", judgement.verdict, judgement.values, judgement.condition))


_SCORES = [256 * 256 * 4, 512 * 512 * 4, 1024 * 1024 * 4]  # one float32 T×T matrix: 262,144 … 4,194,304 bytes


@pytest.mark.parametrize("math_bytes, verdict", [
    (_SCORES, HOLDS),  # exactly the scores' bytes at every T: at least them
    ([_SCORES[0], _SCORES[1] - 1, _SCORES[2]], FAILS),  # one byte short at T = 512
    ([_SCORES[0] - 1, _SCORES[1], _SCORES[2]], FAILS),  # at the first T
])
def test_b2_the_math_peak_holds_at_least_the_scores_at_every_t(monkeypatch, math_bytes, verdict):
    judgement, text = b2_with(monkeypatch, math_bytes, [1000, 2000, 4000])
    assert (judgement.verdict, judgement.values["math_form"]) == (verdict, "T²")
    assert text.verdict == ("holds" if verdict == HOLDS else "does not hold")
    assert "the T×T scores alone 262,144, 1,048,576, 4,194,304 bytes" in text.figure


@pytest.mark.parametrize("largest, verdict", [(_SCORES[2] - 1, HOLDS), (_SCORES[2], FAILS)])
def test_b2_the_fused_peak_stays_strictly_below_the_scores(monkeypatch, largest, verdict):
    judgement, text = b2_with(monkeypatch, _SCORES, [1000, 2000, largest])
    assert judgement.verdict == verdict and text.verdict == ("holds" if verdict == HOLDS else "does not hold")


# --- B4: the two reaches agree within 1e-9, relative to the loop's ------------------------------------------------


def b4_with(monkeypatch, loop_reach, scan_reach):
    from seqlab.studies import claims_beyond

    real = claims_beyond.measure_signal_path
    monkeypatch.setattr(claims_beyond, "measure_signal_path", lambda layer, x, **kw: replace(
        real(layer, x, **kw), reach=loop_reach if layer.form == "loop" else scan_reach))
    return claims_beyond.check_b4(CheckSizes(), 0)


@pytest.mark.parametrize("relative, verdict", [(1.0000005e-9, FAILS), (0.9999995e-9, HOLDS), (0.0, HOLDS)])
def test_b4_reaches_agree_within_one_part_in_a_billion(monkeypatch, relative, verdict):
    """Loop reach 1.0, scan reach 1 − relative: a hair above 1e-9 apart fails, a hair below holds."""
    judged = b4_with(monkeypatch, 1.0, 1.0 - relative)
    assert abs(judged.values["reach_difference"] - relative) < 1e-15
    assert (judged.verdict, judged.values["reach_equal"]) == (verdict, verdict == HOLDS)


def test_b4_reaches_exactly_the_tolerance_apart_agree(monkeypatch):
    """With the tolerance set to 2⁻³⁰, reaches 1 and 1 − 2⁻³⁰ differ by exactly it (a float subtraction that is
    exact): within (<=); the next float further is not."""
    from seqlab.studies import claims_beyond

    monkeypatch.setattr(claims_beyond, "REACH_TOLERANCE", 2.0**-30)
    judged = b4_with(monkeypatch, 1.0, 1.0 - 2.0**-30)
    assert judged.values["reach_difference"] == 2.0**-30 and judged.verdict == HOLDS
    assert b4_with(monkeypatch, 1.0, math.nextafter(1.0 - 2.0**-30, 0.0)).verdict == FAILS


@pytest.mark.parametrize("loop_reach, verdict", [(0.0, FAILS), (0.5, HOLDS), (5e-324, HOLDS)])
def test_b4_a_loop_reach_of_zero_agrees_with_nothing(monkeypatch, loop_reach, verdict):
    """A loop reach of 0 gives no relative difference (infinite: fails); any reach above 0, even the least float
    or one below 1, is compared."""
    judged = b4_with(monkeypatch, loop_reach, loop_reach)
    assert judged.verdict == verdict
    assert judged.values["reach_difference"] == (math.inf if loop_reach == 0 else 0.0)


# --- check: an unknown claim is named among several, not when it is the only one; the exit code --------------------


@pytest.mark.parametrize("claims, which", [("L13", False), ("L1,L13", True), ("L13,L1,L2", True)])
def test_an_unknown_claim_is_named_only_among_several(claims, which):
    from seqlab.errors import SeqlabError
    from seqlab.studies.check import parse_claims

    with pytest.raises(SeqlabError) as raised:
        parse_claims(claims)
    message = str(raised.value)
    assert message.startswith("expected claims among L1–L12") and f"received {claims!r}" in message
    assert ("in which 'L13' is not one" in message) is which


@pytest.mark.parametrize("verdict, error, all_hold", [(HOLDS, None, True), (CAVEAT, None, True), (FAILS, None, False),
                                                      ("not_judged", None, True), ("not_judged", "boom", False)])
def test_the_run_fails_on_a_claim_that_does_not_hold_or_a_measurement_that_raised(verdict, error, all_hold):
    from seqlab.studies.check import CheckResult

    checks = (ClaimCheck("L1", HOLDS), ClaimCheck("L2", verdict, error=error))
    result = CheckResult(checks=checks, full=False, seed=0, threads=1, torch_version="x", elapsed_s=0.0)
    assert result.all_hold is all_hold


@pytest.mark.parametrize("sizes, full", [(SIZES, False), (SIZES, True), (None, False), (None, True)])
def test_explicit_sizes_replace_those_full_picks(monkeypatch, sizes, full):
    from dataclasses import replace as replaced

    from seqlab.studies import check
    from seqlab.studies.verdicts import Judgement

    seen = []
    monkeypatch.setitem(check.CHECKS, "L1", lambda s, seed: seen.append(s) or Judgement(HOLDS, {}, {"caveats": []}))
    result = check.run_check(check.CheckConfig(claims=("L1",), full=full, threads=1, sizes=sizes))
    expected = sizes if sizes is not None else CheckSizes.of(full)
    assert seen == [replaced(expected, threads=1)] and result.checks[0].verdict == HOLDS
