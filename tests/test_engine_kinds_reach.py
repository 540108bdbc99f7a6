"""Issue 13 in the reach (seqlab.measure.reach): kind 1 (NaN), kind 2 (rounding beside exact zeros), kind 11 (layout).

Each with the issue's input and a second of its kind; each verdict also fed a wrong measurement.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from seqlab.errors import SeqlabError

from issue13_inputs import NEG, issue_attention, seeded_generator


def test_reach_flags_the_nan_row_and_measures_the_others_in_forward_mode():
    from seqlab.measure.reach import measure_reach
    attention, mask = issue_attention()
    layer = lambda rows: attention(rows[None], rows[None], rows[None], attn_mask=mask)[0][0]  # noqa: E731
    x = torch.randn(3, 4, dtype=torch.float64, generator=seeded_generator())
    nan_row = measure_reach(layer, x, position=2)
    assert nan_row.undefined == 3 and all(n != n for n in nan_row.norms)
    first = measure_reach(layer, x, position=0)  # finite, but the backward is poisoned by row 2
    assert first.backward == "forward" and first.undefined == 0
    assert first.norms[0] > 0.0 and first.norms[1:] == (0.0, 0.0)
    second = measure_reach(layer, x, position=1)
    assert second.norms[0] > 0.0 and second.norms[1] > 0.0 and second.norms[2] == 0.0


def test_reach_of_a_strictly_causal_attention_whose_first_row_is_nan():
    from seqlab.measure.reach import measure_reach

    def attend(x: torch.Tensor) -> torch.Tensor:  # row j reads keys i < j: row 0 has none (NaN)
        scores = (x @ x.T).masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(-1), NEG)  # (T, T)
        return scores.softmax(dim=-1) @ x

    x = torch.randn(4, 3, dtype=torch.float64, generator=seeded_generator(1))
    assert measure_reach(attend, x, position=0).undefined == 4
    last = measure_reach(attend, x, position=3)
    assert last.backward == "forward" and last.undefined == 0 and all(n > 0.0 for n in last.norms)
    one_key = measure_reach(attend, x, position=1)  # one open key: y_1 = x_0, whatever q_1 is
    assert one_key.norms[0] > 0.0 and one_key.norms[1:] == (0.0, 0.0, 0.0)


def test_reach_forward_mode_agrees_with_the_backward_where_both_work():
    from seqlab.measure import reach, reach_guards
    torch.manual_seed(0)
    rnn = nn.RNN(3, 4).double()
    x = torch.randn(5, 3, dtype=torch.float64, generator=seeded_generator())
    backward = reach.measure_reach(rnn, x)
    rows = reach_guards.forward_rows(rnn, x, 4, None, 0)  # exact, by forward mode
    assert reach._block_norms(rows, mean=False).tolist() == pytest.approx(backward.norms, rel=1e-12)


@pytest.mark.parametrize("cell", [nn.RNN, nn.GRU], ids=["rnn", "gru"])
def test_reach_uses_the_module_s_own_batch_first(cell):
    """The issue: a sequence-first nn.RNN with batched=True read the copies as positions (0.0 at 7 of 8)."""
    from seqlab.measure.reach import measure_reach
    torch.manual_seed(0)
    module = cell(3, 4).double()
    x = torch.randn(8, 3, dtype=torch.float64, generator=seeded_generator())
    batched, alone = measure_reach(module, x, batched=True), measure_reach(module, x)
    assert batched.zeros == 0 and batched.norms == pytest.approx(alone.norms, rel=1e-9)
    with pytest.raises(SeqlabError, match="batched=True needs a layer"):  # the layout hidden behind a lambda
        measure_reach(lambda rows: module(rows)[0], x, batched=True)


def test_reach_reports_rounding_beside_exact_zeros(monkeypatch):
    from seqlab.measure import reach
    monkeypatch.setattr(reach, "_block_norms", lambda g, mean: torch.tensor([4.0, 3.8e-16, 0.0], dtype=torch.float64))
    result = reach.measure_reach(lambda rows: rows * 2, torch.randn(3, 2, dtype=torch.float64))
    assert (result.zeros, result.rounding, result.undefined) == (1, 1, 0)


def test_a_chaotic_batch_first_recurrence_is_not_mistaken_for_a_layout_error():
    """Radius 3: batched and single kernels round differently and the chain amplifies it by the end of
    the sequence; the layout check compares the ends of the sequence where no long chain has run yet."""
    from seqlab.measure.reach import measure_reach
    torch.manual_seed(0)
    rnn = nn.RNN(16, 16, batch_first=True).double()
    with torch.no_grad():
        rnn.weight_hh_l0.mul_(3.0 / torch.linalg.eigvals(rnn.weight_hh_l0).abs().max())
    x = torch.randn(256, 16, dtype=torch.float64, generator=seeded_generator())
    result = measure_reach(lambda rows: rnn(rows)[0], x, batched=True, probes=4)
    assert result.undefined == 0 and len(result.norms) == 256
