"""Where a Hugging Face model keeps its layers, its attention and its position information (L10, L11).

A checkpoint is read by its structure, not by its name: the layer stack is the ``nn.ModuleList`` with as
many blocks as the config's ``num_hidden_layers`` (``encoder.layer`` in BERT, ``h`` in GPT-2, ``layers``
in LLaMA and GPT-NeoX); what comes before it in the model (the embeddings) is layer 0; the attention of a
layer is its innermost submodule whose class name ends in ``Attention``.

The position information is found among the three kinds the common architectures use, and switched off
for the order test of L10 by a forward hook (removed on exit):

* **learned**: a table of position vectors, an ``nn.Embedding`` before the layers named
  ``position_embeddings`` (BERT, RoBERTa, DistilBERT, MiniLM), ``wpe`` (GPT-2) or ``embed_positions``
  (OPT): its output becomes zeros, p_t = 0 for every position t;
* **rotary**: a module whose class name ends in ``RotaryEmbedding`` (LLaMA, Mistral, Qwen, GPT-NeoX), which
  returns (cos, sin) per position: every position gets position 0's pair, the identity rotation
  (cos = 1 times the model's scaling, sin = 0), so queries and keys are no longer turned by position;
* anything else (ALiBi biases, relative position buckets, sinusoids computed inline) is refused with one
  line naming the architecture: there is no single module to switch.

Shapes: B batch, T positions, d widths.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_

#: Names of learned position tables, by architecture family.
LEARNED_NAMES = ("position_embeddings", "wpe", "embed_positions")
LEARNED, ROTARY = "learned", "rotary"


@dataclass(frozen=True)
class PositionSwitch:
    """What carries the positions in a model and where: ``kind`` is ``"learned"`` or ``"rotary"``.

    >>> bert = torch.nn.Module(); bert.embeddings = torch.nn.Module()
    >>> bert.embeddings.position_embeddings = torch.nn.Embedding(8, 4)
    >>> find_position_switch(bert)
    PositionSwitch(kind='learned', modules=('embeddings.position_embeddings',))
    """

    kind: str
    modules: tuple[str, ...]


def layer_stack(model: torch.nn.Module, layers: int) -> str:
    """The path of the ``nn.ModuleList`` that holds the model's ``layers`` blocks.

    >>> net = torch.nn.Module(); net.h = torch.nn.ModuleList([torch.nn.Linear(2, 2)] * 3)
    >>> layer_stack(net, 3)
    'h'

    Raises:
        SeqlabError: no such list, naming the model's class.
    """
    found = [name for name, module in model.named_modules()
             if isinstance(module, torch.nn.ModuleList) and len(module) == layers]
    if not found:
        raise SeqlabError(N_("found no list of {layers} layers in {model_class}; expected a Transformer encoder or "
                             "decoder"), layers=layers, model_class=type(model).__name__, parameter="model")
    return found[0]


def _is_attention(module: torch.nn.Module) -> bool:
    return type(module).__name__.endswith("Attention")


def contains_attention(module: torch.nn.Module) -> bool:
    """The module is, or contains, an attention module (class name ending in ``Attention``)."""
    return any(_is_attention(m) for m in module.modules())


def _is_rotary(module: torch.nn.Module) -> bool:
    return type(module).__name__.endswith("RotaryEmbedding")


def modules_of_interest(model: torch.nn.Module, layers: int) -> list[tuple[str, int]]:
    """(name, layer) for the modules before the layer stack (layer 0) and every block and its submodules.

    Left out: dropouts (the identity in eval mode), rotary tables (they return (cos, sin), not rows), the
    containers that hold the stack, and whatever comes after it (final norm, pooler: stated by the caller).
    """
    stack = layer_stack(model, layers)
    chosen: list[tuple[str, int]] = []
    before = True
    for name, module in model.named_modules():
        if not name or isinstance(module, torch.nn.Dropout) or _is_rotary(module):
            continue
        if name == stack:
            before = False
            continue
        if name.startswith(stack + "."):
            chosen.append((name, int(name[len(stack) + 1:].split(".")[0]) + 1))
        elif before and not stack.startswith(name + "."):
            chosen.append((name, 0))
    return chosen


def attention_module(model: torch.nn.Module, layers: int, layer: int) -> str:
    """The innermost attention module of block ``layer`` (1-based): ``encoder.layer.0.attention.self``
    in BERT, ``h.0.attn`` in GPT-2, ``layers.0.self_attn`` in LLaMA.

    Raises:
        SeqlabError: the block holds no module whose class name ends in ``Attention``.
    """
    prefix = f"{layer_stack(model, layers)}.{layer - 1}"
    block = model.get_submodule(prefix)
    inner = [name for name, module in block.named_modules()
             if _is_attention(module) and not any(_is_attention(m) for m in list(module.modules())[1:])]
    if not inner:
        raise SeqlabError(N_("layer {layer} of {model_class} holds no attention module"), layer=layer,
                          model_class=type(model).__name__, parameter="model")
    return f"{prefix}.{inner[0]}" if inner[0] else prefix


def find_position_switch(model: torch.nn.Module) -> PositionSwitch:
    """Find the learned position table or the rotary embedding of ``model`` (see the module docstring).

    Raises:
        SeqlabError: neither found; the message names the architecture (parameter ``"model"``).
    """
    rotary = tuple(name for name, module in model.named_modules() if _is_rotary(module))
    if rotary:
        return PositionSwitch(ROTARY, rotary)
    learned = tuple(name for name, module in model.named_modules()
                    if isinstance(module, torch.nn.Embedding) and name.rsplit(".", 1)[-1] in LEARNED_NAMES)
    if learned:
        return PositionSwitch(LEARNED, learned)
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    raise SeqlabError(N_("cannot switch the positions off in {model_class}{value}: it has no learned position table "
                         "({learned_names}) and no rotary embedding; seqlab model reads BERT-like, GPT-2-like and "
                         "rotary (LLaMA, GPT-NeoX) models"), model_class=type(model).__name__,
                      value=Message(N_(" (model type {kind!r})"), kind=kind) if kind else "",
                      learned_names=", ".join(LEARNED_NAMES),
                      parameter="model")


def _zeros(_module, _args, output):
    return torch.zeros_like(output)  # (B, T, d) or (1, T, d): p_t = 0


def _identity_rotation(_module, _args, output):
    cos, sin = output[0], output[1]  # (B, T, d_rot) each: positions on dim -2
    first = cos.narrow(-2, 0, 1).expand_as(cos)  # position 0's cos: 1 times the model's scaling
    return (first.clone(), torch.zeros_like(sin), *output[2:])


@contextlib.contextmanager
def without_positions(model: torch.nn.Module) -> Iterator[PositionSwitch]:
    """Switch the model's position information off: learned vectors become 0, rotations the identity.

    Everything else in the model is untouched, so every later layer receives rows that carry no position
    (L10). Hooks are removed on exit, also on error.

    >>> bert = torch.nn.Module(); bert.embeddings = torch.nn.Module()
    >>> bert.embeddings.position_embeddings = torch.nn.Embedding(8, 4)
    >>> with without_positions(bert):
    ...     bert.embeddings.position_embeddings(torch.tensor([[0, 1, 2]])).abs().sum().item()
    0.0

    Yields:
        The :class:`PositionSwitch` that was applied.

    Raises:
        SeqlabError: no switch found (see :func:`find_position_switch`).
    """
    switch = find_position_switch(model)
    hook = _identity_rotation if switch.kind == ROTARY else _zeros
    handles = [model.get_submodule(name).register_forward_hook(hook) for name in switch.modules]
    try:
        yield switch
    finally:
        for handle in handles:
            handle.remove()
