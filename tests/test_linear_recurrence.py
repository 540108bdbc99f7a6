"""Diagonal and selective linear recurrences (seqlab.layers.linear_recurrence): loop == scan, decode == forward,
counts equal the closed forms, and the measured span grows as log T for the scan and as T for the loop.

Tolerance: float64, atol 1e-12 on outputs of size ~1 (diagonal) and ~1e-2 (selective; rtol 1e-10 added).
"""

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.fit import fit_growth
from seqlab.layers.linear_recurrence import (RECURRENCE_FORMS, DiagonalRecurrence, SelectiveRecurrence,
                                             diagonal_recurrence_multiplications,
                                             diagonal_recurrence_step_multiplications,
                                             selective_recurrence_multiplications,
                                             selective_recurrence_step_multiplications)
from seqlab.layers.scan import SCAN_METHODS
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications

MIXERS = (DiagonalRecurrence, SelectiveRecurrence)
CLOSED_FORMS = {DiagonalRecurrence: (diagonal_recurrence_multiplications, diagonal_recurrence_step_multiplications),
                SelectiveRecurrence: (selective_recurrence_multiplications, selective_recurrence_step_multiplications)}
LENGTHS = (16, 32, 64, 128, 256)


def build(cls, form: str = "loop", method: str = "hillis_steele", dtype=torch.float64):
    """d_model = 6, d_state = 5, weights from seed 0 (the same for every form)."""
    return cls(6, 5, form=form, scan_method=method, generator=torch.Generator().manual_seed(0), dtype=dtype)


def by_hand(module, x: torch.Tensor) -> torch.Tensor:
    """The recurrence from the docstring's equations, one position at a time, without the layer's helpers."""
    h = torch.zeros(x.shape[0], module.d_state, dtype=x.dtype)
    outputs = []
    for t in range(x.shape[1]):
        x_t = x[:, t]
        if isinstance(module, DiagonalRecurrence):
            a = torch.exp(-torch.exp(module.nu_log))
            h = a * h + torch.sqrt(1 - a**2) * (x_t @ module.in_proj.weight.T)
            outputs.append(h @ module.out_proj.weight.T)
        else:
            delta = torch.log1p(torch.exp(x_t @ module.delta_proj.weight.T + module.delta_bias))  # softplus
            h = torch.exp(-delta * torch.exp(module.A_log)) * h + delta * (x_t @ module.in_proj.weight.T)
            outputs.append(((x_t @ module.gate_proj.weight.T) * h) @ module.out_proj.weight.T)
    return torch.stack(outputs, dim=1)


@pytest.mark.parametrize("cls", MIXERS)
@pytest.mark.parametrize("T", [1, 5, 16, 37])
def test_loop_and_both_scans_agree_with_the_equations(cls, T):
    x = torch.randn(2, T, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(T))
    reference = by_hand(build(cls), x)
    for form in RECURRENCE_FORMS:
        for method in SCAN_METHODS:
            y = build(cls, form, method)(x)
            assert y.shape == (2, T, 6)
            assert torch.allclose(y, reference, rtol=1e-10, atol=1e-12), (form, method)


