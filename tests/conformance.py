"""seqlab's path engine and work counter against PyTorch's own op and module databases (issue 21, item 5).

A conformance suite that no one here wrote: every CPU float32 sample of every
``torch.testing._internal.common_methods_invocations.op_db`` entry (and every ``module_db`` entry, built in
eval mode from ``module_inputs_func``) whose input is a float tensor is run through
:func:`seqlab.measure.paths.measure_paths` at **element level**: each element of the sample's input is a
source position (the input flattened to (n, 1); the tracer keeps its distances as ``measure_paths`` chooses
unless ``level`` says otherwise), each element of each float output an output position (the
outputs flattened to (m_k, 1); a complex output is read through ``view_as_real``). A tensor-list input (``cat``,
``stack``) is one flat source of all its float tensors' elements. Other arguments stay fixed (constants).

Reference: the float64 Jacobian J (m x n) of the op w.r.t. that input, other arguments fixed, by
``torch.autograd.functional.jacobian``. An entry is a dependence when |J_ij| > 2**-149 (float32's least
subnormal: what the engine's float32 run cannot hold is 0 there); MISSED asks more, like with like: an entry above
seqlab's dependence band for float32, a change above 64 eps of the output element (a softmax weight of 1e-44 in
float64 is exactly 0 in the float32 run the engine traced, and cuts its path there). A complex output element is compared as one
element (the engine keeps one dependence per complex element): MISSED when either part's is, EXTRA when both are. A NaN entry is not evidence by itself: a
point-wise backward formula multiplies the one-hot cotangent's zeros by a NaN slope (``special.entr`` at
x < 0), so NaN fills pairs with no chain at all. Two kinds of mismatch, per (input element i, output element j):

* **MISSED** — the engine says no path, and |J_ij| > 2**-149 at the sample point, or J_ij is NaN there and
  y_j changes (both values finite) when x_i alone moves (the moves of EXTRA below). Always a bug.
* **EXTRA** — the engine gives a path and nothing witnesses one: J_ij is not a dependence at the sample
  point (NaN counts here), nor at any of :data:`RANDOM_POINTS` seeded random points of the same shape, nor
  does y_j change when x_i alone moves by +-b, +-10 b, +0.5 or to 0 (b = 10 (max|x| + 1); float64; a NaN
  that appears counts as a change). A structural engine may over-approximate where the derivative is 0 by coincidence (relu at
  negatives, ties of max, the zero slope of floor); the witnesses make those pairs count as dependences.
  For a *refused* op (no rule: every output depends on every input) EXTRA is expected: it is the
  stated bound, reported apart from the EXTRA of exact results (and counted against the sample point's
  Jacobian alone, without the witness search).

Output positions the engine lists as ``undefined`` (NaN in the float32 run) are left out of both
comparisons (the engine gives no path there by design, neither dependence nor independence).

Where the Jacobian cannot be had (no derivative formula, no float64 kernel, an op whose float64 run
differs from its float32 run under the same seed) the sample is judged by the perturbation alone:
MISSED = y_j changes (finitely, both values finite) when x_i alone moves and the engine gives no path;
EXTRA as above without the Jacobian witnesses. The result says which (``judged``).

Not judged: integer and boolean outputs (``argmax``, the indices of ``max``): their Jacobian is 0 and says
nothing of structure; a sample with no float output is *skipped*, named. Random ops run under one seed
(re-set before every call; the caller's RNG state is restored); one whose two runs under the same seed
differ is skipped. Samples are kept small: an input over :data:`MAX_INPUT` elements or outputs over
:data:`MAX_OUTPUT` elements are skipped, and say so.

Coverage, per sample, from the engine's own account (``PathMatrix.fallbacks``, and ``decomposed`` /
``derived`` where the engine has them): **exact** (every op through a rule), **decomposed** (some op traced
through ``torch._decomp``), **derived** (some op's dependence taken from its own Jacobian), **refused** (some
op had no rule: figures only a bound; named), **crashed** (the engine raised: the error), **skipped** (why).
A sample with several takes the last of exact < decomposed < derived < refused. Warnings raised while a
sample runs (an op's own deprecation notes) are recorded in its result, not raised.

Work: :func:`seqlab.measure.work.count_multiplications` against ``torch.utils.flop_counter.FlopCounterMode``
(FLOPs / 2) on the same float32 call. seqlab adds multiplications of its own formulas (outer products,
``EXTRA_FORMULAS``); those are compared apart: ``agree`` when seqlab's count less its own formulas equals
PyTorch's (PyTorch's > 0), ``seqlab only`` when PyTorch counts 0 and all of seqlab's count is its own formulas
(no PyTorch formula to compare with: ``aten.mv``, ``aten.dot``, outer products), ``differs`` otherwise,
``none`` when both are 0; ``unaccounted`` lists ops seqlab could not count.

This module is a test helper (no part of the library): ``tests/test_conformance.py`` runs a curated subset,
``benchmarks/conformance.py`` the whole databases.
"""

