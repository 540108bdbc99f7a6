"""The recurrent machine: an Elman RNN written as the plain loop of the lesson (L1, L3).

L1: h_0 = 0 and, for t = 1..T,

    h_t = tanh(W_hh h_{t-1} + W_xh x_t + b_h)

Each state needs the one before it, so the chain depth is T however many processors run it.
L3: what x_1 contributes to h_T passes through T-1 products by the same W_hh; whether that
signal shrinks or grows is decided by the spectral radius of W_hh (its largest |eigenvalue|),
not by its determinant. :func:`spectral_radius` and :func:`with_spectral_radius` measure and
set it.

:class:`ElmanRNN` computes exactly what ``torch.nn.RNN(nonlinearity="tanh")`` computes (one
layer, one direction; torch's two biases are one sum ``b_h = b_ih + b_hh``); the tests check the
two agree. It exists so that each step is visible and can be traced, not to be fast.

Shape letters: B batch, T positions, d_model input width, d_h state width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.transition import BACKWARD, apply_transition

__all__ = ["ElmanRNN", "spectral_radius", "with_spectral_radius"]


def _uniform(shape: tuple[int, ...], bound: float, generator: torch.Generator | None,
             dtype: torch.dtype) -> Tensor:
    """A tensor drawn from U(-bound, bound) with ``generator`` (the global RNG when None)."""
    return torch.empty(shape, dtype=dtype).uniform_(-bound, bound, generator=generator)


def _check_square(weight: object) -> Tensor:
    if not isinstance(weight, Tensor):
        raise SeqlabError(N_("weight must be a torch.Tensor, received {weight_class}"),
                          weight_class=type(weight).__name__)
    if weight.dim() != 2 or weight.shape[0] != weight.shape[1] or weight.shape[0] == 0:
        raise SeqlabError(N_("weight must be a non-empty square matrix (n, n), received shape {shape}"),
                          shape=tuple(weight.shape))
    if not weight.is_floating_point():
        raise SeqlabError(N_("weight must be a real floating tensor, received dtype {dtype}"), dtype=weight.dtype)
    return weight


def spectral_radius(weight: Tensor) -> float:
    """Largest |eigenvalue| of a square matrix, computed in float64 (L3).

    rho(W) = max_i |lambda_i(W)|. Powers W^t shrink towards 0 when rho < 1 and grow without
    bound when rho > 1; the determinant (the product of the eigenvalues) does not decide this.

    >>> spectral_radius(torch.tensor([[0.0, 2.0], [0.5, 0.0]]))  # eigenvalues +-1, det = -1
    1.0

    Args:
        weight: (n, n) real floating tensor, e.g. ``W_hh``.

    Returns:
        The spectral radius as a Python float.

    Raises:
        SeqlabError: ``weight`` is not a non-empty real square matrix.
    """
    w64 = _check_square(weight).detach().to(torch.float64)  # (n, n)
    eigenvalues = torch.linalg.eigvals(w64)  # (n,) complex128
    return float(eigenvalues.abs().max())


def with_spectral_radius(weight: Tensor, radius: float) -> Tensor:
    """Return ``weight`` rescaled so that its spectral radius is ``radius`` (L3).

    W' = W * radius / rho(W); the scaling is done in float64 and cast back to ``weight.dtype``.

    >>> w = with_spectral_radius(torch.tensor([[1.0, 1.0], [0.0, 2.0]]), 0.5)
    >>> w
    tensor([[0.2500, 0.2500],
            [0.0000, 0.5000]])
    >>> round(spectral_radius(w), 6)
    0.5

    Args:
        weight: (n, n) real floating tensor.
        radius: the wanted spectral radius, finite and > 0.

    Returns:
        A new (n, n) tensor, same dtype and device as ``weight``, detached from autograd.

    Raises:
        SeqlabError: ``radius`` is not a finite number > 0; ``weight`` is not square; or its
            spectral radius is (numerically) 0, e.g. the zero matrix, which no scaling can fix.
    """
    if isinstance(radius, bool) or not isinstance(radius, (int, float)):
        raise SeqlabError(N_("radius must be a finite number > 0, received {radius!r}"), radius=radius)
    if not math.isfinite(radius) or radius <= 0:
        raise SeqlabError(N_("radius must be a finite number > 0, received {radius}"), radius=radius)
    current = spectral_radius(weight)
    w64 = weight.detach().to(torch.float64)  # (n, n)
    floor = w64.shape[0] * torch.finfo(torch.float64).eps * float(torch.linalg.matrix_norm(w64))
    if current == 0.0 or current <= floor:
        raise SeqlabError(N_("cannot rescale a matrix whose spectral radius is 0 (received radius {current:.3g}); "
                             "every eigenvalue is 0"), current=current)
    scaled = (w64 * (radius / current)).to(weight.dtype)
    if not torch.isfinite(scaled).all() or not scaled.any():
        raise SeqlabError(N_("spectral radius {radius:g} does not fit in {dtype_name}: the rescaled weights "
                             "overflow or underflow to 0"), radius=radius,
                          dtype_name=str(weight.dtype).removeprefix('torch.'), parameter="spectral_radius")
    return scaled


class ElmanRNN(torch.nn.Module):
    """Elman recurrence h_t = tanh(W_hh h_{t-1} + W_xh x_t + b_h), run as an explicit loop (L1).

    >>> rnn = ElmanRNN(4, 3, generator=torch.Generator().manual_seed(0))
    >>> rnn(torch.zeros(5, 4)).shape  # (T, d_h)
    torch.Size([5, 3])
    >>> rnn(torch.zeros(2, 5, 4)).shape  # (B, T, d_h)
    torch.Size([2, 5, 3])

    Args:
        d_model: input width (columns of ``weight_xh``).
        d_h: state width.
        bias: whether to learn ``bias_h`` (d_h,); when False ``bias_h`` is None.
        generator: RNG for the initial weights, so construction is reproducible; the global RNG
            when None.
        dtype: floating dtype of the parameters; inputs must match it.

    Parameters are initialised like ``torch.nn.RNN``: U(-1/sqrt(d_h), 1/sqrt(d_h)).

    Transition factor (:mod:`seqlab.layers.transition`): W_hh, marked in the backward on the product
    W_hh h_{t-1} (tanh sees the forward unchanged), so a signal from x_i meets j - i of them on its way to h_j.

    Raises:
        SeqlabError: ``d_model`` or ``d_h`` is not an integer >= 1.
    """

    transition_factor = "W_hh"
    transition_scaling = BACKWARD
    transition_scale: float | None = None

    def __init__(self, d_model: int, d_h: int, *, bias: bool = True,
                 generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.d_h = require_positive_int("d_h", d_h)
        if not dtype.is_floating_point:
            raise SeqlabError(N_("dtype must be a floating dtype, received {dtype}"), dtype=dtype)
        bound = 1.0 / math.sqrt(d_h)
        self.weight_xh = torch.nn.Parameter(_uniform((d_h, d_model), bound, generator, dtype))
        self.weight_hh = torch.nn.Parameter(_uniform((d_h, d_h), bound, generator, dtype))
        if bias:
            self.bias_h = torch.nn.Parameter(_uniform((d_h,), bound, generator, dtype))
        else:
            self.register_parameter("bias_h", None)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_h={self.d_h}, bias={self.bias_h is not None}"

    def _check_input(self, x: object) -> Tensor:
        expected = Message(N_("(T, {d_model}) or (B, T, {d_model})"), d_model=self.d_model)
        if not isinstance(x, Tensor):
            raise SeqlabError(N_("x must be a torch.Tensor of shape {expected}, received {x_class}"), expected=expected,
                              x_class=type(x).__name__)
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_model or x.shape[-2] == 0:
            raise SeqlabError(N_("x must have shape {expected} with T >= 1, received shape {shape}"), expected=expected,
                              shape=tuple(x.shape))
        if x.dtype != self.weight_hh.dtype:
            raise SeqlabError(N_("x must have dtype {dtype} like the weights, received {dtype2}"),
                              dtype=self.weight_hh.dtype, dtype2=x.dtype)
        return x

    def forward(self, x: Tensor) -> Tensor:
        """All states h_1..h_T, one step after another.

        Each step does one product by ``W_hh`` (which needs h_{t-1}, so the steps form a chain
        of depth T) and one by ``W_xh``. The T products W_xh x_t do not depend on each other and
        could all run at once as one matrix product; they are kept inside the loop on purpose,
        so the loop reads exactly like the equation (L1).

        Args:
            x: (T, d_model) or (B, T, d_model), batch first, dtype of the weights.

        Returns:
            (T, d_h) or (B, T, d_h): the states h_1..h_T (h_0 = 0 is not included).

        Raises:
            SeqlabError: wrong rank, width, dtype, or T = 0.
        """
        x = self._check_input(x)
        batched = x.dim() == 3
        xb = x if batched else x.unsqueeze(0)  # (B, T, d_model)
        h = xb.new_zeros(xb.shape[0], self.d_h)  # (B, d_h): h_0 = 0
        states = []
        # unbind, not xb[:, t]: the backward of T slices would write T full-size zero tensors (O(T²)).
        for x_t in xb.unbind(dim=1):  # x_t: (B, d_model)
            from_past = apply_transition(self, h @ self.weight_hh.T)  # (B, d_h): W_hh h_{t-1}, waits for the last step
            from_input = x_t @ self.weight_xh.T  # (B, d_h): W_xh x_t, independent of the past
            pre = from_past + from_input  # (B, d_h)
            if self.bias_h is not None:
                pre = pre + self.bias_h  # (B, d_h)
            h = torch.tanh(pre)  # (B, d_h): h_t
            states.append(h)
        hs = torch.stack(states, dim=1)  # (B, T, d_h)
        return hs if batched else hs.squeeze(0)

    @classmethod
    def from_torch(cls, rnn: torch.nn.RNN) -> ElmanRNN:
        """Copy the weights of a one-layer, one-direction tanh ``torch.nn.RNN``.

        ``bias_h = bias_ih_l0 + bias_hh_l0`` (torch adds both in every step).

        Raises:
            SeqlabError: ``rnn`` is not a ``torch.nn.RNN``, or has more than one layer, two
                directions or a ReLU nonlinearity.
        """
        if not isinstance(rnn, torch.nn.RNN):
            raise SeqlabError(N_("from_torch expects a torch.nn.RNN, received {rnn_class}"),
                              rnn_class=type(rnn).__name__)
        if rnn.num_layers != 1 or rnn.bidirectional or rnn.nonlinearity != "tanh":
            raise SeqlabError(N_("from_torch expects num_layers=1, bidirectional=False, nonlinearity='tanh', "
                                 "received num_layers={num_layers}, bidirectional={bidirectional}, "
                                 "nonlinearity={nonlinearity!r}"), num_layers=rnn.num_layers,
                              bidirectional=rnn.bidirectional, nonlinearity=rnn.nonlinearity)
        w_ih = rnn.weight_ih_l0.detach()  # (d_h, d_model)
        w_hh = rnn.weight_hh_l0.detach()  # (d_h, d_h)
        meta = torch.device("meta")
        with torch.device(meta):  # shapes only: the real values are copied below
            out = cls(rnn.input_size, rnn.hidden_size, bias=rnn.bias, dtype=w_hh.dtype)
        out.weight_xh = torch.nn.Parameter(w_ih.clone())
        out.weight_hh = torch.nn.Parameter(w_hh.clone())
        if rnn.bias:
            out.bias_h = torch.nn.Parameter((rnn.bias_ih_l0.detach() + rnn.bias_hh_l0.detach()))
        return out

    def to_torch(self, batch_first: bool = True) -> torch.nn.RNN:
        """A ``torch.nn.RNN(nonlinearity="tanh")`` with the same weights.

        torch's ``bias_ih_l0`` gets ``bias_h`` and ``bias_hh_l0`` gets zeros. The global RNG is
        not touched.

        >>> rnn = ElmanRNN(4, 3, generator=torch.Generator().manual_seed(0)).to_torch()
        >>> rnn
        RNN(4, 3, batch_first=True)
        """
        w_hh = self.weight_hh.detach()
        has_bias = self.bias_h is not None
        rnn = torch.nn.RNN(self.d_model, self.d_h, num_layers=1, nonlinearity="tanh",
                           bias=has_bias, batch_first=batch_first,
                           device="meta", dtype=w_hh.dtype)
        rnn = rnn.to_empty(device=w_hh.device)
        with torch.no_grad():
            rnn.weight_ih_l0.copy_(self.weight_xh)
            rnn.weight_hh_l0.copy_(self.weight_hh)
            if has_bias:
                rnn.bias_ih_l0.copy_(self.bias_h)
                rnn.bias_hh_l0.zero_()
        return rnn

    def set_spectral_radius(self, radius: float) -> ElmanRNN:
        """Rescale ``weight_hh`` in place so its spectral radius is ``radius``; return self (L3).

        >>> rnn = ElmanRNN(3, 3, generator=torch.Generator().manual_seed(0))
        >>> round(spectral_radius(rnn.set_spectral_radius(0.9).weight_hh), 5)
        0.9

        Raises:
            SeqlabError: see :func:`with_spectral_radius`.
        """
        with torch.no_grad():
            self.weight_hh.copy_(with_spectral_radius(self.weight_hh, radius))
        return self
