"""Train one model on one task at one length and seed, then measure what it learnt and its path (L3, L4).

A run: fresh batches from a seeded generator, Adam, cross-entropy on the answer at the last
position, gradient norm clipped at ``clip``; it stops after ``steps`` optimiser steps, or earlier once
``patience`` training batches in a row are answered without a mistake (the run is then marked
``learnt``). Then two held-out sets are scored. The **validation** set (``validation_size`` examples)
comes from the training distribution through a generator of its own: the study picks each model's
learning rate on it (:mod:`seqlab.learn.selection`), so the choice never looks at the test set. The
**test** set (``test_size`` examples, the same for every model and rate at one task, T and seed) gives
the accuracy that is reported; for the order and position tasks it is built differently from the
training data (swapped twins; the second half). Then, for the trained layer, in float64 on the first test example,
the reach ||dy_T/dx_1||_F (:func:`~seqlab.measure.reach.measure_reach`: exact, by autograd) and, for
a recurrence, the spectral radius of its learned W_hh (:func:`~seqlab.layers.recurrent.spectral_radius`).

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
from seqlab.layers.recurrent import spectral_radius
from seqlab.learn.models import TaskModel, width_for_budget
from seqlab.learn.tasks import TASKS, make_batch
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
        lr: Adam's learning rate (the study tries several: :data:`~seqlab.learn.selection.FULL_RATES`).
        clip: largest gradient norm (``clip_grad_norm_``), the same for every model.
        patience: stop once this many training batches in a row have no mistake.
        test_size: held-out examples per run (even: the order task's test set comes in twins).
        validation_size: examples from the training distribution, held out, to choose the rate on.
        d_model: embedding width.
        budget: most parameters per model (embedding + layer + readout).
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

    def check(self) -> TrainSettings:
        """Return self if every field is in range.

        Raises:
            SeqlabError: a field out of range; the message names it.
        """
        for name in ("steps", "batch", "patience", "test_size", "validation_size", "d_model", "budget"):
            require_positive_int(name, getattr(self, name))
        if self.test_size % 2:
            raise SeqlabError(f"test_size must be even (the order task's twins), received {self.test_size}",
                              parameter="test_size")
        for name in ("lr", "clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise SeqlabError(f"{name} must be a finite number > 0, received {value!r}", parameter=name)
        return self


@dataclass(frozen=True)
class Run:
    """One trained model: what it scored, its size, and its measured path from position 1 to T.

    Attributes:
        task, model, T, seed: what was trained.
        lr: the learning rate it was trained with.
        accuracy: fraction of the test set answered right.
        validation_accuracy, validation_loss: fraction right and mean cross-entropy (nats) on the
            validation set (training distribution, held out): what the rate is chosen on.
        chance: accuracy of guessing (1 / classes).
        params: parameters of the model (embedding + layer + readout).
        width: its hidden size (recurrence, MLP) or d_k = d_v (attention).
        steps: optimiser steps taken.
        learnt: True when training stopped early, ``patience`` perfect training batches in a row.
        spectral_radius: largest |eigenvalue| of the learned W_hh (LSTM/GRU: the candidate block);
            None for attention and the MLP.
        reach: ||dy_T/dx_1||_F in float64 on the first test example (x: the layer's input rows,
            y: its outputs); None for the MLP.
        reach_last: ||dy_T/dx_T||_F, the same at distance 0, for scale; None for the MLP.
        seconds: wall time of the run (not part of what is reproducible).
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


def _build(task: str, model: str, T: int, seed: int, settings: TrainSettings) -> TaskModel:
    spec = TASKS[task]
    sizes = dict(d_model=settings.d_model, vocab=spec.vocab, classes=spec.classes, T=T)
    width = width_for_budget(model, settings.budget, **sizes)
    generator = torch.Generator().manual_seed(seed_for(seed, task, T, model, "init"))
    return TaskModel(model, width, generator=generator, **sizes)


def _step(net: TaskModel, optimizer: torch.optim.Optimizer, task: str, T: int, settings: TrainSettings,
          data: torch.Generator) -> bool:
    """One optimiser step on a fresh batch; True when the batch was answered without a mistake."""
    tokens, labels = make_batch(task, settings.batch, T, data)  # (B, T), (B,)
    logits = net(tokens)  # (B, C)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), settings.clip)
    optimizer.step()
    return bool((logits.argmax(dim=1) == labels).all())


