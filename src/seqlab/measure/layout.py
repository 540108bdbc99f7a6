"""Where a module expects its positions: its own ``batch_first``, read through PyTorch's containers.

The engine reads x with its positions on dim -2: (T, d) or (B, T, d). A sequence-first module
(``batch_first=False``, the default of ``nn.RNN``, ``nn.GRU``, ``nn.LSTM``, ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer``) reads a (B, T, d) tensor as (T, B, d): its "positions" would be batch rows, and
every figure would be measured on the wrong axis with no error. :func:`check_positions_layout` refuses that
case before anything is traced; :func:`batch_first_of` finds the flag on the module itself or, for PyTorch's
Transformer containers (which keep it on their attention), on the attention inside.
"""

from __future__ import annotations

from torch import Tensor, nn

from seqlab.errors import SeqlabError
from seqlab.i18n import N_


def batch_first_of(layer: object) -> bool | None:
    """The module's ``batch_first`` (None when it has none: the layout is the caller's to know).

    >>> batch_first_of(nn.GRU(2, 2)), batch_first_of(nn.TransformerEncoderLayer(4, 1, batch_first=True))
    (False, True)
    >>> batch_first_of(nn.Linear(2, 2)) is None
    True
    """
    flag = getattr(layer, "batch_first", None)
    if isinstance(flag, bool):
        return flag
    if isinstance(layer, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return batch_first_of(layer.self_attn)
    if isinstance(layer, (nn.TransformerEncoder, nn.TransformerDecoder)) and len(layer.layers):
        return batch_first_of(layer.layers[0])
    if isinstance(layer, nn.Transformer):
        return batch_first_of(layer.encoder)
    return None


def check_positions_layout(layer: object, x: Tensor) -> None:
    """Refuse a (B, T, d) x for a sequence-first module (it would read the positions as batch rows).

    Raises:
        SeqlabError: ``x`` is 3-D and the module has ``batch_first=False``; the message says what to pass instead.
    """
    if isinstance(x, Tensor) and x.dim() == 3 and batch_first_of(layer) is False:
        raise SeqlabError(N_("{layer_class} has batch_first=False: it reads x {shape} as (T, B, d), but the "
                             "positions here are on dim -2; pass x as (T, d) or a batch_first module"),
                          layer_class=type(layer).__name__, shape=tuple(x.shape), parameter="module")
