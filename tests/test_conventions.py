"""One convention per count (issue 38, item 8), checked on the layers themselves.

Work: element-wise products inside a step are not counted; an outer product is (one per output element); a product
summed over a dimension — Mamba's depthwise convolution over its window — is a contraction. State: the storage a
step keeps alive, not the rows it will read (a sliding window: w rows kept, w − 1 visible). See docs/en/engine.md,
"One convention per count".
"""

from __future__ import annotations

import pytest
import torch

from seqlab import cost
from seqlab.layers.decoding import state_bytes
from seqlab.layers.mamba_block import MambaBlock
from seqlab.layers.sliding_window import SlidingWindowAttention
from seqlab.measure.work import count_multiplications


def _mamba_step(d_state: int, d_conv: int) -> int:
    block = MambaBlock(4, d_state=d_state, d_conv=d_conv, expand=2, dt_rank=1,
                       generator=torch.Generator().manual_seed(0))
    state = block.initial_state(1)
    return count_multiplications(lambda x: block.step(x, state), torch.randn(1, 4)).multiplications


@pytest.mark.parametrize("d_conv", [2, 3, 5])
def test_mamba_step_counts_its_depthwise_convolution(d_conv):
    """Two routes: counted step == closed form, and one more tap of the window adds exactly E = 8 multiplications."""
    assert _mamba_step(3, d_conv) == cost.mamba_block_step_multiplications(4, 3, d_conv, 2, 1)
    assert _mamba_step(3, d_conv + 1) - _mamba_step(3, d_conv) == 8  # the window's contraction: E per tap


@pytest.mark.parametrize("d_state", [2, 5])
def test_mamba_step_counts_its_outer_product_and_not_its_decay(d_state):
    """One more state per channel adds 4·E: W_x's B and C rows (2E), the outer product (Δ⊙u) ⊗ B (E) and the
    read-out h·C (E); the decay exp(Δ ⊗ A) ⊙ h, element-wise at batch 1, adds nothing (5·E if it were counted)."""
    assert _mamba_step(d_state + 1, 4) - _mamba_step(d_state, 4) == 4 * 8


@pytest.mark.parametrize("window, d_model", [(3, 4), (8, 6)])
def test_a_sliding_window_state_is_the_storage_it_keeps_alive(window, d_model):
    """After more than w steps: w rows of keys and values kept (storage), w − 1 visible — w is what is counted."""
    layer = SlidingWindowAttention(d_model, window, generator=torch.Generator().manual_seed(0)).eval()
    state = layer.initial_state(1)
    with torch.no_grad():
        for _ in range(window + 2):
            _, state = layer.step(torch.randn(1, d_model), state)
    keys = state[0]
    assert keys.shape[1] == window - 1  # the rows the next token needs
    # keys and values: w rows of d_model float32; the flags: w booleans
    assert state_bytes(state) == 2 * window * d_model * 4 + window
    assert cost.sliding_window_cache_rows(window + 2, window) == window  # the closed form counts the same w
