"""The web lab's decoding panel (/api/decode, /decode): counts against closed forms, state growth, refusals.

The numbers come from seqlab.studies.decode in a worker process; here a second route checks them: the closed
forms of seqlab.measure.decode.step_multiplications, and the state sizes worked by hand.
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web lab needs fastapi")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from seqlab.measure.decode import step_multiplications  # noqa: E402
from seqlab.measure.timing import MachineLoad  # noqa: E402
from seqlab.memory import MemoryEstimate  # noqa: E402
from seqlab.web.app import create_app  # noqa: E402
from seqlab.web.panels import decode  # noqa: E402

BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app("en"), base_url=BASE) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def counted(client):
    """d = 8, t = 1, 4, 16, untimed, in English."""
    response = client.get("/api/decode", params={"d_model": 8, "positions": 16, "time": "false"})
    assert response.status_code == 200, response.text
    return response.json()


def test_positions_grow_by_four_up_to_the_largest():
    assert decode.positions_up_to(2) == (1, 2)
    assert decode.positions_up_to(64) == (1, 4, 16, 64)
    assert decode.positions_up_to(4096)[-2:] == (1024, 4096)


def test_counts_equal_the_closed_forms_at_every_position(counted):
    assert counted["positions"] == [1, 4, 16]
    assert {m["key"] for m in counted["machines"]} >= {"elman", "attention_kv_cache", "attention_no_cache"}
    for machine in counted["machines"]:
        for step in machine["steps"]:
            expected = step_multiplications(machine["key"], step["t"], 8)
            assert step["closed_form"] == expected
            if expected is not None:
                assert step["multiplications"] == expected, (machine["key"], step["t"])
    elman = next(m for m in counted["machines"] if m["key"] == "elman")
    assert [s["multiplications"] for s in elman["steps"]] == [128] * 3  # W_hh h + W_xh x: 2 · 8² per step


def test_state_fixed_for_recurrences_and_linear_in_t_for_the_cache(counted):
    by_key = {m["key"]: m for m in counted["machines"]}
    assert by_key["elman"]["fixed_state"] and not by_key["attention_kv_cache"]["fixed_state"]
    cache = [s["state_bytes"] for s in by_key["attention_kv_cache"]["steps"]]
    assert cache == [t * 2 * 8 * 4 for t in (1, 4, 16)]  # t keys and t values of 8 float32 numbers
    assert len({s["state_bytes"] for s in by_key["elman"]["steps"]}) == 1
    static = [s["state_bytes"] for s in by_key["attention_static_cache"]["steps"]]
    assert static == [16 * 2 * 8 * 4 + 8] * 3  # capacity 16 (the largest t) from the first token, + the row count
    assert static[-1] == cache[-1] + 8 and by_key["attention_static_cache"]["fixed_state"]
    assert "holds its capacity from the first token" in counted["static_note"]
    assert all(s["median_s"] is None for m in counted["machines"] for s in m["steps"])  # time=false


def test_sentences_follow_the_language(client, counted):
    spanish = client.get("/api/decode", params={"d_model": 8, "positions": 16, "time": "false", "lang": "es"})
    assert spanish.status_code == 200
    assert any("Estado fijo" in line for line in spanish.json()["sentences"])
    assert any("Fixed state" in line for line in counted["sentences"])


def test_timed_steps_carry_median_and_spread(client):
    response = client.get("/api/decode", params={"d_model": 4, "positions": 4, "time": "true"})
    assert response.status_code == 200
    data = response.json()
    steps = [s for m in data["machines"] for s in m["steps"]]
    assert all(s["median_s"] > 0 and s["iqr_s"] >= 0 for s in steps)
    assert data["threads"] == 1 and data["rounds"] == 7  # decode's default: one thread, seven interleaved rounds
    # one time sentence per run of positions, each a decision: named against every machine, or naming the pair
    timed = [line for line in data["sentences"] if line.startswith("Fastest per new token")]
    assert timed and all("decided against every other machine" in line or "not judged" in line or " tie " in line
                         for line in timed)


@pytest.mark.parametrize(("load", "lang"), [(MachineLoad(7.0, 2, True), "en"), (MachineLoad(7.0, 2, True), "es"),
                                           (MachineLoad(0.1, 2, False), "en")])
def test_a_timed_answer_reads_like_the_cli_and_carries_the_busy_caveat(monkeypatch, load, lang):
    """Each step's time is the CLI's cell (median ± IQR in units, † when noisy: render.decode.time_cell) and the
    answer carries the busy-machine caveat of the load its timing began under (None on a quiet machine)."""
    import re

    import seqlab.studies.decode
    from seqlab.render.machine_load import busy_caveat

    monkeypatch.setattr(seqlab.studies.decode, "machine_load", lambda: load)  # read where the timing begins
    data = decode.measure_decoding(4, 4, True, lang)
    assert data.caveat == (busy_caveat(load, lang) or None)
    if load.busy:
        assert data.caveat.startswith("The machine was busy: its load average was 7.00 on 2 CPUs" if lang == "en"
                                      else "La máquina estaba ocupada")
    number, unit = r"\d+(?:[.,]\d+)?", r"(?:s|ms|µs|ns)"
    for step in (s for m in data.machines for s in m.steps):
        assert re.fullmatch(rf"{number} {unit} ± {number} {unit}( †)?", step.time_text), step.time_text
    untimed = decode.measure_decoding(4, 4, False, lang)
    assert untimed.caveat is None and {s.time_text for m in untimed.machines for s in m.steps} == {"—"}


@pytest.mark.parametrize("params, field", [({"positions": 1}, "positions"), ({"positions": 5000}, "positions"),
                                           ({"d_model": 1}, "d_model"), ({"d_model": 129}, "d_model"),
                                           ({"time": "maybe"}, "time")])
def test_bad_sizes_are_refused_naming_the_field(client, params, field):
    response = client.get("/api/decode", params=params)
    assert response.status_code == 422, response.text
    assert field in response.json()["message"]


def test_a_step_over_the_budget_is_refused_before_any_worker(client, monkeypatch):
    monkeypatch.setattr(decode, "estimate_panel_bytes",
                        lambda d, t: MemoryEstimate(10 * 1024**3, decode.Phrase("a cache of {count} positions",
                                                                                  {"count": t})))
    response = client.get("/api/decode", params={"d_model": 6, "positions": 8, "time": "false"})
    assert response.status_code == 422
    assert "8" in response.json()["message"] and "MiB" in response.json()["message"]


def test_the_page_names_the_panel_in_both_languages(client):
    english, spanish = client.get("/decode?lang=en"), client.get("/decode?lang=es")
    assert "What each new token costs when a model writes" in english.text
    assert "Lo que cuesta cada token nuevo cuando un modelo escribe" in spanish.text
    assert 'src="/static/decode.js"' in english.text


# --- A model's own cache: tiny random-weight families built in the worker (/api/decode/model) ------------------

#: Each family's growth of the whole cache and of the step's multiplications at t = 4, 8, 16.
MODEL_GROWTH = {"llama_gqa": ("linear", "constant + linear"), "mistral_window": ("capped", "capped"),
                "mamba": ("constant", "constant"), "jamba_hybrid": ("constant + linear", "constant + linear")}


@pytest.fixture(scope="module")
def models(client):
    """Every family of the menu at t = 4, 8, 16, in English."""
    pytest.importorskip("transformers")
    found = {}
    for family in decode.MODEL_FAMILIES:
        response = client.get("/api/decode/model", params={"family": family, "positions": 16})
        assert response.status_code == 200, response.text
        found[family] = response.json()
    return found


@pytest.mark.parametrize("family", sorted(MODEL_GROWTH))
def test_model_bytes_and_counts_equal_the_closed_forms_computed_here(models, family):
    """Second route: the closed forms from the family's config, computed in this process (the worker measured)."""
    from seqlab.layers.tiny_lms import tiny_config
    from seqlab.studies.decode_model import closed_state_bytes, closed_step_multiplications

    data, config = models[family], tiny_config(family)
    assert data["positions"] == [4, 8, 16] and [s["t"] for s in data["steps"]] == [4, 8, 16]
    for step in data["steps"]:
        assert step["bytes_by_kind"] == closed_state_bytes(config, step["t"], 4) == step["closed_bytes_by_kind"]
        assert step["multiplications"] == closed_step_multiplications(config, step["t"])
        assert step["total_bytes"] == sum(step["bytes_by_kind"].values())
    assert data["counts_match"] is True and data["bytes_match"] is True
    growth = {g["figure"]: g for g in data["growth"]}
    assert (growth["bytes"]["measured"], growth["multiplications"]["measured"]) == MODEL_GROWTH[family]
    assert all(g["matches"] for g in data["growth"])


