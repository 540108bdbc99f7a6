"""Which submodules of a network mix positions, measured on the inputs they really receive (L11).

Figure 1 lights the attention boxes as the only ones that mix positions; :mod:`seqlab.measure.mixing`
measures that flag for one block called on inputs made up for it. Inside a real network a submodule is
called on what the layers before it produced, with masks and keywords of its own, so here the network
runs once and forward pre-hooks record every chosen submodule's real call (:func:`record_inputs`). Each
submodule is then called again on its recorded call with one sequence input at a time varied, and
:func:`~seqlab.measure.mixing.dependency_matrix` measures whether output row j depends on input row
i ≠ j: Jacobian probes for float inputs, token replacement for integer ones (token ids, only into a
module that embeds them). The matrices of all of a submodule's sequence inputs are joined by their
largest entry and classified (per-row, causal, all-to-all, …) by :func:`~seqlab.measure.mixing.classify`.

The recording pass runs with the ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` fast path off
(:func:`~seqlab.measure.switches.fast_paths_off`, restored after): under ``no_grad`` that path packs a padded
batch into a nested tensor and hands the layers no mask, while the measuring passes (with gradients) never
take it; recorded without it, each layer's call is the padded tensor plus its ``src_key_padding_mask``,
the call the measurement repeats. A nested tensor that still reaches a submodule is not a sequence input.

Works on any ``torch.nn.Module`` called on batch-first sequences of one row (1, T, ...): a sequence input
of a submodule is a tensor of its call with batch 1 and T positions in dim 1, the network's own T.
Nothing here knows a model's names; choosing the submodules and naming their layers is the caller's.

Shapes: B = 1, T positions, T_out output positions of a submodule, d widths.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.measure.dependence import Dependence, judge
from seqlab.measure.switches import fast_paths_off
from seqlab.measure.mixing import (
    BAND,
    BLOCKS,
    DEFAULT_PROBES,
    NONE,
    PER_ROW,
    Band,
    Blocks,
    band_of,
    blocks_of,
    classify,
    dependency_matrix,
)


@dataclass(frozen=True)
class RecordedCall:
    """One submodule's call as the network made it: positional ``args`` and keyword ``kwargs``.

    Tensors are detached clones taken before the call, so later in-place work does not change them.
    """

    args: tuple
    kwargs: dict


@contextmanager
def record_inputs(model: torch.nn.Module, names: Sequence[str]) -> Iterator[dict[str, RecordedCall]]:
    """Record the call of each named submodule while the block runs; a submodule called twice keeps its first.

    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
    >>> with record_inputs(net, ["1"]) as calls:
    ...     _ = net(torch.zeros(1, 5, 3))
    >>> calls["1"].args[0].shape
    torch.Size([1, 5, 4])

    Args:
        model: the network; names: paths of its submodules, as in ``model.named_modules()``.

    Yields:
        name -> :class:`RecordedCall`, filled as the submodules are called; hooks removed on exit.

    Raises:
        SeqlabError: a name that is not a submodule of ``model``.
    """
    calls: dict[str, RecordedCall] = {}

    def keep(value: object) -> object:
        return value.detach().clone() if isinstance(value, Tensor) else value

    def hook_for(name: str):
        def hook(_module, args, kwargs):
            if name not in calls:
                calls[name] = RecordedCall(tuple(keep(a) for a in args), {k: keep(v) for k, v in kwargs.items()})
        return hook

    handles = [_submodule(model, name).register_forward_pre_hook(hook_for(name), with_kwargs=True)
               for name in names]
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def _submodule(model: torch.nn.Module, name: str) -> torch.nn.Module:
    try:
        return model.get_submodule(name)
    except AttributeError:
        raise SeqlabError(N_("{name!r} is not a submodule of {model_class}"), name=name,
                          model_class=type(model).__name__) from None


def _embeds(module: torch.nn.Module) -> bool:
    """The module is, or contains, an ``nn.Embedding``: integer inputs into it are token ids."""
    return any(isinstance(m, torch.nn.Embedding) for m in module.modules())


def _sequence_inputs(module: torch.nn.Module, call: RecordedCall, T: int) -> dict[str, tuple[int | str, Tensor]]:
    """label -> (slot, tensor) for the inputs that are sequences of the network's T positions: (1, T, ...).

    Float tensors are measured; integer ones only where the module embeds token ids. A slot is a positional
    index or a keyword; the label is the parameter's name in ``forward`` where it has one.
    """
    parameters = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    embeds = _embeds(module)
    found: dict[str, tuple[int | str, Tensor]] = {}
    for slot, value in [*enumerate(call.args), *call.kwargs.items()]:
        if not (isinstance(value, Tensor) and not value.is_nested and value.dim() >= 2 and value.shape[0] == 1
                and value.shape[1] == T):
            continue
        if value.is_floating_point() or embeds:
            label = slot if isinstance(slot, str) else (parameters[slot] if slot < len(parameters) else f"arg{slot}")
            found[label] = (slot, value)
    return found


def _block(module: torch.nn.Module, call: RecordedCall, slots: Mapping[str, int | str]):
    """``module`` as a function of its sequence inputs by label, everything else held as recorded."""
    def block(**measured: Tensor):
        positional, keywords = list(call.args), dict(call.kwargs)
        for label, tensor in measured.items():
            slot = slots[label]
            if isinstance(slot, str):
                keywords[slot] = tensor
            else:
                positional[slot] = tensor
        return module(*positional, **keywords)
    return block


def _vocabulary(module: torch.nn.Module, vocabulary: int | None) -> int:
    """Token ids an integer input of ``module`` can take: an embedding table's own size, else the caller's
    ``vocabulary``, else the size of the first table the module contains (the token table, by convention)."""
    if isinstance(module, torch.nn.Embedding):
        return module.num_embeddings
    if vocabulary is not None:
        return vocabulary
    return next(m.num_embeddings for m in module.modules() if isinstance(m, torch.nn.Embedding))


@dataclass(frozen=True)
class SubmoduleMixing:
    """Whether one submodule's output rows read other positions, measured on its recorded call.

    Attributes:
        name: the submodule's path in the network, e.g. ``"1.attention"``.
        kind: its class, e.g. ``"MultiheadAttention"``, ``"Linear"``, ``"LayerNorm"``.
        inputs: the sequence inputs measured, by parameter name, e.g. ``("query", "key", "value")``.
        method: how, the methods joined by ``+``: ``"jacobian-k"`` (k probes) or ``"token-replacement"``.
        strength: T_out rows of T floats, entry ``[j][i]`` the largest over ``inputs`` of the dependence of output
            row j on input row i (see :class:`~seqlab.measure.mixing.DependencyMatrix`); exactly 0.0 where
            row j does not read row i.
        dtype: the dtype the strengths were measured in, which sets the rounding band of the dependence rule.
    """

    name: str
    kind: str
    inputs: tuple[str, ...]
    method: str
    strength: tuple[tuple[float, ...], ...]
    dtype: str = "float64"

    @functools.cached_property
    def judged(self) -> Dependence:
        """The strengths judged once by the one dependence rule (:func:`seqlab.measure.dependence.judge`): above the
        block's rounding band; NaN rows undefined. Kept on the instance (the strengths never change)."""
        return judge(self.strength, getattr(torch, self.dtype))

    @functools.cached_property
    def pattern(self) -> str:
        """Over all measured inputs together, one of :data:`seqlab.measure.mixing.PATTERNS`, by :attr:`judged`
        (NaN rows left out)."""
        return classify(self.judged.depends, undefined=self.judged.undefined_rows)

    @property
    def band(self) -> Band | None:
        """The :class:`~seqlab.measure.mixing.Band` (width, extents) when :attr:`pattern` is ``"band"``, else None."""
        if self.pattern != BAND:
            return None
        return band_of(self.judged.depends, undefined=self.judged.undefined_rows)

    @property
    def blocks(self) -> Blocks | None:
        """The :class:`~seqlab.measure.mixing.Blocks` (their size b) when :attr:`pattern` is ``"blocks"``, else None."""
        if self.pattern != BLOCKS:
            return None
        return blocks_of(self.judged.depends, undefined=self.judged.undefined_rows)

    @property
    def mixes(self) -> bool:
        """Some output row depends on another position's input row."""
        return self.pattern not in (PER_ROW, NONE)

    @property
    def max_off_diagonal(self) -> float:
        """Largest strength of output row j on input row i ≠ j (exactly 0 for a per-row module)."""
        return max(v for j, row in enumerate(self.strength) for i, v in enumerate(row) if i != j)

    @property
    def min_off_diagonal(self) -> float:
        """Smallest strength of output row j on input row i ≠ j (> 0 when every pair is connected)."""
        return min(v for j, row in enumerate(self.strength) for i, v in enumerate(row) if i != j)

    @property
    def max_diagonal(self) -> float:
        """Largest strength of row j on row j, the scale of the two above."""
        return max(row[j] for j, row in enumerate(self.strength) if j < len(row))


