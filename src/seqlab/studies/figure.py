"""Figure 1 of "Attention Is All You Need", measured box by box: which of the fifteen boxes mix positions (L11).

The lesson's claim: switch the highlighter on and three boxes light up — the three attention boxes —
because only they let an output row read other rows; the other twelve work on one row at a time.
Nothing here declares it. :func:`measure_figure` builds a one-layer encoder–decoder Transformer
(:mod:`seqlab.layers.transformer`, PyTorch's own modules, float64, eval mode, seeded), feeds it real
tokens (the built-in story's first S tokens in Spanish as the source, its English twin's first T
tokens as the target, shifted right), runs the fifteen boxes one after another and, for every input
of every box, measures a dependency matrix with :func:`seqlab.measure.mixing.dependency_matrix`
(Jacobian blocks for rows, token replacement for ids). A box *mixes* when one of its inputs does; its
pattern is the pattern of the union of its same-sequence inputs, or ``"cross"`` when it reads the
other stack (the decoder's encoder–decoder attention reads the encoder's memory).

The result is frozen dataclasses whose JSON form (:func:`seqlab.render.json_output.to_jsonable`) is
what the web lab draws: ``{T_source, T_target, d_model, heads, seed, lit, boxes: [{key, stack, title,
lesson, column, row, mixes, pattern, dependencies: [{input_name, strength, method, other_sequence,
pattern, mixes, band}], band}]}``, boxes in the paper's order; ``band`` is ``{lower, upper, dilation}`` where the
pattern is ``"band"`` (:class:`~seqlab.measure.mixing.Band`), else null.

Titles and lesson labels are English message ids marked with :func:`N_`; the renderers translate
them through the gettext domain ``seqlab``.

Shapes: S source positions, T target positions, d_model width, V vocabulary (distinct ids + start).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import Message, SeqlabError, require_positive_int
from seqlab.i18n import N_
from seqlab.layers.transformer import BOX_KEYS, ENCODER, Transformer, compose, shift_right
from seqlab.measure.dependence import judge
from seqlab.measure.mixing import (
    BAND, CROSS, DEFAULT_PROBES, NONE, PER_ROW, Band, DependencyMatrix, band_of, classify, dependency_matrix,
)
from seqlab.memory import FLOAT64_BYTES, MemoryEstimate, require_fits
from seqlab.text import Text, Tokens, builtin_text, embed, tokenize
from seqlab.seeds import MAX_SEED

DOMAIN = "seqlab"  # the gettext catalogue that holds the N_-marked titles and lessons

DEFAULT_LENGTH = 10
DEFAULT_D_MODEL = 512  # the paper's base model (§3): d_model = 512, h = 8
DEFAULT_HEADS = 8
MIN_LENGTH = 2  # one position cannot show whether a box reads another one
MAX_LENGTH = 256
MAX_D_MODEL = 4096




@dataclass(frozen=True)
class BoxSpec:
    """Where a box sits in Figure 1 and what it is called (English ids; translated when drawn)."""

    key: str
    title: str
    lesson: str

    @property
    def stack(self) -> str:
        """``"encoder"`` or ``"decoder"``."""
        return self.key.split(".")[0]

    @property
    def column(self) -> int:
        """0 for the encoder (left in the paper's drawing), 1 for the decoder (right)."""
        return 0 if self.stack == ENCODER else 1

    @property
    def row(self) -> int:
        """Place in its stack counted from the bottom (0 = the embedding)."""
        return [key for key in BOX_KEYS if key.startswith(self.stack + ".")].index(self.key)


# Which lesson builds each box. Sourced from the lesson text: this lesson is block 5, lesson 1, and it
# says the block builds the whole architecture; it names self-attention as the next lesson (block 5,
# lesson 2) and positional encoding as block 5, lesson 5. It names no lesson for the other boxes, so
# they only say "a later lesson" of block 5.
NEXT_LESSON = N_("Block 5 · Lesson 2")  # sourced: self-attention
POSITIONAL_LESSON = N_("Block 5 · Lesson 5")  # sourced: positional encoding
LATER_LESSON = N_("Block 5 · a later lesson")  # block sourced, lesson number not
BOX_SPECS = (
    BoxSpec("encoder.input_embedding", N_("Input embedding"), LATER_LESSON),
    BoxSpec("encoder.positional_encoding", N_("Positional encoding"), POSITIONAL_LESSON),
    BoxSpec("encoder.self_attention", N_("Multi-head self-attention"), NEXT_LESSON),
    BoxSpec("encoder.add_norm_1", N_("Add & norm"), LATER_LESSON),
    BoxSpec("encoder.feed_forward", N_("Position-wise feed-forward"), LATER_LESSON),
    BoxSpec("encoder.add_norm_2", N_("Add & norm"), LATER_LESSON),
    BoxSpec("decoder.output_embedding", N_("Output embedding"), LATER_LESSON),
    BoxSpec("decoder.positional_encoding", N_("Positional encoding"), POSITIONAL_LESSON),
    BoxSpec("decoder.masked_self_attention", N_("Masked multi-head self-attention"), LATER_LESSON),
    BoxSpec("decoder.add_norm_1", N_("Add & norm"), LATER_LESSON),
    BoxSpec("decoder.cross_attention", N_("Encoder–decoder attention"), LATER_LESSON),
    BoxSpec("decoder.add_norm_2", N_("Add & norm"), LATER_LESSON),
    BoxSpec("decoder.feed_forward", N_("Position-wise feed-forward"), LATER_LESSON),
    BoxSpec("decoder.add_norm_3", N_("Add & norm"), LATER_LESSON),
    BoxSpec("decoder.linear_softmax", N_("Linear + softmax"), LATER_LESSON),
)


@dataclass(frozen=True)
class Dependency:
    """One input of one box, measured: :class:`~seqlab.measure.mixing.DependencyMatrix` with its verdicts as fields.

    Attributes:
        input_name: the box's keyword (``tokens``, ``x``, ``residual``, ``sublayer``, ``memory``).
        strength: T_out rows of T_in floats, exactly 0.0 where output row j does not read input row i.
        method: ``"jacobian-k"`` or ``"token-replacement"``.
        other_sequence: the input is the other stack's sequence (the encoder memory).
        pattern: per-row, causal, all-to-all, cross, band, partial or none.
        mixes: some output row reads another position (or the other sequence).
        band: the :class:`~seqlab.measure.mixing.Band` (width, extents, dilation) when ``pattern`` is ``"band"``.
    """

    input_name: str
    strength: tuple[tuple[float, ...], ...]
    method: str
    other_sequence: bool
    pattern: str
    mixes: bool
    band: Band | None = None

    @classmethod
    def of(cls, matrix: DependencyMatrix) -> Dependency:
        """Freeze a measured matrix with its pattern, band and verdict."""
        return cls(matrix.input_name, matrix.strength, matrix.method, matrix.other_sequence,
                   matrix.pattern, matrix.mixes, matrix.band)


@dataclass(frozen=True)
class BoxResult:
    """One of the fifteen boxes, measured: does any output row read another position (L11)?

    ``title`` and ``lesson`` are English; ``column`` 0 = encoder, 1 = decoder; ``row`` 0 = bottom; ``band`` the
    box's :class:`~seqlab.measure.mixing.Band` when ``pattern`` is ``"band"`` (:func:`box_band`), else None.
    """

    key: str
    stack: str
    title: str
    lesson: str
    column: int
    row: int
    mixes: bool
    pattern: str
    dependencies: tuple[Dependency, ...]
    band: Band | None = None


@dataclass(frozen=True)
class FigureResult:
    """Figure 1 measured: the fifteen boxes in the paper's order and the keys of those that mix (``lit``)."""

    T_source: int
    T_target: int
    d_model: int
    heads: int
    seed: int
    lit: tuple[str, ...]
    boxes: tuple[BoxResult, ...]


def box_pattern(dependencies: tuple[Dependency, ...]) -> str:
    """The pattern of a whole box: ``"cross"`` if it reads the other sequence, else that of its inputs' union.

    Output row j reads position i of its own stack when any same-sequence input links them.

    >>> per_row = Dependency("residual", ((1.0, 0.0), (0.0, 1.0)), "jacobian-2", False, "per-row", False)
    >>> causal = Dependency("x", ((1.0, 0.0), (2.0, 1.0)), "jacobian-2", False, "causal", True)
    >>> box_pattern((per_row,)), box_pattern((per_row, causal))
    ('per-row', 'causal')

    Raises:
        SeqlabError: same-sequence inputs whose matrices differ in shape.
    """
    if any(dependency.other_sequence and dependency.mixes for dependency in dependencies):
        return CROSS
    union = _own_union(dependencies)
    return NONE if union is None else classify(union)


def box_band(dependencies: tuple[Dependency, ...]) -> Band | None:
    """The band of a whole box (the union of its same-sequence inputs) when :func:`box_pattern` is ``"band"``.

    >>> conv = Dependency("x", ((1.0, 2.0, 0.0), (1.0, 1.0, 3.0), (0.0, 1.0, 1.0)), "jacobian-2", False, "band", True)
    >>> box_pattern((conv,)), box_band((conv,))
    ('band', Band(lower=1, upper=1, dilation=1))

    Raises:
        SeqlabError: same-sequence inputs whose matrices differ in shape.
    """
    if box_pattern(dependencies) != BAND:
        return None
    return band_of(_own_union(dependencies))


def _own_union(dependencies: tuple[Dependency, ...]) -> tuple[tuple[bool, ...], ...] | None:
    """Output row j reads row i of its own stack through any same-sequence input; None without such inputs."""
    own = [dependency for dependency in dependencies if not dependency.other_sequence]
    shapes = {(len(d.strength), len(d.strength[0]) if d.strength else 0) for d in own}
    if not own:
        return None
    if len(shapes) > 1:
        raise SeqlabError(N_("inputs of one sequence must give matrices of one shape, received {shapes}"),
                          shapes=sorted(shapes))
    judged = [judge(d.strength, torch.float64).depends for d in own]  # the one rule; the figure runs in float64
    return tuple(tuple(any(m[j][i] for m in judged) for i in range(len(own[0].strength[0])))
                 for j in range(len(own[0].strength)))


def measure_boxes(boxes: Mapping[str, Callable[..., Tensor]], source: Tensor, target_in: Tensor,
                  vocabulary: int, *, seed: int = 0, probes: int = DEFAULT_PROBES,
                  progress: Callable[[int, int, str], None] | None = None) -> tuple[BoxResult, ...]:
    """Run the boxes in order and measure every input of every box (L11).

    Args:
        boxes: key -> box for every key of :data:`~seqlab.layers.transformer.BOX_KEYS` (as
            :meth:`~seqlab.layers.transformer.Transformer.boxes` gives; any may be swapped for another
            callable with the same keywords, in eval mode).
        source: source ids (1, S), int64, below ``vocabulary``.
        target_in: decoder input ids (1, T), already shifted right.
        vocabulary: V, for the token-replacement of the embeddings.
        seed: seed of the Jacobian probes.
        probes: Gaussian probes per output row.
        progress: called as ``progress(done, 15, box key)`` before each box and at the end.

    Returns:
        Fifteen :class:`BoxResult` in the paper's order.

    Raises:
        SeqlabError: a missing box, or a box that does not return a batch-first tensor.
    """
    _, inputs = compose(dict(boxes), source, target_in)
    results = []
    for spec in BOX_SPECS:
        if progress is not None:
            progress(len(results), len(BOX_SPECS), spec.key)
        measured = tuple(Dependency.of(dependency_matrix(
            boxes[spec.key], inputs[spec.key], name, other_sequence=(spec.key == "decoder.cross_attention"
                                                                     and name == "memory"),
            probes=probes, seed=seed, vocabulary=vocabulary)) for name in inputs[spec.key])
        pattern = box_pattern(measured)
        results.append(BoxResult(spec.key, spec.stack, spec.title, spec.lesson, spec.column, spec.row,
                                 mixes=pattern not in (PER_ROW, NONE), pattern=pattern, dependencies=measured,
                                 band=box_band(measured)))
    if progress is not None:
        progress(len(results), len(BOX_SPECS), "done")
    return tuple(results)


def estimate_figure_bytes(T_source: int, T_target: int, d_model: int, heads: int,
                          probes: int = DEFAULT_PROBES) -> MemoryEstimate:
    """A generous estimate of the bytes :func:`measure_figure` needs, in float64.

    The batched backward of one box holds, per probe vector (probes · T of them, T the longer
    sequence), the box's activations: T·(4·h·T attention maps + 3·d_ff + 10·d_model + V) numbers;
    the weights (4·d_model² per attention, 2·d_model·d_ff per feed-forward, V·d_model) count 3 times.

    >>> estimate_figure_bytes(10, 10, 512, 8).gib < 0.5
    True
    """
    T = max(T_source, T_target)
    d_ff, V = 4 * d_model, T_source + T_target + 1
    maps = probes * T * T * (4 * heads * T + 3 * d_ff + 10 * d_model + V) * FLOAT64_BYTES
    weights = 3 * (3 * 4 * d_model**2 + 2 * 2 * d_model * d_ff + V * d_model) * FLOAT64_BYTES
    largest = Message(N_("the batched backward over {count} probe vectors"), count=probes * T) if maps >= weights \
        else Message(N_("the weights of width {width}"), width=d_model)
    return MemoryEstimate(total_bytes=maps + weights, largest=largest)


def check_figure_arguments(T_source: int, T_target: int, d_model: int, heads: int, seed: int) -> None:
    """Refuse bad sizes, and sizes that would not fit in memory, before anything is allocated.

    >>> check_figure_arguments(10, 10, 30, 4, 0)
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: heads must divide d_model, received d_model = 30 and heads = 4; expected a divisor of 30 in [1, 30]

    Raises:
        SeqlabError: a length outside [2, 256], ``d_model`` outside [1, 4096], ``heads`` outside
            [1, d_model] or not dividing ``d_model``, ``seed`` outside [0, 2**32 - 1], or a size too
            large for this machine; ``parameter`` names the argument.
    """
    for name, value in (("T_source", T_source), ("T_target", T_target)):
        if isinstance(value, bool) or not isinstance(value, int) or not MIN_LENGTH <= value <= MAX_LENGTH:
            raise SeqlabError(N_("{name} must be an integer in [{min_length}, {max_length}], received {value!r}"),
                              name=name, min_length=MIN_LENGTH, max_length=MAX_LENGTH, value=value, parameter=name)
    require_positive_int("d_model", d_model, MAX_D_MODEL)
    if isinstance(heads, bool) or not isinstance(heads, int) or not 1 <= heads <= d_model:
        raise SeqlabError(N_("heads must be an integer in [1, {d_model}] dividing d_model = {d_model}, received "
                             "{heads!r}"), d_model=d_model, heads=heads, parameter="heads")
    if d_model % heads:
        raise SeqlabError(N_("heads must divide d_model, received d_model = {d_model} and heads = {heads}; expected "
                             "a divisor of {d_model} in [1, {d_model}]"), d_model=d_model, heads=heads,
                          parameter="heads")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SeqlabError(N_("seed must be an integer in [0, {max_seed}], received {seed!r}"), max_seed=MAX_SEED,
                          seed=seed, parameter="seed")
    require_fits(estimate_figure_bytes(T_source, T_target, d_model, heads),
                 Message(N_("S = {S}, T = {T} at d_model = {d_model}"), S=T_source, T=T_target, d_model=d_model))


def figure_tokens(T_source: int, T_target: int, text: str | Text | None = None) -> tuple[Tokens, Tokens]:
    """The source and target tokens: the built-in story (Spanish → English), or one text cut in two.

    >>> source, target = figure_tokens(4, 3)
    >>> len(source), len(target), target.pieces[0]
    (4, 3, 'The')

    Raises:
        SeqlabError: ``text`` gives fewer than ``T_source + T_target`` tokens.
    """
    if text is None:
        source, target = tokenize(builtin_text("es").content), tokenize(builtin_text("en").content)
        return _cut(source, 0, T_source), _cut(target, 0, T_target)
    tokens = tokenize(text.content if isinstance(text, Text) else text)
    if len(tokens) < T_source + T_target:
        raise SeqlabError(N_("the text gives {tokens_count} tokens, expected at least T_source + T_target = {value}"),
                          tokens_count=len(tokens), value=T_source + T_target, parameter="text")
    return _cut(tokens, 0, T_source), _cut(tokens, T_source, T_target)


def _cut(tokens: Tokens, start: int, length: int) -> Tokens:
    return Tokens(tokens.ids[start:start + length], tokens.pieces[start:start + length], tokens.tokenizer)


def measure_figure(T_source: int = DEFAULT_LENGTH, T_target: int = DEFAULT_LENGTH, d_model: int = DEFAULT_D_MODEL,
                   heads: int = DEFAULT_HEADS, seed: int = 0, text: str | Text | None = None,
                   progress: Callable[[int, int, str], None] | None = None) -> FigureResult:
    """Build the Transformer, run it on real tokens and measure which of the fifteen boxes mix positions (L11).

    >>> result = measure_figure(T_source=4, T_target=3, d_model=8, heads=2)
    >>> result.lit
    ('encoder.self_attention', 'decoder.masked_self_attention', 'decoder.cross_attention')

    Args:
        T_source: S, source tokens, in [2, 256].
        T_target: T, target tokens, in [2, 256] (the decoder reads a start id and the first T - 1).
        d_model: row width, in [1, 4096], a multiple of ``heads``.
        heads: attention heads h, in [1, d_model], dividing ``d_model``.
        seed: in [0, 2**32 - 1]; seeds the weights (and the probes); token vectors come from :func:`seqlab.text.embed`.
        text: None for the built-in story (source: Spanish, target: its English twin), else a text
            whose first S tokens are the source and the next T the target.
        progress: called as ``progress(done, 15, box key)`` as the boxes are measured (see :func:`measure_boxes`).

    Returns:
        A :class:`FigureResult` (float64, eval mode, one layer per stack, d_ff = 4·d_model).

    Raises:
        SeqlabError: see :func:`check_figure_arguments` and :func:`figure_tokens`.
    """
    check_figure_arguments(T_source, T_target, d_model, heads, seed)
    source_tokens, target_tokens = figure_tokens(T_source, T_target, text)
    distinct = sorted(set(source_tokens.ids) | set(target_tokens.ids))
    index = {token: position for position, token in enumerate(distinct)}  # o200k id -> row of the table
    start = len(distinct)  # the start id of the shifted decoder input: one more row
    vocabulary = start + 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Transformer(vocabulary, d_model, heads, max_length=max(T_source, T_target),
                            dtype=torch.float64).eval()
    pieces = {token: piece for token, piece in zip(source_tokens.ids + target_tokens.ids,
                                                    source_tokens.pieces + target_tokens.pieces)}
    rows = embed(Tokens(tuple(distinct), tuple(pieces[t] for t in distinct), source_tokens.tokenizer),
                 d_model, seed, torch.float64)  # (V - 1, d_model), N(0, 1)
    with torch.no_grad():
        model.embedding.weight[:start] = rows / math.sqrt(d_model)  # the scale of §3.4's shared matrix
    source = torch.tensor([[index[t] for t in source_tokens.ids]])  # (1, S)
    target_in = shift_right(torch.tensor([[index[t] for t in target_tokens.ids]]), start)  # (1, T)
    boxes = measure_boxes(model.boxes(), source, target_in, vocabulary, seed=seed, progress=progress)
    return FigureResult(T_source, T_target, d_model, heads, seed,
                        lit=tuple(box.key for box in boxes if box.mixes), boxes=boxes)
