"""Every state-space and hybrid family of the installed ``transformers``, found from transformers itself, built tiny.

Issue 35, "Done when": ``seqlab.profile`` gives all of its figures on every Hugging Face state-space and hybrid
family. The families are not listed by hand; a model type is one when transformers says so in either of two ways:

* **its cache says so** — the layer types of its (text) config, as transformers' own cache reads them
  (``cache_utils.get_layer_types_and_kwargs``), include one whose cache layer holds a recurrent state
  (a subclass of ``LinearAttentionCacheLayerMixin``: ``linear_attention``, ``conv``, ``hybrid``...);
* **its modeling code says so** — its ``modeling_*.py`` keeps a recurrent, state-space or convolution state
  (``ssm_states``, ``recurrent_states``, ``conv_states``, ``update_recurrent_state``), or one of its outputs returns
  ``cache_params``, a ``cache`` or a ``state`` in place of ``past_key_values`` (Mamba, RWKV, xLSTM).

A family is its text model: a (text) config with a vocabulary, whose model takes ``inputs_embeds``.

Each family is built from its default config shrunk by one table of size keys (:data:`SMALL`: d_model 16, every
width and count small, the first two layers of each of its layer types; :data:`DEFAULT_DOES_NOT_BUILD` fills the
fields a default config leaves empty), random weights, eval mode, eager attention; its
decoder text model when the family is multimodal. Shapes: B = 1, T positions, d = d_model.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import warnings

import torch

D_MODEL = 16

#: size key -> tiny value, applied to every config key of that name (d_inner = expand · d = 32 = 4 heads · 8).
SMALL = {
    "vocab_size": 32, "hidden_size": D_MODEL, "d_model": D_MODEL, "embedding_dim": D_MODEL, "intermediate_size": 24,
    "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8, "expert_intermediate_size": 8,
    "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 8, "attention_head_dim": 8, "kv_channels": 8,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "num_experts_per_token": 2, "n_group": 1, "num_expert_group": 1,
    "topk_group": 1, "moe_topk": 2,
    "state_size": 4, "ssm_state_size": 4, "mamba_d_state": 4, "d_state": 4, "expand": 2, "mamba_expand": 2,
    "mamba_n_heads": 4, "mamba_num_heads": 4, "n_mamba_heads": 4, "mamba_d_head": 8, "mamba_head_dim": 8,
    "mamba_headdim": 8, "mamba_d_ssm": 32, "mamba_n_groups": 1, "mamba_ngroups": 1, "n_groups": 1,
    "chunk_size": 4, "mamba_chunk_size": 4, "time_step_rank": 4, "mamba_dt_rank": 4, "num_heads": 4,
    "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
    "lru_width": D_MODEL, "block_size": 4, "sliding_window": 3,
    "attention_window_size": 3, "q_lora_rank": 8, "kv_lora_rank": 8, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4,
    "v_head_dim": 8, "max_position_embeddings": 64, "use_mambapy": False, "first_k_dense_replace": 0,
    "num_nextn_predict_layers": 0, "mtp_num_layers": 0,
}
#: Suffix -> tiny value, for every other integer size key (``linear_head_dim``, ``swa_num_attention_heads``,
#: ``moe_shared_expert_intermediate_size``...); never raised above the default.
SMALL_SUFFIXES = (("head_dim", 8), ("heads", 2), ("intermediate_size", 16))
#: The families whose default config builds no model in transformers itself (a field it leaves None is read), and
#: the values that make one; found by building every family, not chosen.
DEFAULT_DOES_NOT_BUILD = {
    "lfm2_moe": {"layer_types": ["conv", "full_attention"], "num_hidden_layers": 2, "num_dense_layers": 1},
    "qwen4_exp_text": {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 8, "indexer_budget": 4,
                       "indexer_compress_ratio": 2},
}
#: Config keys that list one entry per layer.
LAYER_LISTS = ("layer_types", "layers_block_type", "block_types", "layers_block_types")
_STATE_WORDS = re.compile(r"\b(ssm_states?|recurrent_states?|conv_states?|update_recurrent_state|update_conv_state)\b")
_STATE_OUTPUT = re.compile(r"class \w+\(ModelOutput\):(?:(?!\nclass ).)*?\n    (cache_params|cache|state): (?!Cache\b)\w+", re.DOTALL)


def _transformers():
    import transformers

    return transformers


def _recurrent_cache_types() -> set[str]:
    from transformers import cache_utils

    return {name for name, layer in cache_utils.DYNAMIC_LAYER_TYPE_MAPPING.items()
            if isinstance(layer, type) and issubclass(layer, cache_utils.LinearAttentionCacheLayerMixin)}


def _text(config):
    try:
        return config.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001 - a config without sub-configs is its own text config
        return config


def _declares_state(model_type: str) -> bool:
    """The family's modeling code keeps a recurrent state (see the module docstring)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    module = model_type_to_module_name(model_type)
    name = f"transformers.models.{module}.modeling_{module}"
    try:  # its source, read without running it (importing every family's modeling code costs seconds per process)
        spec = importlib.util.find_spec(name)
        source = spec.loader.get_source(name)
    except Exception:  # noqa: BLE001 - no modeling module of that name
        return False
    if source is None:
        return False
    return bool(_STATE_WORDS.search(source) or _STATE_OUTPUT.search(source))


