"""A trained Transformer under the microscope: which modules mix positions, order, and α (L4, L10, L11).

:func:`inspect_model` reads one window of a text with all-MiniLM-L6-v2 (:mod:`seqlab.layers.pretrained`,
float64, eval mode) and measures three things on the real forward pass:

* **Mixing (L11).** :func:`seqlab.measure.modules.measure_submodules` records the real inputs of every
  submodule of the embeddings and of every encoder layer (dropout, the identity in eval mode, is left
  out), calls each module again on them and measures whether output row j depends on input row i ≠ j
  (Jacobian probes for float inputs, token replacement for ids); this study picks the modules, numbers
  their layers and marks those that hold a ``BertSelfAttention``.
  Only the modules that contain the self-attention mix, all-to-all; the Q, K, V projections,
  dense layers, LayerNorms, the GELU feed-forward and the three embedding tables act per row. The
  Jacobians are T·d × T·d, so this runs on the window's first ``mixing_tokens`` positions.
* **Order (L10).** The window's tokens are shuffled by one seeded permutation π (never the
  identity) and every layer's output is compared with the unshuffled output shuffled by π,
  max |f(x[π]) − f(x)[π]|, against :func:`seqlab.measure.order.tolerance`. With the position
  vectors switched off (:func:`~seqlab.layers.pretrained.without_positions`) the stack only moves
  its rows; with them on the numbers change.
* **One attention step (L4).** The weights α of one layer and head (T × T, rows sum to 1), the
  single weight α_T1 by which position 1 enters position T's output of that head, against the
  T − 1 products a recurrence would chain (L3), and the measured ‖∂c_T/∂x_1‖ of that head's output
  through the same module, nonzero.

Returns a frozen :class:`ModelResult`; drawing and printing are :mod:`seqlab.render.model`'s job.

Shapes: B = 1, T positions of the window, T_m = mixing positions, d_model = 384, H heads,
d_head = d_model / H, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.layers.pretrained import (
    MIN_TOKENS,
    EncodedText,
    Encoder,
    encode,
    load_encoder,
    model_config,
)
from seqlab.measure.mixing import dependency_matrix
from seqlab.measure.modules import measure_submodules, record_inputs
from seqlab.studies.model_order import LayerOrder, OrderCheck, measure_model_order  # noqa: F401  (re-exported)

#: Default, fewest and largest number of positions the mixing Jacobians are measured on.
MIXING_TOKENS = 32
MIN_MIXING_TOKENS = 2  # one position cannot show whether a module reads another one
MAX_MIXING_TOKENS = 64
#: Probes per output row of each Jacobian (see :mod:`seqlab.measure.mixing`).
PROBES = 2


@dataclass(frozen=True)
class ModuleMixing:
    """Whether one module's output rows read other positions, measured.

    Attributes:
        name: the module's path in the model, e.g. ``"encoder.layer.0.attention.self"``.
        kind: its class, e.g. ``"BertSelfAttention"``, ``"Linear"``, ``"LayerNorm"``.
        layer: encoder layer, 1-based; 0 for the embeddings.
        inputs: the inputs measured (sequence tensors of its call), e.g. ``("hidden_states",)``.
        method: how, ``"jacobian-2"`` or ``"token-replacement"``.
        pattern: over all measured inputs together, one of :data:`seqlab.measure.mixing.PATTERNS`.
        mixes: some output row depends on another position's input row.
        contains_attention: the module is, or contains, a self-attention (BertSelfAttention).
        max_off_diagonal: largest strength of output row j on input row i ≠ j (exactly 0 per row).
        min_off_diagonal: smallest such strength (> 0 when every pair is connected).
        max_diagonal: largest strength of row j on row j, the scale of the two above.
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


