"""seqlab.measure.sensitivity: the spread of a reach over seeded weight perturbations, and the chaotic verdict.

The verdict's boundaries are pinned (strictly above the threshold; zeros and infinities), and a perturbed reach
is checked by a second route: the same perturbation applied by hand and measured with ``measure_reach``.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.measure.reach import measure_reach
from seqlab.measure.sensitivity import (
    CHAOTIC_ORDERS,
    DRAWS,
    PERTURBATION,
    Sensitivity,
    measure_sensitivity,
)


def sensitivity(reach, *perturbed, threshold=CHAOTIC_ORDERS):
    return Sensitivity(reach=reach, perturbed=perturbed, weight="w", relative=1e-7, seed=0,
                       threshold_orders=threshold)


def test_the_defaults():
    assert (PERTURBATION, DRAWS, CHAOTIC_ORDERS) == (1e-7, 5, 1.0)


def test_spread_in_decades_and_the_strict_threshold():
    s = sensitivity(2.0, 20.0, 4.0)
    assert (s.low, s.high) == (2.0, 20.0)
    assert s.spread_orders == pytest.approx(1.0) and s.spread_orders <= 1.0 + 1e-15
    at = sensitivity(1.0, 10.0)
    assert at.spread_orders == 1.0 and not at.chaotic  # exactly at the threshold: the figure stands
    assert sensitivity(1.0, 10.001).chaotic
    assert not sensitivity(1.0, 10.001, threshold=2.0).chaotic
    assert sensitivity(5.0, 5.0, 5.0).spread_orders == 0.0


def test_zeros_and_infinities():
    all_zero = sensitivity(0.0, 0.0)
    assert all_zero.spread_orders == 0.0 and not all_zero.chaotic  # nothing reaches, in every draw
    some_zero = sensitivity(1e-300, 0.0)
    assert some_zero.spread_orders == math.inf and some_zero.chaotic  # an underflow in some draws only
    assert sensitivity(1.0, math.inf).spread_orders == math.inf


def rnn_and_x(seed=0, scale=0.3):
    torch.manual_seed(seed)
    rnn = nn.RNN(3, 4, batch_first=True)
    with torch.no_grad():
        rnn.weight_hh_l0.mul_(scale)
    return rnn, torch.randn(6, 3)


def test_a_perturbed_reach_is_the_reach_of_the_same_perturbation_by_hand():
    rnn, x = rnn_and_x()
    s = measure_sensitivity(rnn, "weight_hh_l0", x, draws=2, probes=None, seed=4, relative=1e-3)
    base = copy.deepcopy(rnn).double()
    generator = torch.Generator().manual_seed(4)
    by_hand = []
    for _ in range(2):
        copy_ = copy.deepcopy(base)
        with torch.no_grad():
            w = copy_.weight_hh_l0
            w.mul_(1.0 + 1e-3 * torch.randn(w.shape, generator=generator, dtype=torch.float64))
        by_hand.append(measure_reach(copy_, x.double(), probes=None, batched=True).first)
    assert s.perturbed == pytest.approx(tuple(by_hand), rel=1e-12)
    assert s.reach == pytest.approx(measure_reach(base, x.double(), probes=None, batched=True).first, rel=1e-12)
    assert (s.weight, s.relative, s.seed) == ("weight_hh_l0", 1e-3, 4)
    assert s.perturbed[0] != s.reach  # the perturbation moved it
    assert not s.chaotic


def test_the_layer_is_never_modified_and_a_given_reach_is_used():
    rnn, x = rnn_and_x(1)
    before = {name: p.detach().clone() for name, p in rnn.named_parameters()}
    s = measure_sensitivity(rnn, "weight_ih_l0", x, reach=123.0, draws=1, probes=None)
    assert s.reach == 123.0 and len(s.perturbed) == 1
    for name, p in rnn.named_parameters():
        assert torch.equal(p, before[name]) and p.dtype == torch.float32


def test_seeded_draws_repeat():
    rnn, x = rnn_and_x(2)
    a = measure_sensitivity(rnn, "weight_hh_l0", x, draws=2, probes=4, relative=1e-4)
    b = measure_sensitivity(rnn, "weight_hh_l0", x, draws=2, probes=4, relative=1e-4)
    assert a == b


@pytest.mark.parametrize("relative", [0, -1e-7, math.inf, math.nan, True, "1e-7"])
def test_a_bad_relative_size_is_refused(relative):
    rnn, x = rnn_and_x()
    with pytest.raises(SeqlabError, match="relative must be a finite number > 0") as error:
        measure_sensitivity(rnn, "weight_hh_l0", x, relative=relative)
    assert error.value.parameter == "relative"


def test_an_unknown_weight_and_no_draws_are_refused():
    rnn, x = rnn_and_x()
    with pytest.raises(SeqlabError) as error:
        measure_sensitivity(rnn, "W_hh", x)
    assert str(error.value) == ("weight must be one of weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0; "
                                "received 'W_hh'")
    with pytest.raises(SeqlabError, match="draws must be an integer >= 1"):
        measure_sensitivity(rnn, "weight_hh_l0", x, draws=0)
