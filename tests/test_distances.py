"""seqlab.measure.distances: int32 path distances, the UNREACHABLE sentinel and the min-plus building blocks.

Each block is checked by exact values and boundaries (a value at or above the sentinel reads unreachable; an
empty reduction is unreachable), and the row form by agreement with the element form it stands for.
"""

from __future__ import annotations

import torch

from seqlab.measure import distances
from seqlab.measure.distances import (
    DTYPE,
    ITEMSIZE,
    UNITS,
    UNREACHABLE,
    align,
    broadcast_min,
    everything,
    least,
    narrow,
    row_form,
    rows_of,
    seed,
    to_lengths,
    unreachable,
    widen,
)

U = UNREACHABLE


def t(values):
    return torch.tensor(values, dtype=DTYPE)


def test_the_constants():
    assert U == 2**30 == 1_073_741_824
    assert DTYPE == torch.int32 and ITEMSIZE == torch.tensor(0, dtype=DTYPE).element_size() == 4
    assert UNITS == ("products", "ops")
    assert U + (2**30 - 1) == torch.iinfo(DTYPE).max  # any step count below 2^30 added to the sentinel stays in int32


def test_unreachable():
    d = unreachable(2, (3, 1))
    assert d.shape == (2, 3, 1) and d.dtype == DTYPE and bool((d == U).all())


def test_least_reduces_and_an_empty_dim_is_unreachable():
    d = t([[[4, 2], [7, 9]]])
    assert least(d, -1).tolist() == [[2, 7]]
    assert least(d, (1, 2)).tolist() == [2]
    assert least(d, -2, keepdim=True).tolist() == [[[4, 2]]]
    empty = torch.zeros(2, 3, 0, dtype=DTYPE)
    assert least(empty, -1).tolist() == [[U] * 3] * 2
    assert least(empty, -1, keepdim=True).shape == (2, 3, 1)
    assert least(empty, (1, 2)).tolist() == [U, U]


def test_rows_of_reads_the_layout_never_the_values():
    one = t([[[3], [5]]])
    assert rows_of(one) is one
    expanded = one.expand(1, 2, 4)
    assert rows_of(expanded).tolist() == [[[3], [5]]]
    equal_values = t([[[3, 3], [5, 5]]])  # the same values, but stored apart: not proven
    assert rows_of(equal_values) is None
    assert rows_of(None) is None and rows_of(t([1, 2])) is None


def test_narrow_only_inside_a_position_level_pass(monkeypatch):
    monkeypatch.setattr(distances, "ROW_FORM_MIN", 0)  # the row form however few the distances
    expanded = t([[[3], [5]]]).expand(1, 2, 4)
    assert narrow(expanded) is None
    with row_form():
        assert narrow(expanded).shape == (1, 2, 1)
        with row_form(False):
            assert narrow(expanded) is None
        assert narrow(expanded) is not None  # restored on leaving the inner block
    assert narrow(expanded) is None


