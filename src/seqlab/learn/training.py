"""Train one model on one task at one length and seed, then measure what it learnt and its path (L3, L4).

A run: fresh batches from a seeded generator, AdamW (``torch.optim.AdamW``, decoupled weight decay
``weight_decay``; Loshchilov & Hutter 2019) with a linear warm-up over the first ``warmup`` share of the
steps and a cosine decay to 0 over the rest (``torch.optim.lr_scheduler.LinearLR`` then
``CosineAnnealingLR``, chained by ``SequentialLR``), cross-entropy on the answer — at the last
position, or for a per-position task (mqar) averaged over every queried position — gradient norm
clipped at ``clip``; it stops after ``steps`` optimiser steps, or earlier once ``patience`` training
batches in a row are answered without a mistake (the run is then marked ``learnt``). Accuracy is the
fraction of answers right: of examples, or for mqar of queried positions. Then two held-out sets are scored. The **validation** set (``validation_size`` examples)
comes from the training distribution through a generator of its own: the study picks each model's
learning rate on it (:mod:`seqlab.learn.selection`), so the choice never looks at the test set. The
**test** set (``test_size`` examples, the same for every model and rate at one task, T and seed) gives
the accuracy that is reported; for the order and position tasks it is built differently from the
training data (swapped twins; the second half). Then, for the trained layer, in float64 on the first test example,
the reach ||dy_T/dx_1||_F (:func:`~seqlab.measure.reach.measure_reach`: exact, by autograd) and, for
a recurrence, the spectral radius of its learned W_hh (:func:`~seqlab.layers.recurrent.spectral_radius`);
and the **state bytes** its decoder holds after the T tokens of that example
(:meth:`~seqlab.learn.models.TaskModel.decode`, weighed by :func:`seqlab.layers.decoding.state_bytes`).

Reproducibility: every random draw comes from generators seeded by (task, T, seed) — and the model
name for the initial weights — so one seed gives the same numbers run after run on one machine, as
long as :func:`deterministic_torch` fixes the threads and asks for deterministic kernels. Between
machines the floating-point rounding of the kernels differs, and a trained recurrence amplifies the
difference: its accuracy, ρ and reach are not bitwise portable (the tests assert only margins).

Shape letters: B batch, T positions, d_model embedding width, w layer width.
"""

from __future__ import annotations

import math
import statistics
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.decoding import state_bytes
from seqlab.layers.recurrent import spectral_radius
from seqlab.learn.models import TaskModel, width_for_budget
from seqlab.learn.tasks import IGNORE, TASKS, check_pairs, make_batch
from seqlab.measure.reach import measure_reach

__all__ = ["EVAL_CHUNK", "Run", "TrainSettings", "deterministic_torch", "seed_for", "step_seconds", "train_run"]

#: Test examples per forward pass when scoring (bounds the (chunk, T, T) attention maps).
EVAL_CHUNK = 128


