"""A check by value of a traced path matrix: perturb the traced sources and see which outputs move (issue 35, item 3).

The path tracer (:mod:`seqlab.measure.path_tracer`) sees only what the dispatcher sees. Code it never sees — NumPy or
C inside a ``torch.autograd.Function``, values taken through Python (``.tolist()``) and back, C code writing raw
memory — makes a dependence it cannot follow (it reads that result as a constant); and a rule can over-state one (a
structural path through an exact cancellation, e / e for an attention row with one open key written by hand). So
after the trace the layer runs again with x_s moved along a random direction v_s (every batch row and feature of
position s), in float64, and for each output position j the movement

    m[s, j] = max |y_j(x + h·v_s) − y_j(x)| / h       (over y_j's batch rows and features; h = eps^(1/3)·(1 + max|x|))

is compared with what the trace says, source by source:

* **missed** — the trace calls (s, j) unreachable, but y_j moves by more than :data:`MOVES` times the source's
  largest movement (64 eps of float32: above the rounding of a float32 kernel inside a float64 model). A dependence
  outside the trace: the matrices become a named bound. Finite differences see every kind of code, including
  what autograd does not (a ``.detach()``, NumPy without a ``Function``).
* **unmoved** — the trace calls (s, j) reachable, y_j does not change by a single bit, *and* forward-mode AD
  (``torch.func.jvp``, run only for such sources) gives a derivative of exactly 0 (∂y_j/∂x_s · v_s = 0 for a random
  v_s only when the block is 0, with probability 1). Conclusion, stated on purpose: the dependence the trace shows
  does not exist *at this input*, so its figure is not a measurement there; it is named as a bound (the path exists
  in the op graph and may carry a signal at other inputs: an attention row with one open key, a dead ReLU, an exact
  cancellation). A dependence that is merely small is never called unmoved: a vanishing gradient (1e-30 after a long
  recurrence) either flips a last bit somewhere (rounding is chaotic) or is certified non-zero by forward mode. Forward
  mode costs about ten forward passes, so it is not run for a source whose signal visibly *fades* (its smallest
  movement at a reachable output under :data:`FADING` times its largest in float64, a coarser fraction in a coarser
  dtype, :func:`fading_fraction`, where a fading tangent underflows to exactly 0: a long recurrence), nor can it run for code
  without a forward formula (NumPy inside a ``Function``): there the bit-identical reachable pairs are listed as
  :attr:`PerturbationCheck.unresolved`, no verdict.

Cost, by design one batched pass where the layer allows it: when x has a batch dim, the base and every perturbed copy
run as rows of one batch (verified: the batch's base row must equal a plain run of x, else the layer mixes its batch
rows and each copy runs alone, as it does when the layer draws random numbers: every run replays the same generator
state, and a batch would draw other noise). The plain run is not repeated when the caller made one already in the
check's dtype (``ran``: the traced pass of :func:`~seqlab.measure.traced_pass.measure_pass`, fused kernels off as
here): the batch's base row is compared with it, and the plain run is taken only if they differ. At most
:data:`MAX_SOURCES` traced sources are checked (both ends and evenly spaced ones between;
:attr:`PerturbationCheck.sources` says which). The check runs in float64 when the layer runs in it (an
``nn.Module`` is called with float64 copies of its parameters and buffers through ``torch.func.functional_call``,
nothing of it changed; another callable is tried on float64 x), else in x's own dtype
(:attr:`PerturbationCheck.dtype`). Measured (one thread, CPU time, float32 layers, a 2-core machine under load 6):
for the two ends as sources, about 6x a float32 forward pass for an Elman RNN and 11x for self-attention, at T = 128,
d = 256 and at T = 1000, d = 512 (a float64 pass costs 1.5-2x a float32 one, and the batch holds 1 + S copies); for
every source at T = 128 (8 perturbed), 11x and 33x. Inside ``seqlab.profile`` (which hands the module over as a
callable, so the check runs in float32 there) with the traced pass's run standing in: about 2.7x an Elman forward,
3.7x a self-attention forward at T = 1000, d = 512 and 2.9x an all-MiniLM-L6-v2 forward at T = 512 (the batch of
1 + 2 rows; 5.3x, 4.7x and 4.1x with the plain run repeated and profile's op recorder entered in every run; medians of
two interleaved runs on a 2-core machine under load 9-15).

When a pair is missed, one more pass (:func:`suspects`) names the ops where values cross the dispatcher's border:
``.item()`` (``aten._local_scalar_dense``), tensors made from Python or NumPy data (``aten.lift_fresh``) and the first
ops that read a floating tensor no dispatched op of the pass produced (a NumPy result, memory written by C).

Shapes: x (..., T, d_in); y (..., T_out, d_out) per selected output; S checked sources; positions on dim -2.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from seqlab.i18n import N_
from seqlab.measure.modes import EngineMode
from seqlab.measure.switches import warnings_ignored

#: A position moves when its movement exceeds this fraction of the source's largest movement (64 eps of float32:
#: above the rounding of a float32 kernel inside a float64 model, below any dependence worth a path).
MOVES = 64 * torch.finfo(torch.float32).eps
#: Whether :func:`seqlab.measure.paths.measure_paths` runs the check by default.
CHECK = True
#: A source's signal fades when its smallest movement at a reachable output is under this fraction of its largest:
#: its outputs that do not move by a bit are then left unresolved rather than certified by forward mode.
FADING = 1e-8
#: In a check run in a dtype coarser than float64 the fraction is at least this many times the smallest movement the
#: dtype resolves, eps^(2/3) of the largest (:func:`fading_fraction`): in float32 a fading signal stops moving a bit
#: about 4.6 decades down, where 1e-8 is never reached, and its forward-mode tangent underflows to exactly 0 (below
#: 1e-45, some 200 steps down an LSTM at reach 0.6 per step), which would read as "unmoved".
RESOLVED = 100
#: The most traced sources one check perturbs (both ends, then evenly spaced ones).
MAX_SOURCES = 8
#: The most suspects named.
MAX_SUSPECTS = 3

Select = Callable[[Any], Sequence[Tensor]]
Pair = tuple[int, int]

#: The sentences of :meth:`PerturbationCheck.describe`, as message ids for a translation catalogue.
MESSAGES = {
    "check": N_("perturbation check ({route}, {dtype}): "),
    "missed": N_("{count} pair(s) the trace calls unreachable move (source {source} -> output {output} first): "
                 "a dependence outside the trace"),
    "unmoved": N_("{count} pair(s) the trace calls reachable have a derivative of exactly 0 here "
                  "(source {source} -> output {output} first)"),
    "suspects": N_("; suspected: {ops}"),
}
#: The routes a check takes (:attr:`PerturbationCheck.route` joins them with " + "), message ids as well.
ROUTES = (N_("finite differences, batched"), N_("finite differences"), N_("forward mode"), N_("not run"))


@dataclass(frozen=True)
class PerturbationCheck:
    """What perturbations of the traced sources say about one path matrix.

    >>> PerturbationCheck("finite differences, batched", "float64", (0,), (), (), (), ()).agrees
    True

    Attributes:
        route: how the movements were taken ("finite differences, batched" — one batch holding every perturbed
            copy —, "finite differences"; "+ forward mode" when unmoved pairs were certified), or "not run"
            (``reason`` says why; the figures then stand as the trace gave them).
        dtype: the dtype the check ran in ("float64" unless the layer cannot run in it).
        sources: the traced source positions that were perturbed (at most :data:`MAX_SOURCES`).
        missed: (source, output position) pairs the trace calls unreachable that move.
        unmoved: (source, output position) pairs the trace calls reachable whose derivative is exactly 0 here.
        unresolved: reachable pairs that did not move by a bit, where forward mode could not run to tell a zero
            derivative from one below float64's resolution (no verdict).
        suspects: ops named by :func:`suspects` when a pair is missed (op name and what it read).
        reason: why the check did not run (None when it ran).
    """

    route: str
    dtype: str
    sources: tuple[int, ...]
    missed: tuple[Pair, ...]
    unmoved: tuple[Pair, ...]
    unresolved: tuple[Pair, ...]
    suspects: tuple[str, ...]
    reason: str | None = None

    @property
    def agrees(self) -> bool:
        """True when no pair disagrees (also when the check did not run: nothing contradicts the trace)."""
        return not self.missed and not self.unmoved

    @property
    def disagreement(self) -> str | None:
        """The disagreement in English (None when the check agrees); :meth:`describe` for another language."""
        return self.describe()

    def describe(self, translate: Callable[[str], str] = str) -> str | None:
        """The disagreement as a sentence, its templates (:data:`MESSAGES`) passed through ``translate`` (a
        gettext function; identity by default), None when the check agrees.

        >>> PerturbationCheck("finite differences", "float64", (0,), ((0, 1),), (), (), ()).describe()
        'perturbation check (finite differences, float64): 1 pair(s) the trace calls unreachable move (source 0 -> output 1 first): a dependence outside the trace'
        """
        if self.agrees:
            return None
        parts = []
        for pairs, template in ((self.missed, MESSAGES["missed"]), (self.unmoved, MESSAGES["unmoved"])):
            if pairs:
                parts.append(translate(template).format(count=len(pairs), source=pairs[0][0], output=pairs[0][1]))
        route = " + ".join(translate(part) for part in self.route.split(" + "))  # each part a message id
        text = translate(MESSAGES["check"]).format(route=route, dtype=self.dtype) + "; ".join(parts)
        if self.suspects:
            text += translate(MESSAGES["suspects"]).format(ops=", ".join(self.suspects))
        return text


def checked_sources(sources: Sequence[int], most: int = MAX_SOURCES) -> tuple[int, ...]:
    """The traced sources a check perturbs: all of them up to ``most``, else both ends and evenly spaced ones.

    >>> checked_sources(range(3)), checked_sources(range(100), 4)
    ((0, 1, 2), (0, 33, 66, 99))
    """
    sources = tuple(sources)
    if len(sources) <= most:
        return sources
    picks = sorted({round(k * (len(sources) - 1) / (most - 1)) for k in range(most)})
    return tuple(sources[k] for k in picks)


def check_paths(layer: Callable[[Tensor], Any], x: Tensor, sources: Sequence[int], select: Select,
                reachable: Sequence[Sequence[Sequence[bool]]], undefined: Sequence[Sequence[int]],
                *, seed: int = 0, ran: Sequence[Tensor] | None = None) -> list[PerturbationCheck]:
    """Check a traced path matrix (one per selected output) by perturbing the traced sources.

    >>> rnn = torch.nn.RNN(3, 3)
    >>> check = check_paths(rnn, torch.randn(4, 3), (0, 3), lambda r: [r[0]],
    ...                     [[[True] * 4, [False, False, False, True]]], [()])[0]
    >>> check.route, check.dtype, check.missed, check.unmoved
    ('finite differences', 'float64', (), ())

    Args:
        layer, x, select: as for :func:`seqlab.measure.paths.measure_paths` (x: (..., T, d_in), positions on -2).
        sources: the traced input positions, in the order of ``reachable``'s rows.
        reachable: per selected output, per traced source, per output position: whether the trace has a path.
        undefined: per selected output, its NaN positions (not judged).
        seed: the seed of the random directions.
        ran: the selected outputs of a run of ``layer`` on x that already happened in x's own dtype, fused kernels
            off (the traced pass, :func:`~seqlab.measure.traced_pass.measure_pass`), or None. Where the check runs
            in that dtype and batches its copies, the batch's own x rows are compared with these instead of with
            one more plain run (the plain run is still taken when they differ, when the layer draws noise or when
            the copies run alone): the same verdicts, one forward pass fewer.

    Returns:
        One :class:`PerturbationCheck` per selected output.
    """
    # every run of the layer starts from the same generator state (a layer that draws — rrelu in training, a dropout
    # left on — draws the same noise in each), and the caller's generator is left as it was
    with torch.random.fork_rng(devices=[]):
        state = torch.get_rng_state()

        def replayed(function: Callable[[Tensor], Any]) -> Callable[[Tensor], Any]:
            def run(z: Tensor) -> Any:
                torch.set_rng_state(state)
                result = function(z)
                run.draws = run.draws or not torch.equal(torch.get_rng_state(), state)  # noise: no shared batch
                return result
            run.draws = False
            return run

        return _check(layer, x, tuple(sources), select, reachable, undefined, seed, replayed, ran)


def _check(layer, x: Tensor, sources: tuple[int, ...], select: Select, reachable, undefined, seed: int,
           replayed: Callable[[Callable[[Tensor], Any]], Callable[[Tensor], Any]],
           ran: Sequence[Tensor] | None = None) -> list[PerturbationCheck]:
    chosen = checked_sources(sources)
    rows = [sources.index(s) for s in chosen]
    if not x.is_floating_point():
        return [PerturbationCheck("not run", str(x.dtype).removeprefix("torch."), (), (), (), (), (),
                                  "x is not a floating tensor") for _ in reachable]
    failure = ""
    for dtype in dict.fromkeys((torch.float64, x.dtype)):
        function = replayed(_in_dtype(layer, dtype))
        base = x.detach().to(dtype, copy=True)
        known = tuple(ran) if ran is not None and dtype == x.dtype else None  # a run in this dtype, already made
        # (S, *x.shape), made once the layer has run in this dtype: a layer that refuses it costs no copies
        made = functools.cache(functools.partial(_directions, base, chosen, torch.Generator().manual_seed(seed)))
        try:
            route, movements, still = _movements(function, select, base, made, known)
        except Exception as error:  # noqa: BLE001 - a layer that does not run in this dtype: the next one
            failure = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:200]
            continue
        name = str(dtype).removeprefix("torch.")
        threshold = max(MOVES, 64 * torch.finfo(dtype).eps ** (2 / 3))  # above the differences' own rounding
        checks = []
        for k, (r, u) in enumerate(zip(reachable, undefined, strict=True)):
            trace = [r[a] for a in rows]
            missed, candidates, fading = _compare(movements[k], still[k], threshold, chosen, trace, u,
                                                  fading_fraction(dtype))
            checks.append((missed, candidates, fading))
        certified, route = _certify(function, select, base, made(), chosen, checks, route)
        return [PerturbationCheck(route, name, chosen, missed, unmoved, unresolved,
                                  tuple(suspects(replayed(layer), x)) if missed else ())
                for (missed, _, _), (unmoved, unresolved) in zip(checks, certified, strict=True)]
    return [PerturbationCheck("not run", str(x.dtype).removeprefix("torch."), (), (), (), (), (), failure)
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
    with warnings_ignored():
        yield


def _step(x: Tensor) -> float:
    """The finite-difference step: eps^(1/3) of x's dtype, times 1 + max |x| (6e-6 in float64, 5e-3 in float32)."""
    largest = float(x.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max()) if x.numel() else 0.0
    return torch.finfo(x.dtype).eps ** (1 / 3) * (1 + largest)


