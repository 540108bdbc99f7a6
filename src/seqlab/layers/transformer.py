"""Figure 1 of "Attention Is All You Need" as fifteen boxes, each one callable on its own (L11).

The course draws the encoder–decoder Transformer as fifteen boxes (the paper's fourteen rectangles,
with both positional encodings drawn as boxes and Linear + Softmax joined into one). Here each box is
a small module over PyTorch's own parts, so that :mod:`seqlab.measure.mixing` can run it alone and
ask whether its output rows read other positions:

* encoder, bottom to top — ``input_embedding`` (``nn.Embedding`` · √d_model, §3.4),
  ``positional_encoding`` (sinusoids, §3.5), ``self_attention``, ``add_norm_1``, ``feed_forward``,
  ``add_norm_2`` (the parts of one ``nn.TransformerEncoderLayer``, §3.1–3.3);
* decoder, bottom to top — ``output_embedding`` (the same table), ``positional_encoding``,
  ``masked_self_attention``, ``add_norm_1``, ``cross_attention`` (encoder–decoder attention),
  ``add_norm_2``, ``feed_forward``, ``add_norm_3`` (the parts of one ``nn.TransformerDecoderLayer``),
  ``linear_softmax`` (``nn.Linear`` tied to the embedding, §3.4, then a softmax).

The boxes borrow the submodules of the two PyTorch layers (``self_attn``, ``norm1``, ``linear1``…),
so two routes give the same numbers: :func:`compose` runs the boxes one after another, and
:meth:`Transformer.forward` runs ``nn.TransformerEncoderLayer.forward`` and
``nn.TransformerDecoderLayer.forward`` (post-norm, as in the paper; dropout 0). One layer per stack
(the paper repeats each N = 6 times; every repeat holds the same boxes).

"Outputs (shifted right)" is the decoder's input, not a box: :func:`shift_right` moves the target
ids one place (a start id first) before the output embedding sees them, as in the paper's drawing.

Shape letters: B = 1 batch, S source positions, T target positions, d_model width, V vocabulary.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_

__all__ = ["BOX_KEYS", "ENCODER", "DECODER", "Transformer", "compose", "shift_right", "sinusoidal_encoding"]

ENCODER = "encoder"
DECODER = "decoder"
#: The fifteen boxes in the paper's order: encoder bottom to top, then decoder bottom to top (L11).
BOX_KEYS = (
    "encoder.input_embedding", "encoder.positional_encoding", "encoder.self_attention", "encoder.add_norm_1",
    "encoder.feed_forward", "encoder.add_norm_2",
    "decoder.output_embedding", "decoder.positional_encoding", "decoder.masked_self_attention",
    "decoder.add_norm_1", "decoder.cross_attention", "decoder.add_norm_2", "decoder.feed_forward",
    "decoder.add_norm_3", "decoder.linear_softmax",
)


def sinusoidal_encoding(T: int, d_model: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The paper's positional encodings (§3.5), one row per position: (T, d_model).

    PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    >>> pe = sinusoidal_encoding(4, 6)
    >>> tuple(pe.shape), pe[0].tolist()  # position 0: sin 0 = 0, cos 0 = 1
    ((4, 6), [0.0, 1.0, 0.0, 1.0, 0.0, 1.0])

    Raises:
        SeqlabError: ``T`` or ``d_model`` is not an integer >= 1.
    """
    require_positive_int("T", T)
    require_positive_int("d_model", d_model)
    position = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    angle = position * frequency  # (T, ⌈d_model/2⌉)
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return pe.to(dtype)


def shift_right(target: Tensor, start: int) -> Tensor:
    """The decoder's input: ``start`` first, then the target ids but the last, (1, T) -> (1, T).

    >>> shift_right(torch.tensor([[5, 6, 7]]), 0)
    tensor([[0, 5, 6]])
    """
    start_column = torch.full_like(target[:, :1], start)  # (1, 1)
    return torch.cat([start_column, target[:, :-1]], dim=1)  # (1, T)


class TokenEmbedding(nn.Module):
    """Input or output embedding box: token ids (1, T) -> rows (1, T, d_model), scaled by √d_model (§3.4)."""

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        self.embedding = embedding

    def forward(self, tokens: Tensor) -> Tensor:
        return self.embedding(tokens) * math.sqrt(self.embedding.embedding_dim)  # (1, T, d_model)


class PositionalEncoding(nn.Module):
    """Positional-encoding box: x (1, T, d_model) -> x + PE[:T] (§3.5); holds PE for ``max_length`` rows."""

    def __init__(self, max_length: int, d_model: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_length, d_model, dtype), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.table[: x.shape[1]]  # (1, T, d_model)


