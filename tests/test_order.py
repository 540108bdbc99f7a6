"""Tests for seqlab.measure.order (L10): attention is blind to order, a recurrence is not."""

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.order import measure_key_value_order, measure_order, tolerance


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V: (T_q, d_k), (T_k, d_k), (T_k, d_v) -> (T_q, d_v)."""
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1) @ v


def _self_attention(d: int, dtype: torch.dtype):
    w = torch.randn(d, d, generator=torch.Generator().manual_seed(0)).to(dtype)  # (d, d)

    def layer(x: torch.Tensor) -> torch.Tensor:
        h = x @ w  # q = k = v: (T, d)
        return _attend(h, h, h)

    return layer


def _x(T: int, d: int, dtype: torch.dtype = torch.float64, seed: int = 1) -> torch.Tensor:
    return torch.randn(T, d, generator=torch.Generator().manual_seed(seed)).to(dtype)


def test_rnn_is_not_equivariant() -> None:
    torch.manual_seed(2)
    rnn = torch.nn.RNN(4, 5).eval()
    r = measure_order(rnn, _x(10, 4, torch.float32))
    assert r.kind == "rows" and r.dtype == "float32"
    assert not r.equivariant
    assert r.max_abs_change > 1e3 * r.tolerance  # not a rounding effect
    assert 0.0 < r.max_abs_output <= 1.0  # tanh outputs


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [2, 7, 64])
def test_self_attention_is_equivariant(dtype: torch.dtype, T: int) -> None:
    r = measure_order(_self_attention(8, dtype), _x(T, 8, dtype), seed=3)
    assert r.equivariant and r.holds
    assert r.max_abs_change <= r.tolerance
    assert r.tolerance == tolerance(r.max_abs_output, T, dtype)
    assert r.dtype == str(dtype).removeprefix("torch.")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_attention_is_key_value_invariant(dtype: torch.dtype) -> None:
    q, k, v = _x(5, 8, dtype, seed=4), _x(9, 8, dtype, seed=5), _x(9, 3, dtype, seed=6)
    r = measure_key_value_order(_attend, q, k, v, seed=7)
    assert r.kind == "key-value pairs"
    assert r.invariant
    assert len(r.permutation) == 9


def test_keys_permuted_without_values_change_outputs() -> None:
    # pairs must move together: an attend that scrambles the pairing is not invariant
    q, k, v = _x(5, 8, seed=4), _x(9, 8, seed=5), _x(9, 3, seed=6)
    r = measure_key_value_order(lambda q, k, v: _attend(q, k.flip(0), v), q, k, v)
    assert not r.invariant


def test_position_dependent_layer_is_not_equivariant() -> None:
    x = _x(6, 3)
    r = measure_order(lambda z: z + torch.arange(z.shape[0], dtype=z.dtype)[:, None], x)
    assert not r.equivariant
    assert r.max_abs_change >= 1.0  # x[pi] + arange vs x[pi] + pi: integer gaps


def test_permutation_is_seeded_and_never_identity() -> None:
    layer = lambda z: 2.0 * z  # noqa: E731
    for seed in range(20):
        r = measure_order(layer, _x(2, 3), seed=seed)
        assert r.permutation == (1, 0)  # the only non-identity permutation of 2 rows
        assert r.equivariant and r.max_abs_change == 0.0
    a, b = measure_order(layer, _x(8, 3), seed=5), measure_order(layer, _x(8, 3), seed=5)
    assert a.permutation == b.permutation
    assert sorted(a.permutation) == list(range(8)) and a.permutation != tuple(range(8))
    assert a.seed == 5


def test_wrong_kind_verdict_raises() -> None:
    r = measure_order(lambda z: z, _x(3, 2))
    with pytest.raises(SeqlabError, match="invariant"):
        r.invariant
    q = k = v = _x(3, 2)
    kv = measure_key_value_order(_attend, q, k, v)
    with pytest.raises(SeqlabError, match="equivariant"):
        kv.equivariant


def test_tolerance_formula() -> None:
    # 64 * eps * max(1, scale) * sqrt(n)
    assert tolerance(0.5, 16, torch.float32) == 64 * 2.0**-23 * 1.0 * 4
    assert tolerance(10.0, 4, torch.float64) == 64 * 2.0**-52 * 10.0 * 2


def test_bad_inputs() -> None:
    with pytest.raises(SeqlabError, match="T >= 2"):
        measure_order(lambda z: z, _x(1, 3))
    with pytest.raises(SeqlabError, match="2-dim"):
        measure_order(lambda z: z, torch.randn(4))
    with pytest.raises(SeqlabError, match="seed"):
        measure_order(lambda z: z, _x(3, 3), seed=None)  # type: ignore[arg-type]
    with pytest.raises(SeqlabError, match="rows"):
        measure_order(lambda z: z[:1], _x(3, 3))
    with pytest.raises(SeqlabError, match="non-finite"):
        measure_order(lambda z: z / 0.0, _x(3, 3))
    with pytest.raises(SeqlabError, match="same number of rows"):
        measure_key_value_order(_attend, _x(2, 3), _x(4, 3), _x(5, 3))
    with pytest.raises(SeqlabError, match="T_k >= 2"):
        measure_key_value_order(_attend, _x(2, 3), _x(1, 3), _x(1, 3))