from __future__ import annotations

import copy
import functools
import os
import signal
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch.utils._pytree import tree_map

#: The largest input (elements, all sources together) a sample may have to be traced.
MAX_INPUT = 512
#: The most output elements (all float outputs together) a sample may have.
MAX_OUTPUT = 4096
#: Random points (besides the sample's own) whose Jacobian patterns witness a dependence.
RANDOM_POINTS = 8
#: Seed of the random points, of random ops and of module construction.
SEED = 0
#: |J_ij| above this is a dependence: float32's least subnormal (2**-149).
TINY = 2.0 ** -149
#: Pairs of each mismatch kind kept in a result (the counts are complete).
KEEP_PAIRS = 5
#: Coverage classes, from best to worst (a sample takes the worst of its ops), then the two outside.
CLASSES = ("exact", "decomposed", "derived", "refused", "crashed", "skipped")


@dataclass
class Case:
    """One sample of one database entry, ready to run.

    Attributes:
        entry: the op's name (``name.variant`` where OpInfo has a variant) or the module's (``nn.Linear``).
        kind: ``"op"`` or ``"module"``.
        index: the sample's place among the entry's CPU float32 samples (0-based).
        sources: the float tensors whose elements are the source positions (one, or a tensor list's).
        call: maps tensors shaped like ``sources`` to the op's result (float32, other arguments fixed).
        call64: the same in float64 (None where it cannot be built).
        skip: why the case is not run (None: run it).
    """

    entry: str
    kind: str
    index: int
    sources: list[Tensor]
    call: Callable[[list[Tensor]], Any] | None
    call64: Callable[[list[Tensor]], Any] | None
    skip: str | None = None

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        """Shapes of the source tensors."""
        return [tuple(t.shape) for t in self.sources]


@dataclass
class Result:
    """What the engine did on one :class:`Case`, and how it compares (see the module docstring).

    ``missed`` / ``extra``: number of (input element, output element) pairs; ``missed_pairs`` /
    ``extra_pairs``: the first :data:`KEEP_PAIRS` of them as (i, j) flat indices; ``autograd_only``: Jacobian
    entries no move of the input witnesses (autograd's formula over-states; see :func:`_witnessed`). ``extra_bound`` is True when
    the sample was refused (its EXTRA is the stated all-to-all bound, not a wrong answer).
    """

    entry: str
    kind: str
    index: int
    shapes: list
    coverage: str
    reason: str | None = None
    out_elements: int = 0
    fallbacks: dict = field(default_factory=dict)
    decomposed: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    judged: str | None = None
    missed: int = 0
    extra: int = 0
    missed_pairs: list = field(default_factory=list)
    extra_pairs: list = field(default_factory=list)
    autograd_only: int = 0
    autograd_only_pairs: list = field(default_factory=list)
    undefined: int = 0
    units_disagree: bool = False
    warnings: list = field(default_factory=list)
    work: dict | None = None
    seconds: float = 0.0

    @property
    def extra_bound(self) -> bool:
        """EXTRA that is the refused op's stated bound, not a wrong answer."""
        return self.coverage == "refused"

    @property
    def mismatch(self) -> bool:
        """MISSED anywhere, or EXTRA on a result the engine gave as exact, decomposed or derived."""
        return self.missed > 0 or (self.extra > 0 and not self.extra_bound)

    def as_dict(self) -> dict:
        """Plain data for JSON."""
        return asdict(self) | {"mismatch": self.mismatch}


# ---------------------------------------------------------------------------------------------- the databases

