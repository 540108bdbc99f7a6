"""ElmanRNN against torch.nn.RNN, and the spectral-radius tools (L1, L3)."""

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.recurrent import ElmanRNN, spectral_radius, with_spectral_radius

SIZES = [(1, 1, 1), (4, 3, 5), (3, 7, 6), (16, 8, 12)]  # (d_model, d_h, T), d_h != d_model mostly


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(("d_model", "d_h", "T"), SIZES)
@pytest.mark.parametrize("batched", [False, True])
def test_from_torch_matches_nn_rnn(d_model, d_h, T, batched):
    torch.manual_seed(d_model * 100 + d_h)
    reference = torch.nn.RNN(d_model, d_h, nonlinearity="tanh", batch_first=True,
                             dtype=torch.float64)
    ours = ElmanRNN.from_torch(reference)
    x = torch.randn((2, T, d_model) if batched else (T, d_model), dtype=torch.float64)
    expected, _ = reference(x)  # (B, T, d_h) or (T, d_h)
    got = ours(x)
    assert got.shape == expected.shape == ((2, T, d_h) if batched else (T, d_h))
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    # torch's two biases become one sum
    torch.testing.assert_close(ours.bias_h, reference.bias_ih_l0 + reference.bias_hh_l0)


@pytest.mark.parametrize(("d_model", "d_h", "T"), SIZES)
@pytest.mark.parametrize("bias", [True, False])
def test_to_torch_matches_elman(d_model, d_h, T, bias):
    ours = ElmanRNN(d_model, d_h, bias=bias, generator=_gen(1), dtype=torch.float64)
    x = torch.randn(3, T, d_model, dtype=torch.float64, generator=_gen(2))
    expected = ours(x)  # (B, T, d_h)
    batch_first, _ = ours.to_torch()(x)
    torch.testing.assert_close(batch_first, expected, rtol=1e-12, atol=1e-12)
    seq_first, _ = ours.to_torch(batch_first=False)(x.transpose(0, 1))  # (T, B, d_h)
    torch.testing.assert_close(seq_first.transpose(0, 1), expected, rtol=1e-12, atol=1e-12)
    unbatched, _ = ours.to_torch()(x[0])  # (T, d_h)
    torch.testing.assert_close(unbatched, ours(x[0]), rtol=1e-12, atol=1e-12)


def test_round_trip_keeps_weights_and_bias_flag():
    ours = ElmanRNN(5, 3, bias=False, generator=_gen(3))
    back = ElmanRNN.from_torch(ours.to_torch())
    assert back.bias_h is None
    assert torch.equal(back.weight_hh, ours.weight_hh)
    assert torch.equal(back.weight_xh, ours.weight_xh)


def test_float32_agrees_with_nn_rnn():
    ours = ElmanRNN(6, 4, generator=_gen(4))
    x = torch.randn(2, 9, 6, generator=_gen(5))
    out, _ = ours.to_torch()(x)
    torch.testing.assert_close(ours(x), out, rtol=1e-5, atol=1e-6)


def test_generator_makes_construction_reproducible_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a = ElmanRNN(4, 3, generator=_gen(7))
    b = ElmanRNN(4, 3, generator=_gen(7))
    a.to_torch()
    ElmanRNN.from_torch(a.to_torch())
    assert torch.equal(torch.random.get_rng_state(), state)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    bound = 1 / math.sqrt(3)  # torch.nn.RNN's init: U(-1/sqrt(d_h), 1/sqrt(d_h))
    assert all(float(p.detach().abs().max()) <= bound for p in a.parameters())
    assert a.weight_xh.shape == (3, 4) and a.weight_hh.shape == (3, 3) and a.bias_h.shape == (3,)


def test_first_state_is_tanh_of_input_term_since_h0_is_zero():
    rnn = ElmanRNN(2, 2, generator=_gen(8), dtype=torch.float64)
    x = torch.tensor([[1.0, -2.0], [0.5, 0.5]], dtype=torch.float64)
    h = rnn(x)
    h1 = torch.tanh(rnn.weight_xh @ x[0] + rnn.bias_h)  # h_0 = 0, so W_hh contributes nothing
    h2 = torch.tanh(rnn.weight_hh @ h1 + rnn.weight_xh @ x[1] + rnn.bias_h)
    torch.testing.assert_close(h, torch.stack([h1, h2]))


