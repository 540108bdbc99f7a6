"""Issue 21: every op the path tracer meets is handled exactly (rule, decomposition, Jacobian) or refused by name.

Each kind has at least two inputs of its kind; every traced dependence is compared with the float64 Jacobian
(tests/jacobian_oracle.py). Models from ``transformers`` are in tests/test_transformers_mixers.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from jacobian_oracle import dependence, traced
from seqlab.errors import SeqlabError
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.paths import measure_paths
from seqlab.studies.profile import profile


def _x(T: int = 6, d: int = 4, seed: int = 0) -> torch.Tensor:
    return torch.randn(T, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _agrees(layer, x: torch.Tensor):
    paths = measure_paths(layer, x)
    assert traced(paths) == dependence(layer, x)
    assert paths.exact and paths.fallbacks == {}
    return paths


def _causal(T: int) -> tuple[tuple[bool, ...], ...]:
    return tuple(tuple(j >= i for j in range(T)) for i in range(T))


# --- fills are constants, never element ids -----------------------------------------------------------

@pytest.mark.parametrize("fill", [
    lambda x: x + torch.ones_like(x),
    lambda x: x * torch.full_like(x, 2.0) + x.new_full(x.shape, 3.0),
    lambda x: x + torch.zeros(x.shape, dtype=x.dtype) + torch.arange(x.shape[-1], dtype=x.dtype),
], ids=["ones_like", "full_like+new_full", "zeros+arange"])
def test_a_fill_is_a_constant(fill):
    paths = _agrees(fill, _x())
    assert paths.products == tuple(tuple(0 if j == i else None for j in range(6)) for i in range(6))


@pytest.mark.parametrize("T", [5, 8])
def test_masking_with_where_and_full_like_is_causal(T):
    """The common masking idiom where(mask, s, full_like(s, -inf)): no crash, and the mask cuts the future."""
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def attention(x):
        scores = x @ x.T
        weights = torch.softmax(torch.where(mask, scores, torch.full_like(scores, float("-inf"))), dim=-1)
        return weights @ x

    paths = _agrees(attention, _x(T))
    assert traced(paths) == _causal(T)


# --- an exact constant zero inside a data-dependent factor cuts ---------------------------------------

def _segment_decay(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Mamba-2's masked decay: L[j, i] = exp(Σ_{i<k≤j} a_k) below the diagonal, exactly 0 above (masked -inf)."""
    T = x.shape[0]
    a = -F.softplus(x @ w)[:, 0]  # (T,) data-dependent log-decays
    below = torch.ones(T, T, dtype=torch.bool).tril(-1)
    segments = a[:, None].expand(T, T).masked_fill(~below, 0).cumsum(0)
    return segments.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).exp()


