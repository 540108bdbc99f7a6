"""Text in: the built-in texts, reading a file or standard input, tokens, a seeded embedding, and the seed scheme.

The built-in texts' o200k_base tokens ship with the package (made by the tokenizer, checked against it by the tests),
so the README's first command needs no tokenizer load.

Everything seqlab measures starts from a text of T tokens turned into T vectors x_1 … x_T, the
inputs of the recurrence (L1: one step per token, 800 tokens → 800 steps in a row) and of attention
(L2). The built-in Spanish text is about 800 o200k_base tokens, the size the lesson uses; its English
twin is a faithful translation. Data flows one way: bytes → ``Text`` → ``Tokens`` → (T, d_model).

One seed scheme for every front end: seed N gives the input vectors ``embed(tokens, d_model, seed=N)`` and the
weights of each layer a study builds from ``seeded_generator(N, role)`` (its own stream per role), so
``seqlab compare --seed N`` and the web lab's seed N build the same machines on the same vectors.
Inputs a study draws directly are seeded by :func:`seqlab.seeds.input_seed`; the range of a seed is
:data:`seqlab.seeds.MAX_SEED`.

Shape letters: T positions (tokens), d_model embedding width.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import importlib.resources
import json
import os
import re
import sys
import typing
import warnings
from dataclasses import dataclass, field

import torch

from seqlab.errors import Message, SeqlabError, Worded, require_positive_int
from seqlab.i18n import N_

MAX_TEXT_BYTES = 8 * 1024 * 1024  # largest text read_text accepts: 8 MiB
LANGUAGES = ("es", "en")
TOKENIZERS = ("o200k_base", "words")
MAX_SYNTHETIC_TOKENS = 2**22  # 4_194_304 tokens, twice what 8 MiB of Spanish prose gives

_BOM = codecs.BOM_UTF8
_MAX_CONTROL_SHARE = 0.10  # above this share of control characters a text is taken as binary
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # Cc minus \t \n \f \r
_WORDS = re.compile(r"\w+|[^\w\s]")  # a run of letters/digits, or one punctuation mark
_CHUNK_CHARS = 50_000  # ≤ 200_000 UTF-8 bytes, so ≤ bpe_openai's 200_000-token limit per call
_CUT = re.compile(r"(?<=\n)(?=\S)|(?<=\S)(?= [^\W\d_])")  # o200k pre-token boundaries: after a
# newline run, or before " word"; a piece is cut at the last one, so chunks encode as one call would
_MASK64 = (1 << 64) - 1
#: The weight streams of one seed, one per layer a study builds (``seeded_generator(seed, role)``).
SEED_STREAMS = {"recurrence": 1, "attention": 2, "lstm": 3, "gru": 4, "output": 5, "heads": 6}
_SEED_STEP = 1_000_003  # a prime: seed * step + stream gives every (seed, stream) of 32-bit seeds its own value


@dataclass(frozen=True)
class Text:
    """A text to study: where it came from (``source``) and its characters (``content``)."""

    source: str  # "built-in (es)", a file path, or "stdin"
    content: str = field(repr=False)


@dataclass(frozen=True)
class Tokens:
    """T tokens: their ids, the piece of text each one covers, and the tokenizer's name."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    tokenizer: str

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.pieces):
            raise SeqlabError(N_("Tokens needs one piece per id, received {ids_count} ids and {pieces_count} pieces"),
                              ids_count=len(self.ids), pieces_count=len(self.pieces))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        head = ", ".join(repr(p) for p in self.pieces[:6]) + (", …" if len(self) > 6 else "")
        return f"Tokens(tokenizer={self.tokenizer!r}, T={len(self)}, pieces=({head}))"


def builtin_text(lang: str = "es") -> Text:
    """Return the built-in text: a short story about reading a message in order (~800 tokens).

    >>> len(tokenize(builtin_text("es").content))
    835

    Args:
        lang: "es" (the original, Spanish) or "en" (its English translation).

    Returns:
        ``Text`` with source ``"built-in (es)"`` or ``"built-in (en)"``.

    Raises:
        SeqlabError: ``lang`` is not one of ``LANGUAGES``.

    Source: L1 (a text of 800 tokens needs 800 steps in a row).
    """
    if lang not in LANGUAGES:
        raise SeqlabError(N_("lang must be one of {map}, received {lang!r}"), map=', '.join(map(repr, LANGUAGES)),
                          lang=lang)
    path = importlib.resources.files("seqlab").joinpath(f"data/builtin-{lang}.txt")
    source = Worded(f"built-in ({lang})", Message(N_("the built-in text ({language})"), language=lang))
    return Text(source=source, content=path.read_text(encoding="utf-8"))


