"""seqlab.measure.cache_state: the bytes a cache object holds, per kind, each storage once — on hand-built objects
of every kind and on the cache a tiny random-weight transformers decoder returns (against its closed form)."""

from __future__ import annotations

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.cache_state import (
    KINDS,
    MAX_DEPTH,
    RWKV_STATE_KINDS,
    CacheState,
    read_cache_state,
)


class DynamicLayer:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values


class DynamicSlidingWindowLayer(DynamicLayer):
    pass


class FakeCache:
    def __init__(self, *layers, **extra):
        self.layers = list(layers)
        vars(self).update(extra)


def zeros(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def test_the_kinds():
    assert KINDS == ("attention_kv", "sliding_window_kv", "convolution", "recurrent")
    assert len(RWKV_STATE_KINDS) == 5 and MAX_DEPTH == 6


def test_full_and_sliding_layers_are_told_apart_by_their_class():
    full = DynamicLayer(zeros(1, 2, 12, 16), zeros(1, 2, 12, 16))  # 2 · 1,536 B
    window_storage = zeros(1, 2, 4, 8)
    sliding = DynamicSlidingWindowLayer(window_storage[:, :, 1:], zeros(1, 2, 3, 8))  # a view of a 4-row storage
    state = read_cache_state(FakeCache(full, sliding))
    assert dict(state.by_kind) == {"attention_kv": 2 * 1_536, "sliding_window_kv": 256 + 192}
    assert state.total_bytes == 3_072 + 448
    assert state.visible_bytes == 3_072 + 192 + 192  # the view's own 3 rows: 1·2·3·8·4
    assert dict(state.visible_by_kind) == {"attention_kv": 3_072, "sliding_window_kv": 384}
    assert state.layer_types == ("DynamicLayer", "DynamicSlidingWindowLayer")
    assert state.container == "FakeCache" and state.tensors == 4 and state.dtype == "float32"


def test_a_storage_is_counted_once_whatever_views_reach_it():
    kv = zeros(2, 1, 6, 4)  # keys and values as two views of one storage: 192 B
    state = read_cache_state(FakeCache(DynamicLayer(kv[0], kv[1]), DynamicLayer(kv[0], kv[1])))
    assert dict(state.by_kind) == {"attention_kv": 192} and state.tensors == 1
    assert state.visible_bytes == 4 * 96


def test_recurrent_and_convolution_states_by_attribute_and_bookkeeping_apart():
    cache = FakeCache(conv_states={0: zeros(1, 8, 4)}, recurrent_states=[zeros(1, 8, 16, dtype=torch.bfloat16)],
                      lengths=torch.tensor(5))
    state = read_cache_state(cache)
    assert dict(state.by_kind) == {"convolution": 128, "recurrent": 256}
    assert state.bookkeeping_bytes == 8  # a 0-d int64
    assert state.dtype == "bfloat16,float32" and dict(state.bytes_by_dtype) == {"bfloat16": 256, "float32": 128}
    assert state.layer_types == ()


def test_a_plain_list_needs_its_kinds():
    rwkv = [zeros(1, 4, 2) for _ in range(5)]  # 32 B each
    state = read_cache_state(rwkv, kinds=RWKV_STATE_KINDS)
    assert dict(state.by_kind) == {"convolution": 64, "recurrent": 96} and state.container == "list"
    with pytest.raises(SeqlabError, match="expected a list of 5 state tensors, received list of 4"):
        read_cache_state(rwkv[:4], kinds=RWKV_STATE_KINDS)
    with pytest.raises(SeqlabError, match="expected a list of 5 state tensors, received Tensor$"):
        read_cache_state(rwkv[0], kinds=RWKV_STATE_KINDS)


def test_a_tensor_of_no_known_kind_makes_the_cache_unreadable():
    cache = FakeCache(DynamicLayer(zeros(1, 1, 2, 2), zeros(1, 1, 2, 2)), mystery=zeros(3, 3))
    with pytest.raises(SeqlabError) as error:
        read_cache_state(cache)
    assert str(error.value) == ("seqlab cannot read this model's cache: it found FakeCache of DynamicLayer × 1 holding "
                                "tensors it cannot assign to attention keys/values, a convolution window or a "
                                "recurrent state (FakeCache.mystery (3, 3))")
    assert error.value.parameter == "model"


def test_a_cache_with_nothing_floating_is_refused():
    with pytest.raises(SeqlabError, match="FakeCache with no floating-point tensor reachable from it"):
        read_cache_state(FakeCache(lengths=torch.tensor([1, 2])))
    with pytest.raises(SeqlabError, match="DynamicLayer × 2"):
        read_cache_state(FakeCache(DynamicLayer(None, None), DynamicLayer(None, None)))


def test_the_frozen_result():
    state = CacheState(by_kind={"recurrent": 5, "convolution": 2}, bookkeeping_bytes=1, visible_bytes=7, tensors=2,
                       container="x")
    assert state.total_bytes == 7


@pytest.mark.parametrize("t", [3, 7])
def test_a_tiny_gpt2s_own_cache_against_its_closed_form(t):
    """2 (keys, values) · layers · B · heads · t · head width · 4 bytes, read from the DynamicCache GPT-2 returns."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=50, n_positions=32)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 50, (1, t)), use_cache=True).past_key_values
    state = read_cache_state(cache)
    assert dict(state.by_kind) == {"attention_kv": 2 * 2 * 1 * 2 * t * 8 * 4}
    assert state.visible_bytes == state.total_bytes
    assert state.layer_types == ("DynamicLayer", "DynamicLayer") and state.container == "DynamicCache"
