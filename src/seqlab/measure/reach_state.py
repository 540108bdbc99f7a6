"""Reach from a recurrence's initial state: ‖∂y_p/∂h_0‖, and ‖∂h_T/∂h_0‖, ‖∂c_T/∂c_0‖ between states (issue 21).

:func:`seqlab.measure.reach.measure_reach` measures how output p depends on each input position; with
``initial_state=`` it also measures how it depends on the state the recurrence starts from, and how the
final state depends on it. For an Elman step h_t = tanh(W_hh h_{t-1} + W_xh x_t) the chain rule gives

    ∂h_T/∂h_0 = Π_{t=T..1} diag(1 − h_t²) W_hh,

whose norm falls (or grows) like ρ(W_hh)^T (L3); an LSTM's cell path ∂c_T/∂c_0 = Π diag(f_t) is the
gradient highway its forget gate controls. The derivatives are autograd's, exact (identity rows pushed
back, as the exact estimator of the reach), reduced in float64.

Two calling conventions, by what the layer offers:

* seqlab's recurrences (a ``step(x_t, state) -> (y_t, state)`` and an ``initial_state(batch)`` method, as in
  :mod:`seqlab.layers`): the steps run one after another from the given state, x_t of shape (1, d_in);
  the state is the tuple ``initial_state(1)`` returns (batch 1);
* anything else is called as ``layer(x, h0)`` — PyTorch's ``nn.RNN``/``nn.GRU`` (h0: (num_layers, d_h) for an
  unbatched x) or ``nn.LSTM`` with ``(h0, c0)`` — and must return ``(y, h_n)`` or ``(y, (h_n, c_n))``.

State tensors that are not floating (a mask of which slots hold real positions) are held fixed, named in
:attr:`StateReach.held`.

Shapes: T positions, d_in input width, d_out output width, R backward rows, s_k the k-th state tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.measure.switches import warnings_ignored
from seqlab.errors import SeqlabError
from seqlab.i18n import N_


@dataclass(frozen=True)
class StateReach:
    """How far a recurrence's initial state reaches: output p and the final state, by autograd.

    >>> lstm = torch.nn.LSTM(3, 4).double()
    >>> from seqlab.measure.reach import measure_reach
    >>> state = measure_reach(lstm, torch.randn(5, 3), initial_state=(torch.zeros(1, 4), torch.zeros(1, 4))).state
    >>> state.names, state.final_names, len(state.final), state.norm("c_T", "c_0") > 0
    (('h_0', 'c_0'), ('h_T', 'c_T'), 2, True)

    Attributes:
        names: the initial-state tensors differentiated, in order (``("h_0", "c_0")`` for an LSTM,
            ``("h_0",)`` for an RNN or GRU, ``("state[0]", …)`` otherwise).
        shapes: the shape of each of them.
        output: per initial-state tensor k, ||dy_position / ds_0^k||_F (units of y per unit of state).
        final_names: the final-state tensors, ``("h_T", "c_T")``, ``("h_T",)`` or ``("state_T[0]", …)``.
        final: ``final[a][k]`` = ||ds_T^a / ds_0^k||_F, exact (state per unit of state).
        held: state tensors held fixed because they are not floating (e.g. ``"state[2]"``, a bool mask).
    """

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    output: tuple[float, ...]
    final_names: tuple[str, ...]
    final: tuple[tuple[float, ...], ...]
    held: tuple[str, ...] = ()

    def norm(self, final: str, initial: str) -> float:
        """||ds_T / ds_0||_F between the final state named ``final`` and the initial state named ``initial``.

        Raises:
            SeqlabError: a name that is not among :attr:`final_names` or :attr:`names`.
        """
        if final not in self.final_names or initial not in self.names:
            raise SeqlabError(N_("expected a final state in {final_names} and an initial state in {names}, received "
                                 "{final!r} and {initial!r}"), final_names=self.final_names, names=self.names,
                              final=final, initial=initial)
        return self.final[self.final_names.index(final)][self.names.index(initial)]


def state_tuple(initial_state: object) -> tuple[Tensor, ...]:
    """The initial state as a tuple of tensors: a tensor alone, or a non-empty tuple or list of them.

    Raises:
        SeqlabError: anything else, or no floating tensor among them.
    """
    states = (initial_state,) if isinstance(initial_state, Tensor) else initial_state
    if not (isinstance(states, (tuple, list)) and states and all(isinstance(s, Tensor) for s in states)):
        raise SeqlabError(N_("initial_state must be a tensor or a tuple of tensors (h0, or (h0, c0)), received "
                             "{initial_state_class}"), initial_state_class=type(initial_state).__name__)
    if not any(s.is_floating_point() for s in states):
        raise SeqlabError(N_("initial_state has no floating tensor to differentiate, received dtypes {states}"),
                          states=[str(s.dtype) for s in states])
    return tuple(states)


def _names(layer: object, count: int, final: bool) -> tuple[str, ...]:
    """h_0, c_0 (h_T, c_T) for PyTorch's recurrences; state[k] (state_T[k]) for any other layer."""
    suffix = "T" if final else "0"
    if isinstance(layer, torch.nn.LSTM) and count == 2:
        return (f"h_{suffix}", f"c_{suffix}")
    if isinstance(layer, (torch.nn.RNN, torch.nn.GRU, torch.nn.LSTM)) and count == 1:
        return (f"h_{suffix}",)
    return tuple(f"state_T[{k}]" if final else f"state[{k}]" for k in range(count))


