"""Decoding (seqlab.layers.decoding, seqlab.measure.decode, seqlab.studies.decode, seqlab.render.decode).

Two routes agree: the step API run over t = 1..T equals the parallel causal forward (float64, tolerance 1e-12);
the multiplications counted on one step equal the closed forms at three positions (exact integers, hand
arithmetic beside them). Every sentence is a decision on a measurement: each test below patches the
measurement and sees the sentence change (L1, L2, L5, L6).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import seqlab.memory
import seqlab.studies.decode as study
from seqlab.errors import SeqlabError
from seqlab.measure.decode import (MACHINES, available_machines, build_decoder, measure_decode_step,
                                   step_multiplications)
from seqlab.measure.timing import Timing
from seqlab.render.decode import decode_sentences, machine_label
from seqlab.studies.decode import DecodeConfig, check_decode_config, measure_asymmetry, run_decode

D = 16
POSITIONS = (1, 7, 33)
#: Counted multiplications per new token at d = 16 and t = 1, 7, 33 (one per multiply-add).
EXPECTED_MULTIPLICATIONS = {
    "elman": (512, 512, 512),  # W_hh h + W_xh x = 2 * 16**2 = 512, whatever t
    "attention_kv_cache": (800, 992, 1824),  # 3 * 16**2 + 2 * t * 16 = 768 + 32t: 800, 992, 1824
    "attention_no_cache": (800, 4064, 18208),  # 16**2 + 2t * 16**2 + 2t * 16 = 256 + 544t: 800, 4064, 18208
    "linear_attention": (1552, 1552, 1552),  # q, k, v 3*256 + W_o 256 + S update and read 2*256 + z·q 16 = 1552
    "selective_recurrence": (1024, 1024, 1024),  # W_Δ, W_u, W_C in and W_o out: 4 * 16**2 = 1024
    # Mamba block, N = 16, E = 32, R = 1: W_in 16·64 + W_x 32·33 + W_Δ 32 + (Δu)⊗B and h·C 2·32·16 + W_out 32·16
    "mamba_block": (3648, 3648, 3648),
}
#: State bytes after the step, float32: h (16), a cache of t keys and values, t inputs, linear attention's (S, z).
EXPECTED_STATE_BYTES = {
    "elman": (64, 64, 64),  # 16 * 4
    "attention_kv_cache": (128, 896, 4224),  # 2 * t * 16 * 4 = 128t
    "attention_no_cache": (64, 448, 2112),  # t * 16 * 4 = 64t
    "linear_attention": (1088, 1088, 1088),  # (16 * 16 + 16) * 4
    "selective_recurrence": (64, 64, 64),  # 16 * 4
    "mamba_block": (2432, 2432, 2432),  # the SSM state 32 * 16 and the convolution window 32 * (k - 1 = 3), * 4
}


def needs(machine: str):
    return pytest.mark.skipif(machine not in available_machines(), reason=f"{machine}'s module is not present")


ALL = [pytest.param(m, marks=needs(m)) for m in MACHINES]


# --- The step API against the parallel forward -----------------------------------------------------------------

def _forward(decoder, x):
    if hasattr(decoder, "rnn"):
        return decoder.rnn(x)
    if hasattr(decoder, "attention"):
        return decoder.attention(x)[0]
    return decoder(x)


@pytest.mark.parametrize("machine", ALL)
def test_steps_equal_the_parallel_causal_forward_in_float64(machine):
    decoder = build_decoder(machine, 6, seed=3, dtype=torch.float64)
    x = torch.randn(2, 9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))  # (B, T, d)
    state, outputs = decoder.initial_state(2, dtype=torch.float64), []
    with torch.no_grad():
        for x_t in x.unbind(dim=1):
            y, state = decoder.step(x_t, state)
            outputs.append(y)
        expected = _forward(decoder, x)
    torch.testing.assert_close(torch.stack(outputs, dim=1), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("machine", ["attention_kv_cache", "attention_no_cache"])
def test_prefix_state_equals_the_state_the_steps_leave(machine):
    decoder = build_decoder(machine, 5, dtype=torch.float64)
    prefix = torch.randn(1, 4, 5, dtype=torch.float64)
    state = decoder.initial_state(1, dtype=torch.float64)
    with torch.no_grad():
        for x_t in prefix.unbind(dim=1):
            _, state = decoder.step(x_t, state)
        direct = decoder.state_from_prefix(prefix)
    for stepped, built in zip(state, direct, strict=True):
        torch.testing.assert_close(stepped, built, rtol=1e-12, atol=1e-12)


def test_decoders_refuse_a_non_causal_attention_and_a_wrong_input():
    from seqlab.layers.attention import SelfAttention
    from seqlab.layers.decoding import KVCacheDecoder

    with pytest.raises(SeqlabError, match="causal=False"):
        KVCacheDecoder(SelfAttention(4))
    decoder = build_decoder("elman", 4)
    with pytest.raises(SeqlabError, match=r"\(B, 4\), received \(1, 5\)"):
        decoder.step(torch.zeros(1, 5), decoder.initial_state(1))


# --- Counted work and state bytes per new token ------------------------------------------------------------------

@pytest.mark.parametrize("machine", ALL)
def test_counted_multiplications_equal_the_closed_forms_at_three_positions(machine):
    counted = tuple(measure_decode_step(machine, t, d_model=D, time=False).multiplications for t in POSITIONS)
    closed = tuple(step_multiplications(machine, t, D) for t in POSITIONS)
    assert counted == closed == EXPECTED_MULTIPLICATIONS[machine]


@pytest.mark.parametrize("machine", ALL)
def test_state_bytes_fixed_for_recurrences_linear_in_t_for_the_cache(machine):
    steps = [measure_decode_step(machine, t, d_model=D, time=False) for t in POSITIONS]
    assert tuple(s.state_bytes for s in steps) == EXPECTED_STATE_BYTES[machine]
    assert all(not s.unaccounted for s in steps)


def test_batch_multiplies_counts_and_bytes():
    step = measure_decode_step("attention_kv_cache", 7, d_model=D, batch=3, time=False)
    assert (step.multiplications, step.state_bytes) == (3 * 992, 3 * 896)


def test_generation_span_grows_with_T_while_training_span_does_not():
    asymmetry = measure_asymmetry((4, 8), 4)
    assert asymmetry.training == (3, 3)  # projections, Q K^T, A V: three products in a row whatever T
    assert asymmetry.generation == (12, 24)  # 3 products per token, T tokens in a row
    assert asymmetry.recurrence == (4, 8)  # one product (by W_hh and W_xh side by side) per token
    assert asymmetry.holds


# --- Refusals ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "message"), [
    ({"positions": (0,)}, "positions must be an integer >= 1, received 0"),
    ({"positions": (-4,)}, "received -4"),
    ({"positions": (study.MAX_POSITION + 1,)}, f"in \\[1, {study.MAX_POSITION}\\]"),
    ({"positions": ()}, "at least one position"),
    ({"machines": ("gru",)}, "machine must be one of elman"),
])
def test_bad_configs_are_refused(changes, message):
    with pytest.raises(SeqlabError, match=message):
        check_decode_config(DecodeConfig(**changes))


def test_a_step_too_large_for_memory_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 2 * seqlab.memory.GIB)
    # 6 * 65,536 * 16,384 * 4 bytes + 8 * 16,384**2 * 4 = 34,359,738,368 bytes, 32.0 GiB
    with pytest.raises(SeqlabError, match=r"would need about 32\.0 GiB \(mostly a cache of 65536 positions\)"):
        check_decode_config(DecodeConfig(positions=(65_536,), d_model=16_384))


# --- Sentences follow the measurements -------------------------------------------------------------------------

SMALL = DecodeConfig(positions=(4, 8), d_model=8, machines=("elman", "attention_kv_cache", "attention_no_cache"),
                     time=False, span_lengths=(4, 8), span_d_model=4)


def _timing(seconds: float) -> Timing:
    return Timing("patched", (seconds,) * 3, seconds, seconds / 100, seconds, 3, 1, "cpu", False, 0.01)


def _patched(monkeypatch, change):
    """run_decode with every measured step passed through ``change(step) -> step``."""
    real = study.measure_decode_step
    monkeypatch.setattr(study, "measure_decode_step", lambda *a, **k: change(real(*a, **k)))
    return run_decode(SMALL)


def test_work_winner_follows_the_counted_multiplications(monkeypatch):
    text = " ".join(decode_sentences(run_decode(SMALL)))
    assert "Fewest multiplications per new token: Elman RNN at t = 4, 8" in text
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, multiplications=10**9)
                      if s.machine == "elman" else s)
    assert "Fewest multiplications per new token: attention, KV cache at t = 4, 8" in " ".join(decode_sentences(result))


def test_time_winner_and_its_margin_follow_the_measured_times(monkeypatch):
    times = {"elman": 1e-3, "attention_kv_cache": 1e-4, "attention_no_cache": 5e-4}
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, timing=_timing(times[s.machine])))
    text = " ".join(decode_sentences(result))
    assert "Fastest per new token on this machine: attention, KV cache at t = 4, 8" in text
    assert "and takes ×5.00 its time" in text  # 5e-4 / 1e-4
    times.update(elman=1.1e-4, attention_no_cache=1.05e-4)  # within ×1.2 of the KV cache: no winner
    text = " ".join(decode_sentences(_patched(monkeypatch, lambda s: dataclasses.replace(
        s, timing=_timing(times[s.machine])))))
    assert "too close to call" in text and "Fastest per new token on this machine" not in text
    assert "under the ×1.20 margin" in text and "neither time leads the other by ×1.20 beyond their spread" in text


def test_a_time_lead_inside_the_spread_decides_nothing(monkeypatch):
    def wide(seconds: float) -> Timing:  # IQR 3x the median: the bands of ×2 apart medians overlap
        return dataclasses.replace(_timing(seconds), iqr_s=3 * seconds)

    times = {"elman": 1e-3, "attention_kv_cache": 1e-4, "attention_no_cache": 2e-4}
    text = " ".join(decode_sentences(_patched(monkeypatch, lambda s: dataclasses.replace(
        s, timing=wide(times[s.machine])))))
    assert "attention, KV cache leads attention, no cache by ×2.00, within the spread of the two times" in text
    assert "Fastest per new token on this machine" not in text


def test_cache_sentence_says_when_recomputing_is_faster(monkeypatch):
    times = {"elman": 1e-3, "attention_kv_cache": 3e-4, "attention_no_cache": 1e-4}
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, timing=_timing(times[s.machine])))
    assert "yet it is the faster one here, by ×3.00" in " ".join(decode_sentences(result))


def test_state_growth_follows_the_measured_bytes(monkeypatch):
    text = " ".join(decode_sentences(run_decode(SMALL)))
    assert "Fixed state whatever t: Elman RNN." in text
    assert "Attention, KV cache: the state grows in step with t, 256 to 512 bytes" in text  # 2*t*8*4 at t = 4, 8
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, state_bytes=64)
                      if s.machine == "attention_kv_cache" else s)
    assert "Fixed state whatever t: Elman RNN, attention, KV cache." in " ".join(decode_sentences(result))
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, state_bytes=s.t ** 2)
                      if s.machine == "attention_kv_cache" else s)
    assert "not in step with t" in " ".join(decode_sentences(result))


def test_asymmetry_sentence_follows_the_measured_spans(monkeypatch):
    text = " ".join(decode_sentences(run_decode(SMALL)))
    assert "has 3 and 3 matrix products in a row at T = 4 and 8: it does not grow" in text
    assert "takes 12 and 24 in a row, T steps like the Elman RNN's 4 and 8" in text
    monkeypatch.setattr(study, "training_span", lambda T, d, seed=0: T)  # a training span that grew with T
    assert "do not show the asymmetry" in " ".join(decode_sentences(run_decode(SMALL)))


def test_a_count_that_misses_its_closed_form_is_named(monkeypatch):
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, multiplications=s.multiplications + 1)
                      if s.machine == "elman" and s.t == 8 else s)
    assert not result.counts_match
    assert "differ from the closed form for: Elman RNN t=8" in " ".join(decode_sentences(result))


def test_spanish_sentences_and_labels():
    text = " ".join(decode_sentences(run_decode(SMALL), "es"))
    assert "Menos multiplicaciones por token nuevo: RNN de Elman en t = 4, 8" in text
    assert machine_label("linear_attention", "es") == "atención lineal"


def test_a_preallocated_cache_gives_the_same_outputs_and_counts():
    from seqlab.layers.decoding import KVCacheDecoder

    dynamic = build_decoder("attention_kv_cache", 6, seed=2, dtype=torch.float64)
    static = KVCacheDecoder(dynamic.attention, capacity=9)
    x = torch.randn(1, 9, 6, dtype=torch.float64)
    state, outputs = static.initial_state(1, dtype=torch.float64), []
    with torch.no_grad():
        for x_t in x.unbind(dim=1):
            y, state = static.step(x_t, state)
            outputs.append(y)
        torch.testing.assert_close(torch.stack(outputs, dim=1), dynamic.attention(x)[0], rtol=1e-12, atol=1e-12)
        with pytest.raises(SeqlabError, match="holds 9 rows"):
            static.step(x[:, 0], state)
    step = measure_decode_step("attention_kv_cache", 7, d_model=D, time=False,
                               decoder=KVCacheDecoder(build_decoder("attention_kv_cache", D).attention, capacity=33))
    # 3 * 16**2 + 2 * 7 * 16 = 992, as the growing cache; bytes: 2 * 33 * 16 * 4 + 8 (the int64 length) = 4232
    assert (step.multiplications, step.state_bytes) == (992, 4232)


def test_work_growth_follows_the_counted_multiplications(monkeypatch):
    text = " ".join(decode_sentences(run_decode(SMALL)))
    assert "Multiplications per new token fixed whatever t: Elman RNN." in text
    # KV cache 3*64 + 2*t*8: 256 at t = 4, 320 at t = 8 (×1.25); no cache 64 + 2t*64 + 16t: 640, 1216 (×1.90)
    assert "from t = 4 to t = 8: attention, KV cache ×1.25; attention, no cache ×1.90." in text
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, multiplications=100 * s.t)
                      if s.machine == "elman" else s)
    assert "from t = 4 to t = 8: Elman RNN ×2.00; attention, KV cache ×1.25" in " ".join(decode_sentences(result))


def test_a_machine_or_position_named_twice_is_measured_once():
    config = study.check_decode_config(study.DecodeConfig(positions=(16, 16), machines=("elman", "elman"),
                                                          time=False))
    assert config.positions == (16,) and config.machines == ("elman",)
