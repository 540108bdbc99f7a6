"""The signal's path: how many transition factors a signal from x_i meets on its way to y_j, measured (issue 23).

seqlab's *graph path* (:mod:`seqlab.measure.paths`) counts the ops in a row between x_i and y_j: how long y_j
waits for x_i. The lesson's reading of path (L3, L4) is about something else: what a signal from x_i is
multiplied by before it arrives. In the recurrence it is W_hh once per step, j - i times, so it shrinks or grows
geometrically (L3); in attention it is one weight α_ji whatever the distance (L4). A parallel scan of a linear
recurrence (Hillis & Steele 1986; Blelloch 1990, §1.4) shortens the first — ⌈log₂ T⌉ rounds instead of T steps —
and leaves the second alone: the scan groups the same T - 1 decays differently, and ∂y_T/∂x_1 is the same
function. This module measures that second count.

Each seqlab mixer declares its transition factor (:mod:`seqlab.layers.transition`). With every declared factor
scaled by s, each route from x_i to y_j picks up s once per factor it crosses, so

    J_ji(s) = ∂y_j/∂x_i (s) = s^k · J_ji(1)        (d_out × d_in)

when every route crosses the same number k of factors. :func:`measure_signal_path` computes J_ji in float64 at
s = 1 and at each of :data:`SCALES`, reads k = log(‖J(s)‖_F / ‖J(1)‖_F) / log s at every scale, and accepts the
nearest integer only when every reading lies within :data:`TOLERANCE` of it and ‖J(s) − s^k J(1)‖_F stays within
:data:`RESIDUAL` of ‖s^k J(1)‖_F. Otherwise the pair is *not measured*, with the reason named (:data:`REASONS`):
routes that cross different numbers of factors (Mamba's causal convolution spreads x_i over several positions),
no dependence at all, or a norm out of float64's range. k is a property of the function, not of the code that
computes it: the loop and the scan of one layer give the same k, while their graph paths differ.

A module that declares no factor (``torch.nn.RNN``, a Hugging Face module, a user's module) is refused by name:
its signal path is absent, never guessed. The reach ‖J_ji(1)‖_F (:mod:`seqlab.measure.reach`'s norm) is reported
beside k. The module is copied to float64 for the measurement; the caller's module and the default forward
(scale None) are left as they were.

Units: factors (an integer count of transition factors). Shapes: T positions, d_in input width, d_out output width.
Source: lesson claims L3 (a recurrence multiplies by W_hh per step) and L4 (attention, one weight per pair); Hillis
& Steele 1986 and Blelloch 1990, §1.4, for the scan.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.layers.transition import declares_transition

__all__ = ["ABSENT", "REASONS", "RESIDUAL", "SCALES", "TOLERANCE", "SignalPath", "SignalReading", "declared_factors",
           "measure_signal_path", "read_signal_path"]

#: The scales s at which J(s) is compared with J(1) (s^k stays within float64's range for k up to about 3,000).
SCALES = (1.25, 0.8)
#: Largest distance of a reading log(‖J(s)‖/‖J(1)‖)/log s from the integer k it is accepted as.
TOLERANCE = 1e-6
#: Largest ‖J(s) − s^k J(1)‖_F / ‖s^k J(1)‖_F accepted (float64 rounding of a long product is about T·2⁻⁵²).
RESIDUAL = 1e-9
#: Why a pair is not measured: routes with different factor counts; no dependence (J(1) = 0); a norm that
#: overflows, underflows or is NaN in float64.
REASONS = ("not_a_power", "no_dependence", "out_of_range")
#: Why a module has no reading at all (:func:`read_signal_path`): it declares no transition factor; or the
#: measurement refused it (a declared factor its forward never applies, an output without the input's positions).
ABSENT = ("no_factor", "refused")


@dataclass(frozen=True)
class SignalPath:
    """Transition factors met from x_i to y_j (``factors``; None when not measured) and the reach beside them.

    Attributes:
        source, target: i and j, positions counted from 0.
        factor: the declared factor(s), e.g. ``"W_hh"``, ``"a_t"``, ``"α_ji"`` (joined by ", " when several).
        modules: class names of the modules whose factors were scaled.
        factors: k, the integer count (unit: factors), or None when not measured.
        readings: log(‖J(s)‖/‖J(1)‖)/log s at each scale (None where a norm is 0 or not finite).
        residual: largest ‖J(s) − s^k J(1)‖/‖s^k J(1)‖ over the scales for the nearest integer k (None: not computed).
        reach: ‖∂y_j/∂x_i‖_F at s = 1, float64.
        scales, tolerance, residual_tolerance: the acceptance rule used.
        reason: one of :data:`REASONS` when ``factors`` is None, else None.
        probes: None when the whole block J was taken (``reach`` exact); else R, the Gaussian output directions U
            the test ran on: UᵀJ(s) = s^k UᵀJ(1) (for random U it holds only when J's does), and ``reach`` is the
            estimate ‖UᵀJ(1)‖_F / √R of ‖J(1)‖_F.
    """

    source: int
    target: int
    factor: str
    modules: tuple[str, ...]
    factors: int | None
    readings: tuple[float | None, ...]
    residual: float | None
    reach: float
    scales: tuple[float, ...]
    tolerance: float
    residual_tolerance: float
    reason: str | None
    probes: int | None = None
    dtype: str = "float64"

    @property
    def measured(self) -> bool:
        """Whether k was accepted as an integer."""
        return self.factors is not None


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
        raise SeqlabError(f"x must be a floating tensor of shape (T, d_in) or (1, T, d_in) with T >= 1, "
                          f"received {shape}", parameter="x")
    return x


def _position(name: str, value: object, T: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -T <= value < T:
        raise SeqlabError(f"{name} must be a position in [{-T}, {T - 1}] for T = {T}, received {value!r}",
                          parameter=name)
    return value % T


def _jacobian_block(y: Tensor, x: Tensor, source: int, target: int, directions: Tensor | None) -> Tensor:
    """∂y_target/∂x_source, (d_out, d_in), one backward pass per output element; or UᵀJ (R, d_in) for U (d_out, R)."""
    y_j = y[..., target, :].reshape(-1)  # (d_out,)
    if directions is not None and y_j.requires_grad:
        y_j = directions.T @ y_j  # (R,): the probed outputs uᵀy_j
    rows = []
    for c in range(y_j.shape[0]):
        if not y_j.requires_grad:
            rows.append(torch.zeros(x.shape[-1], dtype=x.dtype))
            continue
        (grad,) = torch.autograd.grad(y_j[c], x, retain_graph=True, allow_unused=True)
        rows.append(torch.zeros(x.shape[-1], dtype=x.dtype) if grad is None else grad[..., source, :].reshape(-1))
    return torch.stack(rows)  # (d_out, d_in)


def _run(copy64: torch.nn.Module, declaring: list[torch.nn.Module], x: Tensor, s: float,
         output: Callable[[object], Tensor] | None, source: int, target: int, probes: int | None) -> Tensor:
    """J(s): every declared factor scaled by s, the block for (target, source); refuses a factor never applied."""
    for m in declaring:
        m.transition_scale, m.transition_applied = s, 0
    try:
        try:
            result = copy64(x)
            y = output(result) if output is not None else result
        except SeqlabError:
            raise
        except Exception as error:  # noqa: BLE001 - the module failing on its float64 copy is named, not raised raw
            raise SeqlabError(f"{type(copy64).__name__} fails on its float64 copy: {type(error).__name__}: {error}",
                              parameter="module") from error
        if not isinstance(y, Tensor) or y.dim() != x.dim() or y.shape[:-1] != x.shape[:-1]:
            shape = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
            raise SeqlabError(f"the output must have the input's positions, shape {tuple(x.shape[:-1])} + (d_out,); "
                              f"received {shape} (pass output= to pick the tensor)", parameter="output")
        unused = [type(m).__name__ for m in declaring if m.transition_applied == 0]
        if unused:
            raise SeqlabError(f"{', '.join(unused)} declares a transition factor that this forward never applied; "
                              f"its signal path is not measured", parameter="module")
        directions = None
        if probes is not None:  # the same U at every scale: drawn from a fixed seed
            directions = torch.randn(y.shape[-1], probes, dtype=y.dtype, generator=torch.Generator().manual_seed(0))
        return _jacobian_block(y, x, source, target, directions)
    finally:
        for m in declaring:
            m.transition_scale = None


def measure_signal_path(module: torch.nn.Module, x: Tensor, *, source: int = 0, target: int = -1,
                        output: Callable[[object], Tensor] | None = None, scales: tuple[float, ...] = SCALES,
                        tolerance: float = TOLERANCE, residual: float = RESIDUAL, probes: int | None = None
                        ) -> SignalPath:
    """Transition factors a signal from x_source meets on its way to y_target, from J(s) = s^k J(1), float64.

    >>> from seqlab.layers.recurrent import ElmanRNN
    >>> rnn = ElmanRNN(3, 4, generator=torch.Generator().manual_seed(0))
    >>> sp = measure_signal_path(rnn, torch.randn(1, 6, 3), source=1, target=5)  # 5 - 1 products by W_hh
    >>> sp.factors, sp.factor
    (4, 'W_hh')

    Args:
        module: a ``torch.nn.Module`` that declares a transition factor (itself or a submodule); it is copied to
            float64 and the copy is run, in eval mode.
        x: (T, d_in) or (1, T, d_in), any floating dtype (cast to float64).
        source, target: positions i and j (negative counts from the end; default 1 → T).
        output: picks the (…, T, d_out) tensor from what the module returns (default: the return value itself,
            e.g. ``lambda out: out[0]`` for a module returning (outputs, weights)).
        scales: the s ≠ 1 compared with s = 1; tolerance, residual: the acceptance rule (see the module docstring).
        probes: None (default) takes the whole block, d_out backward passes per scale; R >= 1 tests R Gaussian
            output directions instead (R backward passes; the count is as exact, the reach an estimate).

    Returns:
        A :class:`SignalPath`; ``factors`` is None, with the reason, when J(s) is not one power of s times J(1).

    Raises:
        SeqlabError: ``module`` declares no transition factor (named), or one that its forward never applies; it
            cannot be copied to float64 or fails there; a bad x, position, output or scale.
    """
    if not isinstance(module, torch.nn.Module):
        raise SeqlabError(f"module must be a torch.nn.Module, received {type(module).__name__}", parameter="module")
    if not declared_factors(module):
        raise SeqlabError(f"{type(module).__name__} declares no transition factor (see seqlab.layers.transition), "
                          f"so its signal path is not measured", parameter="module")
    if not scales or any(isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0
                         or s == 1 for s in scales):
        raise SeqlabError(f"scales must be finite numbers > 0 other than 1, received {scales!r}", parameter="scales")
    if probes is not None:
        require_positive_int("probes", probes)
    x = _check_input(x)
    T = x.shape[-2]
    source, target = _position("source", source, T), _position("target", target, T)
    try:
        copy64 = copy.deepcopy(module).to(torch.float64).eval()
    except Exception as error:  # noqa: BLE001 - a module that cannot be copied has no reading, named
        raise SeqlabError(f"{type(module).__name__} cannot be copied to float64 for the measurement: "
                          f"{type(error).__name__}: {error}", parameter="module") from error
    declaring = _declaring(copy64)
    x64 = x.detach().to(torch.float64).requires_grad_(True)
    with torch.enable_grad():
        base = _run(copy64, declaring, x64, 1.0, output, source, target, probes)  # (d_out | R, d_in)
        scaled = [_run(copy64, declaring, x64, float(s), output, source, target, probes) for s in scales]
    base_norm = float(torch.linalg.matrix_norm(base))  # ‖J(1)‖_F, or ‖UᵀJ(1)‖_F with probes
    reach = base_norm / (math.sqrt(probes) if probes is not None else 1.0)  # E‖UᵀJ‖² = R‖J‖² for Gaussian U
    norms = [float(torch.linalg.matrix_norm(J)) for J in scaled]
    readings = tuple(math.log(n / base_norm) / math.log(s) if reach > 0 and 0 < n < math.inf and math.isfinite(reach)
                     else None for n, s in zip(norms, scales))
    common = dict(source=source, target=target, factor=", ".join(declared_factors(module)),
                  modules=tuple(dict.fromkeys(type(m).__name__ for m in declaring)), readings=readings, reach=reach,
                  scales=tuple(float(s) for s in scales), tolerance=tolerance, residual_tolerance=residual,
                  probes=probes)
    if not math.isfinite(reach) or any(not math.isfinite(n) for n in norms):
        return SignalPath(factors=None, residual=None, reason="out_of_range", **common)
    if reach == 0:
        return SignalPath(factors=None, residual=None, reason="no_dependence", **common)
    if any(r is None for r in readings):
        return SignalPath(factors=None, residual=None, reason="out_of_range", **common)
    k = round(readings[0])
    expected = [base * s ** k for s in scales]
    sizes = [float(torch.linalg.matrix_norm(e)) for e in expected]
    if any(not 0 < size < math.inf for size in sizes):
        return SignalPath(factors=None, residual=None, reason="out_of_range", **common)
    worst = max(float(torch.linalg.matrix_norm(J - e)) / size for J, e, size in zip(scaled, expected, sizes))
    accepted = all(abs(r - k) <= tolerance for r in readings) and worst <= residual
    return SignalPath(factors=k if accepted else None, residual=worst, reason=None if accepted else "not_a_power",
                      **common)


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
                     probes: int | None = None) -> SignalReading:
    """The signal path from x_1 to y_T of any module, absent and named where it declares no factor; never raises.

    >>> read_signal_path(torch.nn.RNN(2, 2, batch_first=True), torch.zeros(1, 3, 2)).absent
    'no_factor'

    Args:
        module: any callable; only a ``torch.nn.Module`` that declares a transition factor gets a reading.
        x: (T, d_in) or (B, T, d_in); with B > 1 the first sequence is read.
        output, probes: as :func:`measure_signal_path`'s.

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
