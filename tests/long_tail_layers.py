"""Layers of the field's long tail (issue 35), as factories ``make_*(d_model)`` the CLI can load too.

Shapes: x (B, T, d) -> y (B, T, d). Weights are seeded by the caller (the CLI seeds before a factory runs).
"""

from __future__ import annotations

import torch
from torch import nn


class ScanLayer(nn.Module):
    """An Elman recurrence written with PyTorch's ``scan`` higher-order op (its eager kernel stacks the steps itself,
    outside any function it was given: refused, by name)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.scan import scan

        def step(h: torch.Tensor, x_t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.tanh(self.w(h) + x_t)
            return h, h.clone()

        return scan(step, x[:, 0] * 0, x, dim=1)[1]


def make_scan(d_model: int) -> nn.Module:
    return ScanLayer(d_model)


def make_frozen(d_model: int) -> nn.Module:
    """A feed-forward block, scripted and frozen (``torch.jit.freeze``: no ``training`` flag left)."""
    block = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model)).eval()
    return torch.jit.freeze(torch.jit.script(block))


def make_quantized(d_model: int) -> nn.Module:
    """The same block with its Linear layers dynamically quantised to int8."""
    block = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, d_model)).eval()
    return torch.ao.quantization.quantize_dynamic(block, {nn.Linear}, dtype=torch.qint8)


class FlexLayer(nn.Module):
    """Single-head attention by FlexAttention: a relative-position score_mod and a causal block mask."""

    def __init__(self, d: int, window: int | None = None) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.window = window

    @property
    def mask(self):
        """The mask_mod: causal, and within ``window`` keys when one is set."""
        window = self.window

        def mask_mod(b, h, q, kv):
            causal = q >= kv
            return causal if window is None else causal & (q - kv < window)

        return mask_mod

    @staticmethod
    def bias(score, b, h, q, kv):
        return score - 0.1 * (q - kv)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)  # (B, 1, T, d) each
        T = x.shape[1]
        block_mask = create_block_mask(self.mask, None, None, T, T, device=x.device.type, BLOCK_SIZE=4)
        return flex_attention(q, k, v, score_mod=self.bias, block_mask=block_mask).squeeze(1)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The same attention written out: scores, the bias, the mask's -inf, softmax, mix."""
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        T = x.shape[1]
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        scores = q @ k.mT / q.shape[-1] ** 0.5 - 0.1 * (i - j)
        scores = scores.masked_fill(~self.mask(None, None, i, j), float("-inf"))
        return scores.softmax(-1) @ v


def make_flex(d_model: int) -> nn.Module:
    return FlexLayer(d_model)
