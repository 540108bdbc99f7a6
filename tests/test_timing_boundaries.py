"""Each threshold and comparison of :mod:`seqlab.measure.timing` with the measurement exactly at it, just below and
just above (issue 38, item 9): the noisy rule, the fewest blocks, the busy machine.

Block times and the load average are patched; no test reads a clock to decide. Thresholds are written here by hand,
never imported: a test that reads the constant it checks follows any change of it. ``benchmarks/mutants.py`` reports
which single-point changes of these rules the tests would let through.
"""

from __future__ import annotations

import os

import pytest

from seqlab.errors import SeqlabError
from seqlab.measure.timing import (
    MachineLoad,
    Timing,
    is_noisy,
    machine_load,
    measure_time,
    timings_in,
)


@pytest.mark.parametrize("iqr, noisy", [(0.1, False), (0.1 + 1e-9, True), (0.1 - 1e-9, False), (0.0, False)])
def test_noisy_from_an_iqr_strictly_above_a_tenth_of_the_median(iqr, noisy):
    """An IQR of exactly a tenth of the median (0.1 · 1.0) is not noisy; a hair above it is."""
    assert is_noisy(1.0, iqr, 3) is noisy
    assert is_noisy(2.0, 2 * iqr, 5) is noisy  # 0.1 · 2.0 = 0.2 exactly too


@pytest.mark.parametrize("blocks, noisy", [(0, True), (1, True), (2, True), (3, False), (4, False)])
def test_noisy_below_three_blocks_even_without_spread(blocks, noisy):
    assert is_noisy(1.0, 0.0, blocks) is noisy
    assert is_noisy(1.0, 1.0, blocks) is True  # a spread as large as the median is noisy at any count


def _patch_blocks(monkeypatch, raw_times: list[float]) -> None:
    """``Timer.blocked_autorange`` answering these block times (one call per block)."""
    from torch.utils import benchmark

    class FakeTimer:
        def __init__(self, **kwargs) -> None:
            self.kwargs = kwargs

        def blocked_autorange(self, min_run_time: float):
            from torch.utils.benchmark.utils.common import TaskSpec

            return benchmark.Measurement(1, list(raw_times), TaskSpec("fn()", "pass", label=self.kwargs["label"]))

    monkeypatch.setattr(benchmark, "Timer", FakeTimer)


@pytest.mark.parametrize("autorange", [[0.5], [0.5, 0.7], [0.5, 0.7, 0.6], [0.5, 0.7, 0.6, 0.9]])
def test_blocks_are_added_only_up_to_three(monkeypatch, autorange):
    """Fewer than 3 blocks from the autorange: blocks of the same size are timed until there are exactly 3; 3 or more:
    none is added. (The added blocks' seconds are read from the clock; only their number is asserted.)"""
    _patch_blocks(monkeypatch, autorange)
    t = measure_time(lambda: None, label="patched", threads=1, min_run_time=0.001)
    assert len(t.samples) == max(3, len(autorange)) and t.samples[:len(autorange)] == tuple(autorange)
    assert t.runs == len(t.samples)  # one call per block


@pytest.mark.parametrize("min_run_time", [0, 0.0, -0.001])
def test_min_run_time_must_be_above_zero(min_run_time):
    with pytest.raises(SeqlabError, match="min_run_time must be a finite number > 0 seconds"):
        measure_time(lambda: None, label="x", min_run_time=min_run_time)


def test_the_least_min_run_time_is_any_above_zero(monkeypatch):
    _patch_blocks(monkeypatch, [0.1, 0.1, 0.1])
    assert measure_time(lambda: None, label="x", min_run_time=1e-9).min_run_time == 1e-9
    assert measure_time(lambda: None, label="x", min_run_time=0.5).min_run_time == 0.5


@pytest.mark.parametrize("load_1min, busy", [(1.0, True), (1.0 - 1e-9, False), (1.0 + 1e-9, True), (0.0, False)])
def test_a_machine_is_busy_from_exactly_half_a_task_per_cpu(monkeypatch, load_1min, busy):
    """2 CPUs: busy from a load of 0.5 · 2 = 1.0 exactly."""
    monkeypatch.setattr(os, "getloadavg", lambda: (load_1min, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert machine_load() == MachineLoad(load_1min, 2, busy)


def test_without_a_cpu_count_one_cpu_is_read(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert machine_load() == MachineLoad(0.5, 1, True)


def test_timings_in_reads_no_class_and_no_string():
    t = Timing("x", (1.0,), 1.0, 0.0, 1.0, 1, 1, "cpu", False, 0.1)
    assert list(timings_in(Timing)) == [] and list(timings_in("label")) == [] and list(timings_in(None)) == []
    assert [found.label for found in timings_in([Timing, t, "x", {"k": t}])] == ["x", "x"]
