"""What the modern mixers share: their weights, their input checks and their decode API (issue 15).

Every mixer of :mod:`seqlab.layers.linear_attention`, :mod:`seqlab.layers.linear_recurrence` and
:mod:`seqlab.layers.sliding_window` maps a batch-first sequence (B, T, d_model) to (B, T, d_model), and
decodes one position at a time with ``initial_state(batch)`` and ``step(x_t, state)``; running ``step``
over t = 1 … T gives the same outputs as ``forward``. Weights are bias-free linear maps drawn like
``torch.nn.Linear``'s, U(-1/√fan_in, 1/√fan_in), from an optional generator, so a mixer is reproducible.

Shape letters: B batch, T positions, d_model the mixer's input and output width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, check_form  # check_form: shared with seqlab.cost's mixer closed forms
from seqlab.i18n import N_

__all__ = ["check_form", "check_sequence", "check_step", "linear", "quadratic_bytes"]


def linear(d_in: int, d_out: int, generator: torch.Generator | None, dtype: torch.dtype) -> torch.nn.Linear:
    """A bias-free ``torch.nn.Linear(d_in, d_out)`` drawn from ``generator`` (the global RNG is not touched).

    >>> linear(4, 3, torch.Generator().manual_seed(0), torch.float64).weight.shape
    torch.Size([3, 4])
    """
    layer = torch.nn.Linear(d_in, d_out, bias=False, device="meta", dtype=dtype)  # built on meta: no RNG use
    bound = 1.0 / math.sqrt(d_in)
    layer.weight = torch.nn.Parameter(torch.empty(d_out, d_in, dtype=dtype).uniform_(-bound, bound,
                                                                                     generator=generator))
    return layer


def _dtype_of(module: torch.nn.Module) -> torch.dtype:
    return next(module.parameters()).dtype


def check_sequence(module: torch.nn.Module, x: object, d_model: int) -> Tensor:
    """``x`` if it is a (B, T, d_model) tensor of the module's dtype with T >= 1, else a :class:`SeqlabError`.

    >>> check_sequence(torch.nn.Linear(3, 3), torch.zeros(2, 5, 3), 3).shape
    torch.Size([2, 5, 3])
    """
    if not isinstance(x, Tensor) or x.dim() != 3 or x.shape[-1] != d_model or x.shape[1] == 0:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise SeqlabError(N_("x must have shape (B, T, {d_model}) with T >= 1, received {shape}"), d_model=d_model,
                          shape=shape)
    if x.dtype != _dtype_of(module):
        raise SeqlabError(N_("x must have the mixer's dtype {dtype_of}, received {dtype}"), dtype_of=_dtype_of(module),
                          dtype=x.dtype)
    return x


def check_step(module: torch.nn.Module, x_t: object, d_model: int, state: object, shapes: list[tuple]) -> None:
    """Refuse a decode step whose input is not (B, d_model) or whose state does not match ``shapes``.

    >>> check_step(torch.nn.Linear(3, 3), torch.zeros(2, 3), 3, (torch.zeros(2, 4),), [(2, 4)])
    """
    if not isinstance(x_t, Tensor) or x_t.dim() != 2 or x_t.shape[-1] != d_model:
        shape = tuple(x_t.shape) if isinstance(x_t, Tensor) else type(x_t).__name__
        raise SeqlabError(N_("x_t must have shape (B, {d_model}), received {shape}"), d_model=d_model, shape=shape)
    if x_t.dtype != _dtype_of(module):
        raise SeqlabError(N_("x_t must have the mixer's dtype {dtype_of}, received {dtype}"),
                          dtype_of=_dtype_of(module), dtype=x_t.dtype)
    received = [tuple(s.shape) if isinstance(s, Tensor) else type(s).__name__ for s in state] \
        if isinstance(state, tuple) else type(state).__name__
    if received != shapes:
        raise SeqlabError(N_("state must be a tuple of tensors shaped {shapes} (from initial_state), received "
                             "{received}"), shapes=shapes, received=received)


def quadratic_bytes(batch: int, T: int, dtype: torch.dtype, maps: int = 3) -> int:
    """Bytes of ``maps`` (B, T, T) maps in ``dtype`` (scores, weights, mask): what a quadratic form allocates.

    >>> quadratic_bytes(1, 1024, torch.float32)  # 3 * 1024**2 * 4
    12582912
    """
    return maps * batch * T * T * torch.empty((), dtype=dtype).element_size()
