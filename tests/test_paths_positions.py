"""Position-level path distances (issue 17): used where an op proves them, exact everywhere.

The tracer keeps one distance per (source, position) where the value written is uniform along the
features by layout, and expands a storage to elements when a view crosses positions or a write makes a
row's features differ. Every answer must equal the float64 reference tracer's (tests/reference_paths.py).
"""

from __future__ import annotations

import pytest
import reference_paths
import test_paths_representation as representation
import torch

from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure import distances, paths
from seqlab.measure.distances import seed
from seqlab.measure.path_tracer import PathTracer
from seqlab.measure.paths import measure_paths, path_batches

T, D = 6, 8


def _g() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.fixture
def row_form_everywhere(monkeypatch):
    """Every uniform tensor in the row form, however few its distances (the floor at 0): the row rules are then
    exercised at these small sizes, where the default floor would hand them the element rules."""
    monkeypatch.setattr(distances, "ROW_FORM_MIN", 0)


@pytest.fixture
def positions(monkeypatch, row_form_everywhere):
    """Every pass at position level (the module default may be either), every uniform tensor in the row form."""
    monkeypatch.setattr(paths, "POSITIONS", True)


@pytest.mark.parametrize("name", sorted(representation.CASES))
def test_every_shipped_layer_at_position_level_equals_the_reference(positions, name):
    representation.test_new_tracer_equals_the_reference(name)


@pytest.mark.parametrize("name", sorted(representation.CASES))
def test_every_shipped_layer_per_element_and_at_the_default_floor_equals_the_reference(monkeypatch, name):
    """The two other regimes a user can get: every distance per element (positions=False), and the default (position
    level, the row form only for distances of at least ROW_FORM_MIN entries, the element rules below it)."""
    monkeypatch.setattr(paths, "POSITIONS", False)
    representation.test_new_tracer_equals_the_reference(name)
    monkeypatch.setattr(paths, "POSITIONS", None)
    monkeypatch.setattr(distances, "ROW_FORM_MIN", 2**8)  # a floor these small cases fall on both sides of
    representation.test_new_tracer_equals_the_reference(name)


def test_nested_tensors_stacks_and_undefined_rows_at_position_level(positions):
    representation.test_transformer_encoder_with_nested_tensors_equals_the_reference()
    representation.test_every_output_of_a_stack_equals_the_reference()
    representation.test_an_undefined_row_is_the_same()


def _traced(layer, x: torch.Tensor, sources: tuple[int, ...]) -> tuple[PathTracer, torch.Tensor]:
    """Trace one pass at position level; the tracer (its store) and the output."""
    tracer = PathTracer(len(sources), budget_bytes=1e9, positions=True)
    copy = x.clone()
    tracer.store.write(copy, seed(copy, sources, 2))
    with torch.no_grad(), tracer:
        y = layer(copy)
    return tracer, y


def _per_position(tracer: PathTracer, y: torch.Tensor) -> bool:
    return y.untyped_storage().data_ptr() in tracer.store.features


def test_an_elman_pass_holds_d_times_fewer_bytes(row_form_everywhere):
    """Every tensor of an Elman pass is a row-wise matmul, a sum, a tanh or a stack: one distance per position.
    T = 64, d = 64, sources 0 and 63: the same 447 rows of 64 elements, held as 447 distances per unit and
    source instead of 447 x 64 (7 per step, less the zero initial state and W_hh h_0: constants, which hold no
    distances)."""
    rnn = ElmanRNN(64, 64, generator=_g()).eval()
    x = torch.randn(1, 64, 64, generator=_g())
    element, position = (next(path_batches(rnn, x, (0, 63), lambda r: [r], positions=p)) for p in (False, True))
    assert element.stored_bytes == 447 * 64 * 2 * 2 * 4  # rows x d x units x sources x int32 bytes = 457,728
    assert position.stored_bytes == 447 * 2 * 2 * 4  # = 7,152: d = 64 times fewer
    assert (position.products, position.ops) == (element.products, element.ops)
    tracer, y = _traced(rnn, x, (0, 63))
    assert _per_position(tracer, y) and tracer.store.expansions == 0


class _Across(torch.nn.Module):
    """A view across the position axis: positions and features swapped, mixed, swapped back."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(D, D, generator=_g()))
        self.mix = torch.nn.Parameter(torch.randn(T, T, generator=_g()).tril())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x @ self.w  # (1, T, D): per position
        return (h.transpose(-2, -1) @ self.mix.T).transpose(-2, -1)  # (1, T, D): a causal mix of positions


class _Cut(torch.nn.Module):
    """A mask with exact zeros in some features, then a per-feature reduction across positions."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(D, D, generator=_g()))
        mask = torch.ones(T, D)
        mask[2, : D // 2] = 0.0  # position 2 keeps only its last D/2 features
        self.register_buffer("mask", mask)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cut = (x @ self.w) * self.mask  # (1, T, D): row 2 no longer uniform
        return cut.cumsum(dim=-2)  # each feature sums over positions: the cut features skip position 2


@pytest.mark.parametrize("module", [_Across, _Cut])
def test_each_fallback_expands_and_keeps_the_reference_answer(module):
    layer = module().eval()
    x = torch.randn(1, T, D, generator=_g())
    new = measure_paths(layer, x, positions=True)
    representation._same(new, reference_paths.measure_paths(layer, x))
    tracer, y = _traced(layer, x, tuple(range(T)))
    assert not _per_position(tracer, y)  # the output needed element level


def test_a_view_across_positions_expands_the_storage(row_form_everywhere):
    tracer, _ = _traced(_Across().eval(), torch.randn(1, T, D, generator=_g()), (0,))
    assert tracer.store.expansions == 1  # h, read through its transpose


def test_the_cut_is_seen_at_position_level():
    """Source 2 reaches position 2 only through the kept features, and later positions through all of them:
    the cut must not be lost to a row's single distance (products: x @ w is 1, the cumsum adds none)."""
    layer = _Cut().eval()
    new = measure_paths(layer, torch.randn(1, T, D, generator=_g()), sources=(2,), positions=True)
    assert new.row(2) == (None, None, 1, 1, 1, 1)
    assert new.row(2, "ops") == (None, None, 3, 3, 3, 3)  # matmul, multiply by the mask, cumsum


def test_a_wrong_row_rule_would_be_seen(monkeypatch):
    """The comparison can fail: a step that forgets the product on the row form changes the matrices."""
    from seqlab.measure import path_tracer

    real = path_tracer.PathTracer.step_product
    monkeypatch.setattr(path_tracer.PathTracer, "step_product",
                        staticmethod(lambda d: d if d.stride(-1) == 0 else real(d)))
    layer, x = representation.CASES["elman"]
    with pytest.raises(AssertionError):
        representation._same(measure_paths(layer, x, positions=True), reference_paths.measure_paths(layer, x))
