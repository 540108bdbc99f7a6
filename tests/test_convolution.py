"""Convolution stacks (seqlab.layers.convolution): depth to connect, exact path matrices, counted work (Table 1)."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.convolution import (ConvolutionStack, convolution_multiplications, dilation_base,
                                       layers_to_connect, reach)
from seqlab.measure.paths import measure_paths
from seqlab.measure.trace import measure_span
from seqlab.measure.work import count_multiplications


def least_over_depths(stack: ConvolutionStack, T: int, unit: str = "products"):
    """Per (i, j): the least path over every depth of the stack, and the depth where it is reached."""
    per_depth = measure_paths(stack.forward_all, torch.randn(1, T, stack.d_model), outputs=lambda outs: outs)
    least = [[None] * T for _ in range(T)]
    for depth, matrix in enumerate(per_depth, start=1):
        for i in range(T):
            for j, value in enumerate(matrix.row(i, unit)):
                if value is not None and least[i][j] is None:
                    least[i][j] = (value, depth)
    return least


# --- How deep a stack must be ------------------------------------------------------------------------

@pytest.mark.parametrize(("T", "kernel", "expected"), [
    (2, 3, 1), (9, 3, 8), (256, 3, 255),  # ⌈(T - 1) / 1⌉
    (9, 5, 4), (256, 5, 128), (10, 5, 5),  # ⌈(T - 1) / 2⌉: 8 / 2 = 4, 255 / 2 -> 128, 9 / 2 -> 5
    (256, 7, 85), (1, 3, 1),  # 255 / 3 = 85; a single position needs one layer
])
def test_contiguous_depth(T, kernel, expected):
    assert layers_to_connect(T, kernel, dilated=False) == expected
    assert expected == max(1, math.ceil((T - 1) / ((kernel - 1) / 2)))


@pytest.mark.parametrize(("T", "kernel", "expected"), [
    (2, 3, 1), (9, 3, 4), (16, 3, 4), (17, 3, 5), (256, 3, 8),  # least L with 2**L >= T
    (9, 5, 2), (10, 5, 3), (256, 5, 6), (256, 7, 4),  # 3**2 = 9; 3**6 = 729; 4**4 = 256
])
def test_dilated_depth_is_a_logarithm(T, kernel, expected):
    base = (kernel + 1) // 2
    assert layers_to_connect(T, kernel, dilated=True) == expected
    assert base ** expected >= T > base ** (expected - 1)  # ⌈log_b T⌉


def test_reach_and_base():
    assert [dilation_base(k) for k in (3, 5, 7)] == [2, 3, 4]
    assert [reach(L, 3, False) for L in (1, 2, 5)] == [1, 2, 5]
    assert [reach(L, 5, False) for L in (1, 2, 5)] == [2, 4, 10]
    assert [reach(L, 3, True) for L in (1, 2, 5)] == [1, 3, 31]  # 2**L - 1
    assert [reach(L, 5, True) for L in (1, 2, 3)] == [2, 8, 26]  # 3**L - 1


# --- Exact path matrices at small T ---------------------------------------------------------------------

@pytest.mark.parametrize(("T", "kernel"), [(9, 3), (11, 5)])
def test_contiguous_path_is_distance_over_half_width(T, kernel):
    half = (kernel - 1) // 2
    stack = ConvolutionStack.connecting(T, 3, kernel, generator=torch.Generator().manual_seed(0)).eval()
    least = least_over_depths(stack, T)
    expected = [[max(1, math.ceil(abs(j - i) / half)) for j in range(T)] for i in range(T)]
    assert [[value for value, _ in row] for row in least] == expected  # one product per layer crossed
    ops = least_over_depths(stack, T, "ops")
    assert [[value for value, _ in row] for row in ops] == [[2 * e - 1 for e in row] for row in expected]  # + tanh


@pytest.mark.parametrize(("T", "kernel"), [(9, 3), (17, 3), (10, 5)])
def test_dilated_path_is_a_logarithm_of_the_distance(T, kernel):
    base = (kernel + 1) // 2
    stack = ConvolutionStack.connecting(T, 2, kernel, dilated=True, generator=torch.Generator().manual_seed(0))
    least = least_over_depths(stack.eval(), T)
    # the least L with b**L - 1 >= |j - i|: ⌈log_b(|j - i| + 1)⌉, at least one layer
    expected = [[max(1, math.ceil(round(math.log(abs(j - i) + 1, base), 9))) for j in range(T)] for i in range(T)]
    assert [[value for value, _ in row] for row in least] == expected
    assert max(max(row) for row in expected) == stack.depth  # the farthest pair needs the whole stack


def test_one_layer_reaches_only_its_window():
    stack = ConvolutionStack(2, 5, generator=torch.Generator().manual_seed(0)).eval()
    paths = measure_paths(stack, torch.randn(1, 9, 2))
    assert paths.products == tuple(tuple(1 if abs(j - i) <= 2 else None for j in range(9)) for i in range(9))
    assert paths.fallbacks == {}


def test_dilations_by_powers_of_k_leave_pairs_unconnected():
    """Why the base is (k+1)/2: with dilations 3**l, x_0 must step to -1 to reach y_8, at any depth."""
    convolutions = [nn.Conv1d(2, 2, 3, padding=3**layer, dilation=3**layer) for layer in range(5)]

    def stack(x):
        h, outputs = x.transpose(-2, -1), []
        for conv in convolutions:
            h = conv(torch.tanh(h))
            outputs.append(h.transpose(-2, -1))
        return outputs

    per_depth = measure_paths(stack, torch.randn(1, 9, 2), outputs=lambda outs: outs)
    assert all(matrix.row(0)[8] is None for matrix in per_depth)  # 8 = 9 - 1: balanced digits (1, 0, -1)
    assert all(matrix.row(0)[2] is None for matrix in per_depth)  # 2 = 3 - 1, same story
    ours = ConvolutionStack.connecting(9, 2, 3, dilated=True)
    assert measure_paths(ours, torch.randn(1, 9, 2)).row(0)[8] == ours.depth == 4


# --- Work and span per layer ----------------------------------------------------------------------------

@pytest.mark.parametrize(("T", "d", "kernel", "dilated"), [(16, 8, 3, False), (33, 5, 5, False), (16, 8, 3, True),
                                                           (64, 16, 7, True)])
def test_counted_work_is_k_T_d_squared(T, d, kernel, dilated):
    stack = ConvolutionStack(d, kernel, layers=3, dilated=dilated).eval()
    counted = count_multiplications(stack, torch.randn(1, T, d))
    assert counted.multiplications == 3 * convolution_multiplications(T, d, kernel) == 3 * kernel * T * d * d
    assert counted.unaccounted == {}
    one = ConvolutionStack(d, kernel).eval()
    assert count_multiplications(one, torch.randn(T, d)).multiplications == kernel * T * d * d  # unbatched too


def test_closed_form_value():
    assert convolution_multiplications(256, 64, 3) == 3_145_728  # 3 * 256 * 64**2
    with pytest.raises(SeqlabError, match="received 0"):
        convolution_multiplications(0, 64, 3)


@pytest.mark.parametrize("T", [8, 64])
def test_one_layer_is_one_step(T):
    span = measure_span(ConvolutionStack(4, 3).eval(), torch.randn(1, T, 4))
    assert (span.ops, span.products) == (1, 1)  # the whole window in one product, whatever T
    stack = ConvolutionStack(4, 3, layers=5).eval()
    assert measure_span(stack, torch.randn(1, T, 4)).products == 5


def test_matches_a_plain_conv1d_chain():
    stack = ConvolutionStack(4, 3, layers=3, dilated=True, generator=torch.Generator().manual_seed(1)).eval()
    x = torch.randn(2, 20, 4)
    h = x.transpose(1, 2)
    for index, (conv, dilation) in enumerate(zip(stack.convolutions, (1, 2, 4))):
        h = F.conv1d(torch.tanh(h) if index else h, conv.weight, conv.bias, padding=dilation, dilation=dilation)
    assert torch.allclose(stack(x), h.transpose(1, 2), atol=1e-6)
    outputs = stack.forward_all(x[0])
    assert [tuple(o.shape) for o in outputs] == [(20, 4)] * 3
    assert torch.allclose(outputs[-1], stack(x)[0], atol=1e-6)


def test_seeded_construction_is_reproducible_and_leaves_the_global_rng():
    state = torch.random.get_rng_state()
    first = ConvolutionStack(4, 3, layers=2, generator=torch.Generator().manual_seed(3))
    second = ConvolutionStack(4, 3, layers=2, generator=torch.Generator().manual_seed(3))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(a, b) for a, b in zip(first.parameters(), second.parameters()))


# --- Bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kernel": 4}, "odd integer >= 3 for symmetric padding, received 4"),
    ({"kernel": 1}, "odd integer >= 3 for symmetric padding, received 1"),
    ({"kernel": 0}, "kernel must be an integer >= 1, received 0"),
    ({"layers": 0}, "layers must be an integer >= 1, received 0"),
    ({"d_model": -2}, "d_model must be an integer >= 1, received -2"),
])
def test_bad_construction(kwargs, message):
    arguments = {"d_model": 4, "kernel": 3, **kwargs}
    with pytest.raises(SeqlabError, match=message):
        ConvolutionStack(arguments.pop("d_model"), **arguments)


@pytest.mark.parametrize("x", [torch.randn(8), torch.randn(1, 8, 5), torch.randn(1, 1, 8, 4), "x"])
def test_bad_input_shape(x):
    with pytest.raises(SeqlabError, match=r"x must have shape \(T, 4\) or \(B, T, 4\)"):
        ConvolutionStack(4, 3)(x)


def test_layers_to_connect_refuses_bad_sizes():
    with pytest.raises(SeqlabError, match="T must be an integer >= 1, received 0"):
        layers_to_connect(0, 3, False)
    with pytest.raises(SeqlabError, match="received 6"):
        layers_to_connect(10, 6, True)


# --- Properties -----------------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(T=st.integers(2, 24), kernel=st.sampled_from([3, 5, 7]), dilated=st.booleans())
def test_the_connecting_stack_connects_every_pair_and_no_shallower_one_does(T, kernel, dilated):
    depth = layers_to_connect(T, kernel, dilated)
    assert reach(depth, kernel, dilated) >= T - 1
    assert depth == 1 or reach(depth - 1, kernel, dilated) < T - 1
    stack = ConvolutionStack.connecting(T, 1, kernel, dilated=dilated).eval()
    assert stack.depth == depth
    assert measure_paths(stack, torch.randn(1, T, 1), sources=(0,)).row(0)[T - 1] == depth


@settings(max_examples=10, deadline=None)
@given(T=st.integers(2, 30), kernel=st.sampled_from([3, 5]), dilated=st.booleans())
def test_depth_never_decreases_when_T_grows(T, kernel, dilated):
    assert layers_to_connect(T + 1, kernel, dilated) >= layers_to_connect(T, kernel, dilated)
