"""L8 of ``seqlab check`` on fake interleaved rounds: every class from the one rule, every undecided comparison named.

``seqlab.measure.rounds.measure_rounds`` is replaced by a hand-built :class:`~seqlab.measure.rounds.Rounds`
(seconds per call per round, by machine and thread count), or run on a fake clock with machines that take
the seconds a schedule gives them; no test reads a real clock or depends on the CPU or its load.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
import torch

import seqlab.measure.rounds
from seqlab.measure.rounds import Rounds
from seqlab.measure.timing import MachineLoad
from seqlab.render.check import check_json, claim_text
from seqlab.studies import claims_time
from seqlab.studies.check import CAVEAT, CHECKS, FAILS, HOLDS, NOT_JUDGED, CheckConfig, CheckSizes, ClaimCheck, run_check

SIZES = CheckSizes(time_length=16, time_width=4, time_batch=2, threads=2, min_run_time=0.001)
QUIET = MachineLoad(0.0, 2, False)
MARGIN = seqlab.measure.rounds.MARGIN

#: Seconds per call (1 thread, 2 threads) of each timed machine in a world where the lesson holds plainly:
#: SDPA ×4 and ×8 ahead, the layer at batch 2 ×1.25 and ×2.5, the control and SDPA twice as fast on 2 threads.
PLAIN = {"control": (2.0, 1.0), "recurrence": (4.0, 4.0), "recurrence_batch": (5.0, 5.0), "sdpa": (1.0, 0.5),
         "sdpa_projections": (1.5, 0.8), "layer": (2.0, 1.0), "layer_batch": (4.0, 2.0)}
#: Multipliers of a machine's time in rounds 1–7 (a spread of ±2 %, well inside every margin).
STEADY = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01)
#: recurrence / SDPA ratios that straddle the margin (quartiles ≈ 0.90 and 1.45 around a median of 1.3).
STRADDLE = (0.8, 1.5, 1.3, 0.7, 1.6, 1.0, 1.4)


def split(key: str) -> tuple[str, int]:
    name, threads = key.rsplit("@", 1)
    return name, int(threads)


def fake_rounds(monkeypatch, seconds: dict, shape: dict | None = None, seen: list | None = None) -> None:
    """``measure_rounds`` answering machine ``name@t`` with ``seconds[name][t > 1] * shape[(name, t)][k]`` in round k
    (``STEADY`` when ``shape`` names no multipliers for it)."""
    shape = shape or {}

    def fake(functions, *, rounds=7, threads=None, **kwargs):
        if seen is not None:
            seen.append((tuple(functions), rounds, threads))
        per_round = {}
        for key in functions:
            name, t = split(key)
            base = seconds[name][t > 1]
            per_round[key] = tuple(base * m for m in shape.get((name, t), STEADY))
        return Rounds(per_round=per_round, calls={k: 1 for k in functions}, first_call_s={k: 0.1 for k in functions},
                      threads=threads or 1, device="cpu", load=QUIET)

    monkeypatch.setattr(seqlab.measure.rounds, "measure_rounds", fake)


def l8(sizes: CheckSizes = SIZES):
    return CHECKS["L8"](sizes, 0)


def words(judged, lang: str = "en") -> str:
    """The L8 condition sentence (rule and caveats) as a reader sees it."""
    return claim_text(ClaimCheck("L8", judged.verdict, judged.values, judged.condition), lang).condition


FLAT = (1.0,) * 7


def straddling(name: str, base: float, recurrence: float = 4.0) -> dict:
    """Multipliers on one thread that make recurrence / ``name`` follow STRADDLE round by round (the recurrence
    flat at ``recurrence`` seconds, ``name`` at ``base`` seconds before its multipliers)."""
    return {(name, 1): tuple(recurrence / (base * r) for r in STRADDLE), ("recurrence", 1): FLAT}


# --- (a) every comparison decided -------------------------------------------------------------------------

def test_l8_holds_only_when_every_comparison_is_decided(monkeypatch):
    fake_rounds(monkeypatch, PLAIN)
    judged = l8()
    assert judged.verdict == HOLDS
    assert judged.condition["undecided"] == [] and judged.condition["ties"] == [] and judged.condition["caveats"] == []
    assert judged.values["classes"] == {t: dict.fromkeys(claims_time.SCOPES, "attention_first") for t in (1, 2)}
    assert judged.values["scaling"] == "attention_scales"
    assert judged.values["comparisons"][1]["sdpa"]["ratio"] == pytest.approx(4.0)  # 4 s / 1 s in every round
    assert judged.values["speedups"]["control"]["ratio"] == pytest.approx(2.0)
    assert judged.values["advantage"]["ratio"] == pytest.approx(2.0)  # SDPA ×2 on 2 threads, the RNN ×1
    assert "Caveat" not in words(judged)


def test_l8_times_every_machine_on_both_thread_counts_in_one_measurement(monkeypatch):
    """One measure_rounds call holds all fourteen machines; each runs on its own thread count."""
    seen = []
    fake_rounds(monkeypatch, PLAIN, seen=seen)
    l8()
    ((names, rounds, threads),) = seen
    assert rounds == claims_time.ROUNDS == seqlab.measure.rounds.DEFAULT_ROUNDS and threads == 1
    assert sorted(names) == sorted(f"{name}@{t}" for name in PLAIN for t in (1, 2))
    captured = {}

    def record(functions, **kwargs):
        before = torch.get_num_threads()
        for key in ("sdpa@1", "sdpa@2", "recurrence@1"):
            functions[key]()
            captured[key] = torch.get_num_threads()
        torch.set_num_threads(before)
        raise StopIteration

    monkeypatch.setattr(seqlab.measure.rounds, "measure_rounds", record)
    with pytest.raises(StopIteration):
        l8()
    assert captured == {"sdpa@1": 1, "sdpa@2": 2, "recurrence@1": 1}


def test_l8_recurrence_first_at_the_lessons_scope_does_not_hold(monkeypatch):
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": (8.0, 4.0)})
    judged = l8()
    assert judged.verdict == FAILS and judged.values["classes"][1]["sdpa"] == "recurrence_first"


# --- (b) the lesson's comparison straddles the margin ----------------------------------------------------

@pytest.mark.parametrize("sdpa", [(1.0, 0.5), (8.0, 4.0)])
def test_l8_lessons_comparison_not_decided_is_not_judged(monkeypatch, sdpa):
    """SDPA alone on one thread with per-round ratios across the margin: not judged, never holds, never fails —
    whether the other rounds would have read attention or the recurrence first."""
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": sdpa}, straddling("sdpa", sdpa[0]))
    judged = l8()
    assert judged.verdict == NOT_JUDGED
    entry = judged.values["comparisons"][1]["sdpa"]
    assert entry["class"] == "not_judged" and entry["reason"] == "straddles"
    assert entry["low"] < MARGIN < entry["high"] and entry["ratio"] == pytest.approx(1.3)
    assert judged.condition["undecided"] == [[1, "sdpa"]]
    text = words(judged)
    assert "Caveat: not decided: the SDPA call on 1 thread (×0.900–1.45 over 7 rounds, across the ×1.2 margin)." in text


def test_l8_quickest_rounds_that_disagree_are_named_as_such(monkeypatch):
    """Six rounds of the recurrence slowed by a burst, its quickest as fast as SDPA's: not decided."""
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": (4.0, 0.5)},
                {("recurrence", 1): (3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.0), ("sdpa", 1): (1.0,) * 7})
    judged = l8()
    assert judged.verdict == NOT_JUDGED
    assert judged.values["comparisons"][1]["sdpa"]["reason"] == "quickest_disagree"
    assert "but the quickest rounds disagree" in words(judged)


