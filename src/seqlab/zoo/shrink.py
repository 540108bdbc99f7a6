"""Tiny random-weight models of any ``transformers`` model type, shrunk from its config class by one generic rule.

Issue 35 (the sweep over the transformers-config models) and issue 40 (``seqlab zoo``): for a model type of the
installed ``transformers`` (offline, nothing downloaded), :func:`tiny_config` takes the config class's defaults (a
real released size), and shrinks every size it names by the table :data:`SIZES` — width, layers, heads and key-value
heads, head widths, intermediate widths, experts and experts per token, windows, chunks, convolution kernels, state
sizes, low ranks, vocabulary and positions — keyed by the attribute's own name (the config's ``attribute_map``
read both ways). Per-layer lists (``layer_types``, ``mlp_layer_types``, a per-layer window...) keep one layer of each
distinct kind, so a hybrid stays a hybrid. Where the generic rule fails for a family, :data:`ADJUSTMENTS` holds the
one fix, each entry saying why.

:func:`build` then makes the base model (``MODEL_MAPPING``; the encoder of an encoder-decoder; the text model of a
composite config), eval mode, float64, ``attn_implementation="eager"`` and ``experts_implementation="eager"`` where
the model takes them. :func:`last_hidden` reads x (1, T, d) -> the last hidden state (1, T_out, d_out) from
``inputs_embeds`` (d: the input embedding's width, which may differ from the hidden width).

:func:`shrink_config` does the same to any config object (a user's ``config.json`` read by transformers), and
:func:`build_config` builds any config, on the meta device too (nothing allocated: a real size read from shapes
alone, its experts run as one batched product so that no routing value is needed).

A family that cannot be built is refused with the stage and the reason (:class:`Refused`, a
:class:`~seqlab.errors.SeqlabError`), never skipped silently.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from torch.utils._pytree import tree_leaves

from seqlab.measure.modes import EngineMode
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Width, heads and head width of every tiny model (d = heads · head width).
WIDTH, HEADS, HEAD_DIM = 16, 2, 8

#: Positions every tiny model is built for (absolute position tables, rotary caches).
MAX_POSITIONS = 64

#: attribute name -> its tiny value: a number, or a function (old value, config dict) -> new value. The names are
#: those transformers' configs use (and their attribute_map aliases); a value that is None (feature off) stays None.
SIZES: dict[str, Any] = {
    # width
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "dim", "embed_dim", "model_dim", "embedding_dim",
                     "emb_dim", "true_hidden_size", "input_embedding_size", "output_embedding_size",
                     "embedding_size", "word_embed_proj_dim", "d_latents", "attention_hidden_size", "lru_width",
                     "intra_bottleneck_size", "pooler_hidden_size"), WIDTH),
    # depth
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers",
                     "num_encoder_layers", "num_decoder_layers", "num_blocks"), 2),
    # heads
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads",
                     "decoder_attention_heads", "num_encoder_attention_heads", "num_decoder_attention_heads",
                     "attention_heads", "num_self_attention_heads", "num_cross_attention_heads",
                     "swa_num_attention_heads"), HEADS),
    **dict.fromkeys(("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num", "num_query_groups",
                     "swa_num_key_value_heads", "kv_n_heads"),
                    lambda old, c: 1 if old == 1 else (HEADS if old == _first(c, _HEAD_NAMES) else 1)),
    **dict.fromkeys(("head_dim", "attention_head_dim", "kv_channels", "d_head", "dim_head", "attention_head_size",
                     "swa_head_dim", "qk_head_dim", "linear_head_dim", "d_kv"), HEAD_DIM),
    "v_head_dim": HEAD_DIM, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4, "rotary_dim": 4,
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank", "o_lora_rank", "embedding_rank", "laurel_rank", "adapter_rank",
                     "loop_gate_rank", "gated_norm_rank", "hc_lowrank"), 8),
    # feed-forward widths
    **dict.fromkeys(("intermediate_size", "ffn_dim", "n_inner", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim",
                     "ffn_hidden_size", "dim_feedforward", "d_inner", "dim_ff", "dff", "feed_forward_size",
                     "intermediate_size_mlp", "first_dense_intermediate_size", "dense_intermediate_size",
                     "mlp_only_intermediate_size", "hidden_dim", "expert_ffn_hidden_size", "prompt_mid_dim"), 32),
    **dict.fromkeys(("moe_intermediate_size", "expert_intermediate_size"), 8),
    **dict.fromkeys(("shared_expert_intermediate_size", "shared_intermediate_size",
                     "shared_experts_intermediate_size", "moe_shared_expert_intermediate_size"), 16),
    # mixtures of experts
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_experts_total"),
                    4),
    **dict.fromkeys(("num_experts_per_tok", "num_experts_per_token", "top_k", "moe_topk", "moe_top_k", "moe_k",
                     "num_selected_experts"), 2),
    **dict.fromkeys(("n_shared_experts", "num_shared_experts"), 1),
    "n_group": 2, "num_expert_group": 2, "topk_group": 1,
    "first_k_dense_replace": lambda old, c: min(old, 1),
    # windows, chunks, blocks
    **dict.fromkeys(("sliding_window", "window_size", "attention_window_size", "sliding_window_size",
                     "local_attention_window_len", "local_attention", "keep_window_size"), 3),
    **dict.fromkeys(("chunk_size", "mamba_chunk_size", "attention_chunk_size", "local_attn_chunk_length",
                     "lsh_attn_chunk_length"), 4),
    # convolutions, state sizes, state-space heads
    **dict.fromkeys(("conv_kernel", "mamba_d_conv", "d_conv", "linear_conv_kernel_dim", "conv1d_width",
                     "conv_kernel_size", "short_conv_kernel_size", "ple_conv_kernel_size"), 4),
    "conv_L_cache": 3,
    **dict.fromkeys(("state_size", "mamba_d_state", "d_state", "ssm_state_size"), 4),
    **dict.fromkeys(("mamba_n_heads", "n_mamba_heads", "mamba_num_heads"), 4),
    **dict.fromkeys(("mamba_d_head", "mamba_headdim", "mamba_head_dim"), 8),
    "mamba_d_ssm": 32,
    **dict.fromkeys(("n_groups", "mamba_n_groups", "mamba_ngroups"), 1),
    **dict.fromkeys(("time_step_rank", "mamba_dt_rank"), lambda old, c: old if isinstance(old, str) else 4),
    # linear attention (gated DeltaNet and the like)
    **dict.fromkeys(("linear_num_key_heads", "linear_num_heads"), 2), "linear_num_value_heads": 4,
    **dict.fromkeys(("linear_key_head_dim", "linear_value_head_dim"), 4),
    # sparse-attention indexers
    "index_n_heads": 2, "index_num_heads": 2, "index_head_dim": 8, "index_topk": 4,
    **dict.fromkeys(("entity_vocab_size", "pronunciation_vocab_size", "shape_vocab_size", "task_type_vocab_size",
                     "ngram_vocab_size_base"), 64),
    **dict.fromkeys(("entity_emb_size", "pronunciation_embed_dim", "shape_embed_dim"), WIDTH),
    # vocabulary and positions
    **dict.fromkeys(("vocab_size", "decoder_vocab_size", "vocab_size_per_layer_input"), 64),
    "hidden_size_per_layer_input": 4, "ple_embed_dim": 4,
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "context_length",
                     "max_source_positions", "max_target_positions", "model_max_length",
                     "original_max_position_embeddings", "max_2d_position_embeddings"), MAX_POSITIONS),
}

#: Sizes that a default config leaves None for the model to fail on (``head_dim`` of Ministral, ``vocab_size`` of
#: ESM, ``num_experts_per_tok`` of DeepSeek-V2...): None takes the tiny value (consistent with width / heads).
UNSET_IS_A_SIZE: dict[str, int] = {"head_dim": HEAD_DIM, "num_key_value_heads": HEADS, "num_experts_per_tok": 2,
                                   "vocab_size": 64, "moe_intermediate_size": 8, "hidden_size": WIDTH,
                                   "intermediate_size": 32, "num_attention_heads": HEADS}

_HEAD_NAMES = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads", "kv_n_heads")
_LAYER_NAMES = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers", "num_blocks")
_NOT_PER_LAYER = frozenset({"id2label", "label2id"})
_TOKEN_IDS = re.compile(r".*_token_id$|.*_index$")


def _first(values: dict, names: tuple[str, ...]) -> Any:
    return next((values[n] for n in names if values.get(n) is not None), None)


def _config_module():
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto

    return transformers, CONFIG_MAPPING, modeling_auto


def model_types() -> list[str]:
    """The model types of the installed transformers with a causal-LM or a masked-LM class, sorted."""
    _, _, auto = _config_module()
    return sorted(set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES))


@dataclass(frozen=True)
class Adjustment:
    """A family's fix where :data:`SIZES` fails: config values to set after the generic shrink, and why."""

    values: dict[str, Any]
    why: str
    T: int | None = None  # a sequence length the family needs (a multiple of its chunks or blocks)
    wide: bool = False  # weights at WIDE_INIT: far dependences above float32's rounding band


