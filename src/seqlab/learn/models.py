"""Tiny classifiers of one parameter budget: a token embedding, one sequence layer, a linear readout.

Every model reads token ids (B, T), looks up an embedding x_t (d_model wide), runs one layer and
reads the answer at the **last position**, y_T, through a linear map to the classes:

* ``elman`` — h_t = tanh(W_hh h_{t-1} + W_xh x_t + b) (L1), ``torch.nn.RNN``;
* ``lstm`` / ``gru`` — ``torch.nn.LSTM`` / ``torch.nn.GRU``: the same T-1 steps, with an additive
  bypass (L3);
* ``attention`` — one :class:`~seqlab.layers.attention.SelfAttention` layer (scaled dot, Q, K, V of
  width ``width``), y_T = sum_j alpha_Tj v_j (L2, L4);
* ``attention-pe`` — the same, with the sinusoidal positional encoding of "Attention Is All You
  Need" §3.5 added to the embedding rows (L10's fix, block 5 lesson 5 of the course);
* ``mlp`` — the concatenated MLP of block 3 lesson 1 (L10): the T embeddings side by side, one
  hidden layer tanh(W [x_1; ...; x_T] + b), so each position has a weight block of its own.

The budget is a total parameter count (embedding + layer + readout): each model gets the largest
``width`` (hidden size d_h, or d_k = d_v for attention) whose closed-form count
(:func:`parameter_count`) stays within it. Initial weights come from a seeded ``torch.Generator``
(the global RNG is never touched): the layers and readout as ``torch.nn`` does,
U(-1/sqrt(fan), 1/sqrt(fan)); the LSTM forget-gate bias starts at +1 (Jozefowicz et al. 2015);
the embedding at N(0, 0.1²) — small, so attention starts out nearly uniform and every key token is
attended to from the first step (with N(0, 1) some seeds stall with a key class that attention
never looks at).

Shape letters: B batch, T positions, V vocabulary, C classes, d_model embedding width, w width.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.layers.attention import SelfAttention

__all__ = ["LABELS", "MODELS", "RECURRENT", "TaskModel", "parameter_count", "sinusoidal_encoding",
           "width_for_budget"]

MODELS = ("elman", "lstm", "gru", "attention", "attention-pe", "mlp")
#: Names shown in tables (the renderer translates them).
LABELS = {"elman": "Elman RNN", "lstm": "LSTM", "gru": "GRU", "attention": "Attention",
          "attention-pe": "Attention + PE", "mlp": "MLP (per position)"}
#: Gate blocks of W_xh and W_hh: h_t has 1 (Elman), the LSTM 4 (i, f, g, o), the GRU 3 (r, z, n).
GATES = {"elman": 1, "lstm": 4, "gru": 3}
RECURRENT = tuple(GATES)
EMBEDDING_STD = 0.1
FORGET_BIAS = 1.0
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
        raise SeqlabError(f"model must be one of {', '.join(MODELS)}; received {model!r}", parameter="models")
    return model


def parameter_count(model: str, width: int, *, d_model: int, vocab: int, classes: int, T: int) -> int:
    """Closed-form parameter count: embedding V·d + layer + readout w·C + C.

    Layers (torch keeps two bias vectors in each recurrent gate): Elman w·d + w² + 2w; LSTM 4× that;
    GRU 3× that; attention 3·d·w (bias-free W_q, W_k, W_v; the encoding has no parameters);
    MLP T·d·w + w.

    >>> parameter_count("elman", 29, d_model=16, vocab=24, classes=8, T=64)  # 384 + 1,363 + 240
    1987
    >>> parameter_count("attention", 28, d_model=16, vocab=24, classes=8, T=64)  # 384 + 1,344 + 232
    1960

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
    else:
        layer = 3 * d * w
    return vocab * d + layer + w * classes + classes


def width_for_budget(model: str, budget: int, *, d_model: int, vocab: int, classes: int, T: int) -> int:
    """The largest width whose :func:`parameter_count` is <= ``budget`` (1 when even width 1 is over).

    >>> [width_for_budget(m, 2000, d_model=16, vocab=24, classes=8, T=64) for m in ("elman", "lstm", "gru")]
    [29, 12, 15]

    Raises:
        SeqlabError: unknown model or a size that is not an integer >= 1.
    """
    require_positive_int("budget", budget)
    width = 1
    while width < _MAX_WIDTH and parameter_count(model, width + 1, d_model=d_model, vocab=vocab,
                                                 classes=classes, T=T) <= budget:
        width += 1
    return width


