"""Diagonal linear recurrences, fixed (S4D / LRU) and selective (Mamba), run by a loop or by a scan (issue 15).

Both mixers keep a state h_t ∈ R^{d_state} updated element-wise, with no nonlinearity between steps,

    h_t = a_t ⊙ h_{t-1} + b_t,

so the T steps are a prefix scan (:mod:`seqlab.layers.scan`): ``form="loop"`` waits T steps like the
lesson's recurrence (L1, span ∝ T), ``form="scan"`` takes ⌈log₂ T⌉ rounds (span ∝ log T). Same outputs.

* :class:`DiagonalRecurrence` — a fixed real decay a ∈ (0, 1)^{d_state}, the same at every position
  (S4D's diagonal state matrix, Gu et al. 2022, made real; LRU's λ = exp(-exp(ν)) with the input
  normalised by γ = √(1 - a²), Orvieto et al. 2023, §3):
  b_t = γ ⊙ (W_B x_t),  y_t = W_C h_t.
* :class:`SelectiveRecurrence` — the decay and the input depend on x_t (Gu & Dao 2023, "Mamba", §3.2,
  Algorithm 2, one state per channel, N = 1):
  Δ_t = softplus(W_Δ x_t + δ),  a_t = exp(-Δ_t ⊙ A),  b_t = Δ_t ⊙ (W_u x_t),  y_t = W_o (c_t ⊙ h_t),
  c_t = W_C x_t, with A = exp(A_log) > 0 per channel (S4D-Real's A_n = n + 1); a_t is the zero-order hold
  of A (Mamba §2) and Δ_t ⊙ u_t the Euler step for B̄ x that Mamba's reference code takes.

Counting convention (multiplications, seqlab's unit; the closed forms live in :mod:`seqlab.cost`): the
projections only — 2·T·d_model·d_state (diagonal) and 4·T·d_model·d_state (selective) per sequence, in either
form. The state update, the scan's combines, softplus and exp are element-wise and not counted (see
:mod:`seqlab.measure.work`); what the scan changes is the span, not the counted work.

Shape letters: B batch, T positions, d_model the input/output width, d_state the state width.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from seqlab.cost import (RECURRENCE_FORMS, diagonal_recurrence_multiplications,  # the closed forms, re-exported
                         diagonal_recurrence_step_multiplications, selective_recurrence_multiplications,
                         selective_recurrence_step_multiplications)
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.mixer_common import check_form, check_sequence, check_step, linear
from seqlab.layers.scan import SCAN_METHODS, associative_scan, sequential_scan
from seqlab.layers.transition import FORWARD, apply_transition

__all__ = ["RECURRENCE_FORMS", "DiagonalRecurrence", "SelectiveRecurrence", "diagonal_recurrence_multiplications",
           "diagonal_recurrence_step_multiplications", "selective_recurrence_multiplications",
           "selective_recurrence_step_multiplications"]

class _LinearRecurrence(torch.nn.Module):
    """Shared body: coefficients (a, b) from x, the loop or the scan, then a readout. Subclasses give the maths.

    Transition factor (:mod:`seqlab.layers.transition`): the decay a_t, scaled in the forward (h is linear in it),
    so a signal from x_1 meets T - 1 of them on its way to y_T, by the loop and by the scan alike.
    """

    transition_factor = "a_t"
    transition_scaling = FORWARD
    transition_scale: float | None = None

    def __init__(self, d_model: int, d_state: int | None, form: str, scan_method: str) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_state = d_model if d_state is None else require_positive_int("d_state", d_state)
        self.form = check_form(form, RECURRENCE_FORMS)
        self.scan_method = check_form(scan_method, SCAN_METHODS)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_state={self.d_state}, form={self.form!r}, scan_method={self.scan_method!r}"

    def coefficients(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """(a, b, readout context) for x (…, d_model): decays broadcastable to b (…, d_state)."""
        raise NotImplementedError

    def readout(self, h: Tensor, context: Tensor | None) -> Tensor:
        """y (…, d_model) from the states h (…, d_state)."""
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """y (B, T, d_model) for x (B, T, d_model), by the loop or the scan.

        Raises:
            SeqlabError: x is not (B, T, d_model) of the layer's dtype.
        """
        x = check_sequence(self, x, self.d_model)
        a, b, context = self.coefficients(x)  # (…, d_state), (B, T, d_state)
        a = apply_transition(self, a)  # (…, d_state): s · a_t while a measurement scales the decays
        if self.form == "loop":
            h = sequential_scan(a, b, dim=1)  # (B, T, d_state): T steps in a row
        else:
            h = associative_scan(a, b, dim=1, method=self.scan_method)  # (B, T, d_state): ⌈log₂ T⌉ rounds
        return self.readout(h, context)  # (B, T, d_model)

    def initial_state(self, batch: int, *, dtype: torch.dtype | None = None,
                      device: torch.device | str = "cpu") -> tuple[Tensor]:
        """(h,) = zeros (B, d_state): the state before the first position (dtype defaults to the layer's).

        Raises:
            SeqlabError: batch is not a positive integer.
        """
        batch = require_positive_int("batch", batch)
        dtype = next(self.parameters()).dtype if dtype is None else dtype
        return (torch.zeros(batch, self.d_state, dtype=dtype, device=device),)

    def step(self, x_t: Tensor, state: tuple[Tensor]) -> tuple[Tensor, tuple[Tensor]]:
        """Decode one position: (y_t (B, d_model), (h_t,)) from x_t (B, d_model) and (h_{t-1},).

        Raises:
            SeqlabError: x_t or the state do not have the shapes above.
        """
        B = x_t.shape[0] if isinstance(x_t, Tensor) and x_t.dim() == 2 else 0
        check_step(self, x_t, self.d_model, state, [(B, self.d_state)])
        a, b, context = self.coefficients(x_t)  # (…, d_state), (B, d_state)
        h = a * state[0] + b  # (B, d_state): h_t = a_t ⊙ h_{t-1} + b_t
        return self.readout(h, context), (h,)


class DiagonalRecurrence(_LinearRecurrence):
    """Fixed diagonal linear recurrence (S4D / LRU, real): h_t = a ⊙ h_{t-1} + γ ⊙ W_B x_t, y_t = W_C h_t.

    >>> layer = DiagonalRecurrence(8, 16, form="scan", generator=torch.Generator().manual_seed(0))
    >>> layer(torch.randn(2, 10, 8)).shape, layer.initial_state(2)[0].shape
    (torch.Size([2, 10, 8]), torch.Size([2, 16]))

    Args:
        d_model: width of x and y.
        d_state: width of h (default d_model).
        form: ``"loop"`` or ``"scan"``.
        scan_method: ``"hillis_steele"`` or ``"blelloch"`` (the scan form's method).
        a_min, a_max: the decays are drawn uniformly in [a_min, a_max] ⊂ (0, 1) (LRU's ring initialisation).
        generator: RNG for the weights and decays.
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a width that is not a positive integer, an unknown form or method, or decays
            outside (0, 1).

    Source: Gu et al. 2022 (S4D); Orvieto et al. 2023 (LRU), §3 (exponential parameterisation, γ normalisation).
    """

    def __init__(self, d_model: int, d_state: int | None = None, *, form: str = "loop",
                 scan_method: str = "hillis_steele", a_min: float = 0.9, a_max: float = 0.999,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> None:
        super().__init__(d_model, d_state, form, scan_method)
        if not 0 < a_min <= a_max < 1:
            raise SeqlabError(N_("the decays need 0 < a_min <= a_max < 1, received a_min={a_min}, a_max={a_max}"),
                              a_min=a_min, a_max=a_max)
        decay = torch.empty(self.d_state, dtype=dtype).uniform_(a_min, a_max, generator=generator)  # (d_state,)
        self.nu_log = torch.nn.Parameter(torch.log(-torch.log(decay)))  # a = exp(-exp(ν)), ν = log(-log a)
        self.in_proj = linear(self.d_model, self.d_state, generator, dtype)  # W_B
        self.out_proj = linear(self.d_state, self.d_model, generator, dtype)  # W_C

    def decay(self) -> Tensor:
        """a = exp(-exp(ν)) ∈ (0, 1), (d_state,)."""
        return torch.exp(-torch.exp(self.nu_log))

    def coefficients(self, x: Tensor) -> tuple[Tensor, Tensor, None]:
        a = self.decay()  # (d_state,): the same at every position
        gamma = torch.sqrt(1 - a * a)  # (d_state,): keeps h's scale bounded as a → 1
        return a, gamma * self.in_proj(x), None  # (d_state,), (…, d_state)

    def readout(self, h: Tensor, context: None) -> Tensor:
        return self.out_proj(h)  # (…, d_model)

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This layer's closed form (:func:`diagonal_recurrence_multiplications`) at length T."""
        return diagonal_recurrence_multiplications(T, self.d_model, self.d_state, self.form, batch=batch)


class SelectiveRecurrence(_LinearRecurrence):
    """Selective linear recurrence, a simplification of Mamba: a_t and b_t computed from x_t, one state per channel.

    Of Mamba's block it keeps the selection (Δ from the input, so a decay that depends on the token) and drops
    the rest: N > 1 states per channel, B_t and C_t shared over channels, the low-rank Δ, the D skip, the SiLU gate
    and the causal convolution. :class:`seqlab.layers.mamba_block.MambaBlock` is the block with every part.

    Δ_t = softplus(W_Δ x_t + δ), a_t = exp(-Δ_t ⊙ A), b_t = Δ_t ⊙ W_u x_t, y_t = W_o (W_C x_t ⊙ h_t).

    >>> layer = SelectiveRecurrence(8, 16, form="scan", generator=torch.Generator().manual_seed(0))
    >>> layer(torch.randn(2, 10, 8)).shape, layer.initial_state(2)[0].shape
    (torch.Size([2, 10, 8]), torch.Size([2, 16]))

    Args:
        d_model: width of x and y.
        d_state: channels of h (default d_model).
        form: ``"loop"`` or ``"scan"``.
        scan_method: ``"hillis_steele"`` or ``"blelloch"``.
        generator: RNG for the weights and the step-size bias δ.
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a width that is not a positive integer, or an unknown form or method.

    Source: Gu & Dao 2023 (Mamba), §3.2 (selection: Δ, B, C from the input), Algorithm 2; Δ₀ log-uniform in
        [0.001, 0.1] as in Mamba's reference code.
    """

    def __init__(self, d_model: int, d_state: int | None = None, *, form: str = "loop",
                 scan_method: str = "hillis_steele", generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__(d_model, d_state, form, scan_method)
        self.A_log = torch.nn.Parameter(torch.log(torch.arange(1, self.d_state + 1, dtype=dtype)))  # A_n = n + 1
        step = torch.empty(self.d_state, dtype=dtype).uniform_(math.log(1e-3), math.log(1e-1), generator=generator)
        self.delta_bias = torch.nn.Parameter(step.exp() + torch.log(-torch.expm1(-step.exp())))  # softplus⁻¹(Δ₀)
        self.delta_proj = linear(self.d_model, self.d_state, generator, dtype)  # W_Δ
        self.in_proj = linear(self.d_model, self.d_state, generator, dtype)  # W_u
        self.gate_proj = linear(self.d_model, self.d_state, generator, dtype)  # W_C
        self.out_proj = linear(self.d_state, self.d_model, generator, dtype)  # W_o

    def coefficients(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        delta = F.softplus(self.delta_proj(x) + self.delta_bias)  # (…, d_state): step size Δ_t > 0
        a = torch.exp(-delta * torch.exp(self.A_log))  # (…, d_state): a_t ∈ (0, 1), chosen by x_t
        b = delta * self.in_proj(x)  # (…, d_state): Δ_t ⊙ u_t
        return a, b, self.gate_proj(x)  # c_t (…, d_state)

    def readout(self, h: Tensor, context: Tensor) -> Tensor:
        return self.out_proj(context * h)  # (…, d_model): W_o (c_t ⊙ h_t)

    def multiplications(self, T: int, batch: int = 1) -> int:
        """This layer's closed form (:func:`selective_recurrence_multiplications`) at length T."""
        return selective_recurrence_multiplications(T, self.d_model, self.d_state, self.form, batch=batch)
