"""Issue 35, item 1: an exact zero cuts a product whatever made it (softmax, exp(-inf), masked_fill, where, a gather,
a sort, a hash), for each source alone.

Two routes per input: the path matrix of :func:`seqlab.measure.paths.measure_paths` (an entry is None or not) and
the float64 Jacobian judged by seqlab's rule (:func:`seqlab.measure.dependence.judge`); and, for the softmaxes
written by hand, the path lengths of the same attention through ``F.scaled_dot_product_attention``. Before the fix
every hand-written masked softmax below read "every position reaches every position" (the weight 0 / Σ of a masked
key depends on the open keys of its row, so it was not a constant and did not cut), and HF Reformer's LSH
attention gave "3 products" from position T to position 1.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seqlab.measure.dependence import judge
from seqlab.measure.paths import measure_paths

T, D = 6, 4


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


# --- sorted and hashed attention: zeros by gather, sort and a data-dependent mask ----------------------

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
