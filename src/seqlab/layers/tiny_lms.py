"""Tiny random-weight causal LMs built in memory from transformers configs: one per family of decoding state.

``seqlab check`` (B5) and the web lab's Generation panel measure a model's decoding on its own code and its own
cache object, with nothing downloaded and no file read: each model here is built from a transformers config with
seeded random weights. Random weights change neither the bytes a cache holds nor the multiplications a step
counts (both follow from the shapes alone), so these figures are the family's, at these sizes.

The families (:data:`TINY_FAMILIES`), each with two layers of width 32 (four for the hybrid), vocabulary 64:

* ``llama_gqa`` — Llama with grouped-query attention: 4 query heads, 2 key/value heads of width 16; its KV cache
  grows by 2·L·H_kv·d_h·4 bytes per token;
* ``mistral_window`` — Mistral with a sliding window of :data:`WINDOW` positions: its cache stops growing at the
  window;
* ``mamba`` — Mamba (a selective SSM): a fixed convolution window and SSM state, whatever t;
* ``jamba_hybrid`` — Jamba, attention and Mamba layers in turn: a fixed part plus a growing one.

Attention reads at most :data:`MAX_POSITIONS` positions. Building needs ``transformers`` (the ``[model]`` extra).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Vocabulary, width and largest position of every tiny model.
VOCABULARY = 64
WIDTH = 32
MAX_POSITIONS = 64
#: The sliding window of ``mistral_window``.
WINDOW = 8
_SPECIAL = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}
_ATTENTION = {"vocab_size": VOCABULARY, "hidden_size": WIDTH, "intermediate_size": 48, "num_hidden_layers": 2,
              "num_attention_heads": 4, "max_position_embeddings": MAX_POSITIONS, **_SPECIAL}


def _llama_gqa(transformers: Any) -> Any:
    return transformers.LlamaConfig(**_ATTENTION, num_key_value_heads=2, head_dim=16)


def _mistral_window(transformers: Any) -> Any:
    return transformers.MistralConfig(**_ATTENTION, num_key_value_heads=2, sliding_window=WINDOW)


def _mamba(transformers: Any) -> Any:
    return transformers.MambaConfig(vocab_size=VOCABULARY, hidden_size=WIDTH, state_size=4, num_hidden_layers=2,
                                    conv_kernel=4, expand=2, **_SPECIAL)


def _jamba_hybrid(transformers: Any) -> Any:
    return transformers.JambaConfig(**{**_ATTENTION, "num_hidden_layers": 4}, num_key_value_heads=2,
                                    attn_layer_period=2, attn_layer_offset=1, expert_layer_period=100,
                                    expert_layer_offset=99, num_experts=1, mamba_d_state=4, mamba_d_conv=4,
                                    mamba_expand=2)


#: Family -> its config (built from the ``transformers`` module), in the order menus list them.
TINY_FAMILIES: dict[str, Callable[[Any], Any]] = {"llama_gqa": _llama_gqa, "mistral_window": _mistral_window,
                                                  "mamba": _mamba, "jamba_hybrid": _jamba_hybrid}


def tiny_config(family: str) -> Any:
    """The transformers config of one tiny family.

    >>> config = tiny_config("llama_gqa")
    >>> config.num_key_value_heads, config.head_dim, config.max_position_embeddings
    (2, 16, 64)

    Raises:
        SeqlabError: an unknown family (parameter ``"family"``), or transformers missing (the ``[model]`` extra).
    """
    if family not in TINY_FAMILIES:
        raise SeqlabError(N_("family must be one of {tiny_families}; received {family!r}"),
                          tiny_families=', '.join(TINY_FAMILIES), family=family, parameter="family")
    try:
        import transformers
    except ImportError:
        raise SeqlabError(N_("the tiny models need transformers, which is not installed; install it with `pip "
                             "install \"seqlab[model]\"`"), parameter="family") from None
    return TINY_FAMILIES[family](transformers)


@functools.lru_cache(maxsize=len(TINY_FAMILIES))
def build_tiny_lm(family: str, seed: int = 0) -> Any:
    """One tiny family as a causal LM: random weights from ``seed`` (the global RNG is left as it was), float32,
    eager attention, ``eval()``, no gradients; built once per (family, seed) in a process.

    >>> model = build_tiny_lm("mamba")
    >>> type(model).__name__, sum(p.numel() for p in model.parameters())  # the tied embedding counted once
    ('MambaForCausalLM', 17376)

    Args:
        family: a key of :data:`TINY_FAMILIES`. seed: the weights' seed.

    Returns:
        The model (the cache is shared: never train or change it).

    Raises:
        SeqlabError: see :func:`tiny_config`.
    """
    import torch

    from seqlab.layers.pretrained import offline_and_quiet

    config = tiny_config(family)
    config._attn_implementation = "eager"
    from transformers import AutoModelForCausalLM

    with offline_and_quiet(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.eval()
    model.requires_grad_(False)
    return model
