"""A trained Transformer under the microscope: which modules mix positions, order, and α (L4, L10, L11).

:func:`inspect_model` reads one window of each text with a pretrained model — the bundled
all-MiniLM-L6-v2 or any local Hugging Face encoder or decoder checkpoint (:mod:`seqlab.layers.pretrained`,
float64, eval mode) — puts several texts into one right-padded batch with its attention mask, and
measures three things on the real forward pass:

* **Mixing (L11).** :func:`seqlab.studies.model_mixing.measure_mixing` records the real inputs of every
  module of the embeddings and of every layer, calls each module again on them and measures whether
  output row j depends on input row i ≠ j (Jacobian probes for float inputs, token replacement for ids),
  per sequence, on its real positions only. Only the modules that contain an attention mix: all-to-all
  in an encoder, causally (row j reads rows 1…j) in a decoder — the model's kind is *measured*
  (:attr:`ModelResult.kind`), never read from its config. The Jacobians are T·d × T·d, so this runs on
  the first ``mixing_tokens`` columns of the batch.
* **Order (L10).** Each sequence's tokens are shuffled by one seeded permutation π (never the identity)
  and every layer's output is compared with the unshuffled output shuffled by π,
  max |f(x[π]) − f(x)[π]|, against :func:`seqlab.measure.order.tolerance`
  (:mod:`seqlab.studies.model_order`). With the position information switched off
  (:func:`~seqlab.layers.anatomy.without_positions`: learned vectors zeroed, rotations made the
  identity) an encoder only moves its rows; a decoder's causal mask still tells it the order.
* **One attention step (L4).** The weights α of one layer and head on the first sequence (n × n, its
  real positions, rows sum to 1), the single weight α_T1 by which position 1 enters position T's output,
  against the T − 1 products a recurrence would chain (L3), and the measured ‖∂c_T/∂x_1‖ through that
  attention module, nonzero. A weight of exactly 0 (a sliding window, a local pattern) is no path at all.

Returns a frozen :class:`ModelResult`; drawing and printing are :mod:`seqlab.render.model`'s job.

Shapes: B sequences, T positions of the first window, T_m = mixing positions, d_model, H heads,
d_head = d_model / H, L layers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.layers.anatomy import attention_module, find_position_switch
from seqlab.layers.pretrained import (
    MIN_TOKENS,
    EncodedText,
    Encoder,
    encode,
    load_encoder,
    model_config,
    pad,
)
from seqlab.measure.mixing import BAND, BLOCKS, Band, Blocks, dependency_matrix
from seqlab.measure.modules import record_inputs
from seqlab.studies.model_mixing import (  # noqa: F401  (re-exported)
    KeylessRows,
    ModuleMixing,
    keyless_positions,
    keyless_probe,
    keyless_rule,
    measure_mixing,
    row_call,
)
from seqlab.studies.model_order import LayerOrder, OrderCheck, measure_model_order  # noqa: F401  (re-exported)

#: Default, fewest and largest number of positions the mixing Jacobians are measured on.
MIXING_TOKENS = 32
MIN_MIXING_TOKENS = 2  # one position cannot show whether a module reads another one
MAX_MIXING_TOKENS = 64
#: Most texts read at once (one padded batch).
MAX_SEQUENCES = 8
#: Probes per output row of each Jacobian (see :mod:`seqlab.measure.mixing`).
PROBES = 2
#: Names of an attention module's output projection: where present, its output mixes the heads.
OUTPUT_PROJECTIONS = ("c_proj", "o_proj", "out_proj", "dense", "out_lin", "Wo")


@dataclass(frozen=True)
class AttentionMap:
    """The attention weights of one layer and head, and the one-step path from position 1 to T (L4).

    Attributes:
        layer, head: 1-based.
        weights: T rows of T floats, α_ij (row i: how query position i spreads over key positions j).
        max_row_sum_error: max_i |Σ_j α_ij − 1|.
        alpha_T1: α_T1, the single weight that carries v_1 into position T's output of this head.
        uniform: 1 / T, the weight every position would get from an even spread.
        reach_T1: ‖∂c_T/∂x_1‖_F of output row T with respect to the module's input row 1 (Jacobian probe
            estimate, float64): nonzero, through one module. The row is this head's d_head columns where
            the module returns the heads side by side (BERT), else the module's whole output row (GPT-2,
            LLaMA: their attention module ends in an output projection that mixes the heads).
        reach_method: how reach_T1 was measured, e.g. ``"jacobian-2"``.
        attention_steps: weights on the path from position 1 to T inside this head, measured: 1, or 0 when
            α_T1 is exactly 0 (a window or local pattern: no path in one step).
        recurrence_steps: products by W_hh a recurrence puts on that path: T − 1 (L3).
        module: the attention module's path, e.g. ``"encoder.layer.0.attention.self"``.
        reach_scope: ``"head"`` or ``"module"``, which output reach_T1 was measured on.
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
    module: str = ""
    reach_scope: str = "head"


