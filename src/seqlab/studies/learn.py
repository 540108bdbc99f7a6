"""``seqlab learn``: train tiny models and see path length decide what they can learn (L3, L4, L10).

The paper's §4 argues that the shorter the path between two positions, the easier a dependency
between them is to learn. Counting paths (``seqlab compare``) shows the structure; this study shows
the consequence. Models of one parameter budget (:mod:`seqlab.learn.models`: Elman RNN, LSTM, GRU,
one self-attention layer without and with sinusoidal positional encoding, a per-position MLP) are
trained on the CPU on three synthetic tasks (:mod:`seqlab.learn.tasks`), at several T and seeds:

* ``recall`` (L3, L4): the recurrence falls towards chance as T grows; attention does not;
* ``order`` (L10): attention without positional encoding stays at chance, with it it learns, and the
  recurrence learns;
* ``position`` (L10): the per-position MLP fails on positions it never trained (about 0.5); models
  that share their weights over positions do not.

Beside each accuracy sit the measured spectral radius of the learned W_hh and the reach
||dy_T/dx_1|| (:mod:`seqlab.learn.training`), so the curve is explained by the measured path.

Everything is checked, and the memory weighed, before training starts (:func:`check_learn_config`);
:func:`estimate_learn` prices the run from a measured per-step cost; :func:`run_learn` trains, and on
Ctrl-C (KeyboardInterrupt) returns what it has, flagged ``partial``. Runs go seed by seed, so an
interrupted sweep still holds every task, model and T for its first seeds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.learn.models import MODELS, width_for_budget
from seqlab.learn.tasks import TASKS
from seqlab.learn.training import EVAL_CHUNK, Run, TrainSettings, deterministic_torch, step_seconds, train_run
from seqlab.memory import FLOAT32_BYTES, MemoryEstimate, require_fits

__all__ = ["Cell", "Estimate", "LearnConfig", "LearnPlan", "LearnResult", "PlannedRun", "check_learn_config",
           "estimate_learn", "near_chance", "run_learn", "summarise"]

#: Each task's models, in table order.
TASK_MODELS = {
    "recall": ("elman", "lstm", "gru", "attention", "attention-pe"),
    "order": ("elman", "lstm", "gru", "attention", "attention-pe"),
    "position": ("mlp", "elman", "lstm", "gru", "attention", "attention-pe"),
}
#: Each task's lengths T in the full run, and with ``--quick``.
LENGTHS = {"recall": (8, 16, 32, 64, 128), "order": (8, 16, 32), "position": (8, 16, 32)}
QUICK_LENGTHS = {"recall": (8, 32, 128), "order": (8, 16), "position": (16,)}
PRESETS = ("full", "quick")
#: Longest T accepted: past it one run of the slowest recurrence takes minutes per thousand steps.
MAX_LENGTH = 512
MAX_SEEDS = 10
#: The full run's training budget, and ``--quick``'s.
FULL_SETTINGS = TrainSettings(steps=1200, test_size=1000)
QUICK_SETTINGS = TrainSettings(steps=600, test_size=500)
#: A cell has learnt the task when its mean accuracy reaches this.
LEARNT = 0.9
#: A cell is near chance when its mean is within this share of the way from chance to 1.
NEAR_CHANCE = 0.15


@dataclass(frozen=True)
class LearnConfig:
    """What to train. ``models`` / ``lengths`` None: each task's own (:data:`TASK_MODELS`, and
    :data:`LENGTHS` or, with ``preset="quick"``, :data:`QUICK_LENGTHS`); given, they apply to every task.
    Seeds are 0 .. ``seeds``-1."""

    tasks: tuple[str, ...] = tuple(TASKS)
    models: tuple[str, ...] | None = None
    lengths: tuple[int, ...] | None = None
    seeds: int = 3
    preset: str = "full"
    threads: int = 1
    settings: TrainSettings = FULL_SETTINGS

    @classmethod
    def quick(cls, **changes: object) -> LearnConfig:
        """Two seeds, short lengths, at most 600 steps and 500 test examples per run."""
        values = dict(seeds=2, preset="quick", settings=QUICK_SETTINGS)
        return cls(**{**values, **changes})


@dataclass(frozen=True)
class PlannedRun:
    """One run to do."""

    task: str
    model: str
    T: int
    seed: int


@dataclass(frozen=True)
class LearnPlan:
    """A validated :class:`LearnConfig`: per task its models and lengths, and every run in order."""

    models: dict[str, tuple[str, ...]]
    lengths: dict[str, tuple[int, ...]]
    runs: tuple[PlannedRun, ...]


def _names(values: object, valid: tuple[str, ...], what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (tuple, list)) or not values:
        raise SeqlabError(f"{what} must be a non-empty list of names among {', '.join(valid)}; received {values!r}",
                          parameter=what)
    for name in values:
        if name not in valid:
            raise SeqlabError(f"{what} must be among {', '.join(valid)}; received {name!r}", parameter=what)
    return tuple(dict.fromkeys(values))


def estimate_learn_bytes(T: int, batch: int, width: int, d_model: int) -> MemoryEstimate:
    """Generous bytes for one run at length T: attention maps and layer states, fp32, with autograd.

    Terms: 4 (T, T) maps per example (scores, weights and their gradients) and 8 copies of the states
    (T·(4w + d_model) floats), over max(batch, test chunk) examples.

    >>> estimate_learn_bytes(64, 64, 32, 16).total_bytes  # 4·128·64²·4 + 8·128·64·(4·32 + 16)·4
    46137344
    """
    rows = max(batch, EVAL_CHUNK)
    maps = 4 * rows * T * T * FLOAT32_BYTES
    states = 8 * rows * T * (4 * width + d_model) * FLOAT32_BYTES
    return MemoryEstimate(maps + states, "attention maps" if maps >= states else "layer states")


def check_learn_config(config: LearnConfig) -> LearnPlan:
    """Validate everything and weigh the memory before any training; return the plan.

    >>> plan = check_learn_config(LearnConfig(tasks=("order",), models=("attention",), lengths=(8,), seeds=2))
    >>> len(plan.runs), plan.runs[0]
    (2, PlannedRun(task='order', model='attention', T=8, seed=0))

    Raises:
        SeqlabError: an unknown task or model (the message lists the valid ones), a length shorter than
            a task needs or longer than :data:`MAX_LENGTH`, seeds outside [1, :data:`MAX_SEEDS`], bad
            settings, or a size that would not fit in memory. ``parameter`` names the field at fault.
    """
    tasks = _names(config.tasks, tuple(TASKS), "tasks")
    if config.preset not in PRESETS:
        raise SeqlabError(f"preset must be one of {', '.join(PRESETS)}; received {config.preset!r}")
    require_positive_int("seeds", config.seeds, MAX_SEEDS)
    require_positive_int("threads", config.threads)
    settings = config.settings.check()
    models = {task: TASK_MODELS[task] if config.models is None else _names(config.models, MODELS, "models")
              for task in tasks}
    defaults = QUICK_LENGTHS if config.preset == "quick" else LENGTHS
    lengths: dict[str, tuple[int, ...]] = {}
    for task in tasks:
        given = defaults[task] if config.lengths is None else config.lengths
        if isinstance(given, (str, int)) or not given:
            raise SeqlabError(f"lengths must be a non-empty list of integers, received {given!r}", parameter="T")
        for T in given:
            require_positive_int("T", T)
            if T > MAX_LENGTH:
                raise SeqlabError(f"lengths must be at most {MAX_LENGTH} (longer runs take hours on a CPU), "
                                  f"received {T}", parameter="T")
            if T < TASKS[task].min_length:
                raise SeqlabError(f"the {task} task needs T >= {TASKS[task].min_length}, received {T}",
                                  parameter="T")
        lengths[task] = tuple(sorted(set(given)))
    for task in tasks:
        spec, T = TASKS[task], lengths[task][-1]
        width = max(width_for_budget(m, settings.budget, d_model=settings.d_model, vocab=spec.vocab,
                                     classes=spec.classes, T=T) for m in models[task])
        require_fits(estimate_learn_bytes(T, settings.batch, width, settings.d_model),
                     f"training at T = {T} with batch {settings.batch}")
    runs = tuple(PlannedRun(task, model, T, seed) for seed in range(config.seeds) for task in tasks
                 for T in lengths[task] for model in models[task])
    return LearnPlan(models=models, lengths=lengths, runs=runs)


@dataclass(frozen=True)
class Estimate:
    """The time a sweep may take, priced from per-step costs measured now.

    Attributes:
        seconds: upper bound: every run to its step limit, plus its test pass (counted as
            test_size / batch steps). Runs that learn stop earlier.
        step_seconds: ((task, model, T), seconds per training step) for every distinct triple.
        runs: how many runs.
        threads: the thread count the steps were timed at.
    """

    seconds: float
    step_seconds: tuple[tuple[tuple[str, str, int], float], ...]
    runs: int
    threads: int


def estimate_learn(config: LearnConfig) -> Estimate:
    """Measure one training step of each (task, model, T) and price the whole sweep.

    >>> e = estimate_learn(LearnConfig(tasks=("recall",), models=("elman",), lengths=(4,), seeds=2))
    >>> e.runs, e.seconds > 0
    (2, True)

    Raises:
        SeqlabError: as :func:`check_learn_config`.
    """
    plan = check_learn_config(config)
    settings = config.settings
    costs: dict[tuple[str, str, int], float] = {}
    with deterministic_torch(config.threads):
        for run in plan.runs:
            key = (run.task, run.model, run.T)
            if key not in costs:
                costs[key] = step_seconds(run.task, run.model, run.T, settings)
    per_run = settings.steps + settings.test_size / settings.batch
    total = sum(costs[(r.task, r.model, r.T)] * per_run for r in plan.runs)
    return Estimate(seconds=total, step_seconds=tuple(costs.items()), runs=len(plan.runs), threads=config.threads)


def near_chance(accuracy: float, chance: float) -> bool:
    """Within :data:`NEAR_CHANCE` of the way from chance to 1 (recall: <= 0.256; two classes: <= 0.575).

    >>> near_chance(0.25, 0.125), near_chance(0.6, 0.5)
    (True, False)
    """
    return accuracy <= chance + NEAR_CHANCE * (1.0 - chance)


@dataclass(frozen=True)
class Cell:
    """One (task, model, T) over its seeds: the accuracies and their mean and range, and the path measured.

    Attributes:
        accuracies: one per seed, in seed order.
        mean, low, high: their mean, minimum and maximum.
        chance: the task's guessing accuracy.
        params: parameter count of the model (the same for every seed).
        learnt: how many seeds stopped early with perfect training batches.
        spectral_radius: median over seeds of the learned W_hh's spectral radius, or None.
        reach: median over seeds of ||dy_T/dx_1||_F (float64), or None.
    """

    task: str
    model: str
    T: int
    accuracies: tuple[float, ...]
    mean: float
    low: float
    high: float
    chance: float
    params: int
    learnt: int
    spectral_radius: float | None
    reach: float | None

    @property
    def spread(self) -> float:
        """max − min of the accuracies over seeds (0 for one seed)."""
        return self.high - self.low

    @property
    def near_chance(self) -> bool:
        """The mean accuracy is :func:`near_chance`."""
        return near_chance(self.mean, self.chance)

    @property
    def learnt_task(self) -> bool:
        """Mean accuracy >= :data:`LEARNT`."""
        return self.mean >= LEARNT


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summarise(runs: tuple[Run, ...]) -> tuple[Cell, ...]:
    """Group runs by (task, model, T), in the order first met, into :class:`Cell` s.

    >>> r = Run("order", "attention", 8, 0, 0.5, 0.5, 900, 16, 10, False, None, 0.1, 1.0, 1.0)
    >>> summarise((r, r)).__len__(), summarise((r,))[0].mean
    (1, 0.5)
    """
    groups: dict[tuple[str, str, int], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.task, run.model, run.T), []).append(run)
    cells = []
    for (task, model, T), group in groups.items():
        accuracies = tuple(r.accuracy for r in group)
        cells.append(Cell(task=task, model=model, T=T, accuracies=accuracies,
                          mean=statistics.fmean(accuracies), low=min(accuracies), high=max(accuracies),
                          chance=group[0].chance, params=group[0].params, learnt=sum(r.learnt for r in group),
                          spectral_radius=_median([r.spectral_radius for r in group]),
                          reach=_median([r.reach for r in group])))
    return tuple(cells)


@dataclass(frozen=True)
class LearnResult:
    """Every run, the per-cell summary, and how it was run.

    Attributes:
        config: what was asked.
        models, lengths: per task, as planned.
        runs: every finished run, in the order trained.
        summary: :func:`summarise` of ``runs``.
        planned: how many runs were planned.
        partial: True when interrupted (Ctrl-C) before every planned run finished.
        threads: torch's intra-op threads during training; deterministic: deterministic kernels asked.
        torch_version: PyTorch's version; seconds: wall time of the training.
    """

    config: LearnConfig
    models: dict[str, tuple[str, ...]]
    lengths: dict[str, tuple[int, ...]]
    runs: tuple[Run, ...]
    summary: tuple[Cell, ...]
    planned: int
    partial: bool
    threads: int
    deterministic: bool
    torch_version: str
    seconds: float

    def cell(self, task: str, model: str, T: int) -> Cell | None:
        """The summary of one (task, model, T), or None when no seed of it finished."""
        return next((c for c in self.summary if (c.task, c.model, c.T) == (task, model, T)), None)


def run_learn(config: LearnConfig = LearnConfig(),
              progress: Callable[[int, int, PlannedRun | None], None] | None = None) -> LearnResult:
    """Train every planned run; on Ctrl-C stop and return the runs finished so far, flagged ``partial``.

    >>> result = run_learn(LearnConfig(tasks=("position",), models=("mlp",), lengths=(4,), seeds=1,
    ...                                settings=TrainSettings(steps=5, test_size=8)))
    >>> len(result.runs), result.partial, result.summary[0].model
    (1, False, 'mlp')

    Args:
        config: what to train.
        progress: called as ``progress(done, total, run)`` before each run (``run`` about to start)
            and once at the end (``run`` None), for a progress bar. A KeyboardInterrupt raised in it
            stops the sweep like Ctrl-C.

    Raises:
        SeqlabError: as :func:`check_learn_config` (before any training).
    """
    plan = check_learn_config(config)
    runs: list[Run] = []
    partial = False
    total = len(plan.runs)
    start = time.perf_counter()
    with deterministic_torch(config.threads):
        try:
            for done, item in enumerate(plan.runs):
                if progress is not None:
                    progress(done, total, item)
                runs.append(train_run(item.task, item.model, item.T, item.seed, config.settings))
            if progress is not None:
                progress(total, total, None)
        except KeyboardInterrupt:
            partial = len(runs) < total
    finished = tuple(runs)
    return LearnResult(config=config, models=plan.models, lengths=plan.lengths, runs=finished,
                       summary=summarise(finished), planned=total, partial=partial, threads=config.threads,
                       deterministic=True, torch_version=torch.__version__, seconds=time.perf_counter() - start)
