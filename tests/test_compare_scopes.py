"""``compare``'s verdicts that can fail: three scopes, independent counts, LSTM/GRU, sensitivity, reach against T, time.

Every sentence that draws a conclusion is tested twice: on the measured result, and with its measurement
patched to a wrong value, so the words are seen to change (L3, L4, L5–L8). Sizes are small (T = 40,
d_model = 16: the session's ``small_result``) so the file runs in seconds; expected counts sit next to
their hand arithmetic.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from fractions import Fraction

import pytest
import torch

from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure.reach import Reach
from seqlab.measure.sensitivity import Sensitivity, measure_sensitivity
from seqlab.measure.timing import MachineLoad, Timing, fixed_threads
from seqlab.render import compare_prose as prose
from seqlab.render.compare import compare_sentences
from seqlab.render.compare_format import Formatter
from seqlab.render.compare_scopes import scope_sentences
from seqlab.studies.compare import CompareConfig, CompareResult, run_compare
from seqlab.studies import compare_reach
from seqlab.studies.compare_gated import BYPASS, trace_path
from seqlab.text import embed, synthetic_tokens

EN = Formatter("en")


def by_name(result: CompareResult) -> dict:
    return {scope.name: scope for scope in result.scopes}


def sentences_of(result: CompareResult) -> str:
    return " ".join(scope_sentences(result.scopes, result.T, (result.d_model, result.d_h, result.d_k, result.d_v),
                                    result.heads, "en"))


# --- Three scopes: closed form beside an independent count (L5, L6, L7) ----------------------------

def test_three_scopes_closed_forms_and_counts(small_result):
    scopes = by_name(small_result)
    assert list(scopes) == ["lesson", "layer", "kernels"]
    lesson, layer, kernels = scopes["lesson"], scopes["layer"], scopes["kernels"]
    # lesson: L5 40 * (16² + 16·16) = 20_480; L6 40² * (16 + 16) = 51_200; crossover T = d = 16
    assert (lesson.recurrence.counted, lesson.attention.counted) == (20_480, 51_200)
    assert lesson.ratio == Fraction(5, 2) and lesson.crossover == 16 and lesson.winner == "recurrence"
    # layer: Q, K, V 40·16·48 = 30_720, the call 51_200, W_O 40·16·16 = 10_240 -> 92_160 = (2 + T/d)·20_480
    assert layer.attention.closed_form == layer.attention.counted == 92_160
    assert layer.ratio == 2 + Fraction(40, 16) and layer.crossover is None and layer.winner == "recurrence"
    heads = layer.get("attention_heads")
    assert (heads.counted, heads.source, heads.device) == (92_160, "pytorch", "meta")  # 8 heads: same total
    # gated: LSTM 4 gate blocks, GRU 3: 4 * 20_480 = 81_920, 3 * 20_480 = 61_440
    assert (layer.get("lstm").counted, layer.get("gru").counted) == (81_920, 61_440)
    assert kernels.attention.module == "nn.MultiheadAttention, 8 heads" and kernels.ratio == layer.ratio
    assert small_result.heads == 8
    for scope in (lesson, layer, kernels):
        for entry in (scope.recurrence, scope.attention, *scope.others):
            assert entry.agrees and entry.unaccounted == (), entry


def test_every_count_names_an_independent_source(small_result):
    """Explicit machines: PyTorch's registry. Fused kernels: seqlab's formula, beside PyTorch's count on meta."""
    kernels = by_name(small_result)["kernels"]
    fused = {entry.machine: entry for entry in (kernels.attention, *kernels.others) if entry.source != "pytorch"}
    assert set(fused) == {"attention_heads", "attention_call", "lstm"}
    assert fused["attention_heads"].ops == ("aten._native_multi_head_attention",)  # the fast path ran
    assert fused["attention_call"].ops == ("aten._scaled_dot_product_flash_attention_for_cpu",)
    assert fused["lstm"].ops == ("aten.mkldnn_rnn_layer",)  # oneDNN's fused LSTM
    for entry in fused.values():
        assert entry.source == "seqlab" and entry.independent_source == "pytorch"
        assert entry.independent == entry.closed_form == entry.counted
    for scope in small_result.scopes[:2]:  # lesson and layer: PyTorch's formulas only
        for entry in (scope.recurrence, scope.attention, *scope.others):
            assert entry.source == "pytorch" and entry.independent is None


