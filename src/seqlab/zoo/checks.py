"""Two routes to one figure, for the tiny families of :mod:`seqlab.zoo.shrink` (issue 35; issue 40's tests).

* paths: :func:`~seqlab.measure.paths.measure_paths` (all sources) against the float64 Jacobian judged by seqlab's one
  rule (:func:`~seqlab.measure.dependence.judge`) at the dtype the model computes in (:func:`compare_paths`);
* work: :func:`~seqlab.measure.work.count_multiplications` against PyTorch's ``FlopCounterMode`` (its FLOPs / 2, per
  op) on the same call (:func:`compare_work`);
* sources alone: each source traced alone against its row of the all-sources trace (:func:`sources_alone`).

Shapes: x (1, T, d) float64; a path matrix is sources x T_out.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.zoo.shrink import _line, _on_a_copy, computed_dtype

def jacobian_blocks(layer: Callable[[Tensor], Tensor], x: Tensor) -> list[list[float]]:
    """||dy_j/dx_i||_F (T_out x T) of the exact Jacobian of ``layer`` at x (float64), as hf_mixers takes it.

    The layer reads a copy of x: a model may write into inputs_embeds in place (CTRL scales it by sqrt(d), GIT adds
    its positions), which autograd refuses on the Jacobian's leaf input."""
    layer = _on_a_copy(layer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # one vmapped backward over the rows; a layer that vmap cannot batch takes one backward per row
            J = torch.autograd.functional.jacobian(layer, x, vectorize=True)
        except RuntimeError:
            J = torch.autograd.functional.jacobian(layer, x)
        if bool(J.isnan().any()):  # a NaN row poisons every row's backward: forward mode keeps it in place
            J = torch.autograd.functional.jacobian(layer, x, vectorize=True, strategy="forward-mode")
    T_out, T, d = J.shape[1], x.shape[1], x.shape[2]
    return J.reshape(T_out, -1, T, d).square().sum(dim=(1, 3)).sqrt().tolist()


@dataclass(frozen=True)
class PathVerdict:
    """The path matrix of the engine against the Jacobian's: ``equal``, ``bound`` (not exact, fallbacks named, and
    over-stating only), or ``mismatch`` (``extra``: pairs the paths connect and the Jacobian does not; ``missing``:
    the reverse; each (source i, output j))."""

    verdict: str
    exact: bool
    fallbacks: dict
    extra: tuple[tuple[int, int], ...]
    missing: tuple[tuple[int, int], ...]
    rounding: tuple[tuple[int, int], ...]  # extra pairs whose Jacobian block is non-zero but inside the rounding band
    weak: tuple[tuple[int, int], ...]  # pairs between float64's band and the computed dtype's: undecided
    computed: str
    derived: dict
    decomposed: dict
    undefined: tuple[int, ...]


def compare_paths(layer: Callable[[Tensor], Tensor], x: Tensor, computed: torch.dtype | None = None) -> PathVerdict:
    """measure_paths (all sources) against the float64 Jacobian judged by seqlab's one rule (``judge``).

    The Jacobian's blocks are judged twice: at float64's rounding band and at the band of the dtype the layer
    computes in on its data path (:func:`computed_dtype`: Llama's RMSNorm and eager softmax run in float32 inside a
    float64 model). A block between the two bands is undecided (``weak``): either answer of the paths agrees with
    it. Every other pair must agree: ``extra`` (the paths connect it, the Jacobian is below both bands; ``rounding``
    those of them whose block is not exactly 0) and ``missing`` (the reverse).
    """
    from seqlab.measure.dependence import judge
    from seqlab.measure.paths import measure_paths

    computed = computed or computed_dtype(layer, x)
    blocks = jacobian_blocks(layer, x)
    strict, loose = judge(blocks, x.dtype), judge(blocks, computed)
    traced = measure_paths(layer, x.clone())
    rows = dict(zip(traced.sources, traced.products, strict=True))
    T_out = len(strict.depends)
    extra, missing, rounding, weak = [], [], [], []
    for j in range(T_out):
        for i in sorted(rows):
            path, high, low = rows[i][j] is not None, strict.depends[j][i], loose.depends[j][i]
            if high != low:
                weak.append((i, j))
            elif path and not high and j not in strict.undefined_rows:
                extra.append((i, j))
                if strict.structural[j][i]:
                    rounding.append((i, j))
            elif high and not path:
                missing.append((i, j))
    if not extra and not missing:
        verdict = "equal"
    elif not traced.exact and not missing:
        verdict = "bound"
    else:
        verdict = "mismatch"
    return PathVerdict(verdict, traced.exact, dict(traced.fallbacks), tuple(extra), tuple(missing), tuple(rounding),
                       tuple(weak), str(computed).removeprefix("torch."), dict(traced.derived),
                       dict(traced.decomposed), tuple(traced.undefined))


@dataclass(frozen=True)
class WorkVerdict:
    """count_multiplications against ``FlopCounterMode`` (its total / 2, per op): ``equal`` (same total),
    ``equal+beyond`` (every op PyTorch has a formula for agrees; seqlab adds ops beyond PyTorch's formulas, named in
    ``beyond``), ``differs`` (an op of PyTorch's registry disagrees: ``differing``), with ``unaccounted`` the ops
    seqlab names as not counted."""

    verdict: str
    seqlab: int
    pytorch: int
    beyond: dict
    differing: dict
    unaccounted: dict
    no_grad_error: str | None = None


def compare_work(layer: Callable[[Tensor], Tensor], x: Tensor, *, no_grad: bool = True) -> WorkVerdict:
    """Multiplications counted by seqlab against PyTorch's FlopCounterMode on the same call, both in grad mode (the
    mode a plain call runs in); then seqlab's count again under ``no_grad`` (how ``seqlab.profile`` runs a model),
    whose error, if any, is ``no_grad_error`` (PyTorch's own FlopCounterMode fails the same way there where a
    module's input is a view made under no_grad: its ModuleTracker hooks want a grad_fn)."""
    from torch.utils.flop_counter import FlopCounterMode

    from seqlab.measure.work import count_multiplications

    with torch.enable_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counted = count_multiplications(layer, x.clone())
        mode = FlopCounterMode(display=False)
        with mode:
            layer(x.clone())
    no_grad_error = None
    with torch.no_grad(), warnings.catch_warnings():
        if not no_grad:
            return _work_verdict(counted, mode, None)
        warnings.simplefilter("ignore")
        try:
            again = count_multiplications(layer, x.clone())
            if again.multiplications != counted.multiplications:
                no_grad_error = f"counts {again.multiplications} under no_grad, {counted.multiplications} with grad"
        except Exception as error:  # noqa: BLE001 - recorded by kind
            no_grad_error = f"{type(error).__name__}: {_line(error)}"
    return _work_verdict(counted, mode, no_grad_error)


def _work_verdict(counted, mode, no_grad_error: str | None) -> WorkVerdict:
    """The verdict of seqlab's count against the FlopCounterMode's (see :class:`WorkVerdict`)."""
    theirs = {str(op): flops // 2 for op, flops in mode.get_flop_counts().get("Global", {}).items()}
    ours = dict(counted.by_op)
    differing = {op: (ours.get(op, 0), theirs.get(op, 0)) for op in set(ours) | set(theirs)
                 if op in theirs and ours.get(op, 0) != theirs[op]}
    beyond = {op: n for op, n in ours.items() if op not in theirs and n}
    total = mode.get_total_flops() // 2
    if differing:
        verdict = "differs"
    elif counted.multiplications == total:
        verdict = "equal"
    else:
        verdict = "equal+beyond"
    return WorkVerdict(verdict, counted.multiplications, total, beyond, differing, dict(counted.unaccounted),
                       no_grad_error)


def sources_alone(layer: Callable[[Tensor], Tensor], x: Tensor) -> dict[int, dict]:
    """Each source traced alone against its row of the all-sources trace (issue 35 item 2: what one source reaches
    must not depend on which other sources share the pass): source -> {"alone": (products, ops), "together": ...}
    for every source whose rows differ (empty: every source agrees)."""
    from seqlab.measure.paths import measure_paths

    together = measure_paths(layer, x.clone())
    differ = {}
    for i in range(x.shape[-2]):
        alone = measure_paths(layer, x.clone(), sources=[i])
        pair = (alone.products[0], alone.ops[0]), (together.row(i), together.row(i, "ops"))
        if pair[0] != pair[1]:
            differ[i] = {"alone": pair[0], "together": pair[1]}
    return differ
