"""Work at three scopes: what the lesson counts, what a whole layer does, what the library kernels run (L5–L7).

The lesson (L5, L6) compares the recurrence *with* its input weights W_xh against the attention call
*without* its Q, K, V projections. That is one scope, and the one in which attention wins below T = d. A
fair comparison of two layers that map (T, d_model) rows to (T, d) rows charges each its own weights:

=========  =====================================================  =============================================
scope      recurrence                                             attention
=========  =====================================================  =============================================
lesson     T (d_h² + d_h·d_model)                   (L5)          T² (d_k + d_v)                           (L6)
layer      T (d_h² + d_h·d_model), times G gates for LSTM/GRU     T·d_model(2d_k + d_v) + T²(d_k + d_v)
                                                                  + T·d_v·d_model (output projection W_O)
kernels    what ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` run         what ``nn.MultiheadAttention`` runs (counted)
=========  =====================================================  =============================================

With every width d the layer scope gives attention / recurrence = 2 + T/d (1.5 + T/d without W_O), so at
layer scope attention costs more at *every* T: the crossover of L7 exists only at the lesson's scope. The
number of heads H does not change these counts (each head does T²(d_k + d_v)/H), only how the work is cut.

Unit: multiplications (one per multiply-add); biases, activations, softmax and norms are left out, as in
:mod:`seqlab.cost`. Everything here is an exact integer or :class:`fractions.Fraction`.

>>> [(w.scope, w.ratio) for w in scoped_work(50, 512, 512, 512, 512)]  # lesson 50/512; layer 2 + 50/512
[('lesson', Fraction(25, 256)), ('layer', Fraction(537, 256)), ('layer_without_output', Fraction(409, 256))]
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from seqlab import cost
from seqlab.cost import GATES, attention_layer_multiplications, gated_recurrence_multiplications  # re-exported
from seqlab.errors import SeqlabError, require_positive_int

__all__ = ["GATES", "SCOPES", "ScopedWork", "attention_layer_multiplications", "gated_recurrence_multiplications",
           "layer_crossover_length", "scoped_work"]

#: The scopes at which work is compared, in the order they are shown.
SCOPES = ("lesson", "layer", "kernels")

def layer_crossover_length(d_model: int, d_h: int, d_k: int, d_v: int, output_projection: bool = True,
                           cell: str = "rnn") -> Fraction | None:
    """The T at which a whole attention layer and a whole recurrent layer do equal work, or None if never.

    Attention's count is a·T² + b·T with a = d_k + d_v and b its per-row projections; the recurrence's is
    c·T. They cross at T = (c - b)/a when c > b; with equal widths b ≥ c and attention costs more at every T.

    >>> layer_crossover_length(512, 512, 512, 512) is None
    True
    >>> layer_crossover_length(64, 512, 64, 64)  # (512·576 - 64·64·4) / 128
    Fraction(2176, 1)

    Raises:
        SeqlabError: a width that is not an integer >= 1, or an unknown cell.
    """
    a = cost.attention_multiplications(1, d_k, d_v)
    b = attention_layer_multiplications(1, d_model, d_k, d_v, output_projection) - a
    c = gated_recurrence_multiplications(1, d_model, d_h, cell)
    return Fraction(c - b, a) if c > b else None


@dataclass(frozen=True)
class ScopedWork:
    """Closed-form work of the two machines at one scope (multiplications).

    Attributes:
        scope: ``"lesson"`` (L5 against L6), ``"layer"`` (both layers with all their weights, W_O
            included) or ``"layer_without_output"`` (attention without W_O).
        recurrence, attention: multiplications by the closed forms.
        ratio: attention / recurrence, exactly.
        crossover: the T at which the two are equal at this scope; None when attention costs more at every T.
    """

    scope: str
    recurrence: int
    attention: int
    ratio: Fraction
    crossover: Fraction | None

    @property
    def attention_costs_more(self) -> bool:
        """Whether attention does more multiplications than the recurrence at this T and scope."""
        return self.attention > self.recurrence


def scoped_work(T: int, d_model: int, d_h: int, d_k: int, d_v: int, cell: str = "rnn") -> tuple[ScopedWork, ...]:
    """The closed-form work of both machines at the lesson's scope and at layer scope (with and without W_O).

    The kernels' scope has no closed form of its own: it is counted on the library modules (``seqlab
    compare``), and its closed form is the layer scope's.

    >>> lesson, layer, _ = scoped_work(1000, 512, 512, 512, 512)
    >>> lesson.attention_costs_more, layer.ratio  # 1000/512 and 2 + 1000/512
    (True, Fraction(253, 64))

    Raises:
        SeqlabError: a size that is not an integer >= 1, or an unknown cell.
    """
    T = require_positive_int("T", T)
    recurrence_lesson = cost.recurrence_multiplications(T, d_model, d_h)
    recurrence_layer = gated_recurrence_multiplications(T, d_model, d_h, cell)
    rows = [("lesson", recurrence_lesson, cost.attention_multiplications(T, d_k, d_v),
             cost.crossover_length(d_model, d_h, d_k, d_v))]
    for name, output in (("layer", True), ("layer_without_output", False)):
        rows.append((name, recurrence_layer, attention_layer_multiplications(T, d_model, d_k, d_v, output),
                     layer_crossover_length(d_model, d_h, d_k, d_v, output, cell)))
    return tuple(ScopedWork(scope, recurrence, attention, Fraction(attention, recurrence), crossover)
                 for scope, recurrence, attention, crossover in rows)
