"""Crossover lengths at their edge: equal linear parts never cross (not "T = 0"), one multiplication more does.

Every crossover here solves a·T² + b·T = c·T for T = (c − b)/a, and has no answer at T ≥ 1 when c ≤ b.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from seqlab import cost, scopes
from seqlab.studies.compare_scopes import _crossover


@pytest.mark.parametrize("widths", [(1, 2, 1, 2), (1, 3, 3, 3)])  # (d_model, d_h, d_k, d_v) with b = c
def test_a_layer_whose_linear_parts_are_equal_never_crosses(widths):
    d_model, d_h, d_k, d_v = widths
    a = cost.attention_multiplications(1, d_k, d_v)
    b = scopes.attention_layer_multiplications(1, d_model, d_k, d_v) - a
    assert b == scopes.gated_recurrence_multiplications(1, d_model, d_h, "rnn")  # the edge itself
    assert scopes.layer_crossover_length(*widths) is None


@pytest.mark.parametrize(("b", "c", "expected"), [(6, 6, None), (6, 7, Fraction(1, 4)), (7, 6, None)])
def test_compare_crossover_at_the_edge(b, c, expected):
    """attention 4T² + bT against the recurrence's cT."""
    assert _crossover(lambda t: 4 * t * t + b * t, lambda t: c * t) == expected


def test_scored_crossover_at_equal_widths_is_the_width():
    assert cost.scored_crossover_length("scaled_dot", 3, 3, 3, 3) == Fraction(3, 1)
    assert cost.crossover_length(3, 3, 3, 3) == 3 and cost.first_length_attention_costs_more(3, 3, 3, 3) == 4