def _score(net: TaskModel, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """(fraction right, mean cross-entropy in nats) of ``net`` on tokens (N, T), labels (N,)."""
    net.eval()
    right, loss = 0, 0.0
    with torch.no_grad():
        for t, y in zip(tokens.split(EVAL_CHUNK), labels.split(EVAL_CHUNK)):
            logits = net(t)  # (chunk, C)
            right += int((logits.argmax(dim=1) == y).sum())
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
    return right / labels.shape[0], loss / labels.shape[0]


def train_run(task: str, model: str, T: int, seed: int, settings: TrainSettings = TrainSettings()) -> Run:
    """Train ``model`` on ``task`` at length ``T`` from ``seed``; test it; measure its reach.

    >>> run = train_run("position", "attention", 4, 0, TrainSettings(steps=3, test_size=8, validation_size=8))
    >>> run.steps, run.params <= 2000, run.spectral_radius is None, run.reach > 0, run.lr
    (3, True, True, True, 0.01)

    Args:
        task: a name of :data:`~seqlab.learn.tasks.TASKS`.
        model: a name of :data:`~seqlab.learn.models.MODELS`.
        T: positions per example (at least the task's ``min_length``).
        seed: integer >= 0; the same seed gives the same data and initial weights.
        settings: budgets and optimiser (``settings.lr`` is the rate of this run).

    Returns:
        A :class:`Run`.

    Raises:
        SeqlabError: unknown task or model, T too short, bad settings.
    """
    if task not in TASKS:
        raise SeqlabError(f"task must be one of {', '.join(TASKS)}; received {task!r}", parameter="tasks")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SeqlabError(f"seed must be an integer >= 0, received {seed!r}", parameter="seeds")
    settings.check()
    start = time.perf_counter()
    net = _build(task, model, T, seed, settings)
    test_tokens, test_labels = make_batch(task, settings.test_size, T,
                                          torch.Generator().manual_seed(seed_for(seed, task, T, "test")), "test")
    validation = make_batch(task, settings.validation_size, T,
                            torch.Generator().manual_seed(seed_for(seed, task, T, "validation")), "train")
    data = torch.Generator().manual_seed(seed_for(seed, task, T, "train"))
    optimizer = torch.optim.Adam(net.parameters(), lr=settings.lr)
    net.train()
    streak = steps = 0
    while steps < settings.steps and streak < settings.patience:
        streak = streak + 1 if _step(net, optimizer, task, T, settings, data) else 0
        steps += 1
    accuracy, _ = _score(net, test_tokens, test_labels)
    validation_accuracy, validation_loss = _score(net, *validation)
    weight = net.recurrent_weight()
    layer = net.reach_layer()
    reach = None
    if layer is not None:
        x = net.inputs(test_tokens[:1])[0].detach()  # (T, d_model): the layer's input rows
        reach = measure_reach(layer, x, batched=True, dtype=torch.float64)
    return Run(task=task, model=model, T=T, seed=seed, lr=settings.lr, accuracy=accuracy,
               validation_accuracy=validation_accuracy, validation_loss=validation_loss, chance=TASKS[task].chance,
               params=net.parameter_count(), width=net.width, steps=steps, learnt=streak >= settings.patience,
               spectral_radius=None if weight is None else spectral_radius(weight),
               reach=None if reach is None else reach.first,
               reach_last=None if reach is None else reach.norms[-1],
               seconds=time.perf_counter() - start)


def step_seconds(task: str, model: str, T: int, settings: TrainSettings = TrainSettings(), repeats: int = 3) -> float:
    """Measured seconds of one training step (median of ``repeats`` after one warm-up step).

    >>> step_seconds("recall", "elman", 4, TrainSettings(batch=2), repeats=1) > 0
    True

    Raises:
        SeqlabError: unknown task or model, T too short, bad settings.
    """
    require_positive_int("repeats", repeats)
    settings.check()
    net = _build(task, model, T, 0, settings)
    optimizer = torch.optim.Adam(net.parameters(), lr=settings.lr)
    data = torch.Generator().manual_seed(0)
    _step(net, optimizer, task, T, settings, data)  # warm-up: first-call allocations
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _step(net, optimizer, task, T, settings, data)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