@dataclass(frozen=True)
class AttentionMap:
    """The attention weights of one layer and head, and the one-step path from position 1 to T (L4).

    Attributes:
        layer, head: 1-based.
        weights: T rows of T floats, α_ij (row i: how query position i spreads over key positions j).
        max_row_sum_error: max_i |Σ_j α_ij − 1|.
        alpha_T1: α_T1, the single weight that carries v_1 into position T's output of this head.
        uniform: 1 / T, the weight every position would get from an even spread.
        reach_T1: ‖∂c_T/∂x_1‖_F of this head's output row T (d_head wide) with respect to the
            module's input row 1 (Jacobian probe estimate, float64): nonzero, through one module.
        reach_method: how reach_T1 was measured, e.g. ``"jacobian-2"``.
        attention_steps: weights on the path from position 1 to T inside this head: 1.
        recurrence_steps: products by W_hh a recurrence puts on that path: T − 1 (L3).
    """

    layer: int
    head: int
    weights: tuple[tuple[float, ...], ...]
    max_row_sum_error: float
    alpha_T1: float
    uniform: float
    reach_T1: float
    reach_method: str
    attention_steps: int
    recurrence_steps: int


@dataclass(frozen=True)
class ModelResult:
    """Everything :func:`inspect_model` measured on one window of a text.

    Attributes:
        model: the model's published name.
        source: where the text came from (a path, ``"stdin"``, ``"built-in (es)"``).
        layers, heads, d_model, max_positions: the model's sizes, from its config.
        T: positions in the window, ``[CLS]`` and ``[SEP]`` included.
        pieces: the T tokens as strings.
        text_pieces, kept_pieces: word pieces in the whole text and in the window.
        window_chars, text_chars: characters the window covers, of the whole text's.
        mixing_tokens: T_m, the first positions the mixing Jacobians were measured on.
        modules: one :class:`ModuleMixing` per module, embeddings first, then layer by layer.
        order_without_positions, order_with_positions: :class:`OrderCheck` with p_t = 0 and as trained.
        attention: the chosen layer and head, :class:`AttentionMap`.
        dtype: the dtype every measurement ran in.
        seed: seed of the permutation and of the Jacobian probes.
        threads: torch threads used.
        versions: (torch, transformers) versions.
    """

    model: str
    source: str
    layers: int
    heads: int
    d_model: int
    max_positions: int
    T: int
    pieces: tuple[str, ...]
    text_pieces: int
    kept_pieces: int
    window_chars: int
    text_chars: int
    mixing_tokens: int
    modules: tuple[ModuleMixing, ...]
    order_without_positions: OrderCheck
    order_with_positions: OrderCheck
    attention: AttentionMap
    dtype: str
    seed: int
    threads: int
    versions: tuple[str, str]

    @property
    def windowed(self) -> bool:
        """The text had more word pieces than the window holds."""
        return self.kept_pieces < self.text_pieces


# --- Mixing ---------------------------------------------------------------------------------------------

def _modules_of_interest(model: torch.nn.Module) -> list[tuple[str, int]]:
    """(name, layer) for the embeddings, every encoder layer and their submodules; no dropout."""
    chosen = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Dropout):
            continue
        if name == "embeddings" or name.startswith("embeddings."):
            chosen.append((name, 0))
        elif name.startswith("encoder.layer."):
            chosen.append((name, int(name.split(".")[2]) + 1))
    return chosen


def _contains_attention(module: torch.nn.Module) -> bool:
    return any(type(m).__name__.endswith("SelfAttention") for m in module.modules())


