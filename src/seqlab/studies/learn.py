"""``seqlab learn``: train tiny models and see path length decide what they learn (L3, L4, L10), and state what they recall.

The paper's §4 argues that the shorter the path between two positions, the easier a dependency
between them is to learn. Counting paths (``seqlab compare``) shows the structure; this study shows
the consequence. Models of one parameter budget (:mod:`seqlab.learn.models`: Elman RNN, LSTM, GRU,
one self-attention layer without and with sinusoidal positional encoding, a per-position MLP) are
trained on the CPU on three synthetic tasks (:mod:`seqlab.learn.tasks`), at several T and seeds:

* ``recall`` (L3, L4): the recurrence falls towards chance as T grows; attention does not; LSTM and
  GRU, with their additive bypass, should hold out longer than the Elman RNN;
* ``order`` (L10): attention without positional encoding stays at chance, with it it learns, and the
  recurrence learns;
* ``position`` (L10): the per-position MLP fails on positions it never trained (about 0.5); models
  that share their weights over positions do not;
* ``mqar`` (Arora et al. 2023, "Zoology"): multi-query associative recall against the bytes of state
  each model keeps (measured on its decoder, :meth:`~seqlab.learn.models.TaskModel.decode`), at
  several widths (:data:`MQAR_WIDTHS`) and numbers of pairs (:data:`MQAR_PAIRS`): attention, whose KV
  cache grows with T, should recall at every T and number of pairs; mixers of fixed state should lose
  accuracy as the pairs outgrow their state.

Fairness: every model is trained (AdamW, warm-up and cosine decay: :mod:`seqlab.learn.training`) at each
rate of a small grid (:data:`FULL_RATES`) and keeps the rate
that does best on a validation split (:mod:`seqlab.learn.selection`); the full run uses
:data:`FULL_SEEDS` seeds and reports each cell's range over them. ``--quick`` cuts seeds, steps,
lengths and the grid (:data:`QUICK_SETTINGS`); :func:`quick_cuts` lists what it cut, so that what
is printed can say so. Which sentences the measurements support is decided in
:mod:`seqlab.studies.learn_verdicts`.

Everything is checked, and the memory weighed, before training starts (:func:`check_learn_config`);
:func:`estimate_learn` prices the run from a measured per-step cost; :func:`run_learn` trains, and on
Ctrl-C (KeyboardInterrupt) returns what it has, flagged ``partial``. Runs go seed by seed, so an
interrupted sweep still holds every task, model and T for its first seeds. The runs are independent:
:mod:`seqlab.learn.sweep` runs them in this process, on local worker processes or as Ray tasks, and
keeps each in a results file as it ends (:func:`open_learn_results`), so that an interrupted sweep
resumes where it stopped; the backend never changes a result (:func:`train_pinned` fixes the threads
and the kernels, every draw is seeded by the planned run), and the runs come back in plan order. One run is
:func:`train_planned` of its :class:`PlannedRun` and the settings: a pure function of plain values.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import torch

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.learn.models import MIXER_MODELS, MODELS, width_for_budget
from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.learn.models import MODELS, width_for_budget
from seqlab.learn.selection import LEARNT, NEAR_CHANCE, Cell, near_chance, summarise
from seqlab.learn.sweep import Backend, Local, ResultsFile, run_key, run_sweep
from seqlab.learn.tasks import TASKS, check_pairs, min_length
from seqlab.learn.training import EVAL_CHUNK, Run, TrainSettings, deterministic_torch, step_seconds, train_run
from seqlab.memory import FLOAT32_BYTES, MemoryEstimate, require_fits
from seqlab.studies.notebook_view import NotebookView

__all__ = ["LEARNT", "NEAR_CHANCE", "Cell", "Cut", "Estimate", "LearnConfig", "LearnPlan", "LearnResult",
           "PlannedRun", "check_learn_config", "estimate_learn", "learn_about", "near_chance", "open_learn_results",
           "quick_cuts", "run_learn", "summarise", "train_pinned", "train_planned"]

#: Each task's models, in table order.
TASK_MODELS = {
    "recall": ("elman", "lstm", "gru", "attention", "attention-pe"),
    "order": ("elman", "lstm", "gru", "attention", "attention-pe"),
    "position": ("mlp", "elman", "lstm", "gru", "attention", "attention-pe"),
    "mqar": ("attention", *MIXER_MODELS, "lstm", "gru"),  # every mixer learn offers (seqlab.layers.mixers)
}
#: The mqar models with ``--quick`` (the other tasks keep theirs).
QUICK_MQAR_MODELS = ("attention", "linear_attention")
#: Each task's lengths T in the full run, and with ``--quick``.
LENGTHS = {"recall": (8, 16, 32, 64, 128), "order": (8, 16, 32), "position": (8, 16, 32), "mqar": (32, 64)}
QUICK_LENGTHS = {"recall": (8, 16, 128), "order": (8, 16), "position": (16,), "mqar": (24,)}
#: The mqar task's numbers of key-value pairs, full and ``--quick``.
MQAR_PAIRS = (2, 4, 8)
QUICK_PAIRS = (2, 6)
#: The mqar task's layer widths (the other tasks: the largest width within the parameter budget).
MQAR_WIDTHS = (8, 32)
QUICK_WIDTHS = (16,)
PRESETS = ("full", "quick")
#: Longest T accepted: past it one run of the slowest recurrence takes minutes per thousand steps.
MAX_LENGTH = 512
MAX_SEEDS = 10
#: The full run's training budget, and ``--quick``'s.
FULL_SETTINGS = TrainSettings(steps=2000, test_size=1000, validation_size=500)
QUICK_SETTINGS = TrainSettings(steps=400, test_size=500, validation_size=250)
#: Adam learning rates tried for every (task, model, T); the full run's and ``--quick``'s.
FULL_RATES = (1e-2, 3e-3, 1e-3)
QUICK_RATES = (1e-2, 3e-3)
MAX_RATES = 5
#: Seeds per cell in the full run and with ``--quick``.
FULL_SEEDS = 5
QUICK_SEEDS = 2


@dataclass(frozen=True)
class LearnConfig:
    """What to train. ``models`` / ``lengths`` None: each task's own (:data:`TASK_MODELS`, and
    :data:`LENGTHS` or, with ``preset="quick"``, :data:`QUICK_LENGTHS`); given, they apply to every task.
    ``pairs``: mqar's numbers of key-value pairs (None: :data:`MQAR_PAIRS`, quick :data:`QUICK_PAIRS`).
    ``widths``: layer widths, for every task when given (None: mqar :data:`MQAR_WIDTHS`, quick
    :data:`QUICK_WIDTHS`; the lesson's tasks the largest width within ``settings.budget``).
    Seeds are 0 .. ``seeds``-1. Every run is trained at each of ``rates`` (``settings.lr`` is not used)."""

    tasks: tuple[str, ...] = tuple(TASKS)
    models: tuple[str, ...] | None = None
    lengths: tuple[int, ...] | None = None
    seeds: int = FULL_SEEDS
    preset: str = "full"
    threads: int = 1
    settings: TrainSettings = FULL_SETTINGS
    rates: tuple[float, ...] = FULL_RATES
    pairs: tuple[int, ...] | None = None
    widths: tuple[int, ...] | None = None

    @classmethod
    def quick(cls, **changes: object) -> LearnConfig:
        """The ``--quick`` preset: fewer seeds, lengths, steps and rates (see :func:`quick_cuts`)."""
        values = dict(seeds=QUICK_SEEDS, preset="quick", settings=QUICK_SETTINGS, rates=QUICK_RATES)
        return cls(**{**values, **changes})


@dataclass(frozen=True)
class PlannedRun:
    """One run to do: plain values only (picklable), so that a run is :func:`train_planned` of it and the settings.

    ``pairs``: key-value pairs (mqar), else None; ``width``: the layer's width, None for the largest
    within the parameter budget.
    """

    task: str
    model: str
    T: int
    seed: int
    lr: float
    pairs: int | None = None
    width: int | None = None


def train_planned(item: PlannedRun, settings: TrainSettings) -> Run:
    """Train one planned run with ``settings`` at its rate: deterministic for one item, settings and machine.

    Fields of :class:`PlannedRun` beyond task, model, T, seed and lr go to
    :func:`~seqlab.learn.training.train_run` as keywords of the same name.

    Raises:
        SeqlabError: as :func:`~seqlab.learn.training.train_run`.
    """
    knobs = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)
             if f.name not in ("task", "model", "T", "seed", "lr")}
    return train_run(item.task, item.model, item.T, item.seed, dataclasses.replace(settings, lr=item.lr), **knobs)


@dataclass(frozen=True)
class LearnPlan:
    """A validated :class:`LearnConfig`: per task its models, lengths, pairs and widths, and every run in order.

    ``pairs[task]`` is ``(None,)`` for the lesson's tasks; ``widths[task]`` is ``(None,)`` where the budget
    sets the width.
    """

    models: dict[str, tuple[str, ...]]
    lengths: dict[str, tuple[int, ...]]
    runs: tuple[PlannedRun, ...]
    pairs: dict[str, tuple[int | None, ...]] = dataclasses.field(default_factory=dict)
    widths: dict[str, tuple[int | None, ...]] = dataclasses.field(default_factory=dict)


def _names(values: object, valid: tuple[str, ...], what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, (tuple, list)) or not values:
        raise SeqlabError(N_("{what} must be a non-empty list of names among {valid}; received {values!r}"), what=what,
                          valid=', '.join(valid), values=values, parameter=what)
    for name in values:
        if name not in valid:
            raise SeqlabError(N_("{what} must be among {valid}; received {name!r}"), what=what, valid=', '.join(valid),
                              name=name, parameter=what)
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


def _rates(rates: object) -> tuple[float, ...]:
    if isinstance(rates, (str, bytes)) or not isinstance(rates, (tuple, list)) or not 1 <= len(rates) <= MAX_RATES:
        raise SeqlabError(N_("rates must be a list of 1 to {max_rates} learning rates, received {rates!r}"),
                          max_rates=MAX_RATES, rates=rates, parameter="rates")
    for rate in rates:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) \
                or not 0 < rate <= 1:
            raise SeqlabError(N_("rates must be numbers in (0, 1], received {rate!r}"), rate=rate, parameter="rates")
    return tuple(dict.fromkeys(float(r) for r in rates))


def _sizes(values: object, what: str, check: Callable[[object], int]) -> tuple[int, ...]:
    if isinstance(values, (str, bytes, int)) or not isinstance(values, (tuple, list)) or not values:
        raise SeqlabError(N_("{what} must be a non-empty list of integers, received {values!r}"), what=what,
                          values=values, parameter=what)
    return tuple(sorted({check(v) for v in values}))


def check_learn_config(config: LearnConfig) -> LearnPlan:
    """Validate everything and weigh the memory before any training; return the plan.

    >>> plan = check_learn_config(LearnConfig(tasks=("order",), models=("attention",), lengths=(8,), seeds=2))
    >>> len(plan.runs), plan.runs[0]  # 2 seeds x 3 rates
    (6, PlannedRun(task='order', model='attention', T=8, seed=0, lr=0.01, pairs=None, width=None))

    Raises:
        SeqlabError: an unknown task or model (the message lists the valid ones), a length shorter than
            a task needs or longer than :data:`MAX_LENGTH`, seeds outside [1, :data:`MAX_SEEDS`], bad
            settings or rates, or a size that would not fit in memory. ``parameter`` names the field at fault.
    """
    tasks = _names(config.tasks, tuple(TASKS), "tasks")
    if config.preset not in PRESETS:
        raise SeqlabError(N_("preset must be one of {presets}; received {preset!r}"), presets=', '.join(PRESETS),
                          preset=config.preset)
    require_positive_int("seeds", config.seeds, MAX_SEEDS)
    require_positive_int("threads", config.threads)
    settings = config.settings.check()
    rates = _rates(config.rates)
    quick = config.preset == "quick"
    defaults_models = {**TASK_MODELS, "mqar": QUICK_MQAR_MODELS} if quick else TASK_MODELS
    models = {task: defaults_models[task] if config.models is None else _names(config.models, MODELS, "models")
              for task in tasks}
    if "mqar" in models and "mlp" in models["mqar"]:
        raise SeqlabError(N_("models must not include mlp for the mqar task: the per-position MLP reads all T "
                             "positions at once and cannot answer at each position causally; received 'mlp'"),
                          parameter="models")
    given_pairs = (QUICK_PAIRS if quick else MQAR_PAIRS) if config.pairs is None else config.pairs
    pair_counts = {task: _sizes(given_pairs, "pairs", check_pairs) if TASKS[task].per_position else (None,)
                   for task in tasks}
    given_widths = None if config.widths is None else _sizes(
        config.widths, "widths", lambda w: require_positive_int("widths", w, 4096))
    widths = {task: given_widths or ((QUICK_WIDTHS if quick else MQAR_WIDTHS) if TASKS[task].per_position else (None,))
              for task in tasks}
    defaults = QUICK_LENGTHS if quick else LENGTHS
    lengths: dict[str, tuple[int, ...]] = {}
    for task in tasks:
        given = defaults[task] if config.lengths is None else config.lengths
        if isinstance(given, (str, int)) or not given:
            raise SeqlabError(N_("lengths must be a non-empty list of integers, received {given!r}"), given=given,
                              parameter="T")
        for T in given:
            require_positive_int("T", T)
            if T > MAX_LENGTH:
                raise SeqlabError(N_("lengths must be at most {max_length} (longer runs take hours on a CPU), "
                                     "received {T}"), max_length=MAX_LENGTH, T=T, parameter="T")
            least = min_length(task, pair_counts[task][-1])
            if T < least:
                extra = Message(N_(" at {pairs} pairs"), pairs=pair_counts[task][-1]) if TASKS[task].per_position \
                    else ""
                raise SeqlabError(N_("the {task} task needs T >= {least}{extra}, received {T}"), task=task, least=least,
                                  extra=extra, T=T, parameter="T")
        lengths[task] = tuple(sorted(set(given)))
    for task in tasks:
        spec, T = TASKS[task], lengths[task][-1]
        budgeted = [width_for_budget(m, settings.budget, d_model=settings.d_model, vocab=spec.vocab,
                                     classes=spec.classes, T=T, shift=spec.per_position) for m in models[task]]
        width = max([w for w in widths[task] if w is not None] + ([] if widths[task] != (None,) else budgeted))
        require_fits(estimate_learn_bytes(T, settings.batch, width, settings.d_model),
                     f"training at T = {T} with batch {settings.batch}")
    runs = tuple(PlannedRun(task, model, T, seed, lr, pairs, width) for seed in range(config.seeds) for task in tasks
                 for T in lengths[task] for pairs in pair_counts[task] for model in models[task]
                 for width in widths[task] for lr in rates)
    return LearnPlan(models=models, lengths=lengths, runs=runs, pairs=pair_counts, widths=widths)


@dataclass(frozen=True)
class Estimate:
    """The time a sweep may take, priced from per-step costs measured now.

    Attributes:
        seconds: upper bound: every run to its step limit, plus its test and validation passes
            (counted as (test_size + validation_size) / batch steps). Runs that learn stop earlier.
        step_seconds: ((task, model, T, pairs, width), seconds per training step) for every distinct cell.
        runs: how many runs.
        threads: the thread count the steps were timed at.
    """

    seconds: float
    step_seconds: tuple[tuple[tuple[str, str, int, int | None, int | None], float], ...]
    runs: int
    threads: int


def estimate_learn(config: LearnConfig, skip: Collection[str] = frozenset()) -> Estimate:
    """Measure one training step of each (task, model, T) and price the whole sweep, or what is left of it.

    >>> e = estimate_learn(LearnConfig(tasks=("recall",), models=("elman",), lengths=(4,), seeds=2, rates=(1e-2,)))
    >>> e.runs, e.seconds > 0
    (2, True)

    Args:
        config: what to train.
        skip: :func:`~seqlab.learn.sweep.run_key` of runs already done (a results file's): not priced.

    Raises:
        SeqlabError: as :func:`check_learn_config`.
    """
    plan = check_learn_config(config)
    settings = config.settings
    todo = [run for run in plan.runs if run_key(run) not in skip]
    costs: dict[tuple[str, str, int, int | None, int | None], float] = {}
    with deterministic_torch(config.threads):
        for run in todo:
            key = (run.task, run.model, run.T, run.pairs, run.width)
            if key not in costs:
                costs[key] = step_seconds(run.task, run.model, run.T, settings, pairs=run.pairs, width=run.width)
    per_run = settings.steps + (settings.test_size + settings.validation_size) / settings.batch
    total = sum(costs[(r.task, r.model, r.T, r.pairs, r.width)] * per_run for r in todo)
    return Estimate(seconds=total, step_seconds=tuple(costs.items()), runs=len(todo), threads=config.threads)


@dataclass(frozen=True)
class LearnResult(NotebookView):
    """Every run, the per-cell summary, and how it was run.

    In a notebook it shows the terminal's tables and sentences (:func:`seqlab.render.learn.render_learn`) and
    ``plot()`` draws :func:`seqlab.render.learn.plot_learn` (accuracy against T; for mqar against state bytes,
    T and pairs).

    Attributes:
        config: what was asked.
        models, lengths: per task, as planned; pairs, widths: per task, as planned (``[None]``: not a
            knob of that task, or the width set by the budget).
        runs: every finished run, at every rate, in the order trained.
        summary: :func:`~seqlab.learn.selection.summarise` of ``runs``: one cell per (task, model, T)
            at the rate chosen on validation.
        planned: how many runs were planned.
        partial: True when interrupted (Ctrl-C) before every planned run finished.
        threads: torch's intra-op threads during training (in every worker); deterministic: deterministic
            kernels asked.
        torch_version: PyTorch's version; seconds: wall time of the training (this session's).
        backend: ``"local"`` (this machine) or ``"ray"``; jobs: local processes (1: this one; None with Ray).
        resumed: how many of ``runs`` were read back from the results file rather than trained now.
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
    backend: str = "local"
    jobs: int | None = 1
    resumed: int = 0
    pairs: dict[str, tuple[int | None, ...]] = dataclasses.field(default_factory=dict)
    widths: dict[str, tuple[int | None, ...]] = dataclasses.field(default_factory=dict)

    def cell(self, task: str, model: str, T: int, pairs: int | None = None, width: int | None = None) -> Cell | None:
        """The summary of one ``(task, model, T[, pairs][, width])``, or None when no seed of it finished at every
        rate. ``pairs`` / ``width`` None: the first cell met whatever its pairs / width."""
        return next((c for c in self.summary if (c.task, c.model, c.T) == (task, model, T)
                     and pairs in (None, c.pairs) and width in (None, c.width)), None)

    def cells(self, task: str, model: str | None = None) -> tuple[Cell, ...]:
        """Every cell of ``task`` (of ``model`` when given), in summary order."""
        return tuple(c for c in self.summary if c.task == task and model in (None, c.model))

    @property
    def cuts(self) -> tuple[Cut, ...]:
        """:func:`quick_cuts` of the config."""
        return quick_cuts(self.config)


@dataclass(frozen=True)
class Cut:
    """One way a run is smaller than the full preset: what, the values used and the full run's values.

    ``what`` is ``"seeds"``, ``"steps"``, ``"rates"``, ``"test_size"``, ``"validation_size"``,
    ``"lengths"`` (then ``task`` names the task), or for mqar ``"pairs"``, ``"widths"`` and ``"models"``
    (model names).
    """

    what: str
    used: tuple[float | str, ...]
    full: tuple[float | str, ...]
    task: str | None = None


def quick_cuts(config: LearnConfig) -> tuple[Cut, ...]:
    """What this config trains less of than the full preset (empty for the full run).

    >>> [(c.what, c.used, c.full) for c in quick_cuts(LearnConfig.quick(tasks=("order",)))][:3]
    [('seeds', (2,), (5,)), ('steps', (400,), (2000,)), ('test_size', (500,), (1000,))]
    >>> [c.what for c in quick_cuts(LearnConfig.quick(tasks=("order",)))][3:]
    ['validation_size', 'rates', 'lengths']

    Lengths count as a cut only when the preset chose them (``--lengths`` is the user's choice).
    """
    cuts = []
    if config.seeds < FULL_SEEDS:
        cuts.append(Cut("seeds", (config.seeds,), (FULL_SEEDS,)))
    for name in ("steps", "test_size", "validation_size"):
        used, full = getattr(config.settings, name), getattr(FULL_SETTINGS, name)
        if used < full:
            cuts.append(Cut(name, (used,), (full,)))
    if not set(FULL_RATES) <= set(config.rates):
        cuts.append(Cut("rates", tuple(config.rates), FULL_RATES))
    if config.preset == "quick" and config.lengths is None:
        cuts += [Cut("lengths", QUICK_LENGTHS[task], LENGTHS[task], task) for task in config.tasks
                 if task in TASKS and QUICK_LENGTHS[task] != LENGTHS[task]]
    if config.preset == "quick" and "mqar" in config.tasks:
        if config.pairs is None:
            cuts.append(Cut("pairs", QUICK_PAIRS, MQAR_PAIRS, "mqar"))
        if config.widths is None:
            cuts.append(Cut("widths", QUICK_WIDTHS, MQAR_WIDTHS, "mqar"))
        if config.models is None:
            cuts.append(Cut("models", QUICK_MQAR_MODELS, TASK_MODELS["mqar"], "mqar"))
    return tuple(cuts)


def learn_about(config: LearnConfig) -> dict[str, object]:
    """What a results file's header fingerprints: the study, the config, PyTorch's version, the record fields.

    A results file written for another of these is refused (:class:`~seqlab.learn.sweep.ResultsFile`),
    and so is one whose runs were planned or recorded with other fields (older code); how the runs are
    spread (``--jobs``, Ray) is not part of it, since it does not change a result.

    >>> sorted(learn_about(LearnConfig()))
    ['config', 'planned_fields', 'run_fields', 'study', 'torch']
    """
    return {"study": "learn", "config": dataclasses.asdict(config), "torch": torch.__version__,
            "planned_fields": [f.name for f in dataclasses.fields(PlannedRun)],
            "run_fields": [f.name for f in dataclasses.fields(Run)]}


def open_learn_results(config: LearnConfig, path: str | Path) -> ResultsFile:
    """Create the results file at ``path`` for ``config``, or open it to resume (see :mod:`seqlab.learn.sweep`).

    Raises:
        SeqlabError: ``parameter="results"``: as :meth:`~seqlab.learn.sweep.ResultsFile.open` (another
            config's file, a damaged line, a missing folder).
    """
    return ResultsFile.open(path, learn_about(config))


def train_pinned(item: PlannedRun, settings: TrainSettings, threads: int) -> Run:
    """:func:`train_planned` under :func:`deterministic_torch` (``threads``): what every backend executes.

    Top level, so that worker processes and Ray tasks can unpickle it (a ``functools.partial`` of it).

    Raises:
        SeqlabError: as :func:`~seqlab.learn.training.train_run`.
    """
    with deterministic_torch(threads):
        return train_planned(item, settings)


def run_learn(config: LearnConfig = LearnConfig(),
              progress: Callable[[int, int, PlannedRun | None], None] | None = None, *,
              backend: Backend = Local(), results: ResultsFile | str | Path | None = None) -> LearnResult:
    """Train every planned run; on Ctrl-C stop and return the runs finished so far, flagged ``partial``.

    >>> result = run_learn(LearnConfig(tasks=("position",), models=("mlp",), lengths=(4,), seeds=1,
    ...                                settings=TrainSettings(steps=5, test_size=8, validation_size=8)))
    >>> len(result.runs), result.partial, result.summary[0].model, result.summary[0].lr  # 3 rates, 1 chosen
    (3, False, 'mlp', 0.01)

    Args:
        config: what to train.
        progress: called as ``progress(done, total, run)``: in this process before each run (``run`` about to
            start); on workers at the start and after each run (``run`` None); once at the end (``run``
            None), for a progress bar. ``done`` counts the runs resumed from ``results``. A
            KeyboardInterrupt raised in it stops the sweep like Ctrl-C.
        backend: :class:`~seqlab.learn.sweep.Local` (``jobs``) or :class:`~seqlab.learn.sweep.Ray`; the
            results do not depend on it.
        results: a results file (a path, or one opened with :func:`open_learn_results`): the runs already
            in it are read back, not trained; each run trained now is appended as it ends. A path is
            closed at the end; an open file is left open.

    Raises:
        SeqlabError: as :func:`check_learn_config` and :func:`open_learn_results` (before any training); a bad
            backend, or Ray missing or unreachable (``parameter`` ``"jobs"`` or ``"ray"``).
    """
    plan = check_learn_config(config)
    store = open_learn_results(config, results) if isinstance(results, (str, Path)) else results
    try:
        done = {} if store is None else {key: Run(**fields) for key, fields in store.done.items()}
        start = time.perf_counter()
        with deterministic_torch(config.threads):
            sweep = run_sweep(plan.runs, functools.partial(train_pinned, settings=config.settings,
                                                           threads=config.threads),
                              backend, done=done, record=None if store is None else store.append,
                              progress=progress, threads=config.threads)
        seconds = time.perf_counter() - start
    finally:
        if store is not None and store is not results:
            store.close()
    finished = sweep.results
    return LearnResult(config=config, models=plan.models, lengths=plan.lengths, runs=finished,
                       summary=summarise(finished, config.settings.steps, config.rates), planned=len(plan.runs),
                       partial=sweep.partial, threads=config.threads, deterministic=True,
                       torch_version=torch.__version__, seconds=seconds,
                       backend="ray" if not isinstance(backend, Local) else "local",
                       jobs=backend.jobs if isinstance(backend, Local) else None, resumed=sweep.resumed,
                       pairs=plan.pairs, widths=plan.widths)
