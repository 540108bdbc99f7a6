"""seqlab.measure.path_rules: how one op moves path lengths — each value rule by exact matrices and by the float64
Jacobian of the layer (``tests/jacobian_oracle.py``), and the op predicates the tracer dispatches on.

T = 4 positions; ``x.roll(1, 0)`` sends x_i to row i + 1 (mod 4), so a rule's verdict shows as a moved entry.
"""

from __future__ import annotations

import pytest
import torch
from jacobian_oracle import dependence, traced

from seqlab.measure.path_rules import (
    accumulates,
    carries_derivative,
    is_inverse_transform,
    is_pointwise,
    is_reduction,
    may_accumulate,
    out_of_place,
)
from seqlab.measure.paths import measure_paths

F64 = torch.float64
T = 4
aten = torch.ops.aten
N = None


def x(seed: int = 0):
    return torch.randn(T, 3, generator=torch.Generator().manual_seed(seed), dtype=F64)


def column(*values):
    return torch.tensor(values, dtype=F64)[:, None]


def check(layer, inputs, products, ops=None):
    paths = measure_paths(layer, inputs)
    assert paths.products == products
    if ops is not None:
        assert paths.ops == ops
    assert paths.exact and paths.fallbacks == {}
    assert traced(paths) == dependence(layer, inputs)
    return paths


SHIFTED = ((N, 0, N, N), (N, N, 0, N), (N, N, N, 0), (0, N, N, N))  # x_i only at row i + 1


@pytest.mark.parametrize("seed", [0, 1])
def test_integers_booleans_and_piecewise_constant_floats_carry_no_dependence(seed):
    check(lambda x: torch.floor(x) + x.roll(1, 0), x(seed), SHIFTED)
    check(lambda x: torch.sign(x) * 2 + x.roll(1, 0), x(seed), SHIFTED)
    check(lambda x: (x > 0).to(F64) + x.roll(1, 0), x(seed), SHIFTED)


def test_a_constant_zero_factor_cuts_its_row():
    mask = column(1, 0, 1, 0)  # rows 1 and 3 multiplied by 0
    check(lambda x: x.roll(1, 0) * mask, x(), ((N, N, N, N), (N, N, 0, N), (N, N, N, N), (0, N, N, N)))


def test_a_zero_made_by_the_pass_cuts_as_well():
    check(lambda x: x.roll(1, 0) * (x.roll(2, 0) * 0), x(), ((N,) * 4,) * 4)


def test_a_zero_dividend_cuts_the_divisor():
    mask = column(1, 0, 1, 0)
    # (x_i · mask_i) / exp(x_{i-1}): row i reads x_i where mask_i ≠ 0, and x_{i-1} only where the dividend is not 0
    check(lambda x: (x * mask) / x.roll(1, 0).exp(), x(),
          ((0, N, N, N), (N, N, 0, N), (N, N, 0, N), (0, N, N, N)),
          ((2, N, N, N), (N, N, 2, N), (N, N, 2, N), (2, N, N, N)))


@pytest.mark.parametrize("op, shift", [(torch.exp, -float("inf")), (torch.sigmoid, -1e4)])
def test_an_output_zero_with_zero_derivative_depends_on_nothing(op, shift):
    """exp(−inf) = 0 and sigmoid(−1e4) = 0 in float64 (an underflow): row 1 depends on no source."""
    offset = column(0, shift, 0, 0)
    check(lambda x: op(x.roll(1, 0) + offset), x(), ((N, N, N, N), (N, N, 0, N), (N, N, N, 0), (0, N, N, N)))


def test_a_weight_above_zero_however_small_keeps_its_path():
    offset = column(0, -700, 0, 0)  # exp(−700 + x) ≈ 1e-304: tiny, not 0 (below the oracle's relative floor,
    paths = measure_paths(lambda x: torch.exp(x.roll(1, 0) + offset), x())  # so checked by value here)
    assert paths.products == SHIFTED and paths.exact
    assert bool((torch.exp(x().roll(1, 0) + offset)[1] > 0).all())


def test_a_sum_with_a_constant_infinity_keeps_the_infinity():
    """x_0 + inf is inf whatever x_0: no path (the Jacobian's formal 1 there is what the rule overrides, so the
    matrix is checked by hand and by value: perturbing x_0 leaves row 1 at inf)."""
    offset = column(0, float("inf"), 0, 0)
    paths = measure_paths(lambda x: x.roll(1, 0) + offset, x())
    assert paths.products == ((N, N, N, N), (N, N, 0, N), (N, N, N, 0), (0, N, N, N)) and paths.exact
    moved = x().clone()
    moved[0] += 1.0
    assert bool(((moved.roll(1, 0) + offset)[1] == (x().roll(1, 0) + offset)[1]).all())


