"""seqlab.measure.rounds: interleaved rounds and the rule that decides who finishes first, on a fake clock.

No test compares real speeds: the machines below advance a fake clock by the seconds they are told to take.
"""

import random

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure.rounds import (
    CLOCKS_DISAGREE,
    MIN_ROUNDS,
    WARM_CALLS,
    Rounds,
    classify,
    decide,
    measure_rounds,
    timing_threads_default,
)
from seqlab.measure.timing import MachineLoad

QUIET = MachineLoad(0.0, 2, False)


class FakeMachine:
    """A clock and machines that take the seconds a schedule gives them (call by call).

    ``cpu`` is this process's CPU clock: it advances by a call's own cost; ``stolen`` seconds (another process on the
    core) advance the wall clock alone."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cpu_now = 0.0
        self.log: list[str] = []

    def clock(self) -> float:
        return self.now

    def cpu(self) -> float:
        return self.cpu_now

    def machine(self, name: str, seconds, stolen=0.0):
        def call():
            self.log.append(name)
            cost = seconds() if callable(seconds) else seconds
            self.now += cost + (stolen() if callable(stolen) else stolen)
            self.cpu_now += cost
        return call


def test_rounds_time_every_machine_in_rotated_order() -> None:
    fake = FakeMachine()
    functions = {name: fake.machine(name, 0.001) for name in ("a", "b", "c")}
    r = measure_rounds(functions, rounds=4, block_seconds=0.005, threads=1, load=QUIET, clock=fake.clock)
    assert r.rounds == 4 and r.calls == {"a": 5, "b": 5, "c": 5}
    timed = fake.log[3 * (1 + WARM_CALLS):]  # the first call and the warm-up calls of each
    blocks = [timed[i] for i in range(0, len(timed), 5)]
    assert blocks == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert all(t == pytest.approx(0.001) for times in r.per_round.values() for t in times)
    assert r.first_call_s["a"] == pytest.approx(0.001)


def test_a_twice_as_slow_is_decided_and_the_timing_carries_it() -> None:
    fake = FakeMachine()
    r = measure_rounds({"a": fake.machine("a", 0.002), "b": fake.machine("b", 0.001)}, threads=1,
                       block_seconds=0.01, load=QUIET, clock=fake.clock)
    d = decide(r, "a", "b", 1.2)
    assert d.outcome == "b_first" and d.faster == "b" and d.lead == pytest.approx(2.0) and d.rounds == 7
    assert decide(r, "b", "a", 1.2).outcome == "a_first"
    t = r.timing("a")
    assert t.median_s == pytest.approx(0.002) and t.iqr_s == pytest.approx(0.0) and not t.noisy
    assert t.threads == 1 and t.load is QUIET and t.runs == 7 * r.calls["a"]


@pytest.mark.parametrize(("ratios", "outcome"), [
    ((1.21, 1.21, 1.21, 1.21, 1.21), "b_first"),       # just beyond the margin
    ((1.2, 1.2, 1.2, 1.2, 1.2), "tie"),                # on the margin: not beyond it
    ((1 / 1.21,) * 5, "a_first"),
    ((1 / 1.2,) * 5, "tie"),
    ((1.0, 1.0, 1.0, 1.0, 1.0), "tie"),
    ((1.25, 1.3, 1.3, 1.3, 1.3), "b_first"),
    ((1.3, 1.0, 1.3, 1.3, 1.3), "not_judged"),         # one round against: the quickest rounds do not agree
    ((1.0, 1.0, 1.3, 1.3, 1.3), "not_judged"),         # two against: the quartile falls inside the band
    ((0.5, 0.5, 2.0, 2.0, 2.0), "not_judged"),         # spread over both sides
    ((5.0, 5.0), "not_judged"),                        # fewer than MIN_ROUNDS
])
def test_the_rule_at_its_boundaries(ratios, outcome) -> None:
    assert classify(ratios, (1.0,) * len(ratios), 1.2) == outcome


def test_ties_are_never_counted_for_either_side() -> None:
    r = Rounds(per_round={"a": (1.0,) * 5, "b": (1.0,) * 5}, calls={"a": 1, "b": 1},
               first_call_s={"a": 1.0, "b": 1.0}, threads=1, device="cpu", load=QUIET)
    d = decide(r, "a", "b", 1.2)
    assert d.outcome == "tie" and d.faster is None and d.decided


@pytest.mark.parametrize("margin", [1.0, 0.5, float("inf"), float("nan"), True])
def test_a_margin_that_is_not_above_one_is_refused(margin) -> None:
    with pytest.raises(SeqlabError, match="margin"):
        classify((1.0, 1.0, 1.0), (1.0, 1.0, 1.0), margin)


def test_the_quickest_rounds_must_agree() -> None:
    """Most of a's rounds slowed by bursts, its quickest round as fast as b's: not decided."""
    assert classify((3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.0), (1.0,) * 7, 1.2) == "not_judged"
    assert classify((1.0,) * 7, (3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.0), 1.2) == "not_judged"
    assert classify((3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.25), (1.0,) * 7, 1.2) == "b_first"


def test_unequal_rounds_are_refused() -> None:
    with pytest.raises(SeqlabError, match="same rounds"):
        classify((1.0,) * 3, (1.0,) * 4, 1.2)


def test_noisy_machine_never_gives_opposite_verdicts() -> None:
    """Two equally fast machines on a machine where bursts of other work land on random blocks: over many
    runs the rule says tie or not judged, never that one and then the other finishes first."""
    rng = random.Random(0)

    def burst() -> float:
        return 0.001 * (1 + (rng.random() < 0.3) * rng.uniform(0.5, 4.0))

    outcomes = set()
    for _ in range(300):
        fake = FakeMachine()
        r = measure_rounds({"a": fake.machine("a", burst), "b": fake.machine("b", burst)}, threads=1,
                           block_seconds=0.001, load=QUIET, clock=fake.clock)
        outcomes.add(decide(r, "a", "b", 1.2).outcome)
    assert not {"a_first", "b_first"} <= outcomes
    assert "not_judged" in outcomes  # the bursts are seen as what they are


def test_a_real_lead_survives_the_same_bursts() -> None:
    rng = random.Random(1)

    def burst(base: float):
        return lambda: base * (1 + (rng.random() < 0.15) * rng.uniform(0.5, 4.0))

    outcomes = []
    for _ in range(100):
        fake = FakeMachine()
        r = measure_rounds({"a": fake.machine("a", burst(0.003)), "b": fake.machine("b", burst(0.001))},
                           threads=1, block_seconds=0.001, load=QUIET, clock=fake.clock)
        outcomes.append(decide(r, "a", "b", 1.2).outcome)
    assert set(outcomes) <= {"b_first", "not_judged"} and outcomes.count("b_first") > 80


def test_threads_fixed_restored_and_no_grad() -> None:
    before, seen = torch.get_num_threads(), []
    measure_rounds({"x": lambda: seen.append((torch.get_num_threads(), torch.is_grad_enabled()))}, threads=1,
                   rounds=MIN_ROUNDS, block_seconds=1e-4, load=QUIET)
    assert set(seen) == {(1, False)} and torch.get_num_threads() == before and torch.is_grad_enabled()


def test_default_threads_leave_busy_cores_alone() -> None:
    torch_threads = torch.get_num_threads()
    assert timing_threads_default(MachineLoad(0.0, 4, False)) == min(torch_threads, 4)
    assert timing_threads_default(MachineLoad(2.4, 4, True)) == min(torch_threads, 2)
    assert timing_threads_default(MachineLoad(2.6, 4, True)) == 1
    assert timing_threads_default(MachineLoad(None, 4, False)) == torch_threads


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"functions": {}}, "at least one"),
    ({"functions": {"x": 3}}, "callable"),
    ({"rounds": 0}, "rounds"),
    ({"block_seconds": 0.0}, "block_seconds"),
    ({"block_seconds": float("nan")}, "block_seconds"),
    ({"threads": 0}, "threads"),
    ({"device": "tpu"}, "device"),
])
def test_bad_inputs_are_named(kwargs, match) -> None:
    args = {"functions": {"x": lambda: None}, "load": QUIET, "block_seconds": 1e-4} | kwargs
    with pytest.raises(SeqlabError, match=match):
        measure_rounds(**args)


def test_a_name_not_timed_is_named() -> None:
    r = Rounds(per_round={"a": (1.0,) * 3}, calls={"a": 1}, first_call_s={"a": 1.0}, threads=1, device="cpu",
               load=QUIET)
    with pytest.raises(SeqlabError, match="'b'"):
        decide(r, "a", "b", 1.2)


# --- bursts: the wall clock alone must not name a winner the CPU clock contradicts (issue 38) -------------------

def _bursty(p: float, seed: int):
    """Seconds another process steals from one call: 1.5–5 times its cost with probability p."""
    rng = random.Random(seed)
    return lambda: 0.001 * rng.uniform(0.5, 4.0) if rng.random() < p else 0.0


@pytest.mark.parametrize("seed", range(40))
def test_bursts_on_single_calls_never_name_a_winner_between_equal_machines(seed) -> None:
    """Two machines of equal cost; other work steals wall time from a third of one machine's calls, warm-up
    included. The CPU clock sees equal machines, so no winner is named (the wall clock alone named one in some)."""
    fake = FakeMachine()
    functions = {"a": fake.machine("a", 0.001, _bursty(0.35, seed)), "b": fake.machine("b", 0.001)}
    r = measure_rounds(functions, threads=1, block_seconds=0.004, load=QUIET, clock=fake.clock, cpu_clock=fake.cpu)
    decision = decide(r, "a", "b", 1.2)
    assert decision.faster is None
    if classify(r.per_round["a"], r.per_round["b"], 1.2) in ("a_first", "b_first"):
        assert decision.reason == CLOCKS_DISAGREE


def test_a_real_lead_is_still_decided_under_bursts() -> None:
    """The rule can still decide: b costs half of a, and bursts hit both; both clocks name b."""
    fake = FakeMachine()
    functions = {"a": fake.machine("a", 0.002, _bursty(0.1, 1)), "b": fake.machine("b", 0.001, _bursty(0.1, 2))}
    r = measure_rounds(functions, threads=1, block_seconds=0.01, load=QUIET, clock=fake.clock, cpu_clock=fake.cpu)
    assert decide(r, "a", "b", 1.2).outcome == "b_first"


def test_the_clocks_disagree_when_the_wall_lead_is_stolen_time() -> None:
    """Patched measurement: a wall-clock lead of ×2 that the CPU clock reads as a tie is not judged."""
    wall = {"a": (2.0,) * 7, "b": (1.0,) * 7}
    r = Rounds(per_round=wall, calls={"a": 1, "b": 1}, first_call_s={"a": 1.0, "b": 1.0}, threads=1, device="cpu",
               load=None, cpu_per_round={"a": (1.0,) * 7, "b": (1.0,) * 7})
    d = decide(r, "a", "b", 1.2)
    assert (d.outcome, d.reason) == ("not_judged", CLOCKS_DISAGREE)
    agreeing = Rounds(**{**r.__dict__, "cpu_per_round": {"a": (2.0,) * 7, "b": (1.0,) * 7}})
    assert (decide(agreeing, "a", "b", 1.2).outcome, decide(agreeing, "a", "b", 1.2).reason) == ("b_first", None)
    # thread counts compared: more threads spend more CPU to finish sooner, so the wall clock alone decides
    threads = Rounds(**{**r.__dict__, "threads_of": {"a": 1, "b": 2}})
    assert decide(threads, "a", "b", 1.2).outcome == "b_first"


def test_a_burst_during_warm_up_leaves_blocks_of_comparable_length() -> None:
    """The calls per block come from the fastest warm-up call: a burst on one warm-up call changes nothing."""
    fake = FakeMachine()
    stolen = iter([0.0, 0.5] + [0.0] * 1000)  # the first warm-up call of "a" meets a 0.5 s burst
    functions = {"a": fake.machine("a", 0.001, lambda: next(stolen)), "b": fake.machine("b", 0.001)}
    r = measure_rounds(functions, threads=1, block_seconds=0.01, load=QUIET, clock=fake.clock, cpu_clock=fake.cpu)
    assert r.calls == {"a": 10, "b": 10}
