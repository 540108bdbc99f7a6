"""Mixing (seqlab.measure.mixing): dependency matrices of blocks and their patterns (L11, L4).

Blocks built from PyTorch's own modules are measured on float64 inputs; the expected patterns follow
from what each module reads, and a module that does mix (a convolution, a cumulative sum) must be seen
mixing, so a measurement that always answered "per-row" would fail here.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.measure.mixing import (
    ALL_TO_ALL, CAUSAL, CROSS, NONE, PARTIAL, PER_ROW, classify, dependency_matrix,
)

D = 8
T = 6


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(1, T, D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))


@pytest.fixture
def attention() -> torch.nn.MultiheadAttention:
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(D, 2, batch_first=True).double().eval()


def test_self_attention_is_all_to_all(x, attention):
    matrix = dependency_matrix(lambda x: attention(x, x, x, need_weights=False), {"x": x}, "x")
    assert matrix.shape == (T, T)
    assert matrix.pattern == ALL_TO_ALL and matrix.mixes
    assert all(value > 0.0 for row in matrix.strength for value in row)


def test_masked_self_attention_is_causal(x, attention):
    mask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    matrix = dependency_matrix(lambda x: attention(x, x, x, attn_mask=mask, need_weights=False), {"x": x}, "x")
    assert matrix.pattern == CAUSAL
    assert all(matrix.strength[j][i] == 0.0 for j in range(T) for i in range(j + 1, T))


def test_cross_attention_reads_the_other_sequence_and_only_its_own_query_row(x, attention):
    memory = torch.randn(1, 9, D, dtype=torch.float64)
    block = lambda query, memory: attention(query, memory, memory, need_weights=False)  # noqa: E731
    inputs = {"query": x, "memory": memory}
    from_memory = dependency_matrix(block, inputs, "memory", other_sequence=True)
    from_query = dependency_matrix(block, inputs, "query")
    assert from_memory.shape == (T, 9) and from_memory.pattern == CROSS and from_memory.mixes
    assert from_query.pattern == PER_ROW and not from_query.mixes


@pytest.mark.parametrize("make", [
    lambda: torch.nn.LayerNorm(D).double(),
    lambda: torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.ReLU(), torch.nn.Linear(4 * D, D)).double(),
    lambda: torch.nn.Softmax(dim=-1),
])
def test_row_wise_modules_are_per_row(x, make):
    module = make().eval()
    matrix = dependency_matrix(lambda x: module(x), {"x": x}, "x")
    assert matrix.pattern == PER_ROW and not matrix.mixes
    assert all(matrix.strength[j][j] > 0.0 for j in range(T))


def test_a_convolution_mixes_in_a_band(x):
    convolution = torch.nn.Conv1d(D, D, kernel_size=3, padding=1).double()
    matrix = dependency_matrix(lambda x: convolution(x.transpose(1, 2)).transpose(1, 2), {"x": x}, "x")
    assert matrix.pattern == PARTIAL and matrix.mixes
    assert [sum(row) for row in matrix.depends] == [2] + [3] * (T - 2) + [2]


def test_token_ids_are_measured_by_replacement():
    embedding = torch.nn.Embedding(20, D)
    ids = torch.tensor([[3, 7, 7, 19, 0]])
    per_row = dependency_matrix(lambda ids: embedding(ids), {"ids": ids}, "ids", vocabulary=20)
    assert per_row.method == "token-replacement" and per_row.pattern == PER_ROW
    running_sum = dependency_matrix(lambda ids: embedding(ids).cumsum(dim=1), {"ids": ids}, "ids", vocabulary=20)
    assert running_sum.pattern == CAUSAL


def test_an_input_that_is_not_read_gives_none(x):
    matrix = dependency_matrix(lambda x, y: y * 2.0, {"x": x, "y": x.clone()}, "x")
    assert matrix.pattern == NONE and not matrix.mixes
    assert matrix.strength == tuple((0.0,) * T for _ in range(T))


def test_probe_estimate_matches_the_exact_block_norm():
    """With many probes the estimate approaches ||dy_j/dx_i||_F computed by torch.autograd.functional."""
    torch.manual_seed(3)
    weight = torch.randn(3, 3, dtype=torch.float64)
    x = torch.randn(1, 4, 3, dtype=torch.float64)
    function = lambda x: (x @ weight).cumsum(dim=1).tanh()  # noqa: E731
    jacobian = torch.autograd.functional.jacobian(function, x)[0, :, :, 0]  # (T_out, d_out, T_in, d_in)
    exact = jacobian.square().sum(dim=(1, 3)).sqrt()
    estimate = torch.tensor(dependency_matrix(function, {"x": x}, "x", probes=4000).strength, dtype=torch.float64)
    assert torch.allclose(estimate, exact, rtol=0.08, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(st.booleans(), min_size=n, max_size=n),
                                                    min_size=n, max_size=n)))
def test_classify_is_consistent_with_the_definitions(matrix):
    depends = tuple(tuple(row) for row in matrix)
    pattern = classify(depends)
    n = len(depends)
    off_diagonal = any(depends[j][i] for j in range(n) for i in range(n) if i != j)
    if not any(any(row) for row in depends):
        assert pattern == NONE
    elif not off_diagonal:
        assert pattern == PER_ROW
    else:
        assert pattern in (ALL_TO_ALL, CAUSAL, PARTIAL)
        assert (pattern == ALL_TO_ALL) == all(all(row) for row in depends)


@pytest.mark.parametrize("call, message", [
    (lambda x: dependency_matrix(lambda x: x, {"x": x}, "y"), "input 'y' is not among"),
    (lambda x: dependency_matrix(lambda x: x, {"x": x.repeat(2, 1, 1)}, "x"), "batch 1"),
    (lambda x: dependency_matrix(lambda x: x, {"x": x}, "x", probes=0), "probes"),
    (lambda x: dependency_matrix(lambda i: i, {"i": torch.zeros(1, 3, dtype=torch.long)}, "i"), "vocabulary"),
    (lambda x: dependency_matrix(lambda x: 3.0, {"x": x}, "x"), "batch-first tensor"),
])
def test_bad_input_is_refused_with_one_line(x, call, message):
    with pytest.raises(SeqlabError, match=message) as caught:
        call(x)
    assert "\n" not in str(caught.value)
