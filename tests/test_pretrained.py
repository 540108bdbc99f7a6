"""seqlab.layers.pretrained: a Hugging Face encoder or decoder read offline — the bundled all-MiniLM-L6-v2's sizes,
checkpoint folders refused by what they lack, configs read from tiny folders written here, one window of text,
right padding. Nothing is downloaded."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.layers import pretrained
from seqlab.layers.pretrained import (
    DEFAULT_MAX_TOKENS,
    MIN_TOKENS,
    EncodedText,
    ModelConfig,
    checkpoint_folder,
    default_window,
    encode,
    load_encoder,
    model_config,
    pad,
)

EXPECTED = "expected a local Hugging Face checkpoint folder (config.json, weights, tokenizer)"


def test_the_bundled_model_sizes():
    assert model_config() == ModelConfig(name="sentence-transformers/all-MiniLM-L6-v2", layers=6, heads=12, d_model=384,
                                         max_positions=512, vocabulary=30_522, architecture="BertModel",
                                         model_type="bert", bundled=True)
    assert checkpoint_folder() == pretrained.model_folder()
    assert (MIN_TOKENS, DEFAULT_MAX_TOKENS) == (3, 512)


@pytest.mark.parametrize("max_positions, window", [(512, 512), (2048, 512), (128, 128), (1, 1)])
def test_the_default_window_is_the_models_maximum_at_most_512(max_positions, window):
    config = dataclasses.replace(model_config(), max_positions=max_positions)
    assert default_window(config) == window


def test_a_folder_is_refused_by_what_it_lacks(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(SeqlabError) as error:
        checkpoint_folder(missing)
    assert str(error.value) == f"{str(missing)!r} is not a folder; {EXPECTED}" and error.value.parameter == "model"
    with pytest.raises(SeqlabError, match=r"has no config.json; "):
        checkpoint_folder(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SeqlabError, match=r"has no weights \(model.safetensors, model.safetensors.index.json, "
                                          r"pytorch_model.bin, pytorch_model.bin.index.json\)"):
        checkpoint_folder(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(SeqlabError, match=r"has no tokenizer \(tokenizer.json, tokenizer_config.json, vocab.txt\)"):
        checkpoint_folder(tmp_path)
    assert checkpoint_folder(tmp_path, tokenizer=False) == str(tmp_path.resolve())
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert checkpoint_folder(tmp_path) == str(tmp_path.resolve())


def folder_with(tmp_path, config):
    config.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    return tmp_path


def test_a_tiny_bert_config_is_read_without_its_weights(tmp_path):
    from transformers import BertConfig

    folder = folder_with(tmp_path / "tiny-bert", BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=16,
                                                            intermediate_size=32, vocab_size=99,
                                                            max_position_embeddings=64, architectures=["BertModel"]))
    assert model_config(folder) == ModelConfig("tiny-bert", 2, 4, 16, 64, 99, "BertModel", "bert", False)


def test_a_decoder_config_without_a_position_table_takes_the_default(tmp_path):
    from transformers import LlamaConfig

    config = LlamaConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=8, intermediate_size=16,
                         vocab_size=50, max_position_embeddings=0)
    got = model_config(folder_with(tmp_path / "tiny-llama", config))
    assert (got.layers, got.heads, got.d_model, got.vocabulary, got.model_type) == (1, 2, 8, 50, "llama")
    assert got.max_positions == DEFAULT_MAX_TOKENS  # 0 is no table: the default
    assert got.architecture == "Llama"  # no saved architecture: the config class's name


def test_an_encoder_decoder_is_refused(tmp_path):
    from transformers import T5Config

    folder = folder_with(tmp_path / "t5", T5Config(num_layers=1, d_model=8, num_heads=2, d_kv=4, d_ff=16,
                                                    vocab_size=32))
    with pytest.raises(SeqlabError, match=r"holds an encoder–decoder model \(T5, model type 't5'\); expected an "
                                          r"encoder or a decoder"):
        model_config(folder)


def test_an_unreadable_config_is_refused_in_one_line(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "vocab.txt").write_text("")
    with pytest.raises(SeqlabError) as error:
        model_config(tmp_path)
    assert str(error.value).startswith(f"{str(tmp_path.resolve())!r} cannot be read as a Hugging Face model: ")
    assert "\n" not in str(error.value)


def test_a_window_of_the_bundled_tokenizer():
    encoder = load_encoder(torch.float32)
    assert load_encoder(torch.float32) is encoder  # once per process, folder and dtype
    window = encode(encoder, "hello world, hello", max_tokens=4)
    assert window.pieces == ("[CLS]", "hello", "world", "[SEP]")
    assert (window.text_pieces, window.kept_pieces, window.special_pieces) == (4, 2, ("[CLS]", "[SEP]"))
    assert window.text_chars == 18 and window.window_chars == 11  # "hello world"
    assert len(window) == 4 and window.ids[0] == encoder.tokenizer.cls_token_id


def test_right_padding_and_its_mask():
    a = EncodedText(ids=(101, 7, 102), pieces=("[CLS]", "x", "[SEP]"), text_pieces=1, kept_pieces=1, window_chars=1,
                    text_chars=1)
    b = EncodedText(ids=(101, 102), pieces=("[CLS]", "[SEP]"), text_pieces=0, kept_pieces=0, window_chars=0,
                    text_chars=0)
    ids, mask = pad([a, b], pad_id=0)
    assert ids.tolist() == [[101, 7, 102], [101, 102, 0]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    with pytest.raises(SeqlabError, match="^expected at least one window to pad, received none$"):
        pad([])


def test_only_float64_and_float32():
    with pytest.raises(SeqlabError, match=r"^dtype must be torch.float64 or torch.float32, received torch.float16$"):
        load_encoder(torch.float16)
