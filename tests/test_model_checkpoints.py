"""``seqlab model --model DIR``: tiny BERT-, GPT-2- and LLaMA-like checkpoints built on disk (L10, L11).

Each checkpoint has random weights (2 layers, d_model = 32, 2 heads, a 16-word vocabulary) and a word-level
tokenizer, saved with ``save_pretrained`` into a folder once per module; nothing is downloaded. The
command reads them offline as any user's checkpoint, on a padded batch of two texts of different lengths,
and must *measure* what each is: the encoder's attention all-to-all, the decoders' causal; the learned
vectors (BERT's table, GPT-2's ``wpe``) or the rotary rotation (LLaMA) switched off for the order test.
"""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from seqlab.errors import SeqlabError  # noqa: E402
from seqlab.layers.anatomy import find_position_switch, modules_of_interest, without_positions  # noqa: E402
from seqlab.layers.pretrained import encode, load_encoder, pad  # noqa: E402
from seqlab.render.model import model_sentences  # noqa: E402
from seqlab.studies import model_mixing  # noqa: E402
from seqlab.studies.model import inspect_model, measure_attention, working_precision  # noqa: E402
from seqlab.studies.model_order import measure_model_order  # noqa: E402

WORDS = "el perro muerde al cartero la luz entra por ventana un gato".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
LONG, SHORT = "el perro muerde al cartero", "la luz"
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}
#: Mixing measured on the first 6 columns: the long text fills them, the short one is padded there.
SMALL = ("--mixing-tokens", "6", "--max-tokens", "12")
#: Three modules of BERT's layer 1 that the padding tests measure: the token table, an attention, a projection.
MEASURED = ("embeddings.word_embeddings", "encoder.layer.0.attention.self", "encoder.layer.0.attention.self.query")


def _tokenizer(with_specials: bool):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocabulary = {word: i for i, word in enumerate(SPECIALS + WORDS)}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    if with_specials:  # BERT: [CLS] text [SEP], padded with [PAD]
        backend.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                               special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]",
                                       cls_token="[CLS]", sep_token="[SEP]")
    # GPT-2 and LLaMA: no special tokens around a text and no padding token (the command pads with [SEP])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="[SEP]")


def _model(kind: str):
    from transformers import (BertConfig, BertModel, BloomConfig, BloomModel, GPT2Config, GPT2Model, LlamaConfig,
                              LlamaModel, ModernBertConfig, ModernBertModel)

    torch.manual_seed(0)
    n = len(SPECIALS) + len(WORDS)
    if kind == "bert":
        return BertModel(BertConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=64, max_position_embeddings=64))
    if kind == "gpt2":
        return GPT2Model(GPT2Config(vocab_size=n, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=3,
                                    eos_token_id=3))
    if kind == "llama":
        return LlamaModel(LlamaConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                                      bos_token_id=3, eos_token_id=3, pad_token_id=None))
    if kind == "modernbert":  # a rotary encoder; larger weights so that the rotation shows at 2 layers
        return ModernBertModel(ModernBertConfig(vocab_size=n, hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, pad_token_id=0,
                                                bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3,
                                                global_attn_every_n_layers=1, initializer_range=0.5))
    return BloomModel(BloomConfig(vocab_size=n, hidden_size=32, n_layer=2, n_head=2, bos_token_id=3,
                                  eos_token_id=3, pad_token_id=0))  # ALiBi: no module carries the positions


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """kind -> folder of a saved tiny checkpoint with its tokenizer."""
    root = tmp_path_factory.mktemp("checkpoints")
    folders = {}
    for kind in ("bert", "gpt2", "llama", "bloom", "modernbert"):
        folder = root / f"tiny-{kind}"
        _model(kind).save_pretrained(folder)
        _tokenizer(kind in ("bert", "modernbert")).save_pretrained(folder)
        folders[kind] = str(folder)
    return folders