@pytest.mark.parametrize("cls", MIXERS)
@pytest.mark.parametrize("form", RECURRENCE_FORMS)
def test_step_by_step_decoding_equals_forward(cls, form):
    module = build(cls, form)
    x = torch.randn(3, 11, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    state, outputs = module.initial_state(3), []
    for t in range(11):
        y, state = module.step(x[:, t], state)
        outputs.append(y)
        assert [tuple(s.shape) for s in state] == [(3, 5)]  # fixed size, whatever t
    assert torch.allclose(torch.stack(outputs, dim=1), module(x), rtol=1e-10, atol=1e-12)


def test_decays_lie_in_the_unit_interval_and_the_selective_ones_follow_the_input():
    diagonal, selective = build(DiagonalRecurrence), build(SelectiveRecurrence)
    x = torch.randn(1, 4, 6, dtype=torch.float64)
    a_fixed, _, _ = diagonal.coefficients(x)
    a_chosen, _, _ = selective.coefficients(x)
    assert a_fixed.shape == (5,) and bool(((a_fixed > 0.9) & (a_fixed < 0.999)).all())
    assert a_chosen.shape == (1, 4, 5) and bool(((a_chosen > 0) & (a_chosen < 1)).all())
    assert not torch.allclose(a_chosen[:, 0], a_chosen[:, 1])  # a_t is chosen by x_t


# --- Counted work ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", MIXERS)
@pytest.mark.parametrize("T", [8, 24])
def test_counted_multiplications_equal_the_closed_form_in_both_forms(cls, T):
    forward_form, step_form = CLOSED_FORMS[cls]
    for form in RECURRENCE_FORMS:
        counted = count_multiplications(build(cls, form, dtype=torch.float32), torch.randn(2, T, 6))
        assert counted.complete
        assert counted.multiplications == forward_form(T, 6, 5, form, batch=2)
    module = build(cls)
    assert count_multiplications(module.step, torch.randn(2, 6, dtype=torch.float64),
                                 module.initial_state(2)).multiplications == step_form(6, 5, batch=2)


def test_closed_forms_by_hand():
    assert diagonal_recurrence_multiplications(100, 8, 16) == 25_600  # 2 * 100 * 8 * 16
    assert selective_recurrence_multiplications(100, 8, 16, "scan", batch=3) == 153_600  # 3 * 4 * 100 * 8 * 16
    assert diagonal_recurrence_step_multiplications(8, 16) == 256  # 2 * 8 * 16
    assert selective_recurrence_step_multiplications(8, 16) == 512  # 4 * 8 * 16


# --- Span: log T for the scan, T for the loop ----------------------------------------------------------------------

def module_spans(cls, form: str, method: str = "hillis_steele") -> list[int]:
    module = cls(4, 4, form=form, scan_method=method, generator=torch.Generator().manual_seed(0))
    return [measure_span(module, torch.randn(1, T, 4)).ops for T in LENGTHS]


@pytest.mark.parametrize("cls", MIXERS)
def test_scan_span_fits_log_t_and_loop_span_is_linear(cls):
    scan, loop = module_spans(cls, "scan"), module_spans(cls, "loop")
    scan_fit, loop_fit = fit_growth(LENGTHS, scan), fit_growth(LENGTHS, loop)
    assert scan_fit.exponent < 0.2 and scan_fit.model == "log"
    assert scan_fit.log_slope * math.log(2) == pytest.approx(2.0)  # two ops more per doubling of T
    assert abs(loop_fit.exponent - 1) < 0.1 and loop_fit.model == "power"
    assert [b - a for a, b in zip(loop, loop[1:])] == [2 * (b - a) for a, b in zip(LENGTHS, LENGTHS[1:])]


def test_blelloch_form_span_fits_log_t():
    fit = fit_growth(LENGTHS, module_spans(SelectiveRecurrence, "scan", "blelloch"))
    assert fit.model == "log" and fit.exponent < 0.25


def test_the_span_checks_would_fail_if_the_scan_waited_t_steps():
    """Were the scan's span the loop's, the log-T check above would refuse it (the verdict can fail)."""
    fit = fit_growth(LENGTHS, module_spans(DiagonalRecurrence, "loop"))
    assert not (fit.exponent < 0.2 and fit.model == "log")


# --- Bad input -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: DiagonalRecurrence(4, form="parallel"), "form must be one of loop, scan"),
    (lambda: SelectiveRecurrence(4, scan_method="sklansky"), "form must be one of hillis_steele, blelloch"),
    (lambda: DiagonalRecurrence(4, a_min=0.5, a_max=1.0), "0 < a_min <= a_max < 1"),
    (lambda: DiagonalRecurrence(4, d_state=0), "d_state must be an integer >= 1"),
    (lambda: SelectiveRecurrence(4)(torch.randn(1, 3, 5)), "x must have shape (B, T, 4)"),
    (lambda: SelectiveRecurrence(4).step(torch.randn(2, 4), (torch.zeros(1, 4),)), "state must be a tuple"),
    (lambda: diagonal_recurrence_multiplications(8, 4, 4, "scan", batch=0), "batch must be an integer >= 1"),
])
def test_bad_input_is_refused_with_one_clear_line(call, message):
    with pytest.raises(SeqlabError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)