def _movements(function: Callable[[Tensor], Any], select: Select, x: Tensor, directions: Callable[[], Tensor],
               known: tuple[Tensor, ...] | None = None) -> tuple[str, list[Tensor], list[Tensor]]:
    """Per selected output, the (S, T_out) movements and where the output did not change by a bit (S, T_out), and
    the route. One batch holds the base and every copy when x has a batch dim and the layer keeps its batch rows
    apart; else each copy runs alone. ``directions`` makes the (S, *x.shape) directions, called once the layer has
    run in this dtype. ``known``: the outputs of a run on x made already (see :func:`check_paths`), which the batch's
    own x rows are compared with first; the plain base run happens only when it is needed. Raises when the layer
    cannot run."""
    from seqlab.measure.switches import reference_kernels

    def outputs(z: Tensor) -> tuple[Tensor, ...]:
        return tuple(t.detach() for t in select(function(z.clone())))  # a layer may write into x

    h = _step(x)
    with _quiet(), reference_kernels(), torch.no_grad():
        plain: list[tuple[Tensor, ...]] = []

        def base() -> tuple[Tensor, ...]:
            """The plain run of x, once (raises for a layer that cannot run in this dtype: the caller tries the
            next one)."""
            if not plain:
                plain.append(outputs(x))
            return plain[0]

        if known is not None and not _batchable(x, known):
            known = None
        reference = known if known is not None else base()
        moved_inputs = x + h * directions()  # (S, *x.shape)
        route, changes = "finite differences", None
        # a layer that draws noise draws other noise for a batch of copies: each copy then runs alone
        if _batchable(x, reference) and not getattr(function, "draws", False):
            # with a known run, the batch is the first run of this check: whether the layer draws shows only now
            changes = _batched(outputs, x, moved_inputs, (reference,) if known is None else (known, base),
                               (lambda: getattr(function, "draws", False)) if known is not None else (lambda: False))
            # (S, *y.shape) per output
            route = "finite differences, batched"
        if changes is None:
            route = "finite differences"
            runs = [outputs(z) for z in moved_inputs]
            changes = [torch.stack([run[k] for run in runs]) - b for k, b in enumerate(base())]
    movements = [_per_position(c / h) for c in changes]
    still = [_per_position((c != 0) & ~c.isnan()) == 0 for c in changes]  # NaN - NaN: not judged
    return route, movements, still


