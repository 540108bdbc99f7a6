"""Linear attention: attention whose softmax is replaced by a feature map, so it runs as an RNN too (issue 15).

Katharopoulos et al. 2020, "Transformers are RNNs", write attention with a similarity sim(q, k) and
choose sim(q, k) = φ(q)ᵀφ(k) with φ(x) = elu(x) + 1 (§3.2, eq. 7). Causal output i is then (§3.3)

    y_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i,   S_i = Σ_{j≤i} φ(k_j) v_jᵀ  (d_k × d_v),   z_i = Σ_{j≤i} φ(k_j),

which three forms compute, equal up to rounding:

* ``"parallel"``: the T × T map A = tril(φ(Q) φ(K)ᵀ), then A V and A's row sums — T²·(d_k + d_v)
  multiplications, a constant span, like softmax attention (L6);
* ``"recurrent"``: S_i = S_{i-1} + φ(k_i) v_iᵀ, z_i = z_{i-1} + φ(k_i), one position after another (§3.4,
  "Transformers are RNNs") — T·(2·d_k·d_v + d_k) multiplications, span growing as T (L1);
* ``"chunked"``: positions in chunks of C; inside a chunk the parallel form, across chunks the state
  (S, z) carried forward — Σ L²·(d_k + d_v) + T·(2·d_k·d_v + d_k) over chunks of length L, span T/C.

Not causal (``causal=False``): the parallel form drops the tril; the recurrent and chunked forms both
compute the whole state once, S = φ(K)ᵀV and z = Σ φ(k_j), and read it with every query (§3.2, eq. 6).

The mixer projects q, k, v = x W_qᵀ, x W_kᵀ, x W_vᵀ (bias-free) and maps the result back with W_o.
Counting convention (multiplications, seqlab's unit; the closed forms live in :mod:`seqlab.cost`): every
matrix product; φ, sums, the division and the causal tril are not counted; the zero state is multiplied at the
first chunk and the state after the last chunk is computed too (as decoding would continue from it).

Shape letters: B batch, T positions, L chunk length (≤ C), d_model, d_k, d_v widths.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.cost import LINEAR_ATTENTION_FORMS, linear_attention_multiplications, linear_attention_step_multiplications
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.mixer_common import check_form, check_sequence, check_step, linear, quadratic_bytes
from seqlab.layers.transition import BACKWARD, apply_transition
from seqlab.memory import MemoryEstimate, require_fits

__all__ = ["LINEAR_ATTENTION_FORMS", "LinearAttention", "feature_map", "linear_attention_multiplications",
           "linear_attention_step_multiplications"]

def feature_map(x: Tensor) -> Tensor:
    """φ(x) = elu(x) + 1, positive everywhere (Katharopoulos et al. 2020, eq. 7).

    >>> feature_map(torch.tensor([-1e9, 0.0, 2.0])).tolist()
    [0.0, 1.0, 3.0]
    """
    return F.elu(x) + 1


def _recurrent_step(q: Tensor, k: Tensor, v: Tensor, S: Tensor, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One position: (y (B, d_v), S (B, d_k, d_v), z (B, d_k)) from φ(q), φ(k) (B, d_k), v (B, d_v) and the state."""
    S = S + k.unsqueeze(-1) @ v.unsqueeze(-2)  # (B, d_k, d_v): S_i = S_{i-1} + φ(k_i) v_iᵀ, d_k·d_v
    z = z + k  # (B, d_k): z_i = z_{i-1} + φ(k_i)
    numerator = (q.unsqueeze(-2) @ S).squeeze(-2)  # (B, d_v): φ(q_i)ᵀ S_i, d_k·d_v
    denominator = (q.unsqueeze(-2) @ z.unsqueeze(-1)).squeeze(-1)  # (B, 1): φ(q_i)ᵀ z_i, d_k
    return numerator / denominator, S, z


