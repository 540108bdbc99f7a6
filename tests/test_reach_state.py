"""seqlab.measure.reach_state: reach from a recurrence's initial state, against the chain rule written out.

Second route: for an Elman step h_t = tanh(W_ih x_t + W_hh h_{t-1} + b), ∂h_T/∂h_0 = Π diag(1 − h_t²) W_hh, built
by hand from the run's own states; for an LSTM's cell, ∂y_p/∂c_0 and ∂c_T/∂c_0 from the full float64 Jacobian.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.measure.reach import measure_reach
from seqlab.measure.reach_state import (
    StateReach,
    frobenius,
    run_from_state,
    state_tuple,
    uses_steps,
    vjp_many,
)

F64 = torch.float64


def elman(seed: int):
    torch.manual_seed(seed)
    return nn.RNN(3, 4).double().eval(), torch.randn(6, 3, dtype=F64), torch.randn(1, 4, dtype=F64)


@pytest.mark.parametrize("seed", [0, 1])
def test_elman_final_state_reach_is_the_product_of_its_step_jacobians(seed):
    rnn, x, h0 = elman(seed)
    state = measure_reach(rnn, x, initial_state=h0).state
    assert state.names == ("h_0",) and state.final_names == ("h_T",) and state.shapes == ((1, 4),)
    with torch.no_grad():
        hs = rnn(x, h0)[0]  # (T, d_h): h_1 … h_T
        product = torch.eye(4, dtype=F64)
        for h in hs:  # ∂h_t/∂h_{t-1} = diag(1 − h_t²) W_hh, applied in order
            product = torch.diag(1 - h ** 2) @ rnn.weight_hh_l0 @ product
    assert state.norm("h_T", "h_0") == pytest.approx(float(product.norm()), rel=1e-12)
    # y_p = h_p for the last position: ∂y_T/∂h_0 is the same product
    assert state.output[0] == pytest.approx(float(product.norm()), rel=1e-12)


def test_lstm_cell_reach_agrees_with_the_full_jacobian():
    torch.manual_seed(3)
    lstm = nn.LSTM(2, 3).double().eval()
    x = torch.randn(5, 2, dtype=F64)
    h0, c0 = torch.randn(1, 3, dtype=F64), torch.randn(1, 3, dtype=F64)
    state = measure_reach(lstm, x, position=2, initial_state=(h0, c0)).state
    assert state.names == ("h_0", "c_0") and state.final_names == ("h_T", "c_T")
    y_c = torch.autograd.functional.jacobian(lambda c: lstm(x, (h0, c))[0][2], c0)
    c_c = torch.autograd.functional.jacobian(lambda c: lstm(x, (h0, c))[1][1], c0)
    h_h = torch.autograd.functional.jacobian(lambda h: lstm(x, (h, c0))[1][0], h0)
    assert state.output[1] == pytest.approx(float(y_c.norm()), rel=1e-12)
    assert state.norm("c_T", "c_0") == pytest.approx(float(c_c.norm()), rel=1e-12)
    assert state.norm("h_T", "h_0") == pytest.approx(float(h_h.norm()), rel=1e-12)


def test_a_name_outside_the_states_is_refused():
    state = StateReach(names=("h_0",), shapes=((1, 2),), output=(1.0,), final_names=("h_T",), final=((0.5,),))
    assert state.norm("h_T", "h_0") == 0.5
    with pytest.raises(SeqlabError, match=r"expected a final state in \('h_T',\) and an initial state in "
                                          r"\('h_0',\), received 'c_T' and 'h_0'"):
        state.norm("c_T", "h_0")


def test_state_tuple():
    h = torch.zeros(2)
    assert state_tuple(h) == (h,)
    assert state_tuple([h, h]) == (h, h)
    with pytest.raises(SeqlabError, match="initial_state must be a tensor or a tuple of tensors"):
        state_tuple(())
    with pytest.raises(SeqlabError, match="received int"):
        state_tuple(3)
    with pytest.raises(SeqlabError, match="no floating tensor to differentiate"):
        state_tuple((torch.zeros(2, dtype=torch.bool),))


def test_a_layer_with_steps_runs_from_the_given_state():
    class Accumulate:
        """s_t = s_{t-1} + x_t; y_t = 2 s_t."""

        def initial_state(self, batch):
            return (torch.zeros(batch, 2),)

        def step(self, x_t, state):
            s = state[0] + x_t
            return 2 * s, (s,)

    layer = Accumulate()
    assert uses_steps(layer) and not uses_steps(nn.RNN(2, 2))
    y, final = run_from_state(layer, torch.ones(3, 2), (torch.full((1, 2), 10.0),))
    assert y.tolist() == [[22.0, 22.0], [24.0, 24.0], [26.0, 26.0]]
    assert final[0].tolist() == [[13.0, 13.0]]


def test_a_layer_that_returns_no_state_is_refused():
    with pytest.raises(SeqlabError, match=r"must return \(y, h_n\) or \(y, \(h_n, c_n\)\), received Tensor"):
        run_from_state(lambda x, h: x, torch.ones(3, 2), (torch.zeros(1, 2),))
    with pytest.raises(SeqlabError, match="the final state must be a tensor or a tuple of tensors"):
        run_from_state(lambda x, h: (x, (h, 3)), torch.ones(3, 2), (torch.zeros(1, 2),))


def test_vjp_many_gives_zeros_for_an_unused_input():
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    out = 3 * a
    grads, how = vjp_many(out, [a, b], torch.eye(2))
    assert how == "batched"
    assert grads[0].tolist() == [[3.0, 0.0], [0.0, 3.0]] and grads[1].tolist() == [[0.0] * 3] * 2
    grads, _ = vjp_many(torch.ones(2), [a], torch.eye(2))  # an output that needs no grad: zeros
    assert grads[0].tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_frobenius_sums_or_averages_and_survives_tiny_values():
    g = torch.tensor([[3.0, 0.0], [0.0, 4.0]], dtype=F64)
    assert frobenius(g, mean=False) == 5.0  # sqrt(9 + 16)
    assert frobenius(g, mean=True) == pytest.approx((12.5) ** 0.5)  # sqrt((9 + 16) / 2)
    tiny = g * 1e-200  # squares would underflow float64 without the scaling
    assert frobenius(tiny, mean=False) == pytest.approx(5e-200, rel=1e-12)
    assert frobenius(torch.zeros(2, 2), mean=False) == 0.0
    assert math.isnan(frobenius(torch.tensor([[float("nan")]]), mean=False))
