"""Tests for seqlab.measure.reach: exact == full Jacobian, Hutchinson ~ exact, L3 decay, L4 flat."""

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.reach import Reach, auto_probes, measure_reach

F64 = torch.float64


def _rnn(d_in: int, d_h: int, seed: int, radius: float | None = None) -> torch.nn.RNN:
    """A float64 torch.nn.RNN in eval mode, W_hh rescaled to spectral radius ``radius``."""
    torch.manual_seed(seed)
    rnn = torch.nn.RNN(d_in, d_h).to(F64).eval()
    if radius is not None:
        with torch.no_grad():
            w = rnn.weight_hh_l0
            rho = torch.linalg.eigvals(w).abs().max().real
            w.mul_(radius / rho)
            assert torch.linalg.eigvals(w).abs().max().item() == pytest.approx(radius, rel=1e-9)
    return rnn


def _self_attention(d: int, seed: int, scale: float, dtype: torch.dtype = F64):
    """softmax(Q K^T / sqrt(d)) V with q = k = v = x @ W, no mask: (T, d) -> (T, d)."""
    gen = torch.Generator().manual_seed(seed)
    w = (scale * torch.randn(d, d, generator=gen)).to(dtype)  # (d, d)

    def attend(x: torch.Tensor) -> torch.Tensor:
        q = k = v = x @ w  # (T, d)
        a = torch.softmax(q @ k.T / math.sqrt(d), dim=-1)  # (T, T)
        return a @ v  # (T, d)

    return attend


def _full_jacobian_norms(layer, x: torch.Tensor, position: int) -> torch.Tensor:
    jac = torch.autograd.functional.jacobian(lambda z: layer(z)[0][position], x)  # (d_out, T, d_in)
    return jac.pow(2).sum(dim=(0, 2)).sqrt()  # (T,)


@pytest.mark.parametrize("position", [0, 3, -1])
def test_exact_equals_full_jacobian(position: int) -> None:
    rnn = _rnn(3, 4, seed=1)
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(2), dtype=F64)  # (T=6, d_in=3)
    r = measure_reach(rnn, x, position=position)
    expected = _full_jacobian_norms(rnn, x, position)
    torch.testing.assert_close(torch.tensor(r.norms, dtype=F64), expected, rtol=1e-10, atol=0)
    assert r.estimator == "exact" and r.backward == "batched"
    assert r.position == position % 6
    # causal recurrence: outputs never depend on later inputs
    assert all(n == 0.0 for n in r.norms[r.position + 1 :])
    assert r.zeros == 6 - 1 - r.position


def test_exact_equals_full_jacobian_attention() -> None:
    attend = _self_attention(5, seed=3, scale=0.5)
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(4), dtype=F64)
    r = measure_reach(attend, x, position=2)
    jac = torch.autograd.functional.jacobian(lambda z: attend(z)[2], x)  # (5, 7, 5)
    torch.testing.assert_close(
        torch.tensor(r.norms, dtype=F64), jac.pow(2).sum(dim=(0, 2)).sqrt(), rtol=1e-10, atol=0
    )
    assert r.zeros == 0  # every position reaches every other


def test_hutchinson_close_to_exact() -> None:
    rnn = _rnn(4, 6, seed=5)
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(6), dtype=F64)
    exact = measure_reach(rnn, x)
    est = measure_reach(rnn, x, probes=2000, seed=7)
    assert est.estimator == "hutchinson-2000"
    for e, h in zip(exact.norms, est.norms):
        assert h == pytest.approx(e, rel=0.10)
    # seeded: the same seed gives the same estimate, another seed a different one
    assert measure_reach(rnn, x, probes=2000, seed=7).norms == est.norms
    assert measure_reach(rnn, x, probes=2000, seed=8).norms != est.norms


def test_rnn_reach_decays_with_distance() -> None:
    # L3: spectral radius 0.5 -> each step back multiplies reach by at most ~0.5 (tanh shrinks more)
    T = 30
    rnn = _rnn(8, 8, seed=11, radius=0.5)
    x = torch.randn(T, 8, generator=torch.Generator().manual_seed(12), dtype=F64)
    r = measure_reach(rnn, x, position=T - 1)
    assert r.norms[0] > 0.0  # float64 keeps it: 0.5**29 ~ 1.9e-9, far above 2.2e-308
    assert r.norms[0] * 1e3 <= r.norms[T - 2]
    assert r.decay_per_step() < 0.6
    assert r.ratio_first_to_last is not None and r.ratio_first_to_last < 1e-3
    assert r.first == r.norms[0]


