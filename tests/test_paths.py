"""Measured path lengths (seqlab.measure.paths): exact matrices at small T for each kind of layer (L3, L4)."""

import functools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers import mixers
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.dependence import judge
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


# --- folded from tests/test_paths_zeros.py: Issue 35, item 1: an exact zero cuts a product whatever made it (softmax,

D = 4


def _weights(seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(D, D, generator=g, dtype=torch.float64) / 2 for _ in range(3))


WQ, WK, WV = _weights()


CAUSAL = torch.ones(T, T, dtype=torch.bool).tril()


def _scores(x: torch.Tensor) -> torch.Tensor:
    return (x @ WQ.to(x.dtype)) @ (x @ WK.to(x.dtype)).transpose(-2, -1) / 2  # (T, T)


def _values(x: torch.Tensor) -> torch.Tensor:
    return x @ WV.to(x.dtype)


def fill_exp_divide(x):
    """masked_fill(-inf), then exp, then divide by the sum."""
    e = _scores(x).masked_fill(~CAUSAL, float("-inf")).exp()
    return e / e.sum(-1, keepdim=True) @ _values(x)


def exp_times_mask(x):
    """exp of the shifted scores, times a float mask (the shift by the row's own open maximum)."""
    s = _scores(x).masked_fill(~CAUSAL, -1e4)
    e = (s - s.amax(-1, keepdim=True)).exp() * CAUSAL.to(x.dtype)
    return e / e.sum(-1, keepdim=True) @ _values(x)


def exp_then_fill_zero(x):
    """exp, then masked_fill(0), then divide by the sum."""
    e = _scores(x).exp().masked_fill(~CAUSAL, 0.0)
    return e / e.sum(-1, keepdim=True) @ _values(x)


def where_exp_zero(x):
    """where(mask, exp, 0), then divide (in place) by the sum."""
    e = torch.where(CAUSAL, _scores(x).exp(), 0.0)
    e /= e.sum(-1, keepdim=True)
    return e @ _values(x)


def exp2_reciprocal(x):
    """Base-2 exponent of a causally filled score, normalised by a reciprocal multiplied in (flash-style code)."""
    e = torch.exp2(_scores(x).masked_fill(~CAUSAL, float("-inf")))
    return (e * e.sum(-1, keepdim=True).reciprocal()) @ _values(x)


HAND_WRITTEN = [fill_exp_divide, exp_times_mask, exp_then_fill_zero, where_exp_zero, exp2_reciprocal]


def sdpa_causal(x):
    """The same attention through PyTorch's own kernel: the second route of the path lengths."""
    return F.scaled_dot_product_attention((x @ WQ.to(x.dtype))[None], (x @ WK.to(x.dtype))[None],
                                          _values(x)[None], is_causal=True, scale=0.5)[0]


def _jacobian_depends(layer, x: torch.Tensor) -> tuple[tuple[bool, ...], ...]:
    """depends[j][i] from the exact float64 Jacobian ((..., T, d) -> (..., T_out, d_out)), judged by seqlab's rule."""
    J = torch.autograd.functional.jacobian(layer, x.double())
    T_out, T_in = J.shape[-4], J.shape[-2]
    blocks = J.movedim(-4, 0).movedim(-2, 1).reshape(T_out, T_in, -1).square().sum(-1).sqrt()
    return judge(blocks.tolist(), torch.float64).depends


def _path_depends(matrix) -> tuple[tuple[bool, ...], ...]:
    T_out = len(matrix.products[0])
    return tuple(tuple(row[j] is not None for row in matrix.products) for j in range(T_out))


def _x(seed: int = 1, dtype=torch.float32, shape=(T, D)) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("layer", HAND_WRITTEN, ids=lambda f: f.__name__)
def test_a_hand_written_masked_softmax_is_causal_as_its_jacobian(layer):
    x = _x()
    matrix = measure_paths(layer, x)
    causal = tuple(tuple(i <= j for i in range(T)) for j in range(T))
    assert _path_depends(matrix) == causal
    assert _jacobian_depends(layer, x) == causal
    assert matrix.exact, matrix.bound_reason


@pytest.mark.parametrize("layer", [fill_exp_divide, exp_then_fill_zero, where_exp_zero], ids=lambda f: f.__name__)
def test_a_hand_written_softmax_has_the_path_lengths_of_sdpa(layer):
    x = _x(2)
    hand, kernel = measure_paths(layer, x), measure_paths(sdpa_causal, x)
    # x_i -> x_i W_v (1 product) -> weights @ values (2 products) for every i <= j; nothing from the future
    assert hand.products == kernel.products == tuple(tuple(2 if i <= j else None for j in range(T))
                                                     for i in range(T))


