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

Below the machines, the panel measures a *model's* decoding (``/api/decode/model``): one of a small menu of tiny
random-weight causal LMs (:data:`MODEL_FAMILIES`: grouped-query attention, a sliding window, Mamba, a Jamba hybrid),
built in the worker from transformers configs (:mod:`seqlab.layers.tiny_lms`; nothing downloaded, random weights
change neither bytes nor counts), is run by :func:`seqlab.studies.decode_model.run_tiny_decode` — the measurement of
``seqlab decode --model`` — at t = 4, 8, 16, … up to 64: per t, the bytes read from the model's own cache object by
kind of state and the multiplications counted per token, each beside the config's closed form, and the growth
class of each figure beside the closed forms' one.

Shapes: batch 1, d = d_model = d_h = d_k = d_v.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from seqlab.memory import MemoryEstimate
from seqlab.web.budget import Work, require_within_budget
from seqlab.web.cache import ResultCache
from seqlab.web.messages import N_, LabError, Phrase, tr
from seqlab.web.workers import pool_of

DOMAIN = "web"

router = APIRouter()
#: Seconds one decoding measurement may take in its worker.
LIMIT_S = 60.0
_results = ResultCache(64)
_model_results = ResultCache(64)

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
    time_text: str = Field("—", description="median ± IQR as the CLI shows it (units, † when noisy); — untimed")


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
    caveat: str | None = Field(None, description="the busy-machine caveat of the timing; None when quiet or untimed")


def measure_decoding(d_model: int, largest: int, timed: bool, lang: str) -> DecodeResponse:
    """Run the decoding study on every machine at :func:`positions_up_to` ``largest`` (in a worker process).

    >>> r = measure_decoding(8, 16, False, "en")
    >>> [(m.key, [s.multiplications for s in m.steps]) for m in r.machines][:2]  # 2·8²; 3·8² + t·(8 + 8)
    [('elman', [128, 128, 128]), ('attention_kv_cache', [208, 256, 448])]
    """
    from seqlab.render.decode import decode_sentences, machine_label, static_caption, time_cell
    from seqlab.render.machine_load import busy_caveat
    from seqlab.studies.decode import DecodeConfig, run_decode

    config = DecodeConfig(positions=positions_up_to(largest), d_model=d_model, time=timed,
                          min_run_time=MIN_RUN_TIME_S, span_lengths=(8, 16))
    result = run_decode(config)
    growth = {g.machine: g.kind for g in result.growth}
    machines = []
    for machine in result.config.machines:
        steps = [result.step(machine, t) for t in result.config.positions]
        machines.append(Machine(
            key=machine, label=machine_label(machine, lang), fixed_state=growth.get(machine) == "constant",
            steps=[Step(t=s.t, multiplications=s.multiplications, closed_form=s.closed_form,
                        state_bytes=s.state_bytes, median_s=s.timing.median_s if s.timing else None,
                        iqr_s=s.timing.iqr_s if s.timing else None, time_text=time_cell(s, lang)) for s in steps]))
    load = result.load.per_cpu if result.load is not None else None
    return DecodeResponse(d_model=d_model, positions=list(result.config.positions), timed=timed,
                          threads=result.threads, rounds=result.config.rounds, load_per_cpu=load,
                          machines=machines, sentences=decode_sentences(result, lang),
                          static_note=static_caption(result, lang) or None,
                          caveat=busy_caveat(result.load, lang) or None)


def estimate_panel_bytes(d_model: int, largest: int) -> MemoryEstimate:
    """Bytes of the heaviest step: attention's cache at ``largest`` (see
    :func:`seqlab.measure.decode.estimate_decode_bytes`), named for the refusal message.

    >>> estimate_panel_bytes(MAX_WIDTH, MAX_POSITION).total_bytes < 64 * 1024**2  # the schema's ranges fit
    True
    """
    from seqlab.measure.decode import estimate_decode_bytes

    estimate = estimate_decode_bytes("attention_kv_cache", largest, d_model)
    return MemoryEstimate(estimate.total_bytes, Phrase(N_("a cache of {count} positions"), {"count": largest}))


def decode_work(d_model: int, largest: int, timed: bool) -> Work:
    """The decoding run for its time estimate. Timed, each position's steps are timed for a fixed time per block:
    one unit per position; untimed, the counted steps themselves: Σ_t (d² + t·d) units.

    >>> decode_work(32, 256, True).units, decode_work(8, 16, False).units
    (5, 360)
    """
    positions = positions_up_to(largest)
    units = len(positions) if timed else sum(d_model * d_model + t * d_model for t in positions)
    return Work("decode:timed" if timed else "decode", units,
                Phrase(N_("t = {T} at d_model = {d}"), {"T": largest, "d": d_model}), "positions")


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
        found = await pool_of(request).run(measure_decoding, key, limit_s=LIMIT_S, request=request,
                                           work=decode_work(d_model, positions, bool(time)))
        _results.put(key, found)  # a timed answer is the latest timing on this server; it carries its load
    return found