def test_attention_reach_does_not_decay() -> None:
    # L4: one weight alpha_Ti between any two positions, so reach is flat in distance
    T, d = 30, 8
    attend = _self_attention(d, seed=13, scale=0.1)  # small weights -> spread attention
    x = torch.randn(T, d, generator=torch.Generator().manual_seed(14), dtype=F64)
    r = measure_reach(attend, x)
    earlier = r.norms[: T - 1]
    assert min(earlier) > 0.0
    assert max(earlier) / min(earlier) <= 10.0
    assert 0.8 <= r.decay_per_step() <= 1.25


def test_fp32_underflows_to_zero_and_float64_does_not() -> None:
    # h_t = 0.01 h_{t-1} + x_t: reach from distance s is 0.01**s * sqrt(d); at s = 29 it is
    # ~1e-58, below fp32's smallest subnormal 2**-149 ~ 1.4e-45 but well inside float64.
    def scan(x: torch.Tensor) -> torch.Tensor:
        h, out = torch.zeros_like(x[0]), []
        for x_t in x:
            h = 0.01 * h + x_t
            out.append(h)
        return torch.stack(out)  # (T, d)

    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(15))
    r32 = measure_reach(scan, x, dtype=torch.float32)
    r64 = measure_reach(scan, x)
    assert r32.dtype == "float32" and r64.dtype == "float64"
    assert r32.tiny == torch.finfo(torch.float32).tiny == 2.0**-126
    assert r32.smallest_subnormal == 2.0**-149
    assert r64.tiny == torch.finfo(F64).tiny == 2.0**-1022
    assert r64.smallest_subnormal == 2.0**-1074
    assert r64.zeros == 0
    assert r64.norms[0] == pytest.approx(0.01**29 * math.sqrt(2), rel=1e-9)
    # 0.01**s underflows past 2**-149 from s = 23 on: positions 0..6 are exactly 0 in fp32
    assert r32.zeros >= 7 and r32.norms[0] == 0.0
    assert r32.zeros == sum(1 for n in r32.norms if n == 0.0)
    assert r32.subnormals == sum(1 for n in r32.norms if 0.0 < n < 2.0**-126)
    assert r32.decay_per_step() == pytest.approx(0.01, rel=1e-3)


def test_tuple_output_and_constant_output() -> None:
    x = torch.randn(4, 3, dtype=F64)
    r = measure_reach(lambda z: (2.0 * z, "extra"), x, position=1)
    assert r.norms == (0.0, 2.0 * math.sqrt(3), 0.0, 0.0)  # ||2 I_3||_F = 2 sqrt(3)
    r0 = measure_reach(lambda z: torch.ones(4, 2, dtype=F64), x)
    assert r0.norms == (0.0,) * 4 and r0.zeros == 4 and r0.ratio_first_to_last is None


def test_decay_per_step_needs_two_points() -> None:
    r = measure_reach(lambda z: 2.0 * z, torch.randn(4, 3, dtype=F64), position=0)
    with pytest.raises(SeqlabError, match="at least 2 nonzero"):
        r.decay_per_step()


def test_reach_is_frozen() -> None:
    r = Reach((1.0, 1.0), 1, "exact", "float64", 1e-308, 5e-324, 0, 0, "batched")
    with pytest.raises(AttributeError):
        r.position = 0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "x", "match"),
    [
        ({}, torch.randn(5), "2-dim"),
        ({}, torch.randn(2, 3, 4), "2-dim"),
        ({}, torch.randn(1, 3), "T >= 2"),
        ({"position": 4}, torch.randn(4, 3), "position"),
        ({"position": -5}, torch.randn(4, 3), "position"),
        ({"position": True}, torch.randn(4, 3), "position"),
        ({"probes": 0}, torch.randn(4, 3), "probes"),
        ({"dtype": torch.int64}, torch.randn(4, 3), "dtype"),
        ({"seed": 1.5}, torch.randn(4, 3), "seed"),
    ],
)
def test_bad_inputs(kwargs: dict, x: torch.Tensor, match: str) -> None:
    with pytest.raises(SeqlabError, match=match):
        measure_reach(lambda z: z, x, **kwargs)