def test_model_bytes_by_hand(models):
    # Llama GQA at t = 8: 2 layers · (K, V) · 2 kv heads · 16 (head_dim) · 8 rows · 4 bytes = 4096
    assert models["llama_gqa"]["steps"][1]["bytes_by_kind"] == {"attention_kv": 4096}
    # Mistral, window 8: at most 8 rows held, 2 · 2 · 2 · 8 · 8 · 4 = 2048 from t = 8 on
    assert [s["total_bytes"] for s in models["mistral_window"]["steps"]] == [1024, 2048, 2048]
    # Mamba: 2 layers · E = 64 · d_conv 4 · 4 bytes of convolution window, the same of SSM state (N = 4)
    assert models["mamba"]["steps"][2]["bytes_by_kind"] == {"convolution": 2048, "recurrent": 2048}
    # Jamba: 2 attention layers' keys and values (2 · 2 · 2 · 8 · 4 = 256 a position) beside 2 Mamba layers' state
    assert [s["bytes_by_kind"]["attention_kv"] for s in models["jamba_hybrid"]["steps"]] == [1024, 2048, 4096]
    assert [k["key"] for k in models["jamba_hybrid"]["kinds"]] == ["attention_kv", "convolution", "recurrent"]
    assert models["jamba_hybrid"]["architecture"] == "JambaForCausalLM"


