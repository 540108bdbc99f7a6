"""Cost panel: both multiplication counts over T, where they cross, and each machine's chain (L5–L7, L9).

Beside the lesson's two counts the panel sets the same T at three scopes — the lesson's, a whole layer's and
the library kernels' — with closed forms and independent counts (:mod:`seqlab.web.panels.cost_scopes`).

Counts are the exact closed forms of :mod:`seqlab.cost` — recurrence T(d_h² + d_h·d_model), attention
T²(d_k + d_v), projections apart — and the crossover is :func:`seqlab.cost.crossover_length`. The span
(operations and matrix products that must run one after another) is *measured*: the explicit
:class:`~seqlab.layers.recurrent.ElmanRNN` and the attention call are traced with
:func:`seqlab.measure.trace.measure_span` at the requested T on width-8 copies (the chain is a property
of the graph, not of the width, which is what lets it be traced at T = 4096 in a fraction of a second).
Above :data:`SPAN_TRACE_MAX` the closed forms T and 2 are returned instead, and the response says so; so
they are while every worker is measuring another request (``busy``): this panel answers at once, never
queueing. Traces run in a worker process (:mod:`seqlab.web.workers`).

Shapes: T positions, d_model input width, d_h state width, d_k query/key width, d_v value width.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from seqlab import cost
from seqlab.i18n import format_integer
from seqlab.web.budget import LabBusy
from seqlab.web.workers import default_pool
from seqlab.web.panels.cost_scopes import Ratio, Scopes, ratio, scope_rows

router = APIRouter()

MAX_T = 10_000_000
MAX_WIDTH = 65_536
#: Longest T whose span is traced (about 0.7 s for the recurrence's loop); above it: closed forms.
SPAN_TRACE_MAX = 4096
#: Seconds a trace may take in its worker.
TRACE_LIMIT_S = 30.0
#: Width of the copies the span is traced on.
SPAN_WIDTH = 8
#: The lesson's worked lengths at d = 512 (L9).
WORKED_LENGTHS = (50, 1000, 2000)
WORKED_WIDTH = 512
CURVE_POINTS = 97

Lang = Literal["en", "es"]


class Chain(BaseModel):
    """Operations and matrix products in a row, for one machine."""

    products: int
    ops: int | None = Field(description="None when only the closed form (products) is known")


class Spans(BaseModel):
    """Chain depth of both machines at one T, and how it was obtained."""

    T: int
    method: Literal["measured", "closed form"]
    traced_width: int | None = Field(description="width of the traced copies; None for the closed form")
    trace_limit: int = Field(SPAN_TRACE_MAX, description="longest T that is traced")
    busy: bool = Field(False, description="the tracer was busy with another request: closed forms, not cached")
    recurrence: Chain
    attention: Chain


class Counts(BaseModel):
    """Multiplications of both machines at one T (one multiply-add = one multiplication)."""

    T: int
    recurrence: int
    attention: int
    projections: int = Field(description="Q, K, V projections, T·d_model·(2d_k + d_v): not in the attention count")
    recurrence_text: str
    attention_text: str
    projections_text: str
    ratio: Ratio = Field(description="attention / recurrence")
    spans: Spans


class Curves(BaseModel):
    """Both counts on a log-spaced grid of T, for plotting (floats; exact values are in ``at_T``)."""

    T: list[int]
    recurrence: list[float]
    attention: list[float]


class CostResponse(BaseModel):
    """Everything the cost panel draws."""

    d_model: int
    d_h: int
    d_k: int
    d_v: int
    at_T: Counts
    crossover: Ratio = Field(description="T at which both counts are equal: d_h(d_h + d_model)/(d_k + d_v)")
    first_T_attention_costs_more: int
    curves: Curves
    worked: list[Counts] = Field(description="the lesson's T = 50, 1000, 2000 at every width 512 (L9)")
    scopes: Scopes = Field(description="at T: the lesson's scope, the layer's (with and without W_O) and the "
                                       "kernels', closed forms and counts, and which side does fewer multiplications")


def _ratio(value: Fraction, lang: str, digits: int = 3) -> Ratio:
    return ratio(value, lang, digits)


def _closed_spans(T: int, busy: bool = False) -> Spans:
    return Spans(T=T, method="closed form", traced_width=None, busy=busy,
                 recurrence=Chain(products=cost.recurrence_sequential_steps(T), ops=None),
                 attention=Chain(products=cost.attention_sequential_products(), ops=None))


def trace_spans(T: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Trace both machines at length T on width-8 copies: ((products, ops) of the recurrence, of attention).

    Runs in a worker process (the tracer switches global kernel flags while it runs).

    >>> trace_spans(6)  # 6 steps in a row, 4 ops each; Q K^T, scale, softmax, A V
    ((6, 24), (2, 4))
    """
    import torch

    from seqlab.layers.attention import Attention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.measure.trace import measure_span

    generator = torch.Generator().manual_seed(0)
    rnn = ElmanRNN(SPAN_WIDTH, SPAN_WIDTH, generator=generator).eval()
    attention = Attention("scaled_dot").eval()
    x = torch.randn(T, SPAN_WIDTH, generator=generator)  # (T, d)
    q, k, v = torch.randn(3, T, SPAN_WIDTH, generator=generator).unbind(0)  # 3 × (T, d)
    recurrence, call = measure_span(rnn, x), measure_span(attention, q, k, v)
    return (recurrence.products, recurrence.ops), (call.products, call.ops)


