"""Retention: linear attention with a fixed decay γ and no normaliser, in its parallel and recurrent forms.

RetNet's retention (Sun et al. 2023, §2.1), single-scale and without the xPos rotation, the group norm and the
swish gate of the full block:

    parallel:  O = (Q Kᵀ ⊙ D) V,  D_nm = γ^(n−m) for n ≥ m, else 0   (B, T, T) decay mask
    recurrent: S_n = γ S_{n−1} + K_nᵀ V_n,  o_n = Q_n S_n               (B, d_k, d_v) state

with Q = X W_Q, K = X W_K, V = X W_V and the output W_O o. The two forms regroup the same sums, so they agree in
float64; the recurrent form decodes one position with a fixed state. Multiplications:
:func:`seqlab.cost.retention_multiplications` (the decay products are element-wise, not in that unit).

Shape letters: B batch, T positions, d_model the mixer's width, d_k and d_v the key and value widths.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqlab.cost import retention_multiplications
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.layers.mixer_common import check_form, check_sequence, check_step, linear

__all__ = ["RETENTION_FORMS", "Retention"]

#: The forms of :class:`Retention`.
RETENTION_FORMS = ("parallel", "recurrent")


class Retention(torch.nn.Module):
    """Single-scale retention with decay ``gamma``: (B, T, d_model) -> (B, T, d_model).

    >>> layer = Retention(8, form="recurrent", generator=torch.Generator().manual_seed(0))
    >>> layer(torch.randn(2, 5, 8)).shape, layer.multiplications(5)  # 5 * (8*24 + 8*8) + 5 * 2 * 64
    (torch.Size([2, 5, 8]), 1920)

    Args:
        d_model: width of x and y.
        d_k, d_v: widths of the keys and the values (default d_model).
        form: ``"parallel"`` or ``"recurrent"``.
        gamma: the decay γ in (0, 1).
        generator: RNG for the weights.
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a width that is not a positive integer, an unknown form, or γ outside (0, 1).

    Source: Sun et al. 2023 (RetNet), §2.1, equations (5)–(6).
    """

    def __init__(self, d_model: int, d_k: int | None = None, d_v: int | None = None, *, form: str = "parallel",
                 gamma: float = 0.9, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_k = require_positive_int("d_k", d_model if d_k is None else d_k)
        self.d_v = require_positive_int("d_v", d_model if d_v is None else d_v)
        self.form = check_form(form, RETENTION_FORMS)
        if not 0 < gamma < 1:
            raise SeqlabError(f"gamma must lie in (0, 1), received {gamma}", parameter="gamma")
        self.gamma = float(gamma)
        self.q_proj = linear(self.d_model, self.d_k, generator, dtype)  # W_Q
        self.k_proj = linear(self.d_model, self.d_k, generator, dtype)  # W_K
        self.v_proj = linear(self.d_model, self.d_v, generator, dtype)  # W_V
        self.o_proj = linear(self.d_v, self.d_model, generator, dtype)  # W_O

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This layer's closed form (:func:`seqlab.cost.retention_multiplications`) at length T."""
        return retention_multiplications(T, self.d_model, self.d_k, self.d_v, self.form, batch=batch)

    def _parallel(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        T = q.shape[1]
        n = torch.arange(T)
        distance = (n[:, None] - n[None, :]).to(q.dtype)  # (T, T): n − m
        decay = torch.where(distance >= 0, self.gamma ** distance.clamp(min=0), 0.0)  # (T, T): D
        return ((q @ k.transpose(-2, -1)) * decay) @ v  # (B, T, d_v): T²·d_k + T²·d_v

    def _recurrent(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        S = torch.zeros(q.shape[0], self.d_k, self.d_v, dtype=q.dtype)  # (B, d_k, d_v)
        outputs = []
        for t in range(q.shape[1]):
            o, S = self._step(q[:, t], k[:, t], v[:, t], S)
            outputs.append(o)
        return torch.stack(outputs, dim=1)  # (B, T, d_v)

    def _step(self, q: Tensor, k: Tensor, v: Tensor, S: Tensor) -> tuple[Tensor, Tensor]:
        S = self.gamma * S + k.unsqueeze(-1) @ v.unsqueeze(-2)  # (B, d_k, d_v): d_k·d_v
        return (q.unsqueeze(-2) @ S).squeeze(-2), S  # (B, d_v): d_k·d_v

    def forward(self, x: Tensor) -> Tensor:
        """y (B, T, d_model) for x (B, T, d_model), by this layer's form.

        Raises:
            SeqlabError: x is not (B, T, d_model) of the layer's dtype.
        """
        x = check_sequence(self, x, self.d_model)
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, d_k|d_v)
        mix = self._parallel if self.form == "parallel" else self._recurrent
        return self.o_proj(mix(q, k, v))  # (B, T, d_model)

    def initial_state(self, batch: int, *, dtype: torch.dtype | None = None,
                      device: torch.device | str = "cpu") -> tuple[Tensor]:
        """(S,) = zeros (B, d_k, d_v): the state before the first position.

        Raises:
            SeqlabError: batch is not a positive integer.
        """
        batch = require_positive_int("batch", batch)
        dtype = self.q_proj.weight.dtype if dtype is None else dtype
        return (torch.zeros(batch, self.d_k, self.d_v, dtype=dtype, device=device),)

    def step(self, x_t: Tensor, state: tuple[Tensor]) -> tuple[Tensor, tuple[Tensor]]:
        """Decode one position: (y_t (B, d_model), new (S,)) from x_t (B, d_model); costs
        :func:`seqlab.cost.retention_step_multiplications` whatever the position.

        Raises:
            SeqlabError: x_t or the state do not have the shapes above.
        """
        B = x_t.shape[0] if isinstance(x_t, Tensor) and x_t.dim() == 2 else 0
        check_step(self, x_t, self.d_model, state, [(B, self.d_k, self.d_v)])
        q, k, v = self.q_proj(x_t), self.k_proj(x_t), self.v_proj(x_t)  # (B, d_k|d_v)
        o, S = self._step(q, k, v, state[0])
        return self.o_proj(o), (S,)  # (B, d_model)