def uses_steps(layer: object) -> bool:
    """The layer follows seqlab's decoding protocol: ``step(x_t, state)`` and ``initial_state(batch)``."""
    return callable(getattr(layer, "step", None)) and callable(getattr(layer, "initial_state", None))


def run_from_state(layer: Callable, x: Tensor, states: tuple[Tensor, ...]) -> tuple[object, tuple[Tensor, ...]]:
    """The layer's output on x (T, d_in) from ``states``, and its final state (a tuple of tensors).

    Raises:
        SeqlabError: a layer called as ``layer(x, h0)`` that does not return ``(y, h_n)`` or ``(y, (h_n, c_n))``.
    """
    if uses_steps(layer):
        state, ys = states, []
        for x_t in x.unbind(0):  # (d_in,) each
            y_t, state = layer.step(x_t.unsqueeze(0), tuple(state))  # (1, d_out), the new state
            ys.append((y_t[0] if isinstance(y_t, tuple) else y_t)[0])  # (d_out,)
        return torch.stack(ys), tuple(state)  # (T, d_out)
    out = layer(x, states[0] if len(states) == 1 else states)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise SeqlabError(N_("a layer given initial_state must return (y, h_n) or (y, (h_n, c_n)), received "
                             "{out_class}"), out_class=type(out).__name__)
    y, final = out
    final = final if isinstance(final, tuple) else (final,)
    if not all(isinstance(f, Tensor) for f in final):
        raise SeqlabError(N_("the final state must be a tensor or a tuple of tensors"))
    return y, tuple(final)


def vjp_many(out: Tensor, inputs: Sequence[Tensor], rows: Tensor) -> tuple[list[Tensor], str]:
    """rows^T ∂out/∂input for every input: (R, *out.shape) rows -> one (R, *input.shape) tensor per input.

    Zeros for an input the output does not use; one backward per row (``"loop"``, else ``"batched"``) for ops
    without a batching rule.
    """
    backward = "batched"
    if not out.requires_grad:
        return [torch.zeros((rows.shape[0], *t.shape), dtype=t.dtype, device=t.device) for t in inputs], backward
    try:
        with warnings_ignored(".*performance drop.*"):
            grads = torch.autograd.grad(out, list(inputs), grad_outputs=rows, is_grads_batched=True,
                                        retain_graph=True, allow_unused=True)
    except RuntimeError:  # an op whose backward cannot be vmapped
        per_row = [torch.autograd.grad(out, list(inputs), grad_outputs=r, retain_graph=True, allow_unused=True)
                   for r in rows]
        grads = [None if per_row[0][k] is None else torch.stack([g[k] for g in per_row])
                 for k in range(len(inputs))]
        backward = "loop"
    return [torch.zeros((rows.shape[0], *t.shape), dtype=t.dtype, device=t.device) if g is None else g
            for g, t in zip(grads, inputs)], backward


def frobenius(g: Tensor, mean: bool) -> float:
    """||J||_F from rows^T J (R, ...): summed over the rows (exact) or averaged (probes), in float64, scaled
    by the largest entry first so a gradient near the dtype's floor does not underflow when squared."""
    g = g.detach().to(torch.float64)
    scale = float(g.abs().max()) if g.numel() else 0.0
    if scale == 0.0 or scale != scale:  # 0, or NaN
        return scale
    squares = (g / scale).square().reshape(g.shape[0], -1).sum(dim=1)  # (R,)
    return float((squares.mean() if mean else squares.sum()).sqrt()) * scale


def state_reach(layer: object, states: tuple[Tensor, ...], leaves: Sequence[Tensor], output_grads: Sequence[Tensor],
                final: tuple[Tensor, ...], mean: bool) -> StateReach:
    """The :class:`StateReach` of one forward from ``states``.

    Args:
        layer: for the names. states: the initial state as given; leaves: its floating tensors, in order, the
            ones the forward was run from (requiring grad).
        output_grads: rows^T ∂y_p/∂leaf for each leaf, (R, *leaf.shape); summed (exact) or averaged (``mean``).
        final: the final state of that forward; each floating tensor's Jacobian to the leaves is taken exactly.
    """
    floating = [k for k, state in enumerate(states) if state.is_floating_point()]
    names = _names(layer, len(states), final=False)
    final_names = _names(layer, len(final), final=True)
    table = []
    for f in final:
        if f.is_floating_point():
            eye = torch.eye(f.numel(), dtype=f.dtype, device=f.device).reshape(f.numel(), *f.shape)  # (n, *f.shape)
            table.append(tuple(frobenius(g, False) for g in vjp_many(f, leaves, eye)[0]))
    return StateReach(names=tuple(names[k] for k in floating), shapes=tuple(tuple(states[k].shape) for k in floating),
                      output=tuple(frobenius(g, mean) for g in output_grads),
                      final_names=tuple(name for name, f in zip(final_names, final) if f.is_floating_point()),
                      final=tuple(table), held=tuple(names[k] for k in range(len(states)) if k not in floating))
