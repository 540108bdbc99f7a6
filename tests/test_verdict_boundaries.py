"""Each threshold and comparison of the verdict rules with the measurement exactly at it, just below and just above
(issue 38, item 9): verdicts.py's trends, decode's winners by count, bytes and rounds.

Thresholds are written here by hand, never imported: a test that reads the constant it checks follows any change of
it. ``benchmarks/mutants.py`` reports which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from seqlab.errors import SeqlabError
from seqlab.measure.decode import DecodeStep
from seqlab.measure.rounds import Rounds
from seqlab.studies.decode import (
    DecodeConfig,
    TimedPosition,
    check_decode_config,
    decide_wins,
    fastest,
    state_growth,
)
from seqlab.studies.verdicts import loglog_slope, power_trend

# --- verdicts.py: a trend needs 3 lengths spanning ×4 -------------------------------------------------------------

@pytest.mark.parametrize("xs, trend", [((8, 16, 32), True), ((8, 32), False), ((8, 16, 31), False),
                                       ((8, 16, 33), True)])
def test_a_trend_needs_three_lengths_spanning_four_times(xs, trend):
    """3 distinct lengths (2 are not enough) whose span is at least ×4 (32/8 exactly is enough, 31/8 is not)."""
    ys = [1 / x for x in xs]
    found = power_trend(xs, ys)
    assert (found is not None) == trend
    if trend:
        assert found == pytest.approx(-1.0, abs=1e-12)


def test_a_trend_reads_only_values_above_zero():
    """y = 0 (a reach that underflowed) is no point of a power law: three lengths with one zero are two points."""
    assert power_trend([8, 16, 32], [1 / 8, 0.0, 1 / 32]) is None
    assert power_trend([8, 16, 32, 64], [1 / 8, 0.0, 1 / 32, 1 / 64]) == pytest.approx(-1.0)
    assert power_trend([8, 16, 32], [1 / 8, 5e-324, 1 / 32]) is not None  # the least float above 0 is a point


def test_a_slope_needs_two_points_above_zero_at_two_lengths():
    assert loglog_slope([1, 2], [1, 2]) == pytest.approx(1.0)
    for xs, ys in (([1], [1]), ([1, 2], [1, 0.0]), ([0.0, 2], [1, 2])):
        with pytest.raises(SeqlabError, match="two or more points with finite values > 0"):
            loglog_slope(xs, ys)
    with pytest.raises(SeqlabError, match="at least two different x"):
        loglog_slope([2, 2], [1, 2])


# --- decode: counts and bytes win when strictly fewer; times need a decision -----------------------------------

def _steps(work_a: int, work_b: int, bytes_a: int = 64, bytes_b: int = 64) -> tuple[DecodeStep, ...]:
    return (DecodeStep("elman", 4, 8, 1, work_a, work_a, bytes_a),
            DecodeStep("attention_kv_cache", 4, 8, 1, work_b, work_b, bytes_b))


@pytest.mark.parametrize("work_b, winner", [(129, "elman"), (128, None), (127, "attention_kv_cache")])
def test_work_wins_only_when_strictly_fewer(work_b, winner):
    """128 against 129: the fewer wins; 128 against 128: nobody; 128 against 127: the other."""
    (work, _) = decide_wins(_steps(128, work_b), (4,), ("elman", "attention_kv_cache"))
    assert work.criterion == "work" and work.machine == winner


def test_a_count_of_zero_leads_with_an_infinite_ratio():
    """A step of 0 multiplications (a cache read only) leads any positive count; the ratio is not a division by 0."""
    (work, _) = decide_wins(_steps(0, 1), (4,), ("elman", "attention_kv_cache"))
    assert (work.machine, work.ratio) == ("elman", float("inf"))
    (work, _) = decide_wins(_steps(1, 2), (4,), ("elman", "attention_kv_cache"))
    assert (work.machine, work.ratio) == ("elman", 2.0)


def test_one_machine_has_no_winner_to_name():
    steps = _steps(1, 2)[:1]
    assert decide_wins(steps, (4,), ("elman", "attention_kv_cache")) == ()


def _rounds(a: tuple[float, ...], b: tuple[float, ...]) -> Rounds:
    return Rounds({"a": a, "b": b}, {}, {}, 1, "cpu", None)


@pytest.mark.parametrize("machines, named", [(1, False), (2, True)])
def test_times_are_decided_between_two_machines_timed_or_more(machines, named):
    """decide_wins times a position only when 2 machines or more were timed there (one has no one to beat)."""
    rounds = _rounds((1.0,) * 5, (2.0,) * 5)
    if machines == 1:
        rounds = Rounds({"a": (1.0,) * 5}, {}, {}, 1, "cpu", None)
    wins = [w for w in decide_wins((), (4,), ("a", "b"), (TimedPosition(4, rounds),)) if w.criterion == "time"]
    assert [w.machine for w in wins] == (["a"] if named else [])


def test_fastest_needs_two_machines_timed():
    with pytest.raises(SeqlabError):
        fastest(TimedPosition(4, Rounds({"a": (1.0,) * 5}, {}, {}, 1, "cpu", None)), ("a",))
    win = fastest(TimedPosition(4, _rounds((1.0,) * 5, (2.0,) * 5)), ("a", "b"))
    assert (win.machine, win.ratio) == ("a", 2.0)


@pytest.mark.parametrize("rounds, refused", [(2, True), (3, False)])
def test_decode_needs_three_rounds(rounds, refused):
    """MIN_ROUNDS = 3: a config with 2 rounds is refused, with 3 it is not."""
    config = dataclasses.replace(DecodeConfig.quick(), rounds=rounds)
    if refused:
        with pytest.raises(SeqlabError, match="rounds must be at least 3"):
            check_decode_config(config)
    else:
        assert check_decode_config(config).rounds == 3


def test_a_growth_needs_two_positions():
    one = (DecodeStep("x", 16, 8, 1, 0, 0, 1024),)
    two = one + (DecodeStep("x", 256, 8, 1, 0, 0, 16384),)
    assert state_growth(one, ("x",)) == () and state_growth(two, ("x",))[0].kind == "linear"


# --- rounds: a lead must clear ×1.2 in the quartiles and the quickest rounds; 3 rounds at least ----------------

def _classify(a: float, b: float, rounds: int = 5, margin: float | None = None) -> str:
    from seqlab.measure.rounds import MARGIN, classify

    return classify((a,) * rounds, (b,) * rounds, MARGIN if margin is None else margin)


@pytest.mark.parametrize("a, outcome", [(1.2, "tie"), (math.nextafter(1.2, 2.0), "b_first"),
                                        (math.nextafter(1.2, 0.0), "tie")])
def test_b_first_needs_a_ratio_above_the_margin(a, outcome):
    """a's time over b's (1.0) exactly 1.2: a tie, at the margin; one float above: b finished first. The default
    margin is MARGIN, 1.2 as documented (written here by hand)."""
    assert _classify(a, 1.0) == outcome


@pytest.mark.parametrize("b, outcome", [(1.2, "tie"), (math.nextafter(1.2, 2.0), "a_first"),
                                        (math.nextafter(1.2, 0.0), "tie")])
def test_a_first_needs_a_ratio_below_one_over_the_margin(b, outcome):
    """1.0 / 1.2 is exactly the threshold 1 / margin: a tie; a b one float slower: a finished first."""
    assert _classify(1.0, b) == outcome


@pytest.mark.parametrize("rounds, outcome", [(2, "not_judged"), (3, "a_first")])
def test_three_rounds_decide_two_do_not(rounds, outcome):
    assert _classify(1.0, 2.0, rounds) == outcome


@pytest.mark.parametrize("margin, refused", [(1.0, True), (math.nextafter(1.0, 2.0), False)])
def test_a_margin_must_exceed_one(margin, refused):
    if refused:
        with pytest.raises(SeqlabError, match="margin must be a finite number > 1"):
            _classify(1.0, 2.0, margin=margin)
    else:
        assert _classify(1.0, 2.0, margin=margin) == "a_first"


@pytest.mark.parametrize("seconds, refused", [(0.0, True), (5e-324, False)])
def test_a_time_must_be_above_zero(seconds, refused):
    from seqlab.measure.rounds import classify

    if refused:
        with pytest.raises(SeqlabError, match="every time must be finite and > 0"):
            classify((seconds, 1.0, 1.0), (1.0,) * 3, 1.2)
    else:
        assert classify((seconds, 1.0, 1.0), (1.0,) * 3, 1.2) in ("a_first", "not_judged", "tie")


@pytest.mark.parametrize("ratio, lead", [(2.0, 2.0), (0.5, 2.0), (1.0, 1.0), (1.5, 1.5)])
def test_the_lead_is_at_least_one(ratio, lead):
    from seqlab.measure.rounds import Decision

    decision = Decision(a="a", b="b", outcome="tie", ratio=ratio, low=ratio, high=ratio, margin=1.2, rounds=5)
    assert decision.lead == lead


def test_the_cpu_clock_must_see_every_block():
    """A CPU time of 0 (a block shorter than the CPU clock's tick) confirms nothing: the wall clock's winner is
    not named; a CPU time just above 0 that agrees names it."""
    from seqlab.measure.rounds import decide

    wall = {"a": (1.0,) * 5, "b": (2.0,) * 5}
    seen = Rounds(wall, {}, {}, 1, "cpu", None, cpu_per_round={"a": (1.0,) * 5, "b": (2.0,) * 5})
    unseen = Rounds(wall, {}, {}, 1, "cpu", None, cpu_per_round={"a": (0.0,) * 5, "b": (2.0,) * 5})
    assert decide(seen, "a", "b", 1.2).outcome == "a_first"
    assert decide(unseen, "a", "b", 1.2).outcome == "not_judged"


@pytest.mark.parametrize("a, b, original", [
    ((1.2,) * 4 + (1.2,), (1.0,) * 4 + (0.9,), "tie"),  # quartile exactly 1.2, quickest rounds above it
    ((1.2,) + (1.5,) * 4, (1.0,) * 5, "not_judged"),  # quickest rounds exactly 1.2, quartile above it
    ((0.8,) + (1.0,) * 4, (1.2,) * 5, "tie"),  # upper quartile exactly 1/1.2, quickest rounds below it
    ((1.0,) * 5, (1.2,) + (2.0,) * 4, "not_judged"),  # quickest rounds exactly 1/1.2, upper quartile below it
])
def test_each_half_of_a_lead_is_strict_at_the_margin(a, b, original):
    """A lead needs both the quartile and the quickest rounds past the margin, each strictly: one of them exactly at
    1.2 (or 1/1.2) and the other past it decides nothing."""
    from seqlab.measure.rounds import classify

    assert classify(a, b, 1.2) == original


def test_the_quartiles_of_one_and_of_two_rounds():
    """One round: its ratio is both quartiles; two rounds: the inclusive quartiles between them."""
    from seqlab.measure.rounds import decide

    one = decide(Rounds({"a": (2.0,), "b": (1.0,)}, {}, {}, 1, "cpu", None), "a", "b", 1.2)
    assert (one.low, one.high, one.outcome) == (2.0, 2.0, "not_judged")
    two = decide(Rounds({"a": (1.0, 2.0), "b": (1.0, 1.0)}, {}, {}, 1, "cpu", None), "a", "b", 1.2)
    assert (two.low, two.high) == (1.25, 1.75)


def test_a_clock_that_does_not_move_times_one_call_per_block():
    """A warm-up measured at 0 s (a clock too coarse for one call) gives one call per block, not a division by 0."""
    from seqlab.measure.rounds import measure_rounds
    from seqlab.measure.timing import MachineLoad

    rounds = measure_rounds({"a": lambda: None, "b": lambda: None}, rounds=3, clock=lambda: 0.0,
                            load=MachineLoad(0.0, 2, False), threads=1)
    assert rounds.calls == {"a": 1, "b": 1}
