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

Any other family whose config lists ``layer_types`` made only of full and sliding-window attention gets the
cache's bytes (its keys and values follow from the attention sizes whatever its feed-forward block is), not the
work. Mixture-of-experts layers get neither.

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

__all__ = ["FEED_FORWARD", "WHOLE_MODEL_WINDOW", "FeedForward", "attention_sizes", "attention_width",
           "cache_layer_kinds", "config_integer", "kinds_from_cache_layers", "closed_state_bytes", "closed_step_by_kind", "closed_step_multiplications",
           "layer_kinds", "max_positions", "work_by_kind"]


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
#: ``config.layer_types`` entries whose cache is plain keys/values, and the kind each one holds.
CACHE_LAYER_TYPES = {"full_attention": "attention", "sliding_attention": "sliding"}


def config_integer(config: Any, *names: str, default: Any = None) -> Any:
    """The first of the config's attributes ``names`` that holds an integer (not a bool), else ``default``."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


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


def attention_sizes(config: Any) -> tuple[int, int, int]:
    """(H, H_kv, d_h) of the config's attention layers.

    Falcon's original layout (``multi_query`` without ``new_decoder_architecture``) keeps one key/value head.

    >>> from transformers import LlamaConfig
    >>> attention_sizes(LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16))
    (4, 2, 16)
    """
    heads = config_integer(config, "num_attention_heads", "n_head")
    kv_heads = config_integer(config, "num_key_value_heads", "num_kv_heads", default=heads)
    if config.model_type == "falcon" and getattr(config, "multi_query", False) \
            and not getattr(config, "new_decoder_architecture", False):
        kv_heads = 1
    head_dim = config_integer(config, "head_dim", default=config.hidden_size // heads)
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
    types = getattr(config, "layer_types", None)
    if not (isinstance(types, (list, tuple)) and len(types) == config.num_hidden_layers and types
            and all(name in CACHE_LAYER_TYPES for name in types)):
        return None
    if "sliding_attention" in types and not isinstance(getattr(config, "sliding_window", None), int):
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


#: Cache layer classes (transformers' ``cache_utils``) that hold plain keys and values, and the kind each holds.
CACHE_LAYER_CLASSES = {"DynamicLayer": "attention", "StaticLayer": "attention",
                       "DynamicSlidingWindowLayer": "sliding", "StaticSlidingWindowLayer": "sliding"}


def kinds_from_cache_layers(config: Any, cache_layers: tuple[str, ...]) -> list[str] | None:
    """Each layer's kind from the class names of a cache object's layers, when every one holds plain keys and
    values (:data:`CACHE_LAYER_CLASSES`), one per layer of the config, and a windowed one has the config's integer
    ``sliding_window``; None otherwise.

    >>> from transformers import MixtralConfig
    >>> kinds_from_cache_layers(MixtralConfig(num_hidden_layers=2), ("DynamicLayer", "DynamicLayer"))
    ['attention', 'attention']
    """
    if len(cache_layers) != config.num_hidden_layers or not all(name in CACHE_LAYER_CLASSES for name in cache_layers):
        return None
    kinds = [CACHE_LAYER_CLASSES[name] for name in cache_layers]
    if "sliding" in kinds and not isinstance(getattr(config, "sliding_window", None), int):
        return None
    return kinds


def cache_layer_kinds(config: Any, cache_layers: tuple[str, ...] = ()) -> list[str] | None:
    """Each layer's cache kind: :func:`layer_kinds` for the families this module knows; for any other family whose
    config lists ``layer_types`` made only of full and sliding-window attention (Gemma 3, Cohere 2, …) those kinds,
    since its cache holds keys and values whatever its feed-forward block is; failing both, the kinds of
    ``cache_layers``, the class names of a measured cache's layers (:func:`kinds_from_cache_layers`: Mixtral, …).
    None otherwise. Bytes only: a family's work per token depends on layers the config does not describe this way.
    """
    kinds = layer_kinds(config)
    if kinds is None:
        kinds = _attention_kinds(config)
    if kinds is None and cache_layers:
        kinds = kinds_from_cache_layers(config, cache_layers)
    return kinds


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
    """The cache's bytes per kind after the step at position t, from the config alone (batch 1).

    Full attention: :func:`seqlab.cost.kv_cache_bytes` over its layers; sliding window: the same with
    :func:`seqlab.cost.sliding_window_cache_rows` positions; Mamba: :func:`seqlab.cost.ssm_state_bytes` split into
    the convolution window (E·d_conv) and the SSM state (E·N); Mamba-2: :func:`seqlab.cost.mamba2_state_bytes`
    split into the window ((E + 2·G·N)·d_conv) and the state (E·N); RWKV: :func:`seqlab.cost.rwkv_state_bytes`
    split into the token shifts (2d) and the WKV state (3·d_att).

    >>> from transformers import LlamaConfig
    >>> config = LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    ...                      num_hidden_layers=2)
    >>> closed_state_bytes(config, 8, 4)  # 2 · 2 layers · 2 kv heads · 16 · 8 positions · 4 bytes
    {'attention_kv': 4096}

    Args:
        config: a transformers config (``model.config``). t: the position (>= 1). element_bytes: 4 for float32.
        cache_layers: the class names of the measured cache's layers, read only for a family whose config does not
            give its layers' kinds (:func:`cache_layer_kinds`).

    Returns:
        kind -> bytes, or None for a family with no closed form here.
    """
    kinds = cache_layer_kinds(config, cache_layers)
    if kinds is None:
        return None
    out: dict[str, int] = {}

    def add(kind: str, value: int) -> None:
        out[kind] = out.get(kind, 0) + value

    n = {kind: kinds.count(kind) for kind in set(kinds)}
    if n.get("attention") or n.get("sliding"):
        _, kv_heads, head_dim = attention_sizes(config)
        if n.get("attention"):
            add("attention_kv", cost.kv_cache_bytes(t, n["attention"], kv_heads, head_dim, element_bytes))
        if n.get("sliding"):
            rows = cost.sliding_window_cache_rows(t, config.sliding_window)
            add("sliding_window_kv", cost.kv_cache_bytes(rows, n["sliding"], kv_heads, head_dim, element_bytes))
    if n.get("mamba"):
        E, N, k, _ = _mamba_sizes(config)
        total = cost.ssm_state_bytes(n["mamba"], E, N, k, element_bytes)
        add("convolution", n["mamba"] * E * k * element_bytes)
        add("recurrent", total - n["mamba"] * E * k * element_bytes)
    if n.get("mamba2"):
        H, P, G, N, k = _mamba2_sizes(config)
        total = cost.mamba2_state_bytes(n["mamba2"], H, P, G, N, k, element_bytes)
        window = n["mamba2"] * (H * P + 2 * G * N) * k * element_bytes
        add("convolution", window)
        add("recurrent", total - window)
    if n.get("rwkv"):
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
    (:func:`seqlab.cost.mlp_step_multiplications`: 2·d·d_ff, or 3·d·d_ff gated); ``"output"`` is the output layer
    d·V.

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
