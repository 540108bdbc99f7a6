"""From runs to cells: pick each model's learning rate on the validation split, then summarise the seeds.

One learning rate for every model is not a fair comparison: a recurrence and an attention layer of the
same size need different steps. So every cell — (task, model, T), and for mqar its number of pairs, at
one width — is trained at each rate of a small grid, for
every seed, and its rate is chosen on **validation** data only (examples drawn from the training
distribution and held out from training, :mod:`seqlab.learn.training`):

    chosen rate = argmax over rates of the mean validation accuracy over seeds,
                  ties (within :data:`TIE`) broken by the lower mean validation loss, then by the larger rate.

The test accuracies of the chosen rate are the cell's result; the test accuracies of the other rates
are never looked at. Only seeds that finished at every rate count (an interrupted sweep can leave one
seed half done); a cell with no such seed is left out.

A cell reports its seeds' accuracies with their mean and their **range** (minimum to maximum over
seeds): with a handful of seeds and results that are often all-or-nothing (a seed learns the task or
stays at chance), the range says more than a t-interval, and it needs no assumption of normality.

Shape letters: none (scalars per run).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from seqlab.learn.training import Run

__all__ = ["LEARNT", "NEAR_CHANCE", "TIE", "Cell", "RateScore", "choose_rate", "near_chance", "summarise"]

#: A seed has learnt the task when its test accuracy reaches this.
LEARNT = 0.9
#: An accuracy is near chance when it is within this share of the way from chance to 1.
NEAR_CHANCE = 0.15
#: Mean validation accuracies closer than this are a tie.
TIE = 1e-9


def near_chance(accuracy: float, chance: float) -> bool:
    """Within :data:`NEAR_CHANCE` of the way from chance to 1 (recall: <= 0.256; two classes: <= 0.575).

    >>> near_chance(0.25, 0.125), near_chance(0.6, 0.5)
    (True, False)
    """
    return accuracy <= chance + NEAR_CHANCE * (1.0 - chance)


@dataclass(frozen=True)
class RateScore:
    """One rate of the grid for one cell: its mean validation figures over the seeds compared.

    Attributes:
        lr: the learning rate.
        validation_accuracy: mean over seeds of the fraction right on the validation set.
        validation_loss: mean over seeds of the validation cross-entropy (nats per example).
        seeds: how many seeds the means are over.
    """

    lr: float
    validation_accuracy: float
    validation_loss: float
    seeds: int


def _complete_seeds(runs: list[Run], rates: Iterable[float] | None) -> list[int]:
    rates = {r.lr for r in runs} if rates is None else set(rates)
    done: dict[int, set[float]] = {}
    for run in runs:
        done.setdefault(run.seed, set()).add(run.lr)
    return sorted(seed for seed, seen in done.items() if seen == rates)


def choose_rate(runs: Iterable[Run],
                rates: Iterable[float] | None = None) -> tuple[float, tuple[RateScore, ...]] | None:
    """The rate with the best mean validation accuracy over the seeds finished at every rate.

    >>> runs = [Run("order", "elman", 8, s, lr, 0.5, va, vl, 0.5, 900, 16, 10, False, None, None, None, 1.0)
    ...         for s in (0, 1) for lr, va, vl in ((1e-2, 0.9, 0.3), (1e-3, 0.9, 0.2))]
    >>> choose_rate(runs)[0]  # equal validation accuracy: the lower validation loss wins
    0.001

    Args:
        runs: the runs of one (task, model, T), at any rates and seeds.
        rates: the rates planned (a seed counts once it has finished at each); None: the rates met in ``runs``.

    Returns:
        (chosen rate, the score of every rate in the order first met), or None when no seed has
        finished at every rate.
    """
    runs = list(runs)
    seeds = set(_complete_seeds(runs, rates))
    if not seeds:
        return None
    scores = []
    for lr in dict.fromkeys(r.lr for r in runs):
        group = [r for r in runs if r.lr == lr and r.seed in seeds]
        scores.append(RateScore(lr=lr, validation_accuracy=statistics.fmean(r.validation_accuracy for r in group),
                                validation_loss=statistics.fmean(r.validation_loss for r in group),
                                seeds=len(group)))
    best_accuracy = max(s.validation_accuracy for s in scores)
    tied = [s for s in scores if s.validation_accuracy >= best_accuracy - TIE]
    best = min(tied, key=lambda s: (s.validation_loss, -s.lr))
    return best.lr, tuple(scores)


@dataclass(frozen=True)
class Cell:
    """One (task, model, T) at its chosen rate, over its seeds: accuracies, their mean and range, the path.

    Attributes:
        lr: the rate chosen on validation (:func:`choose_rate`); rates: every rate's validation score.
        seeds: the seeds summarised, in order; accuracies: their test accuracies at ``lr``.
        mean, low, high: mean, minimum and maximum of ``accuracies`` (the range over seeds).
        chance: the task's guessing accuracy.
        params: parameter count of the model (the same for every seed).
        pairs: key-value pairs per example (mqar), else None; width: the layer's width.
        state_bytes: the decode state's bytes after T tokens, measured (the same for every seed: the
            largest over seeds is kept), or None (the MLP has no step).
        learnt: how many seeds stopped early with perfect training batches; the others used every
            step of the budget, ``step_limit``.
        spectral_radii, reaches: per seed, the learned W_hh's spectral radius and ||dy_T/dx_1||_F
            (float64), or None (attention has no W_hh, the MLP neither).
        spectral_radius, reach: their medians over seeds, or None.
    """

    task: str
    model: str
    T: int
    lr: float
    rates: tuple[RateScore, ...]
    seeds: tuple[int, ...]
    accuracies: tuple[float, ...]
    mean: float
    low: float
    high: float
    chance: float
    params: int
    learnt: int
    step_limit: int
    spectral_radii: tuple[float | None, ...]
    reaches: tuple[float | None, ...]
    spectral_radius: float | None
    reach: float | None
    pairs: int | None = None
    width: int | None = None
    state_bytes: int | None = None

    @property
    def spread(self) -> float:
        """max − min of the accuracies over seeds (0 for one seed)."""
        return self.high - self.low

    @property
    def near_chance(self) -> bool:
        """The mean accuracy is :func:`near_chance`."""
        return near_chance(self.mean, self.chance)

    @property
    def every_seed_near_chance(self) -> bool:
        """Every seed's accuracy (the highest too) is :func:`near_chance`."""
        return near_chance(self.high, self.chance)

    @property
    def every_seed_learnt(self) -> bool:
        """Every seed's accuracy (the lowest too) is at least :data:`LEARNT`."""
        return self.low >= LEARNT

    @property
    def learnt_task(self) -> bool:
        """Mean accuracy >= :data:`LEARNT`."""
        return self.mean >= LEARNT


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summarise(runs: Iterable[Run], step_limit: int, rates: Iterable[float] | None = None) -> tuple[Cell, ...]:
    """Group runs by (task, model, T, pairs, width), in the order first met, choose each group's rate, make
    :class:`Cell` s.

    >>> r = Run("order", "attention", 8, 0, 1e-2, 0.5, 0.6, 0.7, 0.5, 900, 16, 10, False, None, 0.1, 1.0, 1.0)
    >>> cell, = summarise((r, r), step_limit=10)
    >>> cell.mean, cell.lr, cell.seeds, cell.learnt
    (0.5, 0.01, (0,), 0)

    Args:
        runs: finished runs, any tasks, models, lengths, rates and seeds.
        step_limit: the most steps a run could take (``TrainSettings.steps``).
        rates: the rates planned for every cell (None: the rates met in each cell's runs).
    """
    groups: dict[tuple[str, str, int, int | None, int], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.task, run.model, run.T, run.pairs, run.width), []).append(run)
    cells = []
    for (task, model, T, pairs, width), group in groups.items():
        choice = choose_rate(group, rates)
        if choice is None:
            continue
        lr, scores = choice
        complete = set(_complete_seeds(group, rates))
        chosen: dict[int, Run] = {}
        for run in group:
            if run.lr == lr and run.seed in complete:
                chosen.setdefault(run.seed, run)
        picked = [chosen[seed] for seed in sorted(chosen)]
        accuracies = tuple(r.accuracy for r in picked)
        cells.append(Cell(task=task, model=model, T=T, lr=lr, rates=scores, seeds=tuple(r.seed for r in picked),
                          accuracies=accuracies, mean=statistics.fmean(accuracies), low=min(accuracies),
                          high=max(accuracies), chance=picked[0].chance, params=picked[0].params,
                          learnt=sum(r.learnt for r in picked), step_limit=step_limit,
                          spectral_radii=tuple(r.spectral_radius for r in picked),
                          reaches=tuple(r.reach for r in picked),
                          spectral_radius=_median(r.spectral_radius for r in picked),
                          reach=_median(r.reach for r in picked), pairs=pairs, width=width,
                          state_bytes=max((r.state_bytes for r in picked if r.state_bytes is not None),
                                          default=None)))
    return tuple(cells)