@functools.cache
def databases() -> tuple[list, list]:
    """PyTorch's ``op_db`` and ``module_db``, imported with the process state put back as it was.

    Importing ``torch.testing._internal.common_utils`` changes process-wide state for PyTorch's own test
    suite: it freezes the backend flags (``torch.backends.disable_global_flags``: seqlab's
    ``reference_kernels`` could no longer switch oneDNN off), adds warning filters, sets
    ``TORCHINDUCTOR_CACHE_DIR`` and wraps ``ScriptFunction.__call__``; all four are restored here.
    """
    frozen = torch.backends.flags_frozen()
    filters, environ = list(warnings.filters), set(os.environ)
    calls = torch._C.ScriptFunction.__call__, torch._C.ScriptMethod.__call__
    try:
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.common_modules import module_db
    finally:
        torch.backends.flags_frozen.__globals__["__allow_nonbracketed_mutation_flag"] = not frozen
        warnings.filters[:] = filters
        getattr(warnings, "_filters_mutated", lambda: None)()  # the filters cache (Python 3.11, 3.12)
        for name in set(os.environ) - environ:
            del os.environ[name]
        torch._C.ScriptFunction.__call__, torch._C.ScriptMethod.__call__ = calls
    return op_db, module_db


def _to64(value: Any) -> Any:
    """float32 tensors (and complex64) to float64 (complex128); everything else as it is."""
    def one(v: Any) -> Any:
        if isinstance(v, Tensor) and v.is_floating_point():
            return v.detach().double()
        if isinstance(v, Tensor) and v.is_complex():
            return v.detach().to(torch.complex128)
        return v
    return tree_map(one, value)


def _clone(value: Any) -> Any:
    """A fresh copy of every tensor (an in-place op must not change the sample)."""
    return tree_map(lambda v: v.detach().clone() if isinstance(v, Tensor) else v, value)


def entry_name(info: Any) -> str:
    """An OpInfo's ``name.variant`` (just ``name`` without a variant), or a ModuleInfo's name."""
    variant = getattr(info, "variant_test_name", "")
    return f"{info.name}.{variant}" if variant else info.name


def _op_case(info: Any, index: int, sample: Any) -> Case:
    name = entry_name(info)
    single = isinstance(sample.input, Tensor)
    items = [sample.input] if single else list(sample.input) if isinstance(sample.input, (list, tuple)) else []
    slots = [k for k, t in enumerate(items) if isinstance(t, Tensor) and t.is_floating_point()]
    if not slots:
        return Case(name, "op", index, [], None, None, skip="no float tensor input")
    sources = [items[k].detach().clone() for k in slots]
    args, kwargs = sample.args, sample.kwargs

    def build(tensors: list[Tensor], a: tuple, kw: dict, rest: list) -> Any:
        filled = list(rest)
        for k, t in zip(slots, tensors, strict=True):
            filled[k] = t
        first = filled[0] if single else type(sample.input)(filled) if isinstance(sample.input, tuple) else filled
        return info.op(first, *_clone(a), **_clone(kw))

    def call(tensors: list[Tensor]) -> Any:
        return build(tensors, args, kwargs, items)

    args64, kwargs64, items64 = _to64(args), _to64(kwargs), _to64(items)

    def call64(tensors: list[Tensor]) -> Any:
        return build(tensors, args64, kwargs64, items64)

    return Case(name, "op", index, sources, call, call64)


def op_cases(names: Sequence[str] | None = None, samples: int | None = None) -> Iterator[Case]:
    """Every CPU float32 sample of every ``op_db`` entry (or of the entries named), as a :class:`Case`.

    Args:
        names: entry names (:func:`entry_name`) to keep; None: all.
        samples: the most samples per entry (None: all).
    """
    for info in databases()[0]:
        name = entry_name(info)
        if names is not None and name not in names:
            continue
        if torch.float32 not in info.supported_dtypes("cpu"):
            yield Case(name, "op", 0, [], None, None, skip="no float32 on CPU")
            continue
        with torch.random.fork_rng():
            torch.manual_seed(SEED)
            try:
                drawn = list(info.sample_inputs("cpu", torch.float32, requires_grad=False))
            except Exception as error:  # the database itself could not make samples
                yield Case(name, "op", 0, [], None, None, skip=f"samples failed: {type(error).__name__}: {error}")
                continue
        for index, sample in enumerate(drawn[:samples]):
            yield _op_case(info, index, sample)


def _first_float(forward: Any) -> tuple[str, int | str] | None:
    for k, v in enumerate(forward.args):
        if isinstance(v, Tensor) and v.is_floating_point():
            return "args", k
    for k, v in forward.kwargs.items():
        if isinstance(v, Tensor) and v.is_floating_point():
            return "kwargs", k
    return None


