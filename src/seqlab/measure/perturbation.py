"""A check by value of a traced path matrix: perturb each traced source and see which outputs move (issue 35, item 3).

The path tracer (:mod:`seqlab.measure.path_tracer`) sees only what the dispatcher sees. Code it never sees — NumPy or
C inside a ``torch.autograd.Function``, a custom kernel called on raw memory — makes a dependence it cannot follow
(it reads the op's result as a constant), and a rule can over-state one (a structural path through an exact
cancellation). So after the trace the layer runs once more with a random direction v_s on each traced source x_s
(every batch row and feature of position s), and for each output position j the movement

    m[s, j] = max |∂y_j/∂x_s · v_s|   (over y_j's batch rows and features)

is compared with what the trace says:

* **missed** — the trace calls (s, j) unreachable, but y_j moves by more than :data:`MOVES` times the source's
  largest movement (max over j of m[s, j]): a dependence outside the trace. The figures become a bound.
* **unmoved** — the trace calls (s, j) reachable, but the derivative is exactly 0 at this input, by forward-mode AD in
  exact arithmetic of zeros (a random v_s makes ∂y_j/∂x_s · v_s = 0 only when the block ∂y_j/∂x_s is 0, with
  probability 1). The dependence the trace shows does not exist at this input — a structural path through an
  exact cancellation, a dead unit, a saturated gate, an attention row whose one open key makes its weight 1.
  Conclusion, stated on purpose: the figure is then not a measurement of dependence *at this input*; it is named
  as a bound (the path exists in the op graph and may carry a signal at other inputs). A dependence that is merely
  small (a vanishing gradient, 1e-30) moves and is not flagged.

Routes, the first that runs: forward-mode AD (``torch.func.jvp``) of every traced source in one vectorised pass
(``torch.func.vmap`` over the directions); forward-mode AD source by source; finite differences (the layer run at
x + h·v_s, h = 2^-20 (1 + max |x|)), which sees every kind of code but cannot tell a zero derivative from a tiny one,
so it reports missed pairs only. The check runs in float64 when the layer runs in it (an ``nn.Module`` is called with
float64 copies of its parameters and buffers through ``torch.func.functional_call``, nothing of it changed; another
callable is tried on float64 x), else in x's own dtype; :attr:`PerturbationCheck.dtype` says which.

When a disagreement is found, one more pass (:func:`suspects`) names the ops where values cross the dispatcher's
border: ``.item()`` (``aten._local_scalar_dense``), tensors made from Python or NumPy data (``aten.lift_fresh``) and
the first ops that read a floating tensor no dispatched op of the pass produced (a NumPy result, or a tensor made
before the call).

Cost (benchmarks in the report of issue 35; CPU time, one thread): one vectorised forward-mode pass in float64 over
S sources, about 3–6 forward passes for S = 2, more when the layer cannot be vectorised (one pass per source).

Shapes: y (..., T_out, d_out) per selected output; sources S; positions on dim -2.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

#: A position moves when its movement exceeds this fraction of the source's largest movement (64 eps of float32:
#: above the rounding of a float32 kernel inside a float64 model, below any dependence worth a path).
MOVES = 64 * torch.finfo(torch.float32).eps
#: Whether :func:`seqlab.measure.paths.measure_paths` runs the check by default.
CHECK = True
#: The most suspects named.
MAX_SUSPECTS = 3

Select = Callable[[Any], Sequence[Tensor]]


@dataclass(frozen=True)
class PerturbationCheck:
    """What perturbations of the traced sources say about one path matrix.

    >>> PerturbationCheck("forward-mode, vectorised", "float64", (), (), ()).agrees
    True

    Attributes:
        route: how the movements were taken ("forward-mode, vectorised", "forward-mode", "finite differences"), or
            "not run" (``reason`` says why; the figures then stand as the trace gave them).
        dtype: the dtype the check ran in ("float64" unless the layer cannot run in it).
        missed: (source, output position) pairs the trace calls unreachable that move.
        unmoved: (source, output position) pairs the trace calls reachable whose derivative is exactly 0 here
            (forward-mode routes only).
        suspects: ops named by :func:`suspects` when there is a disagreement (op name and what it read).
        reason: why the check did not run (None when it ran).
    """

    route: str
    dtype: str
    missed: tuple[tuple[int, int], ...]
    unmoved: tuple[tuple[int, int], ...]
    suspects: tuple[str, ...]
    reason: str | None = None

    @property
    def agrees(self) -> bool:
        """True when no pair disagrees (also when the check did not run: nothing contradicts the trace)."""
        return not self.missed and not self.unmoved

    @property
    def disagreement(self) -> str | None:
        """One English sentence naming the disagreement (renderers translate it), None when the check agrees."""
        if self.agrees:
            return None
        parts = []
        if self.missed:
            s, j = self.missed[0]
            parts.append(f"{len(self.missed)} pair(s) the trace calls unreachable move (source {s} -> output {j} "
                         "first): a dependence outside the trace")
        if self.unmoved:
            s, j = self.unmoved[0]
            parts.append(f"{len(self.unmoved)} pair(s) the trace calls reachable have a derivative of exactly 0 here "
                         f"(source {s} -> output {j} first)")
        suspected = f"; suspected: {', '.join(self.suspects)}" if self.suspects else ""
        return f"perturbation check ({self.route}, {self.dtype}): " + "; ".join(parts) + suspected


def check_paths(layer: Callable[[Tensor], Any], x: Tensor, sources: Sequence[int], select: Select,
                reachable: Sequence[Sequence[Sequence[bool]]], undefined: Sequence[Sequence[int]],
                *, seed: int = 0) -> list[PerturbationCheck]:
    """Check a traced path matrix (one per selected output) by perturbing each source.

    >>> rnn = torch.nn.RNN(3, 3)
    >>> check = check_paths(rnn, torch.randn(4, 3), (0, 3), lambda r: [r[0]],
    ...                     [[[True] * 4, [False, False, False, True]]], [()])[0]
    >>> check.route, check.missed, check.unmoved
    ('forward-mode, vectorised', (), ())

    Args:
        layer, x, select: as for :func:`seqlab.measure.paths.measure_paths` (x: (..., T, d_in), positions on -2).
        sources: the traced input positions (S of them).
        reachable: per selected output, per source, per output position: whether the trace has a path.
        undefined: per selected output, its NaN positions (not judged).
        seed: the seed of the random directions.

    Returns:
        One :class:`PerturbationCheck` per selected output.
    """
    generator = torch.Generator().manual_seed(seed)
    attempts = []
    for dtype in (torch.float64, x.dtype) if x.is_floating_point() and x.dtype != torch.float64 else (x.dtype,):
        attempts.append(dtype)
    failure = "x is not a floating tensor"
    for dtype in attempts if x.is_floating_point() else ():
        function = _in_dtype(layer, dtype)
        base = x.detach().to(dtype)
        directions = _directions(base, sources, generator)  # (S, *x.shape)
        try:
            route, movements, differences = _movements(function, select, base, directions)
        except Exception as error:  # noqa: BLE001 - a layer that does not run in this dtype: the next one
            failure = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
            continue
        differences = differences or [None] * len(movements)
        threshold = MOVES if route.startswith("forward") and differences[0] is None else \
            max(MOVES, 64 * torch.finfo(dtype).eps / torch.finfo(dtype).eps ** (1 / 3))
        return [_judge(route, str(dtype).removeprefix("torch."), m, fd, threshold, sources, r, u, layer, x)
                for m, fd, r, u in zip(movements, differences, reachable, undefined, strict=True)]
    return [PerturbationCheck("not run", str(x.dtype).removeprefix("torch."), (), (), (), failure)
            for _ in reachable]


def _directions(x: Tensor, sources: Sequence[int], generator: torch.Generator) -> Tensor:
    """(S, *x.shape): a random direction on position sources[a] (every batch row and feature), 0 elsewhere."""
    directions = torch.zeros(len(sources), *x.shape, dtype=x.dtype)
    for a, s in enumerate(sources):
        directions[a, ..., s, :] = torch.randn(x[..., s, :].shape, generator=generator, dtype=torch.float64).to(x.dtype)
    return directions


def _in_dtype(layer: Callable[[Tensor], Any], dtype: torch.dtype) -> Callable[[Tensor], Any]:
    """``layer`` running in ``dtype``: a module with its floating parameters and buffers in that dtype, for the call
    only (``torch.func.functional_call``; the module is not changed); any other callable as it is."""
    if not isinstance(layer, torch.nn.Module):
        return layer
    state = {name: value.detach().to(dtype) if value.is_floating_point() else value
             for name, value in [*layer.named_parameters(), *layer.named_buffers()]}

    def call(x: Tensor) -> Any:
        return torch.func.functional_call(layer, state, (x,), strict=False)
    return call


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _step(x: Tensor) -> float:
    """The finite-difference step: eps^(1/3) of x's dtype, times 1 + max |x| (2^-17.3 in float64, 2^-7.7 in float32)."""
    return torch.finfo(x.dtype).eps ** (1 / 3) * (1 + (float(x.abs().max()) if x.numel() else 0.0))