def test_bad_layer_outputs() -> None:
    x = torch.randn(4, 3, dtype=F64)
    with pytest.raises(SeqlabError, match="shape"):
        measure_reach(lambda z: z.sum(0), x)
    with pytest.raises(SeqlabError, match="shape"):
        measure_reach(lambda z: z[:2], x)
    with pytest.raises(SeqlabError, match="cast the layer"):
        measure_reach(lambda z: z.float(), x)


def test_auto_probes() -> None:
    assert auto_probes(64, 10_000) is None  # d_out <= 64: exact
    assert auto_probes(512, 128) is None  # 512 * 128 = 65,536: still exact
    assert auto_probes(512, 129) == 16
    with pytest.raises(SeqlabError):
        auto_probes(0, 10)


class _DoubleNoVmap(torch.autograd.Function):
    """y = 2x whose backward calls .item(), which vmap cannot batch."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return 2.0 * x

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        _ = g.abs().max().item()
        return 2.0 * g


def test_loop_fallback_when_backward_cannot_be_batched() -> None:
    x = torch.randn(4, 3, dtype=F64)
    r = measure_reach(lambda z: _DoubleNoVmap.apply(z).cumsum(0), x)
    assert r.backward == "loop"
    # y_3 = 2 (x_0 + ... + x_3): every block is 2 I_3, norm 2 sqrt(3)
    assert r.norms == pytest.approx((2.0 * math.sqrt(3),) * 4, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_factor_per_step_agrees_with_the_reach_it_sits_beside(seed: int) -> None:
    """Property: near-end norm × factor^(distance) == the far-end norm, whatever lies between (issue 12, item 7)."""
    gen = torch.Generator().manual_seed(seed)
    T = int(torch.randint(2, 60, (1,), generator=gen))
    logs = torch.randn(T, generator=gen, dtype=F64).cumsum(0) * 5  # a wandering curve over many decades
    norms = tuple(float(v) for v in logs.exp())
    r = Reach(norms, T - 1, "exact", "float64", 2.2e-308, 5e-324, 0, 0, "batched")
    factor = r.factor_per_step()
    assert norms[T - 1] * factor ** (T - 1) == pytest.approx(norms[0], rel=1e-9)


def test_factor_per_step_is_none_without_two_ends() -> None:
    make = lambda norms, p: Reach(norms, p, "exact", "float64", 2.2e-308, 5e-324, 0, 0, "batched")  # noqa: E731
    assert make((0.0, 1.0), 1).factor_per_step() is None  # the far end underflowed
    assert make((1.0, 0.0), 1).factor_per_step() is None
    assert make((1.0, 2.0), 0).factor_per_step() is None  # no distance
    assert make((0.25, 0.5, 1.0), 2).factor_per_step() == pytest.approx(0.5)


def test_sensitivity_leaves_the_layer_alone_and_names_a_bad_weight() -> None:
    from seqlab.measure.sensitivity import measure_sensitivity

    rnn = _rnn(3, 4, seed=1)
    before = {name: p.clone() for name, p in rnn.named_parameters()}
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(2), dtype=F64)
    s = measure_sensitivity(rnn.float(), "weight_hh_l0", x, draws=3, probes=None)
    assert len(s.perturbed) == 3 and s.low <= s.reach <= s.high and s.relative == 1e-7
    assert all(torch.equal(before[name].float(), p) for name, p in rnn.named_parameters())
    with pytest.raises(SeqlabError, match="weight must be one of"):
        measure_sensitivity(rnn, "nope", x)
    with pytest.raises(SeqlabError, match="relative"):
        measure_sensitivity(rnn, "weight_hh_l0", x, relative=0.0)


# --- Reach from an initial state (issue 21) ---------------------------------------------------------------

def _reference(function, *inputs):
    """Frobenius norms of torch.autograd.functional.jacobian(function, inputs), float64: [output][input]."""
    jacobians = torch.autograd.functional.jacobian(function, inputs)
    return [[float(block.square().sum().sqrt()) for block in row] for row in jacobians]


def test_lstm_reach_from_h0_and_c0_equals_the_float64_jacobian():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(3, 4).to(F64).eval()
    gen = torch.Generator().manual_seed(1)
    x, h0, c0 = (torch.randn(*shape, generator=gen, dtype=F64) for shape in ((7, 3), (1, 4), (1, 4)))
    for position in (-1, 2):
        reach = measure_reach(lstm, x, position=position, initial_state=(h0, c0))
        state = reach.state
        assert state.names == ("h_0", "c_0") and state.shapes == ((1, 4), (1, 4)) and state.held == ()
        assert state.final_names == ("h_T", "c_T")

        def outputs(x, h0, c0):
            y, (h_n, c_n) = lstm(x, (h0, c0))
            return y[position], h_n, c_n

        reference = _reference(outputs, x, h0, c0)  # rows: y_p, h_T, c_T; columns: x, h_0, c_0
        assert state.output == pytest.approx(reference[0][1:], rel=1e-12)
        assert [list(row) for row in state.final] == [pytest.approx(row[1:], rel=1e-12) for row in reference[1:]]
        # the x norms from the same backward agree with the Jacobian's per-position blocks
        blocks = torch.autograd.functional.jacobian(lambda x: outputs(x, h0, c0)[0], x)  # (d_h, T, d_in)
        assert reach.norms == pytest.approx(blocks.square().sum(dim=(0, 2)).sqrt().tolist(), rel=1e-12)
    assert state.norm("c_T", "c_0") == pytest.approx(reference[2][2], rel=1e-12)  # ∂c_T/∂c_0 = Π diag(f_t)
    assert 0.0 < state.norm("c_T", "c_0")


def test_gru_reach_from_h0_equals_the_jacobian_and_y_T_is_h_T():
    torch.manual_seed(2)
    gru = torch.nn.GRU(3, 5).to(F64).eval()
    gen = torch.Generator().manual_seed(3)
    x, h0 = torch.randn(6, 3, generator=gen, dtype=F64), torch.randn(1, 5, generator=gen, dtype=F64)
    state = measure_reach(gru, x, initial_state=h0).state
    assert state.names == ("h_0",) and state.final_names == ("h_T",)
    reference = _reference(lambda x, h0: (gru(x, h0)[0][-1], gru(x, h0)[1]), x, h0)
    assert state.output[0] == pytest.approx(reference[0][1], rel=1e-12)
    assert state.final[0][0] == pytest.approx(reference[1][1], rel=1e-12)
    assert state.output[0] == pytest.approx(state.norm("h_T", "h_0"), rel=1e-12)  # one layer: y_T is h_T


def _orthogonal(d: int, seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=F64))
    return q  # (d, d), every eigenvalue of modulus 1


@pytest.mark.parametrize("radius", [0.5, 0.9, 1.2])
def test_elman_reach_from_h0_is_rho_to_the_T_at_rest(radius):
    """x = 0, no bias, h_0 = 0: every h_t = 0, tanh' = 1, so ∂h_T/∂h_0 = W_hh^T and ||ρQ||^T_F = ρ^T √d."""
    d, T = 6, 9
    rnn = torch.nn.RNN(2, d, bias=False).to(F64).eval()
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(radius * _orthogonal(d, 4))
    state = measure_reach(rnn, torch.zeros(T, 2, dtype=F64), initial_state=torch.zeros(1, d, dtype=F64)).state
    assert state.norm("h_T", "h_0") == pytest.approx(radius**T * math.sqrt(d), rel=1e-12)
    assert state.output[0] == pytest.approx(radius**T * math.sqrt(d), rel=1e-12)  # y_T is h_T


