"""Counts agree with their nouns: "1 thread", "2 threads", "1 hilo", "2 hilos" (issue 16, item 7), by ngettext
(:func:`seqlab.i18n.plural_translator`). Each test changes the count behind a sentence and sees the noun follow.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_compare import synthetic_timing, timed

from seqlab.i18n import plural_translator
from seqlab.render.compare import caption, compare_sentences


@pytest.mark.parametrize(("lang", "count", "expected"), [
    ("en", 1, "1 thread"), ("en", 2, "2 threads"), ("en", 0, "0 threads"),
    ("es", 1, "1 hilo"), ("es", 2, "2 hilos"), ("es", 1_000_000, "1000000 hilos"),
])
def test_plural_translator(lang, count, expected):
    assert plural_translator(lang)("{count} thread", "{count} threads", count).format(count=count) == expected


@pytest.mark.parametrize(("lang", "one", "two"), [("en", "; 1 thread;", "; 2 threads;"),
                                                  ("es", "; 1 hilo;", "; 2 hilos;")])
def test_compare_caption_counts_threads(small_result, lang, one, two):
    assert one in caption(replace(small_result, threads=1), lang)
    assert two in caption(replace(small_result, threads=2), lang)
    assert "1 threads" not in caption(replace(small_result, threads=1), lang)


@pytest.mark.parametrize(("lang", "one", "two"), [("en", "On 1 thread nn.RNN takes", "On 2 threads nn.RNN takes"),
                                                  ("es", "Con 1 hilo, nn.RNN tarda", "Con 2 hilos, nn.RNN tarda")])
def test_the_time_sentence_counts_threads(small_result, lang, one, two):
    two_threads = timed(small_result, synthetic_timing(0.02, 8), synthetic_timing(0.01, 8))  # threads=2
    assert compare_sentences(two_threads, lang)[-1].startswith(two)
    one_thread = timed(small_result, replace(synthetic_timing(0.02, 8), threads=1),
                       replace(synthetic_timing(0.01, 8), threads=1))
    assert compare_sentences(one_thread, lang)[-1].startswith(one)


@pytest.mark.parametrize(("lang", "one", "eight"), [("en", "with 1 head,", "with 8 heads,"),
                                                    ("es", "con 1 cabeza,", "con 8 cabezas,")])
def test_the_kernels_sentence_counts_heads(small_result, lang, one, eight):
    from seqlab.render.compare_scopes import heads_text, scope_sentences

    widths = (small_result.d_model, small_result.d_h, small_result.d_k, small_result.d_v)
    for heads, expected in ((1, one), (8, eight)):
        sentences = scope_sentences(small_result.scopes, small_result.T, widths, heads, lang)
        assert any(expected in sentence for sentence in sentences), sentences
    assert heads_text(1, lang) in ("1 head", "1 cabeza")


@pytest.fixture(scope="module")
def model_result():
    """The bundled MiniLM on a short text (6 layers, 12 heads), measured once for both languages."""
    pytest.importorskip("transformers")
    from seqlab.studies.model import inspect_model

    return inspect_model("En un lugar de la Mancha", max_tokens=8, mixing_tokens=4)


@pytest.mark.parametrize(("lang", "one", "many"), [("en", "1 layer, 1 head,", "6 layers, 12 heads,"),
                                                   ("es", "1 capa, 1 cabeza,", "6 capas, 12 cabezas,")])
def test_model_line_counts_layers_and_heads(model_result, lang, one, many):
    """A checkpoint of one's own may have a single layer and head."""
    from seqlab.render.model import run_line

    assert many in run_line(model_result, lang)
    assert one in run_line(replace(model_result, layers=1, heads=1), lang)


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("kind", ["reach_explains", "reach_does_not_separate"])
def test_learn_says_the_one_seed_not_1_seeds(lang, kind):
    from seqlab.render.learn_text import finding_sentence
    from seqlab.studies.learn_verdicts import Finding

    figures = {"elman_low": 1e-9, "elman_high": 2e-9, "attention_low": 0.1, "attention_high": 0.2, "margin": 1e-3}
    one = finding_sentence(Finding(kind, "recall", 16, "elman", {**figures, "failed": 1,
                                                                  "explained": int(kind == "reach_explains")}), lang)
    two = finding_sentence(Finding(kind, "recall", 16, "elman", {**figures, "failed": 2, "explained": 1}), lang)
    assert ("the one seed" if lang == "en" else "la única semilla") in one
    assert "1 seeds" not in one and "1 semillas" not in one
    assert ("2 seeds" if lang == "en" else "2 semillas") in two