def _movements(function: Callable[[Tensor], Any], select: Select, x: Tensor,
               directions: Tensor) -> tuple[str, list[Tensor], list[Tensor] | None]:
    """Per selected output: the route, the (S, T_out) movements by forward mode (or by finite differences when
    forward mode cannot run) and, when finite differences were taken, theirs. Raises when the layer cannot run.

    Forward mode sees what autograd sees: a value that leaves it (``.tolist()`` and back, ``.detach()``, NumPy on a
    tensor without a ``Function``) moves the output but not the tangent. One finite difference along the sum of the
    directions is compared with the sum of the tangents (forward mode is linear in the direction); where they differ,
    each source is taken by finite differences too.
    """
    from seqlab.measure.switches import reference_kernels

    def outputs(z: Tensor) -> tuple[Tensor, ...]:
        return tuple(select(function(z)))

    def differences(along: Tensor) -> list[Tensor]:
        """(S, ...) finite differences of each output along each direction of ``along``."""
        h = _step(x)
        moved = [outputs(x + h * v) for v in along]
        return [torch.stack([(m[k] - base[k]) / h for m in moved]) for k in range(len(base))]

    with _quiet(), reference_kernels(), torch.no_grad():
        base = outputs(x)  # raises for a layer that cannot run in this dtype (the caller tries the next one)
        tangents = None
        try:
            tangents, route = torch.func.vmap(lambda v: torch.func.jvp(outputs, (x,), (v,))[1])(directions), \
                "forward-mode, vectorised"
        except Exception:  # noqa: BLE001 - not vectorisable (data-dependent control flow, a custom Function)
            try:
                per_source = [torch.func.jvp(outputs, (x,), (v,))[1] for v in directions]
                tangents, route = [torch.stack([p[k] for p in per_source]) for k in range(len(base))], "forward-mode"
            except Exception:  # noqa: BLE001 - no forward-mode formula (NumPy inside an autograd.Function, C code)
                pass
        if tangents is None:
            return "finite differences", [_per_position(d) for d in differences(directions)], None
        combined = differences(directions.sum(dim=0, keepdim=True))
        if all(_same_movement(c[0], t.sum(dim=0)) for c, t in zip(combined, tangents, strict=True)):
            return route, [_per_position(t) for t in tangents], None
        return route + " and finite differences", [_per_position(t) for t in tangents], \
            [_per_position(d) for d in differences(directions)]


