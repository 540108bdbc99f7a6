"""The signal's path: how many transition factors a signal from x_i meets on its way to y_j, measured (issues 23, 38).

seqlab's *graph path* (:mod:`seqlab.measure.paths`) counts the ops in a row between x_i and y_j: how long y_j
waits for x_i. The lesson's reading of path (L3, L4) is about something else: what a signal from x_i is
multiplied by before it arrives. In the recurrence it is W_hh once per step, j - i times, so it shrinks or grows
geometrically (L3); in attention it is one weight α_ji whatever the distance (L4). A parallel scan of a linear
recurrence (Hillis & Steele 1986; Blelloch 1990, §1.4) shortens the first — ⌈log₂ T⌉ rounds instead of T steps —
and leaves the second alone: the scan groups the same T - 1 decays differently, and ∂y_T/∂x_1 is the same
function. This module measures that second count.

**The power.** Each seqlab mixer declares its transition factor (:mod:`seqlab.layers.transition`). With every
declared factor scaled by s, each route from x_i to y_j picks up s once per factor it crosses, so

    J_ji(s) = ∂y_j/∂x_i (s) = s^k · J_ji(1)        (d_out × d_in)

when every route crosses the same number k of factors. The power shows as well in a probe u (d_out) as in the whole
block: uᵀJ(s) = s^k uᵀJ(1), and for a Gaussian u it holds only when the block's does. :func:`measure_signal_path`
records one float64 forward (one per scale when a factor is scaled in the forward), pulls u back once at s = 1 and
once at each of :data:`SCALES` (one backward pass each, through the sequence), reads
k = log(‖uᵀJ(s)‖ / ‖uᵀJ(1)‖) / log s, and accepts the nearest integer only when every reading lies within
:data:`TOLERANCE` of it and ‖uᵀJ(s) − s^k uᵀJ(1)‖ stays within :data:`RESIDUAL` of ‖s^k uᵀJ(1)‖. Its cost is one
recorded forward and two backward passes, plus one forward per scale where a factor is scaled in the forward (the
whole-block reading it replaces took 3·d backward passes: about 3,000× a forward at T = 100, d = 512). Measured at
T = 1000, d = 512, one thread, CPU time: about 6–8× a float32 forward of the Elman RNN, about 11× of SelfAttention
(two forwards). The floor of any float64 reading by reverse mode: the float64 forward alone is 1.5× the float32 one,
recording its graph 1.8–1.9×, each backward pass 1.5–2×. Why not fewer passes: the two directions (s = 1 and s) as two
rows of one batched backward cost what two passes cost at d = 512 (a float64 matrix of 2 rows times W_hh takes 2× the
time of one row there: the arithmetic, not the per-op overhead, is the cost), and a forward-mode reading (Jv instead of
uᵀJ) has the same arithmetic; a derivative in float64 cannot reach profile's bar of 4× a forward for all its readings
(issue 34). k is a property of the function, not of the code that
computes it: the loop and the scan of one layer give the same k, while their graph paths differ. A factor scaled
in the forward (decays, attention's weights) is a measurement of the function (y homogeneous of degree k in it); a
factor marked on a product in the backward (the Elman recurrence's W_hh·h_{t-1}, a weighted sum Σ α v) counts the
crossings of that product, and the reading names it (``marked``): what the product multiplies by is declared.

**Log space, factor by factor.** A product of T - 1 factors is never one float: the gradient is multiplied by an
exact power of two wherever it leaves a marked product outside [2^-256, 2^256] (:class:`~seqlab.layers.transition.
Scaling`), the exponents are recorded and replayed in the other passes, and every norm is taken as m·‖g/m‖ with m
the largest magnitude (never a square of a tiny number). Readings and the reach are read in logarithms
(``log10_reach``; ``reach`` is None where the number itself is outside float64's range). The scaled passes replay
the same exponents mark by mark, each plus one (a *shadow* factor 2 at each of the N rescaled marks), so they read
uᵀJ(s)·2^n = s^k·2^n·uᵀJ(1) with n the rescaled marks that every route crosses: s is no rational power of 2, so the
integers k and n are told apart (the one n in 0…N that makes k an integer within :data:`TOLERANCE`). The reach needs
the exponent the routes picked up: the sum of the recorded exponents when n = N (every route crosses every rescaled
mark); otherwise the reach is not read, named (``reach_missing``: ``uneven_rescaling``), and where no n fits, one
more pass without the shadow tells a power read through uneven rescalings from routes with different counts.

**Not measured, with the reason** (:data:`REASONS`): routes that cross different numbers of factors
(``not_a_power``: Mamba's causal convolution spreads x_i over several positions); ``no_dependence``, decided by
structure only — the gradient is exactly 0 *and* the path tracer (:func:`seqlab.measure.paths.measure_paths`, which
reads constant zeros by value) finds no path; ``out_of_range`` — the gradient left float64's range (to 0, to
subnormals, to infinity) where no marked product could rescale it, e.g. the decays of a recurrence scaled in the
forward at a length where their product is below 2^-1000; ``zero_gradient`` — an exact 0 although the tracer finds
a path: an underflow no marked product could rescale, or a derivative exactly 0 at this input (a dead or saturated
unit); ``zero_undecided`` — an exact 0 the tracer could not explain (it failed on the module).

**Undeclared factors make the reading a bound.** The count covers the declared factors only. Every largest
submodule that holds no declaring module (an ``nn.RNN`` feeding an attention, the projections of a layer, a
convolution) is checked once, on the first three positions of the input it received: a position-wise map has each
output position depending on one input position; a module with an output position that depends on two or more
mixes positions with factors nobody declared, and is named (``undeclared``); one whose positions cannot be read
(no dimension of the sequence's length, a call it cannot repeat alone) is named as ``unchecked``. Either makes the
reading a bound (:attr:`SignalPath.bound`): at least k multiplicative factors, beside undeclared ones — never a
count of the declared ones presented as the whole. Position mixing written directly in the forward of a module that
also holds a declaring module is not seen by this check (its routes still show when they bypass the factors).

A module that declares no factor (``torch.nn.RNN``, a Hugging Face module, a user's module) is refused by name:
its signal path is absent, never guessed. The reach ‖J_ji(1)‖_F (:mod:`seqlab.measure.reach`'s norm) is reported
beside k: exact with ``probes=None`` (d_out more directions pulled back), else estimated from R Gaussian probes.
These directions replay the recorded rescalings and read no value, so they can run as rows of batched backward
passes (``is_grads_batched``): tried where the recorded forward's activations are small on average (:data:`SMALL_BYTES`:
a recurrence's steps, whose cost is per-op overhead that the rows share; the exact reach of an Elman RNN 2–3× faster at
d = 64–128, its 8-probe reach at T = 744, d = 512 about 1.3× faster) and kept while a batch costs less CPU time per row
than the lone first row; one pass per row where the activations are large (attention's T × T weights, where batching
was 1.5–2× slower) or a batch was not cheaper. The module's own parameters and buffers, which the forward saves too,
are not counted: every row of a batch shares them, none copies them. The numbers are the same either way. The module
is copied to float64 for the measurement, in eval mode; the caller's module and the default forward (scale None)
are left as they were.

Units: factors (an integer count of transition factors). Shapes: T positions, d_in input width, d_out output width.
Source: lesson claims L3 (a recurrence multiplies by W_hh per step) and L4 (attention, one weight per pair); Hillis
& Steele 1986 and Blelloch 1990, §1.4, for the scan; Hutchinson 1990 for the probed norm.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.measure.switches import warnings_ignored
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.transition import BACKWARD, FORWARD, Scaling, declares_transition

__all__ = ["ABSENT", "BATCH_BYTES", "PROBES", "REACH_REASONS", "REASONS", "RESIDUAL", "SCALES", "SMALL_BYTES", "TOLERANCE",
           "SignalPath", "SignalReading", "declared_factors", "measure_signal_path", "read_signal_path"]

#: The scales s at which J(s) is compared with J(1): close to 1, so s^k stays in float64's range for k up to
#: about 14,000 and a factor scaled in the forward moves the states by at most 1.05^T; no rational power of 2, so
#: s^k is never confused with the shadow's 2^n (ln 2 / ln 1.05 = 14.2067…).
SCALES = (1.05,)
#: Largest distance of a reading log(‖uᵀJ(s)‖/‖uᵀJ(1)‖)/log s from the integer k it is accepted as.
TOLERANCE = 1e-6
#: Largest ‖uᵀJ(s) − s^k uᵀJ(1)‖ / ‖s^k uᵀJ(1)‖ accepted (float64 rounding of a long product is about T·2⁻⁵²).
RESIDUAL = 1e-9
#: Bytes the rows of one batched backward of the reach's directions may span (rows × the activations the forward
#: saved).
BATCH_BYTES = 16 * 2**20
#: Largest mean size of the activations a forward saved (its module's parameters and buffers not counted) for which its
#: reach's directions are pulled back batched.
SMALL_BYTES = 2**13
#: Gaussian probes of :func:`read_signal_path` (the count needs one; the reach is estimated from them).
PROBES = 1
#: Why a pair is not measured (see the module docstring): routes with different factor counts; no dependence by
#: structure; a gradient out of float64's range where nothing could rescale it; an exact 0 along a path that
#: exists (an underflow, or a derivative exactly 0 at this input); an exact 0 the path tracer could not explain.
REASONS = ("not_a_power", "no_dependence", "out_of_range", "zero_gradient", "zero_undecided")
#: Why a counted pair has no reach: a gradient rescaled at marks that not every route crosses (the shadow pass
#: disagrees), or a gradient out of float64's range.
REACH_REASONS = ("uneven_rescaling", "out_of_range")
#: Why a module has no reading at all (:func:`read_signal_path`): it declares no transition factor; or the
#: measurement refused it (a declared factor its forward never applies, an output without the input's positions).
ABSENT = ("no_factor", "refused")

_LN2 = math.log(2.0)
_SHORT = 3  # positions of the undeclared-mixing check
_TINY = -1000  # a gradient whose largest magnitude is below 2^-1000 has lost its precision (subnormals from -1022)


@dataclass(frozen=True)
class SignalPath:
    """Transition factors met from x_i to y_j (``factors``; None when not measured) and the reach beside them.

    Attributes:
        source, target: i and j, positions counted from 0.
        factor: the declared factor(s), e.g. ``"W_hh"``, ``"a_t"``, ``"α_ji"`` (joined by ", " when several).
        modules: class names of the modules whose factors were scaled.
        factors: k, the integer count (unit: factors), or None when not measured.
        readings: log(‖uᵀJ(s)‖/‖uᵀJ(1)‖)/log s at each scale, read in log space (None where a gradient is 0 or
            not finite).
        residual: largest ‖uᵀJ(s) − s^k uᵀJ(1)‖/‖s^k uᵀJ(1)‖ over the scales for the nearest integer k (None: not
            computed).
        reach: ‖∂y_j/∂x_i‖_F at s = 1, float64 (estimated from ``probes`` directions when not None); None when not
            read or when the number is outside float64's range (``log10_reach`` then carries it).
        scales, tolerance, residual_tolerance: the acceptance rule used.
        reason: one of :data:`REASONS` when ``factors`` is None, else None.
        probes: None when the reach is exact (every output direction pulled back); else R, the Gaussian output
            directions U it is estimated from: E‖UᵀJ‖_F² = R‖J‖_F², so ``reach`` = ‖UᵀJ(1)‖_F / √R.
        dtype: the measurement's dtype.
        log10_reach: log₁₀ of ``reach``, read in log space (None when the reach was not read).
        rescaled: marks at which the gradient was brought back into float64's range by a power of two.
        undeclared: class names of submodules that mix positions without declaring a factor (the reading is a
            bound: their factors are met too, and not counted).
        unchecked: class names of submodules whose position mixing could not be checked (a bound as well).
        reach_missing: one of :data:`REACH_REASONS` when ``factors`` is counted but ``reach`` and ``log10_reach`` are
            None, else None.
        marked: the factors counted at a product marked in the backward (:data:`~seqlab.layers.transition.BACKWARD`):
            crossings of the marked product, what it multiplies by declared; the others are scaled in the forward,
            a power of the function.
    """

    source: int
    target: int
    factor: str
    modules: tuple[str, ...]
    factors: int | None
    readings: tuple[float | None, ...]
    residual: float | None
    reach: float | None
    scales: tuple[float, ...]
    tolerance: float
    residual_tolerance: float
    reason: str | None
    probes: int | None = None
    dtype: str = "float64"
    log10_reach: float | None = None
    rescaled: int = 0
    undeclared: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    marked: tuple[str, ...] = ()
    reach_missing: str | None = None

    @property
    def measured(self) -> bool:
        """Whether k was accepted as an integer."""
        return self.factors is not None

    @property
    def bound(self) -> bool:
        """Whether undeclared (or unchecked) position mixing makes the reading a bound: at least ``factors``."""
        return bool(self.undeclared or self.unchecked)


def declared_factors(module: object) -> tuple[str, ...]:
    """The transition factors ``module`` and its submodules declare, in order, without repeats (empty: none).

    >>> from seqlab.layers.attention import SelfAttention
    >>> declared_factors(SelfAttention(4)), declared_factors(torch.nn.RNN(2, 2))
    (('α_ji',), ())
    """
    if not isinstance(module, torch.nn.Module):
        return ()
    names = [m.transition_factor for m in module.modules() if declares_transition(m)]
    return tuple(dict.fromkeys(names))


def _declaring(module: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in module.modules() if declares_transition(m)]


def _check_input(x: object) -> Tensor:
    if not isinstance(x, Tensor) or x.dim() not in (2, 3) or (x.dim() == 3 and x.shape[0] != 1) \
            or x.shape[-2] == 0 or not x.is_floating_point():
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise SeqlabError(N_("x must be a floating tensor of shape (T, d_in) or (1, T, d_in) with T >= 1, received "
                             "{shape}"), shape=shape, parameter="x")
    return x


def _position(name: str, value: object, T: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -T <= value < T:
        raise SeqlabError(N_("{name} must be a position in [{value}, {value2}] for T = {T}, received {value3!r}"),
                          name=name, value=-T, value2=T - 1, T=T, value3=value, parameter=name)
    return value % T


# --- undeclared position mixing ------------------------------------------------------------------------------------

def _first_tensor(value: object) -> Tensor | None:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], Tensor):
        return value[0]
    return None


def _undeclared_modules(root: torch.nn.Module) -> list[torch.nn.Module]:
    """The largest submodules of ``root`` that hold no declaring module (each checked once, as a whole)."""
    found: list[torch.nn.Module] = []

    def visit(module: torch.nn.Module) -> None:
        for child in module.children():
            if any(declares_transition(m) for m in child.modules()):
                visit(child)
            else:
                found.append(child)
    visit(root)
    return found


def _positions_dim(t: Tensor, T: int) -> int | None:
    """The dimension of ``t`` that holds the T positions: -2 when it has size T, else the only one that has."""
    if t.dim() >= 2 and t.shape[-2] == T:
        return t.dim() - 2
    dims = [d for d in range(t.dim()) if t.shape[d] == T]
    return dims[0] if len(dims) == 1 else None


def _mixes(module: torch.nn.Module, inp: Tensor, full: Tensor | None, T: int) -> bool | None:
    """Whether ``module`` makes an output position depend on two or more input positions (None: cannot tell).

    Run alone on the first :data:`_SHORT` positions of the input it received (float64, a fresh leaf); each output
    position (the dimension whose size follows the input's length) is pulled back once. A position-wise map (a
    projection, a norm, an activation) reaches one input position from each output position; a recurrence or a
    convolution reaches several.
    """
    dim = _positions_dim(inp, T)
    if dim is None or full is None:
        return None
    short = min(T, _SHORT)
    leaf = inp.detach().narrow(dim, 0, short).clone().requires_grad_(True)
    try:
        with torch.enable_grad():
            out = _first_tensor(module(leaf))
    except Exception:  # noqa: BLE001 - a module that cannot run alone is named as unchecked, not raised
        return None
    if out is None or out.dim() != full.dim():
        return None
    if not out.requires_grad:
        return False  # its output does not depend on its input at all
    changed = [d for d in range(out.dim()) if out.shape[d] != full.shape[d]]
    out_dim = changed[0] if len(changed) == 1 else _positions_dim(out, T) if short == T else None
    if out_dim is None:
        return None
    generator = torch.Generator().manual_seed(0)
    for j in range(out.shape[out_dim]):
        grad_out = torch.zeros_like(out)
        row = grad_out.select(out_dim, j)
        row.copy_(torch.randn(row.shape, dtype=out.dtype, generator=generator))
        (grad,) = torch.autograd.grad(out, leaf, grad_out, retain_graph=True, allow_unused=True)
        if grad is not None and int(grad.ne(0).movedim(dim, 0).reshape(short, -1).any(dim=1).sum()) >= 2:
            return True
    return False


class _Watch:
    """Forward hooks on the submodules that hold no declaring module: the first input each call received."""

    def __init__(self, root: torch.nn.Module) -> None:
        self.calls: list[tuple[torch.nn.Module, tuple, dict, Tensor | None]] = []
        self.handles = [m.register_forward_hook(self._hook, with_kwargs=True) for m in _undeclared_modules(root)]

    def _hook(self, module: torch.nn.Module, args: tuple, kwargs: dict, output: object) -> None:
        self.calls.append((module, args, kwargs, _first_tensor(output)))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def verdicts(self, T: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(undeclared, unchecked): class names of the watched modules that mix positions / cannot be checked."""
        undeclared, unchecked, seen = [], [], set()
        for module, args, kwargs, full in self.calls:
            if id(module) in seen:
                continue
            seen.add(id(module))
            inp = args[0] if args and isinstance(args[0], Tensor) else None
            if inp is None or not inp.requires_grad:  # no input from x: on no route
                if inp is None and (args or kwargs):
                    unchecked.append(type(module).__name__)
                continue
            extra = [a for a in args[1:] if a is not None] + [v for v in kwargs.values() if v is not None]
            verdict = None if extra else _mixes(module, inp, full, T)
            if verdict is None:
                unchecked.append(type(module).__name__)
            elif verdict:
                undeclared.append(type(module).__name__)
        return tuple(dict.fromkeys(undeclared)), tuple(dict.fromkeys(unchecked))