@pytest.fixture(scope="module")
def cli(checkpoints):
    from typer.testing import CliRunner

    from seqlab.cli import app

    def run(*args: str):
        return CliRunner().invoke(app, ["model", *args], env=CLI_ENV)

    return run


@pytest.fixture(scope="module")
def reports(cli, checkpoints):
    """kind -> the command's JSON on the padded batch (LONG, SHORT), each checkpoint run once."""
    found = {}
    for kind in ("bert", "gpt2", "llama"):
        result = cli("--model", checkpoints[kind], "--text", LONG, "--text", SHORT, *SMALL, "--json")
        assert result.exit_code == 0, result.output
        found[kind] = json.loads(result.output)
    return found


# --- Classified by measurement: encoder all-to-all, decoders causal --------------------------------------

@pytest.mark.parametrize(("kind", "pattern", "switch"), [
    ("bert", "all-to-all", "learned: embeddings.position_embeddings"),
    ("gpt2", "causal", "learned: wpe"),
    ("llama", "causal", "rotary: rotary_emb"),
])
def test_modules_are_classified_by_measurement(reports, kind, pattern, switch):
    data = reports[kind]
    assert data["kind"] == pattern and data["position_switch"] == switch and data["unmeasured"] == []
    mixing = [m for m in data["modules"] if m["mixes"]]
    # 2 layers: the block, and the attention inside it (BERT: BertAttention and BertSelfAttention) per layer
    assert {m["layer"] for m in mixing} == {1, 2} and len(mixing) == (6 if kind == "bert" else 4)
    for module in data["modules"]:
        assert module["mixes"] == module["contains_attention"], module["name"]
        assert module["patterns"] == ([pattern] * 2 if module["mixes"] else ["per-row"] * 2), module["name"]


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_padded_positions_are_never_measured(reports, kind):
    data = reports[kind]
    lengths = [len(window["ids"]) for window in data["windows"]]
    # BERT adds [CLS] and [SEP]; GPT-2 and LLaMA add nothing. The short text is padded up to the long one.
    assert lengths == ([7, 4] if kind == "bert" else [5, 2]) and data["padded_T"] == lengths[0]
    measured = [min(length, data["mixing_tokens"]) for length in lengths]
    assert all(module["positions"] == measured for module in data["modules"])
    assert len(data["attention"]["weights"]) == lengths[0]


def test_the_padded_row_measures_as_the_sequence_alone(checkpoints):
    """Two routes: the short text inside the padded batch, and alone (no padding at all)."""
    encoder = load_encoder(torch.float64, checkpoints["bert"])
    windows = [encode(encoder, LONG), encode(encoder, SHORT)]
    ids, mask = pad(windows, encoder.pad_id)  # (2, 7): the short row has 3 padded positions
    batch, _ = model_mixing.measure_mixing(encoder, ids, mask, names=MEASURED)
    alone, _ = model_mixing.measure_mixing(encoder, ids[1:, :4], mask[1:, :4], names=MEASURED)
    assert [m.patterns[1] for m in batch] == [m.pattern for m in alone] == ["per-row", "all-to-all", "per-row"]
    assert all(m.positions == (7, 4) for m in batch) and all(m.positions == (4,) for m in alone)


def test_counting_padded_rows_would_change_the_verdict(checkpoints, monkeypatch):
    """The measurement made wrong (no crop to the real positions): a padded query row reads the real keys,
    the short sequence's attention is no longer all-to-all, and the encoder is no longer classified as one."""
    encoder = load_encoder(torch.float64, checkpoints["bert"])
    ids, mask = pad([encode(encoder, LONG), encode(encoder, SHORT)], encoder.pad_id)
    monkeypatch.setattr(model_mixing, "crop", lambda measured, n: measured)
    rows, _ = model_mixing.measure_mixing(encoder, ids, mask, names=MEASURED)
    (attention,) = [m for m in rows if m.kind == "BertSelfAttention"]
    assert attention.patterns[0] == "all-to-all" and attention.patterns[1] != "all-to-all"
    assert attention.pattern == model_mixing.DIFFERS and attention.positions == (7, 7)