def test_model_labels_and_sentences_follow_the_language(client, models):
    spanish = client.get("/api/decode/model", params={"family": "mistral_window", "positions": 16, "lang": "es"})
    assert spanish.status_code == 200
    data = spanish.json()
    assert data["label"] == "Mistral con una ventana deslizante de 8 (pesos aleatorios)"
    assert {g["figure"]: g["measured_label"] for g in data["growth"]}["bytes"] == "con tope"
    assert any("con tope" in line for line in data["sentences"])
    assert models["mistral_window"]["label"] == "Mistral with a sliding window of 8 (random weights)"


def test_model_positions_double_up_to_the_largest(client):
    pytest.importorskip("transformers")
    assert decode.model_positions(64) == (4, 8, 16, 32, 64)
    response = client.get("/api/decode/model", params={"family": "mamba", "positions": 40})
    assert response.status_code == 200 and response.json()["positions"] == [4, 8, 16, 32, 40]


@pytest.mark.parametrize(("params", "expected"), [
    ({"family": "gpt5"}, "family must be one of 'llama_gqa', 'mistral_window', 'mamba', 'jamba_hybrid'; "
                         "received gpt5"),
    ({"positions": 8}, "positions must be an integer in [16, 64]; received 8"),
    ({"positions": 65}, "positions must be an integer in [16, 64]; received 65"),
    ({"positions": "x"}, "positions must be an integer in [16, 64]; received x"),
    ({"lang": "fr"}, "lang must be one of 'en', 'es'; received fr"),
    ({"d_model": 8}, "d_model"),  # not a parameter of this route
])
def test_bad_model_requests_are_422_in_one_line(client, params, expected):
    response = client.get("/api/decode/model", params=params)
    assert response.status_code == 422, response.text
    message = response.json()["message"]
    assert expected in message and "\n" not in message


def test_model_without_transformers_is_refused_before_any_worker(client, monkeypatch):
    monkeypatch.setattr(decode, "_transformers_installed", lambda: False)
    monkeypatch.setattr(decode._model_results, "get", lambda key: None)
    response = client.get("/api/decode/model", params={"family": "mamba", "positions": 24, "lang": "es"})
    assert response.status_code == 422
    assert response.json()["message"].startswith("los modelos se construyen con transformers (del paquete opcional seqlab[model])")


def test_the_openapi_schema_says_what_the_model_route_accepts(client):
    route = client.get("/openapi.json").json()["paths"]["/api/decode/model"]["get"]
    params = {p["name"]: p["schema"] for p in route["parameters"]}
    assert params["family"]["enum"] == list(decode.MODEL_FAMILIES)
    assert (params["positions"]["minimum"], params["positions"]["maximum"]) == (16, 64)
    assert decode.estimate_model_panel_bytes(64).total_bytes < 2 * 1024**2  # the range fits any request's budget


def test_the_page_offers_the_model_menu_in_both_languages(client):
    english, spanish = client.get("/decode?lang=en"), client.get("/decode?lang=es")
    assert "A model&#39;s own cache, measured" in english.text or "A model's own cache, measured" in english.text
    assert "La caché de un modelo, medida" in spanish.text
    for family in decode.MODEL_FAMILIES:
        assert f'<option value="{family}">' in english.text
    assert 'src="/static/decode_model.js"' in english.text
