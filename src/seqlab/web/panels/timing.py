"""Time panel: the clock on this machine, and the GPU run recorded in the repository (L7, L8).

A short live sweep runs through :func:`seqlab.studies.bench.run_bench` — ``nn.RNN`` against SDPA, timed
together in interleaved rounds at the ``auto`` thread count (torch's threads capped by the cores the load
leaves free, :func:`seqlab.measure.rounds.timing_threads_default`), lengths doubling from 64, a tight timing
cap. At every length the panel shows who finished first by the margin
(:data:`seqlab.measure.rounds.MARGIN`, :func:`seqlab.measure.rounds.decide`) or "not judged", and states
the time crossover only where those decisions bracket it (else it is "not judged", with the reason); the
work–span model's crossing is shown as the model's, never as a measurement. Its answer goes to whoever ran it
(``origin: "this_request"``); the server keeps the latest sweep and shows it to later visitors as what it is,
the latest run on this server by anyone, with when it started (``origin: "last_on_server"``), never as theirs.
Beside it: every ``benchmarks/results/gpu-*.json`` found next to the package in a source checkout
(``benchmarks/gpu_bench.py`` writes them), labelled as recorded; an installed package has none, and the panel
says the GPU was not recorded.

Every time carries its spread (median ± IQR, or the number of timed blocks when there are too few for one),
and a sweep begun on a busy machine carries the busy-machine caveat: the condition is
:func:`seqlab.measure.timing.machine_load` (``os.getloadavg()[0]`` against ``os.cpu_count()``), the words are
:func:`seqlab.render.machine_load.busy_caveat`'s, the one busy-machine sentence.

Units: seconds per forward call (median and interquartile range); work ratios from the closed forms.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from seqlab import cost
from seqlab.i18n import format_fraction, format_integer, format_number, format_seconds
from seqlab.web.budget import Work, require_within_budget
from seqlab.web.messages import N_, Phrase, tr
from seqlab.web.validation import JsonInt
from seqlab.web.workers import pool_of

DOMAIN = "web"
router = APIRouter()

#: The repository root when running from a checkout (src/seqlab/web/panels/timing.py → four levels up).
REPOSITORY = Path(__file__).resolve().parents[4]
WIDTHS = (64, 128, 256, 512)
MAX_LENGTH = 2048
FIRST_LENGTH = 64
MIN_RUN_TIME = 0.02
#: Seconds a sweep may run in its worker before it is stopped (the page states it).
BENCH_LIMIT_S = 60

Lang = Literal["en", "es"]
_last_run: dict[str, object] = {}
_last_run_lock = threading.Lock()


class BenchRequest(BaseModel):
    """The live sweep: one width, lengths doubling from 64 to ``max_T`` (JSON numbers, not text)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d_model: Literal[64, 128, 256, 512] = Field(256, description="d = d_model = d_h = d_k = d_v")
    max_T: JsonInt = Field(1024, ge=FIRST_LENGTH, le=MAX_LENGTH, description="longest length (64 … 2048)")


class Load(BaseModel):
    """The machine's load when a sweep began (:func:`seqlab.measure.timing.machine_load`)."""

    load_1min: float | None = Field(description="os.getloadavg()[0]; None where the OS keeps no load average")
    cpus: int = Field(description="os.cpu_count()")
    busy: bool = Field(description="load_1min >= threshold_per_cpu × cpus: times may read long and spread wide")
    threshold_per_cpu: float