@pytest.fixture(scope="module")
def decoder_result(checkpoints):
    return inspect_model([LONG, SHORT], model=checkpoints["gpt2"], mixing_tokens=4, max_tokens=8)


def test_the_kind_and_its_sentence_follow_the_measured_patterns(decoder_result):
    result = decoder_result
    (said,) = [s for s in model_sentences(result, "en") if "L11" in s]
    assert result.kind == "causal" and said.startswith("As the lesson says of a decoder (L11)")
    # one attention measured all-to-all instead: the model is no longer one kind, and the sentence says so
    wrong = [dataclasses.replace(m, pattern="all-to-all", patterns=("all-to-all", "all-to-all"))
             if m.mixes and m.layer == 2 else m for m in result.modules]
    shown = dataclasses.replace(result, modules=tuple(wrong))
    (said,) = [s for s in model_sentences(shown, "en") if "L11" in s]
    assert shown.kind == "mixed" and said.startswith("Not one pattern (L11)")
    assert "do not all mix the same way: causal; all-to-all" in said and " or " not in said  # the patterns found
    # the decoder's order sentence holds only while shuffling changes its last layer with the positions off
    off = result.order_without_positions
    assert not off.depths[-1].holds and off.depths[0].holds  # the embeddings only move; the mask tells order
    (said,) = [s for s in model_sentences(result, "en") if "L10" in s]
    assert said.startswith("As the lesson says of a decoder (L10)")
    fixed = dataclasses.replace(off, depths=(*off.depths[:-1], dataclasses.replace(off.depths[-1], holds=True,
                                                                                   verdict="holds")))
    (said,) = [s for s in model_sentences(dataclasses.replace(result, order_without_positions=fixed), "en")
               if "L10" in s]
    assert said.startswith("Not as the lesson says (L10)")
    # the window sentence names the special tokens the tokenizer really added: none for this GPT-2, and the
    # batch's real lengths, padded to the longest
    window = model_sentences(result, "en")[0]
    assert "T = 5 positions with no special tokens" in window and "of 5, 2 positions" in window
    assert "padded to 5" in window
    bos = dataclasses.replace(result.windows[0], special_pieces=("<s>",))
    assert "T = 5 positions with <s> (" in model_sentences(dataclasses.replace(
        result, windows=(bos, *result.windows[1:])), "en")[0]


# --- Order (L10): the switch found per architecture ---------------------------------------------------------

@pytest.mark.parametrize(("kind", "off_holds"), [("bert", True), ("gpt2", False), ("llama", False)])
def test_order_with_positions_off_and_on(reports, kind, off_holds):
    off, on = reports[kind]["order_without_positions"], reports[kind]["order_with_positions"]
    assert off["depths"][0]["holds"]  # the token table alone only moves rows
    assert all(depth["holds"] for depth in off["depths"]) is off_holds  # the causal mask tells a decoder the order
    assert not on["depths"][-1]["holds"] and len(on["sequences"]) == 2


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_the_switch_makes_the_last_row_blind_to_the_order_before_it(checkpoints, kind):
    """Causal attention without positions reads its prefix as a set: shuffling the tokens before the last one
    leaves the last row of layer 1 unchanged; with the positions on, it changes."""
    encoder = load_encoder(torch.float64, checkpoints[kind])
    ids = torch.tensor([encode(encoder, LONG).ids])  # (1, 5)
    shuffled = ids[:, [2, 0, 3, 1, 4]]

    def last_row(x):
        return encoder.model(input_ids=x, output_hidden_states=True).hidden_states[1][0, -1]

    with torch.no_grad():
        with without_positions(encoder.model) as switch:
            blind = (last_row(shuffled) - last_row(ids)).abs().max().item()
        seeing = (last_row(shuffled) - last_row(ids)).abs().max().item()
    # LLaMA's eager softmax runs in float32 even in a float64 model: 1e-6 is well above its rounding
    assert blind < 1e-6 and seeing > 1e-4, (switch, blind, seeing)