def _fill_uniform(module: nn.Module, fan: int, generator: torch.Generator) -> None:
    bound = 1.0 / math.sqrt(fan)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.uniform_(-bound, bound, generator=generator)


class TaskModel(nn.Module):
    """Embedding, one sequence layer, readout at the last position: token ids (B, T) -> logits (B, C).

    >>> m = TaskModel("gru", 15, d_model=16, vocab=24, classes=8, T=10,
    ...               generator=torch.Generator().manual_seed(0))
    >>> m(torch.zeros(2, 10, dtype=torch.long)).shape, m.parameter_count()
    (torch.Size([2, 8]), 1997)

    Args:
        model: one of :data:`MODELS`.
        width: hidden size (recurrences, MLP) or d_k = d_v (attention).
        d_model: embedding width.
        vocab: number of token ids V.
        classes: number of labels C.
        T: sequence length (the MLP's input size and the encoding's rows depend on it).
        generator: seeded source of every initial weight.

    Raises:
        SeqlabError: unknown model or a size that is not an integer >= 1.
    """

    def __init__(self, model: str, width: int, *, d_model: int, vocab: int, classes: int, T: int,
                 generator: torch.Generator) -> None:
        super().__init__()
        parameter_count(model, width, d_model=d_model, vocab=vocab, classes=classes, T=T)  # validates
        self.model, self.width, self.T = model, width, T
        self.embedding = nn.Embedding(vocab, d_model, device="meta").to_empty(device="cpu")
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, EMBEDDING_STD, generator=generator)
        pe = sinusoidal_encoding(T, d_model) if model == "attention-pe" else torch.zeros(T, d_model)
        self.register_buffer("encoding", pe)  # (T, d_model)
        if model in GATES:
            kind = {"elman": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[model]
            self.layer = kind(d_model, width, batch_first=True, device="meta").to_empty(device="cpu")
            _fill_uniform(self.layer, width, generator)
            if model == "lstm":
                with torch.no_grad():
                    self.layer.bias_ih_l0[width: 2 * width] += FORGET_BIAS  # the f block of (i, f, g, o)
        elif model == "mlp":
            self.layer = nn.Linear(T * d_model, width, device="meta").to_empty(device="cpu")
            _fill_uniform(self.layer, T * d_model, generator)
        else:
            self.layer = SelfAttention(d_model, d_k=width, d_v=width, score="scaled_dot", generator=generator)
        self.head = nn.Linear(width, classes, device="meta").to_empty(device="cpu")
        _fill_uniform(self.head, width, generator)

    def inputs(self, tokens: Tensor) -> Tensor:
        """The layer's input rows x_t: embedding (+ encoding), (B, T) -> (B, T, d_model)."""
        if tokens.dim() != 2 or tokens.shape[1] != self.T:
            raise SeqlabError(f"tokens must have shape (B, {self.T}), received {tuple(tokens.shape)}")
        return self.embedding(tokens) + self.encoding  # (B, T, d_model)

    def readout(self, x: Tensor) -> Tensor:
        """The vector read at the last position, (B, T, d_model) -> (B, w): y_T, or the MLP's hidden layer."""
        if self.model == "mlp":
            return torch.tanh(self.layer(x.flatten(1)))  # (B, w): tanh(W [x_1; ...; x_T] + b)
        y = self.layer(x)[0]  # (B, T, w): states h_t, or attention outputs c_t
        return y[:, -1]  # (B, w)

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits (B, C) for token ids (B, T)."""
        return self.head(self.readout(self.inputs(tokens)))  # (B, C)

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
        """A float64 copy of the sequence layer, x (T, d_model) -> y (T, w), for ``measure_reach``.

        None for the MLP, whose one output is not a sequence.
        """
        if self.model == "mlp":
            return None
        return copy.deepcopy(self.layer).to(torch.float64).eval()
