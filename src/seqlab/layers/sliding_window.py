"""Causal sliding-window attention: each position attends to itself and the w - 1 before it (issue 15).

Longformer's local attention (Beltagy et al. 2020, §3.1, "sliding window") and the local part of the
factorised patterns of Child et al. 2019 ("Sparse Transformers"): query t scores only the keys t - w + 1 … t,

    e_tj = q_t · k_j / √d_k   (t - w < j ≤ t),    α_t = softmax_j(e_t),    c_t = Σ_j α_tj v_j,    y_t = W_o c_t.

It is the causal, one-sided sibling of :mod:`seqlab.layers.restricted` (the paper's restricted
attention, two-sided, 2r + 1 slots). Two forms, equal up to rounding:

* ``"banded"``: the keys and values are padded with w - 1 zero rows in front and ``unfold`` gathers each
  query's w slots, so the work is T·w·(d_k + d_v) — O(T·w·d) — padded slots included (their scores are
  -inf by a constant mask, their weights exactly 0);
* ``"masked"``: the full T × T scores Q Kᵀ, then a band mask — T²·(d_k + d_v), what a dense kernel does.

Decoding keeps the last w - 1 keys and values (and which of them are real positions yet): the state does
not grow past w - 1 rows, and every step costs the same, w·(d_k + d_v) plus the projections.

Counting convention (multiplications, seqlab's unit; the closed forms live in :mod:`seqlab.cost`): matrix
products only; the √d_k scaling, the mask and the softmax are not counted; the projections W_q, W_k, W_v, W_o
are, T·d_model·(2·d_k + d_v) + T·d_v·d_model, unless ``projections=False``.

Shape letters: B batch, T positions, w window slots, d_model, d_k, d_v widths.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.cost import SLIDING_WINDOW_FORMS, sliding_window_multiplications, sliding_window_step_multiplications
from seqlab.errors import Message, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.mixer_common import check_form, check_sequence, check_step, linear, quadratic_bytes
from seqlab.layers.transition import BACKWARD, apply_transition
from seqlab.memory import MemoryEstimate, require_fits

__all__ = ["SLIDING_WINDOW_FORMS", "SlidingWindowAttention", "sliding_window_multiplications",
           "sliding_window_step_multiplications"]

def _causal_slots(T: int, window: int, device: torch.device) -> Tensor:
    """(T, w) bool: slot s of query t holds a real position, t - (w - 1) + s >= 0.

    Movement ops only (a constant: no compute op enters the span). With the slots reversed, s' = w - 1 - s,
    the condition reads s' <= t, a ``tril``.

    >>> _causal_slots(3, 2, torch.device("cpu"))
    tensor([[False,  True],
            [ True,  True],
            [ True,  True]])
    """
    return torch.ones(T, window, dtype=torch.bool, device=device).tril().flip(-1)  # (T, w)


def _band(T: int, window: int, device: torch.device) -> Tensor:
    """(T, T) bool: t - w < j <= t.

    >>> _band(3, 2, torch.device("cpu")).int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [0, 1, 1]], dtype=torch.int32)
    """
    return torch.ones(T, T, dtype=torch.bool, device=device).tril().triu(1 - window)  # (T, T)


class SlidingWindowAttention(torch.nn.Module):
    """Causal attention over the last w positions (the query's own included), banded or masked.

    >>> layer = SlidingWindowAttention(8, 3, generator=torch.Generator().manual_seed(0))
    >>> layer(torch.randn(2, 10, 8)).shape
    torch.Size([2, 10, 8])
    >>> [s.shape for s in layer.initial_state(2)]  # last w - 1 keys, values, and which are real
    [torch.Size([2, 2, 8]), torch.Size([2, 2, 8]), torch.Size([2, 2])]

    Args:
        d_model: width of x and y.
        window: w >= 1 slots per query (w = 1: each position sees only itself).
        form: ``"banded"`` (T·w work) or ``"masked"`` (T² work).
        d_k, d_v: query/key and value widths (default d_model).
        generator: RNG for the weights.
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a width or window that is not a positive integer, or an unknown form.

    Transition factor (:mod:`seqlab.layers.transition`): the weight α_tj, marked in the backward on Σ_j α_tj v_j
    (before W_o): one per layer a signal crosses.

    Source: Beltagy et al. 2020 (Longformer), §3.1; Child et al. 2019 (local pattern); beside Vaswani et al. 2017's
    restricted attention (Table 1, L7).
    """

    transition_factor = "α_ji"
    transition_scaling = BACKWARD
    transition_scale: float | None = None

    def __init__(self, d_model: int, window: int, *, form: str = "banded", d_k: int | None = None,
                 d_v: int | None = None, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.window = require_positive_int("window", window)
        self.form = check_form(form, SLIDING_WINDOW_FORMS)
        self.d_k = d_model if d_k is None else require_positive_int("d_k", d_k)
        self.d_v = d_model if d_v is None else require_positive_int("d_v", d_v)
        self.q_proj = linear(self.d_model, self.d_k, generator, dtype)
        self.k_proj = linear(self.d_model, self.d_k, generator, dtype)
        self.v_proj = linear(self.d_model, self.d_v, generator, dtype)
        self.o_proj = linear(self.d_v, self.d_model, generator, dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, window={self.window}, form={self.form!r}, d_k={self.d_k}, d_v={self.d_v}"

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This layer's closed form (:func:`sliding_window_multiplications`) at length T."""
        return sliding_window_multiplications(T, self.d_model, self.window, self.form, d_k=self.d_k, d_v=self.d_v,
                                              batch=batch)

    def _banded(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        w, T = self.window, q.shape[1]
        keys = F.pad(k, (0, 0, w - 1, 0)).unfold(1, w, 1)  # (B, T, d_k, w): slot s is position t - (w - 1) + s
        values = F.pad(v, (0, 0, w - 1, 0)).unfold(1, w, 1).transpose(-2, -1)  # (B, T, w, d_v)
        scores = (q.unsqueeze(-2) @ keys).squeeze(-2) / math.sqrt(self.d_k)  # (B, T, w): w·d_k per query
        scores = torch.where(_causal_slots(T, w, q.device), scores, float("-inf"))  # (B, T, w)
        weights = torch.softmax(scores, dim=-1)  # (B, T, w): padded slots exactly 0
        return (weights.unsqueeze(-2) @ values).squeeze(-2)  # (B, T, d_v): w·d_v per query

    def _masked(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, T = q.shape[:2]
        if q.device.type != "meta":  # meta tensors (count_on_meta) allocate nothing
            require_fits(MemoryEstimate(quadratic_bytes(B, T, q.dtype), Message(N_("the (B, T, T) scores"))),
                         Message(N_("masked sliding-window attention at B = {B}, T = {T}"), B=B, T=T))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, T, T): T²·d_k
        scores = torch.where(_band(T, self.window, q.device), scores, float("-inf"))  # (B, T, T)
        return torch.softmax(scores, dim=-1) @ v  # (B, T, d_v): T²·d_v

    def forward(self, x: Tensor) -> Tensor:
        """y (B, T, d_model) for x (B, T, d_model).

        Raises:
            SeqlabError: x is not (B, T, d_model) of the layer's dtype, or the masked form's (B, T, T) scores
                would not fit in memory.
        """
        x = check_sequence(self, x, self.d_model)
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, d_k|d_v)
        c = self._banded(q, k, v) if self.form == "banded" else self._masked(q, k, v)  # (B, T, d_v)
        return self.o_proj(apply_transition(self, c))  # (B, T, d_model)

    def initial_state(self, batch: int, *, dtype: torch.dtype | None = None,
                      device: torch.device | str = "cpu") -> tuple[Tensor, Tensor, Tensor]:
        """(K, V, real) = zeros (B, w - 1, d_k), (B, w - 1, d_v) and False (B, w - 1): no position seen yet.

        Raises:
            SeqlabError: batch is not a positive integer.
        """
        batch = require_positive_int("batch", batch)
        dtype = self.q_proj.weight.dtype if dtype is None else dtype
        rows = self.window - 1
        return (torch.zeros(batch, rows, self.d_k, dtype=dtype, device=device),
                torch.zeros(batch, rows, self.d_v, dtype=dtype, device=device),
                torch.zeros(batch, rows, dtype=torch.bool, device=device))

    def step(self, x_t: Tensor, state: tuple[Tensor, Tensor, Tensor]) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
        """Decode one position: (y_t (B, d_model), the window's last w - 1 keys, values and flags).

        Costs :func:`sliding_window_step_multiplications` whatever the position.

        Raises:
            SeqlabError: x_t or the state do not have the shapes above.
        """
        B, rows = (x_t.shape[0] if isinstance(x_t, Tensor) and x_t.dim() == 2 else 0), self.window - 1
        check_step(self, x_t, self.d_model, state, [(B, rows, self.d_k), (B, rows, self.d_v), (B, rows)])
        q, k, v = self.q_proj(x_t), self.k_proj(x_t), self.v_proj(x_t)  # (B, d_k|d_v)
        keys = torch.cat([state[0], k.unsqueeze(1)], dim=1)  # (B, w, d_k)
        values = torch.cat([state[1], v.unsqueeze(1)], dim=1)  # (B, w, d_v)
        real = torch.cat([state[2], torch.ones(B, 1, dtype=torch.bool, device=x_t.device)], dim=1)  # (B, w)
        scores = (q.unsqueeze(1) @ keys.transpose(-2, -1)).squeeze(1) / math.sqrt(self.d_k)  # (B, w): w·d_k
        weights = torch.softmax(torch.where(real, scores, float("-inf")), dim=-1)  # (B, w)
        c = (weights.unsqueeze(1) @ values).squeeze(1)  # (B, d_v): w·d_v
        return self.o_proj(c), (keys[:, 1:], values[:, 1:], real[:, 1:])