class SelfAttention(nn.Module):
    """(Masked) multi-head self-attention box: x (1, T, d_model) -> (1, T, d_model); Q, K, V all from x.

    With ``causal`` the mask is ``nn.Transformer.generate_square_subsequent_mask``: row i sees j <= i.
    """

    def __init__(self, attention: nn.MultiheadAttention, causal: bool) -> None:
        super().__init__()
        self.attention, self.causal = attention, causal

    def forward(self, x: Tensor) -> Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=x.dtype) if self.causal else None
        return self.attention(x, x, x, attn_mask=mask, is_causal=self.causal, need_weights=False)[0]


class CrossAttention(nn.Module):
    """Encoder–decoder attention box: queries from x (1, T, d_model), keys and values from memory (1, S, d_model)."""

    def __init__(self, attention: nn.MultiheadAttention) -> None:
        super().__init__()
        self.attention = attention

    def forward(self, x: Tensor, memory: Tensor) -> Tensor:
        return self.attention(x, memory, memory, need_weights=False)[0]  # (1, T, d_model)


class AddNorm(nn.Module):
    """Add & norm box: LayerNorm(residual + sublayer), both (1, T, d_model) (§3.1)."""

    def __init__(self, norm: nn.LayerNorm) -> None:
        super().__init__()
        self.norm = norm

    def forward(self, residual: Tensor, sublayer: Tensor) -> Tensor:
        return self.norm(residual + sublayer)


class FeedForward(nn.Module):
    """Position-wise feed-forward box: W_2 ReLU(W_1 x + b_1) + b_2 on each row, (1, T, d_model) (§3.3)."""

    def __init__(self, layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor) -> Tensor:
        return self.layer.linear2(self.layer.activation(self.layer.linear1(x)))