#: model type -> its one adjustment. Filled as the sweep finds where the generic shrink fails.
ADJUSTMENTS: dict[str, Adjustment] = {
    "jamba": Adjustment({"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2,
                         "expert_layer_offset": 1, "use_mamba_kernels": False},
                        "its attention and expert layers are placed by period (8) and offset (4): with 2 layers "
                        "there would be none; the CUDA kernels are not installed"),
    "mamba2": Adjustment({"num_heads": 4}, "d_inner = expand · hidden must equal heads · head width: 2 · 16 = 4 · 8"),
    "lfm2": Adjustment({"layer_types": ["conv", "full_attention"], "full_attn_idxs": [1], "num_hidden_layers": 2},
                       "the default config has no convolution layer (every layer is attention); LFM2 mixes both"),
    "lfm2_moe": Adjustment({"layer_types": ["conv", "full_attention"], "num_dense_layers": 1, "num_hidden_layers": 2},
                           "the default config leaves layer_types unset; LFM2-MoE mixes convolution and attention"),
    "dory": Adjustment({"n_input_layers": 1, "n_recurrent_layers": 1, "n_output_layers": 1, "num_hidden_layers": 3},
                       "its layers are counted in three groups that must sum to the depth"),
    "zamba2": Adjustment({"num_mem_blocks": 1, "use_shared_attention_adapter": False},
                         "its shared attention reads the concatenation of two widths; with memory blocks and adapters "
                         "at their defaults the tiny widths do not line up"),
    "bamba": Adjustment({"attn_layer_indices": [1], "num_hidden_layers": 2},
                        "the default config has no attention layer (attn_layer_indices unset); Bamba-9B has "
                        "attention among its Mamba-2 layers"),
    "longformer": Adjustment({"attention_window": [4, 4]}, "the window is a per-layer list of even widths"),
}