def test_elman_reach_from_h0_equals_the_product_of_step_jacobians_for_torch_and_seqlab():
    """∂h_T/∂h_0 = Π_t diag(1 − h_t²) W_hh, from the states of the same forward; nn.RNN and seqlab's step agree."""
    from seqlab.layers.decoding import ElmanDecoder
    from seqlab.layers.recurrent import ElmanRNN

    d, d_in, T, radius = 5, 3, 8, 0.9
    torch.manual_seed(5)
    rnn = torch.nn.RNN(d_in, d).to(F64).eval()
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(radius * _orthogonal(d, 6))
    gen = torch.Generator().manual_seed(7)
    x, h0 = torch.randn(T, d_in, generator=gen, dtype=F64), torch.randn(1, d, generator=gen, dtype=F64)
    with torch.no_grad():
        states = rnn(x, h0)[0]  # (T, d): h_1 … h_T
    product = torch.eye(d, dtype=F64)
    for h_t in states:  # ∂h_t/∂h_{t-1} = diag(1 − h_t²) W_hh
        product = torch.diag(1 - h_t**2) @ rnn.weight_hh_l0.detach() @ product
    expected = float(product.square().sum().sqrt())
    assert expected < radius**T * math.sqrt(d)  # tanh only shrinks (|1 − h²| ≤ 1, W orthogonal up to ρ)
    torch_state = measure_reach(rnn, x, initial_state=h0).state
    assert torch_state.norm("h_T", "h_0") == pytest.approx(expected, rel=1e-12)

    seqlab_rnn = ElmanRNN(d_in, d, dtype=F64)
    with torch.no_grad():  # the same Elman step: W_hh, W_xh, b_h = b_ih + b_hh
        seqlab_rnn.weight_hh.copy_(rnn.weight_hh_l0)
        seqlab_rnn.weight_xh.copy_(rnn.weight_ih_l0)
        seqlab_rnn.bias_h.copy_(rnn.bias_ih_l0 + rnn.bias_hh_l0)
    seqlab_state = measure_reach(ElmanDecoder(seqlab_rnn), x, initial_state=(h0,)).state
    assert seqlab_state.names == ("state[0]",) and seqlab_state.final_names == ("state_T[0]",)
    assert seqlab_state.norm("state_T[0]", "state[0]") == pytest.approx(expected, rel=1e-12)
    assert seqlab_state.output[0] == pytest.approx(torch_state.output[0], rel=1e-12)


