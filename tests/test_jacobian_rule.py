"""seqlab.measure.jacobian_rule: an op without a path rule, its dependence derived from its own Jacobian at the
point; the convolution theorem read by value for a product of spectra (SpectralProducts).

Exact matrices by hand, and agreement with the float64 Jacobian of the whole layer (``tests/jacobian_oracle.py``).
The first three tests were in tests/test_paths.py.
"""

import pytest
import torch
from jacobian_oracle import dependence, traced

from seqlab.measure import jacobian_rule
from seqlab.measure.distances import DTYPE, UNREACHABLE
from seqlab.measure.paths import measure_paths

F64 = torch.float64
aten = torch.ops.aten


def test_an_op_without_rule_or_decomposition_is_derived_from_its_jacobian():
    """cdist has no rule and no decomposition: its dependence comes from its own Jacobian at the input. Row i of
    cdist(x, x) reads x_i and every x_j; the diagonal distance ‖x_i − x_i‖ = 0 has derivative 0 (PyTorch's
    convention at a zero distance), so the one op reaches every entry through the other argument."""
    paths = measure_paths(lambda x: torch.cdist(x, x), torch.randn(4, 3))
    assert paths.fallbacks == {} and paths.derived == {"aten._cdist_forward": 1} and paths.exact
    assert paths.ops == ((1,) * 4,) * 4  # one op, every output from every input
    assert paths.products == ((0,) * 4,) * 4  # an op without a rule is not taken for a product
    one_sided = measure_paths(lambda x: torch.cdist(x, torch.ones(2, 3)), torch.randn(4, 3))
    assert one_sided.products == tuple(tuple(0 if j == i else None for j in range(4)) for i in range(4))


def test_a_refused_op_is_named_and_its_matrix_is_a_bound(monkeypatch):
    """cdist with its Jacobian over the size limit: refused by name, all-to-all, and not exact (a bound)."""
    monkeypatch.setattr(jacobian_rule, "LIMIT", 4 * 2 * 4 * 3 - 1)  # one entry short of cdist's 4x2 by 4x3
    paths = measure_paths(lambda x: torch.cdist(x, torch.ones(2, 3)), torch.randn(4, 3))
    assert paths.fallbacks == {"aten._cdist_forward": 1} and paths.derived == {} and not paths.exact
    assert paths.products == ((0,) * 4,) * 4  # every output from every input: over-stated, a bound


def test_a_piecewise_constant_op_depends_on_nothing():
    """histc counts elements per bin: its derivative is 0 wherever it is defined, so no path goes through it."""
    paths = measure_paths(lambda x: torch.histc(x, bins=4).reshape(4, 1) + x[:, :1], torch.randn(4, 3))
    assert paths.derived == {"aten.histc": 1} and paths.exact
    assert paths.products == tuple(tuple(0 if j == i else None for j in range(4)) for i in range(4))


def test_the_limits():
    assert jacobian_rule.LIMIT == 2**22
    assert jacobian_rule.ROUNDOFF == 64 * torch.finfo(F64).eps
    assert jacobian_rule.TRIANGLE_READERS == {aten._linalg_eigh.default, aten.linalg_eigh.default}


def test_distances_through_a_pattern_take_the_least_allowed_input_in_chunks(monkeypatch):
    U = UNREACHABLE
    d = torch.tensor([[0, 3, U], [U, 1, 2]], dtype=DTYPE)  # (S = 2, n = 3)
    pattern = torch.tensor([[True, True, False], [False, False, True], [False, False, False]])  # (m = 3, n)
    expected = [[0, U, U], [1, 2, U]]
    assert jacobian_rule._through(d, pattern).tolist() == expected
    monkeypatch.setattr(jacobian_rule, "CHUNK_ELEMENTS", 1)  # one output per chunk: the same
    assert jacobian_rule._through(d, pattern).tolist() == expected
    assert jacobian_rule._through(d, pattern[:0]).shape == (2, 0)
    assert jacobian_rule._through(d[:, :0], torch.zeros(2, 0, dtype=torch.bool)).tolist() == [[U, U], [U, U]]


