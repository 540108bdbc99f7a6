"""``seqlab bench``: does one big matrix product beat T small waits? The clock's answer (L7, L8).

L7 counts: with every width d, attention does T/d times the recurrence's multiplications, so from
T = d on it does *more* work. L8 says it still finishes first, because its work is a few large
products that spread over processors while the recurrence waits T times in a row. This module sweeps
T (and d) and times six machines on the forward pass, fp32, batch B:

* recurrences — ``nn.RNN`` (the fastest a user would pick), the explicit :class:`ElmanRNN` loop, and
  ``nn.LSTM`` / ``nn.GRU`` for context;
* attention calls on given Q, K, V (projections not included, as in L6) — SDPA
  (``F.scaled_dot_product_attention`` on (B, 1, T, d), its fused CPU kernel) and the explicit
  :class:`Attention` (``scaled_dot``).

At every (threads, d, T) the machines are timed together in interleaved rounds
(:func:`seqlab.measure.rounds.measure_rounds`: each round one block per machine, the order rotating), so a
burst of other work on a shared computer meets all of them alike; each point is that machine's
:class:`~seqlab.measure.timing.Timing` over the rounds (first call apart, warm-up, median and IQR of the
per-round times). The thread settings are 1 and ``auto`` by default: torch's thread count capped by the
cores the machine's load leaves free (:func:`seqlab.measure.rounds.timing_threads_default`); ``all`` is
torch's count as it is. Who finished first at each length is *decided* from the per-round ratios
(:func:`seqlab.measure.rounds.decide`, margin :data:`~seqlab.measure.rounds.MARGIN`), or not judged; the
measured crossover is read from those decisions only (:func:`~seqlab.studies.bench_model.measured_crossover`).

Beside the clock sits a **work–span model**, one per machine and thread setting:

    predicted time = max(work / throughput, span × latency)

* work: multiplications from the closed forms of :mod:`seqlab.cost` — T·g·2d² for a recurrence with g
  gate blocks (RNN 1, GRU 3, LSTM 4), 2T²d for attention — times B;
* span: compute ops in a row, measured by :func:`seqlab.measure.trace.measure_span` on CPU reference
  kernels at d = 8 and T = 4, 8 and extended linearly (a + b·T: b = 3, 4, 7, 9 ops per step for
  nn.RNN, the loop, LSTM, GRU; b = 0 for attention, whose 4 ops do not grow with T). The span is a
  property of the algorithm, not of the kernel, so it is measured once, on CPU, whatever the device;
* throughput: multiplications per second of one large n×n matmul (n³ multiplications);
* latency: seconds per op of a chain of tiny dependent ops (``h = tanh(h @ W)``, (1, 8) by (8, 8)).

The study reports where **time** crosses over (from which T on attention is the slower machine),
measured and predicted, against where **work** crosses over (T = d), per thread setting and d.
What the model leaves out, on purpose: memory traffic. At batch 1 a recurrence step is a
matrix–vector product that reads every weight once per step, and such products run well below the
throughput of a large matmul, so the model tends to under-predict the recurrences; the renderer shows
measured / predicted for every machine rather than hiding the gap. The kernel that did each machine's
multiplications is recorded (counted at the first length beside the closed form, :class:`WorkCheck`).

Sizes are refused before anything is allocated when they would not fit in memory
(:func:`estimate_bench_bytes`). Shape letters: B batch, T positions, d = d_model = d_h = d_k = d_v.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

import torch
import torch.nn.functional as F

from seqlab.errors import Message, Worded
from seqlab.i18n import N_
from seqlab.measure.rounds import MIN_ROUNDS, Rounds, decide, measure_rounds, on_threads, timed_name
from seqlab.measure.timing import MachineLoad, machine_load
from seqlab.studies.bench_config import (  # noqa: F401  (re-exported: what to sweep and its checks)
    DEFAULT_LENGTHS, DEVICES, MAX_BATCH, MAX_LENGTH, MAX_WIDTH, QUICK_LENGTHS, BenchConfig, BenchPlan, Sweep,
    check_bench_config, estimate_bench_bytes,
)
from seqlab.studies.bench_model import (  # noqa: F401  (re-exported: the result types and the model)
    MACHINES, MARGIN, PAIRS, REASONS, WHERE, BenchPoint, _machine, Calibration, Crossover, LengthDecision, Machine,
    Poly, SpanFit, ThreadScaling, calibrate, crossovers, measured_crossover, model_terms, multiplications, pair_rounds, predict,
    predicted_crossover,
)

#: Lengths at which the span is traced (CPU reference kernels, d = 8) before it is extended linearly.
SPAN_LENGTHS = (4, 8)
SPAN_WIDTH = 8
#: A point's rounds are cut so that one machine's blocks take at most this many ``min_run_time`` (never below
#: ``min_samples`` rounds, nor :data:`~seqlab.measure.rounds.MIN_ROUNDS`).
MAX_RUN_TIME_FACTOR = 10




@dataclass(frozen=True)
class WorkCheck:
    """Multiplications counted on the real kernel at one small size, beside the closed form."""

    machine: str
    T: int
    d_model: int
    counted: int
    closed_form: int
    kernels: tuple[str, ...]  # ops that did the multiplications (which kernel ran)
    unaccounted: tuple[str, ...] = ()  # ops that ran with no formula to count them (named, never skipped)


@dataclass(frozen=True)
class BenchResult(Sweep):
    """Every sample of a sweep (what it covered: the :class:`~seqlab.studies.bench_config.Sweep` fields), the
    model's constants and the crossovers it implies."""

    device_name: str
    dtype: str
    torch_version: str
    cpu_count: int
    started: str
    elapsed_s: float
    min_run_time: float
    calibrations: tuple[Calibration, ...]
    spans: tuple[SpanFit, ...]
    checks: tuple[WorkCheck, ...]
    points: tuple[BenchPoint, ...]
    crossovers: tuple[Crossover, ...]
    kernel_flags: dict[str, bool] = field(default_factory=dict)
    load: MachineLoad | None = None  # the machine's load before the sweep began; every point's timing carries it
    thread_scalings: tuple[ThreadScaling, ...] = ()  # fewest against most threads, per machine, d and T

    def point(self, machine: str, threads: int, d_model: int, T: int) -> BenchPoint:
        """The point for these coordinates (KeyError if it was not measured)."""
        for p in self.points:
            if (p.machine, p.threads, p.d_model, p.T) == (machine, threads, d_model, T):
                return p
        raise KeyError((machine, threads, d_model, T))

    def calibration(self, threads: int) -> Calibration:
        """The model's constants at this thread count."""
        return next(c for c in self.calibrations if c.threads == threads)