def _module_case(info: Any, index: int, module_input: Any) -> Case:
    name = entry_name(info)
    forward = module_input.forward_input
    where = _first_float(forward)
    if where is None:
        return Case(name, "module", index, [], None, None, skip="no float tensor input")
    with torch.random.fork_rng():
        torch.manual_seed(SEED)
        try:
            module = info.module_cls(*module_input.constructor_input.args,
                                     **module_input.constructor_input.kwargs).eval()
        except Exception as error:
            return Case(name, "module", index, [], None, None,
                        skip=f"construction failed: {type(error).__name__}: {error}")
    try:
        module64 = copy.deepcopy(module).double()
    except Exception:
        module64 = None
    place, key = where
    source = (forward.args[key] if place == "args" else forward.kwargs[key]).detach().clone()

    def runner(mod: Any, a: tuple, kw: dict) -> Callable[[list[Tensor]], Any]:
        def run(tensors: list[Tensor]) -> Any:
            a2, kw2 = list(_clone(a)), dict(_clone(kw))
            if place == "args":
                a2[key] = tensors[0]
            else:
                kw2[key] = tensors[0]
            return mod(*a2, **kw2)
        return run

    call64 = None if module64 is None else runner(module64, _to64(forward.args), _to64(forward.kwargs))
    return Case(name, "module", index, [source], runner(module, forward.args, forward.kwargs), call64)


def module_cases(names: Sequence[str] | None = None, samples: int | None = None) -> Iterator[Case]:
    """Every CPU float32 input of every ``module_db`` entry (eval mode), as a :class:`Case`."""
    for info in databases()[1]:
        name = entry_name(info)
        if names is not None and name not in names:
            continue
        if torch.float32 not in info.dtypes:
            yield Case(name, "module", 0, [], None, None, skip="no float32")
            continue
        with torch.random.fork_rng():
            torch.manual_seed(SEED)
            try:
                drawn = list(info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                                     requires_grad=False, training=False))
            except Exception as error:
                yield Case(name, "module", 0, [], None, None, skip=f"inputs failed: {type(error).__name__}: {error}")
                continue
        for index, module_input in enumerate(drawn[:samples]):
            yield _module_case(info, index, module_input)


# ------------------------------------------------------------------------------------------------ one sample

def float_outputs(result: Any) -> list[Tensor]:
    """The float outputs of a result, each flattened to (m_k,); a complex one read as real (``view_as_real``)."""
    leaves = [result] if isinstance(result, Tensor) else [v for v in _leaves(result) if isinstance(v, Tensor)]
    flat = []
    for t in leaves:
        if t.is_complex():
            t = t.resolve_conj() if t.is_conj() else t  # a conjugate view has no real view of its own
            flat.append(torch.view_as_real(t).reshape(-1))
        elif t.is_floating_point() and t.numel():
            flat.append(t.reshape(-1))
    return flat