def measure_mixing(encoder: Encoder, ids: Tensor, *, seed: int = 0) -> tuple[ModuleMixing, ...]:
    """Classify every module of the embeddings and of every encoder layer by measurement (L11).

    >>> encoder = load_encoder()
    >>> rows = measure_mixing(encoder, torch.tensor([encode(encoder, "la luz entra", 5).ids]))
    >>> [r.name for r in rows if r.mixes and r.layer == 1]
    ['encoder.layer.0', 'encoder.layer.0.attention', 'encoder.layer.0.attention.self']

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`.
        ids: token ids, shape (1, T_m), T_m >= 2; keep T_m small (the Jacobians are T_m·d wide).

    Returns:
        One :class:`ModuleMixing` per module, in the model's order (embeddings first).

    Raises:
        SeqlabError: ``ids`` not of shape (1, T_m) with T_m >= 2.
    """
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 2:
        raise SeqlabError(f"ids must have shape (1, T) with T >= 2, received {tuple(ids.shape)}")
    chosen = _modules_of_interest(encoder.model)
    measured = measure_submodules(encoder.model, {"input_ids": ids}, names=[name for name, _ in chosen],
                                  vocabulary=encoder.config.vocabulary, probes=PROBES, seed=seed)
    return tuple(
        ModuleMixing(name=m.name, kind=m.kind, layer=layer, inputs=m.inputs, method=m.method, pattern=m.pattern,
                     mixes=m.mixes, contains_attention=_contains_attention(encoder.model.get_submodule(m.name)),
                     max_off_diagonal=m.max_off_diagonal, min_off_diagonal=m.min_off_diagonal,
                     max_diagonal=m.max_diagonal)
        for m, (_, layer) in zip(measured, chosen, strict=True))


# --- Order -----------------------------------------------------------------------------------------------

# --- One layer and head --------------------------------------------------------------------------------

def measure_attention(encoder: Encoder, ids: Tensor, layer: int, head: int, *, seed: int = 0) -> AttentionMap:
    """α of one layer and head on the whole window, α_T1, and ‖∂c_T/∂x_1‖ through that module (L4).

    >>> encoder = load_encoder()
    >>> a = measure_attention(encoder, torch.tensor([encode(encoder, "la luz entra").ids]), 1, 1)
    >>> len(a.weights), a.recurrence_steps, a.attention_steps, a.reach_T1 > 0
    (6, 5, 1, True)

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`.
        ids: token ids, shape (1, T), T >= 2.
        layer: 1-based, in [1, L]; head: 1-based, in [1, H].
        seed: seed of the Jacobian probes.

    Returns:
        An :class:`AttentionMap`.

    Raises:
        SeqlabError: layer or head out of range (parameter ``"layer"`` / ``"head"``), bad ``ids``.
    """
    config = encoder.config
    _check_range("layer", layer, config.layers)
    _check_range("head", head, config.heads)
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 2:
        raise SeqlabError(f"ids must have shape (1, T) with T >= 2, received {tuple(ids.shape)}")
    T = ids.shape[1]
    name = f"encoder.layer.{layer - 1}.attention.self"
    module = encoder.model.get_submodule(name)
    with record_inputs(encoder.model, [name]) as calls, torch.no_grad():
        attentions = encoder.model(input_ids=ids, output_attentions=True).attentions
    x = calls[name].args[0]  # (1, T, d_model), the hidden states the module really received
    alpha = attentions[layer - 1][0, head - 1].to(torch.float64)  # (T, T)
    width = config.d_model // config.heads
    columns = slice((head - 1) * width, head * width)
    # c_T of this head: the last output row, this head's d_head columns, as a function of the input rows
    reach = dependency_matrix(lambda x: module(x)[0][:, -1:, columns], {"x": x}, "x",
                              probes=PROBES, seed=seed)  # (1, T)
    return AttentionMap(
        layer=layer, head=head, weights=tuple(tuple(float(v) for v in row) for row in alpha),
        max_row_sum_error=float((alpha.sum(dim=-1) - 1).abs().max()), alpha_T1=float(alpha[-1, 0]),
        uniform=1.0 / T, reach_T1=reach.strength[0][0], reach_method=reach.method,
        attention_steps=1, recurrence_steps=T - 1)


