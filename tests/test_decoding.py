"""seqlab.layers.decoding: the step API of the Elman RNN and of causal attention with and without a KV cache.

Two routes agree: the steps against the layer's parallel forward in float64 at unequal widths (d_k ≠ d_v ≠
d_model), the counted multiplications of one step against the closed forms of :mod:`seqlab.cost`. (The decode
study's own tests, over every machine and the timing verdicts, are in tests/test_decode.py.)
"""

from __future__ import annotations

import pytest
import torch

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.layers.attention import SelfAttention
from seqlab.layers.decoding import (
    ElmanDecoder,
    KVCacheDecoder,
    NoCacheDecoder,
    state_bytes,
)
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.work import count_multiplications

F64 = torch.float64
D_MODEL, D_K, D_V, D_H = 6, 4, 5, 3


def attention(causal=True):
    return SelfAttention(D_MODEL, d_k=D_K, d_v=D_V, causal=causal, generator=torch.Generator().manual_seed(0),
                         dtype=F64).eval()


def inputs(T=5, B=2):
    return torch.randn(B, T, D_MODEL, generator=torch.Generator().manual_seed(1), dtype=F64)


def run(decoder, x):
    state, ys = decoder.initial_state(x.shape[0], dtype=x.dtype), []
    for t in range(x.shape[1]):
        y, state = decoder.step(x[:, t], state)
        ys.append(y)
    return torch.stack(ys, dim=1), state


def test_state_bytes_count_each_storage_once():
    base = torch.zeros(2, 10, 8)
    assert state_bytes((base, base[:, :3], base.view(20, 8))) == 640  # one storage: 2·10·8·4
    assert state_bytes((torch.zeros(3, dtype=F64), torch.zeros((), dtype=torch.int64))) == 24 + 8
    assert state_bytes(()) == 0


def test_elman_steps_equal_the_rnn_forward():
    rnn = ElmanRNN(D_MODEL, D_H, generator=torch.Generator().manual_seed(2), dtype=F64)
    x = inputs()
    steps, (h,) = run(ElmanDecoder(rnn), x)
    torch.testing.assert_close(steps, rnn(x), rtol=1e-12, atol=1e-12)
    assert h.shape == (2, D_H) and state_bytes((h,)) == 2 * D_H * 8  # fixed, whatever t


@pytest.mark.parametrize("make", [lambda a: KVCacheDecoder(a), lambda a: KVCacheDecoder(a, capacity=7),
                                  NoCacheDecoder], ids=["cache", "static cache", "no cache"])
def test_attention_steps_equal_the_causal_forward(make):
    layer = attention()
    x = inputs()
    steps, _ = run(make(layer), x)
    torch.testing.assert_close(steps, layer(x)[0], rtol=1e-12, atol=1e-12)


def test_what_each_state_holds_after_t_tokens():
    x = inputs(T=4)
    _, (keys, values) = run(KVCacheDecoder(attention()), x)
    assert keys.shape == (2, 4, D_K) and values.shape == (2, 4, D_V)
    assert state_bytes((keys, values)) == 2 * 4 * (D_K + D_V) * 8
    _, (stored,) = run(NoCacheDecoder(attention()), x)
    assert torch.equal(stored, x)
    _, (k, v, length) = run(KVCacheDecoder(attention(), capacity=6), x)
    assert k.shape == (2, 6, D_K) and int(length) == 4
    assert bool((k[:, 4:] == 0).all())  # rows past the length untouched


def test_a_static_cache_stepped_twice_from_one_state_gives_the_same_result():
    decoder = KVCacheDecoder(attention(), capacity=4)
    x = inputs(T=2)
    _, state = decoder.step(x[:, 0], decoder.initial_state(2, dtype=F64))
    first, _ = decoder.step(x[:, 1], state)
    again, _ = decoder.step(x[:, 1], state)
    assert torch.equal(first, again)


def test_the_prefix_state_equals_the_state_the_steps_leave():
    x = inputs(T=4)
    for decoder in (KVCacheDecoder(attention()), KVCacheDecoder(attention(), capacity=5)):
        _, stepped = run(decoder, x)
        prefix = decoder.state_from_prefix(x)
        for a, b in zip(stepped, prefix, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_a_full_static_cache_is_refused():
    decoder = KVCacheDecoder(attention(), capacity=2)
    x = inputs(T=3)
    state = decoder.initial_state(2, dtype=F64)
    for t in range(2):
        _, state = decoder.step(x[:, t], state)
    with pytest.raises(SeqlabError, match=r"^the cache holds 2 rows \(capacity\), received token 3$"):
        decoder.step(x[:, 2], state)
    with pytest.raises(SeqlabError, match=r"^the cache holds 2 rows \(capacity\), received a prefix of 2$"):
        decoder.state_from_prefix(x[:, :2])
    decoder.state_from_prefix(x[:, :1])  # one row left for the next token


@pytest.mark.parametrize("t", [1, 2, 7])
def test_one_step_counts_its_closed_form(t):
    x = inputs(T=t, B=1)
    layer = attention()
    for decoder, closed in ((KVCacheDecoder(layer), cost.kv_cache_step_multiplications(t, D_MODEL, D_K, D_V)),
                            (NoCacheDecoder(layer), cost.no_cache_step_multiplications(t, D_MODEL, D_K, D_V))):
        _, state = run(decoder, x[:, :-1]) if t > 1 else (None, decoder.initial_state(1, dtype=F64))
        counted = count_multiplications(decoder.step, x[:, -1], state).multiplications
        assert counted == closed, type(decoder).__name__
    rnn = ElmanRNN(D_MODEL, D_H, generator=torch.Generator().manual_seed(2), dtype=F64)
    elman = ElmanDecoder(rnn)
    counted = count_multiplications(elman.step, x[:, -1], elman.initial_state(1, dtype=F64)).multiplications
    assert counted == cost.recurrence_multiplications(1, D_MODEL, D_H) == D_H * D_H + D_H * D_MODEL


def test_refusals():
    with pytest.raises(SeqlabError, match="^rnn must be a seqlab ElmanRNN, received RNN$"):
        ElmanDecoder(torch.nn.RNN(2, 2))
    with pytest.raises(SeqlabError, match="^attention must be a seqlab SelfAttention, received Linear$"):
        KVCacheDecoder(torch.nn.Linear(2, 2))
    with pytest.raises(SeqlabError, match="decoding needs a causal SelfAttention"):
        NoCacheDecoder(attention(causal=False))
    with pytest.raises(SeqlabError, match="capacity must be an integer >= 1"):
        KVCacheDecoder(attention(), capacity=0)
    decoder = KVCacheDecoder(attention())
    with pytest.raises(SeqlabError, match="batch must be an integer >= 1"):
        decoder.initial_state(0)
    state = decoder.initial_state(1, dtype=F64)
    with pytest.raises(SeqlabError, match=rf"^x_t must have shape \(B, {D_MODEL}\), received \(1, 1, {D_MODEL}\)$"):
        decoder.step(torch.zeros(1, 1, D_MODEL, dtype=F64), state)
    with pytest.raises(SeqlabError, match="^x_t must have shape .*, received list$"):
        decoder.step([0.0] * D_MODEL, state)
    with pytest.raises(SeqlabError, match="^x_t must have dtype torch.float64 like the weights, received torch.float32$"):
        decoder.step(torch.zeros(1, D_MODEL), state)
