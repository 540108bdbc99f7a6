"""Chain and path panel: T steps in a row against two products, and how far a signal travels (L1–L4).

For a short text (the first T words of the built-in story, seeded embedding of :mod:`seqlab.text`) it
builds the lesson's two machines — :class:`~seqlab.layers.recurrent.ElmanRNN` with W_hh rescaled to the
requested spectral radius, and :class:`~seqlab.layers.attention.SelfAttention` — and measures on them:

* the span (:func:`seqlab.measure.trace.measure_span`): the recurrence's whole pass, attention's call on
  Q, K, V (the scope of L2 and of ``seqlab compare``);
* the path matrix (:func:`seqlab.measure.paths.measure_paths`): least matrix products from every input
  position i to every output position j, through the recurrence and through the whole self-attention;
* the reach (:func:`seqlab.measure.reach.measure_reach`): ‖∂y_T/∂x_i‖ for every i, exact, in float64,
  and its per-step factor (L3: about the spectral radius and below; L4: about 1).

Shapes: T positions, d = d_model = d_h = d_k = d_v.
"""

from __future__ import annotations

import copy
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from seqlab import cost
from seqlab.errors import SeqlabError
from seqlab.memory import FLOAT32_BYTES, MemoryEstimate
from seqlab.seeds import MAX_SEED
from seqlab.web.budget import MIB, Work, require_within_budget
from seqlab.web.messages import N_, Phrase
from seqlab.web.cache import ResultCache
from seqlab.web.workers import pool_of

DOMAIN = "web"

router = APIRouter()
#: Seconds one chain measurement may take in its worker.
LIMIT_S = 60.0
_results = ResultCache(64)

#: Longest text: every T up to it fits one request's budget at every width up to MAX_WIDTH (estimate_chain_bytes:
#: about 127 MiB at T = 96, d = 64, against 256 MiB; the budget alone would hold T = 150 there).
MAX_T = 96
MAX_WIDTH = 64
MAX_RADIUS = 8.0
#: Smallest spectral radius accepted: far below any the lesson uses (the page's slider starts at 0.1), and far
#: above the radii whose rescaled float32 weights underflow (about 1e-30 at the widths accepted), which the
#: library refuses; the schema states it, so no radius it allows is refused.
MIN_RADIUS = 1e-3


class Span(BaseModel):
    """Longest chain of one pass."""

    ops: int = Field(description="compute ops in a row")
    products: int = Field(description="matrix products in a row")
    total_ops: int = Field(description="compute ops in the whole pass (the work in ops)")


class Machine(BaseModel):
    """Everything measured on one machine."""

    span: Span
    span_scope: str = Field(description="what the span was measured on")
    levels: list[int | None] = Field(description="least products from x_1 to each y_j (row 1 of the path matrix)")
    paths: list[list[int | None]] = Field(description="paths[i][j]: least products from x_i to y_j; None: no path")
    reach: list[float] = Field(description="‖∂y_T/∂x_i‖_F for every i (float64, exact)")
    reach_per_step: float | None = Field(description="per-step factor of a log-linear fit of reach on distance")
    reach_zeros: int = Field(description="norms that are exactly 0")


class ChainResponse(BaseModel):
    """What the chain-and-path panel draws."""

    T: int
    d_model: int
    spectral_radius: float = Field(description="spectral radius of W_hh, measured after rescaling")
    seed: int
    words: list[str] = Field(description="the T words the positions stand for")
    closed_form: dict[str, int] = Field(description="recurrence: T steps (L1); attention: 2 products (L2)")
    recurrence: Machine
    attention: Machine


def estimate_chain_bytes(T: int, d: int) -> MemoryEstimate:
    """Bytes of the path analysis, the heaviest step, by the tracer's own estimate
    (:func:`seqlab.measure.distance_store.estimate_path_bytes`: int32 distances, its 64 MiB product chunk).

    Written elements, generously: 8·T·d (states, products, sums; Q, K, V and outputs) plus 4·T² (scores,
    scaled scores, weights), each with two int32 distances per source for all T sources in one pass, and its
    float32 value; plus the masked min-plus temporary of the (T×d) @ (d×T) score product, capped at the chunk.

    >>> estimate_chain_bytes(16, 16).total_bytes < 64 * MIB
    True
    >>> from seqlab.web.budget import REQUEST_BUDGET_BYTES
    >>> estimate_chain_bytes(MAX_T, MAX_WIDTH).total_bytes <= REQUEST_BUDGET_BYTES  # the schema's ranges all fit
    True
    """
    from seqlab.measure.distance_store import estimate_path_bytes

    held = estimate_path_bytes(8 * T * d + 4 * T * T, T, value_bytes=FLOAT32_BYTES, product=(T, d, T))
    terms = [(held.distances + held.values, Phrase(N_("path distances of {count} sources"), {"count": T})),
             (held.temporary, Phrase(N_("a {a}×{b}×{c} product temporary"), {"a": T, "b": d, "c": T}))]
    return MemoryEstimate(total_bytes=held.total, largest=max(terms, key=lambda term: term[0])[1])