def test_the_scope_verdicts_follow_the_counted_figures(small_result):
    text = sentences_of(small_result)
    assert compare_sentences(small_result)[:3] == scope_sentences(small_result.scopes, 40, (16,) * 4, 8, "en")
    assert "more work, past the crossover at T = 16" in text  # lesson
    assert "ratio is 2 + T/d = 4.50" in text and "exists only at its own scope" in text  # layer
    assert "give the same counts" in text  # kernels: seqlab's formula agrees with PyTorch's on meta
    # patch each measurement: the words change with it
    lesson, layer, kernels = small_result.scopes
    cheap = replace(lesson, attention=replace(lesson.attention, counted=10_000))
    cheap_layer = replace(layer, attention=replace(layer.attention, counted=10_000))
    wrong = replace(kernels, attention=replace(kernels.attention, independent=1))
    patched = replace(small_result, scopes=(cheap, cheap_layer, wrong))
    text = sentences_of(patched)
    assert cheap.winner == cheap_layer.winner == "attention"
    assert "less work, below the crossover at T = 16" in text
    assert "Layer's scope" in text and "exists only at its own scope" not in text
    assert "give different counts" in text


def test_unequal_widths_move_the_layer_crossover():
    result = run_compare(synthetic_tokens(40), "t", CompareConfig(d_model=16, d_h=64, d_k=8, d_v=8, time=False,
                                                                  sensitivity_draws=0))
    layer = by_name(result)["layer"]
    # recurrence 40 * (64² + 64·16) = 204_800; attention 40·16·24 + 40²·16 + 40·8·16 = 15_360 + 25_600 + 5_120
    assert (layer.recurrence.counted, layer.attention.counted) == (204_800, 46_080)
    # crossover (c - b) / a = (5_120 - 512) / 16 = 288, below which attention is cheaper even as a layer
    assert layer.crossover == 288 and layer.winner == "attention"
    assert result.heads is None and by_name(result)["kernels"].attention is None  # MHA needs d_k = d_v = d_model
    text = sentences_of(result)
    assert "less work, below the crossover at T = 288" in text
    assert "nn.MultiheadAttention needs d_k = d_v = d_model" in text


def test_heads_fall_back_when_8_does_not_divide_d_model():
    result = run_compare(synthetic_tokens(12), "t", CompareConfig(d_model=12, time=False, gated=False))
    assert result.heads == 2 and by_name(result)["kernels"].attention.module == "nn.MultiheadAttention, 2 heads"
    assert "(The paper's 8 heads do not divide d_model = 12.)" in sentences_of(result)
    assert "do not divide" not in sentences_of(run_compare(synthetic_tokens(12), "t", CompareConfig(
        d_model=16, time=False, gated=False)))


# --- LSTM and GRU (L3) -----------------------------------------------------------------------------

