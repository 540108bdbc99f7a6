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