def _batchable(x: Tensor, ys: Sequence[Tensor]) -> bool:
    """Whether x has a batch dim (dim 0) that every output keeps."""
    return x.dim() >= 3 and all(y.dim() >= 3 and y.shape[0] == x.shape[0] for y in ys)


def _batched(outputs, x: Tensor, moved_inputs: Tensor,
             bases: Sequence[tuple[Tensor, ...] | Callable[[], tuple[Tensor, ...]]],
             draws: Callable[[], bool] = lambda: False) -> list[Tensor] | None:
    """Every perturbed copy as rows of one batch with x itself: each copy's change against the batch's own x rows,
    (S, *y.shape) per output (exact differences: no re-rounding against the base), or None when the layer's
    batch rows do not keep apart (the batch's own x rows differ from a run of x alone beyond rounding), it draws
    noise (``draws()`` after the batch ran) or it fails.

    ``bases``: runs of x alone to compare the batch's own rows with, tried in order (a callable is run only when
    reached): the batch is accepted when its rows agree with one of them.
    """
    B, S = x.shape[0], moved_inputs.shape[0]
    try:
        together = outputs(torch.cat([x, moved_inputs.reshape(S * B, *x.shape[1:])]))
    except Exception:  # noqa: BLE001 - a layer with a fixed batch size
        return None
    if draws():
        return None
    for base in bases:
        result = _apart(together, base() if callable(base) else base, B, S)
        if result is not None:
            return result
    return None