def test_a_rotary_encoder_is_judged_at_the_precision_its_softmax_runs_in(checkpoints, decoder_result):
    """ModernBERT's eager softmax runs in float32 inside a float64 model: measured from α's row sums, the order
    test judges its layers at float32, where a shuffle with the rotation off is within rounding, not a change."""
    encoder = load_encoder(torch.float64, checkpoints["modernbert"])
    ids, mask = pad([encode(encoder, LONG)], encoder.pad_id)
    attention = measure_attention(encoder, ids, 1, 1, mask=mask)
    assert attention.reach_scope == "module" and 1e-9 < attention.max_row_sum_error < 1e-6
    working = working_precision(attention, torch.float64)
    assert working == torch.float32 and working_precision(decoder_result.attention, torch.float64) == torch.float64
    off = measure_model_order(encoder, ids, mask, positions=False, working=working)
    on = measure_model_order(encoder, ids, mask, positions=True, working=working)
    assert [row.verdict for row in off.depths] == ["holds", "cannot tell at float32", "cannot tell at float32"]
    assert on.depths[1].verdict == "does not hold" and on.depths[1].max_abs_change > 1e3 * on.depths[1].tolerance
    # judged at float64 instead (the softmax's precision not measured), rounding would read as a change
    wrong = measure_model_order(encoder, ids, mask, positions=False)
    assert wrong.depths[1].verdict == "does not hold" and wrong.depths[1].max_abs_change < off.depths[1].tolerance
    shown = dataclasses.replace(decoder_result, order_without_positions=off, order_with_positions=on,
                                softmax_dtype="float32")
    (said,) = [s for s in model_sentences(shown, "en") if "L10" in s]
    assert said.startswith("The order test cannot tell (L10): this model computes its softmax in float32")


def test_an_architecture_without_a_switch_is_refused_naming_it(cli, checkpoints):
    encoder = load_encoder(torch.float64, checkpoints["bloom"])
    with pytest.raises(SeqlabError, match="BloomModel .model type 'bloom'."):
        find_position_switch(encoder.model)
    result = cli("--model", checkpoints["bloom"], "--text", LONG, "--json")
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output
    assert errors[0].startswith("Error: Invalid value for '--model': cannot switch the positions off in BloomModel")


def test_modules_of_interest_follow_the_layer_stack(checkpoints):
    encoder = load_encoder(torch.float64, checkpoints["llama"])
    chosen = modules_of_interest(encoder.model, 2)
    assert chosen[0] == ("embed_tokens", 0) and ("layers.1.self_attn", 2) in chosen
    assert not any(name.startswith(("norm", "rotary_emb")) for name, _ in chosen)  # after the stack, not rows


# --- The command: bad folders, text options, Spanish ------------------------------------------------------------

def _config_only(tmp_path, config):
    folder = tmp_path / "only-config"
    config.save_pretrained(folder)
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "tokenizer.json").write_text("{}")
    return str(folder)


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda tmp: str(tmp / "missing"), "is not a folder; expected a local Hugging Face checkpoint folder"),
    (lambda tmp: str(tmp), "has no config.json"),
    (lambda tmp: (tmp / "config.json").write_text('{"model_type": "no-such-model"}') and str(tmp),
     "has no weights"),
    (lambda tmp: _config_only(tmp, transformers.T5Config(num_layers=1, d_model=8)),
     "holds an encoder–decoder model (T5"),
    (lambda tmp: _config_only(tmp, transformers.PretrainedConfig()), "cannot be read as a Hugging Face model"),
])
def test_a_bad_model_folder_exits_2_with_one_line(cli, tmp_path, make, fragment):
    result = cli("--model", make(tmp_path), "--text", LONG)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    assert errors[0].startswith("Error: Invalid value for '--model': ") and fragment in errors[0], errors[0]