def test_an_entry_at_the_roundoff_floor_reads_zero_and_nan_reads_depends():
    floor = jacobian_rule.ROUNDOFF
    block = torch.tensor([[1.0, floor, floor * 1.5, float("nan"), 0.0]], dtype=F64)  # one output, five inputs
    (pattern,) = jacobian_rule._nonzero((block,), (1,))
    assert pattern.tolist() == [[True, False, True, True, False]]  # at the floor: rounding; above it: depends


def test_transform_directions():
    x = torch.zeros(4, 2, dtype=F64)
    assert jacobian_rule.transform_direction(aten._fft_r2c.default, (x, [0], 0, True), {}) == "forward"
    assert jacobian_rule.transform_direction(aten._fft_c2r.default, (x, [0], 0, 4), {}) == "inverse"
    assert jacobian_rule.transform_direction(aten._fft_c2c.default, (x, [0], 0, False), {}) == "inverse"
    assert jacobian_rule.transform_direction(aten._fft_c2c.default, (x, [0], 0), {"forward": True}) == "forward"
    assert jacobian_rule.transform_direction(aten._fft_c2c.default, (x, [0], 0), {}) == "forward"
    assert jacobian_rule.transform_direction(aten.mm.default, (), {}) is None


@pytest.mark.parametrize("T, seed", [(4, 0), (7, 1)])
def test_an_fft_convolution_padded_to_2T_reads_causal(T, seed):
    """Hyena's long convolution: rfft to 2T, a product of spectra, irfft, the first T rows. Each transform is
    all-to-all; the convolution theorem, read by value, gives causal dependence — as the Jacobian does."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, 2, generator=g, dtype=F64)
    kernel = torch.randn(T, 2, generator=g, dtype=F64)

    def layer(x):
        spectrum = torch.fft.rfft(x, n=2 * T, dim=0) * torch.fft.rfft(kernel, n=2 * T, dim=0)
        return torch.fft.irfft(spectrum, n=2 * T, dim=0)[:T]

    paths = measure_paths(layer, x)
    assert paths.exact and paths.fallbacks == {}
    assert paths.products == tuple(tuple(2 if j >= i else None for j in range(T)) for i in range(T))
    assert traced(paths) == dependence(layer, x)


def test_a_circular_convolution_reaches_every_position():
    T = 5
    g = torch.Generator().manual_seed(2)
    x = torch.randn(T, 2, generator=g, dtype=F64)
    kernel = torch.randn(T, 2, generator=g, dtype=F64)

    def layer(x):  # no padding: the convolution wraps around
        return torch.fft.irfft(torch.fft.rfft(x, dim=0) * torch.fft.rfft(kernel, dim=0), n=T, dim=0)

    paths = measure_paths(layer, x)
    assert paths.products == ((2,) * T,) * T
    assert traced(paths) == dependence(layer, x)


def test_a_kernel_with_zeros_cuts_exactly_where_the_convolution_theorem_says():
    """A kernel that is 0 past lag 1: y_j reads x_j and x_{j-1} only, though every transform is all-to-all."""
    T = 6
    x = torch.randn(T, 1, generator=torch.Generator().manual_seed(3), dtype=F64)
    kernel = torch.zeros(T, 1, dtype=F64)
    kernel[0], kernel[1] = 0.5, -2.0

    def layer(x):
        spectrum = torch.fft.rfft(x, n=2 * T, dim=0) * torch.fft.rfft(kernel, n=2 * T, dim=0)
        return torch.fft.irfft(spectrum, n=2 * T, dim=0)[:T]

    paths = measure_paths(layer, x)
    assert paths.products == tuple(tuple(2 if j in (i, i + 1) else None for j in range(T)) for i in range(T))
    assert traced(paths) == dependence(layer, x)
