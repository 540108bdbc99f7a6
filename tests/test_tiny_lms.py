"""seqlab.layers.tiny_lms: tiny random-weight causal LMs, one per family of decoding state — their configs, seeded
weights that leave the global RNG alone, and the cache each family holds against its closed form (bytes read from
the model's own cache object, :mod:`seqlab.measure.cache_state`)."""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers.tiny_lms import (
    MAX_POSITIONS,
    TINY_FAMILIES,
    VOCABULARY,
    WIDTH,
    WINDOW,
    build_tiny_lm,
    tiny_config,
)
from seqlab.measure.cache_state import read_cache_state


def test_the_families_and_their_sizes():
    assert list(TINY_FAMILIES) == ["llama_gqa", "mistral_window", "mamba", "jamba_hybrid"]
    assert (VOCABULARY, WIDTH, MAX_POSITIONS, WINDOW) == (64, 32, 64, 8)
    llama = tiny_config("llama_gqa")
    assert (llama.num_hidden_layers, llama.num_attention_heads, llama.num_key_value_heads, llama.head_dim) == (2, 4, 2, 16)
    assert tiny_config("mistral_window").sliding_window == WINDOW
    jamba = tiny_config("jamba_hybrid")
    assert jamba.num_hidden_layers == 4 and jamba.layers_block_type == ["mamba", "attention", "mamba", "attention"]
    for family in TINY_FAMILIES:
        config = tiny_config(family)
        assert config.vocab_size == VOCABULARY and config.hidden_size == WIDTH


def test_an_unknown_family_is_refused():
    with pytest.raises(SeqlabError) as error:
        tiny_config("gpt2")
    assert str(error.value) == "family must be one of llama_gqa, mistral_window, mamba, jamba_hybrid; received 'gpt2'"
    assert error.value.parameter == "family"


def test_weights_are_seeded_and_the_global_rng_is_left_alone():
    before = torch.random.get_rng_state()
    model = build_tiny_lm("mamba", seed=3)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert build_tiny_lm("mamba", seed=3) is model  # built once per (family, seed)
    other = build_tiny_lm("mamba", seed=4)
    first = next(model.parameters())
    assert not torch.equal(first, next(other.parameters()))
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert first.dtype == torch.float32
    assert sum(p.numel() for p in build_tiny_lm("mamba").parameters()) == 17_376


def cache_bytes(family: str, t: int) -> int:
    model = build_tiny_lm(family)
    with torch.no_grad():
        cache = model(torch.arange(t)[None] % VOCABULARY, use_cache=True).past_key_values
    return read_cache_state(cache).total_bytes


def test_a_grouped_query_cache_grows_by_its_closed_form_per_token():
    # 2 (K, V) · 2 layers · 2 kv heads · 16 wide · 4 bytes = 512 bytes per token
    assert [cache_bytes("llama_gqa", t) for t in (1, 2, 5)] == [512, 1_024, 2_560]


def test_a_sliding_window_cache_stops_growing_at_the_window_token_by_token():
    """Decoding one token at a time: 2 · 2 layers · 2 kv heads · 8 wide · 4 bytes = 256 bytes per token until the
    window's W = 8 rows are held, then no more (the visible part is the last W − 1 rows)."""
    model = build_tiny_lm("mistral_window")
    held, visible = [], []
    with torch.no_grad():
        cache = None
        for t in range(1, 2 * WINDOW + 1):
            cache = model(torch.tensor([[t % VOCABULARY]]), cache=cache, use_cache=True).past_key_values
            state = read_cache_state(cache)
            held.append(state.total_bytes)
            visible.append(state.visible_bytes)
    assert state.layer_types == ("DynamicSlidingWindowLayer",) * 2
    assert held == [256 * min(t, WINDOW) for t in range(1, 2 * WINDOW + 1)]
    assert visible == [256 * min(t, WINDOW - 1) for t in range(1, 2 * WINDOW + 1)]


def test_a_selective_ssm_holds_the_same_state_whatever_t():
    assert cache_bytes("mamba", 1) == cache_bytes("mamba", 9) > 0