# --- (c) one scope not decided -------------------------------------------------------------------------

def test_l8_one_scope_not_decided_is_a_caveat_that_names_it(monkeypatch):
    fake_rounds(monkeypatch, PLAIN, straddling("layer", 2.0))
    judged = l8()
    assert judged.verdict == CAVEAT
    assert judged.condition["undecided"] == [[1, "layer"]] and judged.condition["caveats"] == ["undecided_scopes"]
    assert judged.values["classes"][1]["sdpa"] == "attention_first"
    text = words(judged)
    sentence = next(s for s in text.split("Caveat: ")[1:] if s.startswith("not decided"))
    assert sentence == "not decided: the whole layer on 1 thread (×0.900–1.45 over 7 rounds, across the ×1.2 margin)."
    assert "some" not in text
    spanish = words(judged, "es")
    assert "salvedad: sin decidir: la capa entera con 1 hilo (×0,900–1,45 en 7 rondas, a ambos lados" in spanish.lower()


def test_l8_names_the_scope_where_attention_stops_finishing_first(monkeypatch):
    fake_rounds(monkeypatch, {**PLAIN, "layer_batch": (20.0, 10.0)})
    judged = l8()
    assert judged.verdict == CAVEAT and judged.values["stops"] == {1: "layer_batch", 2: "layer_batch"}
    assert judged.condition["caveats"] == ["attention_stops_first"]


