"""``seqlab model`` on a padded batch under a sliding window: a query with every key masked (issue 38).

Under a window of w, a padded position more than w − 1 past a sequence's last real position reads padding only:
every key of its query is masked. An eager softmax of a row of −inf is NaN, and the next layer's weighted sum
α V carries it into the *real* rows (0 · NaN) although their weight on the padded key is exactly 0. The rule for
the kind is PyTorch's ``_safe_softmax`` (:class:`~seqlab.studies.model_mixing.KeylessRows`): such a row's weights
are 0, it contributes nothing, and the report names it. Two families of the kind, built from their transformers
config classes with tiny random weights (Mistral and Gemma-2, ``sliding_window=3``), saved and read offline.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")

from seqlab.layers.pretrained import encode, load_encoder, pad  # noqa: E402
from seqlab.render.model import model_json, model_sentences  # noqa: E402
from seqlab.studies.model import inspect_model  # noqa: E402
from seqlab.studies.model_mixing import KeylessRows, keyless_positions  # noqa: E402

WORDS = "el perro muerde al cartero la luz entra por ventana un gato".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
#: 7 and 2 word pieces: the short one is padded at positions 3–7; under a window of 3, 5–7 read padding only.
LONG, SHORT = "el perro muerde al cartero la luz", "la luz"
WINDOW = 3


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(SPECIALS + WORDS)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="[SEP]")


def _model(family: str):
    from transformers import Gemma2Config, Gemma2Model, MistralConfig, MistralModel

    torch.manual_seed(0)
    sizes = dict(vocab_size=len(SPECIALS) + len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64, sliding_window=WINDOW,
                 bos_token_id=3, eos_token_id=3, pad_token_id=None)
    if family == "mistral":
        return MistralModel(MistralConfig(**sizes))
    return Gemma2Model(Gemma2Config(**sizes, head_dim=16, layer_types=["sliding_attention"] * 2))


@pytest.fixture(scope="module", params=["mistral", "gemma2"])
def folder(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"{request.param}-window-{WINDOW}")
    _model(request.param).save_pretrained(path)
    _tokenizer().save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def batch(folder):
    encoder = load_encoder(torch.float64, folder)
    ids, mask = pad([encode(encoder, LONG), encode(encoder, SHORT)], encoder.pad_id)  # (2, 7) each
    return encoder, ids, mask


def test_safe_softmax_rule_zeroes_only_rows_without_a_key():
    """Rows of −inf get weights 0 (PyTorch's _safe_softmax); every other row is the softmax's, bit for bit."""
    x = torch.tensor([[[0.5, -1.0, -math.inf], [-math.inf, -math.inf, -math.inf], [2.0, 0.0, 1.0]]],
                     dtype=torch.float64)  # (B = 1, T_q = 3, T_k = 3)
    plain = torch.softmax(x, dim=-1)
    assert plain[0, 1].isnan().all()
    with KeylessRows(batch=1) as rows:
        safe = torch.softmax(x, dim=-1)
    assert safe[0, 1].tolist() == [0.0, 0.0, 0.0] and torch.equal(safe[0, [0, 2]], plain[0, [0, 2]])
    assert rows.met == 1 and rows.positions == {(0, 1)}
    with KeylessRows() as rows:  # no row without a key: nothing changed, nothing met
        assert torch.equal(torch.softmax(x[:, [0, 2]], dim=-1), plain[:, [0, 2]])
    assert rows.met == 0
    from seqlab.studies.model_mixing import keyless_rule

    # the later passes of a batch take the rule where its first pass met a keyless row, and only there
    assert type(keyless_rule(rows)).__name__ == "nullcontext"
    with KeylessRows() as met:
        torch.softmax(x, dim=-1)
    assert met.met == 1 and isinstance(keyless_rule(met), KeylessRows)


def test_the_kind_poisons_real_rows_and_the_rule_gives_the_sequence_alone(batch):
    """Without the rule, the padded queries 5–7 of sequence 2 are NaN after layer 1 and its two real rows are NaN
    after layer 2; with it, every row is finite and the real rows equal sequence 2 run alone (two routes)."""
    encoder, ids, mask = batch
    with torch.no_grad():
        plain = encoder.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        with KeylessRows():
            safe = encoder.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        alone = encoder.model(input_ids=ids[1:, :2], output_hidden_states=True).hidden_states
    assert plain[1][1].isnan().any(dim=-1).tolist() == [False] * 4 + [True] * 3  # positions 5–7: padding only
    assert plain[2][1, :2].isnan().all()  # 0 · NaN in α V: the real rows of the next layer
    assert all(bool(h.isfinite().all()) for h in safe)
    for depth in range(len(safe)):
        torch.testing.assert_close(safe[depth][1, :2], alone[depth][0], rtol=0, atol=1e-12)
        torch.testing.assert_close(safe[depth][0], plain[depth][0], rtol=0, atol=0)  # the full sequence: untouched
    assert keyless_positions(encoder, ids, mask) == ((), (4, 5, 6))  # 0-based: positions 5–7


def test_one_probe_decides_the_rule_for_every_pass_of_the_batch(batch):
    """The attention map and the order test read the keyless-row rule from the batch's one probe (what inspect_model
    passes them) or probe themselves: the same figures either way (two routes), here where the probe meets
    queries without keys (positions 5–7 of sequence 2)."""
    from seqlab.studies.model import measure_attention, measure_model_order
    from seqlab.studies.model_mixing import keyless_probe

    encoder, ids, mask = batch
    probe = keyless_probe(encoder, ids, mask)
    assert probe.met > 0 and keyless_positions(encoder, ids, mask, probe=probe) == ((), (4, 5, 6))
    assert measure_attention(encoder, ids, 2, 1, mask=mask, probe=probe) == measure_attention(encoder, ids, 2, 1,
                                                                                                mask=mask)
    for positions in (False, True):
        assert measure_model_order(encoder, ids, mask, positions=positions, probe=probe) == \
            measure_model_order(encoder, ids, mask, positions=positions)


@pytest.fixture(scope="module")
def result(folder):
    return inspect_model([LONG, SHORT], model=folder, mixing_tokens=7)


def _floats(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _floats(item)
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item)
    elif isinstance(value, (float, str)):
        yield value


def test_seqlab_model_on_the_padded_batch_prints_no_nan_and_names_the_rows(result):
    assert result.keyless == ((), (4, 5, 6))
    document = json.loads(model_json(result))
    assert document["keyless"] == [[], [4, 5, 6]]
    jsonschema = pytest.importorskip("jsonschema")
    from seqlab.render.json_output import schema

    jsonschema.Draft202012Validator(schema("model")).validate(document)  # the padded window's document, blocks field too
    assert not any((isinstance(v, float) and math.isnan(v)) or v in ("nan", "NaN") for v in _floats(document))
    assert all(row.max_abs_change == row.max_abs_change for check in (result.order_without_positions,
                                                                      result.order_with_positions)
               for row in check.depths)
    text = " ".join(model_sentences(result, "en"))
    assert "nan" not in text.lower().replace("nanos", "")
    assert "Queries that read no key at all (every key masked), positions 5–7 of sequence 2: their attention " \
           "weights are taken as 0" in text
    assert "Consultas que no leen ninguna clave (todas sus claves enmascaradas), las posiciones 5–7 de la " \
           "secuencia 2:" in " ".join(model_sentences(result, "es"))


def test_the_sentence_follows_the_measured_rows(result):
    """Patch the measurement: no keyless row -> no sentence; one in sequence 1 -> named alone, singular."""
    none = dataclasses.replace(result, keyless=((), ()))
    assert not any("read no key" in s for s in model_sentences(none, "en"))
    one = " ".join(model_sentences(dataclasses.replace(result, keyless=((2,), ())), "en"))
    assert "(every key masked), position 3 of sequence 1: their" in one and "sequence 2" not in one.split(
        "every key masked")[1].split(".")[0]
    es = " ".join(model_sentences(dataclasses.replace(result, keyless=((2,), (5, 6))), "es"))
    assert "la posición 3 de la secuencia 1; las posiciones 6–7 de la secuencia 2:" in es


# --- Patterns named with their parameters (issue 38, item 10) -----------------------------------------------------

def test_a_sequence_too_short_to_show_the_window_agrees_with_it(result):
    """Sequence 2 has 2 positions under a window of 3: it reads causally, as the window's first two rows do, so it
    says nothing against the band the 7 positions of sequence 1 show; the model reads as that band, width 3."""
    from seqlab.measure.mixing import Band

    attention = [m for m in result.modules if m.mixes]
    assert attention and all(m.patterns == ("band", "causal") and m.pattern == "band" and m.band == Band(2, 0)
                             for m in attention)
    assert result.kind == "band" and result.band == Band(2, 0)
    (said,) = [s for s in model_sentences(result, "en") if "L11" in s]
    assert "each reads the same causal band of width 3 (j − 3 < i ≤ j)" in said


def test_agreement_is_the_corner_of_the_longest_sequence():
    from seqlab.measure.modules import SubmoduleMixing
    from seqlab.studies.model_mixing import agrees

    def measured(T, rule):
        return SubmoduleMixing("a", "Attention", ("x",), "jacobian-2",
                               tuple(tuple(1.0 if rule(j, i) else 0.0 for i in range(T)) for j in range(T)))

    window = measured(6, lambda j, i: j - 3 < i <= j)
    assert agrees(measured(3, lambda j, i: i <= j), window)  # the corner of a window of 3 is causal
    assert not agrees(measured(4, lambda j, i: i <= j), window)  # row 4 would read row 1: wider than the window
    assert not agrees(measured(3, lambda j, i: True), window)  # reads ahead
    blocks = measured(8, lambda j, i: i // 4 == j // 4)
    assert agrees(measured(3, lambda j, i: True), blocks) and not agrees(measured(5, lambda j, i: True), blocks)


def _as_blocks(result, size, *, layer=None):
    from seqlab.measure.mixing import Blocks

    return dataclasses.replace(result, modules=tuple(
        dataclasses.replace(m, pattern="blocks", patterns=("blocks",) * len(m.positions), band=None,
                            blocks=Blocks(size if layer is None or m.layer == layer else size - 1))
        if m.mixes else m for m in result.modules))


def test_blocks_are_named_with_their_size_from_the_measurement(result):
    """Patch the measurement: every mixing module reads blocks of 4 -> kind "blocks", the L11 sentence names the size
    in both languages; one layer's blocks of 3 -> no single pattern, both sizes named."""
    from rich.console import Console

    from seqlab.measure.mixing import Blocks
    from seqlab.render.model import mixing_table

    shown = _as_blocks(result, 4)
    assert shown.kind == "blocks" and shown.blocks == Blocks(4) and shown.band is None
    (said,) = [s for s in model_sentences(shown, "en") if "L11" in s]
    assert said.startswith("As the lesson says (L11)") and "each reads the same blocks of 4 positions " \
        "(⌊i/4⌋ = ⌊j/4⌋), the blocks its attention is restricted to" in said
    (es,) = [s for s in model_sentences(shown, "es") if "L11" in s]
    assert "cada uno lee los mismos bloques de 4 posiciones (⌊i/4⌋ = ⌊j/4⌋)" in es
    (order,) = [s for s in model_sentences(shown, "en") if "L10" in s]
    assert order.startswith("As the lesson says of a masked attention (L10)") and "each row reads only its own " \
        "block, in blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋), so the mask itself tells the model the order" in order
    console = Console(width=200, file=__import__("io").StringIO(), color_system=None)
    console.print(mixing_table(shown, "en"))
    assert "blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋)" in console.file.getvalue()
    mixed = _as_blocks(result, 4, layer=2)
    (said,) = [s for s in model_sentences(mixed, "en") if "L11" in s]
    assert mixed.kind == "mixed" and mixed.blocks is None
    assert said.startswith("Not one pattern (L11)") and "blocks of 4 positions (⌊i/4⌋ = ⌊j/4⌋)" in said \
        and "blocks of 3 positions (⌊i/3⌋ = ⌊j/3⌋)" in said