@dataclass(frozen=True)
class ModelResult:
    """Everything :func:`inspect_model` measured on one window of each text.

    Attributes:
        model: the model's published name, or its folder's name.
        source: where the text came from (a path, ``"stdin"``, ``"built-in (es)"``, ``"--text"``).
        layers, heads, d_model, max_positions: the model's sizes, from its config.
        T: positions in the first window, special tokens included.
        pieces: its T tokens as strings.
        text_pieces, kept_pieces: word pieces in the first whole text and in its window.
        window_chars, text_chars: characters the first window covers, of its whole text's.
        mixing_tokens: T_m, the first columns of the batch the mixing Jacobians were measured on.
        modules: one :class:`ModuleMixing` per module, embeddings first, then layer by layer.
        order_without_positions, order_with_positions: :class:`OrderCheck` with p_t = 0 and as trained.
        attention: the chosen layer and head, :class:`AttentionMap`.
        dtype: the dtype every measurement ran in.
        seed: seed of the permutation and of the Jacobian probes.
        threads: torch threads used.
        versions: (torch, transformers) versions.
        windows: every sequence's window, in batch order (the first is described above).
        padded_T: positions of the padded batch, the longest window.
        unmeasured: ``"module: reason"`` for each chosen module that could not be measured.
        architecture, model_type: from the config, e.g. ``"GPT2Model"``, ``"gpt2"``.
        position_switch: what was switched off, e.g. ``"learned: embeddings.position_embeddings"``.
        softmax_dtype: the precision the softmax measured to run in (:func:`working_precision`); the order
            verdicts are judged at it.
        keyless: per sequence, the positions (0-based) whose query read no key in some attention of the padded
            batch (a padded position under a sliding window, measured by
            :func:`~seqlab.studies.model_mixing.keyless_positions`): their weights are 0, so they contribute
            nothing (:class:`~seqlab.studies.model_mixing.KeylessRows`); empty tuples where every query read a key.
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
    windows: tuple[EncodedText, ...] = ()
    padded_T: int = 0
    unmeasured: tuple[str, ...] = ()
    architecture: str = "BertModel"
    model_type: str = "bert"
    position_switch: str = ""
    softmax_dtype: str = "float64"
    keyless: tuple[tuple[int, ...], ...] = ()

    @property
    def softmax_below_dtype(self) -> bool:
        """The softmax was measured to run in a lower precision than the model's dtype (float32 in float64)."""
        return torch.finfo(getattr(torch, self.softmax_dtype)).eps > torch.finfo(getattr(torch, self.dtype)).eps

    @property
    def band(self) -> Band | None:
        """The band every mixing module reads, measured, when they all read the same one (a sliding window of w:
        a causal band of width w), else None."""
        mixing = [m for m in self.modules if m.mixes]
        bands = {m.band for m in mixing}
        if mixing and all(m.pattern == BAND for m in mixing) and len(bands) == 1:
            return bands.pop()
        return None

    @property
    def blocks(self) -> Blocks | None:
        """The blocks every mixing module reads, measured, when they all read the same ones (block-local attention
        of b positions: :class:`~seqlab.measure.mixing.Blocks`, b read from the measurement), else None."""
        mixing = [m for m in self.modules if m.mixes]
        found = {m.blocks for m in mixing}
        if mixing and all(m.pattern == BLOCKS for m in mixing) and len(found) == 1:
            return found.pop()
        return None

    @property
    def kind(self) -> str:
        """The model's kind, measured: ``"all-to-all"`` (an encoder) or ``"causal"`` (a decoder) when every
        mixing module has that pattern over every sequence; ``"band"`` when every one reads the same band
        (:attr:`band`: its width read from the measurement), ``"blocks"`` the same blocks (:attr:`blocks`: their
        size); ``"none"`` when nothing mixes; else ``"mixed"``. A module's pattern over the batch is the one its
        sequences agree on (:class:`~seqlab.studies.model_mixing.ModuleMixing`: a shorter sequence that reads as
        the corner of the longest one agrees)."""
        patterns = {m.pattern for m in self.modules if m.mixes}
        if not patterns:
            return "none"
        if self.band is not None:
            return BAND
        if self.blocks is not None:
            return BLOCKS
        return patterns.pop() if len(patterns) == 1 and patterns <= {"all-to-all", "causal"} else "mixed"

    @property
    def windowed(self) -> bool:
        """The text had more word pieces than the window holds."""
        return self.kept_pieces < self.text_pieces