def _leaves(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _split(flat: Tensor, shapes: list[tuple[int, ...]]) -> list[Tensor]:
    """(n,) or (n, 1) back into tensors of ``shapes`` (views of ``flat``)."""
    pieces, start = [], 0
    flat = flat.reshape(-1)
    for shape in shapes:
        size = 1
        for s in shape:
            size *= s
        pieces.append(flat[start:start + size].reshape(shape))
        start += size
    return pieces


def _seeded(call: Callable[[list[Tensor]], Any], tensors: list[Tensor]) -> Any:
    torch.manual_seed(SEED)
    return call(tensors)


def _vector(call: Callable, shapes: list, flat: Tensor) -> Tensor:
    outs = float_outputs(_seeded(call, [t.clone() for t in _split(flat, shapes)]))  # clone: in-place ops
    return torch.cat(outs) if outs else flat.new_zeros(0)


def jacobian_pattern(call64: Callable, shapes: list, point: Tensor) -> tuple[Tensor, Tensor]:
    """Two (m, n) boolean patterns of J, the float64 Jacobian at ``point`` (n,): |J| > :data:`TINY`, and NaN
    (:func:`strong_pattern` for the entries a float32 run can carry).

    Raises:
        Exception: whatever autograd raises (no derivative formula, no float64 kernel ...).
    """
    def g(flat: Tensor) -> Tensor:
        return _vector(call64, shapes, flat)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            J = torch.autograd.functional.jacobian(g, point, vectorize=True)
        except Exception:
            J = torch.autograd.functional.jacobian(g, point)
    J = J.reshape(-1, point.numel())
    _LAST_JACOBIAN[0] = (J, point, g(point).detach())
    return J.abs() > TINY, J.isnan()


#: The last Jacobian :func:`jacobian_pattern` took (read by :func:`strong_pattern` right after).
_LAST_JACOBIAN: list = [None]


def strong_pattern() -> Tensor:
    """Entries of the last Jacobian a float32 run can carry: the change |J_ij|·max(1, |x_i|) is above 64 float32 eps
    of |y_j| (seqlab's dependence band, :mod:`seqlab.measure.dependence`, per output element; at least eps of the
    largest |y|, so an output that is 0 has a band too). The engine traced
    the sample in float32, where a softmax weight of 1e-44 in float64 is exactly 0 and cuts its path; MISSED
    compares like with like."""
    J, x, y = _LAST_JACOBIAN[0]
    change = J.abs() * x.abs().clamp(min=1.0)[None, :]  # (m, n)
    eps = torch.finfo(torch.float32).eps
    # an output element that is 0 (a row of attention whose kept weights underflowed to exact zeros in float32)
    # still has a band: float32's eps of the output's own scale
    scale = float(y.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max()) if y.numel() else 0.0
    band = torch.maximum(y.abs(), torch.full_like(y, eps * scale))
    return (J.abs() > TINY) & (change > 64 * eps * band[:, None])


def output_groups(result: Any) -> Tensor:
    """(m,) group of each flattened output element: a complex element's real and imaginary parts share one.

    The engine keeps one dependence per complex element (either part), so the comparison is per element too."""
    leaves = [result] if isinstance(result, Tensor) else [v for v in _leaves(result) if isinstance(v, Tensor)]
    groups, next_group = [], 0
    for t in leaves:
        if t.is_complex():
            groups.append(torch.arange(next_group, next_group + t.numel()).repeat_interleave(2))
            next_group += t.numel()
        elif t.is_floating_point() and t.numel():
            groups.append(torch.arange(next_group, next_group + t.numel()))
            next_group += t.numel()
    return torch.cat(groups) if groups else torch.zeros(0, dtype=torch.long)


def _by_group(pattern: Tensor, groups: Tensor | None, reduce: str) -> Tensor:
    """An (m, n) pattern per output group: "amax" (either part) or "amin" (both parts)."""
    if groups is None or groups.numel() != pattern.shape[0] or int(groups.max()) + 1 == pattern.shape[0]:
        return pattern
    merged = torch.zeros(int(groups.max()) + 1, pattern.shape[1])
    return merged.index_reduce_(0, groups, pattern.float(), reduce, include_self=False).bool()


def _changed(a: Tensor, b: Tensor) -> Tensor:
    """Elements that differ (a NaN that appears or goes counts; NaN against NaN does not)."""
    return ~((a == b) | (a.isnan() & b.isnan()))


def perturbation_pattern(call64: Callable, shapes: list, point: Tensor, rows: Sequence[int],
                         finite_only: bool = False, small: bool = False, local_only: bool = False) -> Tensor:
    """(m, n) booleans: y_j changes when x_i alone moves (i in ``rows``; float64; see :func:`deltas`).

    ``finite_only``: count a change only where both values are finite (MISSED by perturbation). ``small``: also
    move x_i by 1e-3 (|x_i| + 1) both ways (a local witness of a derivative); ``local_only``: only moves of
    1e-5 (|x_i| + 1) (dependence at the point, the engine's reading: a max-pool window's other elements do not move its output
    there, though a large move of one would make it the max).
    """
    base = _vector(call64, shapes, point)
    pattern = torch.zeros(base.numel(), point.numel(), dtype=torch.bool)
    for i in rows:
        local = (1e-5 if local_only else 1e-3) * (abs(float(point[i])) + 1.0)  # 1e-5: above float32's rounding,
        # below a near-tie of a max (which a move of 1e-3 may overtake: not dependence at the point)
        moves = (local, -local) if local_only else (*deltas(point, i), *((local, -local) if small else ()))
        for delta in moves:
            moved = point.clone()
            moved[i] += delta
            out = _vector(call64, shapes, moved)
            if out.shape != base.shape:
                continue
            change = _changed(base, out)
            if finite_only:
                change &= base.isfinite() & out.isfinite()
            pattern[:, i] |= change
    return pattern


def deltas(point: Tensor, i: int) -> tuple[float, ...]:
    """The moves of x_i that witness a dependence: +-b, +-B (b = 10 (max|x| + 1), B = 10 b), +0.5, and to 0."""
    b = 10.0 * (float(point.abs().max()) + 1.0)
    return b, -b, 10 * b, -10 * b, 0.5, -float(point[i])


def random_points(point: Tensor, count: int = RANDOM_POINTS) -> list[Tensor]:
    """``count`` seeded points of ``point``'s shape, in turn: the point with small noise, a normal draw, a wide
    uniform draw (in [-4, 4)), a permutation of the point's values."""
    g = torch.Generator().manual_seed(SEED)
    points = []
    for k in range(count):
        kind = k % 4
        if kind == 0:
            points.append(point + 0.01 * (point.abs() + 1) * torch.randn(point.shape, generator=g, dtype=point.dtype))
        elif kind == 1:
            points.append(torch.randn(point.shape, generator=g, dtype=point.dtype))
        elif kind == 2:
            points.append(8 * torch.rand(point.shape, generator=g, dtype=point.dtype) - 4)
        else:
            points.append(point[torch.randperm(point.numel(), generator=g)])
    return points


class _Timeout(BaseException):  # not an Exception: no except clause of a sample swallows it
    pass


def _engine(case: Case, level: bool | None) -> list:
    """Run measure_paths over the case's flattened sources: one PathMatrix per float output."""
    from seqlab.measure.paths import measure_paths

    shapes = case.shapes
    layouts = [t.layout for t in case.sources]  # a sparse source is given dense and made sparse inside the layer,
    # where the engine meets it (and refuses it by name)
    flat = torch.cat([t.to_dense().reshape(-1) for t in case.sources]).reshape(-1, 1)  # (n, 1): element i = source i

    def layer(x: Tensor) -> Any:
        torch.manual_seed(SEED)
        parts = _split(x, shapes)
        return case.call([p if lay == torch.strided else p.to_sparse(layout=lay) for p, lay in zip(parts, layouts)])

    return measure_paths(layer, flat, outputs=lambda r: [t.reshape(-1, 1) for t in float_outputs(r)],
                         positions=level)


def run_case(case: Case, level: bool | None = None, seconds: float | None = None, work: bool = True,
             max_input: int | None = None, max_output: int | None = None) -> Result:
    """Run one case through the engine and compare it (see the module docstring).

    Args:
        level: ``positions=`` for measure_paths: None (its own choice, the default: position level, what a user
            gets), False (element-level distances), True (position level).
        seconds: stop a sample that runs longer (skipped, "over N s"; main thread only). None: no limit.
        work: compare the work counters too.
        max_input, max_output: the size bounds (default :data:`MAX_INPUT`, :data:`MAX_OUTPUT`).
    """
    start = time.perf_counter()
    result = Result(case.entry, case.kind, case.index, case.shapes, "skipped", case.skip)
    if case.skip is not None:
        return result
    previous = None
    if seconds is not None:
        def alarm(signum, frame):
            raise _Timeout
        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        from seqlab.measure.switches import one_thread

        # one thread: small ops, a shared machine; warnings recorded, not raised (an op's own deprecation
        # notes are no failure of the engine), and listed in the result
        with torch.random.fork_rng(), one_thread(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _judge(case, result, level, work, MAX_INPUT if max_input is None else max_input,
                   MAX_OUTPUT if max_output is None else max_output)
        result.warnings = sorted({f"{w.category.__name__}: {_short(w.message, 120)}" for w in caught})
    except _Timeout:
        result.coverage, result.reason = "skipped", f"over {seconds:g} s"
    finally:
        if seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    result.seconds = time.perf_counter() - start
    return result


#: Entries whose output is uninitialised memory: its values are undefined, so no dependence can be judged (a
#: buffer freed by the input's clone can come back holding the input's values).
UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                           "empty_permuted"})


