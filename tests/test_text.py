"""Tests for seqlab.text: built-in texts, read_text's refusals, both tokenizers, the seeded embedding."""

import io
import os
import subprocess
import sys

import pytest
import torch

from seqlab import text as text_module
from seqlab.errors import SeqlabError
from seqlab.text import (
    TOKENIZERS,
    Text,
    Tokens,
    builtin_text,
    embed,
    read_text,
    synthetic_tokens,
    tokenize,
)

# --- built-in texts -----------------------------------------------------------------------------

def test_builtin_spanish_is_about_800_o200k_tokens():
    text = builtin_text("es")
    assert text.source == "built-in (es)"
    assert 750 <= len(tokenize(text.content, "o200k_base")) <= 900  # the lesson's "800 tokens" (L1)


def test_builtin_english_twin_is_a_real_text_of_similar_length():
    es, en = builtin_text("es"), builtin_text("en")
    assert en.source == "built-in (en)"
    assert en.content != es.content
    assert 600 <= len(tokenize(en.content, "words")) <= 900
    # a faithful translation: same paragraph count and the same names
    assert en.content.count("\n\n") == es.content.count("\n\n")
    for name in ("Tomasa", "Anselmo", "Sarga", "Elías"):
        assert name in es.content and name in en.content


@pytest.mark.parametrize("lang", ["es", "en"])
def test_builtin_texts_are_clean_utf8_paragraphs(lang):
    content = builtin_text(lang).content
    assert "\r" not in content and "\t" not in content and not content.startswith("\ufeff")
    assert content.count("\n\n") >= 10  # paragraphs separated by blank lines


def test_builtin_text_rejects_unknown_language():
    with pytest.raises(SeqlabError, match=r"'es', 'en'.*'fr'"):
        builtin_text("fr")


# --- tokenize -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["es", "en"])
def test_o200k_pieces_join_back_to_the_text(lang):
    content = builtin_text(lang).content
    tokens = tokenize(content, "o200k_base")
    assert "".join(tokens.pieces) == content
    assert len(tokens.ids) == len(tokens.pieces) == len(tokens)
    assert all(0 <= i < 200_019 for i in tokens.ids)  # o200k_base: ids 0 … 200_018


def test_o200k_round_trip_with_characters_split_over_tokens():
    content = "🦜 ñ 漢字 <|endoftext|> fin"  # multi-byte characters; special-token text stays text
    tokens = tokenize(content)
    assert "".join(tokens.pieces) == content
    assert "" in tokens.pieces  # the parrot's first bytes complete no character on their own


def test_o200k_chunked_encoding_agrees_with_one_call(monkeypatch):
    content = builtin_text("es").content
    whole = tokenize(content)
    monkeypatch.setattr(text_module, "_CHUNK_CHARS", 300)  # cut the text into ~12 pieces
    chunked = tokenize(content)
    assert chunked.ids == whole.ids
    assert "".join(chunked.pieces) == content


def test_o200k_handles_a_text_past_the_encoder_limit():
    content = builtin_text("es").content * 400  # ~1.27 M characters: bpe_openai refuses ≥ 1 M in one call
    tokens = tokenize(content)
    assert len(tokens) >= 400 * 800
    assert "".join(tokens.pieces) == content


def test_words_tokenizer_gives_repeated_words_the_same_id():
    tokens = tokenize("El faro, el faro y el mar.", "words")
    assert tokens.pieces == ("El", "faro", ",", "el", "faro", "y", "el", "mar", ".")
    assert tokens.ids == (0, 1, 2, 3, 1, 4, 3, 5, 6)  # first appearance order; "El" ≠ "el"
    assert tokens.tokenizer == "words"


def test_words_tokenizer_is_unicode_aware():
    assert tokenize("¿Timón? Sí.", "words").pieces == ("¿", "Timón", "?", "Sí", ".")


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_tokenize_refuses_text_without_tokens(tokenizer):
    with pytest.raises(SeqlabError, match=f"no tokens.*{tokenizer}"):
        tokenize("" if tokenizer == "o200k_base" else "   \n ", tokenizer)


