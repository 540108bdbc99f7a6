"""seqlab.measure.reach_guards: the copies go along the module's own batch dim, a layout that contradicts the
output is refused (at the bound, not past it), and forward-mode rows equal the float64 Jacobian's blocks."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.measure.reach_guards import batch_dim, check_layout, forward_rows

F64 = torch.float64


def test_batch_dim_follows_the_modules_own_flag():
    assert batch_dim(nn.RNN(2, 2)) == 1
    assert batch_dim(nn.RNN(2, 2, batch_first=True)) == 0
    assert batch_dim(nn.Linear(2, 2)) == 0
    assert batch_dim(lambda x: x) == 0


def allowed(alone: torch.Tensor) -> float:
    """The tolerance of check_layout: 64 eps · max(1, |y|) · sqrt(T)."""
    return 64 * torch.finfo(alone.dtype).eps * max(1.0, float(alone.abs().max())) * math.sqrt(alone.shape[0])


def test_equal_outputs_pass_and_the_bound_itself_passes():
    alone = torch.arange(12, dtype=F64).reshape(4, 3)  # |y| ≤ 11, T = 4
    check_layout(nn.Identity(), alone.clone(), alone)
    edge = alone.clone()
    edge[0, 0] += allowed(alone) * 0.999  # within the bound
    check_layout(nn.Identity(), edge, alone)


def test_a_gap_past_the_bound_at_both_ends_is_refused():
    alone = torch.arange(12, dtype=F64).reshape(4, 3)
    wrong = alone.clone()
    wrong[0, 0] += 2 * allowed(alone)
    wrong[-1, 0] += 2 * allowed(alone)
    with pytest.raises(SeqlabError, match=r"batched=True needs a layer .* Identity's output on x replicated along "
                                          r"dim 0 differs"):
        check_layout(nn.Identity(), wrong, alone)


def test_the_gap_is_the_smaller_of_the_two_ends():
    """A chaotic recurrence drifts at one end only: a gap at the start alone (or the end alone) is not refused."""
    alone = torch.zeros(6, 2, dtype=F64)
    start_only = alone.clone()
    start_only[0] = 1.0
    check_layout(nn.Identity(), start_only, alone)
    end_only = alone.clone()
    end_only[-1] = 1.0
    check_layout(nn.Identity(), end_only, alone)
    middle = alone.clone()
    middle[2:4] = 1.0  # the middle is never compared
    check_layout(nn.Identity(), middle, alone)


def test_nan_must_sit_at_the_same_places():
    alone = torch.ones(4, 2, dtype=F64)
    alone[1, 0] = float("nan")
    check_layout(nn.Identity(), alone.clone(), alone)
    moved = torch.ones(4, 2, dtype=F64)
    moved[2, 0] = float("nan")
    with pytest.raises(SeqlabError, match="differs from its output on x alone"):
        check_layout(nn.Identity(), moved, alone)


def test_a_sequence_first_rnn_fed_copies_on_the_wrong_dim_is_refused():
    torch.manual_seed(0)
    rnn = nn.RNN(3, 4).double()
    x = torch.randn(5, 3, dtype=F64)
    with torch.no_grad():
        alone = rnn(x)[0]
        wrong = rnn(x.expand(2, 5, 3))[0][0]  # (R, T, d) read as (T, B, d): every position starts from zero
        right = rnn(x[:, None].expand(5, 2, 3))[0][:, 0]  # along its own batch dim (1)
    check_layout(rnn, right, alone)
    with pytest.raises(SeqlabError, match="along dim 1"):
        check_layout(rnn, wrong, alone)


def jacobian_blocks(layer, x, p):
    """||∂y_p/∂x_i||_F for each i, from the float64 Jacobian (the second route)."""
    J = torch.autograd.functional.jacobian(lambda z: layer(z)[p], x)  # (d_out, T, d_in)
    return J.pow(2).sum(dim=(0, 2)).sqrt()


@pytest.mark.parametrize("p", [0, 3, 4])
def test_exact_forward_rows_are_the_jacobians_blocks(p):
    torch.manual_seed(1)
    rnn = nn.RNN(3, 2).double()
    layer = lambda z: rnn(z)[0]
    x = torch.randn(5, 3, dtype=F64)
    rows = forward_rows(layer, x, p, probes=None, seed=0)
    assert rows.shape == (5 * 3, 5, 1)
    per_position = rows[..., 0].pow(2).sum(dim=0).sqrt()  # Σ over the d_in tangents of each position
    torch.testing.assert_close(per_position, jacobian_blocks(layer, x, p), rtol=1e-12, atol=1e-15)
    assert bool((per_position[p + 1:] == 0).all())  # the future does not reach y_p, exactly


def test_probe_rows_sit_at_their_positions_and_see_no_future():
    torch.manual_seed(2)
    rnn = nn.RNN(3, 2).double()
    x = torch.randn(4, 3, dtype=F64)
    rows = forward_rows(lambda z: rnn(z)[0], x, 1, probes=3, seed=7)
    assert rows.shape == (3 * 4, 4, 1)
    nonzero = rows[..., 0] != 0
    for n in range(12):  # tangent n sits at position n // 3 alone
        assert nonzero[n].tolist() == [i == n // 3 and i <= 1 for i in range(4)]
    again = forward_rows(lambda z: rnn(z)[0], x, 1, probes=3, seed=7)
    assert torch.equal(rows, again)  # seeded
