"""``seqlab check``'s statements beyond the lesson (B1–B5): real measurements, then each one patched to a wrong value.

B1: a scan's span grows as log T, a loop's as T; B2: the math SDPA path's peak memory as T², the fused kernel's as T;
B3: attention's KV cache as t per decoded token, the Elman RNN's state not at all (issue 15, item 5); B4: a parallel
scan shortens the graph path, not the signal path (issue 23): tests in tests/test_check_signal_path.py; B5: a KV
cache grows as t, a window caps it, an SSM state is constant, on tiny models' own caches (issue 24): tests in
tests/test_check_model_state.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.measure.memory_peak import PeakMemory
from seqlab.render.check import check_json, claim_text, render_check, summary
from seqlab.studies import claims_beyond
from seqlab.studies.check import (BEYOND, CLAIMS, FAILS, HOLDS, NOT_JUDGED, CheckConfig, ClaimCheck, parse_claims,
                                  run_check)
from seqlab.studies.claims import CheckSizes

SIZES = CheckSizes()


def judged_check(judged, claim: str = "B2") -> ClaimCheck:
    return ClaimCheck(claim, judged.verdict, judged.values, judged.condition)
CLI_ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


@pytest.fixture(scope="module")
def result():
    return run_check(CheckConfig(claims=("L5", *BEYOND), threads=1))


def test_the_three_statements_hold_with_their_figures(result):
    checks = {c.claim: c for c in result.checks}
    assert [c.claim for c in result.checks] == ["L5", "B1", "B2", "B3", "B4", "B5"]
    assert all(checks[b].verdict == HOLDS and checks[b].beyond_lesson for b in BEYOND)
    assert not checks["L5"].beyond_lesson
    b1, b2, b3, b4, b5 = (checks[b].values for b in BEYOND)
    assert b1["scan_ops"] == [18, 20, 22, 24] and b1["scan_model"] == "log"  # two ops per round, log2 T rounds
    assert b1["loop_ops"] == [70, 134, 262, 518]  # 2 ops per position, plus 6
    assert b2["math_tensor_peak_bytes"][-1] >= 2 * 1024 * 1024 * 4  # scores and softmax of 1024 × 1024 float32
    assert b2["scores_bytes"] == [256 * 256 * 4, 512 * 512 * 4, 1024 * 1024 * 4]
    # the allocator's figure holds the math path's isneginf mask too, which the tensor peak (a bound) misses
    assert b2["math_allocator_largest"][:3] == [["aten.bmm", 1024 * 1024 * 4], ["aten._softmax", 1024 * 1024 * 4],
                                                ["aten.isneginf", 1024 * 1024]]
    assert b2["math_allocator_bytes"][-1] - b2["math_tensor_peak_bytes"][-1] >= 1024 * 1024
    assert b2["math_form"] == "T²" and b2["fused_allocator_bytes"][-1] < b2["scores_bytes"][-1]
    assert all(a >= p for a, p in zip(b2["fused_allocator_bytes"], b2["fused_tensor_peak_bytes"]))  # buffers inside count
    assert b3["cache_bytes"] == [8192, 16384, 32768]  # keys and values: 2 * t * 16 * 4 bytes
    assert b3["state_bytes"] == [64, 64, 64]  # h: 16 float32
    assert b4["loop_factors"] == b4["scan_factors"] == [15, 31, 63, 127]  # T - 1 decays in both forms
    models = b5["models"]  # bytes read from each tiny model's own cache object at t = 4, 8, 16
    assert models["llama_gqa"]["bytes"] == [2048, 4096, 8192]  # 2 layers · K, V · 2 kv heads · 16 · t · 4 bytes
    assert models["mistral_window"]["bytes"] == [1024, 2048, 2048]  # the window's 8 rows at most: 2·2·2·8·8·4
    assert models["mamba"]["bytes"] == [4096] * 3  # 2 layers · E = 64 · (d_conv 4 + N 4) · 4 bytes
    assert [models[f]["growth"] for f in models] == ["linear", "capped", "constant"]


def test_parse_claims_puts_the_statements_beyond_after_the_lesson():
    assert parse_claims("b3, L2,B1") == ("L2", "B1", "B3")
    assert CheckConfig().claims == CLAIMS  # the library's default stays the lesson; the CLI adds B1–B5


def test_b1_fails_when_the_scan_span_grows_like_the_loop(monkeypatch):
    real = claims_beyond.measure_span

    def linear(function, x, **kwargs):
        span = real(function, x, **kwargs)
        return replace(span, ops=2 * x.shape[1])
    monkeypatch.setattr(claims_beyond, "measure_span", linear)
    judged = claims_beyond.check_b1(SIZES, 0)
    assert judged.verdict == FAILS and judged.values["scan_form"] == "T"


@pytest.mark.parametrize(("scan", "loop", "verdict"), [
    (lambda T: 2 * math.ceil(math.log2(T)) + 8, lambda T: 2 * T + 6, HOLDS),  # the real forms
    (lambda T: 2 * math.ceil(math.log2(T)) + 8, lambda T: round(T ** 1.5), FAILS),  # the loop 0.5 off T
    (lambda T: 2 * math.ceil(math.log2(T)) + 8, lambda T: round(T ** 0.5) + 6, FAILS),
    (lambda T: round(T ** 0.5) + 8, lambda T: 2 * T + 6, FAILS),  # the scan √T, not log T
])
def test_b1_judges_each_span_by_its_form(monkeypatch, scan, loop, verdict):
    """An exponent 0.5 off (T^1.5 or T^0.5 for the loop, √T for the scan) does not hold; the real forms do."""
    real = claims_beyond.measure_span

    def patched(function, x, **kwargs):
        span = real(function, x, **kwargs)
        return replace(span, ops=(scan if function.form == "scan" else loop)(x.shape[1]))
    monkeypatch.setattr(claims_beyond, "measure_span", patched)
    assert claims_beyond.check_b1(SIZES, 0).verdict == verdict


@pytest.mark.parametrize(("cache", "state", "verdict"), [
    (lambda t: 128 * t, lambda t: 64, HOLDS),
    (lambda t: round(t ** 1.5) * 128, lambda t: 64, FAILS),  # the cache 0.5 off t
    (lambda t: round(t ** 0.5) * 128, lambda t: 64, FAILS),
    (lambda t: 128 * t, lambda t: 8 * round(t ** 0.5), FAILS),  # a state that grows as √t
])
def test_b3_judges_each_growth_by_its_form(monkeypatch, cache, state, verdict):
    real = claims_beyond.decode.measure_decode_step

    def patched(machine, t, **kwargs):
        step = real(machine, t, **kwargs)
        return replace(step, state_bytes=(cache if machine == "attention_kv_cache" else state)(t))
    monkeypatch.setattr(claims_beyond.decode, "measure_decode_step", patched)
    assert claims_beyond.check_b3(SIZES, 0).verdict == verdict


def test_b2_fails_when_the_math_peak_does_not_grow(monkeypatch):
    def constant(function, *args, **kwargs):
        function(*args, **kwargs)
        return PeakMemory(4096, 0, 4096, 1, 0, (), "patched", {}, allocator_peak_bytes=4096)
    monkeypatch.setattr(claims_beyond.memory_peak, "measure_peak_memory", constant)
    judged = claims_beyond.check_b2(SIZES, 0)
    assert judged.verdict == FAILS and judged.values["math_form"] == "1"


@pytest.mark.parametrize(("fused_share", "verdict"), [(0.99, HOLDS), (1.0, FAILS), (1.5, FAILS)])
def test_b2_fails_when_the_fused_kernel_holds_the_scores(monkeypatch, fused_share, verdict):
    """The fused kernel's allocator peak at the largest T against the T×T scores' bytes, on both sides."""
    real = claims_beyond.memory_peak.measure_peak_memory
    largest = claims_beyond.MEMORY_LENGTHS[-1]
    calls = []

    def patched(function, *args, **kwargs):
        peak = real(function, *args, **kwargs)
        calls.append(peak)
        fused_call = len(calls) > len(claims_beyond.MEMORY_LENGTHS)
        if fused_call and len(calls) == 2 * len(claims_beyond.MEMORY_LENGTHS):  # the fused kernel at the largest T
            return replace(peak, allocator_peak_bytes=int(fused_share * largest * largest * 4))
        return peak
    monkeypatch.setattr(claims_beyond.memory_peak, "measure_peak_memory", patched)
    assert claims_beyond.check_b2(SIZES, 0).verdict == verdict


def test_b2_is_not_judged_without_allocator_events(monkeypatch):
    real = claims_beyond.memory_peak.measure_peak_memory
    monkeypatch.setattr(claims_beyond.memory_peak, "measure_peak_memory",
                        lambda *a, **k: replace(real(*a, **k), allocator_peak_bytes=None))
    judged = claims_beyond.check_b2(SIZES, 0)
    assert judged.verdict == NOT_JUDGED and judged.condition["caveats"] == ["allocator_events_unavailable"]
    assert "no allocator events" in claim_text(judged_check(judged), "en").figure


def test_b3_fails_when_the_cache_does_not_grow(monkeypatch):
    real = claims_beyond.decode.measure_decode_step

    def fixed(machine, t, **kwargs):
        return replace(real(machine, t, **kwargs), state_bytes=512)
    monkeypatch.setattr(claims_beyond.decode, "measure_decode_step", fixed)
    judged = claims_beyond.check_b3(SIZES, 0)
    assert judged.verdict == FAILS and judged.values["cache_exponent"] == 0.0


@pytest.mark.parametrize("lang, title, line", [
    ("en", "Beyond the lesson (B1–B5)", "Beyond the lesson: 5 of 5 claims hold."),
    ("es", "Más allá de la lección (B1–B5)", "Más allá de la lección: se cumplen 5 de 5 afirmaciones.")])
def test_shown_apart_after_the_lesson(result, lang, title, line):
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(render_check(result, lang, 200))
    text = console.export_text()
    assert text.index("L5 ") < text.index(title) < text.index("B1 ") < text.index("B3 ") < text.index("B4 ") \
        < text.index("B5 ")
    assert summary(result, lang).endswith(line)
    assert summary(result, lang).startswith("1 of 1 claims hold" if lang == "en" else "Se cumplen 1 de 1")
    for check in result.checks[1:]:  # B1–B5 (L5 has no note)
        words = claim_text(check, lang)
        assert words.statement and words.measured and words.figure and words.condition and words.note


def test_json_marks_them_beyond_the_lesson(result):
    document = json.loads(check_json(result, "en"))
    assert [(c["claim"], c["beyond_lesson"]) for c in document["claims"]] == [
        ("L5", False), ("B1", True), ("B2", True), ("B3", True), ("B4", True), ("B5", True)]
    assert "(grows as T²)" in document["claims"][2]["figure"]  # the math path


def test_cli_runs_them_by_default_and_refuses_an_unknown_one(monkeypatch, result):
    import seqlab.studies.check as check_study

    asked = []
    monkeypatch.setattr(check_study, "run_check", lambda config, progress=None: asked.append(config) or result)
    outcome = CliRunner().invoke(app, ["check", "--json"], env=CLI_ENV)
    assert outcome.exit_code == 0 and asked[0].claims == CLAIMS + BEYOND
    bad = CliRunner().invoke(app, ["check", "--only", "B6"], env=CLI_ENV)
    assert bad.exit_code == 2 and "'B6'" in bad.output and "B1–B5" in bad.output


def test_only_the_statements_beyond(result):
    from rich.console import Console

    only = replace(result, checks=result.checks[1:])
    assert summary(only, "en").startswith("Beyond the lesson: 5 of 5 claims hold (default sizes; --full for")
    console = Console(width=200, record=True, color_system=None)
    console.print(render_check(only, "en", 200))
    text = console.export_text()
    assert "The lesson's claims, measured" not in text and text.startswith("Beyond the lesson (B1–B5)")
