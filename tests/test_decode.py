"""Decoding (seqlab.layers.decoding, seqlab.measure.decode, seqlab.studies.decode, seqlab.render.decode).

Two routes agree: the step API run over t = 1..T equals the parallel causal forward (float64, tolerance 1e-12);
the multiplications counted on one step equal the closed forms at three positions (exact integers, hand
arithmetic beside them). Every sentence is a decision on a measurement: each test below patches the
measurement and sees the sentence change (L1, L2, L5, L6). Times come from interleaved rounds
(seqlab.measure.rounds); the tests replace ``measure_rounds`` with fixed per-round times, so no test depends on
speed (L8).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import seqlab.memory
import seqlab.studies.decode as study
from seqlab.errors import SeqlabError
from seqlab.measure.decode import (FIXED_STATE, MACHINES, available_machines, build_decoder, measure_decode_step,
                                   step_multiplications)
from seqlab.measure.rounds import Rounds
from seqlab.render.decode import decode_sentences, decode_table, machine_label
from seqlab.studies.decode import DecodeConfig, check_decode_config, measure_asymmetry, run_decode

D = 16
POSITIONS = (1, 7, 33)
#: Counted multiplications per new token at d = 16 and t = 1, 7, 33 (one per multiply-add).
EXPECTED_MULTIPLICATIONS = {
    "elman": (512, 512, 512),  # W_hh h + W_xh x = 2 * 16**2 = 512, whatever t
    "attention_kv_cache": (800, 992, 1824),  # 3 * 16**2 + 2 * t * 16 = 768 + 32t: 800, 992, 1824
    "attention_static_cache": (800, 992, 1824),  # the same: it attends over the t rows written, not its 33
    "attention_no_cache": (800, 4064, 18208),  # 16**2 + 2t * 16**2 + 2t * 16 = 256 + 544t: 800, 4064, 18208
    "linear_attention": (1552, 1552, 1552),  # q, k, v 3*256 + W_o 256 + S update and read 2*256 + z·q 16 = 1552
    "selective_recurrence": (1024, 1024, 1024),  # W_Δ, W_u, W_C in and W_o out: 4 * 16**2 = 1024
    # Mamba block, N = 16, E = 32, R = 1: W_in 16·64 + W_x 32·33 + W_Δ 32 + (Δu)⊗B and h·C 2·32·16 + W_out 32·16
    # + the window's convolution 32·4 (a product summed over the window: a contraction, issue 35 kind 5)
    "mamba_block": (3776, 3776, 3776),
}
#: State bytes after the step, float32: h (16), a cache of t keys and values, t inputs, linear attention's (S, z).
EXPECTED_STATE_BYTES = {
    "elman": (64, 64, 64),  # 16 * 4
    "attention_kv_cache": (128, 896, 4224),  # 2 * t * 16 * 4 = 128t
    # capacity 33 (the largest position) from the first token: 2 * 33 * 16 * 4 = 4224, + 8 (the int64 row count)
    "attention_static_cache": (4232, 4232, 4232),
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
    decoder = build_decoder(machine, 6, seed=3, dtype=torch.float64, capacity=9)  # capacity: the static cache's
    x = torch.randn(2, 9, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))  # (B, T, d)
    state, outputs = decoder.initial_state(2, dtype=torch.float64), []
    with torch.no_grad():
        for x_t in x.unbind(dim=1):
            y, state = decoder.step(x_t, state)
            outputs.append(y)
        expected = _forward(decoder, x)
    torch.testing.assert_close(torch.stack(outputs, dim=1), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("machine", ["attention_kv_cache", "attention_static_cache", "attention_no_cache"])
def test_prefix_state_equals_the_state_the_steps_leave(machine):
    decoder = build_decoder(machine, 5, dtype=torch.float64, capacity=5)
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
    decoder = build_decoder(machine, D, capacity=max(POSITIONS))  # one decoder for the three, as run_decode
    counted = tuple(measure_decode_step(machine, t, d_model=D, time=False, decoder=decoder).multiplications
                    for t in POSITIONS)
    closed = tuple(step_multiplications(machine, t, D) for t in POSITIONS)
    # a mixer's machine with no hand figures here is still checked against its registered closed form
    assert counted == closed == EXPECTED_MULTIPLICATIONS.get(machine, closed)


@pytest.mark.parametrize("machine", ALL)
def test_state_bytes_fixed_for_recurrences_linear_in_t_for_the_cache(machine):
    decoder = build_decoder(machine, D, capacity=max(POSITIONS))
    steps = [measure_decode_step(machine, t, d_model=D, time=False, decoder=decoder) for t in POSITIONS]
    if machine in EXPECTED_STATE_BYTES:
        assert tuple(s.state_bytes for s in steps) == EXPECTED_STATE_BYTES[machine]
    else:  # a mixer's machine with no hand figures: fixed or not as registered (its bytes: test_mixers.py's walk)
        sizes = [s.state_bytes for s in steps]
        assert sizes[0] > 0 and (len(set(sizes)) == 1) == (machine in FIXED_STATE), sizes
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


def _patched(monkeypatch, change, config=SMALL):
    """run_decode with every counted step passed through ``change(step) -> step``."""
    real = study.count_decode_step
    monkeypatch.setattr(study, "count_decode_step", lambda *a, **k: change(real(*a, **k)))
    return run_decode(config)


#: The four attention-and-Elman machines, timed (every figure of time below comes from a fake measure_rounds).
TIMED = dataclasses.replace(SMALL, machines=("elman", "attention_kv_cache", "attention_static_cache",
                                             "attention_no_cache"), time=True)
ROUNDS = 7


def _timed(monkeypatch, times, config=TIMED):
    """run_decode with ``measure_rounds`` replaced: each machine takes ``times[machine]`` seconds per step, a
    number (the same in every round) or a tuple of ROUNDS per-round times; the calls are recorded."""
    calls = []

    def fake_rounds(functions, **kwargs):
        calls.append((tuple(functions), kwargs))
        per_round = {m: tuple(times[m]) if isinstance(times[m], tuple) else (times[m],) * ROUNDS for m in functions}
        return Rounds(per_round=per_round, calls={m: 1 for m in functions},
                      first_call_s={m: v[0] for m, v in per_round.items()}, threads=kwargs["threads"],
                      device="cpu", load=kwargs["load"])

    monkeypatch.setattr(study, "measure_rounds", fake_rounds)
    return run_decode(config), calls


def _text(result, lang="en"):
    return " ".join(decode_sentences(result, lang))


def _caption(result, lang="en"):
    return decode_table(result, lang).caption


def test_work_winner_follows_the_counted_multiplications(monkeypatch):
    text = " ".join(decode_sentences(run_decode(SMALL)))
    assert "Fewest multiplications per new token: Elman RNN at t = 4, 8" in text
    result = _patched(monkeypatch, lambda s: dataclasses.replace(s, multiplications=10**9)
                      if s.machine == "elman" else s)
    assert "Fewest multiplications per new token: attention, KV cache at t = 4, 8" in " ".join(decode_sentences(result))


def test_every_machine_is_timed_in_one_interleaved_measurement_per_position(monkeypatch):
    result, calls = _timed(monkeypatch, {"elman": 1e-4, "attention_kv_cache": 2e-4, "attention_static_cache": 2e-4,
                                         "attention_no_cache": 4e-4})
    assert [machines for machines, _ in calls] == [TIMED.machines] * 2  # t = 4 and t = 8, every machine each time
    assert all(kwargs["threads"] == 1 and kwargs["rounds"] == 7 for _, kwargs in calls)  # decode's default: 1 thread
    assert [p.t for p in result.timed] == [4, 8]
    step = result.step("attention_no_cache", 8)
    assert step.timing.median_s == pytest.approx(4e-4) and step.timing.threads == 1
    assert "over 7 interleaved rounds" in _caption(result) and "1 thread," in _caption(result)


def test_fastest_is_named_when_decided_against_every_other_machine(monkeypatch):
    result, _ = _timed(monkeypatch, {"elman": 1e-4, "attention_kv_cache": 2.5e-4, "attention_static_cache": 2e-4,
                                     "attention_no_cache": 5e-4})
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 8)
    assert (win.machine, win.runner_up) == ("elman", "attention_static_cache")  # the closest: ×2.00
    assert [d.outcome for d in win.decisions] == ["b_first"] * 3 and win.ratio == pytest.approx(2.0)
    assert ("Fastest per new token on this machine: Elman RNN at t = 4, 8, decided against every other machine in "
            "interleaved rounds (attention, static KV cache, the closest, takes ×2.00 as long at t = 8)."
            ) in _text(result)


#: Per-round times of a machine whose ratio to 1.0 straddles the ×1.2 margin: quartiles 1.075 and 3.0.
STRADDLING = (1.0, 1.1, 3.0, 3.0, 3.0, 1.05, 3.0)


def test_fastest_is_not_judged_when_one_pair_straddles_the_margin(monkeypatch):
    times = {"elman": 1.0, "attention_kv_cache": 5.0, "attention_static_cache": 5.0,
             "attention_no_cache": (1.1, 1.5, 1.0, 1.4, 1.3, 1.05, 1.45)}
    result, _ = _timed(monkeypatch, times)
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 4)
    assert win.machine is None and (win.leader, win.runner_up) == ("elman", "attention_no_cache")
    assert win.blocking.outcome == "not_judged"
    # attention_no_cache over elman, round by round: sorted 1.0, 1.05, 1.1, 1.3, 1.4, 1.45, 1.5; quartiles 1.075, 1.425
    assert (win.blocking.low, win.blocking.high) == pytest.approx((1.075, 1.425))
    assert ("Fastest per new token at t = 4, 8: not judged, Elman RNN against attention, no cache is not decided "
            "(attention, no cache's time over Elman RNN's, round by round, ×1.08 to ×1.42 between the quartiles, "
            "straddles the ×1.20 margin).") in _text(result)
    assert "Fastest per new token on this machine" not in _text(result)


def test_a_machine_faster_than_the_runner_up_but_not_than_a_third_is_never_named(monkeypatch):
    # elman leads; the KV cache (×1.5, every round) is the runner-up by median and decided; the static cache has a
    # larger median (×3.0) but its rounds straddle the margin, so the top two alone would have named elman
    result, _ = _timed(monkeypatch, {"elman": 1.0, "attention_kv_cache": 1.5, "attention_static_cache": STRADDLING,
                                     "attention_no_cache": 10.0})
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 8)
    outcomes = {d.a: d.outcome for d in win.decisions}
    assert outcomes == {"attention_kv_cache": "b_first", "attention_static_cache": "not_judged",
                        "attention_no_cache": "b_first"}
    assert win.machine is None and win.runner_up == "attention_static_cache"
    assert "not judged, Elman RNN against attention, static KV cache is not decided" in _text(result)


def test_tied_machines_name_no_fastest(monkeypatch):
    result, _ = _timed(monkeypatch, {"elman": 1.0, "attention_kv_cache": (1.0, 1.05, 0.98, 1.02, 1.0, 1.1, 0.97),
                                     "attention_static_cache": 3.0, "attention_no_cache": 4.0})
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 4)
    assert win.machine is None and win.blocking.outcome == "tie"
    # medians: elman 1.0, the KV cache 1.0 too: the first in order leads
    assert "Fastest per new token at t = 4, 8: none, Elman RNN and attention, KV cache tie" in _text(result)
    assert "ninguna, empate entre RNN de Elman y atención con caché KV" in _text(result, "es")


def test_a_lead_exactly_at_the_margin_is_a_tie_and_just_past_it_a_win(monkeypatch):
    at = {"elman": 1.0, "attention_kv_cache": 1.2, "attention_static_cache": 3.0, "attention_no_cache": 4.0}
    result, _ = _timed(monkeypatch, at)  # 1.0 / 1.2 is exactly 1 / margin: inside the band, not past it
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 4)
    assert win.machine is None and win.blocking.outcome == "tie" and win.ratio == pytest.approx(1.2)
    result, _ = _timed(monkeypatch, {**at, "attention_kv_cache": 1.21})
    win = next(w for w in result.wins if w.criterion == "time" and w.t == 4)
    assert win.machine == "elman" and win.runner_up == "attention_kv_cache"


def test_cache_sentences_give_both_caches_time_only_when_decided(monkeypatch):
    times = {"elman": 1e-3, "attention_kv_cache": 2e-4, "attention_static_cache": 5e-5, "attention_no_cache": 4e-4}
    text = _text(_timed(monkeypatch, times)[0])
    # 8**2 + 2*8*8**2 + 2*8*8 = 1216 against 3*8**2 + 2*8*8 = 320 for either cache: ×3.80
    assert ("At t = 8, attention without a cache does ×3.80 the multiplications of either KV cache per new token: "
            "it recomputes every key and value. It takes ×2.00 the time of the KV cache (decided round by round against "
            "the ×1.20 margin). It takes ×8.00 the time of the static KV cache (decided round by round against the "
            "×1.20 margin).") in text
    assert "At t = 8, the growing KV cache takes ×4.00 the time of the static one per new token" in text
    # recomputing faster than the KV cache; the static cache's rounds straddle the margin against it
    times.update(attention_static_cache=tuple(1e-4 * x for x in STRADDLING), attention_no_cache=1e-4)
    text = _text(_timed(monkeypatch, times)[0])
    assert "Yet it is faster than the KV cache here, by ×2.00 (decided round by round against the ×1.20 margin)." in text
    assert "Against the static KV cache, its time is not judged" in text
    assert "the time of the static KV cache" not in text
    spanish = _text(_timed(monkeypatch, times)[0], "es")
    assert "Y aun así aquí es más rápida que la caché KV, por ×2,00 (decidido ronda a ronda" in spanish


def test_the_static_cache_holds_its_capacity_from_the_first_token():
    result = run_decode(dataclasses.replace(TIMED, time=False))
    static = [result.step("attention_static_cache", t) for t in (4, 8)]
    dynamic = result.step("attention_kv_cache", 8)
    # capacity 8 (the largest position): 2 * 8 * 8 * 4 = 512 bytes of keys and values, + 8 for the row count
    assert [s.state_bytes for s in static] == [520, 520] and dynamic.state_bytes == 512
    # multiplications counted equal the growing cache's and the closed form: 3*8**2 + 2*t*8 = 256, 320
    assert [s.multiplications for s in static] == [s.closed_form for s in static] == [256, 320]
    assert [s.multiplications for s in static] == [result.step("attention_kv_cache", t).multiplications for t in (4, 8)]
    assert {g.machine: g.kind for g in result.growth}["attention_static_cache"] == "constant"  # seqlab.fit.growth_kind
    assert ("holds its capacity from the first token, so its bytes are constant in t and equal to the growing "
            "cache's at t = 8 plus 8 bytes (its row count).") in _caption(result)


def test_the_closing_sentence_follows_the_machines_run():
    recurrences = run_decode(dataclasses.replace(SMALL, machines=("selective_recurrence", "elman")))
    assert recurrences.asymmetry is None and "In training" not in _text(recurrences)
    static = run_decode(dataclasses.replace(SMALL, machines=("attention_static_cache",)))
    assert static.asymmetry.recurrence is None and static.asymmetry.cache == "attention_static_cache"
    assert ("writing those T tokens with the static KV cache takes 12 and 24 in a row, one step per token."
            in _text(static)) and "Elman" not in _text(static)


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
    step = measure_decode_step("attention_static_cache", 7, d_model=D, time=False,
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