def test_one_open_key_in_the_first_row_is_named_by_the_check():
    """Row 0 of a causal softmax written by hand has one open key: e_00 / e_00 = 1 whatever q_0 is, so y_0 does not
    move with x at all (weights and values from different inputs: the query path is the only path). No local rule
    sees that cancellation (F.softmax's rule does, by the row's count of open weights); the trace keeps the
    structural path, the perturbation check finds its derivative exactly 0 and names the pair: a bound, not a
    measurement. The future is cut in every row all the same."""
    values = _x(3)

    def layer(x):
        e = _scores(x).masked_fill(~CAUSAL, float("-inf")).exp()
        return e / e.sum(-1, keepdim=True) @ values.to(x.dtype)

    x = _x(4)
    matrix = measure_paths(layer, x)
    assert [row[0] for row in matrix.products] == [3] + [None] * (T - 1)  # structural: q_0 k_0, exp, divide... @ v
    assert matrix.products[0][1:] == (3,) * (T - 1)
    jacobian = _jacobian_depends(layer, x)
    assert jacobian[0] == (False,) * T and jacobian[1:] == _path_depends(matrix)[1:]
    assert not matrix.exact and matrix.check.unmoved == ((0, 0),) and matrix.check.missed == ()
    assert "source 0 -> output 0" in matrix.bound_reason
    with_softmax = measure_paths(lambda x: _scores(x).masked_fill(~CAUSAL, float("-inf")).softmax(-1)
                                 @ values.to(x.dtype), x)
    assert [row[0] for row in with_softmax.products] == [None] * T and with_softmax.exact


def test_a_zero_made_by_a_product_with_a_zero_cuts_too():
    """(exp(s) * mask) * 3, then @ v: the zeros of a product of a mask, moved once more, cut the next product."""
    def layer(x):
        e = (_scores(x).exp() * CAUSAL.to(x.dtype)) * 3.0
        return e.transpose(0, 1).contiguous().transpose(0, 1) @ _values(x)

    x = _x(5)
    assert _path_depends(measure_paths(layer, x)) == _jacobian_depends(layer, x) == \
        tuple(tuple(i <= j for i in range(T)) for j in range(T))


R = torch.randn(D, 2, generator=torch.Generator().manual_seed(7), dtype=torch.float64)


def bucketed_attention(x):
    """LSH-style: hash each position to a bucket (argmax of a random rotation: integers, no derivative), sort the
    positions by bucket, attend inside equal buckets (where(same, s, -1e9), exp(s - logsumexp)), unsort by gather."""
    buckets = (x @ R.to(x.dtype)).argmax(-1)  # (T,) int64
    order = torch.sort(buckets * T + torch.arange(T), stable=True).indices  # (T,)
    undo = torch.argsort(order)
    xs = x.gather(0, order[:, None].expand(T, D))  # sorted positions
    same = buckets[order][:, None] == buckets[order][None, :]  # (T, T) bool
    s = torch.where(same, _scores(xs), -1e9)
    weights = torch.exp(s - torch.logsumexp(s, -1, keepdim=True))
    out = weights @ _values(xs)
    return out.gather(0, undo[:, None].expand(T, D))


def bucket_pattern(x) -> tuple[tuple[bool, ...], ...]:
    buckets = (x.double() @ R).argmax(-1).tolist()
    return tuple(tuple(buckets[i] == buckets[j] for i in range(T)) for j in range(T))


@pytest.mark.parametrize("seed", [1, 6])
def test_sorted_bucketed_attention_reaches_its_bucket_only(seed):
    x = _x(seed)
    pattern = bucket_pattern(x)
    assert any(not v for row in pattern for v in row)  # the input makes two buckets at least
    matrix = measure_paths(bucketed_attention, x)
    assert _path_depends(matrix) == pattern == _jacobian_depends(bucketed_attention, x)
    assert matrix.exact, matrix.bound_reason


