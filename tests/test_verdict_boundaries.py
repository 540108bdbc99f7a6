"""Each threshold and comparison of the verdict rules with the measurement exactly at it, just below and just above
(issue 38, item 9): verdicts.py's trends, decode's winners by count, bytes and rounds.

Thresholds are written here by hand, never imported: a test that reads the constant it checks follows any change of
it. ``benchmarks/mutants.py`` reports which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

import dataclasses

import pytest

from seqlab.errors import SeqlabError
from seqlab.measure.decode import DecodeStep
from seqlab.measure.rounds import Rounds
from seqlab.studies.decode import DecodeConfig, TimedPosition, check_decode_config, decide_wins, fastest, state_growth
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
