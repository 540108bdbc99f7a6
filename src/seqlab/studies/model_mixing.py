"""Which modules of a trained model mix positions, measured on a padded batch (L11).

The model runs once on the padded batch (ids and attention mask, B rows); forward pre-hooks record
every chosen module's real call (:func:`seqlab.measure.modules.record_inputs`). For each sequence b, the
recorded call is cut to row b (every tensor of batch B, inside tuples too: hidden states, the additive
attention mask, rotary cos and sin of a batch) and measured by
:func:`seqlab.measure.modules.measure_recorded` on all T_m columns; the strength matrix is then cut to the
sequence's own n_b real positions, so a padded position is never a source or a target of a dependency:
a padded query row does read the real keys, and would otherwise make every attention look "partial".
Each sequence's matrix is classified on its own; a module's pattern is the one all sequences share, a shorter
sequence that reads as the top-left corner of the longest one agreeing with it (:func:`agrees`: too short to show
a window or a block, it says nothing against one); ``"differs"`` when they do not agree.

A query row whose every key is masked (a padded position under a sliding window: the window holds only padding;
a left-padded row under a causal mask) has no weights to take: an eager softmax of a row of −inf gives NaN, and
that NaN reaches the *real* rows of the next layer through 0 · NaN in the weighted sum α V although their weight on
the padded key is exactly 0. The rule for the whole kind is PyTorch's own (``aten._safe_softmax``, what
``F.scaled_dot_product_attention`` does on its math and fused paths): such a row's weights are 0, so it contributes
nothing. :class:`KeylessRows` applies it to every softmax of the passes the model study runs on a padded batch
(:func:`measure_mixing`, the order test, the attention map) and records the rows it met, which the report names
(:func:`keyless_positions`); a row with at least one open key is computed as the model computes it.

Modules are chosen by :func:`seqlab.layers.anatomy.modules_of_interest`: what comes before the layer
stack (the embeddings, layer 0) and every block with its submodules; after the stack (final norm,
pooler) nothing is measured, and a module whose call cannot be measured is named in ``unmeasured``.

Shapes: B sequences, T_m measured columns, n_b real positions of sequence b (n_b <= T_m), d widths.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.layers.anatomy import contains_attention, modules_of_interest
from seqlab.layers.pretrained import Encoder
from seqlab.measure.mixing import BAND, BLOCKS, CAUSAL, PARTIAL, Band, Blocks
from seqlab.measure.modes import EngineMode
from seqlab.measure.modules import RecordedCall, SubmoduleMixing, measure_recorded, record_inputs
from seqlab.measure.switches import fast_paths_off

#: Probes per output row of each Jacobian (see :mod:`seqlab.measure.mixing`).
PROBES = 2
#: The pattern of a module whose sequences do not agree.
DIFFERS = "differs"


class KeylessRows(EngineMode):
    """A softmax row whose every entry is −inf (a query with every key masked) gets weights 0, never NaN.

    The rule of PyTorch's ``aten._safe_softmax`` (SDPA's math and fused kernels return 0 for such a row): every
    ``aten._softmax`` whose input holds a row of −inf along its dim is computed by ``_safe_softmax`` instead; any
    other softmax runs unchanged. The values are read (one ``isneginf`` per softmax) to decide it.

    >>> x = torch.tensor([[0.0, 0.0], [-torch.inf, -torch.inf]])  # (T_q, T_k): query 2 has no key
    >>> torch.softmax(x, dim=-1)[1].isnan().all().item()
    True
    >>> with KeylessRows(batch=None) as rows:
    ...     torch.softmax(x, dim=-1).tolist(), rows.met
    ([[0.5, 0.5], [0.0, 0.0]], 1)

    Args:
        met: the count to start from (a rule taken as needed before any pass: :func:`keyless_rule`).
        batch: B, the batch of the pass whose keyless rows are recorded per sequence: a softmax input of shape
            (B, ..., T_q, T_k), at least 3-D (softmax over the last dim), adds its keyless (sequence, query position) pairs to
            :attr:`positions`. None: only count.

    Attributes:
        met: softmax rows found with every key masked (over every call, head and layer).
        positions: (b, query position), 0-based, found keyless in a softmax of batch ``batch``.
    """

    def __init__(self, batch: int | None = None, met: int = 0) -> None:
        super().__init__()
        self.batch = batch
        self.met = met
        self.positions: set[tuple[int, int]] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._softmax.default and args[0].is_floating_point() and args[0].numel():
            x, dim, half_to_float = args[0], args[1], args[2]
            keyless = torch.isneginf(x).all(dim=dim)  # (..., T_q) when dim is the last
            count = int(keyless.sum())
            if count:
                self.met += count
                last = dim % x.dim() == x.dim() - 1
                if self.batch is not None and last and x.dim() >= 3 and x.shape[0] == self.batch:
                    rows = keyless.reshape(self.batch, -1, x.shape[-2]).any(dim=1)  # (B, T_q)
                    self.positions.update((int(b), int(q)) for b, q in rows.nonzero().tolist())
                return torch.ops.aten._safe_softmax.default(x, dim, torch.float32 if half_to_float else None)
        return func(*args, **kwargs)


def keyless_rule(first: KeylessRows) -> contextlib.AbstractContextManager:
    """The context for the later passes of a batch whose first pass ran under ``first``: :class:`KeylessRows` where
    that pass met a query with every key masked, else none (the rule would change nothing, and a dispatch mode costs
    a Python call per op: about 1.4× the CPU time of ``seqlab model`` on the bundled model).

    >>> with KeylessRows() as first:
    ...     _ = torch.softmax(torch.zeros(2, 3), dim=-1)
    >>> type(keyless_rule(first)).__name__
    'nullcontext'
    """
    return KeylessRows() if first.met else contextlib.nullcontext()


def keyless_probe(encoder: Encoder, ids: Tensor, mask: Tensor) -> KeylessRows:
    """One forward pass of a padded batch (ids and mask, B × T, the model as trained) under :class:`KeylessRows`:
    whether any query reads no key (``met``) and which (``positions``). Every later pass on the same ids and mask
    takes its rule from this one probe (:func:`keyless_rule`): the answer depends on the mask and the model, not on
    which pass asks.
    """
    with KeylessRows(batch=ids.shape[0]) as rows, torch.no_grad(), fast_paths_off():
        encoder.model(input_ids=ids, attention_mask=mask)
    return rows


def keyless_positions(encoder: Encoder, ids: Tensor, mask: Tensor, *,
                      probe: KeylessRows | None = None) -> tuple[tuple[int, ...], ...]:
    """Per sequence of a padded batch, the positions (0-based) whose query read no key in some attention.

    One forward pass of the batch (ids and mask, B × T) under :class:`KeylessRows` (:func:`keyless_probe`): a
    right-padded sequence under a causal mask has none; under a sliding window of w, a padded position more than
    w − 1 past the last real one reads padding only.

    Args:
        probe: the batch's :func:`keyless_probe` when already made (read instead of a second pass); None: made here.

    Returns:
        B tuples of positions, increasing (empty where every query read a key).
    """
    rows = probe if probe is not None else keyless_probe(encoder, ids, mask)
    return tuple(tuple(sorted(q for b, q in rows.positions if b == sequence)) for sequence in range(ids.shape[0]))


@dataclass(frozen=True)
class ModuleMixing:
    """Whether one module's output rows read other positions, measured.

    Attributes:
        name: the module's path in the model, e.g. ``"encoder.layer.0.attention.self"``.
        kind: its class, e.g. ``"BertSelfAttention"``, ``"Linear"``, ``"LayerNorm"``.
        layer: block, 1-based; 0 for what comes before the layer stack (the embeddings).
        inputs: the inputs measured (sequence tensors of its call), e.g. ``("hidden_states",)``.
        method: how, ``"jacobian-2"`` or ``"token-replacement"``.
        pattern: over all measured inputs together, one of :data:`seqlab.measure.mixing.PATTERNS`, the same
            for every sequence of the batch (a band: the same band), else ``"differs"``.
        mixes: some output row of some sequence depends on another position's input row.
        contains_attention: the module is, or contains, an attention module.
        max_off_diagonal: largest strength of output row j on input row i ≠ j (exactly 0 per row).
        min_off_diagonal: smallest such strength over the pairs the pattern connects: every i ≠ j, or i < j
            in a causal module (row j reads rows 1…j), or the band's offsets, or in a partial module the pairs
            measured to depend; > 0 when every such pair is connected.
        max_diagonal: largest strength of row j on row j, the scale of the two above.
        patterns: the pattern of each sequence, in batch order.
        positions: the real positions n_b each sequence was measured on (padding never counted).
        band: when ``pattern`` is ``"band"``, the :class:`~seqlab.measure.mixing.Band` every sequence shares
            (width, lower and upper extent, dilation); else None.
        blocks: when ``pattern`` is ``"blocks"``, the :class:`~seqlab.measure.mixing.Blocks` (size b, causal
            inside them or not) every sequence shares; else None.

    Sequences agree when they have the same pattern and parameter, or when a shorter one's dependence matrix is
    the top-left corner of the longest one's (:func:`agrees`): two positions under a window of 3 read causally,
    as the window's first two rows do, and say nothing against it. The pattern is then the longest one's.
    """

    name: str
    kind: str
    layer: int
    inputs: tuple[str, ...]
    method: str
    pattern: str
    mixes: bool
    contains_attention: bool
    max_off_diagonal: float
    min_off_diagonal: float
    max_diagonal: float
    patterns: tuple[str, ...] = ()
    positions: tuple[int, ...] = ()
    band: Band | None = None
    blocks: Blocks | None = None


def _row(value: object, b: int, B: int) -> object:
    """``value`` cut to batch row b: tensors of batch B (2-D or more) and tuples or lists of them."""
    if isinstance(value, Tensor) and not value.is_nested and value.dim() >= 2 and value.shape[0] == B:
        return value[b:b + 1]
    if isinstance(value, (tuple, list)):
        return type(value)(_row(item, b, B) for item in value)
    return value


def row_call(call: RecordedCall, b: int, B: int) -> RecordedCall:
    """The recorded call of a batch of B as if sequence b had been run alone (its padding kept).

    >>> call = RecordedCall((torch.zeros(2, 5, 3),), {"mask": torch.ones(2, 1, 5, 5), "scale": 2})
    >>> cut = row_call(call, 1, 2)
    >>> cut.args[0].shape, cut.kwargs["mask"].shape, cut.kwargs["scale"]
    (torch.Size([1, 5, 3]), torch.Size([1, 1, 5, 5]), 2)
    """
    if B == 1:
        return call
    return RecordedCall(tuple(_row(a, b, B) for a in call.args), {k: _row(v, b, B) for k, v in call.kwargs.items()})


def real_positions(mask: Tensor, b: int) -> int:
    """n_b: the real (unpadded) positions of row b of a right-padded attention mask (B, T)."""
    return int(mask[b].sum())


def crop(measured: SubmoduleMixing, n: int) -> SubmoduleMixing:
    """The dependency strengths between the first ``n`` positions only: padded rows and columns dropped.

    A padded row (here the third) that reads the real rows makes a per-row module look "partial":

    >>> m = SubmoduleMixing("a", "Linear", ("x",), "jacobian-2", ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.5, 0.5, 1.0)))
    >>> m.pattern, crop(m, 2).pattern, crop(m, 2).strength
    ('partial', 'per-row', ((1.0, 0.0), (0.0, 1.0)))
    """
    return dataclasses.replace(measured, strength=tuple(tuple(row[:n]) for row in measured.strength[:n]))


def _smallest_connected(measured: SubmoduleMixing) -> float:
    """min strength of row j on row i ≠ j, over i < j only when the module is causal, over the band's offsets
    in a band, and over the pairs measured to depend (:func:`~seqlab.measure.dependence.judge`) in a partial
    module (the rest is 0 by design, and "≥ 0" would say nothing).

    >>> odd = SubmoduleMixing("a", "Custom", ("x",), "jacobian-2", ((1.0, 0.5, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
    >>> odd.pattern, odd.min_off_diagonal, _smallest_connected(odd)
    ('partial', 0.0, 0.5)
    """
    pattern = measured.pattern
    if pattern == CAUSAL:
        return min(v for j, row in enumerate(measured.strength) for i, v in enumerate(row) if i < j)
    if pattern == BAND:
        offsets = set(measured.band.offsets) - {0}
        values = [v for j, row in enumerate(measured.strength) for i, v in enumerate(row) if i - j in offsets]
        return min(values) if values else measured.min_off_diagonal
    if pattern == BLOCKS:
        blocks = measured.blocks
        values = [v for j, row in enumerate(measured.strength) for i, v in enumerate(row)
                  if i != j and blocks.reads(j, i)]
        return min(values) if values else measured.min_off_diagonal
    if pattern == PARTIAL:
        depends = measured.judged.depends
        values = [v for j, row in enumerate(measured.strength) for i, v in enumerate(row) if i != j and depends[j][i]]
        return min(values) if values else measured.min_off_diagonal
    return measured.min_off_diagonal


def agrees(short: SubmoduleMixing, long: SubmoduleMixing) -> bool:
    """Whether ``short``'s measured dependence (n × n booleans) is the top-left n × n corner of ``long``'s.

    Over the rows defined in both. A pattern that does not depend on where the text starts (all-to-all, causal,
    a band, blocks from row 0) looks the same on the first n positions of a longer sequence, so a shorter sequence
    that reads as that corner does is no evidence against the longer one's pattern, and too short to show its
    parameter (a window wider than it, a block longer than it).

    >>> causal = SubmoduleMixing("a", "Attention", ("x",), "jacobian-2", ((1.0, 0.0), (1.0, 1.0)))
    >>> window = SubmoduleMixing("a", "Attention", ("x",), "jacobian-2",
    ...                          ((1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 0.0, 0.0), (1.0, 1.0, 1.0, 0.0), (0.0, 1.0, 1.0, 1.0)))
    >>> causal.pattern, window.pattern, agrees(causal, window)
    ('causal', 'band', True)
    """
    first, second = short.judged, long.judged
    n = len(short.strength)
    if n > len(long.strength):
        return False
    undefined = set(first.undefined_rows) | set(second.undefined_rows)
    return all(first.depends[j][i] == second.depends[j][i] for j in range(n) if j not in undefined for i in range(n))


def _joined(name: str, layer: int, model: torch.nn.Module, measured: list[SubmoduleMixing]) -> ModuleMixing:
    patterns = tuple(m.pattern for m in measured)
    longest = max(measured, key=lambda m: len(m.strength))  # the first of the longest, in batch order
    key = (longest.pattern, longest.band, longest.blocks)  # a band agrees only with the same band
    same = all((m.pattern, m.band, m.blocks) == key or agrees(m, longest) for m in measured)
    return ModuleMixing(
        name=name, kind=longest.kind, layer=layer, inputs=longest.inputs, method=longest.method,
        pattern=longest.pattern if same else DIFFERS, mixes=any(m.mixes for m in measured),
        contains_attention=contains_attention(model.get_submodule(name)),
        max_off_diagonal=max(m.max_off_diagonal for m in measured),
        min_off_diagonal=min(_smallest_connected(m) for m in measured),
        max_diagonal=max(m.max_diagonal for m in measured), patterns=patterns,
        positions=tuple(len(m.strength) for m in measured), band=longest.band if same else None,
        blocks=longest.blocks if same else None)


def checked_mask(ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The attention mask of token ids (B, T) (all ones when None), after refusing ids that are not (B, T) with
    T >= 2 or a mask of another shape.

    Raises:
        SeqlabError: as said.
    """
    if ids.dim() != 2 or ids.shape[1] < 2:
        raise SeqlabError(N_("ids must have shape (B, T) with T >= 2, received {shape}"), shape=tuple(ids.shape))
    mask = torch.ones_like(ids) if mask is None else mask
    if mask.shape != ids.shape:
        raise SeqlabError(N_("mask must have the shape of ids {shape}, received {shape2}"), shape=tuple(ids.shape),
                          shape2=tuple(mask.shape))
    return mask

def measure_mixing(encoder: Encoder, ids: Tensor, mask: Tensor | None = None, *, seed: int = 0,
                   names: Sequence[str] | None = None) -> tuple[tuple[ModuleMixing, ...], tuple[str, ...]]:
    """Classify every module of the embeddings and of every layer by measurement, padding left out (L11).

    >>> from seqlab.layers.pretrained import load_encoder, encode, pad
    >>> encoder = load_encoder()
    >>> ids, mask = pad([encode(encoder, "la luz entra", 5), encode(encoder, "sol", 5)])
    >>> rows, unmeasured = measure_mixing(encoder, ids, mask)
    >>> [(r.name, r.pattern, r.positions) for r in rows if r.mixes and r.layer == 1][-1], unmeasured
    (('encoder.layer.0.attention.self', 'all-to-all', (5, 3)), ())

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`.
        ids: token ids, shape (B, T_m), right-padded; keep T_m small (the Jacobians are T_m·d wide).
        mask: (B, T_m), 1 on real positions, 0 on padding; None: every position is real.
        seed: seed of the Jacobian probes.
        names: measure only these of the chosen modules; None: all of them.

    Returns:
        One :class:`ModuleMixing` per measured module, in the model's order (embeddings first), and
        ``"name: reason"`` for each chosen module that could not be measured.

    Raises:
        SeqlabError: ``ids`` not (B, T_m), a mask of another shape, or a sequence with fewer than 2 real
            positions.
    """
    mask = checked_mask(ids, mask)
    B, T = ids.shape
    sizes = [real_positions(mask, b) for b in range(B)]
    if min(sizes) < 2:
        raise SeqlabError(N_("every sequence needs at least 2 positions to show mixing, received {sizes}"), sizes=sizes,
                          parameter="text")
    model = encoder.model
    chosen = [(name, layer) for name, layer in modules_of_interest(model, encoder.config.layers)
              if names is None or name in names]
    with KeylessRows() as first, record_inputs(model, [name for name, _ in chosen]) as calls, torch.no_grad(), \
            fast_paths_off():
        model(input_ids=ids, attention_mask=mask)
    rows, unmeasured = [], []
    for name, layer in chosen:
        if name not in calls:
            continue  # never called in this forward pass: no computation to classify
        module = model.get_submodule(name)
        try:
            with keyless_rule(first):  # the rule, where the batch's pass met a query without keys
                measured = [crop(measure_recorded(module, row_call(calls[name], b, B), T, name=name,
                                                  vocabulary=encoder.config.vocabulary, probes=PROBES,
                                                  seed=seed), sizes[b]) for b in range(B)]
        except SeqlabError as error:
            unmeasured.append(f"{name}: {error}")
            continue
        rows.append(_joined(name, layer, model, measured))
    return tuple(rows), tuple(unmeasured)