def _check_range(name: str, value: object, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= count:
        raise SeqlabError(f"{name} must be an integer in [1, {count}] (the model has {count} {name}s), "
                          f"received {value!r}", parameter=name)
    return value


def check_model_options(layer: int, head: int, max_tokens: int | None, mixing_tokens: int) -> None:
    """Refuse out-of-range options from the model's config alone, before any weight is loaded.

    >>> check_model_options(1, 1, None, 1)
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: mixing_tokens must be an integer in [2, 64], received 1

    Raises:
        SeqlabError: the first bad option, with ``parameter`` naming it; a missing package.
    """
    config = model_config()
    _check_range("layer", layer, config.layers)
    _check_range("head", head, config.heads)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or not MIN_TOKENS <= max_tokens <= config.max_positions):
        raise SeqlabError(f"max_tokens must be an integer in [{MIN_TOKENS}, {config.max_positions}] (the model "
                          f"reads at most {config.max_positions} positions), received {max_tokens!r}",
                          parameter="max_tokens")
    if (isinstance(mixing_tokens, bool) or not isinstance(mixing_tokens, int)
            or not MIN_MIXING_TOKENS <= mixing_tokens <= MAX_MIXING_TOKENS):
        raise SeqlabError(f"mixing_tokens must be an integer in [{MIN_MIXING_TOKENS}, {MAX_MIXING_TOKENS}], "
                          f"received {mixing_tokens!r}", parameter="mixing_tokens")


def inspect_model(text: str, *, source: str = "text", layer: int = 1, head: int = 1, max_tokens: int | None = None,
                  mixing_tokens: int = MIXING_TOKENS, seed: int = 0) -> ModelResult:
    """Put all-MiniLM-L6-v2 under the microscope on one window of ``text``: mixing, order and α (L4, L10, L11).

    >>> r = inspect_model("En un lugar de la Mancha", max_tokens=8, mixing_tokens=4)
    >>> r.T, r.order_without_positions.overall.equivariant, r.order_with_positions.overall.equivariant
    (8, True, False)

    Args:
        text: the text; a longer one is windowed to its first ``max_tokens`` positions (see
            :func:`~seqlab.layers.pretrained.encode`).
        source: where it came from, for the report.
        layer, head: the attention map to read, 1-based (layer 1 is nearest the embeddings).
        max_tokens: positions in the window, [3, 512]; None: the model's maximum.
        mixing_tokens: the first positions the mixing Jacobians are measured on, [2, 64].
        seed: seed of the permutation and of the Jacobian probes, an integer >= 0.

    Returns:
        A :class:`ModelResult`; every measurement in float64.

    Raises:
        SeqlabError: an option out of range (``parameter`` names it), a text without word pieces,
            or a missing package (the message gives the install command).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SeqlabError(f"seed must be an integer >= 0, received {seed!r}", parameter="seed")
    check_model_options(layer, head, max_tokens, mixing_tokens)
    import transformers

    encoder = load_encoder(torch.float64)
    window: EncodedText = encode(encoder, text, max_tokens)
    ids = torch.tensor([window.ids])  # (1, T)
    T_m = min(mixing_tokens, len(window))
    config = encoder.config
    return ModelResult(
        model=config.name, source=source, layers=config.layers, heads=config.heads, d_model=config.d_model,
        max_positions=config.max_positions, T=len(window), pieces=window.pieces, text_pieces=window.text_pieces,
        kept_pieces=window.kept_pieces, window_chars=window.window_chars, text_chars=window.text_chars,
        mixing_tokens=T_m, modules=measure_mixing(encoder, ids[:, :T_m], seed=seed),
        order_without_positions=measure_model_order(encoder, ids, positions=False, seed=seed),
        order_with_positions=measure_model_order(encoder, ids, positions=True, seed=seed),
        attention=measure_attention(encoder, ids, layer, head, seed=seed), dtype=encoder.dtype, seed=seed,
        threads=torch.get_num_threads(), versions=(torch.__version__, transformers.__version__))
