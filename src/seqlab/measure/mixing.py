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
(per-row, causal, all-to-all, cross, band, blocks) follows from where the dependences lie. Like
:mod:`seqlab.measure.reach`, the dependence is numerical: an attention weight that underflowed to
exactly 0 cuts it. Compute in float64 to make that practically impossible.

NaN: an output row that is NaN (an attention row whose every key is masked) has no derivative; its
strengths are NaN and reported as *undefined*, never as "depends". One NaN row would also poison the
backward pass of every other row (0 · NaN = NaN in the softmax backward), so when the backward gives
NaN for a finite output row, the strengths are measured again in forward mode (one Jacobian-vector
product per input row and probe), where NaN flows only where the values themselves carry it.

Bands and receptive fields (issue 21). A sliding window, a convolution or a stack of them reads a *band*:
output row j depends on input row i exactly when the offset i − j is one of low, low + r, …, high (r the
dilation), wherever 0 ≤ i < T — so the first rows of a causal window read fewer rows, and nothing else
breaks the rule. :func:`band_of` finds it exactly from the boolean matrix (a :class:`Band`, None when the
matrix is not one); :func:`classify` names it ``"band"``, and keeps ``"partial"`` for what mixes in no band.
Blocks (issue 38). Block-local attention (Reformer's local attention, a block-diagonal mask) reads *blocks*: the
positions are cut into blocks of b consecutive rows, 0…b − 1, b…2b − 1, … (the last one shorter when b does not
divide T), and output row j reads input row i exactly when both lie in the same block, ⌊i/b⌋ = ⌊j/b⌋ — also
i ≤ j when the blocks are causal. :func:`blocks_of` reads b from the matrix (a :class:`Blocks`, None when it is
not one); :func:`classify` names it ``"blocks"``. Blocks of 1 are ``"per-row"``, one block as long as T is
``"all-to-all"`` (or ``"causal"``), and blocks of b >= 2 with T > b are never a band (row 0 reads offsets
0…b − 1, row b − 1 reads −(b − 1)…0).

A stack's *receptive field* after depth L is how many input rows each output row reads
(:func:`receptive_field`, measured per layer by :func:`measure_receptive_fields`); the closed form beside it
is the sum of the layers' offset sets (:func:`stacked_band`): L causal windows of w read L·(w − 1) + 1 rows.

Shapes: B = 1 batch row, T_in input positions, T_out output positions, d_in / d_out widths,
k probes, L layers of a stack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.measure.switches import warnings_ignored
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.measure.dependence import Dependence, judge

#: Probes per output row for float inputs; any k >= 1 finds every nonzero block with probability 1.
DEFAULT_PROBES = 2

PER_ROW = "per-row"
CAUSAL = "causal"
ALL_TO_ALL = "all-to-all"
CROSS = "cross"
BAND = "band"
BLOCKS = "blocks"
PARTIAL = "partial"
NONE = "none"
#: Every pattern :func:`classify` can return.
PATTERNS = (PER_ROW, CAUSAL, ALL_TO_ALL, CROSS, BAND, BLOCKS, PARTIAL, NONE)


@dataclass(frozen=True)
class Band:
    """Output row j reads input row i exactly when j − lower ≤ i ≤ j + upper and r divides i − j + lower.

    In offsets: i − j ∈ {−lower, −lower + r, …, upper}, for every i in [0, T) (edge rows read fewer rows).

    >>> Band(2, 0).width, Band(2, 0).causal  # a causal window of 3: j − 3 < i ≤ j
    (3, True)
    >>> Band(1, 1).symmetric, Band(4, 0, 2).offsets  # ±1 (a 'same' convolution of 3); dilation 2
    (True, (-4, -2, 0))

    Attributes:
        lower: how far back row j reads (positions; negative when even the nearest row read is ahead of j).
        upper: how far ahead row j reads (positions; 0 for a causal band, negative for a pure delay).
        dilation: r >= 1, the step between the offsets read (1: contiguous).
    """

    lower: int
    upper: int
    dilation: int = 1

    @property
    def width(self) -> int:
        """Input rows an interior output row reads: (lower + upper) / r + 1 (positions)."""
        return (self.lower + self.upper) // self.dilation + 1

    @property
    def extent(self) -> int:
        """Positions from the farthest row back to the farthest ahead, both included: lower + upper + 1."""
        return self.lower + self.upper + 1

    @property
    def offsets(self) -> tuple[int, ...]:
        """The offsets i − j read, increasing."""
        return tuple(range(-self.lower, self.upper + 1, self.dilation))

    @property
    def causal(self) -> bool:
        """Row j reads itself and rows before it only (upper = 0)."""
        return self.upper == 0

    @property
    def symmetric(self) -> bool:
        """As far back as ahead (lower = upper): ±lower."""
        return self.lower == self.upper


def band_of(depends: Sequence[Sequence[bool]], *, undefined: Sequence[int] = ()) -> Band | None:
    """The band a square dependency matrix is, exactly, or None (see :class:`Band`).

    Over its defined rows: the offsets i − j read anywhere must form one arithmetic progression, and every
    row must read exactly the in-range rows at those offsets. A matrix that reads nothing is no band.

    >>> band_of(((True, False, False), (True, True, False), (False, True, True)))  # causal window of 2
    Band(lower=1, upper=0, dilation=1)
    >>> band_of(((True, False, True), (False, True, False), (True, False, True)))  # ±2, dilation 2
    Band(lower=2, upper=2, dilation=2)
    >>> band_of(((True, True, False), (False, True, False), (False, False, True))) is None  # row 1 lacks i = 2
    True
    """
    rows = len(depends)
    columns = len(depends[0]) if rows else 0
    if rows == 0 or rows != columns:
        return None
    defined = [j for j in range(rows) if j not in undefined]
    offsets = sorted({i - j for j in defined for i, value in enumerate(depends[j]) if value})
    if not offsets:
        return None
    steps = {b - a for a, b in zip(offsets, offsets[1:])}
    if len(steps) > 1:
        return None
    dilation = steps.pop() if steps else 1
    read = set(offsets)
    if any(bool(depends[j][i]) != ((i - j) in read) for j in defined for i in range(columns)):
        return None
    return Band(-offsets[0], offsets[-1], dilation)


@dataclass(frozen=True)
class Blocks:
    """Output row j reads input row i exactly when ⌊i/size⌋ = ⌊j/size⌋ (and i ≤ j when causal).

    The positions are cut into blocks of ``size`` consecutive rows from row 0; the last block is shorter when
    ``size`` does not divide T.

    >>> Blocks(4).reads(5, 7), Blocks(4).reads(3, 4), Blocks(4, causal=True).reads(5, 6)
    (True, False, False)

    Attributes:
        size: b >= 2, the rows of a block (positions).
        causal: inside its block, row j reads only rows i <= j.
    """

    size: int
    causal: bool = False

    def reads(self, j: int, i: int) -> bool:
        """Whether output row j reads input row i (0-based positions)."""
        return i // self.size == j // self.size and (not self.causal or i <= j)


def blocks_of(depends: Sequence[Sequence[bool]], *, undefined: Sequence[int] = ()) -> Blocks | None:
    """The blocks a square dependency matrix is, exactly, with b read from it, or None (see :class:`Blocks`).

    Over its defined rows. b is read where the matrix shows it: the rows a row reads (its block, or its block up
    to itself when causal) start at a multiple of b and, but for the last block, span b rows; every candidate is
    then checked against every defined row. Only b >= 2 with T > b is returned: blocks of 1 are per-row and one
    block is all-to-all or causal (:func:`classify` names those first).

    >>> blocks_of([[i // 2 == j // 2 for i in range(5)] for j in range(5)])  # T = 5: blocks 0–1, 2–3, 4
    Blocks(size=2, causal=False)
    >>> blocks_of([[i // 3 == j // 3 and i <= j for i in range(6)] for j in range(6)])
    Blocks(size=3, causal=True)
    >>> blocks_of([[abs(i - j) <= 1 for i in range(4)] for j in range(4)]) is None  # a band ±1
    True
    """
    rows = len(depends)
    if rows < 3 or any(len(row) != rows for row in depends):
        return None
    defined = [j for j in range(rows) if j not in undefined]
    read = {j: [i for i, value in enumerate(depends[j]) if value] for j in defined}
    if not defined or any(not columns for columns in read.values()):
        return None
    candidates = {columns[0] for columns in read.values() if columns[0] > 0}  # a block's first row, k·b
    candidates |= {len(columns) for columns in read.values()}  # a whole block (not causal), b
    for size in sorted(candidates):
        if not 2 <= size < rows:
            continue
        for causal in (False, True):
            blocks = Blocks(size, causal)
            if all(bool(depends[j][i]) == blocks.reads(j, i) for j in defined for i in range(rows)):
                return blocks
    return None


def stacked_band(bands: Sequence[Band]) -> Band | None:
    """The closed form of a stack's band: the sums of one offset per layer, or None if they form no band.

    Layer after layer, output j reads i when some chain of offsets o_1 + … + o_L = i − j is read by every layer,
    so the stack reads the Minkowski sum of the layers' offset sets — structurally, before any numerical
    cancellation, and away from the ends. Equal dilations r add: Band(Σ lower, Σ upper, r); the width of L causal
    windows of w is L·(w − 1) + 1, of L symmetric bands ±h 2·L·h + 1.

    >>> stacked_band([Band(2, 0)] * 3).width  # 3·(3 − 1) + 1
    7
    >>> stacked_band([Band(1, 1, 1), Band(2, 2, 2), Band(4, 4, 4)])  # dilations 1, 2, 4 (k = 3): ±7
    Band(lower=7, upper=7, dilation=1)
    >>> stacked_band([Band(1, 0), Band(4, 0, 4)]) is None  # offsets 0, −1, −4, −5
    True

    Raises:
        SeqlabError: no bands.
    """
    if not bands:
        raise SeqlabError(N_("stacked_band needs at least one band, received none"))
    sums = {0}
    for band in bands:
        sums = {total + offset for total in sums for offset in band.offsets}
    offsets = sorted(sums)
    steps = {b - a for a, b in zip(offsets, offsets[1:])}
    if len(steps) > 1:
        return None
    return Band(-offsets[0], offsets[-1], steps.pop() if steps else 1)


@dataclass(frozen=True)
class DependencyMatrix:
    """How strongly each output row depends on each row of one input.

    Attributes:
        input_name: the input measured (a keyword of the block's call).
        strength: T_out rows of T_in floats; entry ``[j][i]`` is ||dy_j/dx_i||_F (float input, probe
            estimate) or ||y_j(x with token i replaced) - y_j(x)|| (integer input). Exactly 0.0 where
            output row j does not depend on input row i; NaN where output row j is not a number or has no
            derivative (undefined, see ``undefined_rows``).
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
    def band(self) -> Band | None:
        """The :class:`Band` when :attr:`pattern` is ``"band"``, else None."""
        return band_of(self.depends, undefined=self.undefined_rows) if self.pattern == BAND else None

    @property
    def blocks(self) -> Blocks | None:
        """The :class:`Blocks` when :attr:`pattern` is ``"blocks"``, else None."""
        return blocks_of(self.depends, undefined=self.undefined_rows) if self.pattern == BLOCKS else None

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
    * ``"band"``: a square matrix that :func:`band_of` finds a :class:`Band` in (a sliding window, a
      convolution, dilated or not; a window as long as T is ``"causal"``);
    * ``"blocks"``: a square matrix that :func:`blocks_of` finds :class:`Blocks` of b >= 2 in (block-local
      attention, causal inside its blocks or not);
    * ``"partial"``: anything else that mixes (a circular convolution, padded rows that read real ones…).

    >>> classify(((True, False), (False, True)))
    'per-row'
    >>> classify(((True, False), (True, True)))
    'causal'
    >>> classify(((True, True), (True, True)))
    'all-to-all'
    >>> classify(((True, True, False), (False, True, True), (False, False, True)))  # reads j and j + 1
    'band'
    >>> classify(((True, True, False), (True, True, False), (False, False, True)))  # blocks of 2
    'blocks'
    >>> classify(((True, True, False), (False, True, False), (False, False, True)))
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
    if band_of(depends, undefined=undefined) is not None:
        return BAND
    if blocks_of(depends, undefined=undefined) is not None:
        return BLOCKS
    return PARTIAL


@dataclass(frozen=True)
class ReceptiveField:
    """How many input rows each output row depends on, after one depth of a stack (measured).

    Attributes:
        depth: 1-based layer of the stack whose output this is.
        positions: per output row j, how many input rows it depends on (T_out ints; 0 for an undefined row).
        pattern: that output's pattern (:func:`classify`).
        band: its :class:`Band` when the pattern is ``"band"``, else None.
        undefined_rows: output rows left out (NaN).
        blocks: its :class:`Blocks` when the pattern is ``"blocks"``, else None.
    """

    depth: int
    positions: tuple[int, ...]
    pattern: str
    band: Band | None = None
    undefined_rows: tuple[int, ...] = ()
    blocks: Blocks | None = None

    @property
    def width(self) -> int:
        """The most input rows any defined output row reads (an interior row's receptive field, positions)."""
        return max((n for j, n in enumerate(self.positions) if j not in self.undefined_rows), default=0)


def receptive_field(depends: Sequence[Sequence[bool]], *, depth: int = 1,
                    undefined: Sequence[int] = ()) -> ReceptiveField:
    """The receptive field of one output (T_out x T_in booleans): input rows read per output row.

    >>> r = receptive_field(((True, False, False), (True, True, False), (False, True, True)), depth=1)
    >>> r.positions, r.width, r.pattern, r.band.width
    ((1, 2, 2), 2, 'band', 2)

    Raises:
        SeqlabError: ``depth`` is not a positive integer.
    """
    require_positive_int("depth", depth)
    undefined = tuple(undefined)
    matrix = tuple(tuple(bool(v) for v in row) for row in depends)
    pattern = classify(matrix, undefined=undefined)
    return ReceptiveField(depth=depth,
                          positions=tuple(0 if j in undefined else sum(row) for j, row in enumerate(matrix)),
                          pattern=pattern, band=band_of(matrix, undefined=undefined) if pattern == BAND else None,
                          undefined_rows=undefined,
                          blocks=blocks_of(matrix, undefined=undefined) if pattern == BLOCKS else None)


def _first_tensor(out: object) -> Tensor:
    value = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(value, Tensor) or value.dim() < 2:
        got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        raise SeqlabError(N_("block must return a batch-first tensor (1, T_out, ...), received {got}"), got=got)
    return value


def _rows_flat(y: Tensor) -> Tensor:
    """(1, T_out, ...) -> (T_out, features)."""
    if y.shape[0] != 1:
        raise SeqlabError(N_("dependency matrices are measured on one sequence (batch 1), received batch {shape}"),
                          shape=y.shape[0])
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
        with warnings_ignored(".*performance drop.*"):
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
            # PyTorch's first forward-mode call imports its jvp decompositions, which script
            # functions with the deprecated torch.jit.script: not the caller's concern
            with fwAD.dual_level(), torch.enable_grad(), warnings_ignored(".*torch.jit.script.*deprecated",
                                                                          DeprecationWarning):
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
        raise SeqlabError(N_("input {name!r} is not among the block's inputs {inputs}"), name=name,
                          inputs=sorted(inputs))
    require_positive_int("probes", probes)
    tensor = inputs[name]
    if tensor.dim() < 2 or tensor.shape[0] != 1:
        raise SeqlabError(N_("input {name!r} must be batch-first with batch 1, received shape {shape}"), name=name,
                          shape=tuple(tensor.shape))
    if tensor.is_floating_point():
        with torch.enable_grad():  # a caller's no_grad would make every strength 0
            strength, method, dtype = _jacobian_strength(block, inputs, name, probes, seed)
    else:
        if vocabulary is None or vocabulary < 2:
            raise SeqlabError(N_("integer input {name!r} needs vocabulary >= 2 token ids, received {vocabulary}"),
                              name=name, vocabulary=vocabulary)
        strength, dtype = _replacement_strength(block, inputs, name, vocabulary)
        method = "token-replacement"
    return DependencyMatrix(name, strength, method, other_sequence, dtype)


def measure_receptive_fields(block: Callable[..., object], inputs: Mapping[str, Tensor], name: str, *,
                             outputs: Callable[[object], Sequence[Tensor]], probes: int = DEFAULT_PROBES,
                             seed: int = 0, vocabulary: int | None = None) -> tuple[ReceptiveField, ...]:
    """The receptive field after each depth of a stack: one :func:`dependency_matrix` per selected output.

    >>> conv = torch.nn.Conv1d(2, 2, 3, padding=1).double()
    >>> def stack(x):  # two 'same' convolutions of width 3, outputs (1, T, 2) each
    ...     h1 = conv(x.transpose(1, 2))
    ...     return h1.transpose(1, 2), conv(h1.tanh()).transpose(1, 2)
    >>> fields = measure_receptive_fields(stack, {"x": torch.randn(1, 8, 2, dtype=torch.float64)}, "x",
    ...                                   outputs=lambda out: out)
    >>> [(f.depth, f.width, f.band) for f in fields]  # ±1, then ±2: 3, then 5 rows
    [(1, 3, Band(lower=1, upper=1, dilation=1)), (2, 5, Band(lower=2, upper=2, dilation=1))]

    Args:
        block, inputs, name, probes, seed, vocabulary: as for :func:`dependency_matrix`.
        outputs: picks each depth's output from what ``block`` returns, in depth order (e.g. a model's
            ``hidden_states[1:]``); each a batch-first tensor (1, T_out, ...).

    Returns:
        One :class:`ReceptiveField` per selected output, depth 1 first.

    Raises:
        SeqlabError: as :func:`dependency_matrix`, or ``outputs`` selects nothing.
    """
    with torch.no_grad():
        count = len(outputs(block(**inputs)))
    if count == 0:
        raise SeqlabError(N_("outputs selected no tensor to measure the receptive field of"))
    fields = []
    for depth in range(1, count + 1):
        matrix = dependency_matrix(lambda **kw: outputs(block(**kw))[depth - 1], inputs, name, probes=probes,
                                   seed=seed, vocabulary=vocabulary)
        fields.append(receptive_field(matrix.depends, depth=depth, undefined=matrix.undefined_rows))
    return tuple(fields)