# --- the measurement -----------------------------------------------------------------------------------------------

def _forward(copy64: torch.nn.Module, declaring: list[torch.nn.Module], scaling: Scaling, x: Tensor, s: float,
             output: Callable[[object], Tensor] | None) -> Tensor:
    """y (…, T, d_out) with every declared factor under ``scaling`` at s; refuses a factor never applied."""
    scaling.s, scaling.applied, scaling.applied_by = float(s), 0, set()
    try:
        result = copy64(x)
        y = output(result) if output is not None else result
    except SeqlabError:
        raise
    except Exception as error:  # noqa: BLE001 - the module failing on its float64 copy is named, not raised raw
        raise SeqlabError(N_("{copy64_class} fails on its float64 copy: {error_class}: {error}"),
                          copy64_class=type(copy64).__name__, error_class=type(error).__name__, error=error,
                          parameter="module") from error
    if not isinstance(y, Tensor) or y.dim() != x.dim() or y.shape[:-1] != x.shape[:-1]:
        shape = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
        raise SeqlabError(N_("the output must have the input's positions, shape {shape} + (d_out,); received "
                             "{shape2} (pass output= to pick the tensor)"), shape=tuple(x.shape[:-1]), shape2=shape,
                          parameter="output")
    unused = [type(m).__name__ for m in declaring if id(m) not in scaling.applied_by]
    if unused:
        raise SeqlabError(N_("{unused} declares a transition factor that this forward never applied; its signal path "
                             "is not measured"), unused=', '.join(unused), parameter="module")
    return y