class LinearSoftmax(nn.Module):
    """Linear + softmax box: rows (1, T, d_model) -> next-token probabilities (1, T, V) (§3.4)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.linear = linear

    def forward(self, x: Tensor) -> Tensor:
        return torch.softmax(self.linear(x), dim=-1)


class Transformer(nn.Module):
    """One-layer encoder–decoder Transformer (Vaswani et al. 2017, §3) whose parts are the 15 boxes (L11).

    >>> model = Transformer(vocabulary=11, d_model=8, heads=2, max_length=16).eval()
    >>> source, target = torch.tensor([[1, 2, 3, 4]]), torch.tensor([[5, 6, 7]])
    >>> tuple(model(source, shift_right(target, 0)).shape)  # (1, T, V)
    (1, 3, 11)
    >>> len(model.boxes())
    15

    Args:
        vocabulary: V, number of token ids (source, target and the start id share one table).
        d_model: width of every row; a multiple of ``heads``.
        heads: attention heads h, each of width d_model / h.
        d_ff: inner width of the feed-forward boxes (default 4·d_model, the paper's 2048 / 512).
        max_length: the longest sequence the positional table covers.
        dtype: floating dtype of every parameter.

    Raises:
        SeqlabError: a size that is not an integer >= 1 (V >= 2), or ``heads`` not dividing ``d_model``.

    The source and target embeddings and the pre-softmax linear share one matrix (§3.4). It is drawn
    with N(0, 1/d_model) entries, so that the ·√d_model scale gives rows of unit-variance entries.
    """

    def __init__(self, vocabulary: int, d_model: int, heads: int, d_ff: int | None = None,
                 max_length: int = 512, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        require_positive_int("vocabulary", vocabulary)
        require_positive_int("d_model", d_model)
        require_positive_int("heads", heads)
        require_positive_int("max_length", max_length)
        if vocabulary < 2:
            raise SeqlabError(N_("vocabulary must be an integer >= 2, received {vocabulary}"), vocabulary=vocabulary,
                              parameter="vocabulary")
        if d_model % heads:
            raise SeqlabError(N_("heads must divide d_model, received d_model = {d_model} and heads = {heads}"),
                              d_model=d_model, heads=heads, parameter="heads")
        d_ff = 4 * d_model if d_ff is None else require_positive_int("d_ff", d_ff)
        options = dict(dim_feedforward=d_ff, dropout=0.0, batch_first=True, norm_first=False, dtype=dtype)
        self.embedding = nn.Embedding(vocabulary, d_model, dtype=dtype)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)
        self.positional_encoding = PositionalEncoding(max_length, d_model, dtype)
        self.encoder_layer = nn.TransformerEncoderLayer(d_model, heads, **options)
        self.decoder_layer = nn.TransformerDecoderLayer(d_model, heads, **options)
        self.generator = nn.Linear(d_model, vocabulary, bias=False, dtype=dtype)
        self.generator.weight = self.embedding.weight  # (V, d_model), shared (§3.4)

    def boxes(self) -> dict[str, nn.Module]:
        """The fifteen boxes, keyed by :data:`BOX_KEYS` in the paper's order; they share this model's parameters."""
        encoder, decoder = self.encoder_layer, self.decoder_layer
        embedding = TokenEmbedding(self.embedding)
        return {
            "encoder.input_embedding": embedding,
            "encoder.positional_encoding": self.positional_encoding,
            "encoder.self_attention": SelfAttention(encoder.self_attn, causal=False),
            "encoder.add_norm_1": AddNorm(encoder.norm1),
            "encoder.feed_forward": FeedForward(encoder),
            "encoder.add_norm_2": AddNorm(encoder.norm2),
            "decoder.output_embedding": embedding,
            "decoder.positional_encoding": self.positional_encoding,
            "decoder.masked_self_attention": SelfAttention(decoder.self_attn, causal=True),
            "decoder.add_norm_1": AddNorm(decoder.norm1),
            "decoder.cross_attention": CrossAttention(decoder.multihead_attn),
            "decoder.add_norm_2": AddNorm(decoder.norm2),
            "decoder.feed_forward": FeedForward(decoder),
            "decoder.add_norm_3": AddNorm(decoder.norm3),
            "decoder.linear_softmax": LinearSoftmax(self.generator),
        }

    def forward(self, source: Tensor, target_in: Tensor) -> Tensor:
        """Next-token probabilities through PyTorch's own layer forwards: (1, S), (1, T) ids -> (1, T, V)."""
        scale = math.sqrt(self.embedding.embedding_dim)
        memory = self.encoder_layer(self.positional_encoding(self.embedding(source) * scale))  # (1, S, d_model)
        y = self.positional_encoding(self.embedding(target_in) * scale)  # (1, T, d_model)
        mask = nn.Transformer.generate_square_subsequent_mask(target_in.shape[1], dtype=y.dtype)  # (T, T)
        y = self.decoder_layer(y, memory, tgt_mask=mask, tgt_is_causal=True)  # (1, T, d_model)
        return torch.softmax(self.generator(y), dim=-1)  # (1, T, V)


def compose(boxes: dict[str, nn.Module], source: Tensor, target_in: Tensor
            ) -> tuple[Tensor, dict[str, dict[str, Tensor]]]:
    """Run the fifteen boxes one after another; return the output and the keyword inputs each box received.

    Args:
        boxes: key -> callable box, for every key of :data:`BOX_KEYS` (see :meth:`Transformer.boxes`;
            any box may be replaced by another callable with the same keywords).
        source: source token ids (1, S), int64.
        target_in: the decoder's input ids (1, T), already shifted right (:func:`shift_right`).

    Returns:
        (probabilities (1, T, V), {key: {keyword: tensor}}) with the inputs detached, in :data:`BOX_KEYS` order.

    Raises:
        SeqlabError: a key of :data:`BOX_KEYS` is missing from ``boxes``.

    >>> model = Transformer(vocabulary=9, d_model=8, heads=2, max_length=8).eval()
    >>> out, inputs = compose(model.boxes(), torch.tensor([[1, 2, 3]]), torch.tensor([[0, 4]]))
    >>> sorted(inputs["decoder.cross_attention"]), tuple(inputs["decoder.cross_attention"]["memory"].shape)
    (['memory', 'x'], (1, 3, 8))
    """
    missing = [key for key in BOX_KEYS if key not in boxes]
    if missing:
        raise SeqlabError(N_("compose needs all fifteen boxes, missing {missing}"), missing=missing)
    inputs: dict[str, dict[str, Tensor]] = {}

    def run(key: str, **arguments: Tensor) -> Tensor:
        inputs[key] = {name: value.detach() for name, value in arguments.items()}
        return boxes[key](**arguments)

    x = run("encoder.input_embedding", tokens=source)  # (1, S, d_model)
    x = run("encoder.positional_encoding", x=x)
    x = run("encoder.add_norm_1", residual=x, sublayer=run("encoder.self_attention", x=x))
    memory = run("encoder.add_norm_2", residual=x, sublayer=run("encoder.feed_forward", x=x))  # (1, S, d_model)
    y = run("decoder.output_embedding", tokens=target_in)  # (1, T, d_model)
    y = run("decoder.positional_encoding", x=y)
    y = run("decoder.add_norm_1", residual=y, sublayer=run("decoder.masked_self_attention", x=y))
    y = run("decoder.add_norm_2", residual=y, sublayer=run("decoder.cross_attention", x=y, memory=memory))
    y = run("decoder.add_norm_3", residual=y, sublayer=run("decoder.feed_forward", x=y))
    probabilities = run("decoder.linear_softmax", x=y)  # (1, T, V)
    return probabilities, {key: inputs[key] for key in BOX_KEYS}