# --- One layer and head --------------------------------------------------------------------------------

def _hidden_slot(call) -> int | str:
    """Where the hidden states sit in an attention module's call: the first positional argument, else
    the keyword ``hidden_states``."""
    return 0 if call.args else "hidden_states"


def measure_attention(encoder: Encoder, ids: Tensor, layer: int, head: int, *, mask: Tensor | None = None,
                      seed: int = 0, probe: KeylessRows | None = None) -> AttentionMap:
    """α of one layer and head on the first sequence, α_T1, and ‖∂c_T/∂x_1‖ through that module (L4).

    >>> encoder = load_encoder()
    >>> a = measure_attention(encoder, torch.tensor([encode(encoder, "la luz entra").ids]), 1, 1)
    >>> len(a.weights), a.recurrence_steps, a.attention_steps, a.reach_T1 > 0, a.reach_scope
    (6, 5, 1, True, 'head')

    Args:
        encoder: from :func:`~seqlab.layers.pretrained.load_encoder`.
        ids: token ids, shape (B, T), right-padded; the map is read on row 0, its n real positions.
        layer: 1-based, in [1, L]; head: 1-based, in [1, H].
        mask: (B, T) attention mask, 1 on real positions; None: all real.
        seed: seed of the Jacobian probes.
        probe: the batch's :func:`~seqlab.studies.model_mixing.keyless_probe` on these ids and mask when the caller
            made it already: the keyless-row rule is then taken only where it met a query without keys (it changes
            nothing elsewhere); None: the pass runs under the rule and decides it itself.

    Returns:
        An :class:`AttentionMap` over the first sequence's n real positions (T = n).

    Raises:
        SeqlabError: layer or head out of range (parameter ``"layer"`` / ``"head"``), bad ``ids``.
    """
    config = encoder.config
    _check_range("layer", layer, config.layers)
    _check_range("head", head, config.heads)
    if ids.dim() != 2 or ids.shape[1] < 2:
        raise SeqlabError(N_("ids must have shape (B, T) with T >= 2, received {shape}"), shape=tuple(ids.shape))
    mask = torch.ones_like(ids) if mask is None else mask
    T = int(mask[0].sum())  # real positions of the first sequence
    name = attention_module(encoder.model, config.layers, layer)
    module = encoder.model.get_submodule(name)
    with (KeylessRows() if probe is None else keyless_rule(probe)) as rule, record_inputs(encoder.model, [name]) \
            as calls, torch.no_grad():
        attentions = encoder.model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
    first = probe if probe is not None else rule
    call = row_call(calls[name], 0, ids.shape[0])
    alpha = attentions[layer - 1][0, head - 1, :T, :T].to(torch.float64)  # (T, T), real rows and columns
    projected = any(child in OUTPUT_PROJECTIONS for child, _ in module.named_children())
    width = config.d_model // config.heads
    columns = slice(None) if projected else slice((head - 1) * width, head * width)
    slot = _hidden_slot(call)

    def output_row_T(x: Tensor) -> Tensor:  # (1, T_pad, d_model) -> (1, 1, width): the last real row
        args, kwargs = list(call.args), dict(call.kwargs)
        if isinstance(slot, str):
            kwargs[slot] = x
        else:
            args[slot] = x
        with keyless_rule(first):  # a padded query with no key: weights 0, never NaN (see model_mixing)
            return module(*args, **kwargs)[0][:, T - 1:T, columns]

    x = call.args[0] if call.args else call.kwargs["hidden_states"]  # (1, T_pad, d_model), as received
    reach = dependency_matrix(output_row_T, {"x": x}, "x", probes=PROBES, seed=seed)  # (1, T_pad)
    return AttentionMap(
        layer=layer, head=head, weights=tuple(tuple(float(v) for v in row) for row in alpha),
        max_row_sum_error=float((alpha.sum(dim=-1) - 1).abs().max()), alpha_T1=float(alpha[-1, 0]),
        uniform=1.0 / T, reach_T1=reach.strength[0][0], reach_method=reach.method,
        attention_steps=1 if float(alpha[-1, 0]) != 0 else 0, recurrence_steps=T - 1, module=name,
        reach_scope="module" if projected else "head")


