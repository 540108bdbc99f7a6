"""Blocks of b positions, named with b read from the measurement (issue 38, item 10).

Block-local attention cuts the positions into blocks of b consecutive rows; output row j reads input row i exactly
when ⌊i/b⌋ = ⌊j/b⌋ (and i ≤ j when causal inside the block). Two inputs of the kind, measured by their Jacobians:
a hand-made block-diagonal mask layer and Reformer's local attention (``ReformerConfig`` with no chunk before or
after: pure blocks of ``local_attn_chunk_length``), tiny random weights, offline. Beside them, every other pattern
of the family (full, causal, a band of width w, dilated by k) is read back with the parameter it was made with.
"""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.measure.mixing import (
    ALL_TO_ALL,
    BAND,
    BLOCKS,
    CAUSAL,
    PARTIAL,
    PER_ROW,
    Band,
    Blocks,
    band_of,
    blocks_of,
    classify,
    dependency_matrix,
)
from seqlab.render.band import blocks_text
from seqlab.render.model import pattern_name

D = 4


def _matrix(T, rule):
    return tuple(tuple(bool(rule(j, i)) for i in range(T)) for j in range(T))


# --- the rule and its boundaries ---------------------------------------------------------------------------------

@pytest.mark.parametrize("T, size", [(8, 2), (8, 4), (10, 4), (9, 4), (5, 3), (7, 6), (64, 5)])
@pytest.mark.parametrize("causal", [False, True])
def test_blocks_are_read_back_with_their_size_whether_or_not_b_divides_T(T, size, causal):
    """T = 10, b = 4: blocks 1–4, 5–8 and a last one of T mod b = 2; T = 7, b = 6: one whole block and one row."""
    made = Blocks(size, causal)
    depends = _matrix(T, made.reads)
    assert classify(depends) == BLOCKS and blocks_of(depends) == made and band_of(depends) is None


@pytest.mark.parametrize("causal, expected", [(False, ALL_TO_ALL), (True, CAUSAL)])
def test_one_block_as_long_as_T_is_full_or_causal_and_blocks_of_one_are_per_row(causal, expected):
    T = 6
    for size in (T, T + 3):  # b >= T: one block holds every position
        depends = _matrix(T, Blocks(size, causal).reads)
        assert classify(depends) == expected and blocks_of(depends) is None
    one = _matrix(T, Blocks(1, causal).reads)
    assert classify(one) == PER_ROW and blocks_of(one) is None


def test_a_band_is_never_blocks_and_blocks_are_never_a_band():
    """A band (every row the same offsets) and blocks of b >= 2 with T > b (row 0 reads 0…b − 1, row b − 1 reads
    −(b − 1)…0) exclude each other; the width-1 band and blocks of 1 are the same matrix, named per-row."""
    T = 9
    for band in (Band(1, 1), Band(2, 0), Band(4, 0, 2), Band(0, 1)):
        depends = _matrix(T, lambda j, i: (i - j) in band.offsets)
        assert classify(depends) == BAND and blocks_of(depends) is None and band_of(depends) == band
    for size in (2, 3, 4):
        depends = _matrix(T, Blocks(size).reads)
        assert band_of(depends) is None and classify(depends) == BLOCKS


@pytest.mark.parametrize("T, size", [(8, 4), (10, 3)])
def test_blocks_with_one_row_more_or_less_are_partial(T, size):
    """The measurement decides: one extra read across a block edge, or one read missing inside a block, and no
    block size fits."""
    rule = Blocks(size).reads
    across = _matrix(T, lambda j, i: rule(j, i) or (j == size and i == size - 1))
    missing = _matrix(T, lambda j, i: rule(j, i) and not (j == 1 and i == 0))
    assert classify(across) == PARTIAL and classify(missing) == PARTIAL
    assert blocks_of(across) is None and blocks_of(missing) is None


def test_undefined_rows_are_left_out_of_the_blocks():
    T, made = 8, Blocks(4)
    depends = [list(row) for row in _matrix(T, made.reads)]
    depends[4] = [False] * T  # row 5 is NaN (undefined): read nothing
    assert blocks_of(depends, undefined=(4,)) == made and classify(tuple(map(tuple, depends)), undefined=(4,)) == BLOCKS


@pytest.mark.parametrize("T", [6, 9, 12])
def test_every_pattern_is_read_back_with_its_parameter(T):
    """full, causal, a band of width w, dilated by k, blocks of b: each made by its rule, classified, its parameter
    read from the matrix."""
    assert classify(_matrix(T, lambda j, i: True)) == ALL_TO_ALL
    assert classify(_matrix(T, lambda j, i: i <= j)) == CAUSAL
    for w in range(2, T):  # a causal window of w: j − w < i ≤ j
        depends = _matrix(T, lambda j, i: j - w < i <= j)
        assert classify(depends) == BAND and band_of(depends).width == w
    for k in (2, 3):  # dilated by k, 3 taps: i − j ∈ {−2k, −k, 0}
        depends = _matrix(T, lambda j, i: (j - i) in (0, k, 2 * k))
        # at T <= 2k the farthest tap never lands on a row: the matrix shows the two taps it has, and no more
        assert classify(depends) == BAND and band_of(depends) == (Band(2 * k, 0, k) if T > 2 * k else Band(k, 0, k))
    for b in range(2, T):
        assert blocks_of(_matrix(T, Blocks(b).reads)).size == b


