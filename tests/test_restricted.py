"""Restricted self-attention (seqlab.layers.restricted): banded equals dense with a band mask; work, span, paths."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.restricted import (RestrictedAttentionStack, RestrictedSelfAttention, layers_to_connect,
                                      restricted_attention_multiplications)
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications


def band(T: int, window: int) -> torch.Tensor:
    """(T, T) bool, True where |j - i| <= r: the dense route's mask."""
    positions = torch.arange(T)
    return (positions[:, None] - positions[None, :]).abs() <= window


# --- Two routes agree -----------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(T=st.integers(1, 12), window=st.integers(1, 6), batched=st.booleans(), seed=st.integers(0, 2**16))
def test_banded_equals_dense_attention_with_a_band_mask(T, window, batched, seed):
    generator = torch.Generator().manual_seed(seed)
    layer = RestrictedSelfAttention(6, window, d_v=4, generator=generator).eval()
    x = torch.randn(*((2,) if batched else ()), T, 6, generator=generator)
    out, weights = layer(x)
    dense, dense_weights = layer.attention(*layer.project(x), band(T, window))  # SelfAttention's own route
    assert out.shape == dense.shape == (*x.shape[:-1], 4)
    assert torch.allclose(out, dense, atol=1e-6)
    # slot w of row t is position t + w - r: the banded weights are the dense rows' band
    for t in range(T):
        for w in range(2 * window + 1):
            j = t + w - window
            expected = dense_weights[..., t, j] if 0 <= j < T else torch.zeros(())
            assert torch.allclose(weights[..., t, w], expected, atol=1e-6)


def test_padded_slots_have_weight_exactly_zero():
    layer = RestrictedSelfAttention(4, 3).eval()
    _, weights = layer(torch.randn(5, 4))  # (T, 2r + 1) = (5, 7)
    assert weights.shape == (5, 7)
    assert weights[0, :3].eq(0).all() and weights[4, 5:].eq(0).all() and weights[2, 0].eq(0)
    assert torch.allclose(weights.sum(-1), torch.ones(5))


# --- Work and span of one layer ------------------------------------------------------------------------

@pytest.mark.parametrize(("T", "window", "d_k", "d_v"), [(16, 1, 8, 8), (64, 2, 16, 8), (50, 4, 8, 12), (3, 5, 4, 4)])
def test_counted_work_is_banded(T, window, d_k, d_v):
    layer = RestrictedSelfAttention(d_k, window, d_v=d_v).eval()
    q, k, v = layer.project(torch.randn(1, T, d_k))
    counted = count_multiplications(layer.attend, q, k, v)
    expected = restricted_attention_multiplications(T, window, d_k, d_v)
    assert counted.multiplications == expected == (2 * window + 1) * T * (d_k + d_v)
    assert counted.unaccounted == {}


def test_banded_work_is_far_below_the_full_square():
    # T = 256, r = 4: 9 * 256 * 128 = 294_912 against 256**2 * 128 = 8_388_608
    assert restricted_attention_multiplications(256, 4, 64, 64) == 294_912
    layer = RestrictedSelfAttention(64, 4).eval()
    q, k, v = layer.project(torch.randn(256, 64))
    assert count_multiplications(layer.attend, q, k, v).multiplications == 294_912 < 256**2 * 128


@pytest.mark.parametrize("T", [4, 16, 64])
def test_span_does_not_grow_with_T(T):
    span = measure_span(RestrictedSelfAttention(8, 2).eval(), torch.randn(1, T, 8))
    # W_q x, the scores, /√d_k, the band's -inf, softmax, the mix: 6 ops, 3 of them products
    assert (span.ops, span.products) == (6, 3)


# --- Exact path matrices -------------------------------------------------------------------------------

@pytest.mark.parametrize(("T", "window"), [(9, 2), (6, 1), (4, 5)])
def test_one_layer_connects_only_the_window(T, window):
    layer = RestrictedSelfAttention(4, window).eval()
    paths = measure_paths(lambda x: layer(x)[0], torch.randn(T, 4))
    expected = tuple(tuple(2 if abs(j - i) <= window else None for j in range(T)) for i in range(T))
    assert paths.products == expected  # x_i -> v_i (W_v), then the mix, as in full self-attention
    assert paths.ops == expected
    assert paths.fallbacks == {}


@pytest.mark.parametrize(("T", "window"), [(9, 2), (10, 3), (7, 1)])
def test_stack_path_is_distance_over_window(T, window):
    stack = RestrictedAttentionStack.connecting(T, 3, window, generator=torch.Generator().manual_seed(0)).eval()
    assert stack.depth == math.ceil((T - 1) / window)
    per_depth = measure_paths(stack.forward_all, torch.randn(1, T, 3), outputs=lambda outs: outs)
    least = [[next((m.row(i)[j] for m in per_depth if m.row(i)[j] is not None), None) for j in range(T)]
             for i in range(T)]
    # ⌈|j - i| / r⌉ layers, two products each
    assert least == [[2 * max(1, math.ceil(abs(j - i) / window)) for j in range(T)] for i in range(T)]
    assert per_depth[-1].longest() == 2 * stack.depth


@pytest.mark.parametrize(("T", "window", "expected"), [(256, 4, 64), (256, 8, 32), (9, 4, 2), (10, 4, 3), (1, 3, 1),
                                                       (2, 9, 1)])
def test_layers_to_connect(T, window, expected):
    assert layers_to_connect(T, window) == expected


# --- Bad input -----------------------------------------------------------------------------------------

def test_bad_window():
    with pytest.raises(SeqlabError, match="window must be an integer >= 1, received 0"):
        RestrictedSelfAttention(4, 0)
    with pytest.raises(SeqlabError, match="window must be an integer >= 1, received 0"):
        restricted_attention_multiplications(8, 0, 4, 4)


def test_a_mask_is_refused():
    layer = RestrictedSelfAttention(4, 1)
    with pytest.raises(SeqlabError, match="takes no mask"):
        layer(torch.randn(3, 4), torch.ones(3, 3, dtype=torch.bool))


def test_bad_shapes():
    layer = RestrictedSelfAttention(4, 1)
    with pytest.raises(SeqlabError, match=r"x must have shape \(T, 4\)"):
        layer(torch.randn(3, 5))
    with pytest.raises(SeqlabError, match=r"q, k, v must be"):
        layer.attend(torch.randn(3, 4), torch.randn(2, 4), torch.randn(3, 4))


# --- Properties ----------------------------------------------------------------------------------------

@settings(max_examples=10, deadline=None)
@given(T=st.integers(2, 12), window=st.integers(1, 4))
def test_path_and_span_never_decrease_when_T_grows(T, window):
    def measured(length):
        stack = RestrictedAttentionStack.connecting(length, 2, window, generator=torch.Generator().manual_seed(0))
        x = torch.randn(1, length, 2)
        path = measure_paths(stack.eval(), x, sources=(0,)).row(0)[length - 1]
        return path, measure_span(stack.attentions[0], x).ops

    (short_path, short_span), (long_path, long_span) = measured(T), measured(T + 1)
    assert long_path >= short_path and long_span >= short_span
