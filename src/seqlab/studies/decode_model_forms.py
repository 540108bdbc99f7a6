"""What a transformers config says one decode step costs and a cache holds: the closed forms ``seqlab decode
--model`` sets beside what it measures (issue 24; L1, L2, L6).

Everything here reads the config alone (``model.config``), never the weights or the cache, so that a measured
figure and its closed form are two routes to one number. A family is known here when its layers are one of:

* **a decoder layer**: attention (full, or a sliding window of w positions) plus a feed-forward block, the
  families of :data:`FEED_FORWARD` (GPT-2, GPT-J, GPT-NeoX, OPT, Falcon, StarCoder 2; Llama and the gated
  families that copy its layer: Mistral, Qwen 2/3, Phi-3, Gemma 1/2, OLMo, Granite). Which layers are windowed
  comes from the config's ``layer_types`` where it has one, else from ``sliding_window`` for the families whose
  every layer takes it (:data:`WHOLE_MODEL_WINDOW`);
* **a recurrence**: Mamba and Falcon-Mamba (a selective SSM), Mamba-2 (its SSD layer), RWKV-4;
* **a hybrid**: Jamba, attention and Mamba layers as ``layers_block_type`` lists them (without experts for the
  work: a router's top-k choice has no closed form here).

Any other family whose config lists ``layer_types`` of full, sliding-window or chunked attention (or layers
without attention), or lists none while its cache's layers hold plain keys and values, gets the cache's bytes (its
keys and values follow from the attention sizes whatever its feed-forward block is), not the work.
Mixture-of-experts layers get no work closed form.

The bytes are read layer by layer (:func:`layer_caches`), each from its own config (:func:`layer_configs`:
``per_layer_config`` where layers differ in heads, head width or window; a multimodal wrapper through its text
decoder, :func:`decoder_config`): multi-head latent attention (a ``kv_lora_rank``) caches the compressed latent and
the rotary key, d_c + d_R per position; a layer that reads another layer's keys and values (``kv_sharing_modes``)
holds none; indexed (sparse) attention adds its indexer's keys (``index_head_dim``) per position; a layer kind the
forms do not describe (linear attention, hybrid layers) leaves the
family without a bytes closed form rather than with another family's. Heads are read through each config's
``attribute_map`` (:data:`HEAD_ATTRIBUTES`).

Only contractions count (:mod:`seqlab.measure.work`): norms, rotary embeddings, activations and gates are
element-wise. Shape letters: L layers, H heads, H_kv key/value heads, d_h head width, d = d_model, d_ff the
feed-forward width, V vocabulary, t position.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seqlab import cost

__all__ = [
    "FEED_FORWARD",
    "WHOLE_MODEL_WINDOW",
    "FeedForward",
    "LayerCache",
    "attention_sizes",
    "attention_width",
    "cache_layer_kinds",
    "closed_state_bytes",
    "closed_step_by_kind",
    "closed_step_multiplications",
    "config_integer",
    "config_value",
    "decoder_config",
    "head_counts",
    "kinds_from_cache_layers",
    "layer_caches",
    "layer_configs",
    "layer_kinds",
    "max_positions",
    "work_by_kind",
]


@dataclass(frozen=True)
class FeedForward:
    """A decoder family's feed-forward block.

    Attributes:
        gated: three projections (gate, up, down: SwiGLU/GeGLU) rather than two (up, down).
        widths: config attributes that may hold d_ff, the first integer one wins.
        default_multiple: d_ff = this · d when none of ``widths`` holds an integer (GPT-2's ``n_inner=None``).
    """

    gated: bool
    widths: tuple[str, ...] = ("intermediate_size",)
    default_multiple: int | None = None

    def width(self, config: Any) -> int | None:
        """d_ff for this config, or None when neither the attributes nor a default give it."""
        value = config_integer(config, *self.widths)
        if value is None and self.default_multiple is not None:
            value = self.default_multiple * config.hidden_size
        return value


_GATED = FeedForward(gated=True)
#: Decoder families (model type -> feed-forward block) whose layer is attention plus this block, and nothing else
#: that contracts.
FEED_FORWARD: dict[str, FeedForward] = {
    "gpt2": FeedForward(False, ("n_inner",), 4), "gptj": FeedForward(False, ("n_inner",), 4),
    "gpt_neox": FeedForward(False), "starcoder2": FeedForward(False), "opt": FeedForward(False, ("ffn_dim",)),
    "falcon": FeedForward(False, ("ffn_hidden_size",), 4),
    **{kind: _GATED for kind in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "olmo",
                                 "granite")},
}
#: Decoder families with no ``layer_types`` whose config's ``sliding_window``, when set, windows every layer.
WHOLE_MODEL_WINDOW = frozenset({"mistral", "phi3", "starcoder2"})
#: Recurrent families: model type -> each layer's kind.
RECURRENT_KINDS = {"mamba": "mamba", "falcon_mamba": "mamba", "mamba2": "mamba2", "rwkv": "rwkv"}
#: ``config.layer_types`` entries whose cache transformers builds as plain keys/values (``chunked_attention``: a
#: window of ``attention_chunk_size``; ``indexed_attention``: every position's, plus its indexer's keys) or as
#: nothing (``moe``, ``mlp``: no attention), and the kind each one holds.
CACHE_LAYER_TYPES = {"full_attention": "attention", "sliding_attention": "sliding", "chunked_attention": "sliding",
                     "indexed_attention": "attention", "moe": "none", "mlp": "none"}


def config_value(config: Any, name: str, default: Any = None) -> Any:
    """The config's attribute ``name`` (through its ``attribute_map``: ``n_head`` and ``num_attention_heads`` name one
    value), or ``default`` when it has none, or when the attribute is a per-layer one of a heterogeneous config
    (transformers raises rather than give one layer's value for all: read it from :func:`layer_configs`)."""
    try:
        return getattr(config, name, default)
    except RuntimeError:  # AmbiguousGlobalPerLayerAttributeError: the value differs from layer to layer
        return default


def config_integer(config: Any, *names: str, default: Any = None) -> Any:
    """The first of the config's attributes ``names`` that holds an integer (not a bool), else ``default``."""
    for name in names:
        value = config_value(config, name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def decoder_config(config: Any) -> Any:
    """The config of the model's decoder, whose layers write the cache: the text config of a multimodal wrapper
    (Gemma 3's, LLaVA's: transformers' ``get_text_config(decoder=True)``), the config itself otherwise.

    >>> from transformers import Gemma3Config, LlamaConfig
    >>> decoder_config(Gemma3Config()).model_type, decoder_config(LlamaConfig()).model_type
    ('gemma3_text', 'llama')
    """
    text = getattr(config, "get_text_config", None)
    return text(decoder=True) if callable(text) else config


def layer_configs(config: Any) -> list[Any]:
    """Each layer's config: ``config.per_layer_config[i]`` for a heterogeneous config (layers that differ in heads,
    head width, window or attention kind, read as transformers builds each layer), else the config itself for
    every layer.

    >>> from transformers import LlamaConfig
    >>> len(layer_configs(LlamaConfig(num_hidden_layers=3)))
    3
    """
    layers = config_integer(config, "num_hidden_layers", default=0)
    if config_value(config, "is_heterogeneous", False):
        return [config.per_layer_config[i] for i in range(layers)]
    return [config] * layers


#: Config attributes that may hold the attention heads H, read through each config's ``attribute_map`` (CodeGen's
#: ``n_head``, MPT's ``n_heads`` are ``num_attention_heads`` there).
HEAD_ATTRIBUTES = ("num_attention_heads", "n_head", "n_heads", "num_heads")
#: Config attributes that may hold the key/value heads H_kv (default H).
KV_HEAD_ATTRIBUTES = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")


def head_counts(config: Any) -> tuple[int, int]:
    """(H, H_kv) of the config's first attention layer (0, 0 when it names no heads), whatever the family's names
    for them.

    >>> from transformers import CodeGenConfig, MptConfig
    >>> head_counts(CodeGenConfig(n_head=4, n_embd=32)), head_counts(MptConfig(n_heads=4, d_model=32))
    ((4, 4), (4, 4))
    """
    layers = layer_configs(config) or [config]
    sizes = attention_sizes(layers[0])
    return (0, 0) if sizes is None else sizes[:2]


def max_positions(config: Any) -> int | None:
    """The largest position an attention model accepts (``max_position_embeddings``); None for a recurrence
    (Mamba, RWKV: no position table).

    >>> from transformers import GPT2Config, MambaConfig
    >>> max_positions(GPT2Config(n_positions=64)), max_positions(MambaConfig())
    (64, None)
    """
    if config.model_type in RECURRENT_KINDS:
        return None
    return config_integer(config, "max_position_embeddings", "n_positions")


def attention_sizes(config: Any) -> tuple[int, int, int] | None:
    """(H, H_kv, d_h) of an attention layer's config (the model's, or one layer's from :func:`layer_configs`); None
    when it names no heads.

    A config with ``multi_query`` (Falcon's original layout, unless ``new_decoder_architecture``; GPT-BigCode) keeps
    one key/value head.

    >>> from transformers import LlamaConfig
    >>> attention_sizes(LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16))
    (4, 2, 16)
    """
    heads = config_integer(config, *HEAD_ATTRIBUTES)
    if not heads:
        return None
    kv_heads = config_integer(config, *KV_HEAD_ATTRIBUTES, default=heads)
    if config_value(config, "multi_query", False) is True \
            and not config_value(config, "new_decoder_architecture", False):
        kv_heads = 1  # multi-query attention: one key/value head (Falcon's original layout, GPT-BigCode)
    width = config_integer(config, "hidden_size", "d_model", "n_embd", default=0)
    head_dim = config_integer(config, "head_dim", default=width // heads)
    return heads, kv_heads, head_dim


def attention_width(config: Any) -> int | None:
    """d_attn = H·d_h of a decoder family (:data:`FEED_FORWARD`), or None for any other (Kaplan's d_attn)."""
    if config.model_type not in FEED_FORWARD:
        return None
    heads, _, head_dim = attention_sizes(config)
    return heads * head_dim


def _attention_kinds(config: Any) -> list[str] | None:
    """Each layer's kind (``"attention"`` or ``"sliding"``) from ``layer_types`` (full and sliding attention
    only); None when the config lists none, or lists another kind."""
    types = config_value(config, "layer_types")
    if not (isinstance(types, (list, tuple)) and len(types) == config.num_hidden_layers and types
            and all(name in ("full_attention", "sliding_attention") for name in types)):
        return None
    if "sliding_attention" in types and not isinstance(config_value(config, "sliding_window"), int):
        return None
    return [CACHE_LAYER_TYPES[name] for name in types]


def layer_kinds(config: Any) -> list[str] | None:
    """Each layer's kind from the config: ``"attention"``, ``"sliding"``, ``"mamba"``, ``"mamba2"``, ``"rwkv"``;
    None when the family is not one this module knows.

    >>> from transformers import MistralConfig
    >>> layer_kinds(MistralConfig(num_hidden_layers=2, sliding_window=8))
    ['sliding', 'sliding']
    """
    L = config.num_hidden_layers
    kind = config.model_type
    if kind in RECURRENT_KINDS:
        return [RECURRENT_KINDS[kind]] * L
    if kind == "jamba":
        return ["attention" if block == "attention" else "mamba" for block in config.layers_block_type]
    if kind not in FEED_FORWARD:
        return None
    listed = _attention_kinds(config)
    if listed is not None:
        return listed
    window = getattr(config, "sliding_window", None) if kind in WHOLE_MODEL_WINDOW else None
    return ["sliding" if isinstance(window, int) else "attention"] * L


#: Cache layer classes (transformers' ``cache_utils``) that hold plain keys and values, and the kind each holds;
#: ``DummyLayer`` holds nothing (a layer without attention, or one that reads another layer's keys and values).
CACHE_LAYER_CLASSES = {"DynamicLayer": "attention", "StaticLayer": "attention",
                       "DynamicSlidingWindowLayer": "sliding", "StaticSlidingWindowLayer": "sliding",
                       "DummyLayer": "none"}
#: Kinds of layer whose cache holds keys and values (every position's, or a window's).
KV_KINDS = ("attention", "sliding")
#: Kinds of layer whose cache holds nothing of its own: ``"shared"`` reads the keys and values another layer
#: stored (transformers' ``kv_sharing_modes`` ``"reuse"``: Gemma 3n, Gemma 4); ``"none"`` has no attention.
EMPTY_KINDS = ("shared", "none")


def kinds_from_cache_layers(config: Any, cache_layers: tuple[str, ...]) -> list[str] | None:
    """Each layer's kind from the class names of a cache object's layers, when every one holds plain keys and
    values or nothing (:data:`CACHE_LAYER_CLASSES`), one per layer of the config; None otherwise.

    >>> from transformers import MixtralConfig
    >>> kinds_from_cache_layers(MixtralConfig(num_hidden_layers=2), ("DynamicLayer", "DynamicLayer"))
    ['attention', 'attention']
    """
    if len(cache_layers) != config.num_hidden_layers or not all(name in CACHE_LAYER_CLASSES for name in cache_layers):
        return None
    return [CACHE_LAYER_CLASSES[name] for name in cache_layers]


def _listed_kinds(config: Any) -> list[str] | None:
    """Each layer's kind from ``layer_types`` when every entry is one whose cache :data:`CACHE_LAYER_TYPES` knows;
    None otherwise."""
    types = config_value(config, "layer_types")
    if not (isinstance(types, (list, tuple)) and len(types) == config.num_hidden_layers and types
            and all(name in CACHE_LAYER_TYPES for name in types)):
        return None
    return [CACHE_LAYER_TYPES[name] for name in types]


def _sharing(config: Any, kinds: list[str]) -> list[str] | None:
    """``kinds`` with every layer that reuses another layer's keys and values (the config's ``kv_sharing_modes``,
    transformers' own rule) as ``"shared"``; None when the config's sharing cannot be read."""
    try:
        modes = getattr(config, "kv_sharing_modes", None)
    except Exception:  # noqa: BLE001  (a config whose sharing contradicts its layer types: nothing to describe)
        return None
    if not isinstance(modes, (list, tuple)):
        return kinds
    if len(modes) != len(kinds):
        return None
    return ["shared" if mode == "reuse" and kind in KV_KINDS + EMPTY_KINDS else kind
            for kind, mode in zip(kinds, modes)]


def cache_layer_kinds(config: Any, cache_layers: tuple[str, ...] = ()) -> list[str] | None:
    """Each layer's cache kind: :func:`layer_kinds` for the families this module knows; for any other family whose
    config lists ``layer_types`` of kinds :data:`CACHE_LAYER_TYPES` knows (Gemma 3, Cohere 2, Llama 4's chunks, …)
    those kinds, since its cache holds keys and values whatever its feed-forward block is; failing both, the kinds
    of ``cache_layers``, the class names of a measured cache's layers (:func:`kinds_from_cache_layers`: Mixtral,
    …), for a config that lists no ``layer_types`` (one that lists a kind unknown here — linear attention, a hybrid
    layer — gets None, whatever the cache's classes). A layer that reuses another's keys and values is
    ``"shared"`` (:func:`_sharing`). None otherwise. Bytes only: a family's work per token depends on layers the
    config does not describe this way.

    >>> from transformers import Gemma3nTextConfig
    >>> cache_layer_kinds(Gemma3nTextConfig(num_hidden_layers=4, num_kv_shared_layers=2,
    ...                   layer_types=["sliding_attention", "full_attention"] * 2))
    ['sliding', 'attention', 'shared', 'shared']
    """
    kinds = layer_kinds(config)
    if kinds is None:
        kinds = _listed_kinds(config)
    listed = isinstance(config_value(config, "layer_types"), (list, tuple))
    if kinds is None and cache_layers and not listed:  # a config that lists kinds unknown here is not overridden
        kinds = kinds_from_cache_layers(config, cache_layers)
    return None if kinds is None else _sharing(config, kinds)


@dataclass(frozen=True)
class LayerCache:
    """What one layer's cache holds, from that layer's config (:func:`layer_configs`).

    Attributes:
        kind: ``"attention"``, ``"sliding"``, ``"shared"``, ``"none"``, ``"mamba"``, ``"mamba2"`` or ``"rwkv"``.
        window: the positions w a ``"sliding"`` layer keeps (its ``sliding_window``, or ``attention_chunk_size``
            for chunked attention); None otherwise.
        kv_heads, key_dim, value_dim: H_kv, d_k and d_v of a layer of keys and values (0 otherwise).
        latent_rank, rope_dim: d_c and d_R of multi-head latent attention, whose cache holds the compressed latent
            and the shared rotary key per position, not H keys and values (0 otherwise).
        index_dim: d_I of indexed (sparse) attention's indexer, whose keys, one of d_I per position, the cache holds
            beside the layer's own (DeepSeek-V3.2's DSA; 0 otherwise).
    """

    kind: str
    window: int | None = None
    kv_heads: int = 0
    key_dim: int = 0
    value_dim: int = 0
    latent_rank: int = 0
    rope_dim: int = 0
    index_dim: int = 0

    def bytes(self, t: int, element_bytes: int) -> int:
        """Bytes after the step at position t (0 for a layer whose cache holds no keys and values)."""
        if self.kind not in KV_KINDS:
            return 0
        rows = t if self.window is None else cost.sliding_window_cache_rows(t, self.window)
        index = cost.keys_values_cache_bytes(rows, 1, self.index_dim, 0, element_bytes) if self.index_dim else 0
        if self.latent_rank:
            return index + cost.latent_kv_cache_bytes(rows, 1, self.latent_rank, self.rope_dim, element_bytes)
        if self.key_dim == self.value_dim:
            return index + cost.kv_cache_bytes(rows, 1, self.kv_heads, self.key_dim, element_bytes)
        return index + cost.keys_values_cache_bytes(rows, 1, self.kv_heads * self.key_dim,
                                                    self.kv_heads * self.value_dim, element_bytes)


def _window(layer: Any, listed: str | None) -> int | None:
    """w of a windowed layer: ``attention_chunk_size`` for chunked attention, else ``sliding_window``."""
    if listed == "chunked_attention":
        return config_integer(layer, "attention_chunk_size")
    return config_integer(layer, "sliding_window")


def _kv_layer(kind: str, layer: Any, listed: str | None) -> LayerCache | None:
    """The cache of one attention layer from its config: latent attention where the layer has a ``kv_lora_rank``
    (DeepSeek-V2/V3, MiniCPM3, Kimi, …: its cache holds d_c + d_R per position), else H_kv heads of keys (d_h) and
    values (``v_head_dim`` where given, else d_h); an indexed layer adds its indexer's ``index_head_dim`` keys per
    position; None when the config does not give the sizes."""
    window = _window(layer, listed) if kind == "sliding" else None
    if kind == "sliding" and window is None:
        return None
    index = config_integer(layer, "index_head_dim", default=0) if listed == "indexed_attention" else 0
    if listed == "indexed_attention" and not index:
        return None
    rank = config_integer(layer, "kv_lora_rank")
    if rank:
        rope = config_integer(layer, "qk_rope_head_dim")
        return None if not rope else LayerCache(kind, window, latent_rank=rank, rope_dim=rope, index_dim=index)
    sizes = attention_sizes(layer)
    if sizes is None:
        return None
    _, kv_heads, head_dim = sizes
    return LayerCache(kind, window, kv_heads, head_dim, config_integer(layer, "v_head_dim", default=head_dim),
                      index_dim=index)


def layer_caches(config: Any, cache_layers: tuple[str, ...] = ()) -> list[LayerCache] | None:
    """What each layer's cache holds, layer by layer from the config (:func:`cache_layer_kinds` for the kinds,
    :func:`layer_configs` for each layer's own heads, widths and window); None when some layer's cache is one the
    closed forms do not describe (its family gets no bytes' closed form rather than another family's).

    >>> from transformers import DeepseekV3Config
    >>> config = DeepseekV3Config(num_hidden_layers=1, kv_lora_rank=16, qk_rope_head_dim=4)
    >>> layer = layer_caches(config, ("DynamicLayer",))[0]  # the config lists no layer types: the cache's classes
    >>> layer.kind, layer.latent_rank, layer.rope_dim, layer.bytes(8, 4)  # (16 + 4) · 8 positions · 4 bytes
    ('attention', 16, 4, 640)
    """
    kinds = cache_layer_kinds(config, cache_layers)
    if kinds is None:
        return None
    types = config_value(config, "layer_types")
    listed = list(types) if isinstance(types, (list, tuple)) and len(types) == len(kinds) else [None] * len(kinds)
    layers = layer_configs(config)
    caches = []
    for kind, layer, name in zip(kinds, layers, listed):
        cache = _kv_layer(kind, layer, name) if kind in KV_KINDS else LayerCache(kind)
        if cache is None:
            return None
        caches.append(cache)
    return caches


def _mamba_sizes(config: Any) -> tuple[int, int, int, int]:
    """(E, N, d_conv, dt rank) of a Mamba layer."""
    d = config.hidden_size
    if config.model_type == "jamba":
        return config.mamba_expand * d, config.mamba_d_state, config.mamba_d_conv, config.mamba_dt_rank
    return config.intermediate_size, config.state_size, config.conv_kernel, config.time_step_rank


def _mamba2_sizes(config: Any) -> tuple[int, int, int, int, int]:
    """(H, P, G, N, d_conv) of a Mamba-2 layer."""
    return config.num_heads, config.head_dim, config.n_groups, config.state_size, config.conv_kernel


def closed_state_bytes(config: Any, t: int, element_bytes: int, cache_layers: tuple[str, ...] = ()
                       ) -> dict[str, int] | None:
    """The cache's bytes per kind after the step at position t, from the config alone (batch 1), layer by layer
    (:func:`layer_caches`).

    Full attention: :func:`seqlab.cost.kv_cache_bytes` of each layer's own H_kv and d_h
    (:func:`seqlab.cost.keys_values_cache_bytes` where d_v ≠ d_k; :func:`seqlab.cost.latent_kv_cache_bytes` for latent
    attention); sliding window: the same over :func:`seqlab.cost.sliding_window_cache_rows` positions; a layer that
    reads another's keys and values: nothing; Mamba: :func:`seqlab.cost.ssm_state_bytes` split into the convolution
    window (E·d_conv) and the SSM state (E·N); Mamba-2: :func:`seqlab.cost.mamba2_state_bytes` split into the window
    ((E + 2·G·N)·d_conv) and the state (E·N); RWKV: :func:`seqlab.cost.rwkv_state_bytes` split into the token
    shifts (2d) and the WKV state (3·d_att).

    >>> from transformers import LlamaConfig
    >>> config = LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    ...                      num_hidden_layers=2)
    >>> closed_state_bytes(config, 8, 4)  # 2 · 2 layers · 2 kv heads · 16 · 8 positions · 4 bytes
    {'attention_kv': 4096}

    Args:
        config: a transformers config (``model.config``). t: the position (>= 1). element_bytes: the cache's bytes
            per element (4 for float32, 2 for bfloat16).
        cache_layers: the class names of the measured cache's layers, read only for a family whose config does not
            give its layers' kinds (:func:`cache_layer_kinds`).

    Returns:
        kind -> bytes, or None for a family with no closed form here.
    """
    caches = layer_caches(config, cache_layers)
    if caches is None:
        return None
    out: dict[str, int] = {}

    def add(kind: str, value: int) -> None:
        out[kind] = out.get(kind, 0) + value

    for cache in caches:
        if cache.kind in KV_KINDS:
            add("attention_kv" if cache.kind == "attention" else "sliding_window_kv", cache.bytes(t, element_bytes))
    n = {kind: sum(c.kind == kind for c in caches) for kind in ("mamba", "mamba2", "rwkv")}
    if n["mamba"]:
        E, N, k, _ = _mamba_sizes(config)
        total = cost.ssm_state_bytes(n["mamba"], E, N, k, element_bytes)
        add("convolution", n["mamba"] * E * k * element_bytes)
        add("recurrent", total - n["mamba"] * E * k * element_bytes)
    if n["mamba2"]:
        H, P, G, N, k = _mamba2_sizes(config)
        total = cost.mamba2_state_bytes(n["mamba2"], H, P, G, N, k, element_bytes)
        window = n["mamba2"] * (H * P + 2 * G * N) * k * element_bytes
        add("convolution", window)
        add("recurrent", total - window)
    if n["rwkv"]:
        d, d_att = config.hidden_size, config.attention_hidden_size or config.hidden_size
        total = cost.rwkv_state_bytes(n["rwkv"], d, d_att, element_bytes)
        add("convolution", n["rwkv"] * 2 * d * element_bytes)
        add("recurrent", total - n["rwkv"] * 2 * d * element_bytes)
    return out


def _output_multiplications(config: Any) -> int:
    """The output layer d·V, and OPT's projections between d and a narrower embedding width (d_e·d twice, then
    d_e·V) where it has them."""
    d, V = config.hidden_size, config.vocab_size
    embedding = config_integer(config, "word_embed_proj_dim", default=d) if config.model_type == "opt" else d
    return embedding * V + (2 * embedding * d if embedding != d else 0)


def _has_experts(config: Any) -> bool:
    """Some layer routes each token to experts (Jamba's ``layers_num_experts``; a ``num_local_experts`` or
    ``num_experts`` above 1 elsewhere)."""
    if config.model_type == "jamba":
        return any(n > 1 for n in config.layers_num_experts)
    return config_integer(config, "num_local_experts", "num_experts", default=1) > 1


def closed_step_by_kind(config: Any, t: int) -> dict[str, int] | None:
    """Multiplications of the decode step at position t per kind of layer, from the config alone (batch 1).

    Each layer is its mixer's step (attention over t keys, or min(t, w) in a window:
    :func:`seqlab.cost.decoder_attention_step_multiplications`; Mamba:
    :func:`seqlab.cost.hf_mamba_step_multiplications`; Mamba-2: :func:`seqlab.cost.hf_mamba2_step_multiplications`;
    RWKV: :func:`seqlab.cost.rwkv_step_multiplications`) and, in a decoder or Jamba layer, its feed-forward block
    (:func:`seqlab.cost.mlp_step_multiplications`: 2·d·d_ff, or 3·d·d_ff gated); ``"output"`` is what runs outside
    the layers: the output layer d·V and, for a family that builds ALiBi's bias there (the config's ``alibi``:
    Falcon), the slopes times the t positions (:func:`seqlab.cost.alibi_bias_multiplications`), as its own code
    builds it each step.

    >>> from transformers import GPT2Config
    >>> closed_step_by_kind(GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4), 16)
    {'output': 2048, 'attention': 26624}

    Args:
        config: a transformers config (``model.config``). t: the position (>= 1).

    Returns:
        kind (``"attention"``, ``"sliding"``, ``"mamba"``, ``"mamba2"``, ``"rwkv"``, ``"output"``) ->
        multiplications, or None for a family with no closed form here, or with expert layers.
    """
    kinds = layer_kinds(config)
    if kinds is None or _has_experts(config):
        return None  # a router and top-k experts per token: no closed form here
    d = config.hidden_size
    out = {"output": _output_multiplications(config)}
    heads, kv_heads, head_dim = attention_sizes(config) if {"attention", "sliding"} & set(kinds) else (0, 0, 0)
    if config_value(config, "alibi", False) is True:  # the family builds ALiBi's bias outside its layers, each step
        out["output"] += cost.alibi_bias_multiplications(heads, t)
    family = config.model_type
    feed_forward = FEED_FORWARD.get(family, _GATED if family == "jamba" else None)
    d_ff = None if feed_forward is None else feed_forward.width(config)
    if feed_forward is not None and d_ff is None:
        return None
    for layer in kinds:
        if layer in ("attention", "sliding"):
            keys = t if layer == "attention" else min(t, config.sliding_window)
            total = cost.decoder_attention_step_multiplications(keys, d, heads, kv_heads, head_dim)
        elif layer == "mamba":
            E, N, k, R = _mamba_sizes(config)
            total = cost.hf_mamba_step_multiplications(d, E, N, k, R)
        elif layer == "mamba2":
            H, P, G, N, k = _mamba2_sizes(config)
            total = cost.hf_mamba2_step_multiplications(d, H, P, G, N, k)
        else:  # rwkv: its two mixes are the whole layer
            d_att = config.attention_hidden_size or d
            total = cost.rwkv_step_multiplications(d, d_att, config.intermediate_size or 4 * d)
        if feed_forward is not None:
            total += cost.mlp_step_multiplications(d, d_ff, gated=feed_forward.gated)
        out[layer] = out.get(layer, 0) + total
    return out


def closed_step_multiplications(config: Any, t: int) -> int | None:
    """Multiplications of the decode step at position t, from the config alone: the sum of
    :func:`closed_step_by_kind`.

    >>> from transformers import GPT2Config
    >>> closed_step_multiplications(GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4), 16)
    28672

    Returns:
        The count, or None for a family with no closed form here (or with expert layers).
    """
    by_kind = closed_step_by_kind(config, t)
    return None if by_kind is None else sum(by_kind.values())


#: A decoder layer's module path as the counter names it (``…model.layers.3``, ``…transformer.h.0``, ``…blocks.1``).
_LAYER_MODULE = re.compile(r"\.(?:layers|h|blocks)\.(\d+)$")


def work_by_kind(by_module: Mapping[str, int], config: Any, total: int) -> dict[str, int] | None:
    """A counted step split by kind of layer: each decoder layer's module (its mixer and feed-forward block) under
    its kind from the config, and the rest (output layer, final norm) as ``"output"``.

    >>> from transformers import MambaConfig
    >>> work_by_kind({"M.backbone.layers.0": 7936, "M.backbone.layers.1": 7936, "M.lm_head": 2048},
    ...              MambaConfig(num_hidden_layers=2), 17920)
    {'output': 2048, 'mamba': 15872}

    Returns:
        kind -> multiplications summing to ``total``, or None when the family is unknown or no layer module was
        found.
    """
    kinds = layer_kinds(config)
    if kinds is None:
        return None
    out: dict[str, int] = {}
    for name, count in by_module.items():
        match = _LAYER_MODULE.search(name)
        if match and int(match.group(1)) < len(kinds):
            kind = kinds[int(match.group(1))]
            out[kind] = out.get(kind, 0) + count
    if not out:
        return None
    return {"output": total - sum(out.values()), **out}