def _apart(together: tuple[Tensor, ...], base: tuple[Tensor, ...], B: int, S: int) -> list[Tensor] | None:
    """The copies' changes (S, *y.shape) per output when the batch's own x rows equal ``base`` up to rounding,
    else None (a layer mixing its batch rows, or a batch of another size)."""
    result = []
    for y, b in zip(together, base, strict=True):
        if y.shape[0] != (S + 1) * B:
            return None
        own = y[:B]
        if own.shape != b.shape:
            return None
        scale = float(b.abs().nan_to_num(posinf=0.0, neginf=0.0).max()) if b.numel() else 0.0
        # a batched kernel may round otherwise than a plain one (1000 eps); a layer mixing its batch rows moves
        # x's own rows by about h, far above that
        same = torch.isclose(own, b, rtol=0, atol=1000 * torch.finfo(b.dtype).eps * (1 + scale), equal_nan=True) \
            if b.is_floating_point() or b.is_complex() else own == b
        if not bool(same.all()):
            return None
        # each copy against the batch's own x rows: the same kernels, so an untouched element is bit-identical
        result.append(y[B:].reshape(S, *b.shape) - own)
    return result


def _per_position(t: Tensor) -> Tensor:
    """(S, ..., T_out, d) -> (S, T_out): the largest |value| over batch rows and features (a NaN stays NaN)."""
    t = (t if t.dtype == torch.bool else t.abs()).to(torch.float64).movedim(-2, 1)  # (S, T_out, ...)
    if not t.numel():
        return torch.zeros(t.shape[0], t.shape[1], dtype=torch.float64)
    return t.reshape(t.shape[0], t.shape[1], -1).amax(dim=-1)