class LinearAttention(torch.nn.Module):
    """Linear attention (φ(x) = elu(x) + 1) in its parallel, recurrent or chunked form; (B, T, d_model) in and out.

    >>> layer = LinearAttention(8, form="chunked", chunk_size=4, generator=torch.Generator().manual_seed(0))
    >>> layer(torch.randn(2, 10, 8)).shape
    torch.Size([2, 10, 8])
    >>> [s.shape for s in layer.initial_state(2)]  # S (B, d_k, d_v), z (B, d_k)
    [torch.Size([2, 8, 8]), torch.Size([2, 8])]

    Args:
        d_model: width of x and of the output.
        d_k, d_v: feature (query/key) and value widths (default d_model).
        form: one of :data:`LINEAR_ATTENTION_FORMS`.
        chunk_size: C >= 1, positions per chunk of the chunked form.
        causal: position i sees j <= i (default); False lets every position see all.
        generator: RNG for the weights (reproducible construction).
        dtype: floating dtype of the weights (float32 or float64).

    Transition factor (:mod:`seqlab.layers.transition`): the normalised weight α_ji = φ(q_j)ᵀφ(k_i) / φ(q_j)ᵀz_j,
    marked in the backward on Σ_i α_ji v_i (the mix, before W_o), in every form: one per signal whatever j - i.

    Raises:
        SeqlabError: a width or chunk size that is not a positive integer, or an unknown form.

    Source: Katharopoulos et al. 2020, §3.2–3.4 (eqs. 6–7 and the causal sums of §3.3).
    """

    transition_factor = "α_ji"
    transition_scaling = BACKWARD
    transition_scale: float | None = None

    def __init__(self, d_model: int, d_k: int | None = None, d_v: int | None = None, *, form: str = "parallel",
                 chunk_size: int = 16, causal: bool = True, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_k = d_model if d_k is None else require_positive_int("d_k", d_k)
        self.d_v = d_model if d_v is None else require_positive_int("d_v", d_v)
        self.form = check_form(form, LINEAR_ATTENTION_FORMS)
        self.chunk_size = require_positive_int("chunk_size", chunk_size)
        self.causal = bool(causal)
        self.q_proj = linear(self.d_model, self.d_k, generator, dtype)
        self.k_proj = linear(self.d_model, self.d_k, generator, dtype)
        self.v_proj = linear(self.d_model, self.d_v, generator, dtype)
        self.o_proj = linear(self.d_v, self.d_model, generator, dtype)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, d_k={self.d_k}, d_v={self.d_v}, form={self.form!r}, "
                f"chunk_size={self.chunk_size}, causal={self.causal}")

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This layer's closed form (:func:`linear_attention_multiplications`) at length T."""
        return linear_attention_multiplications(T, self.d_model, self.d_k, self.d_v, self.form, self.chunk_size,
                                                causal=self.causal, batch=batch)

    def _parallel(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, T = q.shape[:2]
        if q.device.type != "meta":  # meta tensors (count_on_meta) allocate nothing
            require_fits(MemoryEstimate(quadratic_bytes(B, T, q.dtype, maps=2), Message(N_("the (B, T, T) map"))),
                         Message(N_("parallel linear attention at B = {B}, T = {T}"), B=B, T=T))
        A = q @ k.transpose(-2, -1)  # (B, T, T): φ(q_i)ᵀφ(k_j), T²·d_k
        if self.causal:
            A = A.tril()  # (B, T, T): j <= i only
        return (A @ v) / A.sum(-1, keepdim=True)  # (B, T, d_v): T²·d_v; row sums are additions

    def _recurrent(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        if not self.causal:
            return self._global_state(q, k, v)
        S, z = self.initial_state(q.shape[0], dtype=q.dtype, device=q.device)
        outputs = []
        for t in range(q.shape[1]):
            y, S, z = _recurrent_step(q[:, t], k[:, t], v[:, t], S, z)  # (B, d_v): waits for S_{t-1}
            outputs.append(y)
        return torch.stack(outputs, dim=1)  # (B, T, d_v)

    def _chunked(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        if not self.causal:
            return self._global_state(q, k, v)
        S, z = self.initial_state(q.shape[0], dtype=q.dtype, device=q.device)
        outputs = []
        for start in range(0, q.shape[1], self.chunk_size):
            qc, kc, vc = (t[:, start:start + self.chunk_size] for t in (q, k, v))  # (B, L, ·)
            A = (qc @ kc.transpose(-2, -1)).tril()  # (B, L, L): inside the chunk, L²·d_k
            numerator = A @ vc + qc @ S  # (B, L, d_v): L²·d_v + L·d_k·d_v (earlier chunks through S)
            denominator = A.sum(-1, keepdim=True) + qc @ z.unsqueeze(-1)  # (B, L, 1): L·d_k
            outputs.append(numerator / denominator)
            S = S + kc.transpose(-2, -1) @ vc  # (B, d_k, d_v): L·d_k·d_v
            z = z + kc.sum(1)  # (B, d_k)
        return torch.cat(outputs, dim=1)  # (B, T, d_v)

    @staticmethod
    def _global_state(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        S = k.transpose(-2, -1) @ v  # (B, d_k, d_v): Σ_j φ(k_j) v_jᵀ, T·d_k·d_v
        z = k.sum(1).unsqueeze(-1)  # (B, d_k, 1)
        return (q @ S) / (q @ z)  # (B, T, d_v): T·d_k·d_v + T·d_k

    def forward(self, x: Tensor) -> Tensor:
        """y (B, T, d_model) for x (B, T, d_model), by this layer's form.

        Raises:
            SeqlabError: x is not (B, T, d_model) of the layer's dtype, or the parallel form's (B, T, T)
                map would not fit in memory.
        """
        x = check_sequence(self, x, self.d_model)
        q, k, v = feature_map(self.q_proj(x)), feature_map(self.k_proj(x)), self.v_proj(x)  # (B, T, d_k|d_v)
        mix = {"parallel": self._parallel, "recurrent": self._recurrent, "chunked": self._chunked}[self.form]
        return self.o_proj(apply_transition(self, mix(q, k, v)))  # (B, T, d_model)

    def initial_state(self, batch: int, *, dtype: torch.dtype | None = None,
                      device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
        """(S, z) = zeros (B, d_k, d_v) and (B, d_k): the state before the first position.

        Args:
            batch: B >= 1.
            dtype: the state's dtype (default: the layer's).
            device: where the state lives.

        Raises:
            SeqlabError: batch is not a positive integer.
        """
        batch = require_positive_int("batch", batch)
        dtype = self.q_proj.weight.dtype if dtype is None else dtype
        return (torch.zeros(batch, self.d_k, self.d_v, dtype=dtype, device=device),
                torch.zeros(batch, self.d_k, dtype=dtype, device=device))

    def step(self, x_t: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Decode one position: (y_t (B, d_model), new (S, z)) from x_t (B, d_model); the recurrent form's step.

        Costs :func:`linear_attention_step_multiplications` whatever the position.

        Raises:
            SeqlabError: the layer is not causal, or x_t / state do not have the shapes above.
        """
        if not self.causal:
            raise SeqlabError(N_("step decodes causally; this layer was built with causal=False"))
        B = x_t.shape[0] if isinstance(x_t, Tensor) and x_t.dim() == 2 else 0
        check_step(self, x_t, self.d_model, state, [(B, self.d_k, self.d_v), (B, self.d_k)])
        q, k, v = feature_map(self.q_proj(x_t)), feature_map(self.k_proj(x_t)), self.v_proj(x_t)  # (B, d_k|d_v)
        y, S, z = _recurrent_step(q, k, v, *state)
        return self.o_proj(y), (S, z)  # (B, d_model)
