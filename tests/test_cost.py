"""Closed-form costs: the lesson's worked numbers, crossover, validation, counted work (L5–L9)."""

import inspect
import re
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.layers.attention import Attention
from seqlab.layers.recurrent import ElmanRNN

D = 512  # the paper's d_model


def test_l9_t50():
    assert cost.recurrence_multiplications(50, D, D) == 26_214_400  # 2 * 50 * 512**2
    assert cost.attention_multiplications(50, D, D) == 2_560_000  # 2 * 50**2 * 512
    assert cost.work_ratio(50, D, D, D, D) == Fraction(50, 512)  # about 0.098: ten times less
    assert cost.recurrence_sequential_steps(50) == 50
    assert cost.attention_sequential_products() == 2  # no mention of 50


def test_l9_t1000():
    assert cost.attention_multiplications(1000, D, D) == 1_024_000_000  # 2 * 1000**2 * 512
    assert cost.recurrence_multiplications(1000, D, D) == 524_288_000  # 2 * 1000 * 512**2
    assert cost.work_ratio(1000, D, D, D, D) == Fraction(1000, 512)  # about 1.95


def test_l9_t2000():
    ratio = cost.work_ratio(2000, D, D, D, D)
    assert ratio == Fraction(2000, 512) == Fraction(125, 32)
    assert float(ratio) == 3.90625  # the lesson rounds to 3.9
    assert cost.recurrence_sequential_steps(2000) == 2000


def test_results_are_exact_types():
    assert type(cost.recurrence_multiplications(3, 4, 5)) is int
    assert type(cost.attention_multiplications(3, 4, 5)) is int
    assert type(cost.work_ratio(3, 4, 5, 6, 7)) is Fraction
    assert type(cost.crossover_length(4, 5, 6, 7)) is Fraction


def test_small_counts_by_hand():
    assert cost.recurrence_multiplications(3, 4, 5) == 135  # 3 * (5*5 + 5*4)
    assert cost.attention_multiplications(3, 4, 5) == 81  # 3 * 3 * (4 + 5)
    assert cost.attention_multiplications(3, 4, 5, T_k=7) == 189  # 3 * 7 * (4 + 5)
    assert cost.projection_multiplications(3, 4, 5, 6) == 192  # 3 * 4 * (2*5 + 6)
    assert cost.projection_multiplications(50, D, D, D) == 39_321_600  # 3 * 50 * 512**2
    assert cost.flops(26_214_400) == 52_428_800  # 2 * 26_214_400
    assert cost.flops(0) == 0


def test_crossover_equal_widths_is_d():
    assert cost.crossover_length(D, D, D, D) == 512  # L12 question 2
    assert cost.first_length_attention_costs_more(D, D, D, D) == 513  # equal at 512, more after
    assert cost.attention_multiplications(512, D, D) == cost.recurrence_multiplications(512, D, D)


def test_crossover_unequal_widths():
    assert cost.crossover_length(256, 128, 64, 32) == 512  # 128 * (128 + 256) / (64 + 32)
    assert cost.crossover_length(3, 2, 2, 2) == Fraction(5, 2)  # 2 * 5 / 4
    assert cost.first_length_attention_costs_more(3, 2, 2, 2) == 3


@given(d_model=st.integers(1, 64), d_h=st.integers(1, 64), d_k=st.integers(1, 64),
       d_v=st.integers(1, 64))
def test_first_length_is_the_first_where_attention_costs_more(d_model, d_h, d_k, d_v):
    T = cost.first_length_attention_costs_more(d_model, d_h, d_k, d_v)
    assert (cost.attention_multiplications(T, d_k, d_v)
            > cost.recurrence_multiplications(T, d_model, d_h))
    if T > 1:
        assert (cost.attention_multiplications(T - 1, d_k, d_v)
                <= cost.recurrence_multiplications(T - 1, d_model, d_h))
    assert T - 1 <= cost.crossover_length(d_model, d_h, d_k, d_v) < T


@given(T=st.integers(1, 10_000), d=st.integers(1, 2048))
def test_ratio_is_t_over_d_with_equal_widths(T, d):
    assert cost.work_ratio(T, d, d, d, d) == Fraction(T, d)  # L7: 2 T^2 d / 2 T d^2


FUNCTIONS_WITH_SIZES = [
    (cost.recurrence_multiplications, 3),
    (cost.attention_multiplications, 3),
    (cost.projection_multiplications, 4),
    (cost.work_ratio, 5),
    (cost.crossover_length, 4),
    (cost.first_length_attention_costs_more, 4),
    (cost.recurrence_sequential_steps, 1),
]


