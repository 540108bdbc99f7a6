"""Four synthetic tasks: three isolating one claim of the lesson each (L3, L4, L10), and multi-query recall.

Every example of the lesson's tasks is a row of T token ids and one label; the model reads the row and
answers at its last position. The ``mqar`` task asks at several positions: its labels are a row of T
entries, :data:`IGNORE` where nothing is asked (:attr:`TaskSpec.per_position`). Data come from a
seeded ``torch.Generator``, so the same seed gives the same batches.

* ``recall`` (L3, L4): position 1 holds one of :data:`KEYS` key tokens, positions 2..T-1 hold
  distractors and position T a query mark "?"; the label is the key. The key must travel T-1
  positions: through T-1 products by W_hh in a recurrence, through one weight alpha_T1 in attention.
  Keys and distractors are disjoint, so attention can find the key by its content alone, without
  knowing where it is. The fixed mark gives attention's readout the same query row in every example
  (with a random distractor there instead, about one seed in eight stalls with a key class that the
  query never learns to pick out). Chance 1/8.
* ``order`` (L10): two marked tokens A and B sit at two different positions among 1..T-1, the rest
  are distractors; the label says whether A comes before B. Swapping A and B gives the same *set*
  of rows, so attention without positional encoding cannot do better than chance (1/2). The test
  set is built in such swapped twins. The last position never holds a marker, so the query row of
  the readout is a distractor in every example.
* ``position`` (L10, the concatenated MLP): a word W is present (label 1) or absent (label 0).
  In training W only sits in the first half, positions 1..T//2; in the test it sits in the second
  half, positions T//2+1..T-1 (never the last, whose row is the readout's query). A model that
  shares its weights over positions can carry what it learnt to the new positions; a model with
  one weight block per position has never trained the blocks of the test positions. A recurrence
  read at position T meets a later word at a *shorter distance* from the readout than any it was
  trained on, so for it the test is one of generalising over distances.

* ``mqar`` (multi-query associative recall, Arora et al. 2023, "Zoology", §3): ``pairs`` distinct keys,
  each followed by its value (values drawn with repetition), fill positions 1..2·pairs
  (k_1 v_1 k_2 v_2 ...); then every key is asked once more, in a random order, at ``pairs`` random
  positions among 2·pairs+1..T, a filler token elsewhere. At each query position the answer is the value
  that followed that key; accuracy counts the queried positions only. The mapping is new in every
  example, so nothing can be learnt by heart: the model must keep the pairs it has read, and a state of
  fixed size holds only so many of them. Needs T >= 2·pairs + pairs. Chance 1/:data:`MQAR_VALUES`.

Token ids (V = vocabulary size): recall keys 0..7, distractors 8..23, mark 24 (V = 25); order A = 0,
B = 1, distractors 2..17 (V = 18); position W = 0, distractors 1..16 (V = 17); mqar keys 0..15, values
16..31 (label = value id - 16), filler 32 (V = 33).

Shape letters: N examples, T positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_

__all__ = ["DISTRACTORS", "IGNORE", "KEYS", "MQAR_FILLER", "MQAR_KEYS", "MQAR_VALUES", "QUERY_MARK", "SPLITS",
           "TASKS", "TaskSpec", "check_pairs", "make_batch", "min_length", "training_positions",
           "evaluation_positions"]

#: Key tokens of the recall task (its classes).
KEYS = 8
#: Distractor tokens of every task.
DISTRACTORS = 16
#: The recall task's query mark, the last token of every example.
QUERY_MARK = KEYS + DISTRACTORS
SPLITS = ("train", "test")
#: The mqar task's key tokens (ids 0..15), its value tokens (16..31: the classes) and its filler (32).
MQAR_KEYS = 16
MQAR_VALUES = 16
MQAR_FILLER = MQAR_KEYS + MQAR_VALUES
#: The label of a position where nothing is asked (``torch.nn.functional.cross_entropy``'s ignore_index).
IGNORE = -100


@dataclass(frozen=True)
class TaskSpec:
    """What a task is: its name, the claims it tests, vocabulary, classes and the least T it needs.

    >>> TASKS["recall"].chance, TASKS["recall"].vocab, TASKS["order"].vocab, TASKS["mqar"].chance
    (0.125, 25, 18, 0.0625)

    ``per_position``: the labels are (N, T), answered at every position that is not :data:`IGNORE`
    (mqar); otherwise (N,), answered at the last position. ``min_length`` is the least T at one pair
    (mqar needs 3 per pair: :func:`min_length`).
    """

    name: str
    claims: str
    vocab: int
    classes: int
    min_length: int
    per_position: bool = False

    @property
    def chance(self) -> float:
        """Accuracy of guessing: 1 / classes (the test sets are balanced)."""
        return 1.0 / self.classes


TASKS = {
    "recall": TaskSpec("recall", "L3, L4", KEYS + DISTRACTORS + 1, KEYS, 2),
    "order": TaskSpec("order", "L10", 2 + DISTRACTORS, 2, 3),
    "position": TaskSpec("position", "L10", 1 + DISTRACTORS, 2, 4),
    "mqar": TaskSpec("mqar", "Zoology §3", MQAR_KEYS + MQAR_VALUES + 1, MQAR_VALUES, 3, per_position=True),
}


def check_pairs(pairs: object) -> int:
    """``pairs`` if it is an integer in [1, :data:`MQAR_KEYS`] (the keys of one example are distinct).

    >>> check_pairs(8)
    8

    Raises:
        SeqlabError: not an integer in that range (parameter ``"pairs"``).
    """
    return require_positive_int("pairs", pairs, MQAR_KEYS)


def min_length(task: str, pairs: int | None = None) -> int:
    """The least T ``task`` accepts: its ``min_length``, or for mqar 3·pairs (pairs, then one query each).

    >>> min_length("recall"), min_length("mqar", 8)
    (2, 24)

    Raises:
        SeqlabError: unknown task, or mqar without a valid number of pairs.
    """
    if task not in TASKS:
        raise SeqlabError(N_("task must be one of {tasks}; received {task!r}"), tasks=', '.join(TASKS), task=task,
                          parameter="tasks")
    if task == "mqar":
        return 3 * check_pairs(pairs)
    return TASKS[task].min_length


def training_positions(T: int) -> range:
    """0-based positions the word may take in the position task's training set: the first half.

    >>> training_positions(16)
    range(0, 8)
    """
    return range(0, T // 2)


def evaluation_positions(T: int) -> range:
    """0-based positions the word takes in the position task's test set: the second half but the last.

    >>> evaluation_positions(16)
    range(8, 15)
    """
    return range(T // 2, T - 1)


def _labels(n: int, classes: int, generator: torch.Generator) -> Tensor:
    return torch.randint(0, classes, (n,), generator=generator)  # (N,)


def _distractors(n: int, T: int, first: int, generator: torch.Generator) -> Tensor:
    return torch.randint(first, first + DISTRACTORS, (n, T), generator=generator)  # (N, T)


def _recall(n: int, T: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    tokens = _distractors(n, T, KEYS, generator)  # (N, T)
    labels = _labels(n, KEYS, generator)  # (N,)
    tokens[:, 0] = labels  # the key at position 1
    tokens[:, -1] = QUERY_MARK  # "?" at position T
    return tokens, labels


def _order(n: int, T: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    tokens = _distractors(n, T, 2, generator)  # (N, T)
    first = torch.randint(0, T - 1, (n,), generator=generator)  # (N,) in [0, T-2]
    offset = torch.randint(1, T - 1, (n,), generator=generator)  # (N,) in [1, T-2]
    second = (first + offset) % (T - 1)  # (N,): another position in [0, T-2]
    labels = _labels(n, 2, generator)  # (N,): 1 = A before B
    early, late = torch.minimum(first, second), torch.maximum(first, second)
    rows = torch.arange(n)
    tokens[rows, early] = 1 - labels  # A (0) first when the label is 1
    tokens[rows, late] = labels
    return tokens, labels


def _swapped_twins(tokens: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """Each example followed by its twin with A and B exchanged (same set of tokens, other label)."""
    twin = tokens.clone()  # (N, T)
    twin[tokens == 0], twin[tokens == 1] = 1, 0
    both = torch.stack((tokens, twin), dim=1).flatten(0, 1)  # (2N, T): example, twin, example, ...
    return both, torch.stack((labels, 1 - labels), dim=1).flatten()  # (2N,)


def _position(n: int, T: int, generator: torch.Generator, split: str) -> tuple[Tensor, Tensor]:
    tokens = _distractors(n, T, 1, generator)  # (N, T)
    labels = _labels(n, 2, generator)  # (N,): 1 = the word is present
    where = training_positions(T) if split == "train" else evaluation_positions(T)
    position = torch.randint(where.start, where.stop, (n,), generator=generator)  # (N,)
    rows = torch.arange(n)
    tokens[rows, position] = torch.where(labels == 1, 0, tokens[rows, position])
    return tokens, labels


def _mqar(n: int, T: int, pairs: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    P = pairs
    keys = torch.rand(n, MQAR_KEYS, generator=generator).argsort(dim=1)[:, :P]  # (N, P): distinct keys
    values = torch.randint(0, MQAR_VALUES, (n, P), generator=generator)  # (N, P): value classes
    tokens = torch.full((n, T), MQAR_FILLER, dtype=torch.int64)  # (N, T)
    tokens[:, 0:2 * P:2] = keys  # k_1 .. k_P at positions 1, 3, ...
    tokens[:, 1:2 * P:2] = values + MQAR_KEYS  # v_i right after k_i
    order = torch.rand(n, P, generator=generator).argsort(dim=1)  # (N, P): which pair each query asks
    slots = torch.rand(n, T - 2 * P, generator=generator).argsort(dim=1)[:, :P].sort(dim=1).values + 2 * P  # (N, P)
    rows = torch.arange(n)[:, None]  # (N, 1)
    tokens[rows, slots] = keys.gather(1, order)  # the keys again, at the query positions
    labels = torch.full((n, T), IGNORE, dtype=torch.int64)  # (N, T): nothing asked
    labels[rows, slots] = values.gather(1, order)  # the value that followed each queried key
    return tokens, labels


def make_batch(task: str, n: int, T: int, generator: torch.Generator,
               split: str = "train", pairs: int | None = None) -> tuple[Tensor, Tensor]:
    """``n`` examples of ``task`` at length ``T``: token ids (N, T) int64 and labels int64, (N,) or (N, T).

    >>> tokens, labels = make_batch("recall", 4, 6, torch.Generator().manual_seed(0))
    >>> tokens.shape, bool((tokens[:, 0] == labels).all()), bool((tokens[:, 1:] >= KEYS).all())
    (torch.Size([4, 6]), True, True)
    >>> tokens[:, -1].tolist()  # the query mark
    [24, 24, 24, 24]
    >>> tokens, labels = make_batch("mqar", 1, 8, torch.Generator().manual_seed(0), pairs=2)
    >>> tokens.shape, labels.shape, int((labels != IGNORE).sum())  # two pairs, two queries
    (torch.Size([1, 8]), torch.Size([1, 8]), 2)

    Args:
        task: one of :data:`TASKS`.
        n: number of examples (>= 1; even for the order task's test split, which comes in twins).
        T: positions per example, at least the task's ``min_length``.
        generator: the seeded source of every random choice.
        split: ``"train"`` or ``"test"``; only the order task (twins) and the position task (the
            second half) build their test sets differently.
        pairs: key-value pairs of an mqar example (required for mqar, ignored otherwise).

    Returns:
        tokens (N, T); labels (N,) for the lesson's tasks, (N, T) for mqar (:data:`IGNORE` where
        nothing is asked).

    Raises:
        SeqlabError: unknown task or split, n, T or pairs out of range.
    """
    if task not in TASKS:
        raise SeqlabError(N_("task must be one of {tasks}; received {task!r}"), tasks=', '.join(TASKS), task=task,
                          parameter="tasks")
    if split not in SPLITS:
        raise SeqlabError(N_("split must be one of {splits}; received {split!r}"), splits=', '.join(SPLITS),
                          split=split)
    require_positive_int("n", n)
    least = min_length(task, pairs)
    if isinstance(T, bool) or not isinstance(T, int) or T < least:
        extra = Message(N_(" at {pairs} pairs"), pairs=pairs) if task == "mqar" else ""
        raise SeqlabError(N_("the {task} task needs T >= {least}{extra}, received {T!r}"), task=task, least=least,
                          extra=extra, T=T, parameter="T")
    if task == "mqar":
        return _mqar(n, T, pairs, generator)
    if task == "recall":
        return _recall(n, T, generator)
    if task == "position":
        return _position(n, T, generator, split)
    if split == "train":
        return _order(n, T, generator)
    if n % 2:
        raise SeqlabError(N_("the order task's test set comes in swapped twins and needs an even n, received {n}"), n=n)
    return _swapped_twins(*_order(n // 2, T, generator))