@pytest.mark.parametrize(("args", "option", "fragment"), [
    (("--text", "a", "somefile.txt"), "--text", "give FILE ('somefile.txt') or --text, not both"),
    (("--text", "x") * 9, "--text", "expected 1 to 8 texts, received 9"),
    (("--layer", "3"), "--layer", "expected an integer in [1, 2] (the model has 2 layers), received 3"),
    (("--max-tokens", "65"), "--max-tokens", "(the model reads at most 64 positions), received 65"),
    (("--text", "luz"), "--text", "text 1 gives 1 position for tiny-gpt2; expected at least 2"),
])
def test_option_errors_name_the_checkpoints_ranges(cli, checkpoints, args, option, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "somefile.txt").write_text("a file that exists, so that the two sources clash", encoding="utf-8")
    result = cli("--model", checkpoints["gpt2"], *(args if "--text" in args else ("--text", LONG, *args)))
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert errors[0].startswith(f"Error: Invalid value for '{option}'") and fragment in errors[0], errors[0]


def test_lines_of_a_file_are_one_padded_batch_in_spanish(cli, checkpoints, tmp_path):
    text = tmp_path / "dos.txt"
    text.write_text(f"{LONG}\n\n{SHORT}\n", encoding="utf-8")
    result = cli("--model", checkpoints["gpt2"], str(text), "--lines", *SMALL, "--lang", "es", "--out",
                 str(tmp_path / "mapas"))
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "Como dice la lección de un decoder (L11)" in flat and "Como dice la lección de un decoder (L10)" in flat
    assert "primera de 2 secuencias" in flat and (tmp_path / "mapas" / "attention-layer1-head1.png").is_file()
    assert "(primeras 5 posiciones de cada una de las 2 ventanas)" in flat  # 6 asked, the longer window has 5


