"""``seqlab check``'s B5 (issue 24): a KV cache grows linearly with t, a sliding window caps it, an SSM state stays
constant — read from tiny random-weight models' own cache objects, built in memory from transformers configs.

The real run holds with the bytes worked by hand; then each measurement is patched to a wrong value on the model's
own path (the cache reader, the growth rule) and the statement no longer holds: bytes one float32 element off, a
growth class wrong while the bytes are exact, a windowed cache that grows like a full one, a statement that
names the wrong growth; without transformers it is not judged.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

pytest.importorskip("transformers")

from seqlab.render.check import claim_text  # noqa: E402
from seqlab.studies import claims_beyond, decode_model  # noqa: E402
from seqlab.studies.check import FAILS, HOLDS, NOT_JUDGED, ClaimCheck  # noqa: E402
from seqlab.studies.claims import CheckSizes  # noqa: E402

SIZES = CheckSizes()


def b5():
    return claims_beyond.check_b5(SIZES, 0)


def words(judged, lang: str = "en"):
    return claim_text(ClaimCheck("B5", judged.verdict, judged.values, judged.condition), lang)


@pytest.fixture(scope="module")
def real():
    return b5()


def test_it_holds_with_the_bytes_worked_by_hand(real):
    assert real.verdict == HOLDS
    models = real.values["models"]
    # Llama GQA: 2 layers · (K, V) · 2 kv heads · head_dim 16 · t · 4 bytes = 512·t
    assert models["llama_gqa"]["bytes"] == models["llama_gqa"]["closed_bytes"] == [512 * t for t in (4, 8, 16)]
    # Mistral, window 8: min(t, 8) rows · 2 layers · (K, V) · 2 kv heads · 8 · 4 bytes = 256 per row
    assert models["mistral_window"]["bytes"] == [1024, 2048, 2048] and models["mistral_window"]["cap"] == 2048
    # Mamba: 2 layers · E = 64 · (d_conv 4 + N 4) · 4 bytes, whatever t
    assert models["mamba"]["kinds"] == {"convolution": ["constant", "constant"], "recurrent": ["constant", "constant"]}
    assert models["mamba"]["bytes"] == [4096] * 3
    # multiplications per token: Mamba's step is fixed, attention's grows by 2·L·H·d_h = 256 per position
    assert models["mamba"]["multiplications"] == [17920] * 3
    steps = models["llama_gqa"]["multiplications"]
    assert steps == models["llama_gqa"]["closed_multiplications"] and steps[1] - steps[0] == 4 * 256
    text = words(real, "es")
    assert "crecimiento con tope" in text.figure and "iguales a la forma cerrada" in text.figure


def _patched_read(monkeypatch, change):
    """The cache reader of seqlab decode --model, its state passed through ``change(state, t)``."""
    real_read, real_prefill, current = decode_model._read, decode_model._prefill, {}

    def prefill(model, facts, t, *args, **kwargs):
        current["t"] = t
        return real_prefill(model, facts, t, *args, **kwargs)

    monkeypatch.setattr(decode_model, "_prefill", prefill)
    monkeypatch.setattr(decode_model, "_read", lambda facts, past: change(real_read(facts, past), current["t"]))


@pytest.mark.parametrize(("extra_bytes", "verdict"), [(0, HOLDS), (4, FAILS), (-4, FAILS)])
def test_bytes_one_element_off_the_closed_form_do_not_hold(monkeypatch, extra_bytes, verdict):
    """Mamba's SSM state one float32 element (4 bytes) larger or smaller at every t: still constant, not exact."""
    def change(state, t):
        if "recurrent" not in state.by_kind:
            return state
        return replace(state, by_kind={**state.by_kind, "recurrent": state.by_kind["recurrent"] + extra_bytes})

    _patched_read(monkeypatch, change)
    judged = b5()
    assert judged.verdict == verdict
    mamba = judged.values["models"]["mamba"]
    assert mamba["growth"] == "constant" and mamba["bytes_exact"] is (extra_bytes == 0)
    if extra_bytes:
        assert "closed form 4,096, 4,096, 4,096" in words(judged).figure


def test_a_windowed_cache_that_grows_like_a_full_one_does_not_hold(monkeypatch):
    """Mistral's cache read as t rows (no cap): 256 bytes a row at every t, linear where the closed form caps."""
    def change(state, t):
        if "sliding_window_kv" not in state.by_kind:
            return state
        return replace(state, by_kind={"sliding_window_kv": 256 * t})

    _patched_read(monkeypatch, change)
    judged = b5()
    window = judged.values["models"]["mistral_window"]
    assert judged.verdict == FAILS
    assert window["bytes"] == [1024, 2048, 4096] and window["growth"] == "linear"
    assert window["closed_growth"] == "capped" and not window["bytes_exact"]


@pytest.mark.parametrize(("figure", "wrong"), [("bytes:recurrent", "linear"), ("bytes", "capped"),
                                               ("bytes:attention_kv", "constant + linear")])
def test_a_growth_class_wrong_with_exact_bytes_does_not_hold(monkeypatch, figure, wrong):
    """The growth rule names one measured series wrongly (the closed forms' class untouched): the bytes stay
    exact, the classes no longer match."""
    real_growth = decode_model._growth

    def growth(name, ts, values, expected):
        found = real_growth(name, ts, values, expected)
        return replace(found, kind=wrong) if name == figure else found

    monkeypatch.setattr(decode_model, "_growth", growth)
    judged = b5()
    assert judged.verdict == FAILS
    models = judged.values["models"]
    assert all(m["bytes_exact"] for m in models.values())
    assert [f for f, m in models.items() if not m["classes_match"]] != []


def test_a_statement_that_names_the_wrong_growth_does_not_hold(monkeypatch):
    """Measured and closed forms agree (linear) for Llama's cache; a statement saying 'constant' is contradicted."""
    monkeypatch.setitem(claims_beyond.MODEL_STATES, "llama_gqa", "constant")
    judged = b5()
    assert judged.verdict == FAILS
    llama = judged.values["models"]["llama_gqa"]
    assert llama["growth"] == llama["closed_growth"] == "linear" and llama["bytes_exact"]


def test_without_transformers_it_is_not_judged_and_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # its import now raises ImportError
    judged = b5()
    assert judged.verdict == NOT_JUDGED and judged.condition["caveats"] == ["transformers_missing"]
    assert "transformers is not installed (the [model] extra)" in words(judged).figure
    assert "transformers no está instalado" in words(judged, "es").figure
