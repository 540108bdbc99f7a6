"""Reach: how strongly one output position depends on each input position, by autograd.

For a sequence layer y = f(x) with x of shape (T, d_in) and y of shape (T, d_out), the reach
from input position i to output position p is the Frobenius norm of one Jacobian block,

    reach_i = || dy_p / dx_i ||_F,      dy_p / dx_i in R^{d_out x d_in}.

The lesson predicts two shapes for this curve. In a recurrence the contribution of x_i to y_p
passes through p - i products by the same W_hh, so reach falls (or grows) geometrically with
distance, at a rate set by the spectral radius rho of W_hh (L3; tanh only adds shrinkage).
In attention x_i reaches y_p through one weight alpha_pi, so reach does not depend on how far
apart the two positions are (L4). :meth:`Reach.decay_per_step` fits that per-step factor.

The reported dependency is *numerical* (the derivative), not structural: an exactly-zero
attention weight or a masked score cuts it even where the op graph still connects the rows.
Beside the exact zeros (structural zeros), the norms that are nonzero but within the rounding band of
:mod:`seqlab.measure.dependence` (64 eps times the largest norm) are counted as ``rounding``: the one
dependence rule, with both answers reported where they disagree.

From an initial state (:mod:`seqlab.measure.reach_state`): with ``initial_state=`` the layer runs from the
state given (``layer(x, h0)``, ``layer(x, (h0, c0))``, or seqlab's ``step`` from ``initial_state(1)``), and the
result also carries ||dy_p/dh_0||_F and the final state's ||dh_T/dh_0||_F, ||dc_T/dc_0||_F (:class:`StateReach`).

NaN and layout (:mod:`seqlab.measure.reach_guards`): a NaN y_p (read from the forward the backward runs
through, or with ``batched`` from a forward of x alone) has NaN norms (``undefined``); a finite
y_p whose backward is poisoned by another row's NaN is measured again in forward mode; with ``batched``
the copies go along the module's own batch dimension, and a layer whose output contradicts it is refused.

Shapes: T positions, d_in input width, d_out output width, k probes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.measure.switches import warnings_ignored
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.dependence import judge
from seqlab.measure.reach_guards import batch_dim, check_layout, forward_rows
from seqlab.measure.reach_state import StateReach, run_from_state, state_reach, state_tuple, vjp_many

#: Up to this output width the exact estimator is always used by :func:`auto_probes`.
EXACT_MAX_D_OUT = 64
#: Up to this many backward rows x positions (d_out * T) the exact estimator is used anyway.
EXACT_MAX_WORK = 65_536
#: Probes used by :func:`auto_probes` when the exact estimator would be too costly.
DEFAULT_PROBES = 16


@dataclass(frozen=True)
class Reach:
    """Reach norms ||dy_position / dx_i||_F for every input position i, with how they were got.

    Attributes:
        norms: length T; entry i is the Frobenius norm of the d_out x d_in Jacobian block
            (or its Hutchinson estimate), as a Python float (the reduction is done in float64).
        position: the output position measured, resolved to 0-based.
        estimator: ``"exact"`` or ``"hutchinson-k"`` (k Gaussian probes).
        dtype: the dtype the gradients were computed in, e.g. ``"float64"``.
        tiny: smallest positive normal number of that dtype (``torch.finfo(dtype).tiny``);
            gradients below it are subnormal and lose precision.
        smallest_subnormal: smallest positive number of that dtype; below it a gradient is 0.
        zeros: how many norms are exactly 0.0.
        subnormals: how many norms are nonzero but below ``tiny``.
        backward: ``"batched"`` (one vmapped backward) or ``"loop"`` (one backward per row,
            used only when the layer has an op without a batching rule); ``"forward"`` when NaN made
            the norms be measured in forward mode.
        rounding: how many norms are nonzero but within the rounding band (structural, not numerical).
        undefined: how many norms are NaN (y_position is NaN, or its derivative is).
        state: with ``initial_state``, the reach from it (:class:`~seqlab.measure.reach_state.StateReach`:
            ||dy_position/ds_0|| and the final state's ||ds_T/ds_0||); None otherwise.
    """

    norms: tuple[float, ...]
    position: int
    estimator: str
    dtype: str
    tiny: float
    smallest_subnormal: float
    zeros: int
    subnormals: int
    backward: str
    rounding: int = 0
    undefined: int = 0
    state: StateReach | None = None

    @property
    def first(self) -> float:
        """Reach from input position 0 (the lesson's "position 1")."""
        return self.norms[0]

    @property
    def ratio_first_to_last(self) -> float | None:
        """``first / norms[position]``, or None when the norm at ``position`` is 0."""
        last = self.norms[self.position]
        return self.first / last if last != 0.0 else None

    def factor_per_step(self) -> float | None:
        """Per-step factor from the near end to the far end: (norms[0] / norms[position]) ** (1 / position).

        The geometric mean factor per step of distance between the nearest input (distance 0, the
        output's own position) and the farthest (position 0), so by construction
        ``norms[position] * factor ** position == norms[0]``: the factor agrees with the reach it sits
        beside, whatever happens in between (``decay_per_step`` fits all distances and need not).

        >>> Reach((0.25, 0.5, 1.0), 2, "exact", "float64", 2.2e-308, 5e-324, 0, 0, "batched").factor_per_step()
        0.5

        Returns:
            The factor (dimensionless), or None when ``position`` is 0 or either end's norm is 0 or not finite.
        """
        near, far = self.norms[self.position], self.norms[0]
        if self.position == 0 or not (near > 0.0 and far > 0.0 and math.isfinite(near) and math.isfinite(far)):
            return None
        return math.exp((math.log(far) - math.log(near)) / self.position)

    def decay_per_step(self) -> float:
        """Per-step factor exp(slope) of a least-squares fit of log(norm) on distance.

        Distance is ``position - i`` over the inputs i <= position whose norm is finite and
        nonzero. About rho (spectral radius of W_hh) for a recurrence before tanh shrinkage,
        about 1 for attention (L3, L4).

        >>> Reach((0.25, 0.5, 1.0), 2, "exact", "float64", 2.2e-308, 5e-324, 0, 0,
        ...       "batched").decay_per_step()
        0.5

        Raises:
            SeqlabError: fewer than two usable points (e.g. ``position`` is 0, or every
                earlier norm underflowed to 0).
        """
        points = [
            (float(self.position - i), math.log(n))
            for i, n in enumerate(self.norms[: self.position + 1])
            if n > 0.0 and math.isfinite(n)
        ]
        if len(points) < 2:
            raise SeqlabError(N_("decay_per_step needs at least 2 nonzero norms at i <= position {position}, "
                                 "received {points_count}"), position=self.position, points_count=len(points))
        mean_d = sum(d for d, _ in points) / len(points)
        mean_l = sum(l for _, l in points) / len(points)
        s_dd = sum((d - mean_d) ** 2 for d, _ in points)
        s_dl = sum((d - mean_d) * (l - mean_l) for d, l in points)
        return math.exp(s_dl / s_dd)


def auto_probes(d_out: int, T: int) -> int | None:
    """Pick an estimator: None (exact) when d_out backward rows are cheap, else a probe count.

    Exact needs d_out backward rows; Hutchinson needs k. Exact is chosen when
    d_out <= 64 or d_out * T <= 65,536, otherwise 16 probes. With k Gaussian probes the
    squared norm of a block J has relative standard deviation sqrt(2 / (k * r_eff)), where
    r_eff = ||J||_F^4 / ||J J^T||_F^2 is its effective rank (1 <= r_eff <= min(d_out, d_in));
    the norm itself has half that: k = 16 gives at most 35% on ||J||_F^2, 18% on ||J||_F.

    >>> auto_probes(32, 1000) is None, auto_probes(512, 1000)
    (True, 16)

    Args:
        d_out: output width of the layer (int >= 1).
        T: number of positions (int >= 1).

    Returns:
        None for the exact estimator, or the number of probes.

    Raises:
        SeqlabError: d_out or T is not a positive integer.
    """
    require_positive_int("d_out", d_out)
    require_positive_int("T", T)
    if d_out <= EXACT_MAX_D_OUT or d_out * T <= EXACT_MAX_WORK:
        return None
    return DEFAULT_PROBES


def _first_output(out: object) -> object:
    return out[0] if isinstance(out, tuple) else out


def _vjp_rows(y_p: Tensor, x: Tensor, rows: Tensor) -> tuple[Tensor, str]:
    """rows^T J for each row, J = dy_p/dx: (R, d_out) -> (R, T, d_in), and how it was run."""
    try:
        # vmap falls back to a slow loop (with this warning) for ops without a batching rule;
        # the result is still right, so the warning is not the caller's concern.
        with warnings_ignored(".*performance drop.*"):
            (g,) = torch.autograd.grad(
                y_p, x, grad_outputs=rows, is_grads_batched=True,
                retain_graph=True, allow_unused=True,
            )
        backward = "batched"
    except RuntimeError:  # an op whose backward cannot be vmapped at all
        parts = [
            torch.autograd.grad(y_p, x, grad_outputs=r, retain_graph=True, allow_unused=True)[0]
            for r in rows
        ]
        parts = [torch.zeros_like(x) if p is None else p for p in parts]
        g, backward = torch.stack(parts), "loop"
    if g is None:  # y_p does not use x at all
        g = torch.zeros((rows.shape[0], *x.shape), dtype=x.dtype, device=x.device)
    return g, backward  # (R, T, d_in)


def _backward_rows(d_out: int, probes: int | None, seed: int, x: Tensor) -> tuple[Tensor, str]:
    """The vectors pushed back through dy_p/dx: identity rows (exact) or seeded Gaussian probes."""
    if probes is None:
        return torch.eye(d_out, dtype=x.dtype, device=x.device), "exact"  # (d_out, d_out)
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randn(probes, d_out, generator=generator, dtype=x.dtype)  # (k, d_out)
    return rows.to(x.device), f"hutchinson-{probes}"


def _checked_output(y: object, x: Tensor, leading: tuple[int, ...]) -> Tensor:
    """The layer's output if it has shape leading + (d_out,) and x's dtype, else SeqlabError."""
    if not isinstance(y, Tensor) or y.dim() != len(leading) + 1 or tuple(y.shape[:-1]) != leading:
        got = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
        raise SeqlabError(N_("layer must return shape {leading} + (d_out,), received {got}"), leading=leading, got=got)
    if y.dtype != x.dtype:
        raise SeqlabError(N_("layer returned {dtype} for {dtype2} input; cast the layer to {dtype2} first"),
                          dtype=y.dtype, dtype2=x.dtype)
    return y


def _output_alone(layer: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """The layer's output on x alone, without gradient: (T, d_out). Tells a NaN output from a NaN gradient."""
    with torch.no_grad():
        return _checked_output(_first_output(layer(x.detach())), x, (x.shape[0],))


def _replicated_rows(layer: Callable[[Tensor], Tensor], x: Tensor, p: int, copies_count: int,
                     probes: int | None, seed: int, alone: Tensor) -> tuple[Tensor, str]:
    """rows^T J by one backward through R copies of x (R = probes, or d_out when exact): -> (R, T, d_in).

    The copies go along the layer's own batch dimension (:func:`~seqlab.measure.reach_guards.batch_dim`);
    the first copy's output is checked against the output on x alone (``reach_guards.check_layout``).
    """
    dim = batch_dim(layer)
    copies = x.detach().unsqueeze(dim).repeat_interleave(copies_count, dim=dim).requires_grad_(True)
    y = _first_output(layer(copies))  # (R, T, d_out), or (T, R, d_out) sequence-first
    y = _checked_output(y.movedim(dim, 0) if isinstance(y, Tensor) and y.dim() == 3 else y, x,
                        (copies_count, x.shape[0]))  # (R, T, d_out)
    check_layout(layer, y[0], alone)
    rows, estimator = _backward_rows(y.shape[-1], probes, seed, x)  # (R, d_out)
    if not y.requires_grad:  # the output is a constant of x
        return torch.zeros_like(copies), estimator
    (g,) = torch.autograd.grad((y[:, p] * rows).sum(), copies, allow_unused=True)
    return (torch.zeros_like(copies) if g is None else g).movedim(dim, 0), estimator


def _single_forward_rows(layer: Callable[[Tensor], Tensor], x: Tensor, p: int, probes: int | None,
                         seed: int, batched: bool, alone: Tensor | None) -> tuple[Tensor, str, str, Tensor]:
    """rows^T J from one forward of x (T, d_in): a vmapped backward, or R copies when ``batched`` (which needs
    ``alone``); with y_p (d_out,) of that forward, detached (the NaN check reads it when there is no ``alone``)."""
    y_p = _checked_output(_first_output(layer(x)), x, (x.shape[0],))[p]  # (d_out,)
    rows, estimator = _backward_rows(y_p.shape[0], probes, seed, x)  # (R, d_out)
    if not y_p.requires_grad:  # the output is a constant of x
        zeros = torch.zeros((rows.shape[0], *x.shape), dtype=x.dtype, device=x.device)
        return zeros, estimator, "batched", y_p.detach()
    if batched:  # exact rows through d_out copies
        g, estimator = _replicated_rows(layer, x, p, rows.shape[0], probes, seed, alone)
        return g, estimator, "replicated batch", y_p.detach()
    g, backward = _vjp_rows(y_p, x, rows)  # (R, T, d_in)
    return g, estimator, backward, y_p.detach()


def _block_norms(g: Tensor, mean: bool) -> Tensor:
    """||J_i||_F per position from rows^T J (R, T, d_in), summed (exact) or averaged (probes), in float64.

    Each position is scaled by its largest entry before squaring, so gradients near the dtype's
    floor (1e-300 in float64) do not underflow a second time when squared.
    """
    g = g.to(torch.float64)  # (R, T, d_in)
    scale = g.abs().amax(dim=(0, 2))  # (T,)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    squares = (g / safe[None, :, None]).pow(2).sum(dim=2)  # (R, T)
    fro_sq = squares.mean(dim=0) if mean else squares.sum(dim=0)  # (T,)
    return fro_sq.sqrt() * scale


def measure_reach(
    layer: Callable[[Tensor], Tensor],
    x: Tensor,
    *,
    position: int = -1,
    probes: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    batched: bool = False,
    initial_state: Tensor | tuple[Tensor, ...] | None = None,
) -> Reach:
    """Measure ||dy_position / dx_i||_F for every input position i in one batched backward.

    Exact (``probes=None``): the d_out rows of the identity are pushed back at once
    (``is_grads_batched``), giving every Jacobian block J_i and ||J_i||_F^2 = sum of squares.
    Hutchinson (``probes=k``): ||J_i||_F^2 ~= (1/k) sum_u ||J_i^T u||^2 over k seeded
    Gaussian vectors u in R^{d_out}; see :func:`auto_probes` for its accuracy.

    float64 is the default because long chains push fp32 gradients below 2^-126 (subnormal)
    and then to exactly 0 below 2^-149 (~1e-45), which would read as "no dependency"; the
    result reports the dtype's floor (``tiny``, ``smallest_subnormal``) and counts the zeros.

    >>> rnn = torch.nn.RNN(3, 4).double()
    >>> r = measure_reach(rnn, torch.randn(6, 3))
    >>> len(r.norms), r.position, r.estimator, r.dtype
    (6, 5, 'exact', 'float64')

    Args:
        layer: maps x (T, d_in) to y (T, d_out); a tuple result is read at element 0 (as
            ``torch.nn.RNN`` returns). Cast it to ``dtype`` beforehand and put modules in
            ``eval()`` mode (dropout breaks the measurement).
        x: input, shape (T, d_in), T >= 2; cast to ``dtype`` here (device kept).
        position: output position p, in [-T, T); default -1 (the last).
        probes: None for exact, or k >= 1 Hutchinson probes.
        seed: seed of the probe generator (used only with ``probes``).
        dtype: floating dtype the gradients are computed in.
        batched: the layer also maps (R, T, d_in) to (R, T, d_out) row by row (as every layer with
            a batch dimension does). Then x is replicated R times (one copy per backward row) and a
            single ordinary backward gives all rows — much faster than vmapping the backward of a
            long loop. Use it only for layers whose batch elements do not interact. The copies go
            along the module's own batch dimension (``batch_first``, where it has one), and a layer
            whose first copy's output differs from its output on x alone is refused.
        initial_state: the state the recurrence starts from, differentiated too: h0 (num_layers, d_h) for an
            ``nn.RNN``/``nn.GRU`` on an unbatched x, ``(h0, c0)`` for an ``nn.LSTM`` (the layer is called as
            ``layer(x, h0)`` and must return ``(y, h_n)`` or ``(y, (h_n, c_n))``), or, for a layer with seqlab's
            ``step``/``initial_state`` (:mod:`seqlab.layers`), the tuple of (1, …) tensors ``initial_state(1)``
            gives, run step by step. Floating tensors are cast to ``dtype``; others (masks) are held fixed.
            Not with ``batched``. The result's ``state`` holds ||dy_p/ds_0||_F (units of y per unit of state)
            and ||ds_T/ds_0||_F between final and initial states, exact (identity rows).

    >>> lstm = torch.nn.LSTM(3, 4).double()
    >>> r = measure_reach(lstm, torch.randn(6, 3), initial_state=(torch.randn(1, 4), torch.randn(1, 4)))
    >>> r.state.names, r.state.final_names, r.state.norm("c_T", "c_0") > 0  # the cell's path, Π diag(f_t)
    (('h_0', 'c_0'), ('h_T', 'c_T'), True)

    Returns:
        A :class:`Reach` with T norms (units of y per unit of x).

    Raises:
        SeqlabError: x is not a 2-D tensor, T < 2, position out of range, probes < 1,
            dtype not floating, the layer returns a non-(T, d_out) tensor or another dtype,
            (``batched``) its output contradicts the batch layout, or ``initial_state`` is not a tensor or a
            tuple of tensors (with a floating one), comes with ``batched``, or the layer does not return its
            final state.

    Source: lesson claims L3 (path of T-1 products in a recurrence) and L4 (one factor in
    attention).
    """
    if not isinstance(x, Tensor) or x.dim() != 2:
        got = f"{x.dim()}-dim tensor" if isinstance(x, Tensor) else type(x).__name__
        raise SeqlabError(N_("x must be a 2-dim tensor of shape (T, d_in), received {got}"), got=got)
    T = x.shape[0]
    if T < 2:
        raise SeqlabError(N_("x must have T >= 2 positions, received T = {T}"), T=T)
    if isinstance(position, bool) or not isinstance(position, int) or not -T <= position < T:
        raise SeqlabError(N_("position must be an integer in [{value}, {value2}], received {position!r}"), value=-T,
                          value2=T - 1, position=position)
    if probes is not None:
        require_positive_int("probes", probes)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SeqlabError(N_("seed must be an integer, received {seed!r}"), seed=seed)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise SeqlabError(N_("dtype must be a floating torch dtype, received {dtype!r}"), dtype=dtype)
    p = position % T
    if initial_state is not None:
        if batched:
            raise SeqlabError(N_("initial_state runs the layer once from that state; it cannot be combined with "
                                 "batched"))
        return _reach_from_state(layer, x, p, state_tuple(initial_state), probes, seed, dtype)

    with torch.enable_grad():
        xd = x.detach().to(dtype).requires_grad_(True)  # (T, d_in)
        # batched: the output on x alone, for the layout check and the NaN check; else the one forward serves both
        alone = _output_alone(layer, xd) if batched else None  # (T, d_out)
        if batched and probes is not None:  # R = probes is known: one forward of R copies, one backward
            g, estimator = _replicated_rows(layer, xd, p, probes, probes, seed, alone)  # (k, T, d_in)
            backward, y_p = "replicated batch", alone[p]
        else:
            g, estimator, backward, y_p = _single_forward_rows(layer, xd, p, probes, seed, batched, alone)
            y_p = y_p if alone is None else alone[p]

    norms_tensor = _block_norms(g.detach(), mean=probes is not None)  # (T,)
    if bool(y_p.isnan().any()):  # y_p is not a number: it has no derivative
        norms_tensor = torch.full_like(norms_tensor, float("nan"))
    elif bool(norms_tensor.isnan().any()):  # a NaN elsewhere poisoned the backward: forward mode
        norms_tensor = _block_norms(forward_rows(layer, xd, p, probes, seed), mean=probes is not None)
        norms_tensor = norms_tensor * (math.sqrt(T) if probes is not None else 1.0)  # mean over k, not k T
        backward = "forward"
    return _result(norms_tensor, p, estimator, dtype, backward)


def _result(norms_tensor: Tensor, p: int, estimator: str, dtype: torch.dtype, backward: str,
            state: StateReach | None = None) -> Reach:
    """The :class:`Reach` of the norms (T,), with the dtype's floor and the counts of zeros, rounding and NaN."""
    norms = tuple(float(v) for v in norms_tensor.cpu())
    judged = judge((norms,), dtype)
    info = torch.finfo(dtype)
    tiny = float(info.tiny)
    return Reach(
        norms=norms,
        position=p,
        estimator=estimator,
        dtype=str(dtype).removeprefix("torch."),
        tiny=tiny,
        smallest_subnormal=tiny * float(info.eps),  # 2^-126 * 2^-23 = 2^-149 in fp32
        zeros=sum(1 for n in norms if n == 0.0),
        subnormals=sum(1 for n in norms if 0.0 < n < tiny),
        backward=backward,
        rounding=sum(judged.rounding[0]),
        undefined=sum(judged.undefined[0]),
        state=state,
    )


def _reach_from_state(layer: Callable, x: Tensor, p: int, states: tuple[Tensor, ...], probes: int | None,
                      seed: int, dtype: torch.dtype) -> Reach:
    """measure_reach from ``states``: one forward from them, one batched backward of y_p to x and the states.

    NaN poisoning is not measured again in forward mode here (the forward-mode route runs the layer on x
    alone): a NaN norm stays NaN and is counted ``undefined``.
    """
    with torch.enable_grad():
        xd = x.detach().to(dtype).requires_grad_(True)  # (T, d_in)
        prepared = tuple(s.detach().to(dtype).requires_grad_(True) if s.is_floating_point() else s for s in states)
        leaves = [s for s in prepared if s.is_floating_point()]
        y, final = run_from_state(layer, xd, prepared)
        y = _checked_output(_first_output(y), xd, (xd.shape[0],))  # (T, d_out)
        y_p = y[p]  # (d_out,)
        rows, estimator = _backward_rows(y_p.shape[0], probes, seed, xd)  # (R, d_out)
        grads, backward = vjp_many(y_p, [xd, *leaves], rows)  # (R, T, d_in), then (R, *s.shape) per state
        state = state_reach(layer, prepared, leaves, grads[1:], final, mean=probes is not None)
    norms_tensor = _block_norms(grads[0].detach(), mean=probes is not None)  # (T,)
    if bool(y_p.detach().isnan().any()):  # y_p is not a number: it has no derivative
        norms_tensor = torch.full_like(norms_tensor, float("nan"))
    return _result(norms_tensor, p, estimator, dtype, backward, state)