def test_a_text_of_one_repeated_token_is_measured(cli, checkpoints):
    """Shuffling "w w w" gives the same ids back: both order passes read one input, and the run still reports."""
    word = LONG.split()[0]
    result = cli("--model", checkpoints["gpt2"], "--text", f"{word} {word} {word}", *SMALL, "--json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and json.loads(result.output)["kind"] == "causal"


# --- Sentences chosen from the figures they state; refusals name what was found (issue 27) ---------------------

def _mistral(window: int | None):
    from transformers import MistralConfig, MistralModel

    torch.manual_seed(0)
    return MistralModel(MistralConfig(vocab_size=len(SPECIALS) + len(WORDS), hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, intermediate_size=64,
                                      max_position_embeddings=64, sliding_window=window, bos_token_id=3,
                                      eos_token_id=3, pad_token_id=None))


@pytest.fixture(scope="module")
def windowed(tmp_path_factory):
    """The same tiny Mistral weights saved twice: a sliding window of 2 positions, and full causal attention."""
    folders = {}
    for name, window in (("window", 2), ("full", None)):
        folder = tmp_path_factory.mktemp(f"mistral-{name}")
        _mistral(window).save_pretrained(folder)
        _tokenizer(False).save_pretrained(folder)
        folders[name] = str(folder)
    return folders


def _l4(result, lang):
    return [s for s in model_sentences(result, lang) if "(L4)" in s or "‖∂" in s]


def test_a_weight_of_exactly_zero_is_no_path(windowed):
    """α_T1 = 0 measured under a sliding window: the field and both sentences say "no path"; with full attention
    the same weights give α_T1 > 0 and the one-weight sentence comes back."""
    from rich.console import Console

    from seqlab.render.model import mixing_table

    result = inspect_model(LONG, model=windowed["window"], mixing_tokens=5)  # T = 5 > the window of 2
    a = result.attention
    assert a.alpha_T1 == 0.0 and a.attention_steps == 0 and a.reach_T1 == 0.0 and a.reach_scope == "module"
    first, reach = _l4(result, "en")
    assert first.startswith("Not as the lesson says (L4): in layer 1, head 1, position 1 (el) has no path into the "
                            "output of position 5 (cartero): its weight α_T1 is exactly 0")
    assert "through one weight" not in first and "W_hh" not in first
    assert reach.startswith("Measured backwards: ‖∂y_T/∂x_1‖ of that layer's attention module (layers.0.self_attn,")
    assert "is exactly 0 as well" in reach
    es_first, es_reach = _l4(result, "es")
    assert es_first.startswith("No como dice la lección (L4): en la capa 1, cabeza 1, la posición 1 (el) no tiene "
                               "camino") and "también es exactamente 0" in es_reach
    # the window's modules: their strength is the smallest over the pairs they connect, never "≥ 0"
    windowed_modules = [m for m in result.modules if m.mixes]
    assert windowed_modules and all(m.pattern in ("band", "partial") and m.min_off_diagonal > 0
                                    for m in windowed_modules)
    table = Console(width=200, file=io.StringIO(), color_system=None)
    table.print(mixing_table(result, "en"))
    rows = [line for line in table.file.getvalue().splitlines()
            if line.startswith(("│ (the whole layer) ", "│ self_attn "))]
    assert len(rows) == 2  # the whole layer and its attention
    assert rows and all("≥ 0 " not in row + " " and "≥ " in row for row in rows)
    # the same weights without the window: α_T1 > 0, one weight on the path
    ids = torch.tensor([result.windows[0].ids])
    full = measure_attention(load_encoder(torch.float64, windowed["full"]), ids, 1, 1)
    assert full.alpha_T1 > 0 and full.attention_steps == 1 and full.reach_T1 > 0
    shown = dataclasses.replace(result, attention=full)
    first, reach = _l4(shown, "en")
    assert first.startswith("Layer 1, head 1 (L4): position 1 (el) enters the output of position 5 (cartero) "
                            "through one weight, α_T1 = ") and "4 products by W_hh" in first
    assert "not zero" in reach and "exactly 0" not in reach
    assert _l4(shown, "es")[0].startswith("Capa 1, cabeza 1 (L4): la posición 1 (el) entra en la salida")


def test_a_saved_t5_encoder_is_refused_by_its_own_name(cli, tmp_path):
    from transformers import T5Config, T5EncoderModel

    folder = tmp_path / "tiny-t5-encoder"
    T5EncoderModel(T5Config(vocab_size=len(SPECIALS) + len(WORDS), d_model=16, d_ff=32, num_layers=2, num_heads=2,
                            d_kv=8)).save_pretrained(folder)
    _tokenizer(False).save_pretrained(folder)
    assert type(load_encoder(torch.float64, str(folder)).model).__name__ == "T5EncoderModel"  # not T5Model
    result = cli("--model", str(folder), "--text", LONG)
    errors = [line for line in " ".join(result.output.split()).split("Error: ")[1:]]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert errors[0].startswith("Invalid value for '--model': cannot switch the positions off in T5EncoderModel "
                                "(model type 't5')") and "T5Model" not in errors[0]


def test_a_tokenizer_rebuilt_as_byte_level_bpe_is_blamed_not_the_text(cli, checkpoints, tmp_path):
    import shutil

    folder = tmp_path / "tiny-gpt2-as-bpe"
    shutil.copytree(checkpoints["gpt2"], folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "GPT2Tokenizer"}))
    encoder = load_encoder(torch.float64, str(folder))
    with pytest.raises(SeqlabError, match="its tokenizer.json holds a WordLevel tokenizer, which transformers "
                                          r"rebuilt as a byte-level BPE for the class tokenizer_config.json names "
                                          r"\(GPT2Tokenizer\)") as refused:
        encode(encoder, LONG)
    assert refused.value.parameter == "model" and "gives no word pieces" not in str(refused.value)
    flat = " ".join(cli("--model", str(folder), "--text", LONG).output.split())
    assert "Error: Invalid value for '--model': the tokenizer of tiny-gpt2-as-bpe (GPT2Tokenizer) gives no pieces " \
           "even for words of its own vocabulary ('el', 'perro', 'muerde')" in flat
    # the tokenizer as saved reads its words: a text of blanks alone is the text's fault
    with pytest.raises(SeqlabError, match="the text .3 characters. gives no word pieces") as blank:
        encode(load_encoder(torch.float64, checkpoints["gpt2"]), "   ")
    assert blank.value.parameter == "text"


