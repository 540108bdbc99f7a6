"""Layers of your own that meet ``seqlab profile``'s pitfalls on purpose (the manual's tutorial, last part).

* :func:`make_recurrence` returns a tuple (outputs, last state), as ``nn.RNN`` does: profile measures one element
  and says which (``--output`` chooses another), and the recurrence *declares* its transition factor a_t, so the
  signal-path row has a reading.
* :func:`make_channels_first` takes x as (B, d, T), as ``nn.Conv1d`` does: profile finds the positions on the last
  dim from the shapes and measures them, never the channels.
* :func:`make_running_mean` has no weights: it runs at any width, so at T = d the shapes cannot tell positions from
  channels and profile asks for ``--layout``.
* :func:`make_attention` needs more than d_model (a number of heads): the factory takes d_model only, and
  :func:`make_attention_4_heads` fixes the rest.

Shapes: B batch, T positions, d = d_model.
"""

from __future__ import annotations

import torch
from torch import nn

from seqlab.layers.transition import FORWARD, apply_transition


class DecayRecurrence(nn.Module):
    """h_t = a ⊙ h_{t-1} + W x_t with a learned decay a in (0, 1)^d; returns (h_1..h_T, h_T).

    The decay is the factor a signal from x_1 meets once per step on its way to y_T: declared with the three class
    attributes of :mod:`seqlab.layers.transition` and routed through :func:`apply_transition`, which leaves it
    untouched unless a measurement scales it.
    """

    transition_factor = "a_t"
    transition_scaling = FORWARD
    transition_scale = None

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.w = nn.Linear(d_model, d_model, bias=False)
        self.decay = nn.Parameter(torch.zeros(d_model))  # a = sigmoid(0) = 0.5 at the start

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # x (B, T, d)
        u = self.w(x)  # (B, T, d)
        a = apply_transition(self, torch.sigmoid(self.decay))  # (d,): the declared factor
        h = torch.zeros_like(u[:, 0])  # (B, d)
        outputs = []
        for t in range(u.shape[1]):
            h = a * h + u[:, t]
            outputs.append(h)
        return torch.stack(outputs, dim=1), h  # (B, T, d), (B, d)


class ChannelsFirstConv(nn.Module):
    """A width-3 causal convolution over positions that takes and returns (B, d, T), as ``nn.Conv1d`` does."""

    def __init__(self, d_model: int, width: int = 3) -> None:
        super().__init__()
        self.width = width
        self.conv = nn.Conv1d(d_model, d_model, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, d, T)
        return torch.tanh(self.conv(nn.functional.pad(x, (self.width - 1, 0))))  # (B, d, T)


class RunningMean(nn.Module):
    """y_t = (x_1 + … + x_t) / t along dim 1: no weights, so it runs whatever the sizes of x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, T, d)
        counts = torch.arange(1, x.shape[1] + 1, dtype=x.dtype)[:, None]  # (T, 1)
        return x.cumsum(dim=1) / counts  # (B, T, d)


class Attention(nn.Module):
    """Causal self-attention with ``heads`` heads (``nn.MultiheadAttention``, batch first)."""

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(d_model, heads, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, T, d)
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)  # True: masked
        return self.attention(x, x, x, attn_mask=causal, need_weights=False)[0]


def make_recurrence(d_model: int) -> nn.Module:
    """A decay recurrence returning (outputs, last state)."""
    return DecayRecurrence(d_model)


def make_channels_first(d_model: int) -> nn.Module:
    """A causal convolution that takes x as (B, d, T)."""
    return ChannelsFirstConv(d_model)


def make_running_mean(d_model: int) -> nn.Module:
    """A running mean over positions: no weights, any width."""
    return RunningMean()


def make_attention(d_model: int, heads: int = 2) -> nn.Module:
    """Causal attention; ``seqlab profile`` calls it with d_model only, so ``heads`` keeps its default."""
    return Attention(d_model, heads)


def make_attention_4_heads(d_model: int) -> nn.Module:
    """The same attention with 4 heads: one factory per setting, each taking d_model only."""
    return make_attention(d_model, heads=4)