@pytest.mark.parametrize("T", [4, 7])
def test_masked_decay_times_scores_is_causal(T):
    """The chunked state-space-duality form: (L ⊙ C Bᵀ) X with L data-dependent and exactly 0 above its diagonal."""
    w = torch.randn(4, 1, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    paths = _agrees(lambda x: (_segment_decay(x, w) * (x @ x.T)) @ x, _x(T))
    assert traced(paths) == _causal(T)


def test_gated_linear_attention_chunk_is_causal():
    """A chunk of gated linear attention: the decay matrix (data-dependent, masked to 0) times q kᵀ, then v."""
    T, d = 6, 4
    generator = torch.Generator().manual_seed(2)
    wq, wk, wv, wg = (torch.randn(d, d, generator=generator, dtype=torch.float64) for _ in range(4))

    def chunk(x):
        log_gate = F.logsigmoid(x @ wg).sum(-1)  # (T,)
        cumulative = log_gate.cumsum(0)
        decay = (cumulative[:, None] - cumulative[None, :]).masked_fill(
            ~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).exp()
        return (decay * ((x @ wq) @ (x @ wk).T)) @ (x @ wv)

    paths = _agrees(chunk, _x(T, d))
    assert traced(paths) == _causal(T)


# --- ops without a rule: decomposed or derived, exact against the Jacobian ---------------------------

@pytest.mark.parametrize(("name", "layer", "how"), [
    ("log_sigmoid", lambda x: F.logsigmoid(x), "decomposed"),
    ("glu", lambda x: F.glu(torch.cat([x, x.flip(0)], -1), -1), "decomposed"),
    ("hardswish", lambda x: F.hardswish(3 * x), "decomposed"),
    ("prelu", lambda x: F.prelu(x, torch.tensor([0.25], dtype=x.dtype)), None),
    ("rrelu", lambda x: F.rrelu(x), None),
    ("avg_pool", lambda x: F.avg_pool1d(x.T[None], 3, 1, padding=1)[0].T, None),
    ("max_pool", lambda x: F.max_pool1d(x.T[None], 2, 1)[0].T, None),
    ("adaptive_avg_pool", lambda x: F.adaptive_avg_pool1d(x.T[None], 3)[0].T, None),
    ("cdist", lambda x: torch.cdist(x, x[:3]), "derived"),
])
def test_an_op_without_a_rule_agrees_with_its_jacobian(name, layer, how):
    paths = _agrees(layer, _x())
    if how is not None:
        assert getattr(paths, how), f"{name} was expected to be {how}"


@pytest.mark.parametrize("route", ["index_add", "index_put accumulate"])
def test_token_routed_experts_scatter_add_along_positions(route):
    """A mixture-of-experts combine: out.index_add_(0, token_ids, expert_out) routes each token back to its row."""
    x = _x(6)
    tokens = torch.tensor([0, 2, 4, 1, 3, 5])
    experts = torch.randn(4, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)

    def combine(x):
        routed = x[tokens] @ experts  # each token's expert output, in routed order
        if route == "index_add":
            return torch.zeros_like(x).index_add_(0, tokens, routed)
        return torch.zeros_like(x).index_put_((tokens,), routed, accumulate=True)

    paths = _agrees(combine, x)
    assert paths.products == tuple(tuple(1 if j == i else None for j in range(6)) for i in range(6))


# --- complex tensors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("read", ["real", "view_as_real"])
def test_a_complex_diagonal_recurrence(read):
    """h_t = λ ⊙ h_{t-1} + x_t with complex λ (S4D / LRU): causal, as its Jacobian."""
    lam = torch.polar(torch.full((4,), 0.9, dtype=torch.float64), torch.linspace(0, 1, 4, dtype=torch.float64))

    def recurrence(x):
        h, ys = torch.zeros(4, dtype=torch.complex128), []
        for t in range(x.shape[0]):
            h = lam * h + x[t].to(torch.complex128)
            ys.append(h.real if read == "real" else torch.view_as_real(h).sum(-1))
        return torch.stack(ys)

    paths = _agrees(recurrence, _x())
    assert traced(paths) == _causal(6)


def test_a_fourier_transform_reads_its_whole_dim():
    paths = _agrees(lambda x: torch.fft.rfft(x, dim=0).abs(), _x(6))
    assert all(v is not None for row in paths.products for v in row)


def test_an_fft_convolution_reads_causal_and_a_frequency_filter_is_named_as_a_bound():
    """A causal convolution by FFT (zero-padded to 2T) cancels the future exactly: read as the convolution it is
    (issue 35, kind 9), exact and causal. A filter kept in the frequency domain has no signal to read: the inverse
    transform is named and the matrix reported as a bound, never as a measurement."""
    T = 6
    kernel = torch.randn(T, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64)

    def long_convolution(x):
        spectrum = torch.fft.rfft(x, n=2 * T, dim=0) * torch.fft.rfft(kernel, n=2 * T, dim=0)
        return torch.fft.irfft(spectrum, n=2 * T, dim=0)[:T]

    paths = measure_paths(long_convolution, _x(T))
    assert paths.exact and paths.fallbacks == {}
    assert dependence(long_convolution, _x(T)) == _causal(T)
    assert all((paths.products[i][j] is not None) == (i <= j) for i in range(T) for j in range(T))
    frequency_filter = torch.fft.rfft(kernel, n=2 * T, dim=0)

    def global_filter(x):
        return torch.fft.irfft(torch.fft.rfft(x, n=2 * T, dim=0) * frequency_filter, n=2 * T, dim=0)[:T]

    paths = measure_paths(global_filter, _x(T))
    assert not paths.exact and "aten._fft_c2r" in paths.fallbacks
    assert dependence(global_filter, _x(T)) == _causal(T)  # what the bound over-states


# --- the addend of addmm is added, not multiplied -----------------------------------------------------

def test_an_elman_step_written_with_addmm_has_the_paths_of_the_lesson():
    rnn = ElmanRNN(4, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64).eval()
    w_xh, w_hh, bias = rnn.weight_xh.detach(), rnn.weight_hh.detach(), rnn.bias_h.detach()

    def written_with_addmm(x):
        h, ys = torch.zeros(1, 4, dtype=x.dtype), []
        for t in range(x.shape[0]):
            h = torch.tanh(torch.addmm(x[t:t + 1] @ w_xh.T + bias, h, w_hh.T))  # the addend: W_xh x_t + b
            ys.append(h)
        return torch.cat(ys)

    expected = measure_paths(rnn, _x())
    assert measure_paths(written_with_addmm, _x()).products == expected.products
    assert expected.row(0) == (1, 2, 3, 4, 5, 6)  # W_xh once, then W_hh at every later step (L3)


def test_addmv_and_baddbmm_addends_take_no_product():
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    through_addmv = measure_paths(lambda x: torch.stack([torch.addmv(x[t], w, x[t]) for t in range(6)]), _x())
    assert through_addmv.products == tuple(tuple(0 if j == i else None for j in range(6)) for i in range(6))
    through_baddbmm = measure_paths(lambda x: torch.baddbmm(x[None], x[None], w[None])[0], _x())
    assert through_baddbmm.products == through_addmv.products


# --- profile keeps the sequence-first layout guard ----------------------------------------------------

@pytest.mark.parametrize("module", [nn.GRU(4, 4), nn.TransformerEncoderLayer(4, 1, dim_feedforward=8, dropout=0.0),
                                    nn.MultiheadAttention(4, 1)], ids=["GRU", "TransformerEncoderLayer", "MHA"])
def test_profile_refuses_a_sequence_first_module_on_batch_first_input(module):
    layer = module if not isinstance(module, nn.MultiheadAttention) else _SelfAttention(module)
    with pytest.raises(SeqlabError, match="batch_first=False"):
        profile(layer, torch.randn(1, 5, 4))
    assert profile(layer, torch.randn(5, 1, 4), layout="tbd").T == 5  # the same module on (T, B, d), named


class _SelfAttention(nn.Module):
    def __init__(self, attention: nn.MultiheadAttention) -> None:
        super().__init__()
        self.attention = attention
        self.batch_first = attention.batch_first

    def forward(self, x):
        return self.attention(x, x, x, need_weights=False)[0]


# --- an extreme moves with the elements that attain it ------------------------------------------------

@pytest.mark.parametrize("window", [None, 2], ids=["causal", "causal band of 2"])
def test_a_row_max_subtracted_before_softmax_does_not_leak_masked_keys(window):
    """Masks added as finfo.min (not -inf) and the row max subtracted first (GPT-OSS, many eager attentions):
    the masked logits still depend on their keys, but the max moves only with the logit that attains it."""
    T = 6
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    if window is not None:
        allowed &= ~torch.ones(T, T, dtype=torch.bool).tril(-window)
    mask = torch.zeros(T, T, dtype=torch.float64).masked_fill(~allowed, torch.finfo(torch.float64).min)

    def attention(x):
        scores = x @ x.T + mask
        scores = scores - scores.max(dim=-1, keepdim=True).values
        return scores.softmax(-1) @ x

    paths = _agrees(attention, _x(T))
    assert traced(paths) == tuple(tuple(bool(allowed[j, i]) for j in range(T)) for i in range(T))


# --- a triangular solve (gated delta rule's UT transform) ---------------------------------------------

@pytest.mark.parametrize(("upper", "left"), [(False, True), (True, True), (False, False)])
def test_a_triangular_solve_reads_the_rows_before(upper, left):
    """Row i of A⁻¹B reads rows 1…i of B (lower) or i…n (upper): causal or anti-causal, as its Jacobian."""
    generator = torch.Generator().manual_seed(7)
    a = torch.randn(6, 6, generator=generator, dtype=torch.float64).tril() + 3 * torch.eye(6, dtype=torch.float64)
    a = a.T.contiguous() if upper else a
    if left:
        paths = _agrees(lambda x: torch.linalg.solve_triangular(a, x, upper=upper), _x())
        expected = _causal(6) if not upper else tuple(tuple(j <= i for j in range(6)) for i in range(6))
        assert traced(paths) == expected and paths.row(0)[0] == 1  # one product: the solve
    else:  # X A = B: each row of X from its own row of B
        paths = _agrees(lambda x: torch.linalg.solve_triangular(a[:4, :4], x, upper=upper, left=False), _x())
        assert traced(paths) == tuple(tuple(j == i for j in range(6)) for i in range(6))


@pytest.mark.parametrize("unitriangular", [False, True])
def test_a_triangular_solve_reads_the_triangle_of_its_matrix(unitriangular):
    paths = _agrees(lambda a: torch.linalg.solve_triangular(
        a.tril() + 3 * torch.eye(6, dtype=a.dtype), torch.ones(6, 2, dtype=a.dtype), upper=False,
        unitriangular=unitriangular), _x(6, 6))
    # row i of A enters X from row i on; with a unit diagonal A's first row holds only the unread a_11
    assert traced(paths) == tuple(tuple(j >= i and not (unitriangular and i == 0) for j in range(6)) for i in range(6))


def test_a_triangular_solve_is_counted():
    from seqlab.measure.work import count_multiplications

    counted = count_multiplications(torch.linalg.solve_triangular, torch.eye(8).tril(), torch.ones(8, 3), upper=False)
    assert counted.multiplications == 8 * 7 // 2 * 3 and counted.complete  # n(n - 1)/2 per right-hand side = 84
    assert count_multiplications(lambda x: x + torch.eye(3), torch.randn(3, 3)).complete  # eye multiplies nothing


@pytest.mark.parametrize("mask_dtype", [torch.int64, torch.bool, torch.float64])
def test_a_padding_mask_of_any_dtype_cuts(mask_dtype):
    """hidden * attention_mask[:, None] (Mamba's padding): a tokenizer's int64 mask cuts like a float one."""
    mask = torch.tensor([1, 1, 1, 1, 0, 0]).to(mask_dtype)
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    paths = _agrees(lambda x: x + (x.cumsum(0) * mask[:, None]).to(x.dtype) @ w, _x())
    assert traced(paths)[0] == (True, True, True, True, False, False)  # the padded rows keep only their own x


def test_a_creation_that_reads_traced_values_is_derived():
    """linspace(start, end) with tensor ends: every element depends on the ends it is computed from. (Autograd
    does not differentiate linspace through its tensor ends, so the witness here is moving x_1's start.)"""
    layer = lambda x: torch.linspace(x[0, 0], x[1, 0], 4).reshape(4, 1).expand(4, 4) + x  # noqa: E731
    paths = measure_paths(layer, _x(4))
    assert traced(paths)[0] == (True, True, True, False)  # the last element is the end alone
    moved = _x(4).clone()
    moved[0, 0] += 1.0
    change = (layer(moved) - layer(_x(4))).abs().amax(dim=-1)
    assert tuple(bool(c > 0) for c in change) == (True, True, True, False)


def test_a_derived_op_whose_jacobian_has_unused_outputs_does_not_crash():
    """logdet goes through _linalg_slogdet (sign, log|det|, LU, pivots): its Jacobian is read on its own thread."""
    paths = measure_paths(lambda f: torch.logdet(f.reshape(1, 1)).reshape(-1, 1), torch.tensor([[1.5]]))
    assert paths.products == ((0,),) and paths.derived == {"aten._linalg_slogdet": 1}


@pytest.mark.parametrize("training", [False, True])
def test_rrelu_is_element_wise_whatever_its_noise(training):
    paths = measure_paths(lambda x: F.rrelu(x, training=training), _x())
    assert paths.products == tuple(tuple(0 if j == i else None for j in range(6)) for i in range(6)) and paths.exact


def test_an_index_put_that_writes_one_place_twice_reads_every_writer():
    """Which of two writes to one place lands is the kernel's choice: both writers reach it (as autograd reads it)."""
    places = torch.tensor([1, 1, 2, 0, 3, 4])
    layer = lambda x: x.new_zeros(6, 4).index_put((places,), x)  # noqa: E731
    paths = measure_paths(layer, _x())
    assert traced(paths) == dependence(layer, _x()) and paths.fallbacks == {}
    assert traced(paths)[0][1] and traced(paths)[1][1]
    # the value moves with the write that lands only: the perturbation check names the other writer (issue 35)
    assert paths.check.unmoved == ((0, 1),) and not paths.exact


# --- refusals by name, and a derived op read exactly ------------------------------------------------------

@pytest.mark.parametrize("sparse", [lambda m: m.to_sparse(), lambda m: m.to_sparse_csr()], ids=["coo", "csr"])
def test_a_sparse_tensor_is_refused_by_name(sparse):
    """The distance store keeps dense elements: a sparse tensor inside the layer is refused, never traced as if
    its strides placed its elements."""
    weight = torch.eye(4, dtype=torch.float64)
    with pytest.raises(SeqlabError, match=r"dense \(strided\) tensors only; aten\.\w+ met a tensor of layout sparse"):
        measure_paths(lambda x: torch.sparse.mm(sparse(x), weight).to_dense(), _x(6, 4))


def _moves(layer, x: torch.Tensor, i: int) -> torch.Tensor:
    """(T_out,) whether moving input position i changes each output position (a witness that needs no autograd)."""
    moved = x.clone()
    moved[i] += 1.0
    return (layer(moved) - layer(x)).abs().amax(dim=-1) > 0


@pytest.mark.parametrize("upper", [False, True])
def test_an_eigendecomposition_reads_one_triangle(upper):
    """eigvalsh reads the UPLO triangle; autograd's formula hands the gradient to both (it assumes symmetry), and
    the derived rule does not: the element of the other triangle reaches no eigenvalue."""
    def layer(x):  # x (4, 1): positions 0..3 are M[0, 1], M[1, 0], M[0, 0], M[1, 1]
        m = torch.stack([torch.stack([x[2, 0], x[0, 0]]), torch.stack([x[1, 0], x[3, 0]])])
        return torch.linalg.eigvalsh(m, UPLO="U" if upper else "L").reshape(2, 1)

    x = torch.tensor([[0.3], [-0.7], [1.1], [2.0]], dtype=torch.float64)
    paths = measure_paths(layer, x)
    unread = 1 if upper else 0  # the off-diagonal element outside the triangle
    for i in range(4):
        assert traced(paths)[i] == tuple(_moves(layer, x, i).tolist()) == ((i != unread),) * 2
    assert paths.derived and paths.exact


@pytest.mark.parametrize("seed", [0, 1])
def test_a_qr_entry_does_not_read_a_column_it_skips(seed):
    """R[0, 2] = q_0 · a_2 reads columns 0 and 2 of A only; autograd returns rounding (~1e-17) for column 1, which
    the derived rule reads as 0."""
    def layer(x):  # x (9, 1): A = x.reshape(3, 3), position p = A[p // 3, p % 3]
        return torch.linalg.qr(x.reshape(3, 3)).R.reshape(9, 1)

    x = _x(9, 1, seed)
    paths = measure_paths(layer, x)
    column_one = (1, 4, 7)
    assert [traced(paths)[i][2] for i in range(9)] == [i not in column_one for i in range(9)]
    assert [bool(_moves(layer, x, i)[2]) for i in range(9)] == [i not in column_one for i in range(9)]
