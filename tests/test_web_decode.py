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