def test_blocks_in_words_with_their_size():
    assert blocks_text(Blocks(4)) == "blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋)"
    assert blocks_text(Blocks(4, causal=True)) == "causal blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋, i ≤ j)"
    assert blocks_text(Blocks(12), "es") == "bloques de 12 posiciones (⌊i/12⌋ = ⌊j/12⌋)"
    assert pattern_name(BLOCKS, "es", blocks=Blocks(2, causal=True)) == \
        "bloques causales de 2 posiciones (⌊i/2⌋ = ⌊j/2⌋, i ≤ j)"
    assert pattern_name(BLOCKS, "en") == "blocks"  # size unknown: the bare word, never a made-up b


# --- two inputs of the kind, measured -----------------------------------------------------------------------------

class BlockLocalAttention(torch.nn.Module):
    """Single-head attention whose mask keeps the keys of the query's own block of ``size`` (and i ≤ j if causal)."""

    def __init__(self, d: int, size: int, causal: bool, generator: torch.Generator):
        super().__init__()
        self.size, self.causal = size, causal
        self.weights = torch.nn.Parameter(torch.randn(3, d, d, generator=generator, dtype=torch.float64) / d ** 0.5)

    def forward(self, x):  # (1, T, d) -> (1, T, d)
        q, k, v = (x @ w for w in self.weights)
        T = x.shape[1]
        position = torch.arange(T)
        keep = position[:, None] // self.size == position[None, :] // self.size  # (T, T): same block
        if self.causal:
            keep &= position[None, :] <= position[:, None]
        scores = (q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])).masked_fill(~keep, -math.inf)
        return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("T, size", [(10, 4), (9, 3), (7, 2)])
@pytest.mark.parametrize("causal", [False, True])
def test_a_block_local_mask_layer_measures_as_its_blocks(T, size, causal):
    generator = torch.Generator().manual_seed(3)
    layer = BlockLocalAttention(D, size, causal, generator)
    x = torch.randn(1, T, D, dtype=torch.float64, generator=generator)
    measured = dependency_matrix(layer, {"x": x}, "x")
    assert measured.pattern == BLOCKS and measured.blocks == Blocks(size, causal) and measured.band is None


def _reformer_attention(size: int, decoder: bool):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.ReformerConfig(
        vocab_size=20, hidden_size=16, attention_head_size=8, num_attention_heads=2, attn_layers=["local"],
        local_attn_chunk_length=size, local_num_chunks_before=0, local_num_chunks_after=0, is_decoder=decoder,
        axial_pos_embds=False, max_position_embeddings=64, feed_forward_size=32, pad_token_id=0)
    model = transformers.ReformerModel(config).double().eval()
    return model.encoder.layers[0].attention


@pytest.mark.parametrize("size, T", [(4, 12), (3, 12), (2, 8)])
@pytest.mark.parametrize("decoder", [False, True])
def test_reformers_local_attention_is_blocks_of_its_chunk_length(size, T, decoder):
    """Reformer's LocalSelfAttention with no chunk before or after: blocks of ``local_attn_chunk_length``, causal
    inside them in a decoder; b is read from the Jacobian, not from the config (T must be a multiple of it here:
    Reformer refuses other lengths at this level)."""
    attention = _reformer_attention(size, decoder)
    x = torch.randn(1, T, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    measured = dependency_matrix(lambda x: attention(x).hidden_states, {"x": x}, "x")
    assert measured.pattern == BLOCKS and measured.blocks == Blocks(size, causal=decoder)


def test_a_pattern_that_fits_none_says_which_figures_it_lacks():
    """A partial matrix (one row reads across its block edge) is named with the figures no reading could give."""
    from seqlab.render.figure import pattern_text

    depends = _matrix(8, lambda j, i: Blocks(4).reads(j, i) or (j == 4 and i == 3))
    assert classify(depends) == PARTIAL
    assert pattern_name(PARTIAL) == pattern_text(PARTIAL) == "partial (no band width or block size fits)"
    assert pattern_name(PARTIAL, "es") == "parcial (no encaja ninguna anchura de banda ni tamaño de bloque)"
    assert pattern_text(BLOCKS, "es") == "bloques"


def test_stacked_blocks_stay_blocks_of_the_same_size():
    """Blocks do not grow with depth (a block reads only itself), unlike a band: two block-local layers of 3."""
    from seqlab.measure.mixing import measure_receptive_fields

    generator = torch.Generator().manual_seed(4)
    first, second = (BlockLocalAttention(D, 3, False, generator) for _ in range(2))

    def stack(x):
        h = first(x)
        return h, second(torch.tanh(h))
    x = torch.randn(1, 8, D, dtype=torch.float64, generator=generator)
    fields = measure_receptive_fields(stack, {"x": x}, "x", outputs=lambda out: out)
    assert [(f.pattern, f.blocks, f.width) for f in fields] == [(BLOCKS, Blocks(3), 3)] * 2
