"""Generation one token at a time: the step API of the Elman RNN and of causal self-attention (L1, L2, L5, L6).

A model that writes text produces position t only after position t-1, so at generation time every machine runs as
a loop of ``step`` calls, each taking the new token's vector x_t and a *state* that carries what the past left:

    initial_state(B) -> state_0;      (y_t, state_t) = step(x_t, state_{t-1}),   t = 1, 2, ...

What the state holds is what separates the machines:

* :class:`ElmanDecoder` — the recurrence of L1: state = (h_{t-1},), a fixed (B, d_h) whatever t is; one step does
  W_hh h_{t-1} + W_xh x_t, d_h·d_h + d_h·d_model multiplications (L5; :func:`seqlab.cost.recurrence_multiplications`
  at T = 1).
* :class:`KVCacheDecoder` — causal self-attention with a key/value cache: state = (K, V), the keys and values of
  positions 1..t-1, (B, t-1, d_k) and (B, t-1, d_v), so it grows with t. One step projects x_t once
  (q_t, k_t, v_t), appends k_t and v_t, and attends q_t over all t keys:
  d_model·(2·d_k + d_v) + t·(d_k + d_v) multiplications (:func:`seqlab.cost.kv_cache_step_multiplications`;
  Vaswani et al. 2017, 3.2.1; the cache is how every Transformer decoder is run in practice).
* :class:`NoCacheDecoder` — the same attention without a cache: state = (X,), the inputs x_1..x_{t-1}
  (B, t-1, d_model); every step projects *all* t inputs to keys and values again:
  d_model·d_k + t·(d_model·(d_k + d_v) + d_k + d_v) multiplications
  (:func:`seqlab.cost.no_cache_step_multiplications`). For one layer this is the least a decoder
  without a cache must redo (only the new query is needed); in a stack, every lower layer's outputs at all
  positions would have to be recomputed too.

Both attention decoders use the weights of one :class:`~seqlab.layers.attention.SelfAttention`, and for a causal
layer their step outputs equal the rows of its parallel forward pass (the tests check it in float64). The last
query sees every key so far, so no mask is needed inside a step. The cache grows by ``torch.cat`` (a copy of
t rows per step: data movement, no multiplication); a preallocated buffer would hold the same bytes at its end.

Multiplication counts follow the lesson's convention (one per multiply-add of a matrix product; bias, tanh,
softmax and the 1/sqrt(d_k) scaling excluded); the closed forms live in :mod:`seqlab.measure.decode`.

Shape letters: B batch, t the position being generated (1-based), d_model input width, d_h state width,
d_k and d_v key and value widths.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN

__all__ = ["ElmanDecoder", "KVCacheDecoder", "NoCacheDecoder", "state_bytes"]


def state_bytes(state: tuple[Tensor, ...]) -> int:
    """Bytes held by the tensors of a decoding state (each storage counted once).

    >>> state_bytes((torch.zeros(1, 10, 8), torch.zeros(1, 10, 8)))  # 2 * 10 * 8 * 4 bytes
    640

    Args:
        state: the tuple of tensors a ``step`` returns.

    Returns:
        The bytes of the distinct storages behind the tensors (a view shares its base's bytes).

    Source: lesson claims L1 (the recurrence carries h_t) and L2 (attention reads every key).
    """
    seen: dict[tuple[str, int], int] = {}
    for tensor in state:
        storage = tensor.untyped_storage()
        seen[(tensor.device.type, storage.data_ptr() or id(tensor))] = storage.nbytes()
    return sum(seen.values())


def _check_step_input(x_t: object, d_model: int, dtype: torch.dtype) -> Tensor:
    if not isinstance(x_t, Tensor) or x_t.dim() != 2 or x_t.shape[-1] != d_model:
        shape = tuple(x_t.shape) if isinstance(x_t, Tensor) else type(x_t).__name__
        raise SeqlabError(N_("x_t must have shape (B, {d_model}), received {shape}"), d_model=d_model, shape=shape)
    if x_t.dtype != dtype:
        raise SeqlabError(N_("x_t must have dtype {dtype} like the weights, received {dtype2}"), dtype=dtype,
                          dtype2=x_t.dtype)
    return x_t


class ElmanDecoder(torch.nn.Module):
    """The Elman RNN one step at a time: state (h,) of fixed size (B, d_h) (L1, L5).

    h_t = tanh(W_hh h_{t-1} + W_xh x_t + b_h); the output y_t is h_t.

    >>> rnn = ElmanRNN(8, 8, generator=torch.Generator().manual_seed(0))
    >>> decoder = ElmanDecoder(rnn)
    >>> y, (h,) = decoder.step(torch.zeros(2, 8), decoder.initial_state(2))
    >>> y.shape, h.shape  # (B, d_h), (B, d_h)
    (torch.Size([2, 8]), torch.Size([2, 8]))

    Args:
        rnn: the :class:`~seqlab.layers.recurrent.ElmanRNN` whose weights are used (shared, not copied).

    Raises:
        SeqlabError: ``rnn`` is not an ElmanRNN.
    """

    def __init__(self, rnn: ElmanRNN) -> None:
        super().__init__()
        if not isinstance(rnn, ElmanRNN):
            raise SeqlabError(N_("rnn must be a seqlab ElmanRNN, received {rnn_class}"), rnn_class=type(rnn).__name__)
        self.rnn = rnn
        self.d_model, self.d_out = rnn.d_model, rnn.d_h

    def initial_state(self, batch: int, *, dtype: torch.dtype = torch.float32,
                      device: str | torch.device = "cpu") -> tuple[Tensor]:
        """(h_0,) = (zeros (B, d_h),).

        Raises:
            SeqlabError: ``batch`` is not an integer >= 1.
        """
        return (torch.zeros(require_positive_int("batch", batch), self.rnn.d_h, dtype=dtype, device=device),)

    def step(self, x_t: Tensor, state: tuple[Tensor]) -> tuple[Tensor, tuple[Tensor]]:
        """One step: (h_t, (h_t,)) from x_t (B, d_model) and (h_{t-1},).

        Raises:
            SeqlabError: ``x_t`` is not (B, d_model) in the weights' dtype.
        """
        rnn = self.rnn
        x_t = _check_step_input(x_t, self.d_model, rnn.weight_hh.dtype)
        (h,) = state  # (B, d_h)
        pre = h @ rnn.weight_hh.T + x_t @ rnn.weight_xh.T  # (B, d_h): W_hh h_{t-1} + W_xh x_t
        if rnn.bias_h is not None:
            pre = pre + rnn.bias_h  # (B, d_h)
        h = torch.tanh(pre)  # (B, d_h): h_t
        return h, (h,)


class _AttentionDecoder(torch.nn.Module):
    """What both attention decoders share: the weights of one causal SelfAttention."""

    def __init__(self, attention: SelfAttention) -> None:
        super().__init__()
        if not isinstance(attention, SelfAttention):
            raise SeqlabError(N_("attention must be a seqlab SelfAttention, received {attention_class}"),
                              attention_class=type(attention).__name__)
        if not attention.causal:
            raise SeqlabError(N_("decoding needs a causal SelfAttention (causal=True): a token being generated "
                                 "cannot read later ones, received causal=False"))
        self.attention = attention
        self.d_model, self.d_out = attention.d_model, attention.d_v

    @property
    def dtype(self) -> torch.dtype:
        return self.attention.q_proj.weight.dtype

    def _attend(self, q: Tensor, keys: Tensor, values: Tensor) -> Tensor:
        """The new query (B, 1, d_k) over all keys (B, t, d_k) and values (B, t, d_v): (B, d_v)."""
        out, _weights = self.attention.attention(q, keys, values)  # (B, 1, d_v), (B, 1, t)
        return out.squeeze(1)  # (B, d_v)


class KVCacheDecoder(_AttentionDecoder):
    """Causal self-attention with a key/value cache: state (K, V) grows by one row per token (L2, L6).

    By default the cache grows by ``torch.cat`` (as Hugging Face's ``DynamicCache`` does), so the state after
    token t holds exactly t rows and each step also copies them. With ``capacity`` the rows are written in place
    into buffers of ``capacity`` rows allocated once (as a static cache does): state (K, V, length), where
    ``length`` is a 0-d int64 tensor; a step then writes into the buffers it was given (the previous state's
    rows up to ``length`` are unchanged, so stepping the same state twice gives the same result).

    >>> sa = SelfAttention(8, causal=True, generator=torch.Generator().manual_seed(0))
    >>> decoder = KVCacheDecoder(sa)
    >>> state = decoder.initial_state(2)
    >>> for _ in range(3):
    ...     y, state = decoder.step(torch.zeros(2, 8), state)
    >>> y.shape, state[0].shape, state[1].shape  # (B, d_v), (B, t, d_k), (B, t, d_v)
    (torch.Size([2, 8]), torch.Size([2, 3, 8]), torch.Size([2, 3, 8]))
    >>> static = KVCacheDecoder(sa, capacity=16)
    >>> y, (keys, values, length) = static.step(torch.zeros(2, 8), static.initial_state(2))
    >>> keys.shape, int(length)  # (B, capacity, d_k), rows written
    (torch.Size([2, 16, 8]), 1)

    Args:
        attention: a causal :class:`~seqlab.layers.attention.SelfAttention` (weights shared, not copied).
        capacity: rows of a preallocated cache (an integer >= 1), or None to grow the cache by concatenation.

    Raises:
        SeqlabError: not a SelfAttention, not causal, or a capacity that is not an integer >= 1.
    """

    def __init__(self, attention: SelfAttention, capacity: int | None = None) -> None:
        super().__init__(attention)
        self.capacity = None if capacity is None else require_positive_int("capacity", capacity)

    def initial_state(self, batch: int, *, dtype: torch.dtype = torch.float32,
                      device: str | torch.device = "cpu") -> tuple[Tensor, ...]:
        """(K, V) with no rows yet: (B, 0, d_k), (B, 0, d_v); with a capacity, (K, V, length = 0) of that many rows.

        Raises:
            SeqlabError: ``batch`` is not an integer >= 1.
        """
        batch = require_positive_int("batch", batch)
        a, rows = self.attention, self.capacity or 0
        state = (torch.zeros(batch, rows, a.d_k, dtype=dtype, device=device),
                 torch.zeros(batch, rows, a.d_v, dtype=dtype, device=device))
        return state if self.capacity is None else (*state, torch.zeros((), dtype=torch.int64, device=device))

    def step(self, x_t: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
        """One token: project x_t once, append its key and value, attend its query over all t keys.

        Raises:
            SeqlabError: ``x_t`` is not (B, d_model) in the weights' dtype, or a preallocated cache is full.
        """
        x_t = _check_step_input(x_t, self.d_model, self.dtype)
        q, k, v = self.attention.project(x_t.unsqueeze(1))  # (B, 1, d_k), (B, 1, d_k), (B, 1, d_v)
        if self.capacity is None:
            keys, values = state  # (B, t-1, d_k), (B, t-1, d_v)
            keys = torch.cat((keys, k), dim=1)  # (B, t, d_k): the cache grows by one row
            values = torch.cat((values, v), dim=1)  # (B, t, d_v)
            return self._attend(q, keys, values), (keys, values)
        keys, values, length = state  # (B, capacity, d_k), (B, capacity, d_v), ()
        t = int(length) + 1
        if t > self.capacity:
            raise SeqlabError(N_("the cache holds {capacity} rows (capacity), received token {t}"),
                              capacity=self.capacity, t=t)
        keys[:, t - 1] = k[:, 0]  # row t written in place
        values[:, t - 1] = v[:, 0]
        return self._attend(q, keys[:, :t], values[:, :t]), (keys, values, length + 1)

    def state_from_prefix(self, prefix: Tensor) -> tuple[Tensor, ...]:
        """The cache after reading ``prefix`` (B, t-1, d_model): its keys and values, projected at once.

        Raises:
            SeqlabError: a preallocated cache too small for the prefix and one more token.
        """
        _q, keys, values = self.attention.project(prefix)  # (B, t-1, d_k), (B, t-1, d_k), (B, t-1, d_v)
        if self.capacity is None:
            return keys, values
        rows = prefix.shape[1]
        if rows >= self.capacity:
            raise SeqlabError(N_("the cache holds {capacity} rows (capacity), received a prefix of {rows}"),
                              capacity=self.capacity, rows=rows)
        state = self.initial_state(prefix.shape[0], dtype=prefix.dtype, device=prefix.device)
        state[0][:, :rows], state[1][:, :rows] = keys, values
        return state[0], state[1], torch.tensor(rows, dtype=torch.int64, device=prefix.device)


class NoCacheDecoder(_AttentionDecoder):
    """Causal self-attention without a cache: state (X,) = the inputs so far; keys and values recomputed each step.

    >>> sa = SelfAttention(8, causal=True, generator=torch.Generator().manual_seed(0))
    >>> decoder = NoCacheDecoder(sa)
    >>> y, (inputs,) = decoder.step(torch.zeros(2, 8), decoder.initial_state(2))
    >>> y.shape, inputs.shape  # (B, d_v), (B, t, d_model)
    (torch.Size([2, 8]), torch.Size([2, 1, 8]))

    Args:
        attention: a causal :class:`~seqlab.layers.attention.SelfAttention` (weights shared, not copied).

    Raises:
        SeqlabError: not a SelfAttention, or not causal.
    """

    def initial_state(self, batch: int, *, dtype: torch.dtype = torch.float32,
                      device: str | torch.device = "cpu") -> tuple[Tensor]:
        """(X,) with no rows yet: (B, 0, d_model).

        Raises:
            SeqlabError: ``batch`` is not an integer >= 1.
        """
        batch = require_positive_int("batch", batch)
        return (torch.zeros(batch, 0, self.d_model, dtype=dtype, device=device),)

    def step(self, x_t: Tensor, state: tuple[Tensor]) -> tuple[Tensor, tuple[Tensor]]:
        """One token: append x_t, project all t inputs to keys and values again, attend the new query.

        Raises:
            SeqlabError: ``x_t`` is not (B, d_model) in the weights' dtype.
        """
        x_t = _check_step_input(x_t, self.d_model, self.dtype)
        (inputs,) = state  # (B, t-1, d_model)
        inputs = torch.cat((inputs, x_t.unsqueeze(1)), dim=1)  # (B, t, d_model)
        a = self.attention
        q = a.q_proj(x_t.unsqueeze(1))  # (B, 1, d_k): only the new query is needed
        keys, values = a.k_proj(inputs), a.v_proj(inputs)  # (B, t, d_k), (B, t, d_v): all recomputed
        return self._attend(q, keys, values), (inputs,)

    def state_from_prefix(self, prefix: Tensor) -> tuple[Tensor]:
        """The state after reading ``prefix`` (B, t-1, d_model): the prefix itself."""
        return (prefix,)
