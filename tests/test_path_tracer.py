"""seqlab.measure.path_tracer: the dispatch mode that carries distances op by op — its per-op kinds, its two units,
the decomposition route (parts count as the one op they make up), in-place writes, views, the budget and the
refusal of sparse tensors."""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.distances import DTYPE, UNREACHABLE
from seqlab.measure.path_tracer import (
    CONSTANT,
    MOVEMENT,
    OTHER,
    POINTWISE,
    PRODUCT,
    REDUCTION,
    VIEW,
    PathTracer,
    op_kind,
)
from seqlab.measure.paths import measure_paths

aten = torch.ops.aten


@pytest.mark.parametrize("op, kind", [
    (aten.mm.default, PRODUCT), (aten.addmm.default, PRODUCT), (aten.convolution.default, PRODUCT),
    (aten.view.default, VIEW), (aten.transpose.int, VIEW), (aten.unsqueeze_.default, VIEW),
    (aten.full_like.default, CONSTANT), (aten.zeros.default, CONSTANT), (aten.arange.default, CONSTANT),
    (aten.cat.default, MOVEMENT), (aten.index_select.default, MOVEMENT), (aten.clone.default, MOVEMENT),
    (aten.sum.dim_IntList, REDUCTION), (aten._softmax.default, REDUCTION), (aten._fft_r2c.default, REDUCTION),
    (aten.tanh.default, POINTWISE), (aten.add_.Tensor, POINTWISE), (aten.where.self, POINTWISE),
    (aten.where.ScalarOther, POINTWISE), (aten.rrelu_with_noise.default, POINTWISE),
    (aten.topk.default, REDUCTION), (aten._cdist_forward.default, OTHER), (aten._linalg_eigh.default, OTHER),
])
def test_op_kind(op, kind):
    assert op_kind(op) == kind


def traced(function, x, sources=1, positions=False):
    """Distances of ``function(x)`` with x's position 0 as the one source: (products, ops) at each output element."""
    tracer = PathTracer(sources=sources, budget_bytes=1e7, positions=positions)
    seed = torch.full((2, *x.shape), UNREACHABLE, dtype=DTYPE)
    seed[:, 0] = 0
    tracer.store.write(x, seed)
    with tracer:
        y = function(x)
    return tracer, tracer.store(y)


def test_a_product_and_an_op_in_both_units():
    x = torch.ones(3, 2)
    tracer, d = traced(lambda x: (x @ torch.ones(2, 2)).tanh(), x)
    assert d[:, 0, 0].tolist() == [1, 2]  # one product; the product and tanh as ops
    assert bool((d[:, 1:] >= UNREACHABLE).all())  # rows 1 and 2 are not the source's
    assert tracer.fallbacks == {} and tracer.decomposed == {} and tracer.derived == {}


def test_a_view_and_an_in_place_write_need_no_rule():
    x = torch.ones(3, 2)

    def layer(x):
        y = x * 2  # one op
        y[1:].add_(y[:1])  # rows 1 and 2 read row 0 in place: one op more, through a view
        return y

    _, d = traced(layer, x)
    assert d[1].tolist() == [[1, 1], [2, 2], [2, 2]]  # ops
    assert d[0].tolist() == [[0, 0], [0, 0], [0, 0]]  # products: none


def test_a_decomposed_op_counts_as_one_op_and_its_products_as_products():
    """hardswish is decomposed by PyTorch: its parts are traced, and the whole is one op."""
    x = torch.linspace(-1, 1, 6).reshape(3, 2)
    tracer, d = traced(torch.nn.functional.hardswish, x)
    assert tracer.decomposed == {"aten.hardswish": 1}
    assert d[:, 0].tolist() == [[0, 0], [1, 1]]


def test_constants_carry_no_distance():
    x = torch.ones(3, 2)
    _, d = traced(lambda x: torch.full_like(x, 3.0) + torch.zeros(3, 2), x)
    assert d is None or bool((d >= UNREACHABLE).all())


def test_the_budget_is_refused_before_it_is_passed():
    tracer = PathTracer(sources=1, budget_bytes=10, positions=False)
    with pytest.raises(SeqlabError):
        tracer.store.write(torch.ones(4, 4), torch.zeros(2, 4, 4, dtype=DTYPE))


def test_a_sparse_tensor_is_refused_by_name():
    sparse = torch.eye(3).to_sparse()
    with pytest.raises(SeqlabError, match=r"the path tracer follows dense \(strided\) tensors only; .* met a tensor "
                                          r"of layout sparse_coo"):
        measure_paths(lambda x: torch.sparse.mm(sparse, x), torch.randn(3, 2))


@pytest.mark.parametrize("positions", [False, True])
def test_position_level_and_element_level_give_the_same_matrices(positions):
    torch.manual_seed(0)
    rnn = torch.nn.RNN(3, 4)
    x = torch.randn(5, 3)
    paths = measure_paths(rnn, x, positions=positions)
    assert paths.products == tuple(tuple(j - i + 1 if j >= i else None for j in range(5)) for i in range(5))


def test_used_bytes_count_the_distances_held():
    x = torch.ones(3, 2)
    tracer, _ = traced(lambda x: x * 2, x)
    assert tracer.used_bytes >= 2 * 2 * 6 * 4  # the input's and the output's (2 units · 6 elements · 4 bytes) at least


@pytest.mark.parametrize("batch", [(), (2,)])
def test_the_masked_product_runs_only_where_a_zero_sits(batch) -> None:
    """min over k of d[…, i, k] where the other factor's [k, j] is not 0, computed on the columns holding a 0 alone
    (issue 34, item 3), equals the masked (min, +) product over every column."""
    from seqlab.measure import contraction_rules as rules
    generator = torch.Generator().manual_seed(0)
    d = torch.randint(0, 9, (4, *batch, 5, 6), generator=generator, dtype=DTYPE)  # (S, …, n, k)
    d[torch.rand(d.shape, generator=generator) < 0.2] = UNREACHABLE
    zeros = torch.zeros(*batch, 6, 7, dtype=torch.bool)  # (…, k, p): zeros in columns 1 and 4 only
    zeros[..., 0, 1] = zeros[..., 2, 1] = zeros[..., 5, 4] = True
    zeros[..., :, 4] |= torch.rand(*batch, 6, generator=generator) < 0.5
    masked = rules._masked_where_zero(d, zeros)
    assert torch.equal(masked, rules._min_plus(d, ~zeros))
    every = torch.ones_like(zeros)  # a factor that is 0 everywhere: nothing passes
    assert bool((rules._masked_where_zero(d, every) == UNREACHABLE).all())