def test_a_diagonal_recurrence_from_its_initial_state_is_a_to_the_T():
    """h_t = a ⊙ h_{t-1} + b_t: ∂h_T/∂h_0 = diag(a)^T, so ||·||_F = sqrt(Σ a_k^(2T)), run by seqlab's step."""
    from seqlab.layers.linear_recurrence import DiagonalRecurrence

    T = 12
    layer = DiagonalRecurrence(4, 6, generator=torch.Generator().manual_seed(0), dtype=F64).eval()
    x = torch.randn(T, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    state = measure_reach(layer, x, initial_state=layer.initial_state(1)).state
    a = layer.decay().detach()  # (d_state,)
    assert state.final[0][0] == pytest.approx(float((a ** (2 * T)).sum().sqrt()), rel=1e-12)


def test_a_mask_in_the_state_is_held_fixed_and_named():
    from seqlab.layers.sliding_window import SlidingWindowAttention

    layer = SlidingWindowAttention(4, 3, generator=torch.Generator().manual_seed(0), dtype=F64).eval()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    state = measure_reach(layer, x, initial_state=layer.initial_state(1)).state
    assert state.names == ("state[0]", "state[1]") and state.held == ("state[2]",)  # keys, values; the bool mask
    assert state.output == (0.0, 0.0)  # no slot is real yet: the initial keys and values are never read
    assert state.final_names == ("state_T[0]", "state_T[1]")


@pytest.mark.parametrize("call, message", [
    (lambda rnn, x: measure_reach(rnn, x, initial_state=torch.zeros(1, 4, dtype=F64), batched=True),
     "cannot be combined with batched"),
    (lambda rnn, x: measure_reach(rnn, x, initial_state="h0"), "initial_state must be a tensor or a tuple"),
    (lambda rnn, x: measure_reach(rnn, x, initial_state=(torch.zeros(1, 4, dtype=torch.long),)), "no floating"),
    (lambda rnn, x: measure_reach(lambda x, h: x @ torch.ones(3, 4, dtype=F64), x,
                                  initial_state=torch.zeros(1, 4, dtype=F64)), "must return \\(y, h_n\\)"),
])
def test_initial_state_refusals(call, message):
    rnn = torch.nn.RNN(3, 4).to(F64)
    with pytest.raises(SeqlabError, match=message) as caught:
        call(rnn, torch.randn(5, 3, dtype=F64))
    assert "\n" not in str(caught.value)