def test_a_causal_reading_on_few_positions_names_the_figure_it_lacks(result):
    """Patch the measurement: every mixing module causal on the 7 positions measured -> the reading cannot tell full
    attention from a window of 7 or more, and says the window's width is what it lacks; measured on every position
    the model reads (64), or read as a band (its width measured), nothing is said."""
    causal = dataclasses.replace(result, modules=tuple(
        dataclasses.replace(m, pattern="causal", patterns=("causal",) * len(m.positions), band=None) if m.mixes else m
        for m in result.modules))
    assert causal.kind == "causal" and result.max_positions == 64
    said = [s for s in model_sentences(causal, "en") if s.startswith("Read on the first")]
    assert said == ["Read on the first 7 positions: an attention restricted to a window or to blocks of 7 positions or "
                    "more reads the same there, so these figures cannot tell it from full attention; the width such a "
                    "window would have is the figure they lack (more positions, with --mixing-tokens and a longer "
                    "text, would show it)."]
    assert any(s.startswith("Leído en las primeras 7 posiciones:") for s in model_sentences(causal, "es"))
    everything = dataclasses.replace(causal, mixing_tokens=64)
    assert not any(s.startswith("Read on the first") for s in model_sentences(everything, "en"))
    assert result.kind == "band" and not any(s.startswith("Read on the first") for s in model_sentences(result, "en"))