def test_tokenize_rejects_unknown_tokenizer():
    with pytest.raises(SeqlabError, match=r"'o200k_base', 'words'.*'gpt2'"):
        tokenize("hola", "gpt2")


def test_o200k_failure_points_to_words(monkeypatch):
    def broken():
        raise ImportError("No module named 'bpe_openai'")

    monkeypatch.setattr(text_module, "_o200k", broken)
    with pytest.raises(SeqlabError, match="use tokenizer 'words'"):
        tokenize("hola", "o200k_base")


def test_tokens_need_one_piece_per_id():
    with pytest.raises(SeqlabError, match="2 ids and 1 pieces"):
        Tokens(ids=(1, 2), pieces=("a",), tokenizer="words")


# --- synthetic_tokens ---------------------------------------------------------------------------

@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("length", [1, 7, 1000, 2500])
def test_synthetic_tokens_has_exactly_the_asked_length(length, tokenizer):
    tokens = synthetic_tokens(length, tokenizer)
    assert len(tokens) == len(tokens.pieces) == length


def test_synthetic_tokens_cycle_the_builtin_text():
    base = tokenize(builtin_text("es").content)
    n = len(base)
    tokens = synthetic_tokens(2 * n + 5)
    assert tokens.ids[:n] == base.ids
    assert tokens.ids[n:2 * n] == base.ids
    assert tokens.ids[2 * n:] == base.ids[:5]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_synthetic_tokens_rejects_bad_length(bad):
    with pytest.raises(SeqlabError, match=f"length .*{bad!r}"):
        synthetic_tokens(bad)


# --- embed --------------------------------------------------------------------------------------

def test_embed_shape_dtype_and_determinism():
    tokens = tokenize(builtin_text("es").content)
    x = embed(tokens, d_model=16, seed=3)
    assert x.shape == (len(tokens), 16) and x.dtype == torch.float32
    assert torch.equal(x, embed(tokens, d_model=16, seed=3))


def test_embed_equal_ids_equal_rows_distinct_ids_different_rows():
    tokens = tokenize("la luz, la luz", "words")  # ids (0, 1, 2, 0, 1)
    x = embed(tokens, d_model=8)
    assert torch.equal(x[0], x[3]) and torch.equal(x[1], x[4])
    assert not torch.equal(x[0], x[1]) and not torch.equal(x[1], x[2])


def test_embed_different_seeds_give_different_rows():
    tokens = tokenize("faro", "words")
    assert not torch.equal(embed(tokens, 8, seed=0), embed(tokens, 8, seed=1))


def test_embed_vector_belongs_to_the_id_not_the_position():
    a = Tokens(ids=(5, 9), pieces=("a", "b"), tokenizer="words")
    b = Tokens(ids=(9, 7, 5), pieces=("b", "c", "a"), tokenizer="words")
    xa, xb = embed(a, 4), embed(b, 4)
    assert torch.equal(xa[0], xb[2]) and torch.equal(xa[1], xb[0])