class Refused(SeqlabError):
    """A family that cannot be built or run as a tiny model: the stage that failed (``config``, ``shrunk config``,
    ``model``, ``forward``) and the reason, one line (``str``: ``"<stage>: <reason>"``)."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(N_("{stage}: {reason}"), stage=stage, reason=reason, parameter="families")
        self.stage, self.reason = stage, reason


def _index_list(key: str, value: Any, layers: int) -> bool:
    """A list of layer indices (``attn_layer_indices``, ``full_attn_idxs``, ``moe_layers``...): increasing ints in
    [0, layers), under a name that says layers or indices (never a token id)."""
    return (isinstance(value, (list, tuple)) and 0 < len(value) and "token" not in key
            and re.search(r"layer|idx|indices|_ids$", key) is not None
            and all(isinstance(e, int) and not isinstance(e, bool) and 0 <= e < layers for e in value)
            and all(a < b for a, b in itertools.pairwise(value)))


def _per_layer_dict(value: Any, layers: int) -> bool:
    """A dict keyed by layer index (``per_layer_config``)."""
    return (isinstance(value, dict) and value != {}
            and all(str(k).isdigit() and int(k) < layers for k in value))


def _layer_selection(values: dict) -> list[int] | None:
    """Indices of the layers to keep: the first layer of each distinct kind, a kind being the layer's entry in every
    per-layer list, its membership in every list of layer indices, and its entry of a dict keyed by layer."""
    layers = _first(values, _LAYER_NAMES)
    if not isinstance(layers, int) or layers < 1:
        return None
    kinds: list[Callable[[int], Any]] = []
    for key, value in values.items():
        if key in _NOT_PER_LAYER:
            continue
        if _index_list(key, value, layers):
            kinds.append(lambda i, v=frozenset(value): i in v)
        elif _per_layer_dict(value, layers):
            kinds.append(lambda i, v=value: repr(v.get(i, v.get(str(i)))))
        elif (isinstance(value, (list, tuple)) and len(value) == layers and not key.endswith("_ids")
              and all(isinstance(e, (str, int, bool)) for e in value)):
            kinds.append(lambda i, v=value: v[i])
    if not kinds:
        return None
    seen, keep = set(), []
    for i in range(layers):
        kind = tuple(f(i) for f in kinds)
        if kind not in seen:
            seen.add(kind)
            keep.append(i)
    return keep


def shrink_values(values: dict) -> dict[str, Any]:
    """The changed entries of a config's dict: every size in :data:`SIZES`, per-layer lists cut to one layer of
    each kind, special token ids kept inside the vocabulary. Nested config dicts are shrunk the same way."""
    changed: dict[str, Any] = {}
    keep = _layer_selection(values)
    layers = _first(values, _LAYER_NAMES)
    for key, old in values.items():
        if old is None and key in UNSET_IS_A_SIZE:
            changed[key] = UNSET_IS_A_SIZE[key]
        elif key in SIZES and isinstance(old, int) and not isinstance(old, bool):
            rule = SIZES[key]
            new = rule(old, values) if callable(rule) else rule
            changed[key] = min(old, new) if key not in ("vocab_size",) and old > 0 else new
        elif isinstance(old, dict) and key not in ("rope_scaling", "rope_parameters", "id2label", "label2id"):
            inner = shrink_values(old)
            if inner:
                changed[key] = old | inner
    if keep is not None:
        new_index = {old_i: new_i for new_i, old_i in enumerate(keep)}
        for key, old in values.items():
            if key in _NOT_PER_LAYER:
                continue
            if _index_list(key, old, layers):
                changed[key] = [new_index[i] for i in old if i in new_index]
            elif _per_layer_dict(old, layers):
                changed[key] = {type(k)(new_index[int(k)]): v for k, v in old.items() if int(k) in new_index}
            elif isinstance(old, (list, tuple)) and len(old) == layers and not key.endswith("_ids"):
                changed[key] = [old[i] for i in keep]
        for name in _LAYER_NAMES:
            if isinstance(values.get(name), int):
                changed[name] = max(len(keep), 1)
    # latent attention: head_dim is the rotary part's width (DeepSeek-V3 derives one from the other)
    if values.get("head_dim") is not None and values.get("head_dim") == values.get("qk_rope_head_dim"):
        changed["head_dim"] = changed["qk_rope_head_dim"]
    vocab = changed.get("vocab_size", values.get("vocab_size"))
    for key, old in values.items():
        if _TOKEN_IDS.match(key) and isinstance(vocab, int):
            if isinstance(old, int) and not isinstance(old, bool) and old >= vocab:
                changed[key] = vocab - 1 - (hash(key) % 4)
            elif isinstance(old, list) and any(isinstance(e, int) and e >= vocab for e in old):
                changed[key] = [e if e < vocab else vocab - 1 for e in old]
    # dropout off (eval mode anyway; some models read probabilities at build time)
    for key, old in values.items():
        if ("dropout" in key or key.endswith("_pdrop")) and isinstance(old, float) and old > 0:
            changed[key] = 0.0
    return changed


def _derived(cls, values: dict) -> set[str]:
    """Size attributes the config computes from others, left out so that they follow the shrunk sizes: an int whose
    constructor default is None (RWKV's ``attention_hidden_size`` = hidden), or an int the constructor does not take
    at all (Zamba2's ``attention_hidden_size`` = 2 · hidden, set after the fields)."""
    import inspect

    try:
        parameters = {**inspect.signature(cls.__init__).parameters}
    except (TypeError, ValueError):
        return set()
    if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()) or len(parameters) > 3:
        return {k for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)
                and not _TOKEN_IDS.match(k) and k in SIZES
                and (k not in parameters or parameters[k].default is None)}
    return set()