# --- Patterns named with their parameters (issue 38, item 10) ---------------------------------------------------

@pytest.fixture(scope="module")
def window_of_3(tmp_path_factory):
    """``seqlab model`` on a tiny Mistral saved with ``sliding_window=3`` (built from its config class)."""
    folder = tmp_path_factory.mktemp("mistral-window-3")
    _mistral(3).save_pretrained(folder)
    _tokenizer(False).save_pretrained(folder)
    return inspect_model(LONG, model=str(folder), mixing_tokens=5)


def test_a_sliding_window_checkpoint_names_its_band_and_width(window_of_3):
    """Every mixing module reads the causal band of width 3, measured: the kind is "band", the Figure-1 sentence
    names the band and its width (no either-or), and the order sentence says the mask tells the order."""
    from seqlab.measure.mixing import Band

    result = window_of_3
    assert result.kind == "band" and result.band == Band(2, 0) and result.band.width == 3
    (said,) = [s for s in model_sentences(result, "en") if "L11" in s]
    assert said.startswith("As the lesson says (L11)") and "each reads the same causal band of width 3 " \
        "(j − 3 < i ≤ j), the window its attention is restricted to" in said
    assert " or " not in said
    (order,) = [s for s in model_sentences(result, "en") if "L10" in s]
    assert order.startswith("As the lesson says of a masked attention (L10)") and "causal band of width 3" in order
    (es,) = [s for s in model_sentences(result, "es") if "L11" in s]
    assert "cada uno lee la misma banda causal de anchura 3 (j − 3 < i ≤ j)" in es


def test_the_band_sentence_follows_the_measured_band(window_of_3):
    """Patch the measurement: one module reading a band of width 4 -> no single band, both named with their widths;
    every module per row -> nothing mixes; a mixing module without attention -> counted and said."""
    from seqlab.measure.mixing import Band

    result = window_of_3
    wider = [dataclasses.replace(m, band=Band(3, 0)) if m.mixes and m.layer == 2 else m for m in result.modules]
    shown = dataclasses.replace(result, modules=tuple(wider))
    (said,) = [s for s in model_sentences(shown, "en") if "L11" in s]
    assert shown.kind == "mixed" and shown.band is None
    assert said.startswith("Not one pattern (L11)") and "causal band of width 3 (j − 3 < i ≤ j); causal band of " \
        "width 4 (j − 4 < i ≤ j)" in said
    still = [dataclasses.replace(m, mixes=False, pattern="per-row", patterns=("per-row",), band=None)
             for m in result.modules]
    (said,) = [s for s in model_sentences(dataclasses.replace(result, modules=tuple(still)), "en") if "L11" in s]
    assert said.startswith("Not as the lesson says (L11): none of the 27 modules measured mixes positions")
    stray = [dataclasses.replace(m, contains_attention=False) if m.name == "layers.0" else m for m in result.modules]
    (said,) = [s for s in model_sentences(dataclasses.replace(result, modules=tuple(stray)), "en") if "L11" in s]
    assert "1 mix positions without containing an attention and 0 contain an attention" in said
