"""The bytes a Hugging Face model's own cache object holds, read from the object itself (issue 24; L1, L2).

A decoder carries what the past left in a cache object that its forward pass returns and takes back. This
module walks every tensor reachable from that object — attributes, dicts, lists, tuples — and counts each
storage once (a view shares its base's bytes, as :func:`seqlab.layers.decoding.state_bytes` counts them), split
by what the tensor is for:

* ``attention_kv`` — keys and values of full attention (transformers' ``DynamicLayer``, ``StaticLayer``):
  (B, H_kv, t, d_h) each, growing with t; latent attention keeps its compressed latent and its rotary key in the
  same two slots, (B, 1, t, d_c) and (B, 1, t, d_R); a layer that reads another layer's keys and values
  (``DummyLayer``) holds ``None`` there, nothing counted; indexed (sparse) attention (``DynamicIndexedLayer``) also
  keeps its indexer's keys, (B, t, d_I), counted here;
* ``sliding_window_kv`` — keys and values of a sliding-window layer (``DynamicSlidingWindowLayer``,
  ``StaticSlidingWindowLayer``): at most w − 1 positions visible, a view of the w-row storage the step's
  concatenation made (the storage is what is held, so what is counted);
* ``convolution`` — a causal convolution's window of past inputs (Mamba's ``conv_states``; RWKV's token-shift
  inputs, a width-2 mix of the previous position);
* ``recurrent`` — a recurrent state (Mamba's SSM state ``recurrent_states``; RWKV's WKV numerator, denominator
  and running maximum).

Tensors that hold no floating-point data (a window length kept as a 0-d ``int64``) are bookkeeping: counted in
:attr:`CacheState.bookkeeping_bytes`, never in the state. A tensor the walk cannot assign to a kind makes the
whole cache unreadable: :func:`read_cache_state` refuses it, naming the types it found, rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import torch

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_

#: The kinds of state, in the order reports list them.
KINDS = ("attention_kv", "sliding_window_kv", "convolution", "recurrent")
#: Attribute names that say what a tensor holds, whatever the class.
_ATTRIBUTE_KINDS = {"conv_states": "convolution", "conv_state": "convolution", "recurrent_states": "recurrent",
                    "ssm_states": "recurrent", "ssm_state": "recurrent", "indexer_keys": "attention_kv"}
#: RWKV's ``state`` list: (B, d, L) tensors, in this order (transformers' ``RwkvModel``).
RWKV_STATE_KINDS = ("convolution", "recurrent", "recurrent", "recurrent", "convolution")
#: How deep the walk goes below the cache object (layers, then their dicts of states).
MAX_DEPTH = 6


@dataclass(frozen=True)
class CacheState:
    """What a cache object holds.

    Attributes:
        by_kind: bytes per kind of :data:`KINDS` (only the kinds present), each storage counted once.
        bookkeeping_bytes: bytes of tensors with no floating-point data (lengths, positions), kept apart.
        visible_bytes: bytes of the state tensors' own elements (numel · element size), which is less than the
            storages' when a tensor is a view of a larger one (a sliding window's last w − 1 rows).
        tensors: how many distinct storages were counted (state and bookkeeping).
        container: the cache object's type name (``"DynamicCache"``, ``"list"``).
        layer_types: the type names of its layers, in order (``("DynamicLayer", "DynamicLayer")``).
        dtype: the floating-point dtype of the state (``"float32"``), several joined by commas
            (``"bfloat16,float32"``: a family that keeps part of its state wider than its weights), or ``""``.
        bytes_by_dtype: the state's bytes per dtype (``{"bfloat16": 256, "float32": 768}``).
        visible_by_kind: ``visible_bytes`` per kind (a window's visible rows apart from full layers' keys).
    """

    by_kind: Mapping[str, int]
    bookkeeping_bytes: int
    visible_bytes: int
    tensors: int
    container: str
    layer_types: tuple[str, ...] = field(default_factory=tuple)
    dtype: str = ""
    bytes_by_dtype: Mapping[str, int] = field(default_factory=dict)
    visible_by_kind: Mapping[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """Bytes of the state, every kind together (bookkeeping left out)."""
        return sum(self.by_kind.values())


def _kind_of(owner: object, name: str) -> str | None:
    """The kind of a tensor found as attribute ``name`` of ``owner`` (None when neither says)."""
    if name in _ATTRIBUTE_KINDS:
        return _ATTRIBUTE_KINDS[name]
    if name in ("keys", "values", "key_cache", "value_cache"):
        return "sliding_window_kv" if "SlidingWindow" in type(owner).__name__ else "attention_kv"
    return None


def _walk(value: object, kind: str | None, owner: object, path: str, depth: int,
          seen: set[int]) -> Iterator[tuple[str, str | None, torch.Tensor]]:
    """(path, kind, tensor) for every tensor reachable from ``value``; a kind is inherited from the attribute
    that led to it (``conv_states[0]`` is a convolution state)."""
    if isinstance(value, torch.Tensor):
        yield path, kind, value
        return
    if depth > MAX_DEPTH or id(value) in seen or isinstance(value, (str, bytes, int, float, bool, torch.nn.Module)):
        return
    seen.add(id(value))
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, kind, owner, f"{path}[{key!r}]", depth + 1, seen)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk(item, kind, owner, f"{path}[{index}]", depth + 1, seen)
    elif hasattr(value, "__dict__"):
        for name, item in vars(value).items():
            yield from _walk(item, kind or _kind_of(value, name), value, f"{path}.{name}", depth + 1, seen)


def _layer_types(cache: object) -> tuple[str, ...]:
    layers = getattr(cache, "layers", None)
    return tuple(type(layer).__name__ for layer in layers) if isinstance(layers, (list, tuple)) else ()


def _describe(cache: object) -> str:
    """The cache's type and its layers' types, for a refusal: ``DynamicCache of FooLayer × 2``."""
    layers = _layer_types(cache)
    if not layers:
        return type(cache).__name__
    counts = {name: layers.count(name) for name in dict.fromkeys(layers)}
    return f"{type(cache).__name__} of " + ", ".join(f"{name} × {n}" for name, n in counts.items())


def read_cache_state(cache: object, kinds: tuple[str, ...] | None = None) -> CacheState:
    """Bytes held by a cache object, per kind, each storage counted once.

    >>> from transformers import DynamicCache
    >>> cache = DynamicCache()
    >>> _ = cache.update(torch.zeros(1, 2, 12, 16), torch.zeros(1, 2, 12, 16), 0)  # (B, H_kv, t, d_h)
    >>> dict(read_cache_state(cache).by_kind)  # 2 · 2 · 12 · 16 · 4
    {'attention_kv': 3072}

    Args:
        cache: the object a forward pass returned (a transformers ``Cache``, or a list/tuple of tensors).
        kinds: for a plain list or tuple of tensors, the kind of each item in order (RWKV's state:
            :data:`RWKV_STATE_KINDS`); None for a cache object whose attributes say it.

    Returns:
        A :class:`CacheState`.

    Raises:
        SeqlabError: a floating-point tensor whose kind neither its attribute nor ``kinds`` gives, or a cache
            with no floating-point tensor at all; the one-line message names the types found
            (parameter ``"model"``).

    Source: lesson claims L1 (a recurrence carries a fixed state) and L2 (attention keeps every key).
    """
    if kinds is not None:
        if not isinstance(cache, (list, tuple)) or len(cache) != len(kinds):
            raise SeqlabError(N_("expected a list of {count} state tensors, received {cache_class}{length}"),
                              count=len(kinds), cache_class=type(cache).__name__,
                              length=Message(N_(" of {count}"), count=len(cache)) if isinstance(cache, (list, tuple))
                              else "", parameter="model")
        found = [(f"[{i}]", kind, item) for i, (item, kind) in enumerate(zip(cache, kinds))]
    else:
        found = list(_walk(cache, None, cache, type(cache).__name__, 0, set()))
    by_kind: dict[str, int] = {}
    bookkeeping = 0
    counted: set[tuple[str, int]] = set()
    dtypes: dict[str, int] = {}
    unknown: list[str] = []
    visible = 0
    visible_by_kind: dict[str, int] = {}
    for path, kind, tensor in found:
        if not isinstance(tensor, torch.Tensor):
            unknown.append(f"{path} ({type(tensor).__name__})")
            continue
        storage = tensor.untyped_storage()
        key = (tensor.device.type, storage.data_ptr() or id(tensor))  # an empty storage has no address
        floating = tensor.is_floating_point() or tensor.is_complex()
        if floating and kind is not None:
            visible += tensor.numel() * tensor.element_size()
            visible_by_kind[kind] = visible_by_kind.get(kind, 0) + tensor.numel() * tensor.element_size()
        if key in counted:
            continue
        if not floating:
            counted.add(key)
            bookkeeping += storage.nbytes()
            continue
        if kind is None:
            unknown.append(f"{path} {tuple(tensor.shape)}")
            continue
        counted.add(key)
        name = str(tensor.dtype).removeprefix("torch.")
        dtypes[name] = dtypes.get(name, 0) + storage.nbytes()
        by_kind[kind] = by_kind.get(kind, 0) + storage.nbytes()
    what = _describe(cache)
    if unknown:
        raise SeqlabError(N_("seqlab cannot read this model's cache: it found {what} holding tensors it cannot "
                             "assign to attention keys/values, a convolution window or a recurrent state "
                             "({unknown}{value})"), what=what, unknown=', '.join(unknown[:3]),
                          value=', …' if len(unknown) > 3 else '', parameter="model")
    if not by_kind:
        raise SeqlabError(N_("seqlab cannot read this model's cache: it found {what} with no floating-point tensor "
                             "reachable from it; expected keys/values, conv_states or recurrent_states"), what=what,
                          parameter="model")
    return CacheState(by_kind={k: by_kind[k] for k in KINDS if k in by_kind}, bookkeeping_bytes=bookkeeping,
                      visible_bytes=visible,
                      tensors=len(counted), container=type(cache).__name__, layer_types=_layer_types(cache),
                      dtype=",".join(sorted(dtypes)), bytes_by_dtype={k: dtypes[k] for k in sorted(dtypes)},
                      visible_by_kind={k: visible_by_kind[k] for k in KINDS if k in visible_by_kind})