def measure_recorded(module: torch.nn.Module, call: RecordedCall, T: int, *, name: str = "",
                     vocabulary: int | None = None, probes: int = DEFAULT_PROBES, seed: int = 0) -> SubmoduleMixing:
    """One submodule's dependency matrices on its recorded call, joined into one (T_out, T) strength.

    >>> x = torch.randn(1, 3, 2, dtype=torch.float64)
    >>> measure_recorded(torch.nn.Softmax(dim=1), RecordedCall((x,), {}), 3).pattern  # over positions
    'all-to-all'

    Args:
        module: the submodule, in eval mode; call: what it received (:func:`record_inputs`).
        T: the network's positions; a sequence input has shape (1, T, ...).
        name: its path, for the result and messages.
        vocabulary: token ids of integer inputs (see ``measure_submodules``).
        probes, seed: Jacobian probes per output row and their seed.

    Returns:
        A :class:`SubmoduleMixing`.

    Raises:
        SeqlabError: the call holds no sequence input of T positions, or its output is not batch-first.
    """
    sequences = _sequence_inputs(module, call, T)
    if not sequences:
        raise SeqlabError(N_("module {name} received no sequence input of {T} positions"), name=name, T=T)
    block = _block(module, call, {label: slot for label, (slot, _) in sequences.items()})
    inputs = {label: tensor for label, (_, tensor) in sequences.items()}
    matrices = [dependency_matrix(block, inputs, label, probes=probes, seed=seed,
                                  vocabulary=None if tensor.is_floating_point() else _vocabulary(module, vocabulary))
                for label, tensor in inputs.items()]
    strength = torch.tensor([m.strength for m in matrices], dtype=torch.float64).amax(dim=0)  # (T_out, T)
    return SubmoduleMixing(name=name, kind=type(module).__name__, inputs=tuple(inputs),
                           method="+".join(sorted({m.method for m in matrices})),
                           strength=tuple(tuple(float(v) for v in row) for row in strength), dtype=matrices[0].dtype)