def test_embed_is_the_same_in_another_process():
    code = ("from seqlab.text import Tokens, embed; "
            "print(embed(Tokens(ids=(42,), pieces=('x',), tokenizer='words'), 3, seed=7).tolist())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # a different str-hash salt must not matter
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout
    here = embed(Tokens(ids=(42,), pieces=("x",), tokenizer="words"), 3, seed=7).tolist()
    assert out.strip() == str(here)


def test_embed_entries_look_standard_normal():
    tokens = Tokens(ids=tuple(range(200)), pieces=("x",) * 200, tokenizer="words")
    x = embed(tokens, d_model=64)  # 200 * 64 = 12_800 draws
    assert abs(x.mean().item()) < 0.05 and abs(x.std().item() - 1.0) < 0.05


def test_embed_memory_does_not_depend_on_the_vocabulary(monkeypatch):
    tokens = Tokens(ids=(199_997, 199_998, 199_999), pieces=("a", "b", "c"), tokenizer="o200k_base")
    drawn = []
    real_randn = torch.randn

    def counted_randn(*size, **kwargs):
        out = real_randn(*size, **kwargs)
        drawn.append(out.numel())
        return out

    monkeypatch.setattr(torch, "randn", counted_randn)
    x = embed(tokens, d_model=1024)
    assert drawn == [1024] * 3  # 3 rows drawn, not a 200_000 × 1024 table
    assert x.shape == (3, 1024)


def test_embed_dtype_casts_the_same_draws():
    tokens = tokenize("la luz", "words")
    x32, x64 = embed(tokens, 8), embed(tokens, 8, dtype=torch.float64)
    assert x64.dtype == torch.float64 and torch.equal(x64.float(), x32)


@pytest.mark.parametrize("kwargs, pattern", [
    ({"d_model": 0}, "d_model .*0"),
    ({"d_model": 4, "seed": 1.5}, "seed .*1.5"),
    ({"d_model": 4, "dtype": torch.int64}, "dtype .*int64"),
])
def test_embed_rejects_bad_arguments(kwargs, pattern):
    with pytest.raises(SeqlabError, match=pattern):
        embed(tokenize("hola", "words"), **kwargs)


# --- read_text ----------------------------------------------------------------------------------

def test_read_text_reads_a_file(tmp_path):
    path = tmp_path / "carta.txt"
    path.write_bytes(b"\xef\xbb\xbfBarco sin tim\xc3\xb3n.\r\nDeriva.\n")  # BOM, CRLF
    text = read_text(str(path))
    assert text == Text(source=str(path), content="Barco sin timón.\nDeriva.\n")


@pytest.mark.parametrize("stream", [io.BytesIO("¿Llegamos?".encode()), io.StringIO("¿Llegamos?")])
def test_read_text_reads_stdin_binary_or_text(stream):
    assert read_text("-", stdin=stream) == Text(source="stdin", content="¿Llegamos?")


def test_read_text_missing_file(tmp_path):
    missing = tmp_path / "no-such.txt"
    with pytest.raises(SeqlabError, match=f"{missing.name}' does not exist"):
        read_text(str(missing))


def test_read_text_directory(tmp_path):
    with pytest.raises(SeqlabError, match=f"{tmp_path.name}' is a directory"):
        read_text(str(tmp_path))


@pytest.mark.parametrize("content, pattern", [
    (b"", "is empty"),
    (b"\xef\xbb\xbf", "is empty"),
    (b"  \n\t \r\n", "only whitespace"),
    (b"\xff\xfe abc", "not valid UTF-8: byte 0xff at offset 0"),
    (b"abc \xc3(", "not valid UTF-8: byte 0xc3 at offset 4"),
    (b"PK\x03\x04\x00\x00text", "binary: NUL byte at offset 4"),
    (bytes(range(1, 9)) * 10 + b"abc", "binary: 96% control characters"),  # 80 of 83
])
def test_read_text_refuses_what_is_not_text(tmp_path, content, pattern):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(SeqlabError, match=f"'{path}' .*{pattern}"):
        read_text(str(path))
    with pytest.raises(SeqlabError, match=f"standard input .*{pattern}"):
        read_text("-", stdin=io.BytesIO(content))


def test_read_text_accepts_a_few_control_characters(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_bytes(b"\x1b[1mfaro\x1b[0m y mar, una linea larga de texto normal\f\n")  # 2 of 48
    assert "faro" in read_text(str(path)).content


def test_read_text_refuses_an_oversized_file(tmp_path, monkeypatch):
    monkeypatch.setattr(text_module, "MAX_TEXT_BYTES", 10)
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * 11)
    with pytest.raises(SeqlabError, match=r"'.*big.txt' is 11 bytes; expected at most 10"):
        read_text(str(path))
    with pytest.raises(SeqlabError, match="standard input .*more than 10 bytes"):
        read_text("-", stdin=io.BytesIO(b"a" * 11))
    assert read_text("-", stdin=io.BytesIO(b"a" * 10)).content == "a" * 10  # the cap itself is fine


def test_read_text_checks_size_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(text_module, "MAX_TEXT_BYTES", 10)
    path = tmp_path / "huge.txt"
    with open(path, "wb") as handle:  # a sparse 1 GiB file: stat says 1 GiB, nothing to read
        handle.truncate(1 << 30)
    with pytest.raises(SeqlabError, match=f"is {1 << 30} bytes"):
        read_text(str(path))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads anything")
def test_read_text_unreadable_file(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("hola")
    path.chmod(0)
    with pytest.raises(SeqlabError, match="cannot read .*secret.txt"):
        read_text(str(path))


def test_read_text_open_failure_is_a_seqlab_error(tmp_path, monkeypatch):
    path = tmp_path / "locked.txt"
    path.write_text("hola")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(text_module, "open", denied, raising=False)  # works even as root
    with pytest.raises(SeqlabError, match="cannot read text file '.*locked.txt': Permission denied"):
        read_text(str(path))


def test_read_text_quijote_chapter(quijote_path):
    text = read_text(str(quijote_path))
    assert "hidalgo" in text.content
    assert len(tokenize(text.content)) > 2000
    assert len(tokenize(text.content, "words")) > 2000


# --- The one seed scheme ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("seed", "role", "expected"), [
    (0, "recurrence", 1), (0, "attention", 2), (1, "lstm", 1_000_006),  # 1 * 1_000_003 + 3
    (5, "gru", 5_000_019), (2, "output", 2_000_011), (2, "heads", 2_000_012), (3, 13, 3_000_022),
    (2**32 - 1, "attention", (2**32 - 1) * 1_000_003 + 2),
])
def test_stream_seed_is_seed_times_1000003_plus_the_stream(seed, role, expected):
    from seqlab.text import seeded_generator, stream_seed

    assert stream_seed(seed, role) == expected
    assert seeded_generator(seed, role).initial_seed() == expected