def _recorded_forward(copy64: torch.nn.Module, declaring: list[torch.nn.Module], scaling: Scaling, x: Tensor,
                      output: Callable[[object], Tensor] | None, saved: _Saved | None) -> Tensor:
    """The forward at s = 1, with ``saved`` counting what it keeps for the backward (None: not counted). A forward
    that fails under the counting hooks (``torch.func`` inside a module refuses saved-tensor hooks) runs again
    without them: the count only chooses how the reach's directions run."""
    if saved is None:
        return _forward(copy64, declaring, scaling, x, 1.0, output)
    try:
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, saved.unpack):
            return _forward(copy64, declaring, scaling, x, 1.0, output)
    except SeqlabError:
        saved.count = saved.bytes = 0  # one pass per direction
        return _forward(copy64, declaring, scaling, x, 1.0, output)


@dataclass(frozen=True)
class _Pulled:
    """uᵀJ at x_source as read after the marks' rescalings (d_in): the true uᵀJ times 2^E, E the rescalings' exponents
    that its routes picked up (0 when nothing was rescaled; read by a shadow pass, :func:`_reach`)."""

    g: Tensor

    @property
    def zero(self) -> bool:
        return not bool(self.g.ne(0).any())

    @property
    def finite(self) -> bool:
        return bool(torch.isfinite(self.g).all())

    def log_norm(self) -> float:
        """ln ‖g‖, from m·‖g/m‖ (m the largest magnitude: no square of a tiny number)."""
        m = float(self.g.abs().max())
        return math.log(m) + math.log(float(torch.linalg.vector_norm(self.g / m)))

    def tiny(self) -> bool:
        """Whether its largest magnitude is below 2^-1000: subnormals near, precision lost."""
        return math.frexp(float(self.g.abs().max()))[1] < _TINY