# --- Building and timing the machines ------------------------------------------------------------------

def _uniform_(module: torch.nn.Module, generator: torch.Generator) -> torch.nn.Module:
    """Fill every parameter from U(-1/√d, 1/√d) with ``generator`` (PyTorch's RNN init, global RNG untouched)."""
    with torch.no_grad():
        for parameter in module.parameters():
            bound = 1.0 / math.sqrt(module.hidden_size)
            parameter.copy_(torch.empty(parameter.shape).uniform_(-bound, bound, generator=generator))
    return module


def _build(d: int, device: str, generator: torch.Generator) -> dict[str, torch.nn.Module]:
    """The modules of every machine at width d, on ``device``, in eval mode."""
    from seqlab.layers.attention import Attention
    from seqlab.layers.recurrent import ElmanRNN

    loop = ElmanRNN(d, d, generator=generator)
    modules = {
        "rnn": loop.to_torch(batch_first=True),
        "loop": loop,
        "lstm": _uniform_(torch.nn.LSTM(d, d, batch_first=True, device="meta").to_empty(device="cpu"), generator),
        "gru": _uniform_(torch.nn.GRU(d, d, batch_first=True, device="meta").to_empty(device="cpu"), generator),
        "attention": Attention("scaled_dot"),
    }
    return {key: module.to(device).eval() for key, module in modules.items()}


def _calls(modules: dict[str, torch.nn.Module], T: int, d: int, batch: int, device: str,
           generator: torch.Generator) -> dict[str, Callable[[], object]]:
    """One no-argument forward call per machine on fresh random inputs of length T."""
    x = torch.randn(batch, T, d, generator=generator).to(device)  # (B, T, d)
    q, k, v = torch.randn(3, batch, T, d, generator=generator).to(device).unbind(0)  # 3 × (B, T, d)
    q4, k4, v4 = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)  # (B, 1, T, d): SDPA's fused kernel
    calls = {key: (lambda m=module: m(x)) for key, module in modules.items() if key != "attention"}
    calls["sdpa"] = lambda: F.scaled_dot_product_attention(q4, k4, v4)  # (B, 1, T, d)
    calls["attention"] = lambda: modules["attention"](q, k, v)  # (B, T, d), (B, T, T)
    return calls