def test_softmax_reads_its_whole_dim_and_one_open_key_is_a_constant_weight():
    check(lambda x: torch.softmax(x, 0), x(), ((0,) * 4,) * 4, ((1,) * 4,) * 4)
    closed = column(0, -float("inf"), -float("inf"), -float("inf"))
    check(lambda x: torch.softmax(x + closed, 0), x(), ((N,) * 4,) * 4)  # weights 1, 0, 0, 0 whatever x


def test_a_prefix_along_a_dim():
    check(lambda x: torch.cumsum(x, 0), x(), tuple(tuple(0 if j >= i else N for j in range(T)) for i in range(T)))


def test_an_extreme_depends_on_the_element_it_picks():
    values = torch.tensor([[1.0, 5.0], [2.0, 3.0], [0.0, 4.0], [3.0, 1.0]], dtype=F64)  # column maxima at rows 3, 0
    check(lambda x: torch.amax(x, 0, keepdim=True).expand(T, 2), values,
          ((0,) * 4, (N,) * 4, (N,) * 4, (0,) * 4))


def test_where_and_masked_fill_select_by_value():
    keep = column(1, 0, 1, 0).bool()
    check(lambda x: torch.where(keep, x, x.roll(1, 0)), x(), ((0, 0, N, N), (N,) * 4, (N, N, 0, 0), (N,) * 4))
    check(lambda x: x.roll(1, 0).masked_fill(keep, 0.0) + 0, x(), ((N, 0, N, N), (N,) * 4, (N, N, N, 0), (N,) * 4))


def test_an_accumulating_index_put():
    index = (torch.tensor([0, 0]),)
    check(lambda x: torch.zeros(T, 3, dtype=F64).index_put(index, x[1:3], accumulate=True), x(),
          ((N,) * 4, (0, N, N, N), (0, N, N, N), (N,) * 4))


# --- predicates ---------------------------------------------------------------------------------------------------

def test_out_of_place():
    assert out_of_place(aten.threshold_.default) is aten.threshold.default
    assert out_of_place(aten.masked_fill_.Scalar) is aten.masked_fill.Scalar
    assert out_of_place(aten.cumsum_.default) is aten.cumsum.default
    assert out_of_place(aten.threshold.default) is None
    assert out_of_place(aten.__iand__.Tensor) is None  # a dunder is not an in-place twin


def test_is_pointwise_reads_the_twins_tag():
    assert is_pointwise(aten.add.Tensor) and is_pointwise(aten.add_.Tensor) and is_pointwise(aten.threshold_.default)
    assert not is_pointwise(aten.mm.default) and not is_pointwise(aten.sum.default)


def test_carries_derivative():
    assert carries_derivative(torch.ones(2)) and carries_derivative(torch.ones(2, dtype=torch.complex64))
    assert not carries_derivative(torch.ones(2) > 0) and not carries_derivative(torch.arange(2))


@pytest.mark.parametrize("op, expected", [
    (aten.sum.dim_IntList, True), (aten._softmax.default, True), (aten.cumsum.default, True),
    (aten.cumsum_.default, True), (aten.native_layer_norm.default, True), (aten._fft_r2c.default, True),
    (aten.max.dim, True), (aten.max.other, False), (aten.add.Tensor, False), (aten.mm.default, False),
])
def test_is_reduction(op, expected):
    assert is_reduction(op) is expected


def test_accumulating_movement():
    values = torch.ones(2)
    assert may_accumulate(aten.index_put.default) and may_accumulate(aten.scatter.src)
    assert not may_accumulate(aten.index_select.default)
    assert accumulates(aten.index_put.default, (torch.zeros(4), (torch.tensor([0, 1]),), values, True), {})
    assert not accumulates(aten.index_put.default, (torch.zeros(4), (torch.tensor([0, 1]),), values, False), {})
    # two writes to one place: which lands is the kernel's choice, so it is not a pure move
    assert accumulates(aten.index_put.default, (torch.zeros(4), (torch.tensor([1, 1]),), values, False), {})
    assert not accumulates(aten.index_put.default, (torch.zeros(4), (torch.tensor([True, False, True, False]),),
                                                    values, False), {})
    src = torch.ones(4)
    assert not accumulates(aten.scatter.src, (torch.zeros(4), 0, torch.arange(4), src), {})
    assert accumulates(aten.scatter.reduce, (torch.zeros(4), 0, torch.arange(4), src), {"reduce": "add"})
    assert not accumulates(aten.index_select.default, (torch.zeros(4), 0, torch.arange(2)), {})