def fading_fraction(dtype: torch.dtype) -> float:
    """The fraction of a source's largest movement under which its signal fades, in a check run in ``dtype``:
    :data:`FADING`, or :data:`RESOLVED` times the smallest movement the dtype resolves when that is larger.

    >>> fading_fraction(torch.float64), round(fading_fraction(torch.float32), 5)
    (1e-08, 0.00242)
    """
    return max(FADING, RESOLVED * torch.finfo(dtype).eps ** (2 / 3))


def _compare(movement: Tensor, still: Tensor, threshold: float, sources: Sequence[int],
             reachable: Sequence[Sequence[bool]], undefined: Sequence[int], fading_at: float = FADING
             ) -> tuple[tuple[Pair, ...], list[Pair], set[int]]:
    """Missed pairs (unreachable, moved above ``threshold`` times the source's largest movement), candidate unmoved
    pairs (reachable, not a bit changed), and the sources whose signal fades (the smallest movement of a reachable
    pair under ``fading_at`` times the largest, :func:`fading_fraction`: a still pair there may be a signal below the
    dtype's resolution),
    source by source; NaN positions are not judged."""
    missed, candidates, fading = [], [], set()
    skip = set(undefined)
    for a, row in enumerate(reachable):
        m = movement[a]
        finite = m[~m.isnan()]
        scale = float(finite.max()) if finite.numel() else 0.0
        moving = [float(m[j]) for j, reached in enumerate(row) if reached and j not in skip and float(m[j]) > 0]
        if moving and min(moving) < fading_at * max(moving):
            fading.add(sources[a])
        for j, reached in enumerate(row):
            if j in skip or bool(m[j].isnan()):
                continue
            if not reached and scale > 0 and float(m[j]) > threshold * scale:
                missed.append((sources[a], j))
            elif reached and bool(still[a, j]):
                candidates.append((sources[a], j))
    return tuple(missed), candidates, fading


