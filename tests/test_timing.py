"""Tests for seqlab.measure.timing (L8): values that cannot be flaky; no test compares speeds."""

import math
import time

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.i18n import format_seconds
from seqlab.measure.timing import measure_time

FAST = 0.01  # seconds of timed blocks: enough for structure, keeps the suite quick


def test_structure_and_invariants() -> None:
    a = torch.randn(16, 16)
    t = measure_time(lambda: a @ a, label="matmul 16", threads=1, min_run_time=FAST)
    assert t.label == "matmul 16" and t.device == "cpu" and t.threads == 1
    assert t.min_run_time == FAST
    assert len(t.samples) >= 1 and all(s > 0 for s in t.samples)
    assert min(t.samples) <= t.median_s <= max(t.samples)
    assert 0.0 <= t.iqr_s <= max(t.samples) - min(t.samples)
    assert t.first_call_s > 0
    assert t.runs >= len(t.samples)
    assert isinstance(t.noisy, bool)
    with pytest.raises(AttributeError):
        t.median_s = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_reported_and_restored(threads: int) -> None:
    before = torch.get_num_threads()
    seen: list[int] = []
    t = measure_time(lambda: seen.append(torch.get_num_threads()), label="t", threads=threads,
                     min_run_time=FAST)
    assert t.threads == threads
    assert set(seen) == {threads}  # the first call, warm-up and every timed call
    assert torch.get_num_threads() == before


def test_default_threads_is_current() -> None:
    t = measure_time(lambda: None, label="noop", min_run_time=FAST)
    assert t.threads == torch.get_num_threads()


def test_runs_under_no_grad() -> None:
    modes: list[bool] = []
    measure_time(lambda: modes.append(torch.is_grad_enabled()), label="g", min_run_time=FAST)
    assert modes and not any(modes)
    assert torch.is_grad_enabled()


def test_sleep_median_at_least_sleep() -> None:
    t = measure_time(lambda: time.sleep(0.002), label="sleep", threads=1, min_run_time=0.02)
    assert t.median_s >= 0.002  # sleep never returns early
    assert t.first_call_s >= 0.002
    assert all(s >= 0.002 for s in t.samples)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"threads": 0}, "threads"),
        ({"threads": 1.5}, "threads"),
        ({"min_run_time": 0}, "min_run_time"),
        ({"min_run_time": -1.0}, "min_run_time"),
        ({"min_run_time": math.inf}, "min_run_time"),
        ({"min_run_time": math.nan}, "min_run_time"),
        ({"device": "tpu"}, "device"),
        ({"label": None}, "label"),
    ],
)
def test_bad_inputs(kwargs: dict, match: str) -> None:
    args = {"label": "x", "min_run_time": FAST} | kwargs
    with pytest.raises(SeqlabError, match=match):
        measure_time(lambda: None, **args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without CUDA")
def test_cuda_without_device() -> None:
    with pytest.raises(SeqlabError, match="device 'cuda' requested but no CUDA device is present"):
        measure_time(lambda: None, label="x", device="cuda")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.000812, "812 µs"),
        (0.0241, "24.1 ms"),
        (1.3212, "1.32 s"),
        (0.0009996, "1.00 ms"),  # rounds up into the next unit, not "1000 µs"
        (2.5e-9, "2.50 ns"),
        (4e-10, "0.400 ns"),
        (0.0, "0 s"),
        (123.4, "123 s"),
    ],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_format_seconds_refuses(bad: float) -> None:
    with pytest.raises(SeqlabError):
        format_seconds(bad)


# --- At least three blocks, and the machine's load ------------------------------------------------------

def test_a_call_longer_than_min_run_time_still_gets_three_timed_blocks() -> None:
    from seqlab.measure.timing import MIN_BLOCKS

    t = measure_time(lambda: time.sleep(0.01), label="slow", threads=1, min_run_time=0.001)
    assert MIN_BLOCKS == 3 and len(t.samples) >= 3  # blocked_autorange alone stops after one block here
    assert t.runs >= 3 and all(s >= 0.01 for s in t.samples)
    assert 0.0 <= t.iqr_s <= max(t.samples) - min(t.samples)


def _patch_load(monkeypatch, load_1min: float, cpus: int = 4) -> None:
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (load_1min, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)