@dataclass(frozen=True)
class TrainSettings:
    """How every run trains: budgets and optimiser.

    Attributes:
        steps: most optimiser steps per run.
        batch: examples per step (B).
        lr: AdamW's peak learning rate (the study tries several: :data:`~seqlab.studies.learn.FULL_RATES`).
        clip: largest gradient norm (``clip_grad_norm_``), the same for every model.
        patience: stop once this many training batches in a row have no mistake.
        test_size: held-out examples per run (even: the order task's test set comes in twins).
        validation_size: examples from the training distribution, held out, to choose the rate on.
        d_model: embedding width.
        budget: most parameters per model (embedding + layer + readout), when no width is given.
        warmup: share of ``steps`` over which the rate rises linearly to ``lr`` (then a cosine decay to 0).
        weight_decay: AdamW's decoupled weight decay.
    """

    steps: int = 1500
    batch: int = 64
    lr: float = 1e-2
    clip: float = 1.0
    patience: int = 20
    test_size: int = 1000
    validation_size: int = 500
    d_model: int = 16
    budget: int = 2000
    warmup: float = 0.05
    weight_decay: float = 0.01

    def check(self) -> TrainSettings:
        """Return self if every field is in range.

        Raises:
            SeqlabError: a field out of range; the message names it.
        """
        for name in ("steps", "batch", "patience", "test_size", "validation_size", "d_model", "budget"):
            require_positive_int(name, getattr(self, name))
        if self.test_size % 2:
            raise SeqlabError(N_("test_size must be even (the order task's twins), received {test_size}"),
                              test_size=self.test_size, parameter="test_size")
        for name in ("lr", "clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise SeqlabError(N_("{name} must be a finite number > 0, received {value!r}"), name=name, value=value,
                                  parameter=name)
        for name, top in (("warmup", 1.0), ("weight_decay", 1.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < top:
                raise SeqlabError(N_("{name} must be a number in [0, {top:g}), received {value!r}"), name=name, top=top,
                                  value=value, parameter=name)
        return self


@dataclass(frozen=True)
class Run:
    """One trained model: what it scored, its size, and its measured path from position 1 to T.

    Attributes:
        task, model, T, seed: what was trained.
        lr: the learning rate it was trained with.
        accuracy: fraction of the test set answered right (mqar: of its queried positions).
        validation_accuracy, validation_loss: fraction right and mean cross-entropy (nats) on the
            validation set (training distribution, held out): what the rate is chosen on.
        chance: accuracy of guessing (1 / classes).
        params: parameters of the model (embedding + layer + readout).
        width: its hidden size (recurrence, MLP), d_k = d_v (attention, linear attention, sliding window) or
            d_state (diagonal and selective recurrences).
        steps: optimiser steps taken.
        learnt: True when training stopped early, ``patience`` perfect training batches in a row.
        spectral_radius: largest |eigenvalue| of the learned W_hh (LSTM/GRU: the candidate block);
            None for attention and the MLP.
        reach: ||dy_T/dx_1||_F in float64 on the first test example (x: the layer's input rows,
            y: its outputs); None for the MLP.
        reach_last: ||dy_T/dx_T||_F, the same at distance 0, for scale; None for the MLP.
        seconds: wall time of the run (not part of what is reproducible).
        pairs: key-value pairs per example (mqar), else None.
        state_bytes: bytes of the state its decoder holds after the T tokens of one example
            (:meth:`~seqlab.learn.models.TaskModel.decode`); None for the MLP, which has no step.
    """

    task: str
    model: str
    T: int
    seed: int
    lr: float
    accuracy: float
    validation_accuracy: float
    validation_loss: float
    chance: float
    params: int
    width: int
    steps: int
    learnt: bool
    spectral_radius: float | None
    reach: float | None
    reach_last: float | None
    seconds: float
    pairs: int | None = None
    state_bytes: int | None = None


@contextmanager
def deterministic_torch(threads: int) -> Iterator[None]:
    """Fix torch's intra-op threads and ask for deterministic kernels; restore both on exit.

    >>> with deterministic_torch(1):
    ...     torch.get_num_threads()
    1
    """
    require_positive_int("threads", threads)
    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(), \
        torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])


def seed_for(seed: int, *parts: object) -> int:
    """A seed for one stream of one run, from the user's seed and names (stable across processes).

    >>> seed_for(0, "recall", 8, "data") == seed_for(0, "recall", 8, "data") != seed_for(1, "recall", 8, "data")
    True
    """
    return zlib.crc32("/".join(str(p) for p in (seed, *parts)).encode("utf-8"))


def _streams(task: str, T: int, pairs: int | None) -> tuple[object, ...]:
    """The names a run's seeds are drawn under: (task, T), and the pairs for mqar."""
    return (task, T) if pairs is None else (task, T, pairs)


