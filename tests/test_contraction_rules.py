"""seqlab.measure.contraction_rules: how matrix products, triangular solves and convolutions move path distances.

Each rule is checked by exact path matrices worked out by hand (products between x_i and y_j) and by a second
route, the float64 Jacobian (``tests/jacobian_oracle.py``): where the rule says "reaches", the derivative is
non-zero, and where it says "None", it is exactly zero. The verdicts that a mutant could flip are pinned: an exact
0 in the other factor cuts a term (the product rule), β = 0 leaves the addend unread, the addend of ``addmm`` takes
no product, an integer product depends on nothing, upper and lower triangles (and ``left=False``) read opposite
halves, and a convolution reads its dilated window only.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from jacobian_oracle import dependence, traced

from seqlab.measure import contraction_rules
from seqlab.measure.distances import ITEMSIZE
from seqlab.measure.paths import measure_paths

T, d = 5, 3
F64 = torch.float64


def tensors(seed: int = 0):
    """x (T, d), W (d, d), a lower-triangular (T, T) with a non-zero random triangle, and T² Gaussian values."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, d, generator=g, dtype=F64)
    W = torch.randn(d, d, generator=g, dtype=F64)
    lower = torch.tril(torch.rand(T, T, generator=g, dtype=F64) + 0.5)  # 0.5…1.5 on and below the diagonal
    return x, W, lower


def causal(value):
    """value where j ≥ i (source i, output j), None elsewhere."""
    return tuple(tuple(value if j >= i else None for j in range(T)) for i in range(T))


def anticausal(value):
    return tuple(tuple(value if j <= i else None for j in range(T)) for i in range(T))


def diagonal(value):
    return tuple(tuple(value if j == i else None for j in range(T)) for i in range(T))


def everywhere(value):
    return ((value,) * T,) * T


def check(layer, x, expected):
    """The traced products equal ``expected``, and the float64 Jacobian agrees on which pairs depend."""
    paths = measure_paths(layer, x)
    assert paths.products == expected
    assert paths.fallbacks == {}
    assert traced(paths) == dependence(layer, x)
    return paths


def test_mm_keeps_each_row_apart_one_product():
    x, W, _ = tensors()
    check(lambda x: x @ W, x, diagonal(1))


@pytest.mark.parametrize("seed", [0, 1])
def test_an_exact_zero_of_the_other_factor_cuts_the_term(seed):
    """L @ (x W) with L lower triangular: the zeros above the diagonal keep later rows from earlier outputs."""
    x, W, lower = tensors(seed)
    check(lambda x: lower @ (x @ W), x, causal(2))
    check(lambda x: lower.T @ (x @ W), x, anticausal(2))


def test_without_zeros_every_row_reaches_every_output():
    x, W, lower = tensors()
    check(lambda x: (lower + lower.T) @ (x @ W), x, everywhere(2))


def test_a_zero_made_by_the_pass_cuts_as_a_constant_one_does():
    """The mask is computed from x (a traced 0, not a constant): it still cuts the other factor's dependence."""
    x, W, _ = tensors()
    mask = torch.tril(torch.ones(T, T, dtype=F64))

    def layer(x):
        scores = (x @ W) @ x.T  # (T, T), traced
        return (scores * mask) @ x  # exact 0 above the diagonal, whatever the scores

    paths = measure_paths(layer, x)
    assert traced(paths) == dependence(layer, x)
    for i in range(T):
        for j in range(T):
            if j < i:  # x_i enters y_j (j < i) only through scores[j, i] = 0·(…): cut
                assert paths.products[i][j] is None
            else:
                assert paths.products[i][j] is not None


def test_the_min_plus_product_in_chunks_equals_the_whole(monkeypatch):
    x, W, lower = tensors()
    whole = measure_paths(lambda x: lower @ (x @ W), x)
    monkeypatch.setattr(contraction_rules, "CHUNK_ELEMENTS", 1)  # one row per chunk
    assert measure_paths(lambda x: lower @ (x @ W), x).products == whole.products == causal(2)
    assert contraction_rules.CHUNK_BYTES == 2**24 * ITEMSIZE == 64 * 2**20


def test_the_addend_of_addmm_takes_no_product_and_beta_zero_is_not_read():
    x, W, _ = tensors()
    with_addend = check(lambda x: torch.addmm(x, x @ W, W), x, diagonal(0))
    assert with_addend.ops == diagonal(1)  # the addmm itself: one op, no product
    check(lambda x: torch.addmm(x, x @ W, W, beta=0), x, diagonal(2))


def test_the_addend_of_addmm_reaches_where_the_product_does_not():
    x, _, _ = tensors()
    shifted = torch.roll(torch.eye(T, dtype=F64), 1, dims=0)  # row j reads row j - 1 (wrapping)
    expected = tuple(tuple(0 if j == i else 1 if j == (i + 1) % T else None for j in range(T)) for i in range(T))
    check(lambda x: torch.addmm(x, shifted, x), x, expected)