def fit_spans(machines: tuple[str, ...]) -> tuple[SpanFit, ...]:
    """Trace each machine at T = 4 and 8 (CPU reference kernels, d = 8) and extend its span linearly."""
    from seqlab.measure.trace import measure_span

    generator = torch.Generator().manual_seed(0)
    modules = _build(SPAN_WIDTH, "cpu", generator)
    fits = []
    for key in machines:
        ops = []
        for T in SPAN_LENGTHS:
            calls = _calls(modules, T, SPAN_WIDTH, 1, "cpu", generator)
            ops.append(measure_span(calls[key]).ops)
        (t0, t1), (s0, s1) = SPAN_LENGTHS, ops
        per_step = (s1 - s0) // (t1 - t0)
        fits.append(SpanFit(key, SPAN_LENGTHS, tuple(ops), intercept=s0 - per_step * t0, per_step=per_step))
    return tuple(fits)


def _check_work(modules: dict[str, torch.nn.Module], plan: BenchPlan, d: int,
                generator: torch.Generator) -> tuple[WorkCheck, ...]:
    """Count the multiplications of every machine at the first length, on the real kernels."""
    from seqlab.measure.work import count_multiplications

    T = plan.lengths[0]
    calls = _calls(modules, T, d, plan.batch, plan.device, generator)
    checks = []
    with torch.no_grad():
        for key in plan.machines:
            counted = count_multiplications(calls[key])
            checks.append(WorkCheck(key, T, d, counted.multiplications, multiplications(key, T, d, plan.batch),
                                    tuple(sorted(counted.by_op)), tuple(sorted(counted.unaccounted))))
    return tuple(checks)


def measure_calibration(device: str, threads: int, matmul_size: int, links: int, min_run_time: float,
                        rounds: int = 7, load: MachineLoad | None = None) -> Calibration:
    """Time an n×n matmul and a chain of ``links`` × (tiny matmul, tanh) at ``threads``; fit the constants.

    Both are timed together in ``rounds`` interleaved rounds (:func:`~seqlab.measure.rounds.measure_rounds`),
    each block about ``min_run_time / rounds`` seconds; their Timings are over the rounds (``noisy`` when
    their IQR passes a tenth of the median).
    """
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, matmul_size, matmul_size, generator=generator).to(device).unbind(0)  # (n, n) each
    w, h0 = torch.eye(SPAN_WIDTH, device=device), torch.ones(1, SPAN_WIDTH, device=device)  # (8, 8), (1, 8)

    def chain() -> torch.Tensor:
        h = h0
        for _ in range(links):
            h = torch.tanh(h @ w)  # (1, 8): two ops, each waiting for the one before
        return h

    matmul_label, chain_label = f"matmul {matmul_size}", f"chain of {2 * links} ops"
    timed = measure_rounds({matmul_label: lambda: a @ b, chain_label: chain}, rounds=rounds,
                           block_seconds=min_run_time / rounds, threads=threads, device=device, load=load)
    return calibrate(device, threads, matmul_size, timed.timing(matmul_label), 2 * links, timed.timing(chain_label))


# --- The sweep ----------------------------------------------------------------------------------------

