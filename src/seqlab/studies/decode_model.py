"""``seqlab decode --model DIR``: what one more token costs a local Hugging Face causal LM, read from its own cache
(issue 24; L1, L2, L5, L6, L8).

For each position t the model reads t − 1 random token ids in one forward pass (the prefill), then writes token
t through the cache object that pass returned (``cache=`` for transformers' ``Cache`` objects, ``state=`` for
RWKV). Per new token (:class:`ModelStep`):

* multiplications of the decode step, counted while the model's own code runs
  (:func:`seqlab.measure.work.count_multiplications`, one per multiply-add), beside the closed form from the
  config (:func:`closed_step_multiplications`, from :mod:`seqlab.cost`) and Kaplan et al.'s 2N + 2·L·t·d
  estimate halved (:func:`seqlab.cost.kaplan_step_multiplications`);
* the cache's bytes after the step, read from the cache object (:func:`seqlab.measure.cache_state.read_cache_state`:
  every reachable tensor, each storage once), split by kind, beside the closed form
  (:func:`closed_state_bytes`);
* time per token: every position's step timed in interleaved rounds (:func:`seqlab.measure.rounds.measure_rounds`),
  median ± IQR, threads stated (1 by default). A timed call is the step and the restoring of the cache to its
  t − 1 positions (a few attribute assignments), so every call writes the same token t.

Then, at two lengths T, the span of the prefill against that of generation
(:mod:`seqlab.studies.decode_model_span`, :class:`~seqlab.studies.decode_model_span.ModelSpan`).

The growth of each figure with t is then measured and named by the one growth rule (:func:`seqlab.fit.growth_kind`,
:func:`seqlab.fit.classify_growth`): constant, linear, constant + linear (a fixed part plus a growing one: a
hybrid's state, an attention step's work), capped (grows, then stops: a sliding window), or other; the same rule
applied to the closed forms names the growth expected.

The checkpoint is read by :func:`seqlab.layers.pretrained.load_decoder` (its config through the same reading as an
encoder's); :class:`ModelFacts` is what this study reads from the loaded model.

Eager attention, ``eval()``, the checkpoint's own dtype (or ``--dtype``), batch 1, ids drawn from a seeded
generator. Everything that can be refused is refused before the prefill (:func:`check_model_decode`): a folder
that is not a causal LM, positions beyond the model's maximum, or caches that would not fit in memory. A family
whose own code does not run with a static cache (Falcon's ALiBi) is measured with its dynamic cache only, and the
reason is kept (:attr:`ModelDecodeResult.static_refused`).

Shape letters: L layers, H heads, H_kv key/value heads, d_h head width, d = d_model, V vocabulary, t position.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import torch

from seqlab import cost
from seqlab.errors import SeqlabError, require_positive_int
from seqlab.fit import GROWTHS, MIN_POSITIONS, classify_growth, sum_of_growths  # noqa: F401  (GROWTHS re-exported)
from seqlab.layers.pretrained import DTYPES, first_line, load_decoder, offline_and_quiet  # noqa: F401  (DTYPES)
from seqlab.i18n import N_
from seqlab.fit import choose_form, fit_forms
from seqlab.measure.cache_state import RWKV_STATE_KINDS, CacheState, read_cache_state
from seqlab.measure.timing import MachineLoad, Timing, machine_load
from seqlab.memory import MemoryEstimate, require_fits
from seqlab.studies.decode_model_forms import (EMPTY_KINDS, KV_KINDS, attention_width, cache_layer_kinds,
                                               closed_state_bytes, closed_step_by_kind, closed_step_multiplications,
                                               config_integer, config_value, decoder_config, head_counts, layer_configs,
                                               layer_kinds, max_positions, work_by_kind)
from seqlab.studies.decode_model_span import ModelSpan, measure_model_span
from seqlab.studies.notebook_view import NotebookView

DEFAULT_POSITIONS = (16, 64, 256)
QUICK_POSITIONS = (8, 16, 32)


@dataclass(frozen=True)
class ModelDecodeConfig:
    """What to measure.

    Attributes:
        model: the checkpoint folder.
        positions: positions t of the new token (each >= 2: the prefill reads t − 1 >= 1 tokens), increasing;
            None for :data:`DEFAULT_POSITIONS` (those within the model's maximum).
        time: time the steps (interleaved rounds) or count only.
        rounds: timing rounds.
        block_seconds: the aimed length of one timed block (seconds).
        threads: CPU threads while timing (default 1).
        seed: the token ids.
        span_lengths: the two T at which the prefill and generation spans are traced (:class:`ModelSpan`), or
            None to trace none.
        dtype: one of :data:`DTYPES`, the dtype the weights are loaded in and the cache is written in; None for the
            checkpoint's own (its config's ``dtype``, float32 when it names none). A model passed in memory
            (``run_model_decode(loaded=...)``) is measured in its own dtype.
    """

    model: str
    positions: tuple[int, ...] | None = None
    time: bool = True
    rounds: int = 7
    block_seconds: float = 0.02
    threads: int = 1
    seed: int = 0
    span_lengths: tuple[int, int] | None = (16, 32)
    dtype: str | None = None

    @classmethod
    def quick(cls, model: str, **changes: Any) -> ModelDecodeConfig:
        """t = 8, 16, 32, three short rounds, spans at T = 8, 16: seconds for a small model."""
        values: dict[str, Any] = {"positions": QUICK_POSITIONS, "rounds": 3, "block_seconds": 0.005,
                                  "span_lengths": (8, 16)}
        return cls(model=model, **{**values, **changes})


@dataclass(frozen=True)
class ModelFacts:
    """The checkpoint, as its config and its loaded weights describe it.

    Attributes:
        name: the folder's name. architecture: the saved class. model_type: the config's model type.
        parameters: every weight element. non_embedding_parameters: less the token and position embeddings.
        layers: the config's layer count. d_model: its width. vocabulary: its vocabulary size.
        max_positions: the largest position it accepts, or None (a recurrence: no limit).
        dtype: the weights' dtype (the cache's, and its bytes per element).
        cache_argument: ``"cache"`` or ``"state"``, how the step gets the past.
        sliding_window: the window w of sliding-window layers, or None.
        vector_parameters: weight elements in 1-D tensors (biases, norm scales): in N, but multiplying nothing
            in a matrix product.
        output_outside_parameters: elements of the output layer's weight when it is the token embedding's (tied),
            so not in N; 0 when the output layer has weights of its own.
        heads, kv_heads: H and H_kv of the (first) attention layer, from the config whatever the family names them
            (:func:`~seqlab.studies.decode_model_forms.head_counts`); 0 for a family with no attention layer.
        shared_kv_layers: layers that read the keys and values another layer stored, holding none of their own
            (the config's ``kv_sharing_modes``).
        latent_kv_layers: layers of multi-head latent attention (their config's ``kv_lora_rank``): their cache holds
            the compressed latent and the rotary key per position.
        offers_static: every layer is full attention, so transformers' ``StaticCache`` (keys and values
            preallocated for a fixed number of positions) is measured beside the dynamic one.
    """

    name: str
    architecture: str
    model_type: str
    parameters: int
    non_embedding_parameters: int
    layers: int
    d_model: int
    vocabulary: int
    max_positions: int | None
    dtype: str
    cache_argument: str
    sliding_window: int | None = None
    offers_static: bool = False
    vector_parameters: int = 0
    output_outside_parameters: int = 0
    heads: int = 0
    kv_heads: int = 0
    shared_kv_layers: int = 0
    latent_kv_layers: int = 0


@dataclass(frozen=True)
class ModelStep:
    """One new token at position t.

    Attributes:
        t: the position (the cache holds t − 1 positions before the step, t after it, less what a window drops).
        multiplications: counted on the decode step.
        closed_form: :func:`closed_step_multiplications`, or None when the family has none here.
        kaplan: Kaplan et al.'s N + L·t·d_attn (multiplications), or None without attention width.
        unaccounted: ops that ran with no formula (their multiplications are missing from the count).
        state: the cache after the step (:class:`~seqlab.measure.cache_state.CacheState`).
        closed_bytes: bytes per kind by :func:`closed_state_bytes`, or None when the family has none here.
        timing: the step's time (median and IQR over rounds), or None when not timed.
        cache: ``"dynamic"`` (the cache the model returns, grown by concatenation) or ``"static"`` (a
            ``StaticCache`` preallocated for the largest position: every step attends over all its rows, the
            unwritten ones masked).
        work_by_kind: ``multiplications`` split by kind of layer (:func:`work_by_kind`), or None.
        closed_work_by_kind: the same from the config (:func:`closed_step_by_kind`), or None.
        kaplan_terms: why the count and Kaplan's estimate differ (:func:`kaplan_gap_terms`), or None when these
            terms do not add up to the difference exactly.
    """

    t: int
    multiplications: int
    closed_form: int | None
    kaplan: int | None
    unaccounted: Mapping[str, int]
    state: CacheState
    closed_bytes: Mapping[str, int] | None
    timing: Timing | None = None
    cache: str = "dynamic"
    work_by_kind: Mapping[str, int] | None = None
    closed_work_by_kind: Mapping[str, int] | None = None
    kaplan_terms: Mapping[str, int] | None = None


@dataclass(frozen=True)
class Growth:
    """How one figure grows with t, measured and expected.

    Attributes:
        figure: ``"multiplications"``, ``"bytes"`` (the whole state) or ``"bytes:<kind>"``; prefixed
            ``"static "`` for the static cache's steps.
        values: the measured figure at each position.
        kind: one of :data:`GROWTHS` (:func:`classify_growth`); for the whole state of several kinds, the sum of
            their growths (``linear + capped``).
        form: the growth form fit.py chooses for the series (``"1"``, ``"T"``...; None for a capped series).
        slope, intercept: of the exact line through every point (None when there is none).
        cap: the value a capped series stops at (None otherwise).
        expected: the kind the closed forms give at the same positions, or None without a closed form.
    """

    figure: str
    values: tuple[int, ...]
    kind: str
    form: str | None
    slope: Fraction | None
    intercept: Fraction | None
    cap: int | None
    expected: str | None

    @property
    def as_expected(self) -> bool | None:
        """The measured growth is the one the closed forms give (None without a closed form)."""
        return None if self.expected is None else self.kind == self.expected


@dataclass(frozen=True)
class ModelDecodeResult(NotebookView):
    """Every step measured, and the growth of each figure (in a notebook: an HTML table and a figure).

    ``bytes_kinds_from_cache``: the config does not say which layers are full or sliding-window attention, so the
    bytes' closed form took each layer's kind from the class of the cache's layer and every size from the config
    (:func:`~seqlab.studies.decode_model_forms.kinds_from_cache_layers`).

    ``static_refused``: the model's own code did not run with transformers' ``StaticCache`` (Falcon's ALiBi adds its
    bias to a mask of the positions written so far, not to the static cache's rows): the first line of what it
    raised; only the dynamic cache is measured. None when the static cache ran or was not offered.
    """

    config: ModelDecodeConfig
    model: ModelFacts
    positions: tuple[int, ...]
    steps: tuple[ModelStep, ...]
    growth: tuple[Growth, ...]
    threads: int
    torch_version: str
    transformers_version: str
    elapsed_s: float
    load: MachineLoad | None = None
    kinds: tuple[str, ...] = field(default_factory=tuple)
    span: ModelSpan | None = None
    bytes_kinds_from_cache: bool = False
    static_refused: str | None = None

    @property
    def counts_match(self) -> bool | None:
        """Every step's count equals its closed form (None when none has one)."""
        pairs = [(s.multiplications, s.closed_form) for s in self.steps if s.closed_form is not None]
        return None if not pairs else all(a == b for a, b in pairs)

    @property
    def bytes_match(self) -> bool | None:
        """Every step's bytes per kind equal the closed form (None when none has one)."""
        pairs = [(dict(s.state.by_kind), dict(s.closed_bytes)) for s in self.steps if s.closed_bytes is not None]
        return None if not pairs else all(a == b for a, b in pairs)


# --- Kaplan's estimate against the count ---------------------------------------------------------------------

def kaplan_gap_terms(config: Any, facts: ModelFacts, t: int, keys: int, counted: int,
                     kaplan: int) -> dict[str, int] | None:
    """The terms by which a decoder's counted step differs from Kaplan et al.'s N + L·t·d_attn, when they account
    for the whole difference.

    The count is every matrix weight once, plus q·Kᵀ and α·V over each layer's keys (t, or min(t, w) in a
    window): 2·d_attn·Σ keys; Kaplan's N holds the matrix weights and also the 1-D ones (biases, norm scales)
    and, for the attention, L·t·d_attn. When the output layer is the token embedding (tied), its d·V
    multiplications are counted but outside N. A family that builds ALiBi's bias each step (the config's ``alibi``)
    adds H·t multiplications N does not hold (:func:`seqlab.cost.alibi_bias_multiplications`). So count − Kaplan =
    products − Kaplan's attention + tied output + position bias − 1-D weights.

    Args:
        config: the model's config. facts: :func:`model_facts`. t: the position Kaplan's formula is given.
        keys: the keys a full-attention layer attends over in the step (t with a dynamic cache, the static cache's
            rows with a static one). counted, kaplan: the two figures.

    Returns:
        ``{"keys": Σ keys, "attention_products": 2·d_attn·Σ keys, "kaplan_attention": L·t·d_attn,
        "output_outside_parameters": …, "vector_parameters": …}`` and, for ALiBi, ``"position_bias": H·keys``; or
        None for a family that is not a decoder of attention layers only, or when the terms do not add up to
        ``counted − kaplan`` exactly.
    """
    kinds = layer_kinds(config)
    width = attention_width(config)
    if kinds is None or width is None or not set(kinds) <= {"attention", "sliding"}:
        return None
    total_keys = sum(keys if kind == "attention" else min(keys, config.sliding_window) for kind in kinds)
    terms = {"keys": total_keys, "attention_products": 2 * width * total_keys,
             "kaplan_attention": facts.layers * t * width,
             "output_outside_parameters": facts.output_outside_parameters,
             "vector_parameters": facts.vector_parameters}
    if config_value(config, "alibi", False) is True:
        terms["position_bias"] = cost.alibi_bias_multiplications(facts.heads, keys)
    gap = (terms["attention_products"] - terms["kaplan_attention"] + terms["output_outside_parameters"]
           + terms.get("position_bias", 0) - terms["vector_parameters"])
    return terms if counted - kaplan == gap else None


def _growth(figure: str, ts: tuple[int, ...], values: tuple[int, ...], expected: tuple[int, ...] | None) -> Growth:
    kind, form, slope, intercept, cap = classify_growth(ts, values)
    return Growth(figure, values, kind, form, slope, intercept, cap,
                  None if expected is None else classify_growth(ts, expected)[0])


# --- Loading and checking ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=2)
def load_causal_lm(folder: str, dtype: str | None = None) -> tuple[Any, ModelFacts]:
    """A local checkpoint as a causal LM (:func:`seqlab.layers.pretrained.load_decoder`: offline, eval mode, eager
    attention, in ``dtype`` or the checkpoint's own) and its :class:`ModelFacts`, cached per folder and dtype.

    Raises:
        SeqlabError: see :func:`seqlab.layers.pretrained.load_decoder`.
    """
    from pathlib import Path

    model, architecture = load_decoder(folder, dtype)
    return model, model_facts(model, Path(folder).name, architecture)


def _tied_output(model: Any, embeddings: set[int]) -> int:
    """Elements of the output layer's weight when it is an embedding's (tied), else 0."""
    output = model.get_output_embeddings()
    weight = getattr(output, "weight", None)
    return weight.numel() if isinstance(weight, torch.Tensor) and id(weight) in embeddings else 0


def model_facts(model: Any, name: str, architecture: str | None = None) -> ModelFacts:
    """What :class:`ModelFacts` says of a causal LM already in memory (loaded from a folder, or built from a
    config: :func:`seqlab.layers.tiny_lms.build_tiny_lm`), read from its config and its weights.

    Args:
        model: a transformers causal LM in eval mode. name: what reports call it. architecture: the saved class
            (default: the model's own class name).

    Returns:
        A :class:`ModelFacts`; its dtype is the floating-point weights' (the first such parameter's).
    """
    config = decoder_config(model.config)  # a multimodal wrapper's text decoder
    architecture = architecture or type(model).__name__
    embeddings = {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()}
    parameters = {id(p): p.numel() for p in model.parameters()}  # tied weights once
    vectors = sum(p.numel() for p in model.parameters() if p.dim() == 1 and id(p) not in embeddings)
    argument = "state" if "state" in inspect.signature(model.forward).parameters else "cache"
    kinds = cache_layer_kinds(config)
    # a family the forms know to have no attention layer (Mamba's ``num_heads`` are the SSM's) has no heads
    attends = kinds is None or bool(set(KV_KINDS + EMPTY_KINDS) & set(kinds))
    heads, kv_heads = head_counts(config) if attends else (0, 0)
    window = config_value(config, "sliding_window") if "sliding" in (kinds or []) else None
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    layers = layer_configs(config)
    latent = sum(1 for layer, kind in zip(layers, kinds or [None] * len(layers))
                 if kind not in EMPTY_KINDS and config_integer(layer, "kv_lora_rank"))
    return ModelFacts(name=name, architecture=architecture, model_type=str(model.config.model_type),
                      parameters=sum(parameters.values()),
                      non_embedding_parameters=sum(n for i, n in parameters.items() if i not in embeddings),
                      layers=config.num_hidden_layers, d_model=config.hidden_size, vocabulary=config.vocab_size,
                      max_positions=max_positions(config), dtype=str(dtype).removeprefix("torch."),
                      cache_argument=argument,
                      sliding_window=window if isinstance(window, int) else None,
                      vector_parameters=vectors, output_outside_parameters=_tied_output(model, embeddings),
                      heads=heads, kv_heads=kv_heads, shared_kv_layers=(kinds or []).count("shared"),
                      latent_kv_layers=latent if attends else 0,
                      offers_static=argument == "cache" and set(layer_kinds(config) or ["?"]) == {"attention"})


def element_bytes(facts: ModelFacts) -> int:
    """Bytes per element of the model's dtype (its cache's): 4 for float32, 2 for bfloat16."""
    return getattr(torch, facts.dtype).itemsize


def estimate_model_decode_bytes(model: Any, facts: ModelFacts, positions: tuple[int, ...]) -> MemoryEstimate:
    """Memory the measurement needs beyond the weights: every position's cache held at once (an upper bound: a
    full key/value cache of every layer, 2·L·d·t·4 bytes, or the closed form where one exists; a static cache of
    the largest t per position when one is measured) and the largest
    prefill's eager attention scores, H·t²·4 bytes for one layer at a time, plus its activations."""
    config = decoder_config(model.config)  # a multimodal wrapper's text decoder
    caches = 0
    T = max(positions)
    b = element_bytes(facts)
    for t in positions + ((T,) * len(positions) if facts.offers_static else ()):  # a static cache holds T rows
        closed = closed_state_bytes(config, t, b)
        caches += sum(closed.values()) if closed else 2 * facts.layers * facts.d_model * t * b
    heads = facts.heads or 1
    scores = 2 * heads * T * T * b
    width = max(facts.d_model, config_integer(config, "intermediate_size", "n_inner", default=4 * facts.d_model) or 0)
    activations = 8 * T * width * b
    largest = "cache of every position" if caches >= scores else f"attention scores of the prefill at t = {T}"
    return MemoryEstimate(caches + scores + activations, largest)


def check_model_decode(config: ModelDecodeConfig,
                       loaded: tuple[Any, ModelFacts] | None = None) -> tuple[ModelDecodeConfig, Any, ModelFacts]:
    """Load the model (or take ``loaded``, a model already in memory and its facts) and refuse bad positions and
    work that would not fit, before any prefill.

    Raises:
        SeqlabError: see :func:`load_causal_lm`; a position < 2, beyond the model's maximum positions, fewer than
            :data:`MIN_POSITIONS` distinct positions (parameter ``"positions"``); bad timing sizes; an estimate
            beyond the memory available.
    """
    model, facts = load_causal_lm(config.model, config.dtype) if loaded is None else loaded
    limit = facts.max_positions
    positions = config.positions
    if positions is None:
        positions = tuple(t for t in DEFAULT_POSITIONS if limit is None or t <= limit)
        if len(positions) < MIN_POSITIONS:
            positions = tuple(sorted({max(2, limit // 4), max(3, limit // 2), limit}))
    for t in positions:
        if isinstance(t, bool) or not isinstance(t, int) or t < 2:
            raise SeqlabError(N_("positions must be integers >= 2 (the prefill reads t - 1 >= 1 tokens), received "
                                 "{t!r}"), t=t, parameter="positions")
        if limit is not None and t > limit:
            raise SeqlabError(N_("position {t} is beyond what {name} reads: at most {limit} positions "
                                 "(max_position_embeddings)"), t=t, name=facts.name, limit=limit, parameter="positions")
    positions = tuple(sorted(set(positions)))
    if len(positions) < MIN_POSITIONS:
        raise SeqlabError(N_("positions must name at least {min_positions} distinct positions to name a growth, "
                             "received {positions}"), min_positions=MIN_POSITIONS, positions=list(positions),
                          parameter="positions")
    require_positive_int("rounds", config.rounds)
    require_positive_int("threads", config.threads)
    if config.span_lengths is not None:
        if len(config.span_lengths) != 2 or len(set(config.span_lengths)) != 2:
            raise SeqlabError(N_("span_lengths must be two different lengths, received {span_lengths!r}"),
                              span_lengths=config.span_lengths, parameter="span_lengths")
        for T in config.span_lengths:
            require_positive_int("span_lengths", T, limit)
    require_fits(estimate_model_decode_bytes(model, facts, positions),
                 f"decoding {facts.name} at t = {', '.join(map(str, positions))}")
    return replace(config, positions=positions), model, facts


# --- Measuring ----------------------------------------------------------------------------------------------------

def _snapshot(cache: object) -> list[tuple[object, dict, dict]]:
    """Shallow copies of the cache's and its layers' attributes, and the values of their integer tensors:
    restoring them undoes a step. ``torch.cat`` makes new key/value tensors, the old ones stay intact; a
    position counter kept as an integer tensor is advanced in place (``StaticLayer.cumulative_length``), so its
    value is copied back. A state updated in place (Mamba's, RWKV's) keeps its shape, so a repeated step costs the
    same."""
    if isinstance(cache, (list, tuple)) or not hasattr(cache, "__dict__"):
        return []
    owners = [cache, *getattr(cache, "layers", [])]
    return [(owner, {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
                     for k, v in vars(owner).items()},
             {k: v.clone() for k, v in vars(owner).items()
              if isinstance(v, torch.Tensor) and not (v.is_floating_point() or v.is_complex())})
            for owner in owners]


def _restore(saved: list[tuple[object, dict, dict]]) -> None:
    for owner, attributes, counters in saved:
        owner.__dict__.update({k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
                               for k, v in attributes.items()})
        for name, value in counters.items():
            getattr(owner, name).copy_(value)


def _prefill(model: Any, facts: ModelFacts, t: int, seed: int,
             static_length: int | None = None) -> tuple[dict[str, Any], torch.Tensor]:
    """Read t − 1 ids (into a ``StaticCache`` of ``static_length`` rows when given); return the step's keyword
    arguments (the cache) and the id of token t."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, facts.vocabulary, (1, t), generator=generator)  # (1, t)
    given: dict[str, Any] = {}
    if static_length is not None:
        from transformers import StaticCache

        given["cache"] = StaticCache(config=model.config, max_cache_len=static_length)
    with torch.no_grad():
        out = model(ids[:, :-1], use_cache=True, logits_to_keep=1, **given)
    past = out.get(facts.cache_argument)
    if past is None:
        found = ", ".join(k for k in out.keys() if k != "logits") or "nothing but logits"
        raise SeqlabError(N_("seqlab cannot read this model's cache: {architecture}'s forward pass returned "
                             "{out_class} with {found}; expected a {cache_argument!r} object"),
                          architecture=facts.architecture, out_class=type(out).__name__, found=found,
                          cache_argument=facts.cache_argument, parameter="model")
    return {facts.cache_argument: past}, ids[:, -1:]


def _parts(figure: str, positions: tuple[int, ...], steps: list[ModelStep], measured: Callable,
           closed: Callable) -> list[Growth]:
    """One growth per part (kind of state, or of layer): ``figure:<part>``."""
    growth = []
    for part in dict.fromkeys(k for s in steps for k in (measured(s) or {})):
        expected = (None if any(closed(s) is None or part not in closed(s) for s in steps)
                    else tuple(closed(s)[part] for s in steps))
        values = tuple((measured(s) or {}).get(part, 0) for s in steps)
        if min(values) > 0:
            growth.append(_growth(f"{figure}:{part}", positions, values, expected))
    return growth


def _named_by_parts(whole: Growth, parts: list[Growth]) -> Growth:
    """A whole the rule can only call ``other`` named by the sum of its parts' growths
    (:func:`seqlab.fit.sum_of_growths`)."""
    if len(parts) < 2:
        return whole
    kind = sum_of_growths([g.kind for g in parts]) if whole.kind == "other" else whole.kind
    expected = whole.expected
    if expected == "other":
        expected = sum_of_growths([g.expected for g in parts]) or expected
    return replace(whole, kind=kind or whole.kind, expected=expected)


def _growths(positions: tuple[int, ...], steps: list[ModelStep], prefix: str) -> list[Growth]:
    """The growth of the multiplications, the whole state, each kind of state and each kind of layer's work,
    measured and from the closed forms; a whole that only a sum can name is named by its parts'
    (:func:`seqlab.fit.sum_of_growths`)."""
    states = _parts(f"{prefix}bytes", positions, steps, lambda s: s.state.by_kind, lambda s: s.closed_bytes)
    works = _parts(f"{prefix}multiplications", positions, steps, lambda s: s.work_by_kind,
                   lambda s: s.closed_work_by_kind)
    whole = _growth(prefix + "bytes", positions, tuple(s.state.total_bytes for s in steps),
                    None if steps[0].closed_bytes is None else tuple(sum(s.closed_bytes.values()) for s in steps))
    work = _growth(prefix + "multiplications", positions, tuple(s.multiplications for s in steps),
                   None if steps[0].closed_form is None else tuple(s.closed_form for s in steps))
    return [_named_by_parts(work, works), _named_by_parts(whole, states), *states, *works]


def _read(facts: ModelFacts, past: object) -> CacheState:
    return read_cache_state(past, RWKV_STATE_KINDS if facts.model_type == "rwkv" else None)


def run_model_decode(config: ModelDecodeConfig, progress: Callable[[int, int, str], None] | None = None,
                     loaded: tuple[Any, ModelFacts] | None = None) -> ModelDecodeResult:
    """Measure the decode step at every position, then name the growth of each figure.

    Args:
        config: what to measure (checked first by :func:`check_model_decode`).
        progress: called as ``progress(done, total, what)``.
        loaded: a model already in memory and its :func:`model_facts` (a tiny model built from a config), measured
            instead of ``config.model``'s folder (which then only names it).

    Returns:
        A :class:`ModelDecodeResult`.

    Raises:
        SeqlabError: see :func:`check_model_decode`; a cache seqlab cannot read (one line naming what was found).
    """
    import transformers

    from seqlab.measure.rounds import measure_rounds
    from seqlab.measure.work import count_multiplications

    with offline_and_quiet():  # transformers' notes on fallback kernels go unprinted: the library never prints
        return _run(config, progress, count_multiplications, measure_rounds, transformers.__version__, loaded)


def _run(config: ModelDecodeConfig, progress: Callable[[int, int, str], None] | None,
         count_multiplications: Callable, measure_rounds: Callable, transformers_version: str,
         loaded: tuple[Any, ModelFacts] | None = None) -> ModelDecodeResult:
    config, model, facts = check_model_decode(config, loaded)
    positions = config.positions
    clock = time.perf_counter()
    load = machine_load() if config.time else None
    steps, steppers = [], {}
    static_refused = None
    b = element_bytes(facts)
    decoder = decoder_config(model.config)
    runs = [("dynamic", t) for t in positions] + ([("static", t) for t in positions] if facts.offers_static else [])
    for done, (kind, t) in enumerate(runs):
        if progress is not None:
            progress(done, len(runs), f"{kind} t = {t}")
        if kind == "static" and static_refused is not None:
            continue
        try:
            kwargs, token = _prefill(model, facts, t, config.seed, max(positions) if kind == "static" else None)
            saved = _snapshot(kwargs[facts.cache_argument])
            with torch.no_grad():
                work = count_multiplications(lambda: model(token, use_cache=True, **kwargs))
        except Exception as error:  # the family's own code refuses a static cache: named, not measured
            if kind != "static" or isinstance(error, SeqlabError):
                raise
            static_refused = f"{type(error).__name__}: {first_line(error)}"
            continue
        state = _read(facts, kwargs[facts.cache_argument])
        _restore(saved)

        def step(kwargs=kwargs, token=token, saved=saved) -> None:
            model(token, use_cache=True, **kwargs)
            _restore(saved)

        steppers[f"{kind} t = {t}"] = step
        keys = t if kind == "dynamic" else max(positions)  # a static cache's step attends over every row
        d_attn = attention_width(decoder)
        kaplan = (None if d_attn is None else
                  cost.kaplan_step_multiplications(facts.non_embedding_parameters, facts.layers, t, d_attn))
        steps.append(ModelStep(t=t, multiplications=work.multiplications,
                               closed_form=closed_step_multiplications(decoder, keys), kaplan=kaplan,
                               unaccounted=dict(work.unaccounted), state=state,
                               closed_bytes=closed_state_bytes(decoder, keys, b, state.layer_types), cache=kind,
                               work_by_kind=work_by_kind(work.by_module, decoder, work.multiplications),
                               closed_work_by_kind=closed_step_by_kind(decoder, keys),
                               kaplan_terms=None if kaplan is None else
                               kaplan_gap_terms(decoder, facts, t, keys, work.multiplications, kaplan)))
    threads = config.threads
    if config.time:
        with torch.no_grad():
            rounds = measure_rounds(steppers, rounds=config.rounds, block_seconds=config.block_seconds,
                                    threads=config.threads, load=load)
        threads = rounds.threads
        steps = [replace(s, timing=rounds.timing(f"{s.cache} t = {s.t}")) for s in steps]
    growth: list[Growth] = []
    for kind in ("dynamic", "static"):
        own = [s for s in steps if s.cache == kind]
        if own:
            growth.extend(_growths(positions, own, "" if kind == "dynamic" else "static "))
    kinds = tuple(dict.fromkeys(k for s in steps for k in s.state.by_kind))
    span = None if config.span_lengths is None else measure_model_span(model, facts, config.span_lengths,
                                                                         config.seed)
    return ModelDecodeResult(config=config, model=facts, positions=positions, steps=tuple(steps),
                             growth=tuple(growth), threads=threads, torch_version=torch.__version__,
                             transformers_version=transformers_version, elapsed_s=time.perf_counter() - clock,
                             load=load, kinds=kinds, span=span,
                             bytes_kinds_from_cache=cache_layer_kinds(decoder) is None
                             and any(s.closed_bytes is not None for s in steps), static_refused=static_refused)


def run_tiny_decode(family: str, positions: tuple[int, ...], seed: int = 0) -> ModelDecodeResult:
    """:func:`run_model_decode` of a tiny random-weight model built in memory from a transformers config
    (:func:`seqlab.layers.tiny_lms.build_tiny_lm`: nothing downloaded, no file read), untimed, no spans.

    Random weights change neither the cache's bytes nor the step's multiplications, so every figure is the
    family's at these sizes; ``seed`` draws the token ids.

    Args:
        family: a key of :data:`seqlab.layers.tiny_lms.TINY_FAMILIES`. positions: the positions t (at least
            :data:`MIN_POSITIONS`, each 2 to :data:`seqlab.layers.tiny_lms.MAX_POSITIONS`). seed: the token ids.

    Returns:
        A :class:`ModelDecodeResult` whose model is named by ``family``.

    Raises:
        SeqlabError: an unknown family, transformers missing (see :func:`seqlab.layers.tiny_lms.tiny_config`), or
            positions refused by :func:`check_model_decode`.
    """
    from seqlab.layers.tiny_lms import build_tiny_lm

    model = build_tiny_lm(family)
    config = ModelDecodeConfig(family, positions=positions, time=False, span_lengths=None, seed=seed)
    return run_model_decode(config, loaded=(model, model_facts(model, family)))
