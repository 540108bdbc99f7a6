"""Measured path lengths (seqlab.measure.paths): exact matrices at small T for each kind of layer (L3, L4)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths

T = 6


def expected_rnn(T: int) -> tuple:
    """x_i reaches h_j after j - i + 1 products (W_xh once, W_hh at each later step); never backwards."""
    return tuple(tuple(j - i + 1 if j >= i else None for j in range(T)) for i in range(T))


def test_elman_rnn_path_is_j_minus_i_plus_one():
    paths = measure_paths(ElmanRNN(4, 5), torch.randn(T, 4))
    assert paths.products == expected_rnn(T)
    # ops: W_hh h, + W_xh x, + b, tanh: 4 per step, and the first step's product by W_xh
    assert paths.ops == tuple(tuple(4 * (j - i) + 4 if j >= i else None for j in range(T)) for i in range(T))
    assert paths.fallbacks == {}


def test_torch_rnn_agrees_with_the_loop():
    assert measure_paths(nn.RNN(4, 5), torch.randn(T, 4)).products == expected_rnn(T)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_gated_recurrences_keep_a_linear_path_in_ops(cell):
    paths = measure_paths(cell(4, 4), torch.randn(T, 4))
    ops = paths.ops
    assert all(ops[i][j] is None for i in range(T) for j in range(i))  # causal
    # past the first steps, the cell-state chain adds the same ops per step (a gate product and an
    # add): the path grows linearly with j - i, as the RNN's does
    steps = {ops[i][j + 1] - ops[i][j] for i in range(T) for j in range(i + 2, T - 1)}
    assert len(steps) == 1 and steps.pop() > 0
    assert all(ops[i][j] > ops[i][j - 1] for i in range(T) for j in range(i + 1, T))
    # in products the gated bypass crosses no W_hh: x_i -> c_i takes one product, c_i -> c_j none (L3)
    assert {paths.products[i][j] for i in range(T) for j in range(i, T)} == {1}


def test_self_attention_is_two_products_for_every_pair():
    layer = SelfAttention(8, generator=torch.Generator().manual_seed(0)).eval()
    paths = measure_paths(lambda x: layer(x)[0], torch.randn(T, 8))
    assert paths.products == ((2,) * T,) * T  # x_i -> v_i (W_v), then A V
    assert paths.longest() == 2


def test_causal_self_attention_cannot_see_the_future():
    layer = SelfAttention(8, causal=True, generator=torch.Generator().manual_seed(0)).eval()
    paths = measure_paths(lambda x: layer(x)[0], torch.randn(T, 8))
    assert paths.products == tuple(tuple(2 if j >= i else None for j in range(T)) for i in range(T))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_library_attention(causal):
    attention = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    mask = nn.Transformer.generate_square_subsequent_mask(T) if causal else None
    paths = measure_paths(lambda x: attention(x, x, x, attn_mask=mask, is_causal=causal)[0], torch.randn(1, T, 8))
    # in-projection, then A V, then the out-projection
    assert paths.products == tuple(tuple(3 if (j >= i or not causal) else None for j in range(T)) for i in range(T))
    sdpa = measure_paths(lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=causal), torch.randn(1, T, 8))
    assert sdpa.products == tuple(tuple(1 if (j >= i or not causal) else None for j in range(T)) for i in range(T))


@pytest.mark.parametrize(("kernel", "dilation"), [(3, 1), (3, 2), (5, 1)])
def test_one_convolution_reaches_its_window(kernel, dilation):
    padding = dilation * (kernel - 1) // 2
    conv = nn.Conv1d(3, 3, kernel, padding=padding, dilation=dilation)
    paths = measure_paths(lambda x: conv(x.transpose(-2, -1)).transpose(-2, -1), torch.randn(1, 9, 3))
    offsets = {dilation * (k - (kernel - 1) // 2) for k in range(kernel)}
    assert paths.products == tuple(tuple(1 if j - i in offsets else None for j in range(9)) for i in range(9))


def test_stacked_convolutions_need_depth_proportional_to_distance():
    layers = [nn.Conv1d(2, 2, 3, padding=1) for _ in range(4)]

    def stack(x):
        outputs, h = [], x.transpose(-2, -1)
        for conv in layers:
            h = torch.tanh(conv(h))
            outputs.append(h.transpose(-2, -1))
        return outputs

    per_depth = measure_paths(stack, torch.randn(1, 9, 2), outputs=lambda outs: outs)
    first_reached = [min((depth + 1 for depth, p in enumerate(per_depth) if p.products[0][j] is not None),
                         default=None) for j in range(9)]
    assert first_reached == [1, 1, 2, 3, 4, None, None, None, None]  # |j - i| layers of reach 1


def test_only_some_sources():
    paths = measure_paths(ElmanRNN(3, 3), torch.randn(8, 3), sources=[0, 7])
    assert paths.sources == (0, 7)
    assert paths.row(0) == (1, 2, 3, 4, 5, 6, 7, 8)
    assert paths.row(7) == (None,) * 7 + (1,)


@pytest.mark.parametrize("bad", [[8], [-1], [], ["0"]])
def test_bad_sources(bad):
    with pytest.raises(SeqlabError, match="sources"):
        measure_paths(ElmanRNN(3, 3), torch.randn(8, 3), sources=bad)


def test_bad_input_rank():
    with pytest.raises(SeqlabError, match=r"\(T, d\)"):
        measure_paths(lambda x: x, torch.randn(8))


@settings(max_examples=15, deadline=None)
@given(T=st.integers(2, 6), d=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_paths_never_shorten_when_T_grows(T, d, seed):
    torch.manual_seed(seed)
    rnn = ElmanRNN(d, d)
    short = measure_paths(rnn, torch.randn(T, d))
    long = measure_paths(rnn, torch.randn(T + 1, d))
    assert long.longest() >= short.longest()
    assert long.longest("ops") >= short.longest("ops")


@settings(max_examples=15, deadline=None)
@given(T=st.integers(2, 7), seed=st.integers(0, 2**16))
def test_permuting_inputs_leaves_self_attention_paths_invariant(T, seed):
    generator = torch.Generator().manual_seed(seed)
    layer = SelfAttention(4, generator=generator).eval()
    x = torch.randn(T, 4, generator=generator)
    permutation = torch.randperm(T, generator=generator)
    assert measure_paths(lambda z: layer(z)[0], x).products == \
        measure_paths(lambda z: layer(z)[0], x[permutation]).products
