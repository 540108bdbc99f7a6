"""The convolutional machine of Table 1: a stack of width-k convolutions, contiguous or dilated (L7).

One layer is ``nn.Conv1d(d, d, k)`` run along the positions with 'same' padding: output position t
reads the k input positions t + dilation·(m - (k-1)/2), m = 0..k-1, every channel of each, so

    y_t = b + Σ_m W_m x_{t + dilation·(m - (k-1)/2)},        W_m ∈ R^{d×d}

costs k·T·d² multiplications per layer (the paper's O(k·n·d²); bias excluded), and its chain is one
product whatever T is (sequential operations O(1)). Positions outside [0, T) are the zero padding: a
constant, through which no dependency passes. Layers are joined by tanh.

One layer does not connect every pair of positions (k < T); the path column of the paper assumes a
stack deep enough that it does (Vaswani et al. 2017, section 4). How deep, for odd k with symmetric
padding (a layer reaches h = (k-1)/2 positions each way, scaled by its dilation):

* **contiguous** (dilation 1 in every layer): L layers reach L·h positions, so the stack connects
  every pair when L·h ≥ T - 1: L = ⌈(T - 1)/h⌉ = ⌈2(T - 1)/(k - 1)⌉ layers, O(n/k).
* **dilated** (layer l = 0, 1, … has dilation b^l with base b = h + 1 = (k + 1)/2, ByteNet's doubling
  for k = 3): each layer adds one digit m_l ∈ {0, …, h} of an offset Σ m_l b^l written in base b,
  and every partial sum stays inside [0, T), so L layers reach exactly every offset up to
  h·(b^L - 1)/(b - 1) = b^L - 1. The stack connects every pair when b^L - 1 ≥ T - 1:
  L = ⌈log_b T⌉ layers, O(log n).

Why not dilation k^l, as one might read O(log_k n)? With symmetric taps the digits are
{-h, …, h} and an offset's balanced base-k digits are unique, so the partial sums are forced; when
one of them falls outside [0, T) the pair is never connected, at any depth (T = 9, k = 3: x_0 never
reaches y_8, since 8 = 9 - 1 must step to position -1 first). Base (k+1)/2 avoids that and keeps the
logarithm; the tests show both facts.

Shapes: B batch (optional), T positions, d channels (d_model).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from seqlab.cost import convolution_multiplications  # the closed form, re-exported: seqlab.cost holds it
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_

__all__ = ["ConvolutionStack", "convolution_multiplications", "dilation_base", "layers_to_connect", "reach"]


def _check_kernel(kernel: object) -> int:
    """Odd kernel width >= 3 (symmetric 'same' padding needs an odd width)."""
    kernel = require_positive_int("kernel", kernel)
    if kernel < 3 or kernel % 2 == 0:
        raise SeqlabError(N_("kernel must be an odd integer >= 3 for symmetric padding, received {kernel}"),
                          kernel=kernel, parameter="kernel")
    return kernel


def dilation_base(kernel: int) -> int:
    """Base b of the dilated stack's dilations b^l: b = (k + 1)/2, one more than a layer's half-width.

    >>> dilation_base(3), dilation_base(5)
    (2, 3)

    Raises:
        SeqlabError: ``kernel`` is not an odd integer >= 3.
    """
    return (_check_kernel(kernel) + 1) // 2


def reach(layers: int, kernel: int, dilated: bool) -> int:
    """Farthest offset |j - i| a stack of ``layers`` layers connects: L·(k-1)/2, or b^L - 1 dilated.

    >>> reach(4, 3, False), reach(4, 3, True)  # 4 * 1, 2**4 - 1
    (4, 15)

    Raises:
        SeqlabError: ``layers`` is not an integer >= 1, or ``kernel`` is not an odd integer >= 3.
    """
    layers = require_positive_int("layers", layers)
    half = (_check_kernel(kernel) - 1) // 2
    return dilation_base(kernel) ** layers - 1 if dilated else layers * half


def layers_to_connect(T: int, kernel: int, dilated: bool) -> int:
    """Least number of layers that connects every pair of the T positions (the paper's path column).

    Contiguous: ⌈(T-1)/((k-1)/2)⌉; dilated (dilations b^l, b = (k+1)/2): ⌈log_b T⌉, found with integer
    arithmetic (the least L with b^L ≥ T). At least one layer.

    >>> layers_to_connect(256, 3, False), layers_to_connect(256, 5, False)  # 255 / 1, 255 / 2
    (255, 128)
    >>> layers_to_connect(256, 3, True), layers_to_connect(256, 5, True)  # 2**8 >= 256, 3**6 >= 256
    (8, 6)

    Args:
        T: number of positions (>= 1).
        kernel: odd kernel width k >= 3.
        dilated: True for the dilated stack.

    Returns:
        The depth L, an int >= 1.

    Raises:
        SeqlabError: ``T`` is not an integer >= 1, or ``kernel`` is not an odd integer >= 3.
    """
    T = require_positive_int("T", T)
    if not dilated:
        half = (_check_kernel(kernel) - 1) // 2
        return max(1, -(-(T - 1) // half))  # ⌈(T - 1) / h⌉ in integers
    layers = 1
    while reach(layers, kernel, True) < T - 1:  # the least L with b^L - 1 >= T - 1
        layers += 1
    return layers


class ConvolutionStack(torch.nn.Module):
    """``layers`` convolutions of width k, d → d channels, 'same' padding, tanh between layers.

    >>> stack = ConvolutionStack(8, 3, layers=4, dilated=True, generator=torch.Generator().manual_seed(0))
    >>> stack.dilations, stack(torch.randn(2, 20, 8)).shape  # b = (3 + 1) / 2 = 2
    ((1, 2, 4, 8), torch.Size([2, 20, 8]))
    >>> ConvolutionStack.connecting(16, 4, 3).depth  # 15 layers of reach 1
    15

    Args:
        d_model: channels d of every layer.
        kernel: odd width k >= 3.
        layers: depth L >= 1.
        dilated: layer l has dilation b^l, b = (k + 1)/2 (else dilation 1 everywhere).
        generator: RNG for the weights (``nn.Conv1d``'s initialisation, reproducible).
        dtype: floating dtype of the weights.

    Raises:
        SeqlabError: a size that is not a positive integer, or an even or too small kernel.
    """

    def __init__(self, d_model: int, kernel: int = 3, *, layers: int = 1, dilated: bool = False,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.d_model = require_positive_int("d_model", d_model)
        self.kernel = _check_kernel(kernel)
        self.depth = require_positive_int("layers", layers)
        self.dilated = bool(dilated)
        base = dilation_base(kernel) if dilated else 1
        self.dilations = tuple(base**layer for layer in range(self.depth))
        bound = 1.0 / math.sqrt(d_model * kernel)  # nn.Conv1d's default bound, drawn from ``generator``
        convolutions = []
        for dilation in self.dilations:
            conv = torch.nn.Conv1d(d_model, d_model, kernel, padding=dilation * (kernel - 1) // 2,
                                   dilation=dilation, device="meta", dtype=dtype)
            conv.weight = torch.nn.Parameter(torch.empty(conv.weight.shape, dtype=dtype).uniform_(
                -bound, bound, generator=generator))
            conv.bias = torch.nn.Parameter(torch.empty(d_model, dtype=dtype).uniform_(-bound, bound,
                                                                                     generator=generator))
            convolutions.append(conv)
        self.convolutions = torch.nn.ModuleList(convolutions)

    @classmethod
    def connecting(cls, T: int, d_model: int, kernel: int = 3, *, dilated: bool = False,
                   generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32
                   ) -> ConvolutionStack:
        """The shallowest stack that connects every pair of T positions (:func:`layers_to_connect`)."""
        return cls(d_model, kernel, layers=layers_to_connect(T, kernel, dilated), dilated=dilated,
                   generator=generator, dtype=dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, kernel={self.kernel}, layers={self.depth}, dilated={self.dilated}"

    def _check(self, x: object) -> Tensor:
        expected = Message(N_("(T, {d_model}) or (B, T, {d_model})"), d_model=self.d_model)
        if not isinstance(x, Tensor) or x.dim() not in (2, 3) or x.shape[-1] != self.d_model or x.shape[-2] == 0:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise SeqlabError(N_("x must have shape {expected} with T >= 1, received {got}"), expected=expected,
                              got=got)
        return x

    def forward_all(self, x: Tensor) -> list[Tensor]:
        """Every layer's output, before the tanh that feeds the next: [y_1, …, y_L], each like x.

        y_1 = conv_1(x), y_l = conv_l(tanh(y_{l-1})); the path from x to y_l crosses l products.

        Args:
            x: (T, d_model) or (B, T, d_model).

        Returns:
            L tensors of x's shape (views with positions on dim -2).

        Raises:
            SeqlabError: x is not (T, d_model) or (B, T, d_model).
        """
        h = self._check(x).transpose(-2, -1)  # (…, d, T): channels first, as Conv1d wants
        outputs = []
        for index, conv in enumerate(self.convolutions):
            if index:
                h = torch.tanh(h)  # (…, d, T)
            h = conv(h)  # (…, d, T): one product, k·T·d² multiplications
            outputs.append(h.transpose(-2, -1))  # (…, T, d)
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        """The last layer's output, shape of x: (T, d_model) or (B, T, d_model)."""
        return self.forward_all(x)[-1]
