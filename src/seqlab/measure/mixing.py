"""Mixing: does output row j of a block depend on input row i != j? A T_out x T_in dependency matrix.

Figure 1 of "Attention Is All You Need" lights three of its fifteen boxes: the attention boxes, the
only ones whose output at one position reads other positions (L11). Here that flag is measured, not
declared. For a block y = f(x, ...) whose inputs and output are batch-first sequences, entry (j, i)
of the dependency matrix is the strength of output row j's dependence on input row i:

* for a float input, the Frobenius norm of the Jacobian block dy_j / dx_i (d_out x d_in), estimated
  with seeded Gaussian probes (Hutchinson) through one forward pass and batched backward passes;
* for an integer input (token ids), the norm of the change of y_j when token i alone is replaced by
  another id (a finite difference: there is no derivative with respect to a token).

A structural zero stays an exact 0.0 under both methods: autograd returns exact zeros for rows the
graph does not connect, and a row that is never read does not move. Whether a strength means
"depends" is decided by the one rule of :mod:`seqlab.measure.dependence`: above the rounding band of
the block (64 eps of the dtype times the largest strength), so the ~1e-17 a fused kernel leaves where
the exact derivative is 0 is reported as *rounding* beside the verdict, not as dependence. The pattern
(per-row, causal, all-to-all, cross) follows from where the dependences lie. Like
:mod:`seqlab.measure.reach`, the dependence is numerical: an attention weight that underflowed to
exactly 0 cuts it. Compute in float64 to make that practically impossible.

NaN: an output row that is NaN (an attention row whose every key is masked) has no derivative; its
strengths are NaN and reported as *undefined*, never as "depends". One NaN row would also poison the
backward pass of every other row (0 · NaN = NaN in the softmax backward), so when the backward gives
NaN for a finite output row, the strengths are measured again in forward mode (one Jacobian-vector
product per input row and probe), where NaN flows only where the values themselves carry it.

Shapes: B = 1 batch row, T_in input positions, T_out output positions, d_in / d_out widths,
k probes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError, require_positive_int
from seqlab.measure.dependence import Dependence, judge

#: Probes per output row for float inputs; any k >= 1 finds every nonzero block with probability 1.
DEFAULT_PROBES = 2

PER_ROW = "per-row"
CAUSAL = "causal"
ALL_TO_ALL = "all-to-all"
CROSS = "cross"
PARTIAL = "partial"
NONE = "none"
#: Every pattern :func:`classify` can return.
PATTERNS = (PER_ROW, CAUSAL, ALL_TO_ALL, CROSS, PARTIAL, NONE)


@dataclass(frozen=True)
class DependencyMatrix:
    """How strongly each output row depends on each row of one input.

    Attributes:
        input_name: the input measured (a keyword of the block's call).
        strength: T_out rows of T_in floats; entry ``[j][i]`` is ||dy_j/dx_i||_F (float input, probe
            estimate) or ||y_j(x with token i replaced) - y_j(x)|| (integer input). Exactly 0.0 where
            output row j does not depend on input row i.
        method: ``"jacobian-k"`` (k Gaussian probes) or ``"token-replacement"``.
            NaN where output row j is not a number or has no derivative (undefined, see ``undefined_rows``).
        method: ``"jacobian-k"`` (k Gaussian probes), ``"forward-jacobian-k"`` (k probes per input row,
            forward mode, used when a NaN row poisons the backward pass) or ``"token-replacement"``.
        other_sequence: the input is another sequence (the encoder's memory read by the decoder), so
            its rows are not the output's positions and any dependence on it mixes positions.
        dtype: the dtype the strengths were computed in (the output's), which sets the rounding band.
    """

    input_name: str
    strength: tuple[tuple[float, ...], ...]
    method: str
    other_sequence: bool = False
    dtype: str = "float64"

    @property
    def shape(self) -> tuple[int, int]:
        """(T_out, T_in)."""
        return len(self.strength), len(self.strength[0]) if self.strength else 0

    @property
    def judgement(self) -> Dependence:
        """The strengths judged by :func:`seqlab.measure.dependence.judge` (band, rounding, NaN)."""
        return judge(self.strength, getattr(torch, self.dtype))

    @property
    def depends(self) -> tuple[tuple[bool, ...], ...]:
        """T_out x T_in booleans: strength above the block's rounding band (False where undefined)."""
        return self.judgement.depends

    @property
    def rounding(self) -> tuple[tuple[int, int], ...]:
        """(j, i) pairs with a nonzero strength within the rounding band: structural, not numerical."""
        return self.judgement.disagreements

    @property
    def undefined_rows(self) -> tuple[int, ...]:
        """Output rows whose strengths are all NaN (the output row itself is not a number)."""
        return self.judgement.undefined_rows

    @property
    def pattern(self) -> str:
        """One of :data:`PATTERNS`, by :func:`classify` over the rows that are defined."""
        return classify(self.depends, other_sequence=self.other_sequence, undefined=self.undefined_rows)

    @property
    def mixes(self) -> bool:
        """Some output row reads an input row at another position (or any row of another sequence)."""
        return self.pattern not in (PER_ROW, NONE)


def classify(depends: tuple[tuple[bool, ...], ...], *, other_sequence: bool = False,
             undefined: tuple[int, ...] = ()) -> str:
    """The pattern of a dependency matrix (T_out x T_in booleans), over its defined rows.

    Rows listed in ``undefined`` (NaN outputs) are left out of every test below.

    * ``"none"``: no output row depends on any input row;
    * ``"cross"``: the input is another sequence and some output row depends on it;
    * ``"per-row"``: output row j depends on input row j at most (the other eleven boxes of L11);
    * ``"causal"``: every j depends on every i <= j and on no i > j (masked self-attention);
    * ``"all-to-all"``: every output row depends on every input row (self-attention, L4);
    * ``"partial"``: anything else that mixes (a band, a dilated convolution…).

    >>> classify(((True, False), (False, True)))
    'per-row'
    >>> classify(((True, False), (True, True)))
    'causal'
    >>> classify(((True, True), (True, True)))
    'all-to-all'
    >>> classify(((True, True, False), (False, True, True), (False, False, True)))
    'partial'
    >>> classify(((True, True, True),), other_sequence=True)
    'cross'
    >>> classify(((True, False, False), (True, True, False), (False, False, False)), undefined=(2,))
    'causal'
    """
    rows = len(depends)
    columns = len(depends[0]) if rows else 0
    defined = [(j, row) for j, row in enumerate(depends) if j not in undefined]
    if not any(any(row) for _, row in defined):
        return NONE
    if other_sequence:
        return CROSS
    if all(not value for j, row in defined for i, value in enumerate(row) if i != j):
        return PER_ROW
    if all(all(row) for _, row in defined):
        return ALL_TO_ALL
    if rows == columns and all(value == (i <= j) for j, row in defined for i, value in enumerate(row)):
        return CAUSAL
    return PARTIAL


def _first_tensor(out: object) -> Tensor:
    value = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(value, Tensor) or value.dim() < 2:
        got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        raise SeqlabError(f"block must return a batch-first tensor (1, T_out, ...), received {got}")
    return value


def _rows_flat(y: Tensor) -> Tensor:
    """(1, T_out, ...) -> (T_out, features)."""
    if y.shape[0] != 1:
        raise SeqlabError(f"dependency matrices are measured on one sequence (batch 1), received batch {y.shape[0]}")
    return y[0].reshape(y.shape[1], -1)


def _jacobian_strength(block: Callable[..., object], inputs: Mapping[str, Tensor], name: str,
                       probes: int, seed: int) -> tuple[tuple[tuple[float, ...], ...], str, str]:
    """||dy_j/dx_i||_F estimated with k probes per output row: one forward, batched backward passes.

    Returns the (T_out, T_in) strengths, the method and the output's dtype. Output rows that are NaN get
    NaN strengths; if the backward leaves NaN on a finite row (0 · NaN from a NaN row), the strengths are
    measured again in forward mode (:func:`_forward_strength`).
    """
    x = inputs[name].detach().clone().requires_grad_(True)
    arguments = {key: (x if key == name else value) for key, value in inputs.items()}
    y = _first_tensor(block(**arguments))
    rows = _rows_flat(y)  # (T_out, F)
    T_out, features = rows.shape
    T_in = x.shape[1]
    dtype = str(rows.dtype).removeprefix("torch.")
    nan_rows = rows.detach().isnan().any(dim=-1)  # (T_out,)
    if not rows.requires_grad:
        strength = torch.zeros(T_out, T_in, dtype=torch.float64)
        return _as_rows(torch.where(nan_rows[:, None], torch.nan, strength)), f"jacobian-{probes}", dtype
    generator = torch.Generator().manual_seed(seed)
    probe = torch.randn(T_out, probes, features, generator=generator, dtype=torch.float64).to(rows)
    # grad_outputs[j, k] puts probe (j, k) on output row j only: (T_out * k, T_out, F)
    grad_outputs = torch.zeros(T_out, probes, T_out, features, dtype=rows.dtype, device=rows.device)
    index = torch.arange(T_out)
    grad_outputs[index, :, index] = probe
    grad_outputs = grad_outputs.reshape(T_out * probes, T_out, features)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*performance drop.*")
            (g,) = torch.autograd.grad(rows, x, grad_outputs=grad_outputs, is_grads_batched=True,
                                       retain_graph=True, allow_unused=True)
    except RuntimeError:  # an op whose backward has no batching rule: one backward per vector
        parts = [torch.autograd.grad(rows, x, grad_outputs=v, retain_graph=True, allow_unused=True)[0]
                 for v in grad_outputs]
        g = None if parts[0] is None else torch.stack(parts)
    if g is None:
        strength = torch.zeros(T_out, T_in, dtype=torch.float64)
        return _as_rows(torch.where(nan_rows[:, None], torch.nan, strength)), f"jacobian-{probes}", dtype
    g = g.reshape(T_out, probes, 1, T_in, -1).to(torch.float64)  # (T_out, k, 1, T_in, d_in)
    strength = (g.square().sum(dim=(2, 4)).mean(dim=1)).sqrt()  # (T_out, T_in)
    if bool(strength[~nan_rows].isnan().any()):  # a NaN row poisoned the backward of finite rows
        strength, method = _forward_strength(block, inputs, name, probes, seed), f"forward-jacobian-{probes}"
    else:
        method = f"jacobian-{probes}"
    return _as_rows(torch.where(nan_rows[:, None], torch.nan, strength)), method, dtype


def _as_rows(strength: Tensor) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(v) for v in row) for row in strength)


def _forward_strength(block: Callable[..., object], inputs: Mapping[str, Tensor], name: str,
                      probes: int, seed: int) -> Tensor:
    """||dy_j/dx_i||_F by forward mode: E||J_ji t||^2 = ||J_ji||_F^2 for t ~ N(0, I) on row i: (T_out, T_in).

    One Jacobian-vector product per input row i and probe (T_in · k forward passes); a NaN row of the
    output carries NaN tangents only to itself, as its values do.
    """
    import torch.autograd.forward_ad as fwAD

    x = inputs[name].detach()  # (1, T_in, ...)
    T_in = x.shape[1]
    generator = torch.Generator().manual_seed(seed)
    squares = []
    for i in range(T_in):
        total = None
        for _ in range(probes):
            tangent = torch.zeros_like(x)
            tangent[:, i] = torch.randn(x[:, i].shape, generator=generator, dtype=torch.float64).to(x)
            with fwAD.dual_level(), torch.enable_grad(), warnings.catch_warnings():
                # PyTorch's first forward-mode call imports its jvp decompositions, which script
                # functions with the deprecated torch.jit.script: not the caller's concern
                warnings.filterwarnings("ignore", message=".*torch.jit.script.*deprecated", category=DeprecationWarning)
                dual = fwAD.make_dual(x, tangent)
                arguments = {key: (dual if key == name else value) for key, value in inputs.items()}
                out = fwAD.unpack_dual(_first_tensor(block(**arguments))).tangent
            rows = _rows_flat(out).detach().to(torch.float64)  # (T_out, F)
            square = rows.square().sum(dim=-1)  # (T_out,)
            total = square if total is None else total + square
        squares.append(total / probes)
    return torch.stack(squares, dim=1).sqrt()  # (T_out, T_in)


def _replacement_strength(block: Callable[..., object], inputs: Mapping[str, Tensor], name: str,
                          vocabulary: int) -> tuple[tuple[tuple[float, ...], ...], str]:
    """||y_j(token i replaced) - y_j|| for every i: one batched forward of T_in + 1 sequences."""
    ids = inputs[name]
    T_in = ids.shape[1]
    variants = ids.repeat(T_in + 1, *([1] * (ids.dim() - 1)))  # row 0: unchanged; row 1 + i: token i replaced
    positions = torch.arange(T_in)
    variants[1 + positions, positions] = (ids[0, positions] + 1) % vocabulary
    arguments = {key: (variants if key == name else value.expand(T_in + 1, *value.shape[1:]))
                 for key, value in inputs.items()}
    with torch.no_grad():
        y = _first_tensor(block(**arguments))
    flat = y.reshape(T_in + 1, y.shape[1], -1).to(torch.float64)  # (1 + T_in, T_out, F)
    change = (flat[1:] - flat[:1]).norm(dim=-1)  # (T_in, T_out); NaN where a row is NaN
    dtype = str(y.dtype).removeprefix("torch.") if y.is_floating_point() else "float64"
    return _as_rows(change.T), dtype


def dependency_matrix(block: Callable[..., object], inputs: Mapping[str, Tensor], name: str, *,
                      other_sequence: bool = False, probes: int = DEFAULT_PROBES, seed: int = 0,
                      vocabulary: int | None = None) -> DependencyMatrix:
    """Measure how each output row of ``block(**inputs)`` depends on each row of ``inputs[name]``.

    Args:
        block: a callable taking the inputs as keywords and returning a batch-first tensor
            (1, T_out, ...) or a tuple whose first item is one (as ``nn.MultiheadAttention`` does).
            Put modules in ``eval()`` mode first: dropout would change rows between calls.
        inputs: keyword -> batch-first tensor (1, T, ...). Float inputs are differentiated;
            integer inputs (token ids, shape (1, T)) are perturbed one position at a time.
        name: the input to measure against; the others are held fixed.
        other_sequence: ``inputs[name]`` is another sequence (encoder memory), see
            :attr:`DependencyMatrix.other_sequence`.
        probes: Gaussian probes per output row (float inputs), int >= 1.
        seed: seed of the probes.
        vocabulary: for integer inputs, the number of token ids (the replacement is id + 1 mod it).

    Returns:
        A :class:`DependencyMatrix` of shape (T_out, T_in).

    Raises:
        SeqlabError: ``name`` not among the inputs, a batch other than 1, an integer input without
            ``vocabulary``, a bad ``probes``, or a block that does not return a batch-first tensor.

    >>> import torch
    >>> x = torch.randn(1, 4, 3, dtype=torch.float64)
    >>> dependency_matrix(lambda x: x.cumsum(dim=1), {"x": x}, "x").pattern
    'causal'
    >>> dependency_matrix(lambda x: x.tanh(), {"x": x}, "x").mixes
    False
    """
    if name not in inputs:
        raise SeqlabError(f"input {name!r} is not among the block's inputs {sorted(inputs)}")
    require_positive_int("probes", probes)
    tensor = inputs[name]
    if tensor.dim() < 2 or tensor.shape[0] != 1:
        raise SeqlabError(f"input {name!r} must be batch-first with batch 1, received shape {tuple(tensor.shape)}")
    if tensor.is_floating_point():
        with torch.enable_grad():  # a caller's no_grad would make every strength 0
            strength, method, dtype = _jacobian_strength(block, inputs, name, probes, seed)
    else:
        if vocabulary is None or vocabulary < 2:
            raise SeqlabError(f"integer input {name!r} needs vocabulary >= 2 token ids, received {vocabulary}")
        strength, dtype = _replacement_strength(block, inputs, name, vocabulary)
        method = "token-replacement"
    return DependencyMatrix(name, strength, method, other_sequence, dtype)