def _time_together(calls: dict[str, Callable[[], object]], threads: int, device: str, estimate_s: float,
                   config: BenchConfig, load: MachineLoad | None) -> Rounds:
    """Time the machines of one point together in interleaved rounds (:func:`measure_rounds`).

    Every machine's blocks add up to about ``min_run_time`` (a block is ``min_run_time / rounds``, at least one
    call). When the slowest machine's estimated call (from the previous length) would make ``rounds`` blocks
    last more than ``MAX_RUN_TIME_FACTOR × min_run_time``, fewer rounds are timed, never fewer than
    ``min_samples`` nor :data:`~seqlab.measure.rounds.MIN_ROUNDS` (enough to decide anything).
    """
    fewest = min(config.rounds, max(MIN_ROUNDS, config.min_samples))
    cap = MAX_RUN_TIME_FACTOR * config.min_run_time
    rounds = config.rounds
    if estimate_s > 0 and rounds * estimate_s > cap:
        rounds = max(fewest, int(cap / estimate_s))
    return measure_rounds(calls, rounds=rounds, block_seconds=config.min_run_time / rounds, threads=threads,
                          device=device, load=load)


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_bench(config: BenchConfig = BenchConfig(),
              progress: Callable[[int, int, str], None] | None = None,
              load: MachineLoad | None = None) -> BenchResult:
    """Time every machine at every (threads, d, T), fit the model and find the crossovers (L7, L8).

    >>> r = run_bench(BenchConfig(lengths=(4, 8), d_models=(8,), threads=(1,), machines=("rnn", "sdpa"),
    ...                           min_run_time=0.001, min_samples=1, matmul_size=32))
    >>> [(p.machine, p.T, p.multiplications) for p in r.points]  # 4*2*8*8, 4*4*2*8, ...
    [('rnn', 4, 512), ('sdpa', 4, 256), ('rnn', 8, 1024), ('sdpa', 8, 1024)]
    >>> r.crossovers[0].work_T  # T = d
    Fraction(8, 1)

    Args:
        config: what to sweep; validated first by :func:`check_bench_config`, nothing allocated before.
        progress: called as ``progress(done, total, what)`` after each step (span traces, calibrations,
            points), for a progress bar.
        load: the machine's load to record on every timing; None reads it now, before the sweep (a caller
            that ran other work first, such as the report, passes the reading it took before that work).

    Returns:
        A frozen :class:`BenchResult` with every sample; the thread count is restored afterwards.

    Raises:
        SeqlabError: see :func:`check_bench_config`.
    """
    load = load or machine_load()  # before the sweep: its own threads must not count as the machine being busy
    plan = check_bench_config(config, load)
    started, clock = datetime.now(timezone.utc).isoformat(timespec="seconds"), time.perf_counter()
    total = len(plan.machines) + len(plan.threads) * (1 + len(plan.d_models) * len(plan.lengths) * len(plan.machines))
    done = 0

    def step(template: str, **fields) -> None:  # what is being measured, worded in any language (errors.Worded)
        nonlocal done
        what = Worded(template.format(**fields), Message(template, **fields))
        done += 1
        if progress is not None:
            progress(done, total, what)

    spans = fit_spans(plan.machines)
    for key in plan.machines:
        step(N_("span · {machine}"), machine=MACHINES[key].label)
    calibrations = []
    for threads in plan.threads:
        calibrations.append(measure_calibration(plan.device, threads, plan.matmul_size, config.chain_links,
                                                config.min_run_time, config.rounds, load))
        step(N_("calibration · threads = {threads}"), threads=threads)
    span_of, cal_of = {s.machine: s for s in spans}, {c.threads: c for c in calibrations}
    generator = torch.Generator().manual_seed(config.seed)
    points, checks, last, scalings = [], [], {}, []
    few, many = plan.threads[0], plan.threads[-1]
    for d in plan.d_models:
        modules = _build(d, plan.device, generator)
        checks += _check_work(modules, plan, d, generator)
        for T in plan.lengths:
            calls = _calls(modules, T, d, plan.batch, plan.device, generator)
            # every machine on every thread count in one set of interleaved rounds: the crossovers compare
            # machines, the thread scaling compares thread counts, each within the rounds they shared
            mine = {timed_name(key, n): on_threads(calls[key], n) for n in plan.threads for key in plan.machines}
            estimates = []
            for n in plan.threads:
                for key in plan.machines:
                    previous = last.get((key, n, d))
                    power = 1 if MACHINES[key].family == "recurrence" else 2
                    estimates.append(previous[1] * (T / previous[0]) ** power if previous else 0.0)
            timed = _time_together(mine, few, plan.device, max(estimates), config, load)
            for n in plan.threads:
                for key in plan.machines:
                    work, span = multiplications(key, T, d, plan.batch), span_of[key].ops(T)
                    timing = replace(timed.timing(timed_name(key, n)), label=f"{MACHINES[key].label}, T = {T}, d = {d}",
                                     threads=n)
                    last[(key, n, d)] = (T, timing.median_s)
                    predicted, bound = predict(work, span, cal_of[n])
                    points.append(BenchPoint(key, n, d, T, work, span, timing, predicted, bound))
                    step(N_("{machine} · T = {T} · d = {d} · threads = {threads}"), machine=MACHINES[key].label, T=T, d=d,
                         threads=n)
            if few != many:
                scalings += [ThreadScaling(key, d, T, few, many, decide(timed, timed_name(key, few),
                                                                       timed_name(key, many), MARGIN))
                             for key in plan.machines]
            del calls
    order = {key: i for i, key in enumerate(MACHINES)}
    points.sort(key=lambda p: (p.threads, p.d_model, p.T, order[p.machine]))
    flags = {"mkldnn": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,
             "cuda_tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
             "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32)}
    return BenchResult(
        lengths=plan.lengths, d_models=plan.d_models, threads=plan.threads, machines=plan.machines,
        batch=plan.batch, device=plan.device, device_name=_device_name(plan.device), dtype="float32",
        torch_version=torch.__version__, cpu_count=os.cpu_count() or 1, started=started,
        elapsed_s=time.perf_counter() - clock, min_run_time=float(config.min_run_time),
        calibrations=tuple(calibrations), spans=spans, checks=tuple(checks), points=tuple(points),
        crossovers=crossovers(tuple(points), tuple(calibrations), spans, plan.batch), kernel_flags=flags, load=load,
        thread_scalings=tuple(scalings))