def working_precision(attention: AttentionMap, dtype: torch.dtype) -> torch.dtype:
    """The precision the model's softmax really runs in, measured from how exactly the rows of α sum to 1.

    A float64 softmax sums each row to 1 within a few units of 2^-52; LLaMA's, GPT-NeoX's and ModernBERT's
    eager attention computes its softmax in float32 and casts back, so a row is off by up to ~1e-7.

    >>> a = AttentionMap(1, 1, ((1.0,),), 5.96e-08, 1.0, 1.0, 1.0, "jacobian-2", 1, 0)
    >>> working_precision(a, torch.float64)
    torch.float32

    Returns:
        ``dtype`` when max |Σ_j α_ij − 1| <= 64·eps(dtype)·T, else float32 (the lower precision it fits).
    """
    T = len(attention.weights)
    if attention.max_row_sum_error <= 64 * torch.finfo(dtype).eps * T:
        return dtype
    return torch.float32


def _check_range(name: str, value: object, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= count:
        raise SeqlabError(N_("{name} must be an integer in [1, {count}] (the model has {count} {name}s), received "
                             "{value!r}"), name=name, count=count, value=value, parameter=name)
    return value


def check_model_options(layer: int, head: int, max_tokens: int | None, mixing_tokens: int,
                        model: str | None = None) -> None:
    """Refuse out-of-range options from the model's config alone, before any weight is loaded.

    >>> check_model_options(1, 1, None, 1)
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: mixing_tokens must be an integer in [2, 64], received 1

    Args:
        model: a local checkpoint folder; None for the bundled model.

    Raises:
        SeqlabError: the first bad option, with ``parameter`` naming it; a bad model folder (parameter
            ``"model"``); a missing package.
    """
    config = model_config(model)
    _check_range("layer", layer, config.layers)
    _check_range("head", head, config.heads)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or not MIN_TOKENS <= max_tokens <= config.max_positions):
        raise SeqlabError(N_("max_tokens must be an integer in [{min_tokens}, {max_positions}] (the model reads at "
                             "most {max_positions} positions), received {max_tokens!r}"), min_tokens=MIN_TOKENS,
                          max_positions=config.max_positions, max_tokens=max_tokens, parameter="max_tokens")
    if (isinstance(mixing_tokens, bool) or not isinstance(mixing_tokens, int)
            or not MIN_MIXING_TOKENS <= mixing_tokens <= MAX_MIXING_TOKENS):
        raise SeqlabError(N_("mixing_tokens must be an integer in [{min_mixing_tokens}, {max_mixing_tokens}], "
                             "received {mixing_tokens!r}"), min_mixing_tokens=MIN_MIXING_TOKENS,
                          max_mixing_tokens=MAX_MIXING_TOKENS, mixing_tokens=mixing_tokens, parameter="mixing_tokens")


def _windows(encoder: Encoder, texts: Sequence[str], max_tokens: int | None) -> list[EncodedText]:
    if not texts or len(texts) > MAX_SEQUENCES:
        raise SeqlabError(N_("expected 1 to {max_sequences} texts, received {texts_count}"),
                          max_sequences=MAX_SEQUENCES, texts_count=len(texts), parameter="text")
    windows = [encode(encoder, text, max_tokens) for text in texts]
    short = [number for number, window in enumerate(windows, 1) if len(window) < 2]
    if short:
        raise SeqlabError(N_("text {short} gives {windows_count} position for {name}; expected at least 2 (two "
                             "words, say)"), short=short[0], windows_count=len(windows[short[0] - 1]),
                          name=encoder.config.name, parameter="text")
    return windows


