"""What ``seqlab bench`` sweeps, checked before anything is allocated (L7, L8).

:class:`BenchConfig` is what the user asks for (lengths, widths, batch, thread settings, machines,
device, timing budget); :func:`check_bench_config` validates every value, resolves ``"all"`` and ``"auto"`` threads,
refuses a sweep whose largest point would not fit in memory (:func:`estimate_bench_bytes`) and returns
the :class:`BenchPlan` that :func:`seqlab.studies.bench.run_bench` follows. The names are re-exported
from :mod:`seqlab.studies.bench`. Shape letters: B batch, T positions, d = d_model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.rounds import DEFAULT_ROUNDS, timing_threads_default
from seqlab.measure.timing import MachineLoad
from seqlab.memory import FLOAT32_BYTES, MemoryEstimate, available_memory_bytes, require_fits
from seqlab.studies.bench_model import MACHINES, _machine

#: T = 16, 32, …, 4096: nine lengths, doubling, across the work crossover at d = 512.
DEFAULT_LENGTHS = tuple(16 * 2**i for i in range(9))
#: The ``--quick`` lengths: one below the work crossover at d = 512, one near it, one well past it.
QUICK_LENGTHS = (64, 512, 2048)
MAX_LENGTH = 1_048_576
MAX_WIDTH = 65_536
MAX_BATCH = 65_536
DEVICES = ("cpu", "cuda")
#: Thread settings given by name: ``all`` is torch's thread count at start; ``auto`` the same capped by the
#: cores the machine's load leaves free (:func:`seqlab.measure.rounds.timing_threads_default`).
THREAD_WORDS = ("all", "auto")
MAX_ROUNDS = 1000


@dataclass(frozen=True)
class BenchConfig:
    """What to sweep. Thread settings are ints, ``"all"`` (``torch.get_num_threads()`` at start) or ``"auto"``
    (that count capped by the free cores, :func:`~seqlab.measure.rounds.timing_threads_default`).

    The machines of a point are timed together in ``rounds`` interleaved rounds, one block each per round;
    ``min_run_time`` is the least timed seconds per machine and point (a block lasts ``min_run_time / rounds``,
    at least one call). When a machine's call time, extrapolated from the previous length (linearly for a
    recurrence, quadratically for attention), would make the rounds last more than 10 × ``min_run_time``,
    fewer rounds are timed, never fewer than ``min_samples`` (nor 3) — see ``_time_together``.
    ``matmul_size`` None: 1024 on cpu, 4096 on cuda.
    """

    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    d_models: tuple[int, ...] = (512,)
    batch: int = 1
    threads: tuple[int | str, ...] = (1, "auto")
    device: str = "cpu"
    machines: tuple[str, ...] = tuple(MACHINES)
    min_run_time: float = 0.2
    min_samples: int = 5
    matmul_size: int | None = None
    chain_links: int = 64
    seed: int = 0
    rounds: int = DEFAULT_ROUNDS

    @classmethod
    def quick(cls, **changes: object) -> BenchConfig:
        """A few points at d = 512 with short timing runs (under a minute on two cores)."""
        values = dict(lengths=QUICK_LENGTHS, min_run_time=0.05, min_samples=3, matmul_size=512)
        return cls(**{**values, **changes})


@dataclass(frozen=True)
class Sweep:
    """What a sweep covers, as validated: the fields a :class:`BenchPlan` and a result of it share.

    Attributes:
        lengths, d_models: sorted unique sequence lengths T and widths d. threads: resolved thread counts.
        machines: the machines timed. batch: B. device: ``"cpu"`` or ``"cuda"``.
    """

    lengths: tuple[int, ...]
    d_models: tuple[int, ...]
    threads: tuple[int, ...]
    machines: tuple[str, ...]
    batch: int
    device: str


@dataclass(frozen=True)
class BenchPlan(Sweep):
    """A validated :class:`BenchConfig`: sorted unique lengths and widths, thread counts resolved."""

    matmul_size: int


def estimate_bench_bytes(T: int, d: int, batch: int, machines: tuple[str, ...]) -> MemoryEstimate:
    """Generous float32 bytes for one point: attention maps, activations, weights.

    Maps: the explicit call holds scores, scaled scores and weights, 4·B·T² floats with a spare; SDPA's
    fused kernel needs none, but its math fallback does, so B·T² is kept for it. Activations:
    16·B·T·d floats (inputs, Q, K, V, states, LSTM gates, outputs). Weights: 18·d² (every recurrence).

    >>> estimate_bench_bytes(4096, 512, 1, ("sdpa", "attention")).largest
    'attention maps of 4096×4096'
    """
    maps = (4 if "attention" in machines else 1 if "sdpa" in machines else 0) * batch * T * T
    terms = {f"attention maps of {T}×{T}": maps * FLOAT32_BYTES,
             f"activations of {T} positions": 16 * batch * T * d * FLOAT32_BYTES,
             f"weights of width {d}": 18 * d * d * FLOAT32_BYTES}
    largest = max(terms, key=terms.__getitem__)
    return MemoryEstimate(total_bytes=sum(terms.values()), largest=largest)


def _positive_ints(name: str, values: object, maximum: int) -> tuple[int, ...]:
    if isinstance(values, (int, str)) or not hasattr(values, "__iter__"):
        raise SeqlabError(N_("{name} must be a sequence of integers, received {values!r}"), name=name, values=values,
                          parameter=name)
    checked = tuple(require_positive_int(name, v, maximum) for v in values)
    if not checked:
        raise SeqlabError(N_("{name} must hold at least one integer, received none"), name=name, parameter=name)
    return tuple(sorted(set(checked)))


def _threads(settings: object, load: MachineLoad | None) -> tuple[int, ...]:
    available = torch.get_num_threads()
    maximum = max(os.cpu_count() or 1, available)
    if isinstance(settings, (int, str)) or not settings:
        raise SeqlabError(N_("threads must be a sequence of integers, 'all' or 'auto', received {settings!r}"),
                          settings=settings, parameter="threads")
    words = {"all": available}
    if "auto" in settings:
        words["auto"] = timing_threads_default(load)
    resolved = {words[s] if isinstance(s, str) and s in words else require_positive_int("threads", s, maximum)
                for s in settings}
    return tuple(sorted(resolved))


def check_bench_config(config: BenchConfig, load: MachineLoad | None = None) -> BenchPlan:
    """Validate every size, thread count, machine and device; refuse what would not fit. Allocates nothing.

    >>> check_bench_config(BenchConfig(lengths=(64, 16, 64), threads=(1,))).lengths
    (16, 64)
    >>> check_bench_config(BenchConfig(threads=("auto",)), MachineLoad(1.9, 2, True)).threads  # one core free
    (1,)

    Args:
        config: what to sweep.
        load: the machine's load that ``"auto"`` threads are resolved with; None reads it now.

    Raises:
        SeqlabError: the message names the value; ``parameter`` is lengths, d_model, batch, threads,
            machines, device, min_run_time, min_samples or rounds.
    """
    lengths = _positive_ints("T", config.lengths, MAX_LENGTH)
    d_models = _positive_ints("d_model", config.d_models, MAX_WIDTH)
    batch = require_positive_int("batch", config.batch, MAX_BATCH)
    threads = _threads(config.threads, load)
    if isinstance(config.machines, str) or not config.machines:
        raise SeqlabError(N_("machines must name at least one of {machines}, received {machines2!r}"),
                          machines=', '.join(MACHINES), machines2=config.machines, parameter="machines")
    machines = tuple(k for k in MACHINES if k in {_machine(m).key for m in config.machines})
    if config.device not in DEVICES:
        raise SeqlabError(N_("device must be one of {devices}, received {device!r}"), devices=', '.join(DEVICES),
                          device=config.device, parameter="device")
    if config.device == "cuda" and not torch.cuda.is_available():
        raise SeqlabError(N_("device 'cuda' requested but no CUDA device is present"), parameter="device")
    run_time = config.min_run_time
    if isinstance(run_time, bool) or not isinstance(run_time, (int, float)) or not 0 < run_time <= 60:
        raise SeqlabError(N_("min_run_time must be a number of seconds in (0, 60], received {run_time!r}"),
                          run_time=run_time, parameter="min_run_time")
    require_positive_int("min_samples", config.min_samples, 1000)
    require_positive_int("rounds", config.rounds, MAX_ROUNDS)
    default_size = 4096 if config.device == "cuda" else 1024
    matmul_size = require_positive_int("matmul_size", config.matmul_size or default_size, 16_384)
    T, d = lengths[-1], d_models[-1]
    estimate = estimate_bench_bytes(T, d, batch, machines)
    available = torch.cuda.mem_get_info()[0] if config.device == "cuda" else available_memory_bytes()
    try:
        require_fits(estimate, Message(N_("T = {T} at d_model = {d_model}, batch {batch}"), T=T, d_model=d, batch=batch),
                     available)
    except SeqlabError as error:  # blame the batch when one sequence would fit, else the larger term
        single = estimate_bench_bytes(T, d, 1, machines).total_bytes <= 0.8 * available
        parameter = "batch" if single else "d_model" if estimate.largest.startswith("weights") else "T"
        raise SeqlabError.wrapping(error, parameter=parameter) from None
    return BenchPlan(lengths, d_models, threads, machines, batch, config.device, matmul_size)
