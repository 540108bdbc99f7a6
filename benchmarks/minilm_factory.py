"""The bundled all-MiniLM-L6-v2's six encoder layers as a ``seqlab profile`` factory (issue 17's benchmark).

    seqlab profile benchmarks.minilm_factory:make_minilm --d-model 384 --seq-len 512

Maps hidden states (B, T, 384) to the last layer's hidden states (B, T, 384): the 6 BERT layers (eager
attention, float32, eval mode), without the embeddings (profile feeds vectors, not token ids).
"""

from __future__ import annotations

import torch
from torch import nn

from seqlab.errors import SeqlabError
from seqlab.layers.pretrained import load_encoder


class MiniLMLayers(nn.Module):
    """all-MiniLM-L6-v2's encoder stack: (B, T, 384) -> (B, T, 384)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = load_encoder(torch.float32).model.encoder

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x).last_hidden_state


def make_minilm(d_model: int) -> nn.Module:
    """The factory ``seqlab profile`` calls; the model's width is fixed at 384.

    Raises:
        SeqlabError: ``d_model`` is not 384.
    """
    if d_model != 384:
        raise SeqlabError(f"all-MiniLM-L6-v2 has d_model = 384; received {d_model}", parameter="d_model")
    return MiniLMLayers()