def inspect_model(text: str | Sequence[str], *, source: str = "text", model: str | None = None, layer: int = 1,
                  head: int = 1, max_tokens: int | None = None, mixing_tokens: int = MIXING_TOKENS,
                  seed: int = 0, progress: Callable[[int, int, str], None] | None = None) -> ModelResult:
    """Put a trained model under the microscope on one window of each text: mixing, order and α (L4, L10, L11).

    >>> r = inspect_model("En un lugar de la Mancha", max_tokens=8, mixing_tokens=4)
    >>> r.T, r.kind, r.order_without_positions.overall.equivariant, r.order_with_positions.overall.equivariant
    (8, 'all-to-all', True, False)

    Args:
        text: one text, or up to 8 texts read as one right-padded batch; each is windowed to its first
            ``max_tokens`` positions (see :func:`~seqlab.layers.pretrained.encode`).
        source: where it came from, for the report.
        model: a local Hugging Face checkpoint folder (encoder or decoder); None: the bundled
            all-MiniLM-L6-v2.
        layer, head: the attention map to read, 1-based (layer 1 is nearest the embeddings).
        max_tokens: positions in each window, [3, the model's maximum]; None: up to 512.
        mixing_tokens: the first columns the mixing Jacobians are measured on, [2, 64].
        seed: seed of the permutation and of the Jacobian probes, an integer >= 0.
        progress: called as ``progress(done, 5, what)`` before each of 5 stages and at the end.

    Returns:
        A :class:`ModelResult`; every measurement in float64.

    Raises:
        SeqlabError: an option out of range (``parameter`` names it), a text without word pieces or with
            fewer than 2 positions, more than 8 texts, a folder that is not a model or whose positions cannot
            be switched off (``"model"``), or a missing package (the message gives the install command).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SeqlabError(N_("seed must be an integer >= 0, received {seed!r}"), seed=seed, parameter="seed")
    check_model_options(layer, head, max_tokens, mixing_tokens, model)
    import transformers

    step = progress or (lambda done, total, what: None)
    step(0, 5, "load")
    encoder = load_encoder(torch.float64, model)
    switch = find_position_switch(encoder.model)  # refuse a model without a switch before measuring
    windows = _windows(encoder, [text] if isinstance(text, str) else list(text), max_tokens)
    ids, mask = pad(windows, encoder.pad_id)  # (B, T_max) each
    T_m = min(mixing_tokens, ids.shape[1])
    probe = keyless_probe(encoder, ids, mask)  # one pass: does any query of the batch read no key? which?
    keyless = keyless_positions(encoder, ids, mask, probe=probe)  # (B,) tuples: queries with every key masked
    step(1, 5, "mixing")
    modules, unmeasured = measure_mixing(encoder, ids[:, :T_m], mask[:, :T_m], seed=seed)  # each row has >= 2
    step(2, 5, "attention")
    attention = measure_attention(encoder, ids, layer, head, mask=mask, seed=seed, probe=probe)
    working = working_precision(attention, torch.float64)
    config, first = encoder.config, windows[0]
    step(3, 5, "order")
    orders = [measure_model_order(encoder, ids, mask, positions=on, seed=seed, working=working, probe=probe)
              for on in (False, True)]
    step(5, 5, "done")
    return ModelResult(
        model=config.name, source=source, layers=config.layers, heads=config.heads, d_model=config.d_model,
        max_positions=config.max_positions, T=len(first), pieces=first.pieces, text_pieces=first.text_pieces,
        kept_pieces=first.kept_pieces, window_chars=first.window_chars, text_chars=first.text_chars,
        mixing_tokens=T_m, modules=modules,
        order_without_positions=orders[0], order_with_positions=orders[1],
        attention=attention, dtype=encoder.dtype, softmax_dtype=str(working).removeprefix("torch."),
        seed=seed, threads=torch.get_num_threads(), versions=(torch.__version__, transformers.__version__),
        windows=tuple(windows), padded_T=int(ids.shape[1]), unmeasured=unmeasured,
        architecture=config.architecture, model_type=config.model_type,
        position_switch=f"{switch.kind}: {', '.join(switch.modules)}", keyless=keyless)