@pytest.mark.parametrize("bad", [
    torch.zeros(4),  # rank 1
    torch.zeros(1, 2, 3, 4),  # rank 4
    torch.zeros(5, 3),  # width 3, expected 4
    torch.zeros(2, 5, 7),  # width 7
    torch.zeros(0, 4),  # T = 0
    torch.zeros(5, 4, dtype=torch.float64),  # dtype differs from the weights
    [[0.0] * 4],  # not a tensor
])
def test_bad_input_raises_with_shapes(bad):
    rnn = ElmanRNN(4, 2, generator=_gen())
    with pytest.raises(SeqlabError, match="received"):
        rnn(bad)


def test_bad_shape_message_names_both_shapes():
    with pytest.raises(SeqlabError, match=r"\(T, 4\) or \(B, T, 4\).*\(5, 3\)"):
        ElmanRNN(4, 2, generator=_gen())(torch.zeros(5, 3))


@pytest.mark.parametrize(("d_model", "d_h"), [(0, 3), (3, 0), (-1, 2), (2.5, 2), (True, 2)])
def test_bad_sizes_raise(d_model, d_h):
    with pytest.raises(SeqlabError):
        ElmanRNN(d_model, d_h)


@pytest.mark.parametrize("make", [
    lambda: torch.nn.RNN(3, 2, num_layers=2),
    lambda: torch.nn.RNN(3, 2, nonlinearity="relu"),
    lambda: torch.nn.RNN(3, 2, bidirectional=True),
    lambda: torch.nn.LSTM(3, 2),
])
def test_from_torch_refuses_other_rnns(make):
    with pytest.raises(SeqlabError):
        ElmanRNN.from_torch(make())


def test_spectral_radius_of_known_matrices():
    rotation = torch.tensor([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +-i
    assert spectral_radius(rotation) == pytest.approx(1.0, rel=1e-12)
    triangular = torch.tensor([[0.5, 100.0], [0.0, -0.25]])  # eigenvalues on the diagonal
    assert spectral_radius(triangular) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("radius", [0.5, 0.9, 1.0, 1.1, 3.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_with_spectral_radius_hits_the_target(radius, dtype):
    w = torch.randn(8, 8, dtype=dtype, generator=_gen(9))
    scaled = with_spectral_radius(w, radius)
    assert scaled.dtype == dtype and scaled.shape == (8, 8)
    assert spectral_radius(scaled) == pytest.approx(radius, rel=1e-6)


def test_set_spectral_radius_is_in_place_and_returns_self():
    rnn = ElmanRNN(3, 6, generator=_gen(10), dtype=torch.float64)
    before = rnn.weight_hh
    assert rnn.set_spectral_radius(0.7) is rnn
    assert rnn.weight_hh is before and rnn.weight_hh.requires_grad
    assert spectral_radius(rnn.weight_hh) == pytest.approx(0.7, rel=1e-6)


def test_radius_not_determinant_decides_growth():
    """L3: det < 1 yet the powers explode; det > 0 tiny and radius < 1, powers vanish."""
    grows = torch.diag(torch.tensor([2.0, 0.01], dtype=torch.float64))  # det 0.02, radius 2
    assert float(torch.linalg.det(grows)) < 1 < spectral_radius(grows)
    assert float(torch.linalg.matrix_norm(torch.linalg.matrix_power(grows, 30))) > 1e8  # 2**30
    shrinks = with_spectral_radius(torch.randn(6, 6, dtype=torch.float64, generator=_gen(11)), 0.9)
    assert float(torch.linalg.matrix_norm(torch.linalg.matrix_power(shrinks, 400))) < 1e-6


@pytest.mark.parametrize("radius", [0, 0.0, -1.0, float("nan"), float("inf"), True, "1"])
def test_with_spectral_radius_refuses_bad_radius(radius):
    with pytest.raises(SeqlabError, match="radius"):
        with_spectral_radius(torch.eye(3), radius)


@pytest.mark.parametrize("weight", [
    torch.zeros(3, 3),
    torch.tensor([[0.0, 1.0], [0.0, 0.0]]),  # nilpotent: every eigenvalue is 0
])
def test_with_spectral_radius_refuses_zero_radius(weight):
    with pytest.raises(SeqlabError, match="spectral radius is 0"):
        with_spectral_radius(weight, 1.0)


@pytest.mark.parametrize("weight", [torch.zeros(2, 3), torch.zeros(4),
                                    torch.eye(2, dtype=torch.int64)])
def test_spectral_radius_refuses_non_square_or_non_float(weight):
    with pytest.raises(SeqlabError):
        spectral_radius(weight)