def _machine(layer, x, span, scope: str) -> Machine:
    import torch

    from seqlab.measure.paths import measure_paths
    from seqlab.measure.reach import measure_reach

    first = lambda out: out[0] if isinstance(out, tuple) else out  # noqa: E731
    paths = measure_paths(lambda rows: first(layer(rows)), x)
    layer64 = copy.deepcopy(layer).double()
    reach = measure_reach(lambda rows: first(layer64(rows)), x.to(torch.float64), batched=True)
    try:
        per_step = reach.decay_per_step()
    except SeqlabError:  # every earlier norm underflowed: no slope to fit
        per_step = None
    return Machine(span=Span(ops=span.ops, products=span.products, total_ops=span.total_ops), span_scope=scope,
                   levels=list(paths.row(0)), paths=[list(row) for row in paths.products],
                   reach=list(reach.norms), reach_per_step=per_step, reach_zeros=reach.zeros)


def build_machines(d: int, seed: int):
    """The lab's two machines at width d for seed N, float32 in eval mode: the weights of ``seqlab compare --seed N
    --d-model d`` (the one seed scheme, :func:`seqlab.text.seeded_generator`). Used by the chain and order panels.

    >>> rnn, attention = build_machines(4, 1)
    >>> tuple(rnn.weight_hh.shape), tuple(attention.q_proj.weight.shape)  # (d_h, d_h), (d_k, d_model)
    ((4, 4), (4, 4))

    Returns:
        ``(ElmanRNN(d, d), SelfAttention(d))`` (scaled dot-product score, d_k = d_v = d).
    """
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.recurrent import ElmanRNN
    from seqlab.text import seeded_generator

    return (ElmanRNN(d, d, generator=seeded_generator(seed, "recurrence")).eval(),
            SelfAttention(d, generator=seeded_generator(seed, "attention")).eval())


def measure_chain(T: int, d: int, radius: float, seed: int, lang: str) -> ChainResponse:
    """Build both machines at width d on the first T words of the built-in text and measure them (in a worker
    process: the tracers switch PyTorch's global kernel flags while they run).

    >>> r = measure_chain(6, 4, 0.9, 0, "en")
    >>> r.recurrence.levels, r.attention.levels  # x_1 reaches y_j after j products; attention: 2
    ([1, 2, 3, 4, 5, 6], [2, 2, 2, 2, 2, 2])
    """
    import torch

    from seqlab.layers.recurrent import spectral_radius
    from seqlab.measure.trace import measure_span
    from seqlab.text import embed, synthetic_tokens

    tokens = synthetic_tokens(T, tokenizer="words", lang=lang)
    x = embed(tokens, d, seed=seed)  # (T, d)
    rnn, attention = build_machines(d, seed)
    rnn.set_spectral_radius(radius)
    with torch.no_grad():
        q, k, v = attention.project(x)  # (T, d) each
    recurrence = _machine(rnn, x, measure_span(rnn, x), "recurrence: the whole pass")
    attended = _machine(attention, x, measure_span(attention.attention, q, k, v), "attention: the call on Q, K, V")
    return ChainResponse(
        T=T, d_model=d, spectral_radius=spectral_radius(rnn.weight_hh.detach()), seed=seed,
        words=list(tokens.pieces),
        closed_form={"recurrence": cost.recurrence_sequential_steps(T),
                     "attention": cost.attention_sequential_products()},
        recurrence=recurrence, attention=attended)


def chain_work(T: int, d: int) -> Work:
    """The chain measurement for its time estimate: the path tracer carries T sources through about 8·T·d + 4·T²
    elements, so (8·T·d + 4·T²)·T units.

    >>> chain_work(12, 16).units
    25344
    """
    return Work("chain", (8 * T * d + 4 * T * T) * T, Phrase(N_("T = {T} at d_model = {d}"), {"T": T, "d": d}), "T")


@router.get("/api/chain", response_model=ChainResponse, tags=["chain"],
            summary="Span, path matrix and reach of both machines on a short text (L1–L4)")
async def chain_panel(
    request: Request,
    T: Annotated[int, Query(ge=2, le=MAX_T, description="positions (words of the built-in text)")] = 12,
    d_model: Annotated[int, Query(ge=2, le=MAX_WIDTH, description="every width")] = 16,
    spectral_radius: Annotated[float, Query(ge=MIN_RADIUS, le=MAX_RADIUS,
                                            description="spectral radius of W_hh")] = 0.9,
    seed: Annotated[int, Query(ge=0, le=MAX_SEED, description="seeds the embedding and the weights")] = 0,
    lang: Annotated[Literal["en", "es"], Query(description="which built-in text gives the words")] = "en",
) -> ChainResponse:
    """Measure span, path matrix and reach of the recurrence and of self-attention (cached per input).

    Raises:
        LabError: sizes over one request's budget (checked before any worker is asked), or past the time limit.
        LabBusy: every worker is measuring.
    """
    key = (T, d_model, float(spectral_radius), seed, lang)
    found = _results.get(key)
    if found is None:
        require_within_budget(estimate_chain_bytes(T, d_model), Phrase(N_("T = {T} at d_model = {d}"),
                                                                       {"T": T, "d": d_model}), "T")
        found = await pool_of(request).run(measure_chain, key, limit_s=LIMIT_S, request=request,
                                           work=chain_work(T, d_model))
        _results.put(key, found)
    return found