def _reformer(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    config = transformers.ReformerConfig(
        hidden_size=16, num_attention_heads=2, attention_head_size=8, attn_layers=["lsh"], num_buckets=2,
        lsh_attn_chunk_length=4, num_hashes=1, axial_pos_embds=False, max_position_embeddings=16, feed_forward_size=16,
        is_decoder=True, vocab_size=10, hidden_dropout_prob=0.0, lsh_attention_probs_dropout_prob=0.0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.ReformerModel(config).eval()
    return model


def _finite_difference_depends(layer, x: torch.Tensor) -> tuple[tuple[bool, ...], ...]:
    """Reformer's Function has no double backward in eval: depends[j][i] by float64 finite differences per position
    (a random direction on x_i; above 1e-9 of the largest change)."""
    base = layer(x)
    g = torch.Generator().manual_seed(0)
    changes = []
    for i in range(x.shape[-2]):
        moved = x.clone()
        moved[..., i, :] += 1e-6 * torch.randn(moved[..., i, :].shape, generator=g, dtype=x.dtype)
        changes.append((layer(moved) - base).abs().movedim(-2, 0).reshape(x.shape[-2], -1).amax(-1))
    change = torch.stack(changes)  # (T_in, T_out)
    return tuple(tuple(bool(change[i, j] > 1e-9 * change.max()) for i in range(x.shape[-2]))
                 for j in range(x.shape[-2]))


def test_reformer_lsh_attention_is_causal_as_its_finite_differences():
    model = _reformer()
    x = _x(1, shape=(1, 8, 16))

    def layer(e):
        return model(inputs_embeds=e).last_hidden_state

    matrix = measure_paths(layer, x)
    assert matrix.products[-1][0] is None  # was 3 products from position T to position 1
    model.double()
    try:
        reference = _finite_difference_depends(layer, x.double())
    finally:
        model.float()
    assert _path_depends(matrix) == reference
    assert matrix.exact, matrix.bound_reason


def test_integer_and_boolean_results_carry_no_dependence():
    """A data-dependent mask (x > 0) and a rounded gate are piecewise constant: they select, they do not carry."""
    def layer(x):
        gate = torch.round(x.sum(-1, keepdim=True).sigmoid())  # (T, 1): 0. or 1., derivative 0
        open_ = x.sum(-1, keepdim=True) > 0  # (T, 1) bool
        mixed = x.cumsum(0)
        return torch.where(open_, x, 2 * x) * gate + mixed.masked_fill(~open_, 0.0)

    x = _x(8)
    matrix = measure_paths(layer, x)
    assert _path_depends(matrix) == _jacobian_depends(layer, x)
    assert matrix.exact, matrix.bound_reason


def _vector_products():
    """One query against T keys written with every vector product: mv, dot, addmv, addr, addbmm."""
    mask = CAUSAL[2].to(torch.float64)  # query 2 reads keys 0..2

    def weights(x):
        return torch.exp(x @ x[2]) * mask.to(x.dtype)  # (T,): exactly 0 on keys 3..T-1

    return {
        "mv": lambda x: (x.T @ weights(x))[None, :],  # (d, T) @ (T,): aten.mv
        "dot": lambda x: torch.stack([torch.dot(weights(x), x[:, k]) for k in range(D)])[None, :],
        "addmv": lambda x: torch.addmv(torch.zeros(D, dtype=x.dtype), x.T, weights(x))[None, :],
        "addr": lambda x: torch.addr(torch.zeros(T, D, dtype=x.dtype), weights(x), x[2]).sum(0, keepdim=True),
        "addbmm": lambda x: torch.addbmm(torch.zeros(1, D, dtype=x.dtype), weights(x)[None, None, :], x[None]),
    }


@pytest.mark.parametrize("name", sorted(_vector_products()))
def test_every_vector_product_cuts_at_a_zero_weight(name):
    layer = _vector_products()[name]
    x = _x(9)
    matrix = measure_paths(layer, x)
    assert _path_depends(matrix) == _jacobian_depends(layer, x) == ((True, True, True, False, False, False),)
    assert matrix.exact, matrix.bound_reason


def _zeroed_in_place():
    """A product's factor made without zeros (so proven zero-free and never read), then zeroed in place."""
    def fill_slice(x):
        a = x @ x.T  # (T, T): no exact 0
        a[:, 4:] = 0.0  # keys 4.. written 0 through a view
        return a @ _values(x)

    def masked_fill_in_place(x):
        a = x @ x.T
        a.masked_fill_(~CAUSAL, 0.0)
        return a @ _values(x)

    def multiplied_in_place(x):
        a = x @ x.T + 1.0
        a.mul_(CAUSAL.to(x.dtype))
        return a @ _values(x)

    def copied_into(x):
        a = torch.zeros(T, T, dtype=x.dtype)
        a[:, :3] = x @ x[:3].T  # keys 0..2 written, the rest stays 0
        return a @ _values(x)

    return {f.__name__: f for f in (fill_slice, masked_fill_in_place, multiplied_in_place, copied_into)}


@pytest.mark.parametrize("name", sorted(_zeroed_in_place()))
def test_a_zero_written_in_place_into_a_proven_factor_still_cuts(name):
    layer = _zeroed_in_place()[name]
    x = _x(10)
    matrix = measure_paths(layer, x)
    assert _path_depends(matrix) == _jacobian_depends(layer, x)
    assert matrix.exact, matrix.bound_reason


# --- folded from tests/test_paths_batching.py: Issue 35, item 2: every source's distances are those it has traced alo

#: The shipped layers' width here (the zero-cut section above uses D = 4).
D_SHIPPED = 8


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _shipped() -> dict[str, tuple[object, torch.Tensor]]:
    x = torch.randn(1, T, D_SHIPPED, generator=torch.Generator().manual_seed(1))
    cases = {
        "elman": (ElmanRNN(D_SHIPPED, D_SHIPPED, generator=_g()).eval(), x),
        "self-attention": (SelfAttention(D_SHIPPED, generator=_g()).eval(), x),
        "causal self-attention": (SelfAttention(D_SHIPPED, causal=True, generator=_g()).eval(), x),
    }
    for name, (mixer, row) in mixers.mixer_rows().items():
        if mixer.available():
            cases[f"mixer {name}"] = (mixer.build(D_SHIPPED, window=3, chunk=4, generator=_g(), **row.options), x)
    small = torch.randn(T, 4, generator=torch.Generator().manual_seed(2))
    for layer in HAND_WRITTEN:
        cases[f"hand-written {layer.__name__}"] = (layer, small)
    cases["bucketed attention"] = (bucketed_attention, small)
    return cases


SHIPPED = _shipped()


#: Groupings of the T sources into passes (each a tuple of passes), beside "all in one pass" and "one per pass".
GROUPINGS = {
    "the default pair then the rest": ((0, T - 1), tuple(range(1, T - 1))),
    "reversed": (tuple(reversed(range(T))),),
    "odd and even": (tuple(range(1, T, 2)), tuple(range(0, T, 2))),
}


def _alone(layer, x, positions: bool = False) -> dict[int, tuple]:
    return {s: _rows(measure_paths(layer, x, sources=(s,), check=False, positions=positions))[s] for s in range(T)}


def _rows(matrix) -> dict[int, tuple]:
    return {s: (p, o) for s, p, o in zip(matrix.sources, matrix.products, matrix.ops, strict=True)}


def _assert_every_batching_is_alone(layer, x) -> None:
    alone = _alone(layer, x)
    assert _alone(layer, x, positions=True) == alone
    for batch_bytes in (1, 2_000, 2**30):  # one source per pass after the first, a few, all at once
        for positions in (False, True):
            together = _rows(measure_paths(layer, x, batch_bytes=batch_bytes, positions=positions, check=False))
            assert together == alone, (batch_bytes, positions)
    for name, passes in GROUPINGS.items():
        got = {}
        for group in passes:
            got.update(_rows(measure_paths(layer, x, sources=group, check=False)))
        assert got == alone, name


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_source_alone_equals_every_batching(name):
    layer, x = SHIPPED[name]
    _assert_every_batching_is_alone(layer, x)


def test_the_issue_case_source_alone_is_causal_with_source_zero_beside_it():
    """The issue's case: the last source of a hand-written masked softmax reaches only the last position, alone
    and beside source 0 (profile's default pair)."""
    layer, x = SHIPPED["hand-written fill_exp_divide"]
    alone = measure_paths(layer, x, sources=(T - 1,))
    pair = measure_paths(layer, x, sources=(0, T - 1))
    assert alone.products[0] == pair.products[1] == (None,) * (T - 1) + (2,)


HF_SUBSET = ["mistral", "mamba2", "rwkv", "mixtral", "gemma2", "longformer"]


@functools.cache
def _hf(name: str):
    pytest.importorskip("transformers")
    from hf_mixers import build, embeddings, last_hidden

    model = build(name, dtype=torch.float32)
    return last_hidden(model), embeddings(T, dtype=torch.float32)


@pytest.mark.parametrize("name", HF_SUBSET)
def test_transformers_models_each_source_alone_equals_every_batching(name):
    layer, x = _hf(name)
    alone = _alone(layer, x)
    for batch_bytes in (1, 2**30):
        assert _rows(measure_paths(layer, x, batch_bytes=batch_bytes, check=False)) == alone, batch_bytes
    got = {}
    for group in GROUPINGS["the default pair then the rest"]:
        got.update(_rows(measure_paths(layer, x, sources=group, check=False)))
    assert got == alone
