"""Measured span (seqlab.measure.trace): linear in T for the recurrence, constant for attention (L1, L2)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch
import torch.nn as nn
import torch.nn.functional as F

from seqlab.measure.trace import measure_span


@pytest.fixture(scope="module")
def rnn():
    return nn.RNN(16, 16)


def spans(function, lengths, make_input):
    return [measure_span(function, *make_input(T)) for T in lengths]


def test_torch_rnn_span_is_exactly_linear(rnn):
    measured = spans(rnn, (8, 16, 24, 32), lambda T: (torch.randn(T, 16),))
    # each step: addmm by W_hh, add the input product, tanh: 3 ops and 1 product in a row
    assert [s.ops for s in measured] == [24, 48, 72, 96]
    assert [s.products for s in measured] == [8, 16, 24, 32]


@pytest.mark.parametrize("module", [nn.LSTM(8, 8), nn.GRU(8, 8)], ids=["lstm", "gru"])
def test_gated_recurrences_span_is_linear_even_when_fused(module):
    measured = spans(module, (4, 8, 12), lambda T: (torch.randn(T, 1, 8),))
    steps = [s.ops for s in measured]
    assert steps[1] - steps[0] == steps[2] - steps[1] > 0
    assert [s.products for s in measured] == [4, 8, 12]
    assert all(not s.fused for s in measured)


def test_fused_kernel_is_named_when_not_expanded():
    span = measure_span(nn.LSTM(8, 8), torch.randn(6, 1, 8), expand_fused=False)
    assert span.fused == {"aten.mkldnn_rnn_layer": 1}
    assert span.ops == 1


def test_sdpa_span_does_not_grow_with_T():
    measured = spans(F.scaled_dot_product_attention, (8, 64, 512), lambda T: (torch.randn(1, T, 32),) * 3)
    assert len({(s.ops, s.products) for s in measured}) == 1
    assert measured[0].products == 2  # Q Kᵀ, then A V


def test_multihead_attention_span_does_not_grow_with_T():
    attention = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    measured = spans(attention, (8, 64, 512), lambda T: (torch.randn(1, T, 32),) * 3)
    assert len({(s.ops, s.products) for s in measured}) == 1


def test_in_place_ops_extend_the_chain():
    def chain(x):
        y = x.clone()  # movement: costs nothing
        for _ in range(3):
            y.add_(1.0)
        return y

    span = measure_span(chain, torch.randn(4))
    assert (span.ops, span.total_ops) == (3, 3)


def test_write_through_a_view_reaches_the_base():
    def write_through_view(x):
        base = x.exp()  # 1
        base[0].mul_(2.0)  # 2: writes the base's storage through a view
        return base.sum()  # 3

    assert measure_span(write_through_view, torch.randn(5, 3)).ops == 3


def test_freed_storage_is_not_mistaken_for_a_new_tensor():
    def reuse(x):
        long_chain = x.exp().exp().exp().exp()  # 4 ops in a row, then freed
        del long_chain
        fresh = torch.tensor([[0.5] * x.shape[1]] * x.shape[0])  # same size, made outside dispatch
        return fresh * 2.0  # 1 op: must not inherit the freed chain's depth

    span = measure_span(reuse, torch.randn(64, 64))
    assert span.ops == 4
    assert span.op_counts["aten.mul"] == 1


def test_independent_branches_are_parallel():
    def branches(x):
        return x.exp() + x.sin() + x.cos()  # exp, sin, cos side by side; two adds in a row

    span = measure_span(branches, torch.randn(3))
    assert (span.ops, span.total_ops) == (3, 5)
    assert span.parallelism == pytest.approx(5 / 3)


@settings(max_examples=15, deadline=None)
@given(T=st.integers(1, 12), d=st.integers(1, 6), layer=st.sampled_from(["rnn", "attention", "lstm"]))
def test_span_never_decreases_when_T_grows(T, d, layer):
    module = {"rnn": nn.RNN(d, d), "lstm": nn.LSTM(d, d), "attention": nn.MultiheadAttention(d, 1)}[layer].eval()
    run = (lambda x: module(x, x, x)) if layer == "attention" else module
    short, long = measure_span(run, torch.randn(T, 1, d)), measure_span(run, torch.randn(T + 1, 1, d))
    assert (long.ops, long.products) >= (short.ops, short.products)
    assert long.ops >= short.ops and long.products >= short.products
