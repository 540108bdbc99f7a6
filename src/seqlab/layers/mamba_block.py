"""The Mamba block as the paper builds it: projections, a causal depthwise convolution, the selective scan, a gate.

:class:`~seqlab.layers.linear_recurrence.SelectiveRecurrence` keeps one idea of Mamba (Δ, and so the decay,
computed from the input) and drops the rest. This module is the block of Gu & Dao (2023), Figure 3 and
Algorithm 2, with every part:

    [u, z] = x W_in                                   (B, T, 2E): E = expand · d_model channels
    u = SiLU(causal depthwise conv_k(u))              kernel d_conv, one filter per channel
    [δ, B_t, C_t] = u W_x                             δ of rank R (low-rank Δ); B_t, C_t (B, T, N) shared over channels
    Δ = softplus(δ W_Δ + b_Δ)                         (B, T, E)
    h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t ⊙ u_t) B_tᵀ     (B, E, N): N states per channel, A = −exp(A_log) (E, N)
    y_t = h_t C_t + D ⊙ u_t                           the D skip
    out = (y ⊙ SiLU(z)) W_out                         the gate, then back to d_model

The recurrence is computed by a loop (``form="loop"``: T steps in a row) or by a parallel prefix scan
(``form="scan"``: ⌈log₂ T⌉ rounds, :func:`seqlab.layers.scan.associative_scan`); both are the same function
up to rounding. The parameter names are those of the reference implementation (``in_proj``, ``conv1d``,
``x_proj``, ``dt_proj``, ``A_log``, ``D``, ``out_proj``), so a state dict moves between the two unchanged.

Work in seqlab's unit (multiplications in contractions, :mod:`seqlab.measure.work`), per sequence of T:
:func:`seqlab.cost.mamba_block_multiplications` (one step: :func:`seqlab.cost.mamba_block_step_multiplications`). The scan's element-wise products are not in that unit; the Mamba paper's
own count of the scan (9·B·T·E·N FLOPs, §3.3.2) is the engine's other unit, all arithmetic.

Shapes: B batch, T positions, d_model width, E = expand · d_model inner channels, N = d_state, R = dt_rank,
k = d_conv.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.cost import mamba_block_multiplications, mamba_block_step_multiplications, mamba_rank
from seqlab.errors import require_positive_int
from seqlab.layers.mixer_common import check_form, check_sequence, check_step, linear
from seqlab.layers.scan import SCAN_METHODS, associative_scan, sequential_scan
from seqlab.layers.transition import FORWARD, apply_transition

FORMS = ("loop", "scan")
__all__ = ["FORMS", "MambaBlock", "mamba_block_multiplications", "mamba_block_step_multiplications"]


class MambaBlock(torch.nn.Module):
    """Mamba's block (Gu & Dao 2023, Figure 3, Algorithm 2): x (B, T, d_model) → (B, T, d_model).

    >>> block = MambaBlock(4, d_state=3, form="scan", generator=torch.Generator().manual_seed(0))
    >>> block(torch.randn(2, 5, 4)).shape, [s.shape for s in block.initial_state(2)]
    (torch.Size([2, 5, 4]), [torch.Size([2, 8, 3]), torch.Size([2, 8, 3])])

    Args:
        d_model: width of x and of the output.
        d_state: N, states per channel (the paper's default 16).
        d_conv: k, the causal convolution's kernel (default 4).
        expand: E = expand · d_model inner channels (default 2).
        dt_rank: R, the rank of Δ's projection (default ⌈d_model / 16⌉).
        form: ``"loop"`` (T steps in a row) or ``"scan"`` (a parallel prefix scan).
        scan_method: ``"hillis_steele"`` or ``"blelloch"`` (``form="scan"``).
        generator: RNG for the weights and Δ's initial bias (the global RNG is not touched).
        dtype: floating dtype of the weights.

    Transition factor (:mod:`seqlab.layers.transition`): the decay exp(Δ_t A), scaled in the forward. The causal
    convolution spreads x_i over d_conv positions, so a signal from x_i reaches y_j by routes that meet
    different numbers of decays (j - i - d_conv + 1 … j - i).

    Raises:
        SeqlabError: a size that is not a positive integer, an unknown form or method.

    Source: Gu & Dao 2023 (Mamba), §3.2 (selection), §3.6 and Figure 3 (the block), Algorithm 2; A = −(1, …, N)
        per channel (S4D-real) and Δ₀ log-uniform in [0.001, 0.1], as in the reference code.
    """

    transition_factor = "a_t"
    transition_scaling = FORWARD
    transition_scale: float | None = None

    def __init__(self, d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2,
                 dt_rank: int | None = None, *, form: str = "scan", scan_method: str = "hillis_steele",
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_state = require_positive_int("d_state", d_state)
        self.d_conv = require_positive_int("d_conv", d_conv)
        self.d_inner = require_positive_int("expand", expand) * self.d_model
        self.dt_rank = mamba_rank(self.d_model) if dt_rank is None else require_positive_int("dt_rank", dt_rank)
        self.form = check_form(form, FORMS)
        self.scan_method = check_form(scan_method, SCAN_METHODS)
        E, N, R = self.d_inner, self.d_state, self.dt_rank
        self.in_proj = linear(self.d_model, 2 * E, generator, dtype)
        self.conv1d = torch.nn.Conv1d(E, E, self.d_conv, groups=E, padding=self.d_conv - 1, device="meta",
                                      dtype=dtype)
        bound = 1.0 / math.sqrt(self.d_conv)
        self.conv1d.weight = torch.nn.Parameter(torch.empty(E, 1, self.d_conv, dtype=dtype).uniform_(
            -bound, bound, generator=generator))
        self.conv1d.bias = torch.nn.Parameter(torch.empty(E, dtype=dtype).uniform_(-bound, bound,
                                                                                   generator=generator))
        self.x_proj = linear(E, R + 2 * N, generator, dtype)
        self.dt_proj = linear(R, E, generator, dtype)
        step = torch.empty(E, dtype=dtype).uniform_(math.log(1e-3), math.log(1e-1), generator=generator).exp()
        self.dt_proj.bias = torch.nn.Parameter(step + torch.log(-torch.expm1(-step)))  # softplus⁻¹(Δ₀)
        self.A_log = torch.nn.Parameter(torch.log(torch.arange(1, N + 1, dtype=dtype)).repeat(E, 1))  # (E, N)
        self.D = torch.nn.Parameter(torch.ones(E, dtype=dtype))
        self.out_proj = linear(E, self.d_model, generator, dtype)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, d_state={self.d_state}, d_conv={self.d_conv}, d_inner={self.d_inner}, "
                f"dt_rank={self.dt_rank}, form={self.form!r}")

    def _selection(self, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Δ (…, E), B_t and C_t (…, N) from the convolved channels u (…, E)."""
        low_rank, B_t, C_t = self.x_proj(u).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        return F.softplus(self.dt_proj(low_rank)), B_t, C_t

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, d_model) → (B, T, d_model).

        Raises:
            SeqlabError: x not (B, T, d_model) with T >= 1, or not of the block's dtype.
        """
        x = check_sequence(self, x, self.d_model)
        T = x.shape[1]
        u, z = self.in_proj(x).chunk(2, dim=-1)  # (B, T, E) each
        u = F.silu(self.conv1d(u.transpose(1, 2))[..., :T].transpose(1, 2))  # causal: the first T outputs
        delta, B_t, C_t = self._selection(u)  # (B, T, E), (B, T, N), (B, T, N)
        A = -torch.exp(self.A_log)  # (E, N)
        decay = apply_transition(self, torch.exp(delta[..., None] * A))  # (B, T, E, N)
        drive = (delta * u)[..., None] * B_t[:, :, None, :]  # (B, T, E, N)
        if self.form == "loop":
            h = sequential_scan(decay, drive, dim=1)
        else:
            h = associative_scan(decay, drive, dim=1, method=self.scan_method)  # (B, T, E, N)
        y = torch.einsum("bten,btn->bte", h, C_t) + self.D * u  # (B, T, E)
        return self.out_proj(y * F.silu(z))

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This block's closed form (:func:`seqlab.cost.mamba_block_multiplications`) at length T."""
        return mamba_block_multiplications(T, self.d_model, self.d_state, self.d_conv,
                                           self.d_inner // self.d_model, self.dt_rank, batch=batch)

    def initial_state(self, batch: int = 1, *, dtype: torch.dtype | None = None,
                      device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
        """(convolution window (B, E, k − 1), SSM state (B, E, N)): zeros, before the first token (dtype defaults
        to the block's).

        Raises:
            SeqlabError: batch is not a positive integer.
        """
        batch = require_positive_int("batch", batch)
        dtype = self.A_log.dtype if dtype is None else dtype
        return (torch.zeros(batch, self.d_inner, self.d_conv - 1, dtype=dtype, device=device),
                torch.zeros(batch, self.d_inner, self.d_state, dtype=dtype, device=device))

    def step(self, x_t: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """One token: x_t (B, d_model) and the state → (output (B, d_model), the next state). Equal to
        ``forward`` position by position.

        Raises:
            SeqlabError: x_t not (B, d_model) of the block's dtype, or a state not shaped as
                :meth:`initial_state`'s.
        """
        B = x_t.shape[0] if isinstance(x_t, Tensor) and x_t.dim() == 2 else 1
        check_step(self, x_t, self.d_model, state,
                   [(B, self.d_inner, self.d_conv - 1), (B, self.d_inner, self.d_state)])
        window, h = state
        u, z = self.in_proj(x_t).chunk(2, dim=-1)  # (B, E)
        frame = torch.cat([window, u[..., None]], dim=-1)  # (B, E, k): the last k inputs of each channel
        u = F.silu((frame * self.conv1d.weight[:, 0]).sum(-1) + self.conv1d.bias)  # (B, E)
        delta, B_t, C_t = self._selection(u)  # (B, E), (B, N), (B, N)
        A = -torch.exp(self.A_log)
        h = torch.exp(delta[..., None] * A) * h + (delta * u)[..., None] * B_t[:, None, :]  # (B, E, N)
        y = torch.einsum("ben,bn->be", h, C_t) + self.D * u
        return self.out_proj(y * F.silu(z)), (frame[..., 1:].clone(), h)  # the window: k − 1 inputs, its own