@pytest.mark.parametrize(("lang", "one", "many"), [("en", "would put 1 product by W_hh", "would put 7 products by W_hh"),
                                                   ("es", "pondría 1 producto por W_hh", "pondría 7 productos por W_hh")])
def test_model_attention_sentence_counts_the_recurrences_products(model_result, lang, one, many):
    """A decoder on two tokens: a recurrence would put 1 product (T − 1) on the path, not "1 products" (issue 26)."""
    from seqlab.render.model import _attention_sentences

    if model_result.attention.alpha_T1 == 0:
        pytest.skip("this head has no one-weight path: the sentence names no products")
    many_text = " ".join(_attention_sentences(model_result, lang))  # 8 tokens: 7 products
    assert many in many_text
    single = replace(model_result, attention=replace(model_result.attention, recurrence_steps=1))
    text = " ".join(_attention_sentences(single, lang))
    assert one in text and "1 products" not in text and "1 productos" not in text


@pytest.mark.parametrize(("lang", "expected_one", "expected_two"), [
    ("en", ("1 compute op in a row", "a chain of 1 product at", "a chain of 1 op at"),
     ("2 compute ops in a row", "a chain of 2 products at", "a chain of 2 ops at")),
    ("es", ("1 operación de cálculo en fila", "una cadena de 1 producto con", "una cadena de 1 operación con"),
     ("2 operaciones de cálculo en fila", "una cadena de 2 productos con", "una cadena de 2 operaciones con")),
])
def test_the_first_questions_measured_chains_agree_with_their_nouns(lang, expected_one, expected_two):
    """Question 1's explanations name measured chains: their nouns follow the count (issue 26: no "1 ops")."""
    from seqlab.studies.quiz import build_questions, measure_facts

    facts = measure_facts()
    for count, expected in ((1, expected_one), (2, expected_two)):
        changed = replace(facts, token_span=(count, count), input_span=(count, count), softmax_span=(count, count))
        explanations = [option.explanation for option in build_questions(changed, lang)[0].options]
        for phrase, explanation in zip(expected, (explanations[0], explanations[1], explanations[3]), strict=True):
            assert phrase in explanation, explanation


@pytest.mark.parametrize(("lang", "one", "two"), [("en", "ops, 1 product", "ops, 2 products"),
                                                  ("es", "operaciones, 1 producto", "operaciones, 2 productos")])
def test_check_l3_counts_the_lstms_products(lang, one, two):
    """L3's figure line names the LSTM's measured path in products: its noun follows the count."""
    from seqlab.i18n import translator
    from seqlab.render.check import Numbers
    from seqlab.render.check_path import l3

    def figure(products: int) -> str:
        values = {"lengths": (8, 16), "lstm_path_products_ops": ((products, 20), (products, 40)),
                  "gru_path_products_ops": ((1, 18), (1, 36)), "factors": {0.5: (0.5, 0.4), 1.5: (1.5, 0.9)},
                  "path_products": (7, 15), "whh_products": (7, 15), "reach_length": 32, "draws": 5}
        conditions = {"onset_with_inputs": None, "growth_margin": 0.05, "onset_slack": 1.2, "caveats": (),
                      "failed": ()}
        return l3(translator(lang), values, conditions, Numbers(lang))[2]

    assert figure(1).endswith(one) and figure(2).endswith(two)
