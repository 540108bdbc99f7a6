"""``seqlab profile``'s table: the padded bound when nested tensors ran, and the positions whose output is NaN
(issue 13, kinds 1 and 3). Each row is shown because of a measurement; patching it away removes the row.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from rich.console import Console
from torch import nn

from seqlab.render.table1 import profile_table
from seqlab.studies.profile import profile


class PaddedEncoder(nn.Module):
    """The issue's kind-3 input: a two-layer encoder on lengths [5, 2, 4] through the nested-tensor fast path."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)

    def forward(self, x):  # (3, 5, 8)
        mask = torch.arange(5)[None, :] >= torch.tensor([5, 2, 4])[:, None]  # True = padding
        with torch.no_grad():
            return self.encoder(x, src_key_padding_mask=mask)


class NaNRow(nn.Module):
    """The issue's kind-1 input: attention whose third query may read no key, so its output row is NaN."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(4, 2, batch_first=True, dtype=torch.float64)

    def forward(self, x):  # (1, 3, 4)
        inf = float("-inf")
        mask = torch.tensor([[0, inf, inf], [0, 0, inf], [inf, inf, inf]], dtype=torch.float64)
        return self.attention(x, x, x, attn_mask=mask, need_weights=True)[0]


def _text(table) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_the_padded_bound_has_its_row():
    torch.manual_seed(0)
    result = profile(PaddedEncoder().eval(), torch.randn(3, 5, 8))
    assert result.multiplications == 12_704  # real tokens: each sequence run alone
    assert result.padded_multiplications == 17_760  # 3 sequences of 5: 3 × 5,920
    en, es = _text(profile_table(result, "en")), _text(profile_table(result, "es"))
    assert "Multiplications counted" in en and "12,704" in en
    assert "Multiplications with every sequence padded" in en and "17,760" in en
    assert "Multiplicaciones con cada secuencia rellenada" in es and "17.760" in es
    unpadded = dataclasses.replace(result, padded_multiplications=None)  # no nested tensor measured
    assert "every sequence padded" not in _text(profile_table(unpadded, "en"))


def test_undefined_positions_are_carried_and_shown():
    torch.manual_seed(0)
    result = profile(NaNRow().eval(), torch.randn(1, 3, 4, dtype=torch.float64), sources="all")
    assert result.path.undefined == (2,)  # 0-based: the third output row is NaN
    assert result.path.last_to_first_products is None  # no path to or from the NaN row is claimed
    en, es = _text(profile_table(result, "en")), _text(profile_table(result, "es"))
    assert "Positions whose output is undefined (NaN), no path reported" in en
    (row,) = [line for line in en.splitlines() if "undefined (NaN)" in line]
    assert row.rstrip(" │").endswith("3")  # 1-based, as the table's other positions
    assert "Posiciones cuya salida no está definida (NaN)" in es
    defined = dataclasses.replace(result, path=dataclasses.replace(result.path, undefined=()))
    assert "undefined" not in _text(profile_table(defined, "en"))
