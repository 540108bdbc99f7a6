"""A layer of your own for ``seqlab profile my_layer:make_layer`` (the manual's tutorial, last step).

A causal convolution of width 3 that mixes each position with the two before it, then a tanh: each output
row reads three input rows, so position 1 reaches position T only through a stack of such layers (Table 1's
convolutional row). Shapes: x (B, T, d_model) -> (B, T, d_model).
"""

from __future__ import annotations

import torch
from torch import nn


class CausalConv(nn.Module):
    """y_t = tanh(W_0 x_{t-2} + W_1 x_{t-1} + W_2 x_t + b): a width-3 causal convolution over positions."""

    def __init__(self, d_model: int, width: int = 3) -> None:
        super().__init__()
        self.width = width
        self.conv = nn.Conv1d(d_model, d_model, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.pad(x.transpose(1, 2), (self.width - 1, 0))  # (B, d, T + width - 1)
        return torch.tanh(self.conv(h)).transpose(1, 2)  # (B, T, d)


def make_layer(d_model: int) -> nn.Module:
    """The factory ``seqlab profile`` calls with ``--d-model``: one causal convolution of width 3."""
    return CausalConv(d_model)