class LocalRow(BaseModel):
    """One length of the live sweep."""

    T: int
    rnn_s: float
    rnn_iqr_s: float
    sdpa_s: float
    sdpa_iqr_s: float
    rnn_text: str = Field(description="median ± IQR (or the median and its few timed blocks)")
    sdpa_text: str = Field(description="median ± IQR (or the median and its few timed blocks)")
    blocks: int = Field(description="fewest timed blocks behind the two medians")
    time_ratio: float = Field(description="nn.RNN time / SDPA time, the medians over the interleaved rounds")
    time_ratio_text: str
    work_ratio_text: str = Field(description="attention / recurrence multiplications = T/d")
    noisy: bool = Field(description="either time is noisy (its spread over a tenth of its median)")
    rnn_noisy: bool = Field(description="nn.RNN's time is noisy: its † goes on that value")
    sdpa_noisy: bool = Field(description="SDPA's time is noisy: its † goes on that value")
    first: Literal["sdpa", "rnn", "tie", "not_judged"] = Field(
        description="who finished first at this length by the margin, decided from the per-round ratios "
                    "(seqlab.measure.rounds.decide): sdpa, rnn, tie (within the margin) or not_judged (the "
                    "ratios' spread straddles the margin)")
    first_text: str = Field(description="``first`` in the request's language")


class LocalBench(BaseModel):
    """A live sweep on this machine: the one this request ran, or the server's latest, labelled as such."""

    origin: Literal["this_request", "last_on_server"] = Field(
        description="this_request: the sweep this request ran; last_on_server: the latest sweep anyone ran here")
    load: Load | None = Field(description="the machine's load when the sweep began")
    caveat: str | None = Field(description="the busy-machine caveat in the request's language; None when quiet")
    device_name: str
    torch_version: str
    threads: int = Field(description="intra-op CPU threads every time of this sweep was taken on")
    d_model: int
    started: str
    elapsed_s: float
    rounds: int = Field(description="interleaved rounds behind every time and decision (fewest over the lengths)")
    margin: float = Field(description="the factor by which one machine must finish first to be counted first")
    rows: list[LocalRow]
    work_crossover: int = Field(description="T at which attention starts doing more multiplications (= d)")
    time_where: Literal["within", "below", "beyond", "not_judged"] = Field(
        description="the measured time crossover, read from the per-length decisions only: within (SDPA first "
                    "at a shorter length, nn.RNN first at a longer one and at the longest), below (nn.RNN first "
                    "at the shortest and the longest length, SDPA nowhere), beyond (SDPA first at the longest "
                    "length), not_judged (any other case; see reason)")
    reason: Literal["none_first", "out_of_order", "longest_undecided", "shortest_undecided"] | None = Field(
        description="why the crossover is not judged; None unless time_where is not_judged")
    time_bracket: tuple[int, int] | None = Field(
        description="within only: the last length where SDPA finished first and the first where nn.RNN did")
    time_T_text: str | None = Field(
        description="within only: near where the median ratio crosses 1 inside the bracket")
    verdict: str = Field(description="the measured crossover in words, in the request's language: decided or "
                                     "not judged and why")
    predicted_T_text: str | None = Field(
        description="the work–span model's time crossover: a model fitted on this computer, not a measurement")
    predicted_noisy: bool = Field(description="the model's calibration timings were noisy: its constants are rough")


class GpuPoint(BaseModel):
    """One length of a recorded GPU run."""

    d_model: int
    T: int
    work_ratio: float = Field(description="attention / recurrence multiplications")
    rnn_s: float
    sdpa_s: float
    rnn_iqr_s: float | None = Field(description="None when the record has no samples of this point")
    sdpa_iqr_s: float | None = Field(description="None when the record has no samples of this point")
    time_ratio: float = Field(description="nn.RNN (cuDNN) time / SDPA time")
    work_ratio_text: str = Field(description="attention / recurrence multiplications = T/d, as the local table")
    rnn_text: str = Field(description="median ± IQR as recorded, or the median with what its spread lacks")
    sdpa_text: str = Field(description="median ± IQR as recorded, or the median with what its spread lacks")
    time_ratio_text: str