@functools.cache
def state_space_families() -> tuple[str, ...]:
    """Model types (of the text model) of every state-space and hybrid family, sorted; one per text model."""
    tf = _transformers()
    from transformers.cache_utils import get_layer_types_and_kwargs
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    recurrent = _recurrent_cache_types()
    found = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in CONFIG_MAPPING_NAMES.values():
            try:
                text = _text(getattr(tf, name)())
            except Exception:  # noqa: BLE001, S112 - a config that cannot be built with its defaults
                continue
            text_type = text.model_type
            if text_type not in MODEL_MAPPING_NAMES or getattr(text, "vocab_size", None) is None:
                continue
            try:
                types = set(get_layer_types_and_kwargs(text)[0])
            except Exception:  # noqa: BLE001
                types = set(getattr(text, "layer_types", None) or ())
            if types & recurrent or _declares_state(text_type):
                found.add(text_type)
    return tuple(sorted(found))


def tiny_config(model_type: str, **overrides):
    """The family's default (text) config shrunk by :data:`SMALL`, two layers of each of its layer types."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    default = CONFIG_MAPPING[model_type]()
    values = default.to_dict()
    small = {key: (min(value, values[key]) if isinstance(values[key], int) and not isinstance(value, bool)
                   and not isinstance(values[key], bool) else value)
             for key, value in SMALL.items() if key in values}
    for key, value in values.items():
        tiny = next((v for suffix, v in SMALL_SUFFIXES if key.endswith(suffix)), None)
        if key not in small and tiny is not None and isinstance(value, int) and not isinstance(value, bool):
            small[key] = min(value, tiny)
    layers = values.get("num_hidden_layers")
    kept = list(range(min(layers, 2))) if isinstance(layers, int) else None
    for key in LAYER_LISTS:  # two layers of each type, the first two of their kind (shared blocks repeat)
        if isinstance(values.get(key), (list, tuple)) and values[key]:
            kept = sorted(i for i, kind in enumerate(values[key]) if values[key][:i].count(kind) < 2)
            break
    if kept is not None and isinstance(layers, int):
        small["num_hidden_layers"] = len(kept)
        for key, value in values.items():  # every per-layer list keeps the same layers
            if isinstance(value, (list, tuple)) and len(value) == layers and key not in small:
                small[key] = [value[i] for i in kept]
        for key in LAYER_LISTS:
            if isinstance(values.get(key), (list, tuple)) and len(values[key]) == layers:
                small[key] = [values[key][i] for i in kept]
    small["attn_implementation"] = "eager"
    small.update(DEFAULT_DOES_NOT_BUILD.get(model_type, {}))
    small.update(overrides)
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if isinstance(values.get(key), int) and values[key] >= small.get("vocab_size", 1 << 30):
            small[key] = 0
    return type(default)(**small)  # what is not small the config derives itself


def build(model_type: str, dtype: torch.dtype = torch.float32, seed: int = 0, **overrides) -> torch.nn.Module:
    """The family's tiny text model, random weights drawn under ``seed``, in eval mode, in ``dtype``."""
    from transformers import AutoModel

    config = tiny_config(model_type, **overrides)
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        model = AutoModel.from_config(config)
    return model.eval().to(dtype)


class LastHidden(torch.nn.Module):
    """x (1, T, d) -> the model's last hidden state (1, T, d), from ``inputs_embeds``, no cache."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return self.model(inputs_embeds=x, use_cache=False).last_hidden_state
        except TypeError:
            return self.model(inputs_embeds=x).last_hidden_state