def _build(task: str, model: str, T: int, seed: int, settings: TrainSettings, pairs: int | None = None,
           width: int | None = None) -> TaskModel:
    spec = TASKS[task]
    sizes = dict(d_model=settings.d_model, vocab=spec.vocab, classes=spec.classes, T=T)
    shift = spec.per_position  # mqar: the token shift, as Zoology's models
    chosen = width_for_budget(model, settings.budget, shift=shift, **sizes) if width is None else width
    parts = (*_streams(task, T, pairs), model) + (() if width is None else (width,))
    generator = torch.Generator().manual_seed(seed_for(seed, *parts, "init"))
    return TaskModel(model, chosen, generator=generator, per_position=spec.per_position, shift=shift, **sizes)


def _optimiser(net: TaskModel, settings: TrainSettings) -> tuple[torch.optim.Optimizer, object]:
    """AdamW and its schedule: linear warm-up over ``warmup``·steps (at least one step), then cosine to 0."""
    optimizer = torch.optim.AdamW(net.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    warm = max(1, round(settings.warmup * settings.steps))
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, settings.steps - warm + 1))
    if warm == 1:
        return optimizer, cosine
    linear = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0 / warm, total_iters=warm - 1)
    return optimizer, torch.optim.lr_scheduler.SequentialLR(optimizer, [linear, cosine], milestones=[warm - 1])


