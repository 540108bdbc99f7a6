"""seqlab.scopes: work at the lesson's scope and at layer scope, and the layer-scope crossover (L5–L7).

Every expected count sits next to its hand arithmetic; the crossover is checked by the two counts it equates.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.scopes import GATES, SCOPES, ScopedWork, layer_crossover_length, scoped_work


def test_the_scopes_and_gates_are_the_lessons():
    assert SCOPES == ("lesson", "layer", "kernels")
    assert GATES == {"rnn": 1, "gru": 3, "lstm": 4}


def test_scoped_work_counts_by_hand_at_unequal_widths():
    # T = 10, d_model = 8, d_h = 6, d_k = 4, d_v = 2
    lesson, layer, bare = scoped_work(10, 8, 6, 4, 2)
    assert (lesson.scope, layer.scope, bare.scope) == ("lesson", "layer", "layer_without_output")
    assert lesson.recurrence == 840  # 10 (6² + 6·8) = 10 · 84
    assert lesson.attention == 600  # 10² (4 + 2)
    assert layer.recurrence == bare.recurrence == 840  # rnn: one gate
    assert bare.attention == 1_400  # 10·8·(2·4 + 2) + 600 = 800 + 600
    assert layer.attention == 1_560  # 1,400 + 10·2·8 for W_O
    assert lesson.ratio == Fraction(600, 840) == Fraction(5, 7)
    assert layer.ratio == Fraction(1_560, 840) and bare.ratio == Fraction(1_400, 840)
    assert lesson.crossover == Fraction(84, 6) == 14  # d_h (d_h + d_model) / (d_k + d_v)
    assert not lesson.attention_costs_more and layer.attention_costs_more and bare.attention_costs_more


@pytest.mark.parametrize("cell, gates", [("rnn", 1), ("gru", 3), ("lstm", 4)])
def test_the_layer_scope_charges_every_gate(cell, gates):
    lesson, layer, bare = scoped_work(5, 3, 2, 2, 2, cell=cell)
    assert lesson.recurrence == 50  # 5 (2² + 2·3): the lesson's scope has one gate whatever the cell
    assert layer.recurrence == bare.recurrence == gates * 50
    assert layer.recurrence == cost.gated_recurrence_multiplications(5, 3, 2, cell)


@pytest.mark.parametrize("T, d", [(1, 1), (50, 512), (512, 512), (1000, 64), (7, 3)])
def test_with_equal_widths_the_layer_ratio_is_two_plus_T_over_d(T, d):
    lesson, layer, bare = scoped_work(T, d, d, d, d)
    assert lesson.ratio == Fraction(T, d)  # T²·2d / (T·2d²)
    assert layer.ratio == 2 + Fraction(T, d)
    assert bare.ratio == Fraction(3, 2) + Fraction(T, d)
    assert layer.crossover is None and bare.crossover is None  # attention costs more at every T at layer scope
    assert layer.attention_costs_more and bare.attention_costs_more
    assert lesson.crossover == d  # the lesson's crossover T = d
    assert lesson.attention_costs_more == (T > d)


def test_attention_costs_more_is_strict_at_the_lessons_crossover():
    lesson = scoped_work(512, 512, 512, 512, 512)[0]
    assert lesson.attention == lesson.recurrence == 268_435_456  # 512² · 1,024 = 512 (512² + 512²)
    assert lesson.ratio == 1 and not lesson.attention_costs_more
    assert scoped_work(513, 512, 512, 512, 512)[0].attention_costs_more


def test_layer_crossover_from_the_docstring_and_by_the_counts_it_equates():
    T = layer_crossover_length(64, 512, 64, 64)
    assert T == Fraction(2_176)  # (512·576 − 64·64·4) / 128 = (294,912 − 16,384) / 128
    T = int(T)
    assert (cost.attention_layer_multiplications(T, 64, 64, 64)
            == cost.gated_recurrence_multiplications(T, 64, 512))  # both 641,728,512 at T = 2,176
    assert cost.attention_layer_multiplications(T + 1, 64, 64, 64) > cost.gated_recurrence_multiplications(T + 1, 64, 512)
    assert cost.attention_layer_multiplications(T - 1, 64, 64, 64) < cost.gated_recurrence_multiplications(T - 1, 64, 512)


def test_layer_crossover_boundary_when_the_per_row_costs_are_equal():
    # d_model = d_h = 4, d_k = d_v = 2: recurrence per row c = 4² + 4·4 = 32; attention per row b = 4·(2·2 + 2) + 2·4 = 32
    assert layer_crossover_length(4, 4, 2, 2) is None  # c == b: they meet only at T = 0
    # d_v = 1: b = 4·(4 + 1) + 1·4 = 24 < 32, a = 2 + 1 = 3 → T = (32 − 24) / 3
    assert layer_crossover_length(4, 4, 2, 1) == Fraction(8, 3)
    # without W_O: b = 4·6 = 24, a = 4 → T = 8 / 4 = 2, and the counts agree there
    assert layer_crossover_length(4, 4, 2, 2, output_projection=False) == 2
    assert cost.attention_layer_multiplications(2, 4, 2, 2, False) == cost.gated_recurrence_multiplications(2, 4, 4) == 64


def test_layer_crossover_moves_with_the_gates():
    # lstm: c = 4 · 32 = 128, b = 32, a = 4 → T = 24
    assert layer_crossover_length(4, 4, 2, 2, cell="lstm") == 24
    assert layer_crossover_length(4, 4, 2, 2, cell="gru") == 16  # (96 − 32) / 4


def test_scoped_work_is_frozen():
    work = scoped_work(3, 2, 2, 2, 2)[0]
    assert isinstance(work, ScopedWork)
    with pytest.raises(AttributeError):
        work.attention = 0  # type: ignore[misc]


@pytest.mark.parametrize("T", [0, -1, 2.0, True, "4"])
def test_a_bad_length_is_refused_with_its_value(T):
    with pytest.raises(SeqlabError, match="T must be an integer") as error:
        scoped_work(T, 4, 4, 4, 4)
    assert error.value.parameter == "T"


def test_an_unknown_cell_is_refused():
    with pytest.raises(SeqlabError):
        scoped_work(4, 4, 4, 4, 4, cell="transformer")
    with pytest.raises(SeqlabError):
        layer_crossover_length(4, 4, 4, 4, cell="transformer")


def test_a_bad_width_is_refused():
    with pytest.raises(SeqlabError):
        layer_crossover_length(0, 4, 4, 4)