# --- (d) exactly at the margin -------------------------------------------------------------------------

@pytest.mark.parametrize(("sdpa_one_thread", "expected_class", "verdict_"), [
    (4.0 * MARGIN, "tie", NOT_JUDGED),  # the recurrence ×1.2 ahead exactly: a tie at the lesson's scope shows nothing
    (4.0 * MARGIN * 1.01, "recurrence_first", FAILS),  # just beyond it: the recurrence first
    (4.0 / MARGIN, "tie", NOT_JUDGED),  # attention ×1.2 ahead exactly: still a tie
    (4.0 / MARGIN / 1.01, "attention_first", HOLDS),
])
def test_l8_ratios_at_the_margin_are_ties(monkeypatch, sdpa_one_thread, expected_class, verdict_):
    """The recurrence takes 4 s; SDPA alone on one thread at the margin's edges, the same in every round."""
    flat = {("recurrence", 1): (1.0,) * 7, ("sdpa", 1): (1.0,) * 7}
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": (sdpa_one_thread, sdpa_one_thread / 8)}, flat)
    judged = l8()
    assert judged.values["classes"][1]["sdpa"] == expected_class
    assert judged.verdict == verdict_
    if expected_class == "tie":
        assert judged.condition["ties"] == [[1, "sdpa"]] and "tie_scopes" in judged.condition["caveats"]
        assert judged.condition["unjudged_halves"] == ["finishes_first"]
        assert "Caveat: a tie, within ×1.2 either way: the SDPA call on 1 thread (×" in words(judged)
        assert "Not judged: whether attention finishes first at the lesson's own scope" in words(judged)


def test_l8_speed_ups_exactly_at_the_margin_are_a_tie(monkeypatch):
    """SDPA ×1.2 faster on 2 threads, the RNN ×1: their ratio sits on the margin, not beyond it."""
    flat = {(name, t): (1.0,) * 7 for name in ("sdpa", "recurrence") for t in (1, 2)}
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": (1.0, 1.0 / MARGIN)}, flat)
    judged = l8()
    assert judged.values["scaling"] == "tie" and judged.verdict == NOT_JUDGED
    assert judged.condition["unjudged_halves"] == ["spreads_over_processors"]
    assert judged.values["advantage"]["ratio"] == pytest.approx(MARGIN)
    assert "does not exceed the recurrence's (×1.00) by the margin" in words(judged)


# --- scaling and the control ----------------------------------------------------------------------------