@pytest.mark.parametrize(("seed", "role", "match"), [(1.0, "recurrence", "seed must be an integer"),
                                                      (True, "recurrence", "seed must be an integer"),
                                                      (1, "mamba", "role must be one of recurrence, attention"),
                                                      (1, 2.0, "role must be a name or a stream number")])
def test_stream_seed_refuses(seed, role, match):
    from seqlab.text import stream_seed

    with pytest.raises(SeqlabError, match=match):
        stream_seed(seed, role)


# --- packaged tokens of the built-in texts ----------------------------------------------------------

@pytest.mark.parametrize("lang", text_module.LANGUAGES)
def test_packaged_builtin_tokens_are_the_tokenizers(lang):
    # two routes: the file shipped in the package and bpe_openai run now on the same text
    content = builtin_text(lang).content
    packaged = text_module._packaged_tokens(content, "o200k_base")
    live = text_module._tokenize(content, "o200k_base")
    assert packaged is not None and packaged == live
    assert len(packaged) == {"en": 744, "es": 835}[lang]
    assert text_module.packaged_document(lang) == text_module._packaged_document_on_disk(lang)


def test_packaged_tokens_serve_only_their_own_text(monkeypatch):
    def no_tokenizer():
        raise AssertionError("the tokenizer was loaded")

    monkeypatch.setattr(text_module, "_o200k", no_tokenizer)
    content = builtin_text("en").content
    assert len(tokenize(content)) == 744  # no tokenizer needed
    edited = content[:-2] + "?\n"  # same length, another text: tokenized live
    assert len(edited) == len(content) and text_module._packaged_tokens(edited, "o200k_base") is None
    assert text_module._packaged_tokens(content, "words") is None