def test_gated_columns(small_result):
    lstm, gru = small_result.gated
    assert (lstm.cell, gru.cell) == ("lstm", "gru")
    assert (lstm.update, lstm.bypass) == ("c_t = f_t ⊙ c_{t−1} + i_t ⊙ g_t", "f_t ⊙ c_{t−1}")  # torch.nn.LSTM
    assert (gru.update, gru.bypass) == ("h_t = (1 − z_t) ⊙ n_t + z_t ⊙ h_{t−1}", "z_t ⊙ h_{t−1}")  # torch.nn.GRU
    # the chain: one W_hh product per step, and a fixed number of ops per step (gates, state update, output;
    # the exact number is the span tracer's business): the chain grows as T, as the Elman recurrence's does
    assert (lstm.span.products, gru.span.products) == (40, 40)
    assert lstm.span.ops % 40 == 0 and gru.span.ops % 40 == 0 and min(lstm.span.ops, gru.span.ops) >= 3 * 40
    # the path: W_ih x_1, then only element-wise ops through the bypass: 1 product, and 2 (LSTM: f_t ⊙ c, + i ⊙ g)
    # or 3 (GRU: z ⊙ h, (1 − z) ⊙ n, +) ops per step
    assert lstm.path.products[0] == (1,) * 40 and gru.path.products[0] == (1,) * 40
    assert {b - a for a, b in zip(lstm.path.ops[0][3:], lstm.path.ops[0][4:])} == {2}  # once past the first steps
    assert {b - a for a, b in zip(gru.path.ops[0][1:], gru.path.ops[0][2:])} == {3}
    assert small_result.recurrence.path.products[0][-1] == 40  # Elman: one W_hh per step
    assert lstm.path_width == 16 and lstm.reach.dtype == "float64" and 0 < lstm.reach.first < 1


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_gated_path_length_does_not_depend_on_width(cell):
    x = embed(synthetic_tokens(12), 16, seed=0)  # (12, 16)
    narrow, wide = trace_path(cell, 4, 4, x, 0), trace_path(cell, 16, 16, x, 1)
    assert narrow.products == wide.products and narrow.ops == wide.ops
    assert narrow.row(0, "products") == (1,) * 12  # the bypass: no product after W_ih x_1
    per_step = {"lstm": 2, "gru": 3}[cell]
    assert narrow.row(0, "ops")[-1] - narrow.row(0, "ops")[-2] == per_step  # still grows with T in ops


def test_gated_sentence_flips_with_its_measurements(small_result):
    text = prose.gated_sentence(small_result, EN)
    assert "carries position 1 past every W_hh" in text and "still fades" in text
    lstm, gru = small_result.gated
    long_path = replace(lstm.path, products=((*lstm.path.products[0][:-1], 40),))
    rising = replace(lstm.reach, norms=tuple(2.0 ** (39 - i) for i in range(40)))  # reach_1 = 2^39 reach_T
    assert rising.factor_per_step() == pytest.approx(2.0)
    patched = replace(small_result, gated=(replace(lstm, path=long_path, reach=rising), replace(gru, reach=rising)))
    text = prose.gated_sentence(patched, EN)
    assert "did not shorten the path in products here" in text and "keeps it from fading: ×2.00" in text


# --- Reach: the per-step factor agrees with the reach, attention against T (L3, L4) -----------------

def test_the_per_step_factor_agrees_with_the_reach_beside_it():
    result = run_compare(synthetic_tokens(40), "t", CompareConfig(d_model=16, spectral_radius=3, time=False,
                                                                  sensitivity_draws=2))
    reach = result.recurrence.reach
    factor = reach.factor_per_step()
    assert reach.norms[39] * factor ** 39 == pytest.approx(reach.first, rel=1e-9)
    text = prose.reach_sentence(result, EN)
    assert f"norm {EN.number(reach.first)} through the recurrence — {EN.number(reach.norms[39])} at distance 0, " \
           f"times {EN.number(factor)} per step over 39 steps" in text


def test_attention_reach_against_T(small_result):
    att = small_result.attention
    quarter, half, full = att.reach_quarter, att.reach_half, att.reach
    assert (quarter.position, half.position, full.position) == (9, 19, 39)  # y_10, y_20, y_40 on their prefixes
    assert quarter.first > half.first > full.first  # the one weight α_T1 shrinks as the softmax spreads over more keys
    text = prose.attention_trend_sentence(small_result, EN)
    assert "the weight shrinks as the softmax spreads" in text
    assert f"{EN.number(quarter.first)} at T = 10, {EN.number(half.first)} at T = 20 and " \
           f"{EN.number(full.first)} at T = 40" in text

    def same_as_full(reach):
        return replace(reach, norms=(full.first,) + reach.norms[1:])

    flat = replace(small_result, attention=replace(att, reach_half=same_as_full(half),
                                                   reach_quarter=same_as_full(quarter)))
    assert "does not fall with the length" in prose.attention_trend_sentence(flat, EN)
    # two lengths state no trend (a power through two points fits anything)
    assert prose.attention_trend_sentence(replace(small_result, attention=replace(att, reach_quarter=None)), EN) is None