class GpuRecord(BaseModel):
    """A GPU run as recorded in ``benchmarks/results``."""

    file: str
    gpu: str
    torch: str
    date: str
    points: list[GpuPoint]
    predicted_T_text: dict[str, str] = Field(
        description="d_model → the model's time crossover, nn.RNN vs SDPA, only where it lies within the lengths "
                    "the run measured (a model is not read past its data)")
    longest_T: dict[str, int] = Field(description="d_model → the longest length the run measured")
    predicted_past: list[str] = Field(default_factory=list,
                                      description="d_models whose model crossover lies past the longest length "
                                                  "measured: not stated, only said to lie past the data")
    device: str = Field(description="where it was recorded: the device, as the record names it")
    cpus: int | None = Field(None, description="CPU count of the recording machine, if recorded")
    cuda: str | None = Field(None, description="CUDA version of the recording machine, if recorded")
    started: str = Field(description="when the run began (UTC, ISO 8601), else the record's date")
    load: Load | None = Field(None, description="the recording machine's load, if the record has it")
    caveat: str | None = Field(None, description="the busy-machine caveat of the recorded run; None when quiet or "
                                                 "not recorded")


class TimeResponse(BaseModel):
    """What the time panel draws."""

    local: LocalBench | None = Field(description="the sweep this request ran (POST), or the latest anyone ran on this "
                                                 "server (GET), labelled by ``origin``; None before the first")
    gpu: list[GpuRecord] = Field(description="recorded GPU runs; empty: not recorded")


def work_ratio(T: int, d: int) -> Fraction:
    """Attention's multiplications over the recurrence's at length T, every width d: T/d, exact.

    >>> work_ratio(256, 512), work_ratio(2048, 512)
    (Fraction(1, 2), Fraction(4, 1))
    """
    return Fraction(cost.attention_multiplications(T, d, d), cost.recurrence_multiplications(T, d, d))


def seconds(value: float, lang: str) -> str:
    """:func:`~seqlab.i18n.format_seconds` with a no-break space: the unit never wraps away from its number.

    >>> seconds(0.0273, "en")
    '27.3\xa0ms'
    """
    return format_seconds(value, lang).replace(" ", "\u00a0")


def time_text(median_s: float, iqr_s: float | None, blocks: int | None, lang: str) -> str:
    """A time as the panel shows it: median ± IQR, or the median and why no spread is given.

    >>> time_text(0.0273, 0.0011, 5, "en"), time_text(0.0273, 0.0, 1, "es")
    ('27.3\xa0ms ± 1.10\xa0ms', '27,3\xa0ms (un bloque cronometrado, sin dispersión)')
    """
    from seqlab.measure.timing import MIN_BLOCKS  # the engine's fewest blocks for an IQR (its noise rule)

    _ = tr(lang)
    if blocks is None or iqr_s is None:
        return _("{median} (spread not recorded)").format(median=seconds(median_s, lang))
    if blocks == 1:
        return _("{median} (one timed block, no spread)").format(median=seconds(median_s, lang))
    if blocks < MIN_BLOCKS:
        return _("{median} ({blocks} timed blocks, no spread)").format(median=seconds(median_s, lang), blocks=blocks)
    return f"{seconds(median_s, lang)} ± {seconds(iqr_s, lang)}"


def load_caveat(load, lang: str) -> str | None:
    """The busy-machine caveat of a sweep (:func:`seqlab.render.machine_load.busy_caveat`, the one sentence every
    front end shows); None on a quiet machine or an unknown load.

    >>> from seqlab.measure.timing import MachineLoad
    >>> load_caveat(MachineLoad(3.0, 2, True), "en")[:26], load_caveat(MachineLoad(0.1, 2, False), "en")
    ('The machine was busy: its ', None)
    """
    from seqlab.render.machine_load import busy_caveat

    return busy_caveat(load, lang if lang in ("en", "es") else "en") or None


