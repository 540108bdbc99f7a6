"""Every verdict of ``seqlab check`` can fail: patch the measurement behind a claim and its verdict changes (L1–L12).

Each test runs one claim's check directly at small sizes with the engine function it calls (or the measured
value) replaced by a wrong one, and asserts the new verdict: holds → does not hold, caveat → holds or does not
hold, as the rule says. L8, the one claim that reads a clock, is tested on fake interleaved rounds in
tests/test_claims_time.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import seqlab.measure.order
import seqlab.measure.paths
import seqlab.measure.reach
import seqlab.measure.trace
import seqlab.measure.work
import seqlab.studies.claims_path as claims_path
import seqlab.studies.figure
from seqlab import cost
from seqlab.studies import claims, quiz
from seqlab.studies.check import CAVEAT, CHECKS, FAILS, HOLDS, CheckSizes

SIZES = CheckSizes(span_lengths=(8, 16), path_lengths=(8, 16), radii=(0.5, 0.8, 1.0, 1.25, 1.5, 3.0), reach_draws=1,
                   reach_lengths=(8, 16, 32), count_length=8, count_widths=(4, 6), crossover_width=8,
                   layer_heads=(1, 2), time_length=16, time_width=4, time_batch=2, threads=2, min_run_time=0.001,
                   worked_lengths=(50,), span_widths=(2, 4), order_length=8, figure=(4, 4, 16, 2))


def verdict(claim: str) -> str:
    return CHECKS[claim](SIZES, 0).verdict


def plus_one(monkeypatch, module, name, when=lambda function: True):
    """Replace ``module.name`` (a counter) by one that counts one multiplication more when ``when(function)``."""
    real = getattr(module, name)

    def wrong(function, *args, **kwargs):
        counted = real(function, *args, **kwargs)
        return replace(counted, multiplications=counted.multiplications + 1) if when(function) else counted

    monkeypatch.setattr(module, name, wrong)


# --- L1, L2: spans ------------------------------------------------------------------------------------------

def test_l1_flat_chain_does_not_hold(monkeypatch):
    assert verdict("L1") == HOLDS
    real = seqlab.measure.trace.measure_span
    monkeypatch.setattr(seqlab.measure.trace, "measure_span",
                        lambda f, *a, **k: replace(real(f, *a, **k), products=1))
    assert verdict("L1") == FAILS


def test_l2_growing_span_does_not_hold(monkeypatch):
    assert verdict("L2") == HOLDS
    real = seqlab.measure.trace.measure_span

    def growing(function, *args, **kwargs):  # one op more at the longer T
        span = real(function, *args, **kwargs)
        return replace(span, ops=span.ops + (args[0].shape[0] == 16))

    monkeypatch.setattr(seqlab.measure.trace, "measure_span", growing)
    assert verdict("L2") == FAILS


# --- L3, L4: paths and reach --------------------------------------------------------------------------------

def test_l3_caveat_becomes_holds_when_growth_starts_near_1(monkeypatch):
    assert verdict("L3") == CAVEAT
    real = claims_path._factors

    def early_growth(sizes, seed):  # with inputs, growth (×1.1 per step) from ρ = 1.25
        return {r: (zero, 1.1 if r >= 1.25 else inputs) for r, (zero, inputs) in real(sizes, seed).items()}

    monkeypatch.setattr(claims_path, "_factors", early_growth)
    assert verdict("L3") == HOLDS


def test_l3_no_decay_below_1_does_not_hold(monkeypatch):
    real = seqlab.measure.reach.measure_reach

    def reversed_norms(layer, x, *args, **kwargs):  # the signal grows towards the past: factor 1/f
        reach = real(layer, x, *args, **kwargs)
        return replace(reach, norms=tuple(reversed(reach.norms)))

    monkeypatch.setattr(seqlab.measure.reach, "measure_reach", reversed_norms)
    assert verdict("L3") == FAILS


def test_l3_tanh_adding_growth_does_not_hold(monkeypatch):
    real = claims_path._factors
    monkeypatch.setattr(claims_path, "_factors",
                        lambda sizes, seed: {r: (z, z * 1.2) for r, (z, _) in real(sizes, seed).items()})
    assert verdict("L3") == FAILS


def test_l4_caveat_becomes_holds_when_reach_is_flat_in_T(monkeypatch):
    assert verdict("L4") == CAVEAT
    real = seqlab.measure.reach.measure_reach
    monkeypatch.setattr(seqlab.measure.reach, "measure_reach",
                        lambda layer, x, *a, **k: replace(real(layer, x, *a, **k), norms=(0.5,) * x.shape[0]))
    assert verdict("L4") == HOLDS


def test_l4_growing_path_does_not_hold(monkeypatch):
    real = seqlab.measure.paths.measure_paths

    def long_path(function, x, *args, **kwargs):  # T - 1 products, as a recurrence would have
        paths = real(function, x, *args, **kwargs)
        return replace(paths, products=((*paths.products[0][:-1], x.shape[0] - 1),))

    monkeypatch.setattr(seqlab.measure.paths, "measure_paths", long_path)
    assert verdict("L4") == FAILS


# --- L5–L7, L9: counts --------------------------------------------------------------------------------------

@pytest.mark.parametrize("claim", ["L5", "L6"])
def test_a_count_off_by_one_does_not_hold(monkeypatch, claim):
    assert verdict(claim) == HOLDS
    plus_one(monkeypatch, seqlab.measure.work, "count_on_meta")
    assert verdict(claim) == FAILS


def test_l6_with_no_independent_count_is_a_caveat(monkeypatch):
    real = seqlab.measure.work.count_multiplications

    def seqlab_only(function, *args, **kwargs):  # every count from seqlab's formula for a fused kernel
        counted = real(function, *args, **kwargs)
        return replace(counted, by_op={"aten._scaled_dot_product_flash_attention_for_cpu": counted.multiplications})

    monkeypatch.setattr(seqlab.measure.work, "count_multiplications", seqlab_only)
    assert verdict("L6") == CAVEAT


def test_l7_lesson_scope_count_off_does_not_hold(monkeypatch):
    assert verdict("L7") == CAVEAT
    plus_one(monkeypatch, seqlab.measure.work, "count_multiplications",
             when=lambda function: getattr(function, "__name__", "") == "_sdpa")
    assert verdict("L7") == FAILS


def test_l7_and_l9_hold_plainly_if_the_layer_were_measured_cheaper(monkeypatch):
    """A multi-head layer counted (and closed-formed) at a tenth of its work crosses the recurrence at layer
    scope too: the caveat goes. Counted alone at a tenth, it contradicts its closed form: does not hold."""
    import torch

    real = seqlab.measure.work.count_on_meta

    def tenth(function, *args, **kwargs):
        counted = real(function, *args, **kwargs)
        if isinstance(function, torch.nn.MultiheadAttention):
            return replace(counted, multiplications=counted.multiplications // 10)
        return counted

    monkeypatch.setattr(seqlab.measure.work, "count_on_meta", tenth)
    assert verdict("L7") == verdict("L9") == FAILS
    closed = cost.attention_layer_multiplications  # the one table of closed forms, which L7 and L9 read
    monkeypatch.setattr(cost, "attention_layer_multiplications", lambda *a, **k: closed(*a, **k) // 10)
    assert verdict("L7") == verdict("L9") == HOLDS


def test_l9_count_off_does_not_hold(monkeypatch):
    assert verdict("L9") == CAVEAT
    plus_one(monkeypatch, seqlab.measure.work, "count_multiplications",
             when=lambda function: isinstance(function, __import__("torch").nn.RNN))
    assert verdict("L9") == FAILS


def test_l9_chain_that_depends_on_width_does_not_hold(monkeypatch):
    real = seqlab.measure.trace.measure_span

    def width_dependent(function, *args, **kwargs):  # one product more at the wider traced width
        span = real(function, *args, **kwargs)
        return replace(span, products=span.products + (args[0].shape[-1] == 4))

    monkeypatch.setattr(seqlab.measure.trace, "measure_span", width_dependent)
    assert verdict("L9") == FAILS


# --- L10–L12 ------------------------------------------------------------------------------------------------

def test_l10_order_sensitive_attention_does_not_hold(monkeypatch):
    assert verdict("L10") == HOLDS
    real = seqlab.measure.order.measure_order

    def changed(layer, x, **kwargs):  # attention's change (a lambda; the recurrence is an nn.Module) grows
        result = real(layer, x, **kwargs)
        if isinstance(layer, torch.nn.Module):
            return result
        return replace(result, max_abs_change=10 * result.tolerance + 1e-3, holds=False, verdict="does not hold")

    monkeypatch.setattr(seqlab.measure.order, "measure_order", changed)
    assert verdict("L10") == FAILS


@pytest.mark.parametrize(("times_margin", "verdict_"), [(0.5, FAILS), (0.99, FAILS), (1.01, HOLDS)])
def test_l10_a_recurrence_that_moves_only_by_rounding_does_not_hold(monkeypatch, times_margin, verdict_):
    """The recurrence must move by more than RECURRENCE_MARGIN times the rounding tolerance: a change of half, or
    99 %, of that floor is rounding, not order (the claim fails); 101 % of it tells the two machines apart."""
    real = seqlab.measure.order.measure_order
    tolerances = []

    def recurrence_moved(layer, x, **kwargs):  # the recurrence is the nn.Module; attention comes as a lambda
        result = real(layer, x, **kwargs)
        if not isinstance(layer, torch.nn.Module):
            tolerances.append(result.tolerance)
            return result
        change = times_margin * claims.RECURRENCE_MARGIN * tolerances[0]
        return replace(result, max_abs_change=change)

    monkeypatch.setattr(seqlab.measure.order, "measure_order", recurrence_moved)
    assert verdict("L10") == verdict_


def test_l11_a_fourth_box_that_mixes_does_not_hold(monkeypatch):
    real = seqlab.studies.figure.measure_figure(*SIZES.figure, seed=0)  # measured once
    monkeypatch.setattr(seqlab.studies.figure, "measure_figure", lambda *a, **k: real)
    assert verdict("L11") == HOLDS
    monkeypatch.setattr(seqlab.studies.figure, "measure_figure",
                        lambda *a, **k: replace(real, lit=real.lit + ("encoder.feed_forward",)))
    assert verdict("L11") == FAILS


def test_l12_a_different_fact_changes_the_answer_and_the_verdict(monkeypatch):
    assert verdict("L12") == HOLDS
    facts = quiz.measure_facts()
    monkeypatch.setattr(quiz, "measure_facts", lambda: replace(facts, crossover=facts.crossover * 2))
    judged = CHECKS["L12"](SIZES, 0)
    assert judged.verdict == FAILS and judged.condition["differ"] == ["q2"]