@pytest.mark.parametrize(("lengths", "stated"), [((4, 8, 16), True), ((5, 10, 20), True), ((5, 10, 19), False),
                                                 ((8, 16), False), ((2, 4, 8, 16), True)])
def test_a_trend_needs_three_lengths_spanning_four_times(lengths, stated):
    def at(T):
        return Reach((1.0 / T,) + (1.0,) * (T - 1), T - 1, "exact", "float64", 2.2e-308, 5e-324, 0, 0, "batched")

    trend = compare_reach.reach_trend([at(T) for T in lengths])
    assert (trend is not None) == stated
    if stated:
        assert trend.lengths == lengths and trend.exponent == pytest.approx(-1.0, abs=1e-12)


# --- Sensitivity (L3, issue item 7) -----------------------------------------------------------------

def test_a_spectral_radius_of_3_makes_the_reach_chaotic():
    x = embed(synthetic_tokens(200), 16, seed=0)  # (200, 16)
    rnn = ElmanRNN(16, 16, generator=torch.Generator().manual_seed(0)).eval()
    rnn.set_spectral_radius(3.0)
    with fixed_threads(1):  # a small float64 backward: spinning threads only slow it on a shared machine
        chaotic = measure_sensitivity(rnn, "weight_hh", x, probes=None)
        again = measure_sensitivity(rnn, "weight_hh", x, probes=None)
        rnn.set_spectral_radius(0.5)
        calm = measure_sensitivity(rnn, "weight_hh", x, probes=None)
    assert chaotic.chaotic  # measured ≈ 5.7 orders of magnitude from a 1e-7 nudge (the threshold is 1)
    assert again.perturbed == chaotic.perturbed  # seeded
    assert not calm.chaotic and calm.spread_orders < 0.01


def test_the_sensitivity_sentence_flips_with_the_spread(small_result):
    assert small_result.sensitivity is None and prose.sensitivity_sentence(small_result, EN) is None  # ρ ≈ 0.6
    stable = Sensitivity(reach=1.0, perturbed=(1.5, 0.8), weight="weight_hh", relative=1e-7, seed=0)
    chaotic = replace(stable, perturbed=(1.5, 1e4))
    assert (stable.chaotic, chaotic.chaotic) == (False, True)
    assert replace(stable, perturbed=(0.0,)).spread_orders == math.inf  # an underflow beside a number
    assert "reach is stable" in prose.sensitivity_sentence(replace(small_result, sensitivity=stable), EN)
    text = prose.sensitivity_sentence(replace(small_result, sensitivity=chaotic), EN)
    assert "reach is chaotic" in text and "4.00 orders of magnitude" in text and "one draw" in text


# --- Time at two scopes, with spread and the busy-machine caveat (L8) --------------------------------

def timing(median: float, label: str = "t") -> Timing:
    samples = (median * 0.99, median, median * 1.01)
    return Timing(label, samples, median, median * 0.02, median, 12, 2, "cpu", False, 0.2)


def timed(result: CompareResult, rnn: float, sdpa: float, mha: float, load: MachineLoad | None) -> CompareResult:
    """Every machine at its median with the same ±1 % in each round, and rounds.decide's decisions on them."""
    from seqlab.measure.rounds import Rounds, decide

    layer = "nn.MultiheadAttention (8 heads)"
    times = {"nn.RNN": timing(rnn, "nn.RNN"), "SDPA": timing(sdpa, "SDPA"), layer: timing(mha, layer)}
    rounds = Rounds(per_round={name: t.samples for name, t in times.items()}, calls=dict.fromkeys(times, 4),
                    first_call_s=dict.fromkeys(times, 0.0), threads=2, device="cpu", load=load)
    return replace(result, recurrence=replace(result.recurrence, time_library=times["nn.RNN"]),
                   attention=replace(result.attention, time_library=times["SDPA"], time_layer=times[layer]),
                   gated=tuple(replace(g, time_library=timing(0.03)) for g in result.gated), load=load,
                   time_decisions=(decide(rounds, "nn.RNN", "SDPA", 1.2), decide(rounds, "nn.RNN", layer, 1.2)))