@lru_cache(maxsize=256)
def _traced_spans(T: int) -> Spans:
    """Trace both machines at length T in a worker (a fifth of a second's wait for one at most).

    Raises:
        LabBusy: every worker stayed busy (not cached: the next request tries again).
    """
    done, spans = default_pool().try_call(trace_spans, (T,), limit_s=TRACE_LIMIT_S)
    if not done:
        raise LabBusy()
    (rnn_products, rnn_ops), (call_products, call_ops) = spans
    return Spans(T=T, method="measured", traced_width=SPAN_WIDTH,
                 recurrence=Chain(products=rnn_products, ops=rnn_ops),
                 attention=Chain(products=call_products, ops=call_ops))


def measured_spans(T: int) -> Spans:
    """Trace both machines at length T on width-8 copies (T ≤ :data:`SPAN_TRACE_MAX`), else the closed forms.

    Never waits behind another measurement: while every worker is busy the closed forms come back,
    marked ``busy``.

    >>> s = measured_spans(50)
    >>> s.method, s.recurrence.products, s.attention.products  # 50 steps in a row; Q K^T then A V
    ('measured', 50, 2)
    >>> measured_spans(10**6).method
    'closed form'
    """
    if T > SPAN_TRACE_MAX:
        return _closed_spans(T)
    try:
        return _traced_spans(T)
    except LabBusy:
        return _closed_spans(T, busy=True)


def counts(T: int, d_model: int, d_h: int, d_k: int, d_v: int, lang: str) -> Counts:
    """Both closed-form counts, the projections and the ratio at one T, with the measured spans.

    >>> c = counts(50, 512, 512, 512, 512, "en")  # L9: 2·50·512², 2·50²·512
    >>> c.recurrence, c.attention, c.ratio.fraction
    (26214400, 2560000, '25/256')
    """
    recurrence = cost.recurrence_multiplications(T, d_model, d_h)
    attention = cost.attention_multiplications(T, d_k, d_v)
    projections = cost.projection_multiplications(T, d_model, d_k, d_v)
    return Counts(T=T, recurrence=recurrence, attention=attention, projections=projections,
                  recurrence_text=format_integer(recurrence, lang), attention_text=format_integer(attention, lang),
                  projections_text=format_integer(projections, lang),
                  ratio=_ratio(cost.work_ratio(T, d_model, d_h, d_k, d_v), lang), spans=measured_spans(T))


def curve_lengths(T: int, crossover: Fraction) -> list[int]:
    """Log-spaced integer lengths from 1 to past both T and the crossover (at least 16), T included.

    >>> curve_lengths(1000, Fraction(512))[:3], curve_lengths(1000, Fraction(512))[-1]
    ([1, 2, 3], 2048)
    """
    top = max(16, 2 * T, math.ceil(4 * crossover))
    grid = {max(1, round(top ** (i / (CURVE_POINTS - 1)))) for i in range(CURVE_POINTS)}
    return sorted(grid | {T})


@router.get("/api/cost", response_model=CostResponse, tags=["cost"],
            summary="Multiplications of both machines, their crossover and their chains (L5–L7, L9)")
def cost_panel(
    T: Annotated[int, Query(ge=1, le=MAX_T, description="sequence length T")] = 1000,
    d_model: Annotated[int, Query(ge=1, le=MAX_WIDTH, description="input width")] = 512,
    d_h: Annotated[int, Query(ge=1, le=MAX_WIDTH, description="recurrent state width")] = 512,
    d_k: Annotated[int, Query(ge=1, le=MAX_WIDTH, description="query/key width")] = 512,
    d_v: Annotated[int, Query(ge=1, le=MAX_WIDTH, description="value width")] = 512,
    lang: Annotated[Lang, Query(description="language of the formatted numbers")] = "en",
) -> CostResponse:
    """The closed forms at T, over a grid of T, and at the lesson's three worked lengths."""
    crossover = cost.crossover_length(d_model, d_h, d_k, d_v)
    lengths = curve_lengths(T, crossover)
    curves = Curves(T=lengths,
                    recurrence=[float(cost.recurrence_multiplications(t, d_model, d_h)) for t in lengths],
                    attention=[float(cost.attention_multiplications(t, d_k, d_v)) for t in lengths])
    d = WORKED_WIDTH
    return CostResponse(
        d_model=d_model, d_h=d_h, d_k=d_k, d_v=d_v,
        at_T=counts(T, d_model, d_h, d_k, d_v, lang),
        crossover=_ratio(crossover, lang, digits=4),
        first_T_attention_costs_more=cost.first_length_attention_costs_more(d_model, d_h, d_k, d_v),
        curves=curves,
        worked=[counts(t, d, d, d, d, lang) for t in WORKED_LENGTHS],
        scopes=scope_rows(T, d_model, d_h, d_k, d_v, lang),
    )