def _judge(case: Case, result: Result, level: bool | None, work: bool, max_input: int, max_output: int) -> None:
    if case.entry in UNINITIALISED:
        result.reason = "uninitialised memory: the output's values are undefined"
        return
    n = sum(t.numel() for t in case.sources)
    if n == 0:
        result.reason = "empty input"
        return
    if n > max_input:
        result.reason = f"input of {n} elements > {max_input}"
        return
    try:
        first = float_outputs(_seeded(case.call, _clone(case.sources)))
        again = float_outputs(_seeded(case.call, _clone(case.sources)))
    except Exception as error:
        result.reason = f"the op itself raised: {type(error).__name__}: {_short(error)}"
        return
    if not first:
        result.reason = "no float output (integer/bool outputs are not judged)"
        return
    m = sum(t.numel() for t in first)
    result.out_elements = m
    if m == 0:
        result.reason = "empty output"
        return
    if m > max_output:
        result.reason = f"output of {m} elements > {max_output}"
        return
    if any(a.shape != b.shape or _changed(a, b).any() for a, b in zip(first, again, strict=True)):
        result.reason = "nondeterministic under a fixed seed"
        return
    if work:
        result.work = compare_work(case)
    try:
        matrices = _engine(case, level)
    except _Timeout:
        raise
    except Exception as error:
        from seqlab.errors import SeqlabError

        refused = isinstance(error, SeqlabError)  # the engine's own refusal, by name: no figure at all
        result.coverage = "refused" if refused else "crashed"
        result.reason = f"{'refused by the engine' if refused else type(error).__name__}: {_short(error)}"
        return
    result.fallbacks = _merged(matrices, "fallbacks")
    result.decomposed = _merged(matrices, "decomposed")
    result.derived = _merged(matrices, "derived")
    result.coverage = ("refused" if result.fallbacks else "derived" if result.derived
                       else "decomposed" if result.decomposed else "exact")
    engine, defined = _engine_pattern(matrices, n, result)
    _compare(case, result, engine, defined, first)