def test_the_layer_time_verdict_and_the_busy_caveat(small_result):
    quiet, busy = MachineLoad(0.1, 2, False), MachineLoad(3.0, 2, True)
    sentences = prose.time_sentences(timed(small_result, 0.02, 0.01, 0.01, quiet), EN)
    assert len(sentences) == 3  # call, layer, LSTM/GRU: no caveat on a quiet machine
    assert "At layer scope on 2 threads" in sentences[1]
    assert "attention finishes 2.00 times as fast as nn.RNN (×2.00–2.00 over 3 interleaved rounds)" in sentences[1]
    assert sentences[2] == "On 2 threads nn.LSTM takes 30.0 ms and nn.GRU 30.0 ms."
    sentences = prose.time_sentences(timed(small_result, 0.02, 0.01, 0.08, busy), EN)
    assert "the recurrence finishes 4.00 times as fast (×4.00–4.00 over 3 interleaved rounds)" in sentences[1]
    assert sentences[-1].startswith("The machine was busy: its load average was 3.00 on 2 CPUs")
    # within the margin (×1.2 either way, rounds.decide's tie) neither side is said to finish first
    sentences = prose.time_sentences(timed(small_result, 0.02, 0.0175, 0.019, quiet), EN)
    assert "about as fast, within ×1.20 either way (nn.RNN / SDPA ×1.14–1.14" in sentences[0]
    assert "finishes" not in sentences[0]
    assert "about as fast as nn.RNN, within ×1.20 either way" in sentences[1]
    spanish = prose.time_sentences(timed(small_result, 0.02, 0.0175, 0.019, quiet), Formatter("es"))
    assert "dentro de ×1,20 en un sentido u otro" in spanish[1]


def test_json_holds_scopes_sources_and_gated_columns(invoke):
    data = json.loads(invoke("--tokens", "24", "--d-model", "8", "--no-time", "--json").output)
    assert [scope["name"] for scope in data["scopes"]] == ["lesson", "layer", "kernels"]
    lesson, layer, kernels = data["scopes"]
    # 24 * (8² + 8·8) = 3_072; 24² * 16 = 9_216
    assert (lesson["recurrence"]["closed_form"], lesson["attention"]["closed_form"]) == (3_072, 9_216)
    assert lesson["ratio"] == {"fraction": "3", "value": 3.0} and lesson["winner"] == "recurrence"
    # layer: 4 * 24 * 64 + 9_216 = 15_360 = (2 + 24/8) * 3_072
    assert layer["attention"]["counted"] == 15_360 and layer["crossover"] is None
    lstm = next(entry for entry in kernels["others"] if entry["machine"] == "lstm")
    assert (lstm["source"], lstm["independent"], lstm["independent_source"]) == ("seqlab", 4 * 3_072, "pytorch")
    assert [g["cell"] for g in data["gated"]] == ["lstm", "gru"]
    assert data["gated"][1]["bypass"] == BYPASS["gru"][1] and data["gated"][0]["path"]["products"][0][-1] == 1
    assert data["sensitivity"] is None and data["heads"] == 8


def test_path_width_option(invoke):
    bad = invoke("--tokens", "12", "--d-model", "8", "--no-time", "--path-width", "0")
    assert bad.exit_code == 2 and "Invalid value for '--path-width'" in bad.output
    def run(width: str) -> str:  # sentences wrap at the console's width: read them as one line
        return " ".join(invoke("--tokens", "12", "--d-model", "8", "--no-time", "--path-width", width,
                               "--lang", "en").output.split())

    narrow, full = run("4"), run("64")
    assert "(Paths traced at d = 4: their length does not depend on the width.)" in narrow
    assert "traced at d =" not in full  # capped at d_h = 8: traced at full width, nothing to say
