"""Tiny models: a token embedding, one sequence layer, a linear readout; one parameter budget or one width.

Every model reads token ids (B, T), looks up an embedding x_t (d_model wide), runs one layer and
reads the answer through a linear map to the classes — at the **last position**, y_T, for the
lesson's tasks, and at **every position** for a per-position task (mqar), where every layer is causal:

* ``elman`` — h_t = tanh(W_hh h_{t-1} + W_xh x_t + b) (L1), ``torch.nn.RNN``;
* ``lstm`` / ``gru`` — ``torch.nn.LSTM`` / ``torch.nn.GRU``: the same T-1 steps, with an additive
  bypass (L3);
* ``attention`` — one :class:`~seqlab.layers.attention.SelfAttention` layer (scaled dot, Q, K, V of
  width ``width``), y_T = sum_j alpha_Tj v_j (L2, L4);
* ``attention-pe`` — the same, with the sinusoidal positional encoding of "Attention Is All You
  Need" §3.5 added to the embedding rows (L10's fix, block 5 lesson 5 of the course);
* ``mlp`` — the concatenated MLP of block 3 lesson 1 (L10): the T embeddings side by side, one
  hidden layer tanh(W [x_1; ...; x_T] + b), so each position has a weight block of its own (last
  position only: it reads all T positions at once);
* the modern mixers of :mod:`seqlab.layers.mixers` (:data:`MIXER_MODELS`: every registered mixer with a
  :class:`~seqlab.layers.mixers.LearnModel`), each mapping d_model back to d_model, in the form its registration
  names, ``width`` setting the size of what it carries (the keywords its registration names: d_k = d_v = width
  for linear attention, a d_k × d_v state, and for the sliding window, a window of :data:`SLIDING_WINDOW`;
  d_state = width for the diagonal and selective recurrences).

``shift`` (used by mqar) adds a token shift before the layer, x_t = e_t + W_s e_{t-1} (e_0 = 0): a
causal convolution of width 2, the short convolution that Zoology's and Based's models put before
every mixer (RWKV's token shift, H3's shift SSM). With it one layer can match a query key against
the *previous* token of each value position, as an induction head does in two layers.

The budget is a total parameter count (embedding + shift + layer + readout): each model gets the
largest ``width`` whose closed-form count (:func:`parameter_count`) stays within it, unless a width
is given. Initial weights come from a seeded ``torch.Generator`` (the global RNG is never touched):
the layers and readout as ``torch.nn`` does, U(-1/sqrt(fan), 1/sqrt(fan)), the mixers as their own
modules do; the embedding at N(0, 0.1²) — small, so attention starts out nearly uniform and every
key token is attended to from the first step (with N(0, 1) some seeds stall with a key class that
attention never looks at). The gates of the LSTM and GRU start with the **chrono initialisation**
(Tallec & Ollivier 2018, §3): forget-gate bias b_f = log u, u ~ U(1, T − 1), and input-gate bias
b_i = −b_f (LSTM); update-gate bias b_z = log u (GRU, whose h_t = (1 − z) n + z h_{t−1}). A gate
open at sigmoid(b) keeps a fraction sigmoid(b)^(T−1) of the first token after T − 1 steps: with the
older +1 forget bias (Jozefowicz et al. 2015) that is 0.73^63 ≈ 2·10⁻⁹ at T = 64, with torch's default
biases about 0.5^63. Measured on recall at T = 64 (2,000 Adam steps, rates 1e-2 and 3e-3, seeds 0–1):
with those biases the LSTM scored 0.11–0.15 and the GRU 0.11–0.49 (chance 0.125); with chrono 7 of
the 8 runs stopped early with every training batch right.

Decode state (:meth:`TaskModel.decode`): the model run one token at a time through its layer's step,
and the tensors it holds after the last token weighed by
:func:`seqlab.layers.decoding.state_bytes` — a KV cache (:class:`~seqlab.layers.decoding.KVCacheDecoder`)
for attention, (h,) or (h, c) for the torch recurrences, each mixer's own ``step`` state, and the
embedding row e_T when the model shifts.

Shape letters: B batch, T positions, V vocabulary, C classes, d_model embedding width, w width.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.layers import mixers
from seqlab.i18n import N_
from seqlab.layers.attention import SelfAttention
from seqlab.layers.decoding import KVCacheDecoder
from seqlab.learn import LESSON_MODELS

__all__ = ["FIXED_STATE", "LABELS", "MIXER_MODELS", "MODELS", "RECURRENT", "SLIDING_WINDOW", "TaskModel",
           "output_width", "parameter_count", "sinusoidal_encoding", "width_for_budget"]

#: The modern mixers usable here: the registered mixers that have a learn model (:mod:`seqlab.layers.mixers`).
MIXER_MODELS = tuple(m.name for m in mixers.learn_models())
MODELS = LESSON_MODELS + MIXER_MODELS
#: Names shown in tables (the renderer translates them): the lesson's models', then each mixer's label.
LABELS = {"elman": "Elman RNN", "lstm": "LSTM", "gru": "GRU", "attention": "Attention",
          "attention-pe": "Attention + PE", "mlp": "MLP (per position)",
          **{m.name: m.label or m.name for m in mixers.learn_models()}}
#: Gate blocks of W_xh and W_hh: h_t has 1 (Elman), the LSTM 4 (i, f, g, o), the GRU 3 (r, z, n).
GATES = {"elman": 1, "lstm": 4, "gru": 3}
RECURRENT = tuple(GATES)
#: Models whose decode state does not grow with T (attention's KV cache does; the MLP has no step).
FIXED_STATE = RECURRENT + MIXER_MODELS
#: The sliding window's width w (its query's own position included).
SLIDING_WINDOW = 8
EMBEDDING_STD = 0.1
_MAX_WIDTH = 4096


def sinusoidal_encoding(T: int, d_model: int) -> Tensor:
    """The positional encoding of "Attention Is All You Need" §3.5, one row per position (T, d_model).

    PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)),
    pos = 0..T-1. Added to the embedding rows, it makes equal tokens at different positions differ.

    >>> pe = sinusoidal_encoding(3, 4)
    >>> pe.shape, pe[0].tolist()  # position 0: sin 0 = 0, cos 0 = 1
    (torch.Size([3, 4]), [0.0, 1.0, 0.0, 1.0])
    >>> round(float(pe[2, 0]), 4), round(float(pe[2, 3]), 4)  # sin(2), cos(2 / 10000^(2/4)) = cos(0.02)
    (0.9093, 0.9998)

    Raises:
        SeqlabError: T or d_model is not an integer >= 1.
    """
    require_positive_int("T", T)
    require_positive_int("d_model", d_model)
    position = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),): the 2i
    angle = position / 10000.0 ** (even / d_model)  # (T, ceil(d/2))
    pe = torch.zeros(T, d_model, dtype=torch.float64)  # (T, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(torch.float32)


def _check_model(model: str) -> str:
    if model not in MODELS:
        raise SeqlabError(N_("model must be one of {models}; received {model!r}"), models=', '.join(MODELS),
                          model=model, parameter="models")
    return model


def output_width(model: str, width: int, d_model: int) -> int:
    """Width of what the layer hands the readout: ``width`` for the lesson's models, d_model for the mixers.

    >>> output_width("lstm", 12, 16), output_width("linear_attention", 12, 16)
    (12, 16)
    """
    return d_model if model in MIXER_MODELS else width


def parameter_count(model: str, width: int, *, d_model: int, vocab: int, classes: int, T: int,
                    shift: bool = False) -> int:
    """Closed-form parameter count: embedding V·d + shift d² (when shifted) + layer + readout o·C + C.

    Layers (torch keeps two bias vectors in each recurrent gate): Elman w·d + w² + 2w; LSTM 4× that;
    GRU 3× that; attention 3·d·w (bias-free W_q, W_k, W_v; the encoding has no parameters);
    MLP T·d·w + w; a mixer the closed form of its :class:`~seqlab.layers.mixers.LearnModel` (linear attention
    and the sliding window 4·d·w: W_q, W_k, W_v and W_o; the diagonal recurrence 2·d·w + w: W_B, W_C, the
    decays; the selective recurrence 4·d·w + 2w: W_Δ, W_u, W_C, W_o, A and δ). The readout reads
    o = :func:`output_width` values.

    >>> parameter_count("elman", 29, d_model=16, vocab=24, classes=8, T=64)  # 384 + 1,363 + 240
    1987
    >>> parameter_count("attention", 28, d_model=16, vocab=24, classes=8, T=64)  # 384 + 1,344 + 232
    1960
    >>> parameter_count("linear_attention", 8, d_model=16, vocab=33, classes=16, T=64, shift=True)
    1568

    (The last: 528 + 256 + 512 + 16·16 + 16.)

    Raises:
        SeqlabError: unknown model, or a size that is not an integer >= 1.
    """
    _check_model(model)
    for name, value in (("width", width), ("d_model", d_model), ("vocab", vocab), ("classes", classes), ("T", T)):
        require_positive_int(name, value)
    w, d = width, d_model
    if model in GATES:
        layer = GATES[model] * (w * d + w * w + 2 * w)
    elif model == "mlp":
        layer = T * d * w + w
    elif model in MIXER_MODELS:
        layer = mixers.mixer(model).learn.parameters(d, w)
    else:
        layer = 3 * d * w
    out = output_width(model, w, d)
    return vocab * d + (d * d if shift else 0) + layer + out * classes + classes


def width_for_budget(model: str, budget: int, *, d_model: int, vocab: int, classes: int, T: int,
                     shift: bool = False) -> int:
    """The largest width whose :func:`parameter_count` is <= ``budget`` (1 when even width 1 is over).

    >>> [width_for_budget(m, 2000, d_model=16, vocab=24, classes=8, T=64) for m in ("elman", "lstm", "gru")]
    [29, 12, 15]

    Raises:
        SeqlabError: unknown model or a size that is not an integer >= 1.
    """
    require_positive_int("budget", budget)
    width = 1
    while width < _MAX_WIDTH and parameter_count(model, width + 1, d_model=d_model, vocab=vocab,
                                                 classes=classes, T=T, shift=shift) <= budget:
        width += 1
    return width


def _fill_uniform(module: nn.Module, fan: int, generator: torch.Generator) -> None:
    bound = 1.0 / math.sqrt(fan)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.uniform_(-bound, bound, generator=generator)


def _chrono(T: int, width: int, generator: torch.Generator) -> Tensor:
    """Chrono gate biases log u, u ~ U(1, max(T − 1, 2)) (Tallec & Ollivier 2018, §3), (w,)."""
    return torch.log(torch.empty(width).uniform_(1.0, float(max(T - 1, 2)), generator=generator))


class _Unbatched(nn.Module):
    """A mixer that also takes one unbatched sequence (T, d_model), as ``measure_reach`` passes it."""

    def __init__(self, mixer: nn.Module) -> None:
        super().__init__()
        self.mixer = mixer

    def forward(self, x: Tensor) -> Tensor:
        return self.mixer(x.unsqueeze(0))[0] if x.dim() == 2 else self.mixer(x)  # (T, d) or (B, T, d)


class TaskModel(nn.Module):
    """Embedding (+ shift), one sequence layer, a linear readout: token ids (B, T) -> logits (B, C) or (B, T, C).

    >>> m = TaskModel("gru", 15, d_model=16, vocab=24, classes=8, T=10,
    ...               generator=torch.Generator().manual_seed(0))
    >>> m(torch.zeros(2, 10, dtype=torch.long)).shape, m.parameter_count()
    (torch.Size([2, 8]), 1997)
    >>> q = TaskModel("linear_attention", 8, d_model=16, vocab=33, classes=16, T=12, per_position=True, shift=True,
    ...               generator=torch.Generator().manual_seed(0))
    >>> q(torch.zeros(2, 12, dtype=torch.long)).shape, q.parameter_count()
    (torch.Size([2, 12, 16]), 1568)

    Args:
        model: one of :data:`MODELS`.
        width: hidden size (recurrences, MLP), d_k = d_v (attention, linear attention, sliding window)
            or d_state (diagonal and selective recurrences).
        d_model: embedding width.
        vocab: number of token ids V.
        classes: number of labels C.
        T: sequence length (the MLP's input size, the encoding's rows and the chrono range depend on it).
        generator: seeded source of every initial weight.
        per_position: read every position (layers causal), not only the last.
        shift: add the token shift x_t = e_t + W_s e_{t-1}.

    Raises:
        SeqlabError: unknown model, a size that is not an integer >= 1, or the MLP asked per position.
    """

    def __init__(self, model: str, width: int, *, d_model: int, vocab: int, classes: int, T: int,
                 generator: torch.Generator, per_position: bool = False, shift: bool = False) -> None:
        super().__init__()
        parameter_count(model, width, d_model=d_model, vocab=vocab, classes=classes, T=T)  # validates
        if model == "mlp" and per_position:
            raise SeqlabError(N_("the per-position MLP reads all T positions at once and cannot answer at each "
                                 "position causally; received model 'mlp' for a per-position task"), parameter="models")
        self.model, self.width, self.T = model, width, T
        self.d_model, self.per_position, self.shift = d_model, bool(per_position), bool(shift)
        self.embedding = nn.Embedding(vocab, d_model, device="meta").to_empty(device="cpu")
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, EMBEDDING_STD, generator=generator)
        self.shift_proj = None
        if shift:
            self.shift_proj = nn.Linear(d_model, d_model, bias=False, device="meta").to_empty(device="cpu")
            _fill_uniform(self.shift_proj, d_model, generator)
        pe = sinusoidal_encoding(T, d_model) if model == "attention-pe" else torch.zeros(T, d_model)
        self.register_buffer("encoding", pe)  # (T, d_model)
        if model in GATES:
            kind = {"elman": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[model]
            self.layer = kind(d_model, width, batch_first=True, device="meta").to_empty(device="cpu")
            _fill_uniform(self.layer, width, generator)
            with torch.no_grad():
                if model == "lstm":  # gates (i, f, g, o): b_f = log u, b_i = -b_f
                    chrono = _chrono(T, width, generator)
                    self.layer.bias_ih_l0[width: 2 * width] = chrono
                    self.layer.bias_hh_l0[width: 2 * width] = 0.0
                    self.layer.bias_ih_l0[:width] = -chrono
                    self.layer.bias_hh_l0[:width] = 0.0
                elif model == "gru":  # gates (r, z, n): b_z = log u
                    self.layer.bias_ih_l0[width: 2 * width] = _chrono(T, width, generator)
                    self.layer.bias_hh_l0[width: 2 * width] = 0.0
        elif model == "mlp":
            self.layer = nn.Linear(T * d_model, width, device="meta").to_empty(device="cpu")
            _fill_uniform(self.layer, T * d_model, generator)
        elif model in MIXER_MODELS:
            learn = mixers.mixer(model).learn
            self.layer = mixers.mixer(model).build(d_model, window=SLIDING_WINDOW, generator=generator,
                                                   **learn.options, **dict.fromkeys(learn.width, width))
        else:
            self.layer = SelfAttention(d_model, d_k=width, d_v=width, score="scaled_dot", causal=self.per_position,
                                       generator=generator)
        out = output_width(model, width, d_model)
        self.head = nn.Linear(out, classes, device="meta").to_empty(device="cpu")
        _fill_uniform(self.head, out, generator)

    def inputs(self, tokens: Tensor) -> Tensor:
        """The layer's input rows x_t: embedding (+ encoding) (+ shift), (B, T) -> (B, T, d_model)."""
        if tokens.dim() != 2 or tokens.shape[1] != self.T:
            raise SeqlabError(N_("tokens must have shape (B, {T}), received {shape}"), T=self.T,
                              shape=tuple(tokens.shape))
        e = self.embedding(tokens)  # (B, T, d_model)
        if self.shift_proj is not None:
            previous = nn.functional.pad(e[:, :-1], (0, 0, 1, 0))  # (B, T, d_model): e_{t-1}, e_0 = 0
            e = e + self.shift_proj(previous)  # (B, T, d_model): e_t + W_s e_{t-1}
        return e + self.encoding  # (B, T, d_model)

    def outputs(self, x: Tensor) -> Tensor:
        """The layer's outputs at every position, (B, T, d_model) -> (B, T, o) (not for the MLP)."""
        y = self.layer(x)
        return y if self.model in MIXER_MODELS else y[0]  # torch RNNs and SelfAttention return tuples

    def readout(self, x: Tensor) -> Tensor:
        """What the head reads: y_T (B, o), the MLP's hidden layer (B, w), or y at every position (B, T, o)."""
        if self.model == "mlp":
            return torch.tanh(self.layer(x.flatten(1)))  # (B, w): tanh(W [x_1; ...; x_T] + b)
        y = self.outputs(x)  # (B, T, o): states h_t, attention outputs c_t, mixer outputs
        return y if self.per_position else y[:, -1]  # (B, T, o) or (B, o)

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits (B, C) for token ids (B, T); (B, T, C) when per position."""
        return self.head(self.readout(self.inputs(tokens)))

    def parameter_count(self) -> int:
        """Parameters counted on the module (the closed form :func:`parameter_count` must agree)."""
        return sum(p.numel() for p in self.parameters())

    def recurrent_weight(self) -> Tensor | None:
        """The (w, w) state-to-state matrix whose spectral radius is reported (L3), or None.

        Elman: W_hh. LSTM and GRU: the block of W_hh that feeds the tanh candidate (g of i, f, g, o;
        n of r, z, n), the analogue of Elman's W_hh; their additive bypass is not a matrix product.
        """
        if self.model not in GATES:
            return None
        w = self.width
        weight = self.layer.weight_hh_l0.detach()  # (gates·w, w)
        return weight if self.model == "elman" else weight[2 * w: 3 * w]  # (w, w)

    def reach_layer(self) -> Callable[[Tensor], Tensor] | None:
        """A float64 copy of the sequence layer, x (T, d_model) -> y (T, o), for ``measure_reach``.

        None for the MLP, whose one output is not a sequence.
        """
        if self.model == "mlp":
            return None
        layer = copy.deepcopy(self.layer).to(torch.float64).eval()
        return _Unbatched(layer) if self.model in MIXER_MODELS else layer

    def decode(self, tokens: Tensor) -> tuple[Tensor, tuple[Tensor, ...]] | None:
        """Run the layer one token at a time: its outputs (B, T, o) and the state held after the last token.

        The state is what a decoder must keep to go on: the torch recurrences' (h,) or (h, c); attention's KV
        cache (K, V), (B, T, w) each, grown by :class:`~seqlab.layers.decoding.KVCacheDecoder` on a causal copy
        of the layer (the cache does not depend on the mask); a mixer's own ``step`` state; and, first, the
        embedding row e_T when the model shifts (the next step needs it). The outputs equal
        :meth:`outputs` of the parallel pass (causal layers; for the lesson's non-causal attention, its last row).

        Returns:
            (outputs, state), or None for the MLP, which has no step.

        Raises:
            SeqlabError: tokens not (B, T).
        """
        if self.model == "mlp":
            return None
        x = self.inputs(tokens)  # (B, T, d_model)
        B = x.shape[0]
        if self.model in GATES:
            step, state = self._torch_step, None
        elif self.model in MIXER_MODELS:
            step, state = self.layer.step, self.layer.initial_state(B, dtype=x.dtype)
        else:
            attention = copy.copy(self.layer)
            attention.causal = True
            decoder = KVCacheDecoder(attention)
            step, state = decoder.step, decoder.initial_state(B, dtype=x.dtype)
        ys = []
        with torch.no_grad():
            for t in range(x.shape[1]):
                y, state = step(x[:, t], state)  # (B, o)
                ys.append(y)
        held = tuple(state)
        if self.shift_proj is not None:
            held = (self.embedding(tokens[:, -1]),) + held  # (B, d_model): e_T, for the next shift
        return torch.stack(ys, dim=1), held  # (B, T, o)

    def _torch_step(self, x_t: Tensor, state: tuple[Tensor, ...] | None) -> tuple[Tensor, tuple[Tensor, ...]]:
        """One step of a torch RNN/LSTM/GRU: (y_t (B, w), its state (h,) or (h, c), each (1, B, w))."""
        hidden = None if state is None else (state if self.model == "lstm" else state[0])
        y, hidden = self.layer(x_t.unsqueeze(1), hidden)  # (B, 1, w)
        return y[:, 0], (tuple(hidden) if self.model == "lstm" else (hidden,))
