"""seqlab.layers.transition: declared transition factors, scaled forward or in the backward, and the exact
power-of-two rescaling that keeps a long product's gradient in float64's range.

Two routes: a BACKWARD mark scales the gradient by s per crossing (an Elman chain of T steps: ∂h_T/∂x_1 at scale s
is s^(T−1) times it at 1, the chain rule); a FORWARD factor scales the function (a diagonal recurrence's decays).
"""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.layers.transition import (
    BACKWARD,
    BAND,
    FORWARD,
    SCALINGS,
    Scaling,
    apply_transition,
    declares_transition,
)

F64 = torch.float64


class Marked(torch.nn.Module):
    """y = factor(x) · 3, the factor declared with the given scaling."""

    transition_factor = "a_t"

    def __init__(self, scaling):
        super().__init__()
        self.transition_scaling = scaling
        self.transition_scale = None

    def forward(self, x):
        return apply_transition(self, x) * 3


def test_the_constants():
    assert SCALINGS == (FORWARD, BACKWARD) == ("forward", "backward") and BAND == 256


def test_declares_transition_needs_all_three_attributes_and_a_known_scaling():
    assert declares_transition(Marked(FORWARD)) and declares_transition(Marked(BACKWARD))
    assert not declares_transition(Marked("sideways"))
    plain = Marked(FORWARD)
    del plain.transition_scale
    assert not declares_transition(plain)
    assert not declares_transition(torch.nn.RNN(2, 2))


def test_unscaled_the_factor_is_returned_untouched_and_nothing_is_recorded():
    layer, a = Marked(FORWARD), torch.tensor([0.5, 0.25])
    assert apply_transition(layer, a) is a
    assert not hasattr(layer, "transition_applied")


def test_forward_scaling_multiplies_the_factor_and_counts_each_call():
    layer, a = Marked(FORWARD), torch.tensor([0.5, 0.25])
    layer.transition_scale = 2.0
    assert apply_transition(layer, a).tolist() == [1.0, 0.5]
    apply_transition(layer, a)
    assert layer.transition_applied == 2


def test_backward_scaling_is_the_identity_forward_and_s_on_the_gradient():
    layer = Marked(BACKWARD)
    layer.transition_scale = 5.0
    x = torch.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = layer(x)
    assert y.tolist() == [3.0, 6.0]
    y.sum().backward()
    assert x.grad.tolist() == [15.0, 15.0]  # 3 · s


def test_a_shared_scaling_records_which_modules_applied_it():
    scaling = Scaling(2.0)
    first, second, never = Marked(FORWARD), Marked(BACKWARD), Marked(FORWARD)
    for layer in (first, second, never):
        layer.transition_scale = scaling
    never.transition_scale = None
    x = torch.ones(2, dtype=F64, requires_grad=True)
    out = second(first(x))  # forward: 2·x·3; backward mark: identity, s on the gradient
    assert out.tolist() == [18.0, 18.0]
    assert scaling.applied == 2 and scaling.applied_by == {id(first), id(second)}
    out.sum().backward()
    assert x.grad.tolist() == [36.0, 36.0]  # 3 · 3 · 2 (forward factor) · 2 (mark)


@pytest.mark.parametrize("s", [0.5, 2.0])
def test_an_elman_chain_scales_its_gradient_by_s_per_crossing(s):
    """Route 1: the declared mark at scale s. Route 2: the chain rule: T − 1 crossings of W_hh from x_1 to h_T."""
    from seqlab.layers.recurrent import ElmanRNN

    T = 5
    rnn = ElmanRNN(3, 4, generator=torch.Generator().manual_seed(0), dtype=F64)
    assert rnn.transition_scaling == BACKWARD and declares_transition(rnn)
    x = torch.randn(T, 3, generator=torch.Generator().manual_seed(1), dtype=F64)

    def gradient(scale):
        rnn.transition_scale = scale
        z = x.clone().requires_grad_(True)
        rnn(z)[-1].sum().backward()
        rnn.transition_scale = None
        return z.grad[0]

    torch.testing.assert_close(gradient(s), s ** (T - 1) * gradient(None), rtol=1e-12, atol=0)


def test_rescale_keeps_a_gradient_in_the_band_by_an_exact_power_of_two():
    scaling = Scaling(1.0)
    scaling.start(1.0)
    inside = torch.tensor([2.0 ** 100], dtype=F64)
    assert scaling.rescale(0, inside).tolist() == [2.0 ** 100] and scaling.decisions == {}
    edge = torch.tensor([2.0 ** 255], dtype=F64)  # frexp power 256: at the band's edge, kept
    assert scaling.rescale(1, edge).tolist() == [2.0 ** 255] and scaling.decisions == {}
    huge = torch.tensor([2.0 ** 256 * 1.5], dtype=F64)  # power 257: brought back to 0.75
    assert scaling.rescale(2, huge).tolist() == [0.75]
    assert scaling.decisions == {2: -257} and scaling.exponent == -257
    tiny = torch.tensor([2.0 ** -300], dtype=F64)  # power -299 → +299
    assert scaling.rescale(3, tiny).tolist() == [0.5]
    assert scaling.decisions == {2: -257, 3: 299} and scaling.exponent == 42
    assert scaling.rescale(4, torch.zeros(2)).tolist() == [0.0, 0.0]  # nothing to rescale


def test_replay_applies_earlier_decisions_plus_the_offset():
    scaling = Scaling()
    scaling.start(3.0, replay={2: -10}, offset=1)
    assert scaling.rescale(2, torch.tensor([1.0], dtype=F64)).tolist() == [3.0 * 2.0 ** -9]
    assert scaling.rescale(5, torch.tensor([2.0 ** 400], dtype=F64)).tolist() == [3.0 * 2.0 ** 400]  # not decided
    assert scaling.exponent == -9
    scaling.start(1.0)
    assert scaling.decisions == {} and scaling.exponent == 0 and scaling.replay is None
    assert math.isclose(scaling.s, 1.0)
