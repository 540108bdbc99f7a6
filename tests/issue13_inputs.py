"""Inputs shared by the issue-13 tests of the engine (``test_engine_kinds_*.py``): the issue's masked attention.

Imported by name (pytest puts this folder on ``sys.path`` for the test modules beside it).
"""

from __future__ import annotations

import torch
import torch.nn as nn

#: A masked-out score: softmax gives it weight exactly 0, and a row of them only gives NaN.
NEG = float("-inf")


def seeded_generator(seed: int = 0) -> torch.Generator:
    """A CPU generator seeded with ``seed``, so inputs never touch the global RNG."""
    return torch.Generator().manual_seed(seed)


def issue_attention() -> tuple[nn.MultiheadAttention, torch.Tensor]:
    """MHA(4, 2) in float64; mask row 0 opens key 0, row 1 keys 0-1, row 2 nothing (its output is NaN)."""
    torch.manual_seed(0)
    attention = nn.MultiheadAttention(4, 2, batch_first=True).double().eval()
    mask = torch.tensor([[0.0, NEG, NEG], [0.0, 0.0, NEG], [NEG, NEG, NEG]], dtype=torch.float64)  # (T, T)
    return attention, mask
