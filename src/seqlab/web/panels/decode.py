"""Decoding panel: what each new token costs when a model writes, machine by machine (beyond the lesson).

The lesson compares the machines on a text that is already there; a model that *writes* runs one step per new
token, whatever its layer. For positions t = 1, 4, 16, … up to the largest asked for, this panel runs
:func:`seqlab.studies.decode.run_decode` in a worker process and returns, per machine and position:

* the multiplications counted on the step (:func:`seqlab.measure.work.count_multiplications`) beside their
  closed form (:func:`seqlab.measure.decode.step_multiplications`);
* the bytes of the state the machine carries after the step: fixed for the Elman RNN, linear attention and the
  selective recurrence, t rows of keys and values for attention with a growing KV cache, the largest position's
  rows from the first token for the static (preallocated) one;
* optionally the step's time, median and IQR over interleaved rounds in which every machine runs at each position
  (:func:`seqlab.measure.rounds.measure_rounds`), on one thread of this server (the server's load is reported);
* the study's sentences (who wins each criterion with a margin — the fastest only when decided against every
  other machine —, how each state grows, what a cache saves, the span asymmetry of training and generation),
  worded by :mod:`seqlab.render.decode` in the page's language.

Shapes: batch 1, d = d_model = d_h = d_k = d_v.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from seqlab.memory import MemoryEstimate
from seqlab.web.budget import require_within_budget
from seqlab.web.cache import ResultCache
from seqlab.web.messages import N_, Phrase
from seqlab.web.workers import pool_of

DOMAIN = "web"

router = APIRouter()
#: Seconds one decoding measurement may take in its worker.
LIMIT_S = 60.0
_results = ResultCache(64)

#: The largest position a visitor may ask for, and the widths offered.
MAX_POSITION = 4096
MAX_WIDTH = 128
#: Positions grow by this factor from t = 1: 1, 4, 16, 64, …
POSITION_FACTOR = 4
#: Seconds of timed blocks per step (a web request stays short; the CLI times longer).
MIN_RUN_TIME_S = 0.01


def positions_up_to(largest: int) -> tuple[int, ...]:
    """Positions 1, 4, 16, … below ``largest``, and ``largest`` itself.

    >>> positions_up_to(256), positions_up_to(100)
    ((1, 4, 16, 64, 256), (1, 4, 16, 64, 100))
    """
    positions, t = [], 1
    while t < largest:
        positions.append(t)
        t *= POSITION_FACTOR
    return tuple(positions) + (largest,)


class Step(BaseModel):
    """One machine at one position."""

    t: int = Field(description="position of the new token (1-based)")
    multiplications: int = Field(description="multiplications counted on the step (the lesson's unit)")
    closed_form: int | None = Field(description="the step's closed form, None where the machine has none")
    state_bytes: int = Field(description="bytes of the state after the step")
    median_s: float | None = Field(description="median seconds of the step, None when not timed")
    iqr_s: float | None = Field(description="interquartile range of the step's seconds, None when not timed")


class Machine(BaseModel):
    """Every measured position of one machine."""

    key: str = Field(description="the machine's key, as in seqlab decode --json")
    label: str = Field(description="its name in the page's language")
    fixed_state: bool = Field(description="whether its state has the same size at every position (measured)")
    steps: list[Step]


class DecodeResponse(BaseModel):
    """What the decoding panel draws."""

    d_model: int
    positions: list[int]
    timed: bool
    threads: int = Field(description="threads the steps were timed on")
    rounds: int = Field(description="interleaved rounds per position when timed")
    load_per_cpu: float | None = Field(description="the server's 1-minute load per CPU when timing began")
    machines: list[Machine]
    sentences: list[str] = Field(description="the study's decisions, worded in the page's language")
    static_note: str | None = Field(description="what the static cache's bytes are, None when it was not run")


def measure_decoding(d_model: int, largest: int, timed: bool, lang: str) -> DecodeResponse:
    """Run the decoding study on every machine at :func:`positions_up_to` ``largest`` (in a worker process).

    >>> r = measure_decoding(8, 16, False, "en")
    >>> [(m.key, [s.multiplications for s in m.steps]) for m in r.machines][:2]  # 2·8²; 3·8² + t·(8 + 8)
    [('elman', [128, 128, 128]), ('attention_kv_cache', [208, 256, 448])]
    """
    from seqlab.render.decode import decode_sentences, machine_label, static_caption
    from seqlab.studies.decode import DecodeConfig, run_decode

    config = DecodeConfig(positions=positions_up_to(largest), d_model=d_model, time=timed,
                          min_run_time=MIN_RUN_TIME_S, span_lengths=(8, 16))
    result = run_decode(config)
    growth = {g.machine: g.kind for g in result.growth}
    machines = []
    for machine in result.config.machines:
        steps = [result.step(machine, t) for t in result.config.positions]
        machines.append(Machine(
            key=machine, label=machine_label(machine, lang), fixed_state=growth.get(machine) == "fixed",
            steps=[Step(t=s.t, multiplications=s.multiplications, closed_form=s.closed_form,
                        state_bytes=s.state_bytes, median_s=s.timing.median_s if s.timing else None,
                        iqr_s=s.timing.iqr_s if s.timing else None) for s in steps]))
    load = result.load.per_cpu if result.load is not None else None
    return DecodeResponse(d_model=d_model, positions=list(result.config.positions), timed=timed,
                          threads=result.threads, rounds=result.config.rounds, load_per_cpu=load,
                          machines=machines, sentences=decode_sentences(result, lang),
                          static_note=static_caption(result, lang) or None)


def estimate_panel_bytes(d_model: int, largest: int) -> MemoryEstimate:
    """Bytes of the heaviest step: attention's cache at ``largest`` (see
    :func:`seqlab.measure.decode.estimate_decode_bytes`), named for the refusal message.

    >>> estimate_panel_bytes(MAX_WIDTH, MAX_POSITION).total_bytes < 64 * 1024**2  # the schema's ranges fit
    True
    """
    from seqlab.measure.decode import estimate_decode_bytes

    estimate = estimate_decode_bytes("attention_kv_cache", largest, d_model)
    return MemoryEstimate(estimate.total_bytes, Phrase(N_("a cache of {count} positions"), {"count": largest}))


@router.get("/api/decode", response_model=DecodeResponse, tags=["decode"],
            summary="Multiplications, state and time per new token while generating (beyond the lesson)")
async def decode_panel(
    request: Request,
    d_model: Annotated[int, Query(ge=2, le=MAX_WIDTH, description="every width")] = 32,
    positions: Annotated[int, Query(ge=2, le=MAX_POSITION, description="the largest position t measured")] = 256,
    time: Annotated[bool, Query(description="time each step on this server (one thread)")] = True,
    lang: Annotated[Literal["en", "es"], Query(description="language of the sentences")] = "en",
) -> DecodeResponse:
    """Measure one decoding step of every machine at t = 1, 4, 16, … up to ``positions`` (cached per input).

    Raises:
        LabError: sizes over one request's budget (checked before any worker is asked), or past the time limit.
        LabBusy: every worker is measuring.
    """
    key = (d_model, positions, bool(time), lang)
    found = _results.get(key)
    if found is None:
        require_within_budget(estimate_panel_bytes(d_model, positions),
                              Phrase(N_("t = {T} at d_model = {d}"), {"T": positions, "d": d_model}), "positions")
        found = await pool_of(request).run(measure_decoding, key, limit_s=LIMIT_S, request=request)
        _results.put(key, found)  # a timed answer is the latest timing on this server; it carries its load
    return found