def _same_movement(difference: Tensor, tangent: Tensor) -> bool:
    """Whether a finite difference agrees with the tangent (to 1e-3 of the larger, NaN positions aside): forward
    mode has seen every dependence along that direction."""
    defined = ~(difference.isnan() | tangent.isnan())
    gap = (difference - tangent).abs()[defined]
    if not gap.numel():
        return True
    scale = max(float(difference.abs()[defined].max()), float(tangent.abs()[defined].max()))
    return float(gap.max()) <= 1e-3 * scale


def _per_position(tangent: Tensor) -> Tensor:
    """(S, ..., T_out, d) -> (S, T_out): the largest |movement| over batch rows and features (NaN kept)."""
    t = tangent.detach().abs().to(torch.float64).movedim(-2, 1)  # (S, T_out, ...)
    if not t.numel():
        return torch.zeros(t.shape[0], t.shape[1], dtype=torch.float64)
    return t.reshape(t.shape[0], t.shape[1], -1).amax(dim=-1)  # a NaN stays NaN


def _judge(route: str, dtype: str, movement: Tensor, difference: Tensor | None, threshold: float,
           sources: Sequence[int], reachable: Sequence[Sequence[bool]], undefined: Sequence[int], layer, x: Tensor) -> PerturbationCheck:
    """Compare movements with the trace's reachability, source by source: missed pairs from the finite differences
    when they were taken (they see every kind of code), else from the movements; unmoved pairs from forward mode
    only (exact zeros), and only where the finite differences (if taken) do not move either."""
    missed, unmoved = [], []
    skip = set(undefined)
    exact_zeros = route.startswith("forward-mode")
    moves = difference if difference is not None else movement
    for a, row in enumerate(reachable):
        m = moves[a]
        finite = m[~m.isnan()]
        scale = float(finite.max()) if finite.numel() else 0.0
        for j, reached in enumerate(row):
            if j in skip or bool(m[j].isnan()):
                continue
            if not reached and scale > 0 and float(m[j]) > threshold * scale:
                missed.append((sources[a], j))
            elif reached and exact_zeros and float(movement[a, j]) == 0.0 and \
                    (difference is None or float(m[j]) <= threshold * scale):
                unmoved.append((sources[a], j))
    found = tuple(suspects(layer, x)) if missed else ()
    return PerturbationCheck(route, dtype, tuple(missed), tuple(unmoved), found)