def _merged(matrices: list, name: str) -> dict:
    merged: dict = {}
    for pm in matrices:
        for k, v in getattr(pm, name, {}).items():
            merged[k] = max(merged.get(k, 0), v)
    return merged


def _engine_pattern(matrices: list, n: int, result: Result) -> tuple[Tensor, Tensor]:
    """(m, n) engine dependences and the (m,) output elements it defines (not ``undefined``)."""
    columns, defined = [], []
    for pm in matrices:
        products = torch.tensor([[v is not None for v in row] for row in pm.products], dtype=torch.bool)
        ops = torch.tensor([[v is not None for v in row] for row in pm.ops], dtype=torch.bool)
        if not torch.equal(products, ops):
            result.units_disagree = True
        columns.append(products.reshape(n, -1).T)  # (m_k, n)
        mask = torch.ones(products.shape[-1] if products.dim() == 2 else 0, dtype=torch.bool)
        mask[list(pm.undefined)] = False
        defined.append(mask)
    result.undefined = int(sum((~d).sum() for d in defined))
    return torch.cat(columns), torch.cat(defined)


def _compare(case: Case, result: Result, engine: Tensor, defined: Tensor, first: list[Tensor]) -> None:
    shapes = case.shapes
    point = torch.cat([t.reshape(-1) for t in case.sources]).double()
    jac = nan = groups = None
    try:
        groups = output_groups(_seeded(case.call64, _split(point.clone(), shapes))) if case.call64 else None
    except Exception:
        groups = None
    moves_on = case.call64  # the function moves are tried on: the float64 call, unless it computes another one
    if case.call64 is not None:
        try:
            out64 = torch.cat(float_outputs(_seeded(case.call64, _split(point.clone(), shapes))))
            out32 = torch.cat(first).double()
            if out64.shape == out32.shape and torch.allclose(out64, out32, rtol=1e-3, atol=1e-4, equal_nan=True):
                jac, nan = jacobian_pattern(case.call64, shapes, point)
                strong = strong_pattern()
            else:  # a random draw in float64 is another draw (fractional_max_pool's windows): judge the float32 call
                moves_on = _in_float32(case.call)
        except Exception:
            jac = None
    rows = range(point.numel())
    if jac is not None and jac.shape == engine.shape:
        result.judged = "jacobian"
        missed = strong & ~engine & defined[:, None]
        if missed.any() and result.coverage != "refused":
            missed = _witnessed(case, point, missed, result)
        unsure = nan & ~engine & defined[:, None]  # a NaN: a chain, or 0 x NaN in a backward formula
        if unsure.any():
            inputs = sorted(set(unsure.nonzero()[:, 1].tolist()))
            missed |= unsure & perturbation_pattern(case.call64, shapes, point, inputs, finite_only=True)
        jac = jac | nan
    else:
        if case.call64 is None:
            result.judged = None
            result.reason = "no float64 call: EXTRA/MISSED not judged"
            return
        result.judged = "perturbation"
        try:  # the engine reads dependence at the point (as the Jacobian does): witnessed by local moves
            moved = perturbation_pattern(moves_on, shapes, point, rows, finite_only=True, local_only=True)
        except Exception as error:
            result.judged, result.reason = None, f"not judged: {type(error).__name__}: {_short(error)}"
            return
        jac = None
        missed = moved & ~engine & defined[:, None]
    open_ = engine & defined[:, None] & ~(jac if jac is not None else torch.zeros_like(engine))
    if result.coverage == "refused":  # the all-to-all bound, by statement: no witness search
        missed, open_ = _by_group(missed, groups, "amax"), _by_group(open_, groups, "amin")
        result.missed, result.missed_pairs = int(missed.sum()), _pairs(missed)
        result.extra, result.extra_pairs = int(open_.sum()), _pairs(open_)
        return
    if open_.any() and jac is not None:
        for p in random_points(point):
            try:
                witness = torch.logical_or(*jacobian_pattern(case.call64, shapes, p))
            except Exception:
                continue
            if witness.shape == open_.shape:
                open_ &= ~witness
            if not open_.any():
                break
    if open_.any():
        inputs = sorted(set(open_.nonzero()[:, 1].tolist()))
        try:
            open_ &= ~perturbation_pattern(moves_on, shapes, point, inputs)
        except Exception:
            pass
    missed, open_ = _by_group(missed, groups, "amax"), _by_group(open_, groups, "amin")  # per complex element
    result.missed, result.missed_pairs = int(missed.sum()), _pairs(missed)
    result.extra, result.extra_pairs = int(open_.sum()), _pairs(open_)