# --- A model's own decoding: tiny random-weight families built in the worker (issue 24) ---------------------------

#: The menu of models, built in the worker from transformers configs (:mod:`seqlab.layers.tiny_lms`), with their
#: names. Random weights change neither a cache's bytes nor a step's multiplications.
MODEL_FAMILIES = {
    "llama_gqa": N_("Llama with grouped-query attention (random weights)"),
    "mistral_window": N_("Mistral with a sliding window of 8 (random weights)"),
    "mamba": N_("Mamba, a selective SSM (random weights)"),
    "jamba_hybrid": N_("Jamba, attention and Mamba layers (random weights)"),
}
Family = Literal["llama_gqa", "mistral_window", "mamba", "jamba_hybrid"]
#: The model positions: t = 4, 8, 16, … (doubling) up to the largest asked for, at most the tiny models' 64.
MODEL_FIRST_POSITION = 4
MODEL_MIN_POSITION = 16
MODEL_MAX_POSITION = 64
#: Weight elements of the largest tiny model (Jamba, 44,212), rounded up: what a worker holds besides the caches.
MODEL_WEIGHTS_BOUND = 50_000


def model_positions(largest: int) -> tuple[int, ...]:
    """Positions 4, 8, 16, … below ``largest``, and ``largest`` itself (three at least from 16).

    >>> model_positions(16), model_positions(40), model_positions(64)
    ((4, 8, 16), (4, 8, 16, 32, 40), (4, 8, 16, 32, 64))
    """
    positions, t = [], MODEL_FIRST_POSITION
    while t < largest:
        positions.append(t)
        t *= 2
    return tuple(positions) + (largest,)


class ModelKind(BaseModel):
    """A kind of state the cache holds, or a kind of layer the step's work is split into."""

    key: str = Field(description="attention_kv, sliding_window_kv, convolution or recurrent")
    label: str = Field(description="its name in the page's language")


class ModelStepRow(BaseModel):
    """One new token at position t, written through the model's own cache object (the dynamic cache)."""

    t: int = Field(description="position of the new token")
    multiplications: int = Field(description="multiplications counted on the step while the model's code ran")
    closed_multiplications: int | None = Field(description="the config's closed form, None where there is none")
    bytes_by_kind: dict[str, int] = Field(description="bytes read from the cache object after the step, by kind")
    closed_bytes_by_kind: dict[str, int] | None = Field(description="the config's closed form, by kind")
    total_bytes: int = Field(description="every kind together")


class ModelGrowthRow(BaseModel):
    """How one figure grows with t: measured, and as the closed forms give it."""

    figure: str = Field(description="bytes, bytes:<kind>, multiplications or multiplications:<kind of layer>")
    label: str = Field(description="the figure in the page's language")
    measured: str = Field(description="constant, linear, constant + linear, capped, other, or a sum of them")
    measured_label: str
    expected: str | None = Field(description="the closed forms' growth, None without a closed form")
    expected_label: str | None
    matches: bool | None = Field(description="the measured growth is the closed forms' (None without one)")


class ModelDecodeResponse(BaseModel):
    """What the Generation panel's model section draws."""

    family: str
    label: str = Field(description="the model's name in the page's language")
    architecture: str = Field(description="the transformers class built")
    parameters: int = Field(description="weight elements (tied weights once)")
    positions: list[int]
    kinds: list[ModelKind] = Field(description="the kinds of state its cache holds, in order")
    steps: list[ModelStepRow]
    growth: list[ModelGrowthRow]
    counts_match: bool | None = Field(description="every count equals its closed form")
    bytes_match: bool | None = Field(description="every step's bytes per kind equal the closed form")
    sentences: list[str] = Field(description="seqlab decode --model's growth sentences, in the page's language")


def _figure_label(figure: str, lang: str) -> str:
    from seqlab.render.decode_model import kind_label, layer_label

    _ = tr(lang)
    name, _sep, part = figure.partition(":")
    if name == "bytes":
        return _("cache bytes: {kind}").format(kind=kind_label(part, lang)) if part else _("cache bytes")
    return (_("multiplications per token: {layers}").format(layers=layer_label(part, lang)) if part
            else _("multiplications per token"))


