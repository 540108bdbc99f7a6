"""Which submodules mix positions, on a tiny hand-built network (seqlab.measure.modules, L11).

The network embeds 5 token ids, runs a self-attention block, a per-row feed-forward, a causal self-attention
block and a LayerNorm, all in float64 and eval mode; every submodule's pattern is known by construction.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.measure.mixing import dependency_matrix
from seqlab.measure.modules import (
    RecordedCall,
    measure_recorded,
    measure_submodules,
    record_inputs,
)

IDS = torch.tensor([[1, 4, 2, 7, 3]])  # (1, T = 5), vocabulary 11


class AttentionBlock(nn.Module):
    """x + self-attention(x), then LayerNorm; ``causal``: position j reads positions i <= j only."""

    def __init__(self, d: int, causal: bool = False):
        super().__init__()
        self.causal = causal
        self.attention = nn.MultiheadAttention(d, 2, batch_first=True)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):  # (1, T, d) -> (1, T, d)
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1) if self.causal else None  # (T, T): not a sequence
        return self.norm(x + self.attention(x, x, x, attn_mask=mask, need_weights=False)[0])


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Embedding(11, 8), AttentionBlock(8), nn.Dropout(0.1), nn.Linear(8, 8), nn.GELU(),
                         AttentionBlock(8, causal=True), nn.LayerNorm(8)).double().eval()


@pytest.fixture(scope="module")
def rows(net):
    return {row.name: row for row in measure_submodules(net, IDS, seed=3)}


def test_exactly_the_attention_modules_mix(rows):
    assert {name: (row.kind, row.pattern) for name, row in rows.items()} == {
        "0": ("Embedding", "per-row"),
        "1": ("AttentionBlock", "all-to-all"),
        "1.attention": ("MultiheadAttention", "all-to-all"),
        "1.norm": ("LayerNorm", "per-row"),
        # "2", the dropout, is left out; so is each out_proj, used by its parent without being called
        "3": ("Linear", "per-row"),
        "4": ("GELU", "per-row"),
        "5": ("AttentionBlock", "causal"),
        "5.attention": ("MultiheadAttention", "causal"),
        "5.norm": ("LayerNorm", "per-row"),
        "6": ("LayerNorm", "per-row"),
    }
    assert [name for name, row in rows.items() if row.mixes] == ["1", "1.attention", "5", "5.attention"]


def test_inputs_methods_and_strengths(rows):
    assert rows["0"].inputs == ("input",) and rows["0"].method == "token-replacement"  # ids into a table
    assert rows["1.attention"].inputs == ("query", "key", "value") and rows["1.attention"].method == "jacobian-2"
    for row in rows.values():
        assert len(row.strength) == len(row.strength[0]) == 5  # (T_out, T)
        assert row.max_diagonal > 0
        if row.pattern == "per-row":
            assert row.max_off_diagonal == row.min_off_diagonal == 0.0  # structural zeros stay exact
    assert rows["1"].min_off_diagonal > 0  # all-to-all: every pair connected
    causal = rows["5.attention"].strength
    assert all((value != 0.0) == (i <= j) for j, row in enumerate(causal) for i, value in enumerate(row))


def test_agrees_with_the_block_measured_alone(net, rows):
    x = net[0](IDS).detach()  # (1, 5, 8): what block "1" really receives
    alone = dependency_matrix(lambda x: net[1](x), {"x": x}, "x", seed=3)
    assert rows["1"].strength == alone.strength


def test_the_whole_network_by_token_replacement(net):
    (whole,) = measure_submodules(net, IDS, names=[""])  # the root, vocabulary from its first table (11)
    assert (whole.kind, whole.method, whole.pattern) == ("Sequential", "token-replacement", "all-to-all")


class Wrapper(nn.Module):
    """``net`` called by keyword, as a Hugging Face model is: ``wrapper(ids=...)``."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, ids):
        return self.inner(ids)


def test_keyword_inputs_and_a_chosen_order(net):
    wrapper = Wrapper(net).eval()
    names = ["inner.6", "inner.1.attention"]
    got = measure_submodules(wrapper, {"ids": IDS}, names=names)
    assert [(row.name, row.pattern) for row in got] == [("inner.6", "per-row"), ("inner.1.attention", "all-to-all")]


def test_record_inputs_keeps_clones_of_the_first_call():
    relu = nn.ReLU()
    x = torch.ones(1, 3, 2)
    with record_inputs(relu, [""]) as calls:
        relu(x)
        relu(2 * x)
    x.zero_()
    assert torch.equal(calls[""].args[0], torch.ones(1, 3, 2)) and calls[""].kwargs == {}
    assert not relu._forward_pre_hooks  # hooks removed


def test_measure_recorded_on_a_made_up_call():
    x = torch.randn(1, 4, 2, dtype=torch.float64)
    assert measure_recorded(nn.Softmax(dim=1), RecordedCall((x,), {}), 4).pattern == "all-to-all"
    assert measure_recorded(nn.Softmax(dim=2), RecordedCall((x,), {}), 4).pattern == "per-row"
    with pytest.raises(SeqlabError, match="module m received no sequence input of 3 positions"):
        measure_recorded(nn.Softmax(dim=1), RecordedCall((x,), {}), 3, name="m")


def test_refusals(net):
    with pytest.raises(SeqlabError, match=r"received \(1, 1\)"):
        measure_submodules(net, IDS[:, :1])
    with pytest.raises(SeqlabError, match="'9' is not a submodule of Sequential"):
        measure_submodules(net, IDS, names=["9"])
    with pytest.raises(SeqlabError, match=r"submodules \['1.attention.out_proj'\] were not called"):
        measure_submodules(net, IDS, names=["1.attention.out_proj"])
    with pytest.raises(SeqlabError, match="must be in eval mode"):
        measure_submodules(nn.Sequential(nn.Linear(2, 2)), torch.randn(1, 3, 2))


def test_a_sliding_window_submodule_is_named_a_band_with_its_width():
    from seqlab.layers.sliding_window import SlidingWindowAttention
    from seqlab.measure.mixing import Band

    generator = torch.Generator().manual_seed(4)
    network = nn.Sequential(nn.Linear(8, 8), SlidingWindowAttention(8, 3, generator=generator, dtype=torch.float64),
                            nn.LayerNorm(8)).double().eval()
    x = torch.randn(1, 9, 8, dtype=torch.float64, generator=generator)
    found = {row.name: row for row in measure_submodules(network, x)}
    assert (found["1"].pattern, found["1"].band) == ("band", Band(2, 0))  # causal window of 3: j − 3 < i ≤ j
    assert found["1"].band.width == 3 and found["1"].mixes
    assert (found["0"].pattern, found["0"].band) == ("per-row", None)