def _text_config(config):
    """The text config of a composite config (its ``text_config``), or the config itself."""
    try:
        text = config.get_text_config()
    except (ValueError, AttributeError):
        return config
    return text


def real_config(model_type: str):
    """The config of ``model_type`` at its real size: its config class's defaults (a released model's sizes); for a
    composite config, its text config.

    Raises:
        Refused: the config class cannot be made.
    """
    _, CONFIG_MAPPING, _ = _config_module()
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception as error:
        raise Refused("config", f"{type(error).__name__}: {_line(error)}") from error
    return _text_config(config)


def shrink_config(config):
    """The tiny twin of ``config`` (any transformers config object, at any size): every size shrunk
    (:func:`shrink_values`), then the family's one adjustment (:data:`ADJUSTMENTS`, keyed by ``model_type``); a
    composite config is read at its text config.

    Raises:
        Refused: the config class rejects the shrunk values.
    """
    text = _text_config(config)
    values = text.to_dict()
    changed = shrink_values(values)
    adjustment = ADJUSTMENTS.get(getattr(text, "model_type", ""))
    if adjustment is not None:
        changed |= adjustment.values
        if adjustment.wide:
            changed["initializer_range"] = WIDE_INIT
    derived = _derived(type(text), values)
    kept = {k: v for k, v in values.items() if k not in derived}
    changed = {k: v for k, v in changed.items() if k not in derived or (adjustment and k in adjustment.values)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return type(text)(**(kept | changed))
    except Exception as error:
        raise Refused("shrunk config", f"{type(error).__name__}: {_line(error)}") from error


def tiny_config(model_type: str):
    """The tiny config of ``model_type``: :func:`shrink_config` of :func:`real_config`.

    Raises:
        Refused: the config class cannot be made, or rejects the shrunk values.
    """
    return shrink_config(real_config(model_type))


#: Weight scale for families whose far dependences fall under float32's band at transformers' 0.02 (hf_mixers).
WIDE_INIT = 0.3


def _line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:200]