def test_inverse_transforms():
    signal = torch.zeros(4, 2, dtype=torch.complex128)
    assert is_inverse_transform(aten._fft_c2r.default, (signal, [0], 0, 4), {})
    assert is_inverse_transform(aten._fft_c2c.default, (signal, [0], 0, False), {})
    assert not is_inverse_transform(aten._fft_c2c.default, (signal, [0], 0, True), {})
    assert not is_inverse_transform(aten._fft_r2c.default, (signal.real, [0], 0, True), {})


# --- movement along named dims, run on the distances (issue 34, item 2) ---------------------------

class _AlongDims(torch.nn.Module):
    """One movement op of ``path_rules._ALONG_DIMS`` between two element-wise steps (x: (…, T, d))."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, inputs):
        y = inputs * 2
        kind, pos = self.kind, inputs.dim() - 2  # the positions, counted from the front
        if kind == "cat":
            moved = torch.cat([y[..., 1:, :], torch.ones_like(y[..., :1, :]), torch.empty(0, dtype=y.dtype)], pos)
        elif kind == "stack":
            moved = torch.stack([y, y.cumsum(pos)], -1).sum(-1)
        elif kind == "unsafe_split":
            moved = torch.cat(aten.unsafe_split.Tensor(y, 1, pos)[::-1], pos)
        elif kind == "split_with_sizes_copy":
            first, rest = aten.split_with_sizes_copy.default(y, [1, y.shape[pos] - 1], pos)
            moved = torch.cat([rest, first], pos)
        elif kind == "unbind_copy":
            moved = torch.stack(aten.unbind_copy.int(y, pos)[::-1], pos)
        elif kind == "index_select":
            moved = torch.index_select(y, pos, torch.tensor([3, 1, 1, 0]))
        elif kind == "flip":
            moved = torch.flip(y, (pos, -1))
        else:  # roll, and roll without dims (the flattened roll keeps the id route)
            moved = torch.roll(y, (1, 2), (pos, -1)) + torch.roll(y, 5)
        return torch.tanh(moved @ torch.ones(y.shape[-1], y.shape[-1], dtype=y.dtype))


def _route_and_ids(monkeypatch, layer, inputs, **options):
    """The path matrix with the along-dims route, the one by element ids, and how often the route answered."""
    from seqlab.measure import path_rules
    answered = []
    along = path_rules._along_dims

    def counted(*args):
        moved = along(*args)
        answered.append(moved is not None)
        return moved

    monkeypatch.setattr(path_rules, "_along_dims", counted)
    routed = measure_paths(layer, inputs, check=False, **options)
    monkeypatch.setattr(path_rules, "_ALONG_DIMS", {})
    by_ids = measure_paths(layer, inputs, check=False, **options)
    return routed, by_ids, sum(answered)


def _figures(paths):
    return paths.products, paths.ops, paths.fallbacks, paths.decomposed, paths.derived, paths.undefined


@pytest.mark.parametrize("kind", ["cat", "stack", "unsafe_split", "split_with_sizes_copy", "unbind_copy",
                                  "index_select", "flip", "roll"])
@pytest.mark.parametrize("shape, positions", [((T, 3), False), ((2, T, 3), True)])
def test_movement_along_dims_runs_on_distances_as_ids_would(monkeypatch, kind, shape, positions):
    layer = _AlongDims(kind)
    inputs = torch.randn(*shape, generator=torch.Generator().manual_seed(3), dtype=F64)
    routed, by_ids, answered = _route_and_ids(monkeypatch, layer, inputs, sources=None, positions=positions)
    assert answered >= 1
    assert _figures(routed) == _figures(by_ids)
    assert traced(routed) == dependence(layer, inputs)


@pytest.mark.parametrize("module", [torch.nn.GRU, torch.nn.LSTM])
def test_gated_recurrences_split_their_gates_on_distances(monkeypatch, module):
    layer = module(3, 3).double()
    inputs = torch.randn(6, 3, generator=torch.Generator().manual_seed(4), dtype=F64)
    sequence = lambda v: layer(v)[0]  # (T, d) -> (T, d)
    routed, by_ids, answered = _route_and_ids(monkeypatch, sequence, inputs, sources=None)
    assert answered >= 6 + 1  # one unsafe_split per step, one stack of the steps
    assert _figures(routed) == _figures(by_ids)
    assert traced(routed) == dependence(sequence, inputs)


def test_a_transformers_rotary_embedding_cats_on_distances(monkeypatch):
    pytest.importorskip("transformers")
    import hf_mixers
    model = hf_mixers.build("mistral")
    inputs = torch.randn(1, 5, hf_mixers.D_MODEL, generator=torch.Generator().manual_seed(5), dtype=F64)
    routed, by_ids, answered = _route_and_ids(monkeypatch, hf_mixers.last_hidden(model), inputs, sources=(0, 4))
    assert answered >= 2  # rotate_half's cat, on queries and keys
    assert _figures(routed) == _figures(by_ids)