def gpu_records(lang: str, folder: Path | None = None) -> list[GpuRecord]:
    """Every ``gpu-*.json`` in the repository's ``benchmarks/results`` (none outside a checkout), newest first.

    >>> records = gpu_records("en")
    >>> all(record.points for record in records)
    True
    """
    if folder is None:
        if not (REPOSITORY / "pyproject.toml").is_file():  # an installed package: no checkout around it
            return []
        folder = REPOSITORY / "benchmarks" / "results"
    records = []
    for path in sorted(folder.glob("gpu-*.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            timings = {(p["machine"], p["d_model"], p["T"]): p["timing"]
                       for p in data.get("result", {}).get("points", ())}
            points = [_gpu_point(p, timings, lang) for p in data["summary"]["points"]]
            longest = {str(d): max(p.T for p in points if p.d_model == d) for d in {p.d_model for p in points}}
            predicted, past = {}, []
            for c in data["summary"]["crossovers"]:
                lengths = [p.T for p in points if p.d_model == c["d_model"]]
                text = measured_range_text(c.get("predicted_T"), lengths, lang) if c["recurrence"] == "rnn" else None
                if text is not None:
                    predicted[str(c["d_model"])] = text
                elif c["recurrence"] == "rnn" and lengths and (c.get("predicted_T") or 0) > max(lengths):
                    past.append(str(c["d_model"]))
            result = data.get("result", {})
            load = data.get("result", {}).get("load")
            load = None if load is None else Load(**load)
            records.append(GpuRecord(file=path.name, gpu=data["gpu"], torch=data["torch"], date=data["date"],
                                     points=points, predicted_T_text=predicted, longest_T=longest, predicted_past=past,
                                     load=load,
                                     device=result.get("device_name", data["gpu"]), cpus=result.get("cpu_count"),
                                     cuda=data.get("cuda"),
                                     started=str(result.get("started", data["date"])).replace("T", " ").replace(
                                         "+00:00", ""),
                                     caveat=load_caveat(load, lang)))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a file of another shape is not a GPU record this panel can read
    return records


def measured_range_text(predicted_T: float | None, lengths, lang: str) -> str | None:
    """A model's crossover as text only where it lies within the lengths measured (a fitted model is not read past
    its data: 952,503 from lengths up to 16,384 is an extrapolation, not a finding); None otherwise.

    >>> measured_range_text(300.4, [64, 128, 512], "en"), measured_range_text(952502.6, [16, 16384], "en")
    ('300', None)
    """
    if predicted_T is None or not lengths or not min(lengths) <= predicted_T <= max(lengths):
        return None
    return format_number(predicted_T, lang)


def _gpu_point(p: dict, timings: dict, lang: str) -> GpuPoint:
    """One recorded point, each time with the spread its record holds (median ± IQR when 3 blocks or more)."""
    spread = {}
    for key in ("rnn", "sdpa"):
        timing = timings.get((key, p["d_model"], p["T"]))
        iqr = None if timing is None else timing["iqr_s"]
        blocks = None if timing is None else len(timing["samples"])
        spread[key] = (iqr, time_text(p[f"{key}_s"], iqr, blocks, lang))
    return GpuPoint(d_model=p["d_model"], T=p["T"], work_ratio=p["work_ratio_attention_over_recurrence"],
                    rnn_s=p["rnn_s"], sdpa_s=p["sdpa_s"], rnn_iqr_s=spread["rnn"][0], sdpa_iqr_s=spread["sdpa"][0],
                    time_ratio=p["time_ratio_rnn_over_sdpa"],
                    work_ratio_text=format_fraction(work_ratio(p["T"], p["d_model"]), lang),
                    rnn_text=spread["rnn"][1], sdpa_text=spread["sdpa"][1],
                    time_ratio_text=format_number(p["time_ratio_rnn_over_sdpa"], lang))


def _first_text(first: str, lang: str) -> str:
    _ = tr(lang)
    return {"sdpa": "SDPA", "rnn": "nn.RNN", "tie": _("tie"), "not_judged": _("not judged")}[first]


def verdict_text(crossing, lang: str) -> str:
    """The measured crossover of nn.RNN and SDPA in words: stated only where the decisions bracket it.

    >>> from seqlab.measure.rounds import Decision
    >>> from seqlab.studies.bench_model import LengthDecision
    >>> from seqlab.studies.bench import Crossover
    >>> at = lambda T, o, r: LengthDecision(T, Decision("sdpa", "rnn", o, r, r, r, 1.2, 7))
    >>> c = Crossover(1, 64, "rnn", "sdpa", 64, None, "not_judged", None, 100.0,
    ...               (at(64, "a_first", 0.5), at(128, "not_judged", 1.0)), 1.2, "longest_undecided")
    >>> verdict_text(c, "en")
    'In time, not judged: at the longest length, T = 128, neither finished first by the margin.'
    """
    _ = tr(lang)
    values = {"first": format_integer(crossing.decisions[0].T, lang),
              "last": format_integer(crossing.decisions[-1].T, lang)}
    if crossing.time_where == "within":
        low, high = crossing.time_bracket
        return _("In time, SDPA finished first up to T = {low} and nn.RNN from T = {high} on: SDPA becomes the "
                 "slower one between them, near T = {T} on the medians.").format(
            low=format_integer(low, lang), high=format_integer(high, lang), T=format_number(crossing.time_T, lang))
    if crossing.time_where == "beyond":
        return _("In time, SDPA still finished first at the longest length measured, T = {last}.").format(**values)
    if crossing.time_where == "below":
        return _("In time, nn.RNN already finished first at the shortest length measured, T = {first}, and at the "
                 "longest, T = {last}.").format(**values)
    attention = [x.T for x in crossing.decisions if x.first == "attention"]
    recurrence = [x.T for x in crossing.decisions if x.first == "recurrence"]
    if crossing.reason == "out_of_order":
        later = max(attention)
        return _("In time, not judged: nn.RNN finished first at T = {earlier}, yet SDPA at the longer T = "
                 "{later}.").format(earlier=format_integer(min(T for T in recurrence if T < later), lang),
                                     later=format_integer(later, lang))
    if crossing.reason == "longest_undecided":
        return _("In time, not judged: at the longest length, T = {last}, neither finished first by the "
                 "margin.").format(**values)
    if crossing.reason == "shortest_undecided":
        return _("In time, not judged: nn.RNN finished first from T = {T} on, but SDPA at no shorter length, so "
                 "the crossing is not bracketed.").format(T=format_integer(min(recurrence), lang))
    return _("In time, not judged: at no length did either finish first by the margin.")


def _local(result, lang: str, origin: str) -> LocalBench:
    """Shape a :class:`~seqlab.studies.bench.BenchResult` for the page."""
    from seqlab.measure.timing import busiest

    threads, d = result.threads[-1], result.d_models[0]
    crossing = next(c for c in result.crossovers if c.recurrence == "rnn" and c.threads == threads)
    decided = {x.T: x for x in crossing.decisions}
    rows = []
    for T in result.lengths:
        rnn, sdpa = result.point("rnn", threads, d, T).timing, result.point("sdpa", threads, d, T).timing
        first = {"attention": "sdpa", "recurrence": "rnn"}.get(decided[T].first, decided[T].first)
        rows.append(LocalRow(T=T, rnn_s=rnn.median_s, rnn_iqr_s=rnn.iqr_s, sdpa_s=sdpa.median_s,
                             sdpa_iqr_s=sdpa.iqr_s, rnn_text=time_text(rnn.median_s, rnn.iqr_s, len(rnn.samples), lang),
                             sdpa_text=time_text(sdpa.median_s, sdpa.iqr_s, len(sdpa.samples), lang),
                             blocks=min(len(rnn.samples), len(sdpa.samples)),
                             time_ratio=rnn.median_s / sdpa.median_s,
                             time_ratio_text=format_number(rnn.median_s / sdpa.median_s, lang),
                             work_ratio_text=format_fraction(work_ratio(T, d), lang), noisy=rnn.noisy or sdpa.noisy,
                             rnn_noisy=bool(rnn.noisy), sdpa_noisy=bool(sdpa.noisy),
                             first=first, first_text=_first_text(first, lang)))
    load = busiest([result.load, *(p.timing for p in result.points)])
    return LocalBench(
        origin=origin, load=None if load is None else Load(**dataclasses.asdict(load)),
        caveat=load_caveat(load, lang), device_name=result.device_name, torch_version=result.torch_version,
        threads=threads, d_model=d, started=result.started, elapsed_s=result.elapsed_s,
        rounds=min(x.decision.rounds for x in crossing.decisions), margin=crossing.margin, rows=rows,
        work_crossover=int(crossing.work_T), time_where=crossing.time_where, reason=crossing.reason,
        time_bracket=crossing.time_bracket,
        time_T_text=None if crossing.time_T is None else format_number(crossing.time_T, lang),
        verdict=verdict_text(crossing, lang),
        predicted_T_text=measured_range_text(crossing.predicted_T, result.lengths, lang),
        predicted_noisy=crossing.predicted_noisy)


@router.get("/api/time", response_model=TimeResponse, tags=["time"],
            summary="The last live sweep on this machine and the recorded GPU runs (L8)")
def time_panel(lang: Annotated[Lang, Query(description="language of the formatted numbers")] = "en") -> TimeResponse:
    """The last live sweep (None before the first) and every recorded GPU run."""
    with _last_run_lock:
        result = _last_run.get("result")
    return TimeResponse(local=None if result is None else _local(result, lang, "last_on_server"),
                        gpu=gpu_records(lang))


def bench_config(d: int, max_T: int):
    """The live sweep's :class:`~seqlab.studies.bench.BenchConfig`: nn.RNN and SDPA, auto threads, T = 64 … max_T.

    >>> bench_config(64, 256).lengths
    (64, 128, 256)
    """
    from seqlab.studies.bench import BenchConfig

    lengths = tuple(T for T in (FIRST_LENGTH * 2**i for i in range(6)) if T <= max_T)
    return BenchConfig(lengths=lengths, d_models=(d,), threads=("auto",), machines=("rnn", "sdpa"),
                       min_run_time=MIN_RUN_TIME, min_samples=3, matmul_size=256)


def run_sweep(d: int, max_T: int, load):
    """The live sweep itself (in a worker process), with the load read in the server before it was asked."""
    from seqlab.studies.bench import run_bench

    return run_bench(bench_config(d, max_T), load=load)


def bench_work(d: int, max_T: int) -> Work:
    """The live sweep for its time estimate: at every length one call of each machine per round, nn.RNN's T·d²
    and SDPA's T²·d multiplications, so Σ_T (T·d² + T²·d) units.

    >>> bench_work(64, 128).units  # T = 64 and 128
    2097152
    """
    lengths = bench_config(d, max_T).lengths
    units = sum(T * d * d + T * T * d for T in lengths)
    return Work("bench", units, Phrase(N_("T = {T} at d_model = {d}"), {"T": lengths[-1], "d": d}), "max_T")


@router.post("/api/time/run", response_model=TimeResponse, tags=["time"],
             summary="Run a short sweep on this machine: nn.RNN against SDPA, lengths doubling from 64, timed "
                     "together in interleaved rounds")
async def run_time(body: BenchRequest, request: Request,
                   lang: Annotated[Lang, Query(description="language of the formatted numbers")] = "en"
                   ) -> TimeResponse:
    """Time nn.RNN and SDPA together in interleaved rounds at the ``auto`` thread count, T = 64, 128, … up to
    ``max_T``, in a worker process that is stopped after :data:`BENCH_LIMIT_S` seconds or as soon as the client
    hangs up; decide who finished first at each length, and the crossover where the decisions bracket it."""
    from seqlab.measure.timing import machine_load
    from seqlab.studies.bench import estimate_bench_bytes

    config = bench_config(body.d_model, body.max_T)
    T, d = config.lengths[-1], body.d_model
    require_within_budget(estimate_bench_bytes(T, d, 1, ("rnn", "sdpa")),
                          Phrase(N_("T = {T} at d_model = {d}"), {"T": T, "d": d}), "max_T")
    load = machine_load()  # in the server, before the worker starts: the sweep's own work must not count
    result = await pool_of(request).run(run_sweep, (d, body.max_T, load), limit_s=BENCH_LIMIT_S, request=request,
                                        work=bench_work(d, body.max_T))
    with _last_run_lock:
        _last_run["result"] = result
    return TimeResponse(local=_local(result, lang, "this_request"), gpu=gpu_records(lang))