def _witnessed(case: Case, point: Tensor, missed: Tensor, result: Result) -> Tensor:
    """The MISSED pairs that some move of the input element witnesses (it changes the output element).

    Autograd's derivative formula can state a dependence the function does not have: ``max_unpool2d`` (and
    ``index_put``) with an index written twice keeps one write, while the backward gathers the gradient to every
    writer. A Jacobian entry that no move of x_i (large, small, to 0) changes in the float32 call the engine traced
    is such a case, or a random draw that fell another way in float64 (a dropout mask element at its threshold):
    recorded in ``autograd_only``, not MISSED.
    """
    inputs = sorted(set(missed.nonzero()[:, 1].tolist()))
    # moved on the float32 call the engine traced: a random draw (dropout's mask) can fall the other way in float64
    moved = perturbation_pattern(_in_float32(case.call), case.shapes, point, inputs, small=True)
    result.autograd_only = int((missed & ~moved).sum())
    result.autograd_only_pairs = _pairs(missed & ~moved)
    return missed & moved


def _in_float32(call: Callable[[list[Tensor]], Any]) -> Callable[[list[Tensor]], Any]:
    """``call`` (float32) taking the float64 tensors the perturbation hands it."""
    return lambda tensors: call([t.float() for t in tensors])


def _pairs(pattern: Tensor) -> list[tuple[int, int]]:
    """The first (input element i, output element j) pairs of an (m, n) pattern."""
    return [(int(i), int(j)) for j, i in pattern.nonzero()[:KEEP_PAIRS].tolist()]


def _short(error: BaseException, limit: int = 200) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[:limit] + "..."


def compare_work(case: Case) -> dict:
    """seqlab's multiplications against FlopCounterMode's FLOPs / 2 on the same call (see the module docstring)."""
    from torch.utils.flop_counter import FlopCounterMode

    from seqlab.measure.work import count_multiplications

    try:
        counted = count_multiplications(lambda: _seeded(case.call, _clone(case.sources)))
        counter = FlopCounterMode(display=False)
        with counter:
            _seeded(case.call, _clone(case.sources))
    except Exception as error:
        return {"status": "crashed", "error": f"{type(error).__name__}: {_short(error)}"}
    pytorch = counter.get_total_flops() // 2
    own = sum(counted.by_op.get(name, 0) for name in counted.seqlab_formula_ops)
    status = ("none" if counted.multiplications == 0 and pytorch == 0
              else "seqlab only" if pytorch == 0 and counted.multiplications == own
              else "agree" if counted.multiplications - own == pytorch else "differs")
    return {"status": status, "seqlab": counted.multiplications, "pytorch": pytorch, "seqlab_own": own,
            "own_ops": list(counted.seqlab_formula_ops), "unaccounted": dict(counted.unaccounted)}


def run_all(cases: Iterator[Case], level: bool | None = None, seconds: float | None = None,
            work: bool = True, progress: Callable[[Result], None] | None = None) -> list[Result]:
    """:func:`run_case` over ``cases``; ``progress`` is called with each result."""
    results = []
    for case in cases:
        result = run_case(case, level, seconds, work)
        results.append(result)
        if progress is not None:
            progress(result)
    return results