def _answers(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (K, C) and labels (K,) of the positions asked: all for (B, C), the non-IGNORE ones for (B, T, C)."""
    if labels.dim() == 1:
        return logits, labels  # (B, C), (B,)
    asked = labels != IGNORE  # (B, T)
    return logits[asked], labels[asked]  # (K, C), (K,)


def _step(net: TaskModel, optimizer: torch.optim.Optimizer, schedule: object, task: str, T: int,
          settings: TrainSettings, data: torch.Generator, pairs: int | None = None) -> bool:
    """One optimiser step on a fresh batch; True when the batch was answered without a mistake."""
    tokens, labels = make_batch(task, settings.batch, T, data, pairs=pairs)  # (B, T), (B,) or (B, T)
    logits, labels = _answers(net(tokens), labels)  # (K, C), (K,)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), settings.clip)
    optimizer.step()
    schedule.step()
    return bool((logits.argmax(dim=1) == labels).all())


def _score(net: TaskModel, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """(fraction right, mean cross-entropy in nats) over the answers asked: tokens (N, T), labels (N,) or (N, T)."""
    net.eval()
    right, loss, asked = 0, 0.0, 0
    with torch.no_grad():
        for t, y in zip(tokens.split(EVAL_CHUNK), labels.split(EVAL_CHUNK)):
            logits, y = _answers(net(t), y)  # (K, C), (K,)
            right += int((logits.argmax(dim=1) == y).sum())
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
            asked += y.shape[0]
    return right / asked, loss / asked


def train_run(task: str, model: str, T: int, seed: int, settings: TrainSettings = TrainSettings(), *,
              pairs: int | None = None, width: int | None = None) -> Run:
    """Train ``model`` on ``task`` at length ``T`` from ``seed``; test it; measure its reach and state bytes.

    >>> run = train_run("position", "attention", 4, 0, TrainSettings(steps=3, test_size=8, validation_size=8))
    >>> run.steps, run.params <= 2000, run.spectral_radius is None, run.reach > 0, run.lr
    (3, True, True, True, 0.01)
    >>> run = train_run("mqar", "attention", 8, 0, TrainSettings(steps=2, test_size=8, validation_size=8),
    ...                 pairs=2, width=4)
    >>> run.width, run.pairs, run.state_bytes  # e_T (16 floats) + K, V (8 rows of 4 floats each), 4 bytes each
    (4, 2, 320)

    Args:
        task: a name of :data:`~seqlab.learn.tasks.TASKS`.
        model: a name of :data:`~seqlab.learn.models.MODELS`.
        T: positions per example (at least the task's ``min_length``).
        seed: integer >= 0; the same seed gives the same data and initial weights.
        settings: budgets and optimiser (``settings.lr`` is the peak rate of this run).
        pairs: key-value pairs per example (mqar only; required there).
        width: the layer's width (None: the largest within ``settings.budget``).

    Returns:
        A :class:`Run`.

    Raises:
        SeqlabError: unknown task or model, T too short, bad settings, pairs missing or out of range.
    """
    pairs, width = _check_sizes(task, pairs, width)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SeqlabError(N_("seed must be an integer >= 0, received {seed!r}"), seed=seed, parameter="seeds")
    settings.check()
    start = time.perf_counter()
    net = _build(task, model, T, seed, settings, pairs, width)
    streams = _streams(task, T, pairs)
    test_tokens, test_labels = make_batch(task, settings.test_size, T,
                                          torch.Generator().manual_seed(seed_for(seed, *streams, "test")), "test",
                                          pairs=pairs)
    validation = make_batch(task, settings.validation_size, T,
                            torch.Generator().manual_seed(seed_for(seed, *streams, "validation")), "train",
                            pairs=pairs)
    data = torch.Generator().manual_seed(seed_for(seed, *streams, "train"))
    optimizer, schedule = _optimiser(net, settings)
    net.train()
    streak = steps = 0
    while steps < settings.steps and streak < settings.patience:
        streak = streak + 1 if _step(net, optimizer, schedule, task, T, settings, data, pairs) else 0
        steps += 1
    accuracy, _ = _score(net, test_tokens, test_labels)
    validation_accuracy, validation_loss = _score(net, *validation)
    weight = net.recurrent_weight()
    layer = net.reach_layer()
    reach = None
    if layer is not None:
        x = net.inputs(test_tokens[:1])[0].detach()  # (T, d_model): the layer's input rows
        reach = measure_reach(layer, x, batched=True, dtype=torch.float64)
    decoded = net.decode(test_tokens[:1])
    return Run(task=task, model=model, T=T, seed=seed, lr=settings.lr, accuracy=accuracy,
               validation_accuracy=validation_accuracy, validation_loss=validation_loss, chance=TASKS[task].chance,
               params=net.parameter_count(), width=net.width, steps=steps, learnt=streak >= settings.patience,
               spectral_radius=None if weight is None else spectral_radius(weight),
               reach=None if reach is None else reach.first,
               reach_last=None if reach is None else reach.norms[-1],
               seconds=time.perf_counter() - start, pairs=pairs,
               state_bytes=None if decoded is None else state_bytes(decoded[1]))


def _check_sizes(task: str, pairs: object, width: object) -> tuple[int | None, int | None]:
    """(pairs, width) checked: pairs required for mqar and refused elsewhere; width None or an integer >= 1."""
    if task not in TASKS:
        raise SeqlabError(N_("task must be one of {tasks}; received {task!r}"), tasks=', '.join(TASKS), task=task,
                          parameter="tasks")
    if TASKS[task].per_position:
        pairs = check_pairs(pairs)
    elif pairs is not None:
        raise SeqlabError(N_("pairs is for the mqar task only; received pairs={pairs!r} for {task!r}"), pairs=pairs,
                          task=task, parameter="pairs")
    return pairs, None if width is None else require_positive_int("width", width)


def step_seconds(task: str, model: str, T: int, settings: TrainSettings = TrainSettings(), repeats: int = 3, *,
                 pairs: int | None = None, width: int | None = None) -> float:
    """Measured seconds of one training step (median of ``repeats`` after one warm-up step).

    >>> step_seconds("recall", "elman", 4, TrainSettings(batch=2), repeats=1) > 0
    True

    Raises:
        SeqlabError: unknown task or model, T too short, bad settings.
    """
    require_positive_int("repeats", repeats)
    pairs, width = _check_sizes(task, pairs, width)
    settings.check()
    net = _build(task, model, T, 0, settings, pairs, width)
    optimizer, schedule = _optimiser(net, settings)
    data = torch.Generator().manual_seed(0)
    _step(net, optimizer, schedule, task, T, settings, data, pairs)  # warm-up: first-call allocations
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _step(net, optimizer, schedule, task, T, settings, data, pairs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