def test_matrix_vector_and_dot_products():
    x, W, _ = tensors()
    check(lambda x: torch.stack([torch.mv(W, x[t]) for t in range(T)]), x, diagonal(1))
    check(lambda x: torch.stack([torch.dot(x[t], x[t]) for t in range(T)])[:, None], x, diagonal(1))
    check(lambda x: torch.stack([torch.addmv(x[t], W, x[t]) for t in range(T)]), x, diagonal(0))


def test_batched_products():
    x, _, lower = tensors()
    check(lambda x: torch.bmm(lower[None], x[None])[0], x, causal(1))
    # x + Lᵀ x: the addend (no product) on the diagonal, one product to every earlier output
    expected = tuple(tuple(0 if j == i else 1 if j < i else None for j in range(T)) for i in range(T))
    check(lambda x: torch.baddbmm(x[None], lower.T[None], x[None])[0], x, expected)
    # addbmm sums the batch: lower and its transpose together reach every output
    zeros = torch.zeros(T, d, dtype=F64)
    check(lambda x: torch.addbmm(zeros, torch.stack([lower, lower.T]), torch.stack([x, x])), x, everywhere(1))
    check(lambda x: torch.addbmm(zeros, torch.stack([lower, lower]), torch.stack([x, x])), x, causal(1))


def test_the_outer_product_reads_its_two_vectors():
    x, _, _ = tensors()
    zeros = torch.zeros(T, d, dtype=F64)
    # out[i, j] = x[i, 0] · x[0, j]: row i reads x_i, and every row reads x_0
    expected = tuple(tuple(1 if (i == 0 or j == i) else None for j in range(T)) for i in range(T))
    check(lambda x: torch.addr(zeros, x[:, 0], x[0]), x, expected)


def test_an_integer_product_depends_on_nothing():
    x, _, _ = tensors()
    ones = torch.ones(d, d, dtype=torch.long)
    paths = measure_paths(lambda x: ((x > 0).long() @ ones).to(F64), x)
    assert paths.products == everywhere(None)


@pytest.mark.parametrize("upper", [False, True])
def test_a_triangular_solve_reads_its_own_half(upper):
    x, _, lower = tensors()
    A = lower.T if upper else lower
    check(lambda x: torch.linalg.solve_triangular(A, x, upper=upper), x, anticausal(1) if upper else causal(1))


@pytest.mark.parametrize("upper", [False, True])
def test_a_triangular_solve_from_the_right_swaps_the_halves(upper):
    """X A = B (``left=False``) on Bᵀ: X[:, j] reads B[:, k] for k ≤ j when A is upper (the inverse is upper)."""
    x, _, lower = tensors()
    A = lower.T if upper else lower
    expected = causal(1) if upper else anticausal(1)
    check(lambda x: torch.linalg.solve_triangular(A, x.T, upper=upper, left=False).T, x, expected)


def test_a_triangular_solve_with_a_traced_matrix():
    """A built from x (its diagonal from x, the rest constant): row i of X reads A's rows up to i."""
    x, _, lower = tensors()

    def layer(x):
        A = lower + torch.diag((x ** 2).sum(-1) + 1)  # (T, T), row i traced from x_i
        return torch.linalg.solve_triangular(A, torch.ones(T, d, dtype=F64), upper=False)

    check(layer, x, causal(1))

    def unit(x):  # unitriangular: the diagonal is not read, so x reaches nothing
        A = lower + torch.diag((x ** 2).sum(-1) + 1)
        return torch.linalg.solve_triangular(A, torch.ones(T, d, dtype=F64), upper=False, unitriangular=True)

    assert measure_paths(unit, x).products == everywhere(None)


@pytest.mark.parametrize("kernel, dilation, padding", [(3, 1, 1), (2, 2, 1), (5, 1, 2)])
def test_a_convolution_reads_its_dilated_window(kernel, dilation, padding):
    x, _, _ = tensors()
    g = torch.Generator().manual_seed(3)
    weight = torch.randn(d, d, kernel, generator=g, dtype=F64)
    layer = lambda x: F.conv1d(x.T[None], weight, padding=padding, dilation=dilation)[0].T
    out_T = layer(x).shape[0]
    taps = {o: {o - padding + dilation * k for k in range(kernel)} for o in range(out_T)}
    expected = tuple(tuple(1 if i in taps[o] else None for o in range(out_T)) for i in range(T))
    check(layer, x, expected)


def test_a_grouped_convolution_and_a_two_dimensional_one():
    x, _, _ = tensors()
    g = torch.Generator().manual_seed(4)
    depthwise = torch.randn(d, 1, 3, generator=g, dtype=F64)
    window = tuple(tuple(1 if abs(i - j) <= 1 else None for j in range(T)) for i in range(T))
    check(lambda x: F.conv1d(x.T[None], depthwise, padding=1, groups=d)[0].T, x, window)
    image = torch.randn(2, 1, 3, 1, generator=g, dtype=F64)  # 3 positions tall, 1 feature wide
    check(lambda x: F.conv2d(x[None, None], image, padding=(1, 0))[0].sum(0), x, window)