def measure_tiny_model(family: str, largest: int, lang: str) -> ModelDecodeResponse:
    """Build one tiny family in memory and measure its decoding at :func:`model_positions` ``largest`` (in a worker).

    >>> r = measure_tiny_model("mistral_window", 16, "en")
    >>> [s.total_bytes for s in r.steps], [g.measured for g in r.growth][:2]  # 256 bytes a row, 8 rows at most
    ([1024, 2048, 2048], ['capped', 'capped'])
    """
    from dataclasses import replace

    from seqlab.render.decode_model import growth_label, growth_sentences, kind_label
    from seqlab.studies.decode_model import run_tiny_decode

    result = run_tiny_decode(family, model_positions(largest))
    steps = [s for s in result.steps if s.cache == "dynamic"]  # the cache the model returns (no static one here)
    growth = [g for g in result.growth if not g.figure.startswith("static ")]
    result = replace(result, steps=tuple(steps), growth=tuple(growth))
    layers = {g.figure.split(":")[1] for g in growth if g.figure.startswith("multiplications:")} - {"output"}
    # a part is shown only where the whole has several (one kind of state: its part is the whole)
    growth = [g for g in growth if ":" not in g.figure
              or (len(result.kinds) > 1 if g.figure.startswith("bytes:") else len(layers) > 1)]
    return ModelDecodeResponse(
        family=family, label=tr(lang)(MODEL_FAMILIES[family]), architecture=result.model.architecture,
        parameters=result.model.parameters, positions=list(result.positions),
        kinds=[ModelKind(key=k, label=kind_label(k, lang)) for k in result.kinds],
        steps=[ModelStepRow(t=s.t, multiplications=s.multiplications, closed_multiplications=s.closed_form,
                            bytes_by_kind=dict(s.state.by_kind),
                            closed_bytes_by_kind=None if s.closed_bytes is None else dict(s.closed_bytes),
                            total_bytes=s.state.total_bytes) for s in steps],
        growth=[ModelGrowthRow(figure=g.figure, label=_figure_label(g.figure, lang), measured=g.kind,
                               measured_label=growth_label(g.kind, lang), expected=g.expected,
                               expected_label=None if g.expected is None else growth_label(g.expected, lang),
                               matches=g.as_expected) for g in growth],
        counts_match=result.counts_match, bytes_match=result.bytes_match,
        sentences=growth_sentences(result, lang))


def _transformers_installed() -> bool:
    """Whether transformers can be imported here, found without importing it (the server never measures)."""
    import importlib.util

    try:
        return importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (a test), or a broken one
        return False


def estimate_model_panel_bytes(largest: int) -> MemoryEstimate:
    """Bytes of a tiny model's measurement, bounded from above: its float32 weights, every position's cache held at
    once as a full key/value cache of 4 layers of width 32 (2·4·32·t·4 bytes), and the prefill's scores of 4 heads
    (4·t²·4 bytes).

    >>> estimate_model_panel_bytes(MODEL_MAX_POSITION).total_bytes < 2 * 1024**2  # the schema's range fits
    True
    """
    caches = sum(2 * 4 * 32 * t * 4 for t in model_positions(largest))
    scores = 4 * largest * largest * 4
    return MemoryEstimate(4 * MODEL_WEIGHTS_BOUND + caches + scores,
                          Phrase(N_("a cache of {count} positions"), {"count": largest}))


@router.get("/api/decode/model", response_model=ModelDecodeResponse, tags=["decode"],
            summary="A tiny random-weight model's cache bytes and multiplications per new token, by kind")
async def decode_model_panel(
    request: Request,
    family: Annotated[Family, Query(description="the model, built from its transformers config with random "
                                                "weights")] = "llama_gqa",
    positions: Annotated[int, Query(ge=MODEL_MIN_POSITION, le=MODEL_MAX_POSITION,
                                    description="the largest position t measured (t = 4, 8, 16, … up to it)")] = 64,
    lang: Annotated[Literal["en", "es"], Query(description="language of the labels and sentences")] = "en",
) -> ModelDecodeResponse:
    """Build the chosen tiny model in a worker and read its own cache after each new token at t = 4, 8, 16, … up to
    ``positions`` (cached per input); the bytes and counts are beside the config's closed forms.

    Raises:
        LabError: sizes over one request's budget, transformers missing (the ``[model]`` extra), or past the time
            limit.
        LabBusy: every worker is measuring.
    """
    key = (family, positions, lang)
    found = _model_results.get(key)
    if found is None:
        require_within_budget(estimate_model_panel_bytes(positions),
                              Phrase(N_("a tiny model at t = {T}"), {"T": positions}), "positions")
        if not _transformers_installed():
            raise LabError(Phrase(N_("the models are built with transformers (the model extra), which is not "
                                     "installed on this server")), parameter="family")
        found = await pool_of(request).run(
            measure_tiny_model, key, limit_s=LIMIT_S, request=request,
            work=Work(f"model:{family}", sum(model_positions(positions)),
                      Phrase(N_("a tiny model at t = {T}"), {"T": positions}), "positions"))
        _model_results.put(key, found)
    return found