def test_the_row_form_starts_at_its_floor_and_not_one_entry_below():
    """A rule takes the row form for a distance of ROW_FORM_MIN entries or more, the element rules below (exact
    either way: both give the same numbers)."""
    floor = distances.ROW_FORM_MIN
    at = t([[[3], [5]]]).expand(1, 2, floor // 2)  # 2 positions x floor / 2 features: floor entries
    below = t([[[3], [5]]]).expand(1, 2, floor // 2 - 1)  # two entries fewer: under the floor
    with row_form():
        assert narrow(at).shape == (1, 2, 1)
        assert narrow(below) is None
        assert narrow(t([[[3]]]).expand(1, 1, floor - 1)) is None  # one entry below
        assert narrow(t([[[3]]]).expand(1, 1, floor)).shape == (1, 1, 1)
        other, other_below = (t([[[4], [2]]]).expand(1, 2, n) for n in (floor // 2, floor // 2 - 1))
        rows = broadcast_min([at, other], (2, floor // 2), 1)
        elements = broadcast_min([below, other_below], (2, floor // 2 - 1), 1)
    assert rows.stride(-1) == 0 and rows[0, :, 0].tolist() == [3, 2]  # computed on the rows, widened
    assert elements.stride(-1) == 1 and elements[0, :, 0].tolist() == [3, 2]  # computed per element


def test_align_broadcasts_the_trailing_dims_as_views():
    d = t([[1, 2, 3]])
    aligned = align(d, (2, 3))
    assert aligned.tolist() == [[[1, 2, 3], [1, 2, 3]]]
    assert aligned.data_ptr() == d.data_ptr()  # a view
    assert align(d, (3,)) is d
    assert widen(t([[[4], [6]]]), (2, 3)).tolist() == [[[4, 4, 4], [6, 6, 6]]]


def test_broadcast_min():
    a, b = t([[1, 5]]), t([[3]])
    assert broadcast_min([a, None, b], (2,), 1).tolist() == [[1, 3]]
    assert broadcast_min([None, None], (2,), 1) is None
    assert broadcast_min([b], (2,), 1).tolist() == [[3, 3]]


def test_broadcast_min_on_the_row_form_equals_the_element_form(monkeypatch):
    monkeypatch.setattr(distances, "ROW_FORM_MIN", 0)  # the row form however few the distances
    a = t([[[2], [9]], [[U], [1]]]).expand(2, 2, 3)
    b = t([[[4], [4]], [[0], [U]]]).expand(2, 2, 3)
    element = broadcast_min([a, b], (2, 3), 2)
    with row_form():
        rows = broadcast_min([a, b], (2, 3), 2)
    assert rows.tolist() == element.tolist() == [[[2] * 3, [4] * 3], [[0] * 3, [1] * 3]]
    assert rows.stride(-1) == 0  # kept as rows
    with row_form():  # one input not uniform along the features: the element form
        mixed = broadcast_min([a, t([[[0, 5, 5], [5, 5, 5]], [[5] * 3, [5] * 3]])], (2, 3), 2)
    assert mixed.tolist() == [[[0, 2, 2], [5, 5, 5]], [[5] * 3, [1] * 3]]


def test_everything_takes_the_least_of_all_inputs_per_source():
    assert everything([t([[4, 2], [7, 9]])], (3,), 2).tolist() == [[2, 2, 2], [7, 7, 7]]
    assert everything([t([[4, 2], [7, 9]]), t([[5], [3]])], (1,), 2).tolist() == [[2], [3]]
    assert everything([None, torch.zeros(2, 0, dtype=DTYPE)], (3,), 2) is None


def test_to_lengths_and_the_sentinel_boundary():
    d = t([[[3, 1], [U, U]], [[U + 5, U], [U - 1, 8]]])  # (S = 2, T_out = 2, d = 2)
    assert to_lengths(d, 2, 2) == ((1, None), (None, 8))  # at or above U: unreachable; U - 1 is a distance
    assert to_lengths(t([[[U - 1], [U]]]), 1, 2) == ((U - 1, None),)
    assert to_lengths(d, 2, 2, undefined=(1,)) == ((1, None), (None, None))
    assert to_lengths(None, 2, 3) == ((None, None, None),) * 2


def test_to_lengths_reads_a_row_form_as_its_elements():
    rows = t([[[2], [U]]]).expand(1, 2, 4)
    assert to_lengths(rows, 1, 2) == ((2, None),)


def test_to_lengths_with_a_batch():
    d = t([[[[U, 4], [U, U]], [[U, U], [6, 2]]]])  # (S = 1, B = 2, T_out = 2, d = 2)
    assert to_lengths(d, 1, 2) == ((4, 2),)  # least over the batch and the features


def test_seed_is_zero_at_each_source_position_for_each_unit():
    x = torch.zeros(2, 4, 3)  # (B, T, d)
    s = seed(x, (1, 3), units=2)
    assert s.shape == (4, 2, 4, 3)
    for row, source in enumerate((1, 3, 1, 3)):
        expected = [[[0 if j == source else U] * 3 for j in range(4)]] * 2
        assert s[row].tolist() == expected
    assert s.stride(-1) == 0  # one distance per position
