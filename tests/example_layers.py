"""Example factories for ``seqlab profile`` tests: ``example_layers:make_layer`` and friends.

Each factory takes d_model and returns an ``nn.Module`` that maps x (B, T, d_model) to (B, T, d_out),
as ``seqlab profile module:factory`` expects. Imported by name in the CLI tests (the tests folder is put
on ``sys.path``).
"""

from __future__ import annotations

import torch
from torch import nn


class ConvThenAttention(nn.Module):
    """A width-3 convolution, then single-head self-attention: a small hybrid of Table 1's rows."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, 3, padding=1)
        self.attention = nn.MultiheadAttention(d_model, 1, batch_first=True)
        self.dropout = nn.Dropout(0.5)  # must be off while measuring

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.conv(x.transpose(1, 2))).transpose(1, 2)  # (B, T, d)
        return self.dropout(self.attention(h, h, h, need_weights=False)[0])  # (B, T, d)


def make_layer(d_model: int) -> nn.Module:
    """The example the README shows: ``seqlab profile example_layers:make_layer``."""
    return ConvThenAttention(d_model)


def make_rnn(d_model: int) -> nn.Module:
    """A tanh ``nn.RNN``; it returns (output, h_n) and profile reads the output."""
    return nn.RNN(d_model, d_model, batch_first=True)


class SparseMix(nn.Module):
    """Mixes positions through a sparse matrix: an op the tracers cannot follow (no dense storage)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(x[0].to_sparse(), self.weight).unsqueeze(0)  # (1, T, d)


def make_sparse(d_model: int) -> nn.Module:
    """A module the engine cannot trace (sparse tensors)."""
    return SparseMix(d_model)


class MeanPool(nn.Module):
    """Averages the positions away: (B, T, d) -> (B, d), no T left to measure paths on."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


def make_pooled(d_model: int) -> nn.Module:
    """A module whose output has no position dimension."""
    return MeanPool()


def make_not_a_module(d_model: int) -> str:
    """Returns something that is not a module."""
    return f"layer of width {d_model}"


def make_broken(d_model: int) -> nn.Module:
    """Fails while building."""
    raise ValueError(f"cannot build width {d_model}")


NOT_CALLABLE = 42