def _certify(function, select: Select, x: Tensor, directions: Tensor, sources: Sequence[int],
             checks: list[tuple[tuple[Pair, ...], list[Pair], set[int]]], route: str
             ) -> tuple[list[tuple[tuple[Pair, ...], tuple[Pair, ...]]], str]:
    """Forward mode for the sources with candidate unmoved pairs only, and only where the source's signal does not
    fade (a fading source's still pairs are unresolved: certifying them would cost a forward-mode pass, about 10x a
    forward, for what is most likely a vanishing gradient): a pair is unmoved when its tangent is exactly 0; where
    forward mode cannot run, the candidates stay unresolved. Returns per output (unmoved, unresolved)."""
    fading = set().union(*(f for _, _, f in checks))
    checks = [(missed, [p for p in candidates if p[0] not in fading], [p for p in candidates if p[0] in fading])
              for missed, candidates, _ in checks]
    wanted = sorted({s for _, candidates, _ in checks for s, _ in candidates})
    if not wanted:
        return [((), tuple(left)) for _, _, left in checks], route
    from seqlab.measure.switches import reference_kernels

    def outputs(z: Tensor) -> tuple[Tensor, ...]:
        return tuple(select(function(z.clone())))

    tangents: dict[int, list[Tensor]] = {}
    with _quiet(), reference_kernels():
        try:
            for s in wanted:
                _, out = torch.func.jvp(outputs, (x,), (directions[list(sources).index(s)],))
                tangents[s] = [_per_position(t.detach()[None])[0] for t in out]
        except Exception:  # noqa: BLE001 - no forward-mode formula (NumPy inside a Function, C code)
            tangents = {}
    if not tangents:
        return [((), tuple(sorted(candidates + left))) for _, candidates, left in checks], route
    result = []
    for k, (_, candidates, left) in enumerate(checks):
        unmoved = tuple((s, j) for s, j in candidates if float(tangents[s][k][j]) == 0.0)
        result.append((unmoved, tuple(sorted(left))))  # a candidate with a tangent != 0 moves: it agrees
    return result, route + " + forward mode"


class _Witness(EngineMode):
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