class _Witness(TorchDispatchMode):
    """Records the ops where values cross the dispatcher's border (see :func:`suspects`)."""

    def __init__(self, known: set[int]) -> None:
        super().__init__()
        self.made = set(known)
        self.found: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in ("_local_scalar_dense", "lift_fresh", "lift_fresh_copy"):
            self._note(f"aten.{name}")
        for t in _tensors([args, kwargs]):
            if t.is_floating_point() and not t.requires_grad and t.untyped_storage().data_ptr() not in self.made:
                self._note(f"aten.{name} (reads a {tuple(t.shape)} tensor no op of the pass made)")
                self.made.add(t.untyped_storage().data_ptr())
        out = func(*args, **kwargs)
        self.made.update(t.untyped_storage().data_ptr() for t in _tensors([out]))
        return out

    def _note(self, text: str) -> None:
        if text not in self.found and len(self.found) < MAX_SUSPECTS:
            self.found.append(text)


def _tensors(tree: Any) -> list[Tensor]:
    leaves = torch.utils._pytree.tree_leaves(tree)
    return [leaf for leaf in leaves if isinstance(leaf, Tensor)]


def suspects(layer: Callable[[Tensor], Any], x: Tensor) -> list[str]:
    """Ops of one more pass where values cross the dispatcher's border: ``.item()``, tensors made from Python or
    NumPy data, and the first ops reading a floating tensor that no dispatched op of the pass made and that is not
    x, a parameter (it requires grad) nor a buffer of ``layer`` (a module). At most :data:`MAX_SUSPECTS`, in the order met.

    >>> suspects(torch.nn.Linear(2, 2), torch.ones(1, 2))
    []
    """
    copy = x.detach().clone()
    known = {copy.untyped_storage().data_ptr()}
    if isinstance(layer, torch.nn.Module):
        known |= {t.untyped_storage().data_ptr() for t in [*layer.parameters(), *layer.buffers()]}
    witness = _Witness(known)
    from seqlab.measure.switches import reference_kernels
    with _quiet(), reference_kernels(), torch.no_grad(), witness:
        try:
            layer(copy)
        except Exception:  # noqa: BLE001 - naming suspects must never turn a result into an error
            pass
    return witness.found