def read_text(path: str, stdin: typing.TextIO | typing.BinaryIO | None = None) -> Text:
    r"""Read a UTF-8 text file, or standard input when ``path`` is ``"-"``, refusing what is not text.

    The bytes are read first (at most ``MAX_TEXT_BYTES`` + 1; a file is sized with ``stat`` before
    it is opened), a UTF-8 BOM is dropped, and ``\r\n`` / ``\r`` become ``\n``.

    >>> import io
    >>> text = read_text("-", stdin=io.BytesIO("\ufeff¿Llegamos?\r\n".encode()))
    >>> text.source, text.content
    ('stdin', '¿Llegamos?\n')

    Args:
        path: a file path, or ``"-"`` for standard input.
        stdin: the stream read for ``"-"`` (binary or text); ``sys.stdin.buffer`` when None.

    Returns:
        ``Text`` whose source is ``path`` (or ``"stdin"``).

    Raises:
        SeqlabError: missing file, a directory, unreadable, larger than ``MAX_TEXT_BYTES``, empty or
            only whitespace, not valid UTF-8 (the byte offset is named), or binary (NUL bytes, or
            more than 10 % control characters other than tab, newline, form feed, carriage return).
    """
    path = os.fspath(path)
    if path == "-":
        label, source = Message(N_("standard input ('-')")), "stdin"
        stream = sys.stdin.buffer if stdin is None else stdin
        try:
            data = getattr(stream, "buffer", stream).read(MAX_TEXT_BYTES + 1)
        except (OSError, UnicodeDecodeError) as exc:
            raise SeqlabError(N_("cannot read {label}: {exc}; expected UTF-8 text"), label=label, exc=exc) from exc
        if isinstance(data, str):
            data = data.encode("utf-8", errors="surrogatepass")
    else:
        label, source = Message(N_("text file {path!r}"), path=path), path
        if not os.path.exists(path):
            raise SeqlabError(N_("{label} does not exist; expected a UTF-8 text file or '-' for stdin"), label=label)
        if os.path.isdir(path):
            raise SeqlabError(N_("{label} is a directory; expected a UTF-8 text file"), label=label)
        try:
            size = os.stat(path).st_size
            if size > MAX_TEXT_BYTES:
                raise SeqlabError(N_("{label} is {size} bytes; expected at most {max_text_bytes} bytes"), label=label,
                                  size=size, max_text_bytes=MAX_TEXT_BYTES)
            with open(path, "rb") as handle:
                data = handle.read(MAX_TEXT_BYTES + 1)
        except OSError as exc:
            raise SeqlabError(N_("cannot read {label}: {value}; expected a readable UTF-8 text file"), label=label,
                              value=exc.strerror or exc) from exc
    return Text(source=source, content=_decode(data, label))


def _decode(data: bytes, label: str | Message) -> str:
    """Check raw bytes and decode them as UTF-8 text; ``label`` names the input in messages."""
    if len(data) > MAX_TEXT_BYTES:
        raise SeqlabError(N_("{label} is more than {max_text_bytes} bytes; expected at most {max_text_bytes} bytes"),
                          label=label, max_text_bytes=MAX_TEXT_BYTES)
    skipped = len(_BOM) if data.startswith(_BOM) else 0
    data = data[skipped:]
    if not data:
        raise SeqlabError(N_("{label} is empty; expected some UTF-8 text"), label=label)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SeqlabError(N_("{label} looks binary: NUL byte at offset {value}; expected UTF-8 text"), label=label,
                          value=nul + skipped)
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        raise SeqlabError(N_("{label} is not valid UTF-8: byte 0x{bad:02x} at offset {value}; expected UTF-8 text"),
                          label=label, bad=bad, value=exc.start + skipped) from None
    share = len(_CONTROL.findall(content)) / len(content)
    if share > _MAX_CONTROL_SHARE:
        raise SeqlabError(N_("{label} looks binary: {share:.0%} control characters; expected UTF-8 text with at most "
                             "{max_control_share:.0%}"), label=label, share=share, max_control_share=_MAX_CONTROL_SHARE)
    if not content.strip():
        raise SeqlabError(N_("{label} contains only whitespace ({content_count} characters); expected some text"),
                          label=label, content_count=len(content))
    return content.replace("\r\n", "\n").replace("\r", "\n")