def test_l8_recurrence_scaling_better_does_not_hold(monkeypatch):
    fake_rounds(monkeypatch, {**PLAIN, "recurrence": (4.0, 1.0), "sdpa": (1.0, 0.9)})
    judged = l8()
    assert judged.verdict == FAILS and judged.values["scaling"] == "recurrence_scales"


def test_l8_scaling_not_decided_is_named(monkeypatch):
    """SDPA's speed-up straddling the RNN's: not decided, said with the spread of their ratio."""
    fake_rounds(monkeypatch, {**PLAIN, "sdpa": (1.0, 1.0 / 1.3)},
                {("sdpa", 2): tuple(1.3 / r for r in STRADDLE), ("sdpa", 1): (1.0,) * 7,
                 ("recurrence", 1): (1.0,) * 7, ("recurrence", 2): (1.0,) * 7})
    judged = l8()
    assert judged.values["scaling"] == "not_judged" and "scaling_not_judged" in judged.condition["caveats"]
    assert judged.verdict == NOT_JUDGED and judged.condition["unjudged_halves"] == ["spreads_over_processors"]
    assert "was not decided: their per-round ratio spread ×0.900–1.45 over 7 rounds." in words(judged)


def test_l8_busy_threads_are_not_judged_and_only_then_read_as_only(monkeypatch):
    """The control decided no faster on 2 threads: every comparison on them is busy (named), the speed-up
    read as "only" because it was decided below the margin."""
    fake_rounds(monkeypatch, {**PLAIN, "control": (2.0, 2.0), "recurrence": (4.0, 1.0), "sdpa": (1.0, 0.9)})
    judged = l8()
    assert judged.verdict == NOT_JUDGED and judged.values["scaling"] == "busy"
    assert judged.condition["undecided"] == [[2, scope] for scope in claims_time.SCOPES]
    assert judged.values["classes"][2] == dict.fromkeys(claims_time.SCOPES, "busy")
    text = words(judged)
    assert "a plain matrix product ran only ×1.00 as fast on them as on 1 thread" in text
    assert "the SDPA call on 2 threads (its threads were not judged)" in text


def test_l8_a_control_not_decided_is_never_read_as_only(monkeypatch):
    fake_rounds(monkeypatch, PLAIN, {("control", 2): tuple(2 / r for r in STRADDLE), ("control", 1): FLAT})
    judged = l8()
    assert judged.values["scaling"] == "control_not_judged" and judged.verdict == NOT_JUDGED
    text = words(judged)
    assert "the speed-up of a plain matrix product on 2 threads (×1.30, ×0.900–1.45 over 7 rounds) was not decided" \
        in text
    assert "only ×" not in text  # a speed-up not decided is never read as "only"


def test_l8_on_one_thread_the_spread_over_processors_is_not_judged(monkeypatch):
    """Issue 38: L8's second half (the work spreads over processors) was measured in no run on one thread."""
    fake_rounds(monkeypatch, PLAIN)
    judged = l8(replace(SIZES, threads=1))
    assert judged.verdict == NOT_JUDGED and judged.condition["caveats"] == ["scaling_one_thread"]
    assert judged.condition["unjudged_halves"] == ["spreads_over_processors"]
    assert judged.values["threads"] == (1,)


def test_l8_threads_default_to_the_free_cores(monkeypatch):
    """Without --threads, L8 and run_check take timing_threads_default (PyTorch's count capped by free cores)."""
    fake_rounds(monkeypatch, PLAIN)
    monkeypatch.setattr(seqlab.measure.rounds, "timing_threads_default", lambda load=None: 1)
    assert l8(replace(SIZES, threads=0)).values["threads"] == (1,)
    assert run_check(CheckConfig(claims=("L5",))).threads == 1
    monkeypatch.setattr(seqlab.measure.rounds, "timing_threads_default", lambda load=None: 3)
    assert l8(replace(SIZES, threads=0)).values["threads"] == (1, 3)
    assert run_check(CheckConfig(claims=("L5",))).threads == 3
    assert run_check(CheckConfig(claims=("L5",), threads=2)).threads == 2


