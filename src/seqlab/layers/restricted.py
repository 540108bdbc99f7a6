"""Restricted self-attention: each position attends only to the 2r + 1 positions around it (Table 1, L7).

Vaswani et al. (2017, section 4) list "self-attention (restricted)" with a neighbourhood of size r:
query i scores only the keys j with |j - i| ≤ r,

    e_ij = q_i · k_j / √d_k   (|j - i| ≤ r),    α_i = softmax_j(e_i),    c_i = Σ_j α_ij v_j,

so one layer costs (2r + 1)·T·(d_k + d_v) multiplications — the paper's O(r·n·d) — instead of
T²·(d_k + d_v), its chain is still three products (projection, scores, mix: O(1) sequential
operations), and a stack needs ⌈(T - 1)/r⌉ layers before every pair of positions is connected
(path O(n/r)).

It is computed *banded*, so the counted work really is (2r + 1)·T·(d_k + d_v), not T²: the keys and
values are padded with r zero rows at each end and ``unfold`` gathers the 2r + 1 of each query's
window, (…, T, d, 2r + 1); the scores are one batched product of each query with its own window, the
mix a second one. Slots that fall in the padding hold constant zeros, their scores are filled with
-inf by a constant mask (so their weights are exactly 0), and the path engine therefore sees no
dependency through them. The padded slots are still multiplied — the count includes them.

Shape letters: B batch (optional), T positions, d_model, d_k, d_v widths, W = 2r + 1 window slots.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.cost import restricted_attention_multiplications  # the closed form, re-exported: seqlab.cost holds it
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.attention import SelfAttention
from seqlab.layers.transition import apply_transition

__all__ = ["RestrictedAttentionStack", "RestrictedSelfAttention", "layers_to_connect",
           "restricted_attention_multiplications"]


def layers_to_connect(T: int, window: int) -> int:
    """Least depth of a stack of window-r layers that connects all T positions: ⌈(T - 1)/r⌉, at least 1.

    A layer moves information at most r positions, so L layers reach L·r.

    >>> layers_to_connect(256, 8), layers_to_connect(9, 4), layers_to_connect(1, 4)
    (32, 2, 1)

    Raises:
        SeqlabError: an argument is not an integer >= 1.
    """
    T = require_positive_int("T", T)
    window = require_positive_int("window", window)
    return max(1, -(-(T - 1) // window))


def _windows(t: Tensor, window: int) -> Tensor:
    """(…, T, d) -> (…, T, d, 2r + 1): the rows t - r … t + r of each position, zeros past the ends."""
    padded = F.pad(t, (0, 0, window, window))  # (…, T + 2r, d): r constant zero rows at each end
    return padded.unfold(-2, 2 * window + 1, 1)  # (…, T, d, 2r + 1), a view


def _band_mask(T: int, window: int, device: torch.device) -> Tensor:
    """(T, 2r + 1) bool: slot w of query t is a real position, 0 <= t + w - r < T.

    Built with movement ops only (a constant of T, so no compute op enters the layer's span): with the
    slots reversed, w' = 2r - w, the two bounds read w' - t <= r and w' - t >= r + 1 - T, a band that
    ``tril`` and ``triu`` cut out of a matrix of ones.

    >>> _band_mask(3, 1, torch.device("cpu"))
    tensor([[False,  True,  True],
            [ True,  True,  True],
            [ True,  True, False]])
    """
    ones = torch.ones(T, 2 * window + 1, dtype=torch.bool, device=device)  # (T, W)
    return ones.tril(window).triu(window + 1 - T).flip(-1)  # (T, W)


class RestrictedSelfAttention(SelfAttention):
    """Self-attention where position i attends only to |j - i| ≤ r, computed banded.

    Projections as in :class:`~seqlab.layers.attention.SelfAttention` (bias-free W_q, W_k, W_v);
    the score is the scaled dot product.

    >>> layer = RestrictedSelfAttention(8, 2, generator=torch.Generator().manual_seed(0))
    >>> out, w = layer(torch.randn(5, 8))
    >>> out.shape, w.shape  # (T, d_v), (T, 2r + 1): one weight per window slot
    (torch.Size([5, 8]), torch.Size([5, 5]))

    Args:
        d_model: width of x.
        window: r >= 1, the largest |j - i| a query may attend to.
        d_k, d_v: query/key and value widths (default d_model).
        generator: RNG for the weights (reproducible construction).
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a width or window that is not a positive integer.
    """

    def __init__(self, d_model: int, window: int, *, d_k: int | None = None, d_v: int | None = None,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> None:
        super().__init__(d_model, d_k=d_k, d_v=d_v, score="scaled_dot", generator=generator, dtype=dtype)
        self.window = require_positive_int("window", window)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, window={self.window}, d_k={self.d_k}, d_v={self.d_v}"

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """The banded attention call on projected q, k, v: (outputs (…, T, d_v), weights (…, T, 2r + 1)).

        Slot w of row t is position t + w - r; slots past the ends have weight exactly 0.

        Raises:
            SeqlabError: q, k, v do not share (…, T) or their widths are not d_k, d_k, d_v.
        """
        if not all(isinstance(t, Tensor) for t in (q, k, v)) or not (q.shape[:-1] == k.shape[:-1] == v.shape[:-1]) \
                or (q.shape[-1], k.shape[-1], v.shape[-1]) != (self.d_k, self.d_k, self.d_v):
            shapes = [tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__ for t in (q, k, v)]
            raise SeqlabError(N_("q, k, v must be (…, T, {d_k}), (…, T, {d_k}), (…, T, {d_v}); received {shapes}"),
                              d_k=self.d_k, d_v=self.d_v, shapes=shapes)
        r, T = self.window, q.shape[-2]
        keys = _windows(k, r)  # (…, T, d_k, W)
        values = _windows(v, r).transpose(-2, -1)  # (…, T, W, d_v)
        scores = (q.unsqueeze(-2) @ keys).squeeze(-2) / math.sqrt(self.d_k)  # (…, T, W): W·d_k per query
        scores = torch.where(_band_mask(T, r, q.device), scores, float("-inf"))  # (…, T, W): -inf past the ends
        weights = torch.softmax(scores, dim=-1)  # (…, T, W): padded slots get exactly 0
        scaled = apply_transition(self.attention, weights)  # (…, T, W): α_ij, declared by self.attention
        outputs = (scaled.unsqueeze(-2) @ values).squeeze(-2)  # (…, T, d_v): W·d_v per query
        return outputs, weights

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(outputs (…, T, d_v), weights (…, T, 2r + 1)) for x (T, d_model) or (B, T, d_model).

        Raises:
            SeqlabError: x has the wrong shape, or a mask is given (the band is the mask).
        """
        if mask is not None:
            raise SeqlabError(N_("restricted self-attention takes no mask (its window is the mask), received a "
                                 "{mask_class}"), mask_class=type(mask).__name__)
        return self.attend(*self.project(x))


class RestrictedAttentionStack(torch.nn.Module):
    """``layers`` restricted self-attention layers of window r, each feeding the next (d_v = d_model).

    >>> stack = RestrictedAttentionStack.connecting(17, 8, 4, generator=torch.Generator().manual_seed(0))
    >>> stack.depth, stack(torch.randn(17, 8)).shape  # ⌈16 / 4⌉ = 4 layers
    (4, torch.Size([17, 8]))

    Args:
        d_model: width of every layer.
        window: r >= 1.
        layers: depth L >= 1.
        generator, dtype: as in :class:`RestrictedSelfAttention`.

    Raises:
        SeqlabError: a size that is not a positive integer.
    """

    def __init__(self, d_model: int, window: int, *, layers: int = 1, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.depth = require_positive_int("layers", layers)
        self.window = require_positive_int("window", window)
        self.attentions = torch.nn.ModuleList(
            RestrictedSelfAttention(d_model, window, generator=generator, dtype=dtype) for _ in range(self.depth))

    @classmethod
    def connecting(cls, T: int, d_model: int, window: int, *, generator: torch.Generator | None = None,
                   dtype: torch.dtype = torch.float32) -> RestrictedAttentionStack:
        """The shallowest stack that connects every pair of T positions (:func:`layers_to_connect`)."""
        return cls(d_model, window, layers=layers_to_connect(T, window), generator=generator, dtype=dtype)

    def forward_all(self, x: Tensor) -> list[Tensor]:
        """Every layer's output [y_1, …, y_L], each (T, d_model) or (B, T, d_model).

        Raises:
            SeqlabError: x is not (T, d_model) or (B, T, d_model).
        """
        outputs, h = [], x
        for attention in self.attentions:
            h = attention(h)[0]  # (…, T, d_model)
            outputs.append(h)
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        """The last layer's output, (T, d_model) or (B, T, d_model)."""
        return self.forward_all(x)[-1]