#: Tokenizers whose tokens of the built-in texts ship with the package (``data/builtin-<lang>.<tokenizer>.json``).
PACKAGED_TOKENIZERS = ("o200k_base",)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def _packaged(lang: str, tokenizer: str) -> tuple[str, int, Tokens] | None:
    """(the built-in text's SHA-256, its length, its tokens) as packaged, or None when no file ships them."""
    try:
        document = _packaged_document_on_disk(lang, tokenizer)
    except (OSError, ValueError):
        return None
    tokens = Tokens(ids=tuple(document["ids"]), pieces=tuple(document["pieces"]), tokenizer=tokenizer)
    return document["text_sha256"], document["text_length"], tokens


def _packaged_tokens(text: str, tokenizer: str) -> Tokens | None:
    """The tokens of ``text`` read from the package when it is a built-in text whose tokens ship with it (the
    same ids and pieces as the tokenizer gives: tests/test_text.py checks them against it), else None.

    Loading ``bpe_openai`` costs about 1.8 s (it reads every encoding it knows at import); the first command of the
    README reads the built-in text, so its tokens come from a packaged file of a few kilobytes. A packaged file is
    used only when the text's SHA-256 is the one it was made from: an edited built-in text is tokenized live.
    """
    if tokenizer not in PACKAGED_TOKENIZERS:
        return None
    for lang in LANGUAGES:
        packaged = _packaged(lang, tokenizer)
        if packaged is not None and packaged[1] == len(text) and packaged[0] == _sha256(text):
            return packaged[2]
    return None


