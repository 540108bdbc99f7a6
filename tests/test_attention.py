"""Attention against F.scaled_dot_product_attention; the four scores, masks, order (L2, L4, L10)."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.errors import SeqlabError
from seqlab.layers.attention import SCORES, Attention, SelfAttention, causal_mask

F64 = torch.float64
SHAPES = [(1, 1, 1, 1), (5, 5, 4, 3), (3, 7, 8, 2), (6, 2, 16, 16)]  # (T_q, T_k, d_k, d_v)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _qkv(batch, T_q, T_k, d_k, d_v, seed=0, d_q=None):
    g = _gen(seed)
    lead = (batch,) if batch else ()
    q = torch.randn(*lead, T_q, d_q or d_k, dtype=F64, generator=g)
    k = torch.randn(*lead, T_k, d_k, dtype=F64, generator=g)
    v = torch.randn(*lead, T_k, d_v, dtype=F64, generator=g)
    return q, k, v


def _random_mask(shape, seed):
    mask = torch.rand(shape, generator=_gen(seed)) < 0.5  # (…, T_q, T_k)
    mask[..., 0] = True  # keep one key open in every row
    return mask


@pytest.mark.parametrize(("T_q", "T_k", "d_k", "d_v"), SHAPES)
@pytest.mark.parametrize("batch", [0, 3])
@pytest.mark.parametrize("masked", [False, True])
def test_scaled_dot_matches_sdpa(T_q, T_k, d_k, d_v, batch, masked):
    q, k, v = _qkv(batch, T_q, T_k, d_k, d_v)
    mask = _random_mask((T_q, T_k), seed=T_q + T_k) if masked else None
    out, weights = Attention("scaled_dot")(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-12)
    assert weights.shape == q.shape[:-1] + (T_k,)
    torch.testing.assert_close(weights.sum(-1), torch.ones(q.shape[:-1], dtype=F64))
    if masked:
        assert torch.all(weights.masked_select(~mask.expand_as(weights)) == 0.0)  # exactly 0


@pytest.mark.parametrize("batch", [0, 2])
def test_causal_mask_matches_sdpa_is_causal(batch):
    q, k, v = _qkv(batch, 6, 6, 4, 5, seed=1)
    out, weights = Attention("scaled_dot")(q, k, v, causal_mask(6))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.all(weights[..., ~causal_mask(6)] == 0.0)
    assert torch.all(weights[..., 0, 0] == 1.0)  # the first row sees only itself


def test_batched_mask_is_used_per_batch_element():
    q, k, v = _qkv(2, 4, 5, 3, 3, seed=2)
    mask = _random_mask((2, 1, 4, 5), seed=3).squeeze(1)  # (B, T_q, T_k)
    out, _ = Attention("scaled_dot")(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_float32_matches_sdpa():
    g = _gen(4)
    q, k, v = (torch.randn(2, 7, 8, generator=g) for _ in range(3))
    out, _ = Attention()(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), rtol=1e-5, atol=1e-6)


def test_dot_equals_scaled_dot_with_query_scaled():
    q, k, v = _qkv(2, 4, 6, 9, 3, seed=5)
    dot, w_dot = Attention("dot")(q, k, v)
    # (q sqrt(d_k)) . k / sqrt(d_k) = q . k
    scaled, w_scaled = Attention("scaled_dot")(q * math.sqrt(9), k, v)
    torch.testing.assert_close(dot, scaled)
    torch.testing.assert_close(w_dot, w_scaled)


def test_general_with_identity_equals_dot():
    att = Attention("general", 5, dtype=F64)
    assert att.weight.shape == (5, 5)
    with torch.no_grad():
        att.weight.copy_(torch.eye(5, dtype=F64))
    q, k, v = _qkv(0, 3, 4, 5, 2, seed=6)
    torch.testing.assert_close(att(q, k, v)[0], Attention("dot")(q, k, v)[0])


def test_general_with_different_query_width():
    att = Attention("general", 4, d_q=6, generator=_gen(7), dtype=F64)
    q, k, v = _qkv(2, 3, 5, 4, 2, seed=8, d_q=6)
    out, weights = att(q, k, v)
    expected = torch.softmax(q @ att.weight @ k.transpose(-2, -1), dim=-1)  # q_i^T W k_j
    torch.testing.assert_close(weights, expected)
    assert out.shape == (2, 3, 2)


@pytest.mark.parametrize("batch", [0, 2])
def test_additive_matches_hand_loop(batch):
    att = Attention("additive", 4, d_q=3, d_attention=5, generator=_gen(9), dtype=F64)
    shapes = (att.weight_q.shape, att.weight_k.shape, att.weight_score.shape)
    assert shapes == ((5, 3), (5, 4), (5,))
    q, k, v = _qkv(batch, 3, 6, 4, 2, seed=10, d_q=3)
    out, weights = att(q, k, v)
    qs, ks, vs = (t.reshape(-1, *t.shape[-2:]) for t in (q, k, v))  # (B', T, d)
    for b in range(qs.shape[0]):
        for i in range(3):
            e = torch.stack([att.weight_score @ torch.tanh(att.weight_q @ qs[b, i]
                                                           + att.weight_k @ ks[b, j])
                             for j in range(6)])  # e_ij = w^T tanh(W_q q_i + W_k k_j)
            alpha = torch.exp(e) / torch.exp(e).sum()
            torch.testing.assert_close(weights.reshape(-1, 3, 6)[b, i], alpha)
            torch.testing.assert_close(out.reshape(-1, 3, 2)[b, i], alpha @ vs[b])


def test_parametric_scores_are_reproducible_from_a_generator():
    for score in ("general", "additive"):
        a, b = (Attention(score, 4, generator=_gen(11)) for _ in range(2))
        for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
            assert torch.equal(pa, pb)


def test_all_masked_row_raises_and_names_the_row():
    q, k, v = _qkv(0, 3, 4, 2, 2)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[2] = False
    with pytest.raises(SeqlabError, match="query row 2"):
        Attention()(q, k, v, mask)
    qb, kb, vb = _qkv(2, 3, 4, 2, 2)
    batched = torch.ones(2, 3, 4, dtype=torch.bool)
    batched[1, 0] = False
    with pytest.raises(SeqlabError, match=r"query row 0 of batch index \(1,\)"):
        Attention()(qb, kb, vb, batched)


@pytest.mark.parametrize("mask", [
    torch.ones(3, 4),  # float, not bool
    torch.ones(4, 3, dtype=torch.bool),  # transposed: does not broadcast
    torch.ones(2, 3, 4, dtype=torch.bool),  # adds a batch dim the inputs lack
])
def test_bad_masks_raise(mask):
    q, k, v = _qkv(0, 3, 4, 2, 2)
    with pytest.raises(SeqlabError, match="mask"):
        Attention()(q, k, v, mask)


def test_unknown_score_lists_the_names():
    with pytest.raises(SeqlabError) as info:
        Attention("cosine")
    assert all(name in str(info.value) for name in SCORES) and "'cosine'" in str(info.value)


@pytest.mark.parametrize("kwargs", [
    {"score": "general"},  # needs d_k
    {"score": "additive"},
    {"score": "general", "d_k": 0},
    {"score": "additive", "d_k": 4, "d_attention": -1},
    {"score": "dot", "d_attention": 4},  # only additive has a hidden width
    {"score": "dot", "d_k": 4, "d_q": 5},
])
def test_bad_constructor_arguments_raise(kwargs):
    with pytest.raises(SeqlabError):
        Attention(**kwargs)


@pytest.mark.parametrize(("q", "k", "v"), [
    ((3, 4), (5, 4), (6, 2)),  # T_k differs between key and value
    ((3, 4), (5, 3), (5, 2)),  # query and key widths differ
    ((2, 3, 4), (5, 4), (5, 2)),  # ranks differ
    ((2, 3, 4), (3, 5, 4), (3, 5, 2)),  # batch sizes differ
    ((4,), (4,), (4,)),  # rank 1
    ((0, 4), (5, 4), (5, 2)),  # no queries
])
def test_bad_shapes_raise_with_shapes(q, k, v):
    tensors = [torch.zeros(s, dtype=F64) for s in (q, k, v)]
    with pytest.raises(SeqlabError, match=r"received query \(.*\), key"):
        Attention()(*tensors)


def test_width_checked_against_constructor_and_dtype_mixing_refused():
    q, k, v = _qkv(0, 3, 4, 5, 2)
    with pytest.raises(SeqlabError, match="d_k=6"):
        Attention("scaled_dot", 6)(q, k, v)
    with pytest.raises(SeqlabError, match="dtype"):
        Attention("general", 5)(q, k, v)  # float32 weight, float64 inputs
    with pytest.raises(SeqlabError, match="dtype"):
        Attention()(q.float(), k, v)


def test_causal_mask_values_and_validation():
    assert torch.equal(causal_mask(3).int(), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]]))
    assert causal_mask(1).dtype == torch.bool
    for bad in (0, -2, 2.0, True):
        with pytest.raises(SeqlabError):
            causal_mask(bad)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), T=st.integers(1, 8), d=st.integers(1, 6), seed=st.integers(0, 2**16),
       score=st.sampled_from(SCORES))
def test_order_blindness_property(data, T, d, seed, score):
    """L10: permuting (k, v) pairs changes nothing; permuting queries permutes the outputs."""
    perm = torch.tensor(data.draw(st.permutations(range(T))))
    att = Attention(score, d, generator=_gen(seed), dtype=F64)
    q, k, v = _qkv(0, T, T, d, d, seed=seed)
    out, weights = att(q, k, v)
    out_kv, _ = att(q, k[perm], v[perm])
    torch.testing.assert_close(out_kv, out, rtol=1e-10, atol=1e-10)
    out_q, weights_q = att(q[perm], k, v)
    torch.testing.assert_close(out_q, out[perm], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(weights_q, weights[perm], rtol=1e-10, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), T=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_self_attention_permutes_with_its_input(data, T, seed):
    """L10: shuffled tokens in, the same rows shuffled the same way out."""
    perm = torch.tensor(data.draw(st.permutations(range(T))))
    sa = SelfAttention(5, d_v=3, generator=_gen(seed), dtype=F64)
    x = torch.randn(T, 5, dtype=F64, generator=_gen(seed + 1))
    out, _ = sa(x)
    torch.testing.assert_close(sa(x[perm])[0], out[perm], rtol=1e-10, atol=1e-10)


def test_self_attention_is_project_then_attention():
    sa = SelfAttention(6, d_k=4, d_v=3, generator=_gen(12), dtype=F64)
    x = torch.randn(2, 5, 6, dtype=F64, generator=_gen(13))
    q, k, v = sa.project(x)
    assert (q.shape, k.shape, v.shape) == ((2, 5, 4), (2, 5, 4), (2, 5, 3))
    torch.testing.assert_close(q, x @ sa.q_proj.weight.T)
    assert sa.q_proj.bias is None
    out, weights = sa(x)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    assert weights.shape == (2, 5, 5)


def test_causal_self_attention_matches_sdpa_and_combines_masks():
    sa = SelfAttention(4, causal=True, generator=_gen(14), dtype=F64)
    x = torch.randn(6, 4, dtype=F64, generator=_gen(15))
    q, k, v = sa.project(x)
    out, weights = sa(x)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    keep = torch.ones(6, 6, dtype=torch.bool)
    keep[:, 0] = False
    keep[0, 0] = True  # row 0 must keep its only causal key
    _, both = sa(x, keep)
    assert torch.all(both[1:, 0] == 0.0) and torch.all(both[~causal_mask(6)] == 0.0)
    with pytest.raises(SeqlabError, match="causal"):
        sa(x, torch.ones(5, 5, dtype=torch.bool))


def test_self_attention_reproducible_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = (SelfAttention(4, score="additive", generator=_gen(16)) for _ in range(2))
    assert torch.equal(torch.random.get_rng_state(), state)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


@pytest.mark.parametrize("score", SCORES)
def test_every_score_runs_in_self_attention(score):
    sa = SelfAttention(4, d_k=3, d_v=2, score=score, generator=_gen(17))
    out, weights = sa(torch.randn(2, 5, 4, generator=_gen(18)))
    assert out.shape == (2, 5, 2)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5))


def test_self_attention_refuses_bad_input():
    sa = SelfAttention(4, generator=_gen())
    with pytest.raises(SeqlabError, match=r"\(T, 4\).*\(5, 3\)"):
        sa(torch.zeros(5, 3))
    with pytest.raises(SeqlabError):
        SelfAttention(0)