def model_class(config):
    """The base model class of ``config``: transformers' MODEL_MAPPING, else the class named after the config
    (``MllamaTextConfig`` -> ``MllamaTextModel``: a composite's text model), or Refused."""
    transformers, _, auto = _config_module()
    name = auto.MODEL_MAPPING_NAMES.get(config.model_type)
    if isinstance(name, (list, tuple)):
        name = name[0]
    if name is None:
        name = type(config).__name__.removesuffix("Config") + "Model"
    if not hasattr(transformers, name):
        raise Refused("model", f"no base model class for model type {config.model_type!r}")
    return getattr(transformers, name)


def build(model_type: str, dtype: torch.dtype = torch.float64, seed: int = 0, **overrides) -> torch.nn.Module:
    """The tiny base model of ``model_type`` (:func:`build_config` of :func:`tiny_config`).

    Raises:
        Refused: the config or the model cannot be built.
    """
    config = tiny_config(model_type)
    for key, value in overrides.items():
        setattr(config, key, value)
    return build_config(config, dtype, seed)


def build_config(config, dtype: torch.dtype = torch.float64, seed: int = 0, device: str | None = None) -> torch.nn.Module:
    """The base model of ``config``: seeded random weights, eval mode, ``dtype``; eager attention and eager experts
    where the model takes them. The encoder alone of an encoder-decoder. On ``device="meta"`` nothing is allocated
    (shapes only: a real size's work and cache bytes).

    Raises:
        Refused: the model cannot be built.
    """
    cls = model_class(config)
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), \
            (torch.device(device) if device is not None else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        model, errors = None, []
        # on meta, experts run as one batched product over each token's chosen experts (the same multiplications as
        # eager routing, with shapes that need no values: eager dispatch asks nonzero() which experts were picked)
        first = ({"attn_implementation": "eager", "experts_implementation": "batched_mm"},) if device == "meta" else ()
        for keywords in (*first, {"attn_implementation": "eager", "experts_implementation": "eager"},
                         {"attn_implementation": "eager"}, {}):
            try:
                model = cls._from_config(config, **keywords)
                break
            except Exception as error:  # noqa: BLE001
                errors.append(error)
        if model is None:
            raise Refused("model", f"{type(errors[-1]).__name__}: {_line(errors[-1])}") from errors[-1]
    if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()
    return model.eval().to(dtype)


def input_width(model: torch.nn.Module) -> int:
    """The width d of ``inputs_embeds``: the input embedding's."""
    try:
        embedding = model.get_input_embeddings()
    except (NotImplementedError, AttributeError):
        embedding = None
    width = getattr(embedding, "embedding_dim", None)
    if width is None:
        weight = getattr(embedding, "weight", None)
        width = weight.shape[-1] if weight is not None else getattr(model.config, "hidden_size", None)
    if not isinstance(width, int):
        raise Refused("model", "no input embedding width")
    return width


def last_hidden(model: torch.nn.Module) -> Callable[[Tensor], Tensor]:
    """x (1, T, d) -> the model's last hidden state (1, T_out, d_out), from ``inputs_embeds`` (no cache)."""
    import inspect

    parameters = inspect.signature(model.forward).parameters
    extra = {"use_cache": False} if "use_cache" in parameters else {}

    def layer(x: Tensor) -> Tensor:
        out = model(inputs_embeds=x, **extra)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        return hidden

    return layer


def embeddings(T: int, d: int, dtype: torch.dtype = torch.float64, seed: int = 1) -> Tensor:
    """Seeded inputs x (1, T, d)."""
    return torch.randn(1, T, d, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _on_a_copy(layer: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """``layer`` on a copy of its input (a model that writes into its input leaves the caller's x as it was)."""
    return lambda x: layer(x.clone())


class _Dtypes(EngineMode):  # never compiled (seqlab.measure.modes)
    """Records the floating dtypes of the outputs of every op on the data path: an op with an input that requires
    grad (x or a parameter, or anything computed from them), so a position-only table computed in float32 (rotary
    angles) is not the model's precision."""

    def __init__(self):
        super().__init__()
        self.seen: set[torch.dtype] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if any(isinstance(a, Tensor) and a.requires_grad for a in tree_leaves((args, kwargs))):
            for leaf in tree_leaves(out):
                if isinstance(leaf, Tensor) and leaf.is_floating_point():
                    self.seen.add(leaf.dtype)
        return out


def computed_dtype(layer: Callable[[Tensor], Tensor], x: Tensor) -> torch.dtype:
    """The lowest floating dtype on the data path of ``layer(x)`` (:class:`_Dtypes`): the precision its rounding
    band must be judged at (a float64 model that casts to float32 inside, as Mamba-2's scan does, is judged at
    float32)."""
    probe = _Dtypes()
    leaf = x.detach().clone().requires_grad_(True)
    with torch.enable_grad(), probe:
        layer(leaf.clone())
    order = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
    return next((d for d in order if d in probe.seen), x.dtype)


@dataclass
class Family:
    """A built family: its model, its layer (x -> last hidden state), its x, and the config it was built from."""

    model_type: str
    model: torch.nn.Module
    layer: Callable[[Tensor], Tensor]
    x: Tensor
    T: int
    notes: list[str] = field(default_factory=list)


def chunk_multiple(config) -> int:
    """The least common multiple of the config's chunk and block sizes (T must be a multiple of it)."""
    values = config.to_dict()
    sizes = [v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0
             and (k.endswith(("chunk_size", "chunk_length")) or k == "block_size")]
    import math

    return functools.reduce(math.lcm, sizes, 1)


def family(model_type: str, T: int | None = None, seed: int = 0) -> Family:
    """Build ``model_type`` tiny and run it once on x (1, T, d) (T: 8, or the adjustment's, or a multiple of the
    family's chunks).

    Raises:
        Refused: the family cannot be built, or its forward pass fails (with the error's first line).
    """
    model = build(model_type, seed=seed)
    adjustment = ADJUSTMENTS.get(model_type)
    if T is None:
        T = adjustment.T if adjustment and adjustment.T else 8
        step = chunk_multiple(model.config)
        if step > 1 and T % step:
            T = step * max(1, -(-T // step)) if step <= 16 else T
    x = embeddings(T, input_width(model))
    layer = last_hidden(model)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = layer(x)
    except Exception as error:
        raise Refused("forward", f"{type(error).__name__}: {_line(error)}") from error
    if not isinstance(y, Tensor) or y.dim() != 3:
        raise Refused("forward", f"the last hidden state is not (1, T, d): {getattr(y, 'shape', type(y))}")
    return Family(model_type, model, layer, x, T)