def _packaged_document_on_disk(lang: str, tokenizer: str = "o200k_base") -> dict[str, typing.Any]:
    """What ``data/builtin-<lang>.<tokenizer>.json`` holds, as read (for the test that compares it to the tokenizer)."""
    path = importlib.resources.files("seqlab").joinpath(f"data/builtin-{lang}.{tokenizer}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def packaged_document(lang: str, tokenizer: str = "o200k_base") -> dict[str, typing.Any]:
    """The packaged form of the built-in text's tokens, made by the tokenizer itself (what
    ``data/builtin-<lang>.<tokenizer>.json`` holds; regenerate it with this function when a built-in text changes).

    >>> document = packaged_document("es")
    >>> len(document["ids"]), document["text_length"]  # the Spanish text: 835 tokens
    (835, 3178)

    Raises:
        SeqlabError: as :func:`builtin_text` and :func:`tokenize`.
    """
    content = builtin_text(lang).content
    tokens = _tokenize(content, tokenizer)
    return {"text_sha256": _sha256(content), "text_length": len(content), "tokenizer": tokenizer,
            "ids": list(tokens.ids), "pieces": list(tokens.pieces)}


@functools.lru_cache(maxsize=1)
def _o200k() -> typing.Any:
    with warnings.catch_warnings():  # bpe_openai 0.1.x loads its data with a deprecated call
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # imported here: only this tokenizer needs it

        return bpe_openai.get_encoding("o200k_base")


def _chunks(text: str) -> typing.Iterator[str]:
    """Cut ``text`` into pieces of ≤ ``_CHUNK_CHARS`` characters at ``_CUT`` boundaries.

    Only a run of ``_CHUNK_CHARS`` characters with no newline and no " word" is cut blindly.
    """
    start = 0
    while len(text) - start > _CHUNK_CHARS:
        cuts = [m.start() for m in _CUT.finditer(text, start + 1, start + _CHUNK_CHARS)]
        end = cuts[-1] if cuts else start + _CHUNK_CHARS
        yield text[start:end]
        start = end
    yield text[start:]


def tokenize(text: str, tokenizer: str = "o200k_base") -> Tokens:
    """Split ``text`` into T tokens with the named tokenizer.

    ``"o200k_base"`` is GPT-4o's byte-level BPE (offline, via ``bpe_openai``); its pieces are the
    text each token completes, so ``"".join(pieces) == text`` (a character split over two tokens
    sits in the piece of the token that ends it). ``"words"`` needs nothing: runs of letters or
    digits and single punctuation marks, ids by first appearance (0, 1, 2, …), so a repeated word
    repeats its id (case matters); whitespace is dropped. The built-in texts' o200k_base tokens ship with the
    package (``data/builtin-<lang>.o200k_base.json``, the tokenizer's own output): reading them needs no tokenizer.

    >>> tokenize("la luz, la luz", "words").ids
    (0, 1, 2, 0, 1)
    >>> tokenize("Barco sin timón.").pieces
    ('Bar', 'co', ' sin', ' tim', 'ón', '.')

    Args:
        text: the characters to split.
        tokenizer: one of ``TOKENIZERS``.

    Returns:
        ``Tokens`` with T ≥ 1 ids and pieces.

    Raises:
        SeqlabError: ``text`` not a str, unknown tokenizer, ``bpe_openai`` missing or failing, or
            no tokens at all.
    """
    if not isinstance(text, str):
        raise SeqlabError(N_("text must be a str, received {text_class}"), text_class=type(text).__name__)
    packaged = _packaged_tokens(text, tokenizer)
    return packaged if packaged is not None else _tokenize(text, tokenizer)


def _tokenize(text: str, tokenizer: str) -> Tokens:
    """:func:`tokenize` by the tokenizer itself (never the packaged tokens)."""
    if tokenizer == "words":
        vocab: dict[str, int] = {}
        pieces = tuple(_WORDS.findall(text))
        ids = tuple(vocab.setdefault(piece, len(vocab)) for piece in pieces)
    elif tokenizer == "o200k_base":
        try:
            enc = _o200k()
            ids = tuple(i for chunk in _chunks(text) for i in enc.encode_ordinary(chunk))
            raw = enc.decode_tokens_bytes(list(ids))
        except Exception as exc:  # ImportError, a missing data file, an encoder limit …
            raise SeqlabError(N_("tokenizer 'o200k_base' failed ({exc_class}: {exc}); install bpe-openai or use "
                                 "tokenizer 'words'"), exc_class=type(exc).__name__, exc=exc) from exc
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pieces = tuple(decoder.decode(b) for b in raw)
    else:
        raise SeqlabError(N_("tokenizer must be one of {map}, received {tokenizer!r}"),
                          map=', '.join(map(repr, TOKENIZERS)), tokenizer=tokenizer)
    if not ids:
        raise SeqlabError(N_("text of {text_count} characters gives no tokens with tokenizer {tokenizer!r}; expected "
                             "at least one token"), text_count=len(text), tokenizer=tokenizer)
    return Tokens(ids=ids, pieces=pieces, tokenizer=tokenizer)


@functools.lru_cache(maxsize=None)
def _builtin_tokens(tokenizer: str, lang: str = "es") -> Tokens:
    return tokenize(builtin_text(lang).content, tokenizer)


def synthetic_source(count: int) -> Worded:
    """The source label of a synthetic text of ``count`` tokens: ``"synthetic (N tokens)"`` as data, worded in the
    output language where it is shown (:func:`seqlab.i18n.format_source`).

    >>> label = synthetic_source(12)
    >>> label, label.localized("es")
    ('synthetic (12 tokens)', 'texto sintético (12 tokens)')
    """
    return Worded(f"synthetic ({count} tokens)", Message(N_("synthetic text ({count} tokens)"), count=count))


def synthetic_tokens(length: int, tokenizer: str = "o200k_base", lang: str = "es") -> Tokens:
    """Return exactly ``length`` tokens: the built-in text's tokens (``lang``), repeated from the start.

    Token t is token ``t % n`` of the built-in text (n = its token count): any T, real token ids.
    ``seqlab compare --tokens`` cycles the Spanish text in either output language, so one command measures one input
    (and prints the same figures) in English and in Spanish.

    >>> len(synthetic_tokens(2000))
    2000

    Args:
        length: T, the number of tokens, in [1, ``MAX_SYNTHETIC_TOKENS``].
        tokenizer: one of ``TOKENIZERS``.
        lang: which built-in text to cycle, ``"es"`` or ``"en"``.

    Raises:
        SeqlabError: ``length`` is not an integer in range, the tokenizer is unknown/unavailable, or
            ``lang`` is not a built-in language.
    """
    require_positive_int("length", length, maximum=MAX_SYNTHETIC_TOKENS)
    base = _builtin_tokens(tokenizer, lang)
    n = len(base)
    return Tokens(ids=tuple(base.ids[t % n] for t in range(length)),
                  pieces=tuple(base.pieces[t % n] for t in range(length)), tokenizer=tokenizer)


def _splitmix64(x: int) -> int:
    """SplitMix64's finaliser: a fixed 64-bit mix, the same in every process (unlike ``hash``)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def embed(tokens: Tokens, d_model: int, seed: int = 0,
          dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Give each token a vector x_t ∈ R^{d_model}: the same id, the same vector, in any run.

    Each distinct id gets d_model i.i.d. N(0, 1) entries from a ``torch.Generator`` seeded with
    splitmix64(splitmix64(seed) xor id), drawn in float32 and cast to ``dtype``. Only the distinct
    ids of this text are drawn: memory is (distinct ids) × d_model, never the tokenizer's
    vocabulary (o200k_base has ~200k ids).

    >>> x = embed(tokenize("la luz, la luz", "words"), d_model=8)
    >>> tuple(x.shape), bool(torch.equal(x[0], x[3]))
    ((5, 8), True)

    Args:
        tokens: T ≥ 1 tokens.
        d_model: width of each vector, an integer ≥ 1.
        seed: any integer; another seed gives other vectors.
        dtype: a floating-point dtype.

    Returns:
        Tensor of shape (T, d_model), dtype ``dtype``, on the CPU.

    Raises:
        SeqlabError: ``d_model`` not a positive integer, ``seed`` not an integer, ``dtype`` not
            floating point, or no tokens.

    Source: L1 and L2 (the inputs x_1 … x_T both machines read).
    """
    require_positive_int("d_model", d_model)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SeqlabError(N_("seed must be an integer, received {seed!r}"), seed=seed)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise SeqlabError(N_("dtype must be a floating-point torch dtype, received {dtype!r}"), dtype=dtype)
    if len(tokens) == 0:
        raise SeqlabError(N_("embed needs at least one token, received 0"))
    ids = torch.tensor(tokens.ids, dtype=torch.int64)  # (T,)
    unique, inverse = torch.unique(ids, return_inverse=True)  # (U,), (T,)
    mixed_seed = _splitmix64(seed & _MASK64)
    rows = torch.empty(len(unique), d_model, dtype=torch.float32)  # (U, d_model)
    for u, token_id in enumerate(unique.tolist()):
        generator = torch.Generator().manual_seed(_splitmix64(mixed_seed ^ (token_id & _MASK64)))
        rows[u] = torch.randn(d_model, generator=generator)
    return rows.to(dtype)[inverse]  # (T, d_model)


def stream_seed(seed: int, role: str | int) -> int:
    """The integer seed of one weight stream of a run's ``seed``: ``(seed · 1_000_003 + stream) mod 2^63``.

    ``role`` names a layer of :data:`SEED_STREAMS` (``"recurrence"`` → 1, ``"attention"`` → 2, ``"lstm"`` → 3,
    ``"gru"`` → 4, ``"output"`` → 5, ``"heads"`` → 6), or is a stream number itself (the check's claims number
    theirs 1 … 13).

    >>> stream_seed(0, "recurrence"), stream_seed(1, "attention"), stream_seed(2, 3)  # 2 * 1_000_003 + 3
    (1, 1000005, 2000009)

    Raises:
        SeqlabError: ``seed`` not an integer, or ``role`` neither a name of :data:`SEED_STREAMS` nor an integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SeqlabError(N_("seed must be an integer, received {seed!r}"), seed=seed)
    if isinstance(role, str):
        if role not in SEED_STREAMS:
            raise SeqlabError(N_("role must be one of {seed_streams} or a stream number, received {role!r}"),
                              seed_streams=', '.join(SEED_STREAMS), role=role)
        stream = SEED_STREAMS[role]
    elif isinstance(role, int) and not isinstance(role, bool):
        stream = role
    else:
        raise SeqlabError(N_("role must be a name or a stream number, received {role!r}"), role=role)
    return (seed * _SEED_STEP + stream) % 2**63


def seeded_generator(seed: int, role: str | int) -> torch.Generator:
    """A fresh CPU ``torch.Generator`` for one layer's weights under a run's ``seed`` (the one seed scheme).

    Every front end builds its layers this way: ``ElmanRNN(d, d, generator=seeded_generator(N, "recurrence"))``
    and ``SelfAttention(d, generator=seeded_generator(N, "attention"))`` are the machines of ``seqlab compare
    --seed N`` and of the web lab's seed N. Weights are drawn in float32; a float64 twin is their ``.double()``.

    >>> seeded_generator(0, "attention").initial_seed()
    2

    Raises:
        SeqlabError: as :func:`stream_seed`.
    """
    return torch.Generator().manual_seed(stream_seed(seed, role))