# --- (e) noisy rounds: consecutive runs never give opposite verdicts ---------------------------------------

class FakeMachine:
    """A clock and machines that take the seconds a schedule gives them (call by call)."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def machine(self, seconds):
        def call():
            self.now += seconds()
        return call


def on_fake_clock(monkeypatch, base: dict, rng: random.Random, burst: float = 0.3) -> None:
    """The real measure_rounds, its machines replaced by ones whose calls take ``base[name][t > 1]`` seconds,
    slowed 1.5–5× in a ``burst`` share of calls (other work on a shared machine)."""
    real = seqlab.measure.rounds.measure_rounds

    def slow(seconds: float):
        return lambda: seconds * (1 + (rng.random() < burst) * rng.uniform(0.5, 4.0))

    def fake(functions, **kwargs):
        fake_machine = FakeMachine()
        machines = {key: fake_machine.machine(slow(base[split(key)[0]][split(key)[1] > 1])) for key in functions}
        kwargs.update(load=QUIET, clock=fake_machine.clock, block_seconds=0.002)
        return real(machines, **kwargs)

    monkeypatch.setattr(seqlab.measure.rounds, "measure_rounds", fake)


@pytest.mark.parametrize("sdpa", [(4.0, 4.0), (4.0 / MARGIN, 2.0), (4.0 * MARGIN, 4.0)])
def test_l8_consecutive_noisy_runs_never_give_opposite_verdicts(monkeypatch, sdpa):
    """SDPA alone as fast as the RNN, or ×1.2 either way (the margin): run after run on bursty rounds the lesson's
    comparison is a tie or not decided, never attention first in one run and the recurrence in the next."""
    rng = random.Random(7)
    on_fake_clock(monkeypatch, {name: tuple(s / 1000 for s in times) for name, times in
                                {**PLAIN, "sdpa": sdpa}.items()}, rng)
    runs = [l8() for _ in range(40)]
    classes = [judged.values["classes"][1]["sdpa"] for judged in runs]
    verdicts = [judged.verdict for judged in runs]
    for first, second in zip(verdicts, verdicts[1:]):
        assert {first, second} != {HOLDS, FAILS}
    assert not {"attention_first", "recurrence_first"} <= set(classes)
    assert "not_judged" in classes  # the bursts are seen, not read as a lead


def test_l8_a_real_lead_survives_the_bursts(monkeypatch):
    rng = random.Random(3)
    on_fake_clock(monkeypatch, {name: tuple(s / 1000 for s in times) for name, times in PLAIN.items()}, rng,
                  burst=0.15)
    classes = [l8().values["classes"][1]["sdpa"] for _ in range(30)]
    assert set(classes) <= {"attention_first", "not_judged"} and classes.count("attention_first") >= 25


# --- JSON -------------------------------------------------------------------------------------------------

def test_l8_json_carries_every_comparison_with_its_spread(monkeypatch):
    fake_rounds(monkeypatch, PLAIN, straddling("layer", 2.0))
    result = run_check(CheckConfig(claims=("L8",), sizes=SIZES, threads=2))
    (claim,) = json.loads(check_json(result, "en"))["claims"]
    layer = claim["values"]["comparisons"]["1"]["layer"]
    assert layer["outcome"] == "not_judged" and layer["class"] == "not_judged" and layer["reason"] == "straddles"
    assert layer["low"] == pytest.approx(0.9) and layer["high"] == pytest.approx(1.45) and layer["rounds"] == 7
    assert claim["condition"]["undecided"] == [[1, "layer"]] and claim["condition"]["speed_margin"] == MARGIN
    assert claim["values"]["timings"]["sdpa"]["2"]["per_round_s"] == pytest.approx([0.5 * m for m in STEADY])
    assert claim["values"]["timings"]["sdpa"]["2"]["threads"] == 2 and claim["verdict"] == CAVEAT