@pytest.mark.parametrize(("function", "arity"), FUNCTIONS_WITH_SIZES)
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8", None])
@pytest.mark.parametrize("position", [0, -1])
def test_bad_sizes_raise(function, arity, bad, position):
    args = [8] * arity
    args[position] = bad
    with pytest.raises(SeqlabError, match="must be an integer"):
        function(*args)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_key_count_raises(bad):
    with pytest.raises(SeqlabError, match="T_k"):
        cost.attention_multiplications(4, 8, 8, T_k=bad)


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_flops_refuses_bad_counts(bad):
    with pytest.raises(SeqlabError, match="multiplications"):
        cost.flops(bad)


def test_table_lists_every_public_function():
    registry = {"closed_form", "closed_form_table", "closed_forms"}  # the registry's own functions
    public = {name for name, obj in inspect.getmembers(cost, inspect.isfunction)
              if obj.__module__ == cost.__name__ and not name.startswith("_")}
    own = {form.name: form.function for form in cost.closed_forms(cost.__name__)}
    assert set(own) == public - registry
    assert [form.name for form in cost.closed_forms()] == list(cost.CLOSED_FORMS)
    assert set(own) <= set(cost.__all__)
    for name, function in cost.CLOSED_FORMS.items():  # this module's and those of mixers' modules alike
        assert re.search(r"\(L\d|Source:", function.__doc__) or name == "flops", name  # cites its claim or source


def test_the_docstring_table_is_the_registry():
    """The module docstring's table is written from the registry: rerun ``closed_form_table()`` and paste it."""
    table = cost.closed_form_table()
    assert table in cost.__doc__, "cost.py's docstring table is stale: paste seqlab.cost.closed_form_table()"
    rows = table.splitlines()[3:-1]
    assert [row.split()[0] for row in rows] == [form.name for form in cost.closed_forms(cost.__name__)]
    assert rows[0].split("  ")[0] == "recurrence_multiplications" and rows[0].endswith("L5")


def test_a_closed_form_is_registered_once():
    def recurrence_multiplications(T: int) -> int:  # a second function of a registered name
        return T

    shipped = cost.CLOSED_FORMS["recurrence_multiplications"]
    with pytest.raises(SeqlabError, match="'recurrence_multiplications' is already registered"):
        cost.closed_form("T", "L5")(recurrence_multiplications)
    with pytest.raises(SeqlabError, match="needs its formula"):
        cost.closed_form(" ", "L5")
    assert cost.CLOSED_FORMS["recurrence_multiplications"] is shipped


def _counted_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize(("T", "d_model", "d_h"), [(1, 1, 1), (7, 5, 3), (12, 8, 16)])
def test_closed_form_matches_counted_recurrence(T, d_model, d_h):
    """Agreement of two routes: torch's flop counter on the explicit loop == L5 (bias excluded)."""
    rnn = ElmanRNN(d_model, d_h, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2, T, d_model)
    counted = _counted_flops(lambda: rnn(x))
    assert counted == 2 * cost.flops(cost.recurrence_multiplications(T, d_model, d_h))  # B = 2


@pytest.mark.parametrize(("T_q", "T_k", "d_k", "d_v"), [(1, 1, 1, 1), (5, 5, 8, 8), (3, 7, 4, 6)])
def test_closed_form_matches_counted_attention(T_q, T_k, d_k, d_v):
    """Counted Q K^T and A V == L6 (the 1/sqrt(d_k) scaling and the softmax are not products)."""
    q, k, v = torch.randn(T_q, d_k), torch.randn(T_k, d_k), torch.randn(T_k, d_v)
    counted = _counted_flops(lambda: Attention("scaled_dot")(q, k, v))
    assert counted == cost.flops(cost.attention_multiplications(T_q, d_k, d_v, T_k=T_k))


def test_a_closed_form_defined_in_another_module_joins_the_registry_not_this_docstring(monkeypatch):
    """A mixer's closed form may live beside its layer (contributing.md): it is registered and listed by
    closed_forms(), while cost.py's docstring table keeps this module's own."""
    monkeypatch.setattr(cost, "_CLOSED_FORMS", dict(cost._CLOSED_FORMS))
    monkeypatch.setattr(cost, "_FUNCTIONS", dict(cost._FUNCTIONS))

    def elsewhere_multiplications(T: int) -> int:
        return 3 * T

    elsewhere_multiplications.__module__ = "seqlab.layers.elsewhere"
    cost.closed_form("3 T", "test")(elsewhere_multiplications)
    assert cost.closed_forms("seqlab.layers.elsewhere")[0].function(5) == 15
    assert "elsewhere_multiplications" not in cost.closed_form_table()
    assert "elsewhere_multiplications" in cost.closed_form_table(None)
    with pytest.raises(SeqlabError, match="already registered"):
        cost.closed_form("3 T", "test")(elsewhere_multiplications)