@pytest.mark.parametrize(("load_1min", "busy"), [(0.3, False), (1.99, False), (2.0, True), (7.5, True)])
def test_machine_load_is_busy_from_half_a_task_per_cpu(monkeypatch, load_1min: float, busy: bool) -> None:
    from seqlab.measure.timing import BUSY_LOAD_PER_CPU, machine_load

    _patch_load(monkeypatch, load_1min, cpus=4)
    load = machine_load()
    assert BUSY_LOAD_PER_CPU == 0.5  # 0.5 * 4 CPUs = 2.0 tasks
    assert (load.load_1min, load.cpus, load.busy) == (load_1min, 4, busy)
    assert load.per_cpu == pytest.approx(load_1min / 4)


def test_without_a_load_average_nothing_is_claimed(monkeypatch) -> None:
    import os

    from seqlab.measure.timing import machine_load

    def unavailable():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", unavailable)
    load = machine_load()
    assert load.load_1min is None and load.busy is False and load.per_cpu is None


def test_every_timing_carries_the_load_it_began_under(monkeypatch) -> None:
    from seqlab.measure.timing import MachineLoad, busiest

    _patch_load(monkeypatch, 6.0, cpus=4)
    busy = measure_time(lambda: None, label="busy", min_run_time=FAST)
    _patch_load(monkeypatch, 0.5, cpus=4)
    quiet = measure_time(lambda: None, label="quiet", min_run_time=FAST)
    assert busy.load == MachineLoad(6.0, 4, True) and quiet.load == MachineLoad(0.5, 4, False)
    given = MachineLoad(1.0, 8, False)
    assert measure_time(lambda: None, label="given", min_run_time=FAST, load=given).load is given
    assert busiest([quiet, busy, None]) is busy.load and busiest([quiet]) is quiet.load


# --- The one timing-quality rule, at its boundary -------------------------------------------------------------

def _patch_blocks(monkeypatch, raw_times: list[float]) -> None:
    """``Timer.blocked_autorange`` answering a Measurement of these block times (one call per block): the
    measurement is patched, no clock decides the test."""
    import torch.utils.benchmark as benchmark

    class FakeTimer:
        def __init__(self, **kwargs) -> None:
            self.kwargs = kwargs

        def blocked_autorange(self, min_run_time: float):
            from torch.utils.benchmark.utils.common import TaskSpec

            return benchmark.Measurement(1, list(raw_times), TaskSpec("fn()", "pass", label=self.kwargs["label"]))

    monkeypatch.setattr(benchmark, "Timer", FakeTimer)


@pytest.mark.parametrize(("half_iqr", "noisy"), [(0.0495, False), (0.0505, True)])
def test_noisy_from_an_iqr_over_a_tenth_of_the_median(monkeypatch, half_iqr: float, noisy: bool) -> None:
    from seqlab.measure.timing import NOISY_IQR_FRACTION, is_noisy

    # five blocks sorted: quartiles are the 2nd and 4th, median the 3rd: IQR = 2 * half_iqr = 0.099 or 0.101
    _patch_blocks(monkeypatch, [0.8, 1.0 - half_iqr, 1.0, 1.0 + half_iqr, 1.2])
    t = measure_time(lambda: None, label="patched", threads=1, min_run_time=FAST)
    assert t.samples == (0.8, 1.0 - half_iqr, 1.0, 1.0 + half_iqr, 1.2)
    assert t.median_s == pytest.approx(1.0) and t.iqr_s == pytest.approx(2 * half_iqr, rel=1e-12)
    assert NOISY_IQR_FRACTION == 0.10
    assert t.noisy is noisy is is_noisy(t.median_s, t.iqr_s, len(t.samples))


@pytest.mark.parametrize(("blocks", "noisy"), [(2, True), (3, False)])
def test_noisy_from_fewer_than_three_blocks(blocks: int, noisy: bool) -> None:
    """measure_time itself always times 3 blocks or more; a Timing built from a record may hold fewer."""
    from seqlab.measure.timing import MIN_BLOCKS, is_noisy

    assert MIN_BLOCKS == 3 and is_noisy(1.0, 0.0, blocks) is noisy  # no spread: only the blocks decide