def _pull(y_j: Tensor, x: Tensor, source: int, u: Tensor, scaling: Scaling, s: float,
          replay: dict[int, int] | None = None, offset: int = 0) -> _Pulled:
    """One backward pass: uᵀ ∂y_j/∂x_source at scale s, rescaled at the marks (decided, or replayed + offset)."""
    scaling.start(s, replay, offset)
    (grad,) = torch.autograd.grad(y_j, x, u, retain_graph=True, allow_unused=True)
    g = torch.zeros(x.shape[-1], dtype=x.dtype) if grad is None else grad[..., source, :].reshape(-1)
    return _Pulled(g.detach())


class _Saved:
    """The distinct activations the recorded forward saved for its backward (each storage counted once): their count
    and bytes (a ``saved_tensors_hooks`` pair that keeps every tensor as it is). Tensors in the storage of ``shared``
    (the module's parameters and buffers, and views of them such as ``W.T``) are not counted: every row of a batched
    backward reads the same ones, so they neither make its ops large nor grow with its rows."""

    def __init__(self, shared: Iterable[Tensor] = ()) -> None:
        self.bytes = 0
        self.count = 0
        self._seen: set[tuple[int, int]] = set()
        self._shared = {_storage(t) for t in shared} - {None}

    def pack(self, t: Tensor) -> Tensor:
        try:
            key = (t.data_ptr(), t.numel())
        except RuntimeError:  # a tensor without storage (a wrapper subclass): counted by identity
            key = (id(t), -1)
        if key not in self._seen and _storage(t) not in self._shared:
            self._seen.add(key)
            self.bytes += t.numel() * t.element_size()
            self.count += 1
        return t

    @staticmethod
    def unpack(t: Tensor) -> Tensor:
        return t

    def rows(self) -> int:
        """Rows per batched backward: 1 (one pass per row) unless the saved activations are small on average (at most
        :data:`SMALL_BYTES`: a backward of many small ops, whose cost is per-op overhead that the rows share), then as
        many as keep :data:`BATCH_BYTES` above the rows' copies of the saved activations."""
        if not self.count or self.bytes / self.count > SMALL_BYTES:
            return 1
        return max(1, BATCH_BYTES // max(self.bytes, 1))


def _storage(t: Tensor) -> int | None:
    """The address of ``t``'s storage (shared by all its views), or None for a tensor without one."""
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def _pull_rows(y_j: Tensor, x: Tensor, source: int, rows: Tensor, scaling: Scaling,
               replay: dict[int, int], step: int) -> list[_Pulled]:
    """uᵀ ∂y_j/∂x_source for every row u of ``rows`` (R, d_out) at s = 1, the recorded rescalings replayed, in order:
    ``step`` rows per batched backward pass (``is_grads_batched``) while that is cheaper per row, else one pass per row.

    The first row is pulled back alone, the next ``step`` rows together; batching goes on only while a batched pass
    costs less CPU time per row than the lone one (a recurrence's small steps: 2–3× faster for the exact reach of an
    Elman RNN at d = 64–128, T = 300–744; the loop of a Mamba block's scan was slower batched, and is pulled back row
    by row after one chunk). ``step`` = 1 (large saved tensors, :meth:`_Saved.rows`) never batches. The numbers are
    the same either way (tests force both routes). A replay reads no value (no decision is taken), so the marks'
    backward runs under the batching; an op whose backward cannot be batched is pulled back row by row.
    """
    if step == 1 or rows.shape[0] < 2:
        return [_pull(y_j, x, source, u, scaling, 1.0, replay) for u in rows]
    start = time.thread_time()
    parts = [_pull(y_j, x, source, rows[0], scaling, 1.0, replay)]
    alone = time.thread_time() - start  # CPU seconds of one row's pass, this thread's (another may run beside)
    batched, i = True, 1
    while i < rows.shape[0]:
        chunk = rows[i:i + step]  # (r, d_out)
        i += chunk.shape[0]
        start = time.thread_time()
        got = _pull_batch(y_j, x, source, chunk, scaling, replay) if batched else None
        if got is None:
            batched = False
            parts.extend(_pull(y_j, x, source, u, scaling, 1.0, replay) for u in chunk)
        else:
            parts.extend(got)
            batched = time.thread_time() - start < alone * chunk.shape[0]
    return parts


def _pull_batch(y_j: Tensor, x: Tensor, source: int, chunk: Tensor, scaling: Scaling,
                replay: dict[int, int]) -> list[_Pulled] | None:
    """The rows of ``chunk`` (r, d_out) pulled back in one batched backward pass; None when it cannot be batched."""
    scaling.start(1.0, replay)
    try:
        # vmap falls back to a slow loop (with this warning) for ops without a batching rule: still right
        with warnings_ignored(".*performance drop.*"):
            (grad,) = torch.autograd.grad(y_j, x, chunk, retain_graph=True, allow_unused=True, is_grads_batched=True)
    except RuntimeError:  # an op whose backward cannot be batched at all
        return None
    if grad is None:
        return [_Pulled(torch.zeros(x.shape[-1], dtype=x.dtype)) for _ in chunk]
    g = grad[..., source, :].reshape(chunk.shape[0], -1)  # (r, d_in)
    return [_Pulled(row.detach().clone()) for row in g]


def _structurally_unreached(module: torch.nn.Module, x: Tensor, output: Callable[[object], Tensor] | None,
                            source: int, target: int) -> bool | None:
    """Whether the path tracer finds no path from x_source to y_target (None: the tracer failed on the module)."""
    from seqlab.measure.paths import measure_paths

    layer = (lambda t: output(module(t))) if output is not None else module
    try:
        paths = measure_paths(layer, x.detach(), sources=[source])
        return paths.row(source, "products")[target] is None
    except Exception:  # noqa: BLE001 - a tracer failure leaves the zero undecided, named
        return None


def _residual(scaled: _Pulled, base: _Pulled, s: float, k: int, n: int = 0) -> float:
    """‖g_s − c·g_1‖ / ‖c·g_1‖, c = s^k·2^n: the two sides of uᵀJ(s) = s^k uᵀJ(1), read with the same rescalings
    (and n shadow factors 2)."""
    log_c = k * math.log(s) + n * _LN2
    if not -700 < log_c < 700:
        return math.inf
    expected = base.g * math.exp(log_c)
    difference = scaled.g - expected
    m = float(expected.abs().max())
    if not 0 < m < math.inf:
        return math.inf
    return float(torch.linalg.vector_norm(difference / m)) / float(torch.linalg.vector_norm(expected / m))


def measure_signal_path(module: torch.nn.Module, x: Tensor, *, source: int = 0, target: int = -1,
                        output: Callable[[object], Tensor] | None = None, scales: tuple[float, ...] = SCALES,
                        tolerance: float = TOLERANCE, residual: float = RESIDUAL, probes: int | None = None
                        ) -> SignalPath:
    """Transition factors a signal from x_source meets on its way to y_target, from uᵀJ(s) = s^k uᵀJ(1), float64.

    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> rnn = ElmanRNN(3, 4, generator=torch.Generator().manual_seed(0))
    >>> sp = measure_signal_path(rnn, torch.randn(1, 6, 3), source=1, target=5)  # 5 - 1 products by W_hh
    >>> sp.factors, sp.factor, sp.marked
    (4, 'W_hh', ('W_hh',))

    Args:
        module: a ``torch.nn.Module`` that declares a transition factor (itself or a submodule); it is copied to
            float64 and the copy is run, in eval mode.
        x: (T, d_in) or (1, T, d_in), any floating dtype (cast to float64).
        source, target: positions i and j (negative counts from the end; default 1 → T).
        output: picks the (…, T, d_out) tensor from what the module returns (default: the return value itself,
            e.g. ``lambda out: out[0]`` for a module returning (outputs, weights)).
        scales: the s ≠ 1 compared with s = 1 (one backward pass each, and one forward each when a factor is
            scaled in the forward); tolerance, residual: the acceptance rule (see the module docstring).
        probes: None (default): the count from one seeded Gaussian probe, the reach exact (d_out more directions
            pulled back at s = 1, batched where the forward's tensors are small); R >= 1: the count from the first
            of R seeded Gaussian output directions, the reach estimated from all R (R directions in all at s = 1).

    Returns:
        A :class:`SignalPath`; ``factors`` is None, with the reason, when J(s) is not read as one power of s times
        J(1); ``bound`` when submodules mix positions without declaring a factor.

    Raises:
        SeqlabError: ``module`` declares no transition factor (named), or one that its forward never applies; it
            cannot be copied to float64 or fails there; a bad x, position, output, scale or probe count.
    """
    if not isinstance(module, torch.nn.Module):
        raise SeqlabError(N_("module must be a torch.nn.Module, received {module_class}"),
                          module_class=type(module).__name__, parameter="module")
    if not declared_factors(module):
        raise SeqlabError(N_("{module_class} declares no transition factor (see seqlab.layers.transition), so its "
                             "signal path is not measured"), module_class=type(module).__name__, parameter="module")
    if not scales or any(isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0
                         or s == 1 for s in scales):
        raise SeqlabError(N_("scales must be finite numbers > 0 other than 1, received {scales!r}"), scales=scales,
                          parameter="scales")
    if probes is not None:
        require_positive_int("probes", probes)
    x = _check_input(x)
    T = x.shape[-2]
    source, target = _position("source", source, T), _position("target", target, T)
    try:
        copy64 = copy.deepcopy(module).to(torch.float64).eval()
    except Exception as error:  # noqa: BLE001 - a module that cannot be copied has no reading, named
        raise SeqlabError(N_("{module_class} cannot be copied to float64 for the measurement: {error_class}: {error}"),
                          module_class=type(module).__name__, error_class=type(error).__name__, error=error,
                          parameter="module") from error
    for parameter in copy64.parameters():
        parameter.requires_grad_(False)  # only ∂y/∂x is pulled back: no weight gradients
    declaring = _declaring(copy64)
    scales = tuple(float(s) for s in scales)
    in_forward = any(m.transition_scaling == FORWARD for m in declaring)
    marked = tuple(dict.fromkeys(m.transition_factor for m in declaring if m.transition_scaling == BACKWARD))
    x64 = x.detach().to(torch.float64).requires_grad_(True)
    scaling = Scaling()
    decisions: dict[int, int] = {}
    pulled_scaled: list[_Pulled] = []
    y_j: Tensor | None = None

    def _scaled_output(s: float) -> Tensor:
        """y_target (d_out,) at scale s: a new forward when a factor is scaled there, else the recorded one."""
        if not in_forward:
            return y_j
        return _forward(copy64, declaring, scaling, x64, s, output)[..., target, :].reshape(-1)

    for m in declaring:
        m.transition_scale = scaling
    try:
        with torch.enable_grad():
            watch, saved = _Watch(copy64), _Saved([*copy64.parameters(), *copy64.buffers()])
            try:
                y = _recorded_forward(copy64, declaring, scaling, x64, output, saved if probes != 1 else None)
            finally:
                watch.remove()
            undeclared, unchecked = watch.verdicts(T)
            del watch
            y_j = y[..., target, :].reshape(-1)  # (d_out,)
            d_out = y_j.shape[0]
            generator = torch.Generator().manual_seed(0)  # the same directions at every scale and every call
            count_u = torch.randn(d_out, dtype=torch.float64, generator=generator)
            if not y_j.requires_grad:  # no route at all from x to y_j in the graph
                base = _Pulled(torch.zeros(x.shape[-1], dtype=torch.float64))
                reach_parts = [base]
            else:
                base = _pull(y_j, x64, source, count_u, scaling, 1.0)  # decides where to rescale
                decisions = dict(scaling.decisions)
                if probes is None:  # every output direction: exact
                    reach_parts = _pull_rows(y_j, x64, source, torch.eye(d_out, dtype=torch.float64), scaling,
                                             decisions, saved.rows())
                else:
                    extra = torch.randn(probes - 1, d_out, dtype=torch.float64, generator=generator)
                    reach_parts = [base] + _pull_rows(y_j, x64, source, extra, scaling, decisions, saved.rows())
                shadow = 1 if decisions else 0  # one more factor 2 at each rescaled mark
                for s in scales:  # the same decisions replayed: uᵀJ(s) = s^k uᵀJ(1) mark for mark
                    pulled_scaled.append(_pull(_scaled_output(s), x64, source, count_u, scaling, s, decisions,
                                               shadow))
    finally:
        for m in declaring:
            m.transition_scale = None
    common = {"source": source, "target": target, "factor": ", ".join(declared_factors(module)),
              "modules": tuple(dict.fromkeys(type(m).__name__ for m in declaring)), "scales": scales,
              "tolerance": tolerance, "residual_tolerance": residual, "probes": probes, "rescaled": len(decisions),
              "undeclared": undeclared, "unchecked": unchecked, "marked": marked}

    def missing(reason: str, readings: tuple = (None,) * len(scales), worst: float | None = None) -> SignalPath:
        reach = 0.0 if reason == "no_dependence" else None  # an exact 0 by structure is a reach; an underflow is not
        return SignalPath(factors=None, readings=readings, residual=worst, reach=reach, log10_reach=None,
                          reason=reason, **common)

    if not base.finite or any(not p.finite for p in pulled_scaled):
        return missing("out_of_range")
    if base.zero:
        unreached = _structurally_unreached(copy64, x64, output, source, target) if y_j.requires_grad else True
        return missing({True: "no_dependence", False: "zero_gradient", None: "zero_undecided"}[unreached])
    if base.tiny() or any(p.zero or p.tiny() for p in pulled_scaled):
        return missing("out_of_range")
    k, n, readings, worst = _power(pulled_scaled, base, scales, len(decisions) if decisions else 0, tolerance,
                                   residual)
    exponent: int | None = 0
    if decisions and (k is None or n != len(decisions)):  # not every route crosses every rescaled mark
        exponent = None
        if k is None:  # a power read through uneven rescalings, or routes with different counts? once without
            with torch.enable_grad():
                for m in declaring:
                    m.transition_scale = scaling
                try:
                    plain = [_pull(_scaled_output(s), x64, source, count_u, scaling, s, decisions) for s in scales]
                finally:
                    for m in declaring:
                        m.transition_scale = None
            if any(not p.finite or p.zero or p.tiny() for p in plain):
                return missing("out_of_range")
            k, _, readings, worst = _power(plain, base, scales, 0, tolerance, residual)
    elif decisions:
        exponent = sum(decisions.values())  # every route picked up every rescaling
    if k is None:
        return missing("not_a_power", readings, worst)
    reach, log10_reach, reach_missing = _reach(reach_parts, exponent, probes)
    return SignalPath(factors=k, readings=readings, residual=worst, reach=reach, log10_reach=log10_reach,
                      reason=None, reach_missing=reach_missing, **common)


def _power(scaled: list[_Pulled], base: _Pulled, scales: tuple[float, ...], shadows: int, tolerance: float,
           residual: float) -> tuple[int | None, int, tuple[float, ...], float]:
    """(k or None, n, readings, worst residual): the integer power s^k·2^n that carries uᵀJ(1) to every scaled pass.

    n runs over 0…``shadows`` (the shadow factors 2 the routes may have crossed); the first n whose readings all lie
    within ``tolerance`` of one integer k and whose residuals stay within ``residual`` is taken. None when no n
    does: the readings and residual returned are those of the n whose first reading lies nearest an integer.
    """
    log_base = base.log_norm()
    best: tuple[float, int, tuple[float, ...], float] | None = None
    for n in range(shadows + 1):
        readings = tuple((p.log_norm() - log_base - n * _LN2) / math.log(s) for p, s in zip(scaled, scales))
        k = round(readings[0])
        worst = max(_residual(p, base, s, k, n) for p, s in zip(scaled, scales))
        if all(abs(r - k) <= tolerance for r in readings) and worst <= residual:
            return k, n, readings, worst
        distance = abs(readings[0] - k)
        if best is None or distance < best[0]:
            best = (distance, n, readings, worst)
    return None, best[1], best[2], best[3]


def _reach(parts: list[_Pulled], exponent: int | None, probes: int | None
           ) -> tuple[float | None, float | None, str | None]:
    """(reach, log₁₀ reach, why missing): ‖J(1)‖_F from the probes' rescaled gradients, in log space.

    The gradients read are 2^``exponent`` times the true ones (0: nothing rescaled); None when the routes crossed
    different rescaled marks, so the reach is not read. With probes, ‖UᵀJ‖_F² / R estimates ‖J‖_F².
    """
    if exponent is None:
        return None, None, "uneven_rescaling"
    if any(not p.finite for p in parts):
        return None, None, "out_of_range"
    logs = [2 * p.log_norm() for p in parts if not p.zero]  # ln ‖g‖², never ‖g‖² itself
    if not logs:
        return None, None, "out_of_range"
    top = max(logs)
    total = top + math.log(sum(math.exp(v - top) for v in logs))
    log_reach = 0.5 * (total - (math.log(len(parts)) if probes is not None else 0.0)) - exponent * _LN2
    reach = math.exp(log_reach) if math.log(torch.finfo(torch.float64).tiny) <= log_reach < 709.0 else None
    return reach, log_reach / math.log(10.0), None


@dataclass(frozen=True)
class SignalReading:
    """A module's signal path from x_1 to y_T (:func:`read_signal_path`), or why it has none.

    Attributes:
        module: the module's class name.
        path: the :class:`SignalPath` (its own ``factors`` may still be None, with its reason), or None when absent.
        absent: None, or one of :data:`ABSENT`.
        detail: the refusal's message when ``absent`` is ``"refused"``.
    """

    module: str
    path: SignalPath | None
    absent: str | None = None
    detail: str | None = None


def read_signal_path(module: object, x: Tensor, *, output: Callable[[object], Tensor] | None = None,
                     probes: int | None = PROBES) -> SignalReading:
    """The signal path from x_1 to y_T of any module, absent and named where it declares no factor; never raises.

    >>> read_signal_path(torch.nn.RNN(2, 2, batch_first=True), torch.zeros(1, 3, 2)).absent
    'no_factor'

    Args:
        module: any callable; only a ``torch.nn.Module`` that declares a transition factor gets a reading.
        x: (T, d_in) or (B, T, d_in); with B > 1 the first sequence is read.
        output: as :func:`measure_signal_path`'s.
        probes: as :func:`measure_signal_path`'s, default :data:`PROBES` (one forward and two backward passes
            for a factor marked in the backward; None reads the reach exactly, d_out more passes).

    Returns:
        A :class:`SignalReading`.
    """
    name = type(module).__name__
    if not declared_factors(module):
        return SignalReading(name, None, "no_factor")
    if isinstance(x, Tensor) and x.dim() == 3 and x.shape[0] > 1:
        x = x[:1]  # (1, T, d_in)
    try:
        return SignalReading(name, measure_signal_path(module, x, source=0, target=-1, output=output, probes=probes))
    except SeqlabError as error:
        return SignalReading(name, None, "refused", str(error))
