"""The ``compare`` study (seqlab.studies.compare): every figure checked by two routes (L1–L10).

Work: closed form == counted on the explicit machine == counted on nn.RNN / SDPA (L5, L6, L7, L9); the three
scopes, LSTM/GRU and the verdicts that can fail are in tests/test_compare_scopes.py.
Span: the recurrence's chain grows by one step per token, attention's does not move (L1, L2).
Reach: position 1 fades through the recurrence, not through attention (L3, L4).
Order: shuffled rows come out shuffled through attention only (L10).
Each expected number sits next to its hand arithmetic.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from fractions import Fraction

import pytest

import seqlab.memory
from seqlab.errors import SeqlabError
from seqlab.measure.timing import Timing
from seqlab.studies.compare import SCORES, CompareConfig, CompareResult, check_compare_size, run_compare
from seqlab.text import builtin_text, synthetic_tokens, tokenize


def small(T: int, **config) -> CompareResult:
    """``compare`` on T synthetic tokens at d_model = 16, untimed, without the LSTM and GRU columns (tested in
    test_compare_scopes.py), unless overridden."""
    return run_compare(synthetic_tokens(T), f"synthetic ({T} tokens)",
                       CompareConfig(**{"d_model": 16, "time": False, "gated": False, **config}))


# --- Work (L5, L6, L7) -----------------------------------------------------------------------------

def test_equal_widths_work_is_exact(small_result):
    rec, att = small_result.recurrence, small_result.attention
    assert (small_result.T, small_result.d_model, small_result.d_h, small_result.d_k, small_result.d_v) == \
        (40, 16, 16, 16, 16)
    # L5: 40 * (16**2 + 16*16) = 40 * 512 = 20_480
    assert rec.closed_form == rec.counted.multiplications == rec.counted_library.multiplications == 20_480
    # L6: 40**2 * (16 + 16) = 1_600 * 32 = 51_200
    assert att.closed_form == att.counted.multiplications == att.counted_library.multiplications == 51_200
    # projections, apart: 40 * 16 * (2*16 + 16) = 640 * 48 = 30_720
    assert att.projections_closed_form == att.projections_counted.multiplications == 30_720
    assert rec.projections_closed_form == 0 and rec.projections_counted is None
    # L7: T/d = 40/16 = 5/2; crossover at T = d = 16
    assert small_result.work_ratio == Fraction(5, 2)
    assert small_result.crossover == Fraction(16)
    # nothing ran that the counter could not account for
    for work in (rec.counted, rec.counted_library, att.counted, att.counted_library, att.projections_counted):
        assert work.unaccounted == {}


def test_library_counts_come_from_the_library_kernels(small_result):
    rec, att = small_result.recurrence, small_result.attention
    assert set(rec.counted.by_op) == {"aten.mm"}  # the explicit loop: one mm per weight per step
    assert rec.counted_library.by_op != rec.counted.by_op  # nn.RNN ran its own kernel
    assert set(att.counted_library.by_op) != set(att.counted.by_op)  # SDPA, not the explicit Q K^T, A V


def test_unequal_widths_work_is_exact():
    result = small(40, d_h=24, d_k=8, d_v=12)
    rec, att = result.recurrence, result.attention
    assert (result.d_model, result.d_h, result.d_k, result.d_v) == (16, 24, 8, 12)
    # L5: 40 * (24**2 + 24*16) = 40 * (576 + 384) = 40 * 960 = 38_400
    assert rec.closed_form == rec.counted.multiplications == rec.counted_library.multiplications == 38_400
    # L6: 40**2 * (8 + 12) = 1_600 * 20 = 32_000
    assert att.closed_form == att.counted.multiplications == att.counted_library.multiplications == 32_000
    # projections: 40 * 16 * (2*8 + 12) = 640 * 28 = 17_920
    assert att.projections_closed_form == att.projections_counted.multiplications == 17_920
    # L7: 32_000 / 38_400 = 5/6; crossover 24 * (24 + 16) / (8 + 12) = 960 / 20 = 48
    assert result.work_ratio == Fraction(5, 6)
    assert result.crossover == Fraction(48)


@pytest.mark.parametrize(("score", "counted"), [
    ("dot", 51_200),  # 40**2 * (16 + 16) = 51_200: Q K^T and A V only
    ("scaled_dot", 51_200),  # the 1/sqrt(d_k) scaling is not a product
    ("general", 61_440),  # Q W: 40 * 16 * 16 = 10_240, plus 51_200
    ("additive", 71_680),  # W_q q, W_k k: 2 * 40*16*16 = 20_480; w^T tanh: 40**2*16 = 25_600; A V: 25_600
])
def test_counted_attention_work_per_score(score, counted):
    att = small(40, score=score).attention
    assert att.closed_form == att.counted.multiplications == counted  # each score has its closed form
    # SDPA computes the dot scores (scale 1 for "dot"); for the others there is no library row
    if score in ("dot", "scaled_dot"):
        assert att.counted_library.multiplications == counted
    else:
        assert att.counted_library is None


# --- Span (L1, L2) ---------------------------------------------------------------------------------

def test_recurrence_span_grows_one_step_per_token():
    spans = {T: small(T).recurrence.span for T in (8, 16, 32)}
    # products in a row: one W_hh h_{t-1} per step, so exactly T
    assert [spans[T].products for T in (8, 16, 32)] == [8, 16, 32]
    # ops in a row: mm, add, add, tanh per step = 4 T, so the growth per token is the same on both intervals
    assert [spans[T].ops for T in (8, 16, 32)] == [32, 64, 128]
    assert (spans[16].ops - spans[8].ops) / 8 == (spans[32].ops - spans[16].ops) / 16 == 4


def test_attention_span_does_not_depend_on_T():
    spans = [small(T).attention.span for T in (8, 64, 512)]
    # x W_q, then Q K^T, then A V: 3 products in a row (L2's two, after the projection), whatever T
    # the call on Q, K, V: Q Kᵀ, ÷√d_k, softmax, A V — 4 ops, 2 products (L2's two products)
    assert [(s.ops, s.products) for s in spans] == [(4, 2)] * 3
    assert all(s.fused == {} for s in spans)


# --- Reach (L3, L4) --------------------------------------------------------------------------------

def test_reach_through_recurrence_is_orders_of_magnitude_below_attention():
    result = small(64)
    rec, att = result.recurrence.reach, result.attention.reach
    assert len(rec.norms) == len(att.norms) == 64
    assert rec.position == att.position == 63
    assert rec.dtype == att.dtype == "float64"
    assert 0 < rec.first < 1e-10 * att.first  # measured ≈ 1.5e-20 against ≈ 5e-2
    assert rec.first < 1e-10 * rec.norms[-1]  # and far below its own last position
    assert 0.8 <= att.decay_per_step() <= 1.25  # attention: no decay with distance (L4)


def test_recurrence_decay_follows_the_spectral_radius():
    decays = {}
    for radius in (0.5, 0.9, 1.5):
        result = small(20, spectral_radius=radius)
        assert result.spectral_radius == pytest.approx(radius, rel=1e-6)
        decays[radius] = result.recurrence.reach.decay_per_step()
        assert 0.8 <= result.attention.reach.decay_per_step() <= 1.25
    assert decays[0.5] < 0.5  # tanh only adds shrinkage to rho = 0.5 (L3); measured ≈ 0.35
    assert decays[0.5] < decays[0.9] < decays[1.5]  # monotone in the radius


# --- Order (L10) -----------------------------------------------------------------------------------

@pytest.mark.parametrize("score", SCORES)
def test_order_blindness(score):
    result = small(12, score=score)
    rec, att = result.recurrence, result.attention
    assert rec.order.kind == "rows" and rec.order.holds is False
    assert rec.order.max_abs_change > 1e3 * rec.order.tolerance  # a real change, not rounding
    assert rec.key_value_order is None
    assert att.order.kind == "rows" and att.order.holds is True
    assert att.key_value_order.kind == "key-value pairs" and att.key_value_order.holds is True
    assert att.order.max_abs_change <= att.order.tolerance
    assert sorted(att.order.permutation) == list(range(12))
    assert att.order.permutation != tuple(range(12))


# --- Time (L8) -------------------------------------------------------------------------------------

@pytest.mark.parametrize("time_explicit", [False, True])
def test_timing_when_asked(time_explicit):
    from seqlab.measure.rounds import DEFAULT_ROUNDS

    result = run_compare(synthetic_tokens(8), "tiny", CompareConfig(d_model=8, time=True, min_run_time=0.05,
                                                                   time_explicit=time_explicit, gated=False,
                                                                   threads=1))
    rec, att = result.recurrence, result.attention
    for timing, label in ((rec.time_library, "nn.RNN"), (att.time_library, "SDPA")):
        assert isinstance(timing, Timing)
        assert timing.label == label
        assert timing.median_s > 0 and timing.runs >= DEFAULT_ROUNDS and len(timing.samples) == DEFAULT_ROUNDS
        assert timing.threads == 1 == result.threads and timing.device == "cpu"
    # who finishes first comes from the same interleaved rounds: nn.RNN against the call, then the layer
    sdpa, layer = result.time_decisions
    assert (sdpa.a, sdpa.b, layer.b) == ("nn.RNN", "SDPA", att.time_layer.label) and sdpa.margin == 1.2
    assert sdpa.ratio == pytest.approx(statistics.median(r / a for r, a in zip(rec.time_library.samples,
                                                                                  att.time_library.samples)))
    if time_explicit:
        assert rec.time_explicit.label == "ElmanRNN (loop)" and rec.time_explicit.median_s > 0
        assert att.time_explicit.label == "Attention (explicit)" and att.time_explicit.median_s > 0
        assert len(rec.time_explicit.samples) == DEFAULT_ROUNDS
    else:
        assert rec.time_explicit is None and att.time_explicit is None


def test_no_timing_when_off(small_result):
    for machine in (small_result.recurrence, small_result.attention):
        assert machine.time_library is None and machine.time_explicit is None


# --- Bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("T", "config", "named"), [
    (1, CompareConfig(d_model=16, time=False), "has 1"),
    (8, CompareConfig(d_model=0, time=False), "d_model must be an integer >= 1, received 0"),
    (8, CompareConfig(d_model=16, d_h=-3, time=False), "d_h must be an integer >= 1, received -3"),
    (8, CompareConfig(d_model=16, d_k=70_000, time=False), "received 70000"),
    (8, CompareConfig(d_model=16, score="foo", time=False), "received 'foo'"),
    (8, CompareConfig(d_model=16, spectral_radius=0.0, time=False), "received 0.0"),
])
def test_bad_input_is_refused_with_its_value(T, config, named):
    with pytest.raises(SeqlabError) as error:
        run_compare(synthetic_tokens(T), "bad", config)
    assert named in str(error.value)


def test_unknown_score_lists_the_scores():
    with pytest.raises(SeqlabError) as error:
        small(8, score="foo")
    assert all(score in str(error.value) for score in SCORES)


def test_size_that_cannot_fit_is_refused_before_allocating():
    with pytest.raises(SeqlabError) as error:
        check_compare_size(10**6, CompareConfig())
    message = str(error.value)
    assert "T = 1000000" in message and "d_model = 512" in message and "GiB" in message


def test_memory_guard_applies_inside_run_compare(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 1024)
    with pytest.raises(SeqlabError) as error:
        small(40)
    assert "T = 40" in str(error.value) and "1.0 KiB available" in str(error.value)  # readable units


def test_check_compare_size_accepts_a_small_size():
    assert check_compare_size(40, CompareConfig(d_model=16)) is None


# --- The lesson's size: the built-in Spanish text at d_model = 512 (L9) ---------------------------

def test_builtin_spanish_text_at_the_papers_width():
    tokens = tokenize(builtin_text("es").content)
    T = len(tokens)
    assert T == 835  # o200k_base tokens of the built-in text (about the lesson's 800)
    result = run_compare(tokens, "built-in (es)", CompareConfig(time=False, gated=False))
    assert (result.T, result.d_model, result.tokenizer) == (T, 512, "o200k_base")
    # attention: 2 * 835**2 * 512 = 713_958_400
    assert result.attention.counted.multiplications == result.attention.closed_form == 2 * T**2 * 512 \
        == 713_958_400
    # recurrence: 2 * 835 * 512**2 = 437_780_480
    assert result.recurrence.counted.multiplications == result.recurrence.closed_form == 2 * T * 512**2 \
        == 437_780_480
    assert result.work_ratio == Fraction(835, 512)  # T/d, past the crossover at 512
    assert result.recurrence.span.products == 835 and result.attention.span.products == 2


# --- How timings are shown (L8): timed blocks, no IQR from fewer than 3, the caveat in the prose ----------

def synthetic_timing(median: float, blocks: int, spread: float = 0.01, label: str = "t") -> Timing:
    """A Timing of ``blocks`` timed blocks of 4 calls each around ``median``; noisy as measure_time decides."""
    samples = tuple(median * (1 + spread * (i - blocks // 2)) for i in range(blocks))
    iqr = median * spread * 2 if blocks >= 3 else 0.0
    return Timing(label=label, samples=samples, median_s=median, iqr_s=iqr, first_call_s=median, runs=4 * blocks,
                  threads=2, device="cpu", noisy=blocks < 3 or iqr > 0.1 * median, min_run_time=0.02)


def timed(result: CompareResult, recurrence: Timing, attention: Timing) -> CompareResult:
    """``result`` with these two timings and the decision rounds.decide makes on their per-round samples."""
    from dataclasses import replace

    from seqlab.measure.rounds import Rounds, decide

    recurrence, attention = replace(recurrence, label="nn.RNN"), replace(attention, label="SDPA")
    rounds = Rounds(per_round={"nn.RNN": recurrence.samples, "SDPA": attention.samples},
                    calls={"nn.RNN": 4, "SDPA": 4}, first_call_s={"nn.RNN": 0.0, "SDPA": 0.0}, threads=2,
                    device="cpu", load=None)
    return replace(result, recurrence=replace(result.recurrence, time_library=recurrence),
                   attention=replace(result.attention, time_library=attention),
                   time_decisions=(decide(rounds, "nn.RNN", "SDPA", 1.2),))


def test_a_timing_shows_its_blocks_not_its_calls():
    from seqlab.render.compare import _Formatter

    f = _Formatter("en")
    assert f.time(synthetic_timing(0.693, 1)) == "693 ms (one timed block, no spread)"  # no "IQR 0 s, n = 1"
    assert f.time(synthetic_timing(0.693, 2)) == "693 ms (2 timed blocks, no spread)"
    assert f.time(synthetic_timing(0.024, 8)) == "24.0 ms (IQR 480 µs, 8 timed blocks)"  # 8 blocks, 32 calls
    assert f.time(synthetic_timing(0.024, 8, spread=0.2)) == "24.0 ms (IQR 9.60 ms, 8 timed blocks) noisy"
    assert _Formatter("es").time(synthetic_timing(0.693, 1)) == "693 ms (un solo bloque cronometrado, sin dispersión)"


def test_the_time_sentence_comes_from_the_rounds(small_result):
    """Who finishes first is read from rounds.decide on the per-round times, with the spread and threads."""
    from seqlab.render.compare import compare_sentences

    steady = compare_sentences(timed(small_result, synthetic_timing(0.02, 8), synthetic_timing(0.01, 8)), "en")[-1]
    assert steady == ("On 2 threads nn.RNN takes 20.0 ms and SDPA (the attention call alone) 10.0 ms: attention "
                      "finishes 2.00 times as fast (×2.00–2.00 over 8 interleaved rounds).")
    # the same medians, but rounds that disagree: nothing is said to finish first
    wide = synthetic_timing(0.01, 8, spread=0.2)  # rounds at 0.2 … 1.6 times the median
    against = replace(wide, samples=wide.samples[::-1])  # the recurrence's slow rounds meet attention's quick ones
    noisy = compare_sentences(timed(small_result, replace(synthetic_timing(0.02, 8, spread=0.2)), against), "en")[-1]
    assert "times as fast" not in noisy and "which finishes first is not judged" in noisy
    rough = compare_sentences(timed(small_result, synthetic_timing(0.693, 8), synthetic_timing(0.024, 8)), "es")[-1]
    assert rough.endswith("veces más rápido (×28,9–28,9 en 8 rondas intercaladas).")

def test_the_learner_command_measures_the_same_input_in_both_languages():
    """``compare --tokens N`` is one synthetic input whatever the output language: the same JSON, figure for figure
    (issue 37: the README's learner command printed other numbers, and opposite sentences, in Spanish)."""
    import json

    from typer.testing import CliRunner

    from seqlab.cli import app

    outputs = [CliRunner().invoke(app, ["compare", "--tokens", "16", "--d-model", "8", "--no-time", "--json",
                                        "--lang", lang]) for lang in ("en", "es")]
    assert all(output.exit_code == 0 for output in outputs), [output.output for output in outputs]
    english, spanish = (json.loads(output.stdout) for output in outputs)
    assert english == spanish