def measure_submodules(model: torch.nn.Module, inputs: Tensor | Mapping[str, Tensor], *,
                       names: Sequence[str] | None = None, vocabulary: int | None = None,
                       probes: int = DEFAULT_PROBES, seed: int = 0) -> tuple[SubmoduleMixing, ...]:
    """Run ``model`` once on ``inputs``, then measure whether each submodule mixes positions on its real call.

    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Softmax(dim=1)).double().eval()
    >>> rows = measure_submodules(net, torch.randn(1, 3, 2, dtype=torch.float64))
    >>> [(r.name, r.kind, r.pattern) for r in rows]
    [('0', 'Linear', 'per-row'), ('1', 'Softmax', 'all-to-all')]

    Args:
        model: the network, in eval mode, called as ``model(inputs)`` (a tensor) or ``model(**inputs)``.
        inputs: one batch-first sequence (1, T, ...), T >= 2, or keyword -> such tensors; the first
            tensor sets T. Integer tensors are token ids.
        names: submodule paths to measure, in that order; None: every submodule the forward pass calls,
            in the network's order, but the dropouts (the identity in eval mode). A submodule whose weights
            are used without calling it (``nn.MultiheadAttention``'s ``out_proj``) is measured in its parent.
        vocabulary: token ids of an integer input into a module that contains an embedding table; None: the
            size of its first table. An ``nn.Embedding`` always uses its own size.
        probes: Jacobian probes per output row, int >= 1; seed: their seed (the same for every submodule).

    Returns:
        One :class:`SubmoduleMixing` per submodule.

    Raises:
        SeqlabError: the model in training mode, no tensor input or one not of shape (1, T, ...) with T >= 2,
            a name that is not a submodule or was not called, a submodule without a sequence input of T
            positions.
    """
    if model.training:
        raise SeqlabError(N_("{model_class} must be in eval mode (dropout changes rows between calls), received one "
                             "in training mode"), model_class=type(model).__name__)
    call = {} if isinstance(inputs, Tensor) else dict(inputs)
    first = inputs if isinstance(inputs, Tensor) else next(
        (value for value in call.values() if isinstance(value, Tensor)), None)
    if first is None or first.dim() < 2 or first.shape[0] != 1 or first.shape[1] < 2:
        got = tuple(first.shape) if first is not None else "no tensor"
        raise SeqlabError(N_("inputs must be batch-first with shape (1, T, ...) and T >= 2, received {got}"), got=got)
    T = first.shape[1]
    chosen = list(names) if names is not None else [
        name for name, module in model.named_modules() if name and not isinstance(module, torch.nn.Dropout)]
    with record_inputs(model, chosen) as calls, torch.no_grad(), fast_paths_off():
        if isinstance(inputs, Tensor):
            model(inputs)
        else:
            model(**call)
    if names is None:
        chosen = [name for name in chosen if name in calls]
    missing = [name for name in chosen if name not in calls]
    if missing:
        raise SeqlabError(N_("submodules {missing} were not called by the forward pass of {model_class}"),
                          missing=missing, model_class=type(model).__name__)
    return tuple(measure_recorded(model.get_submodule(name), calls[name], T, name=name, vocabulary=vocabulary,
                                  probes=probes, seed=seed) for name in chosen)
