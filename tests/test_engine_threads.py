"""Issue 17: tracing and counting on one thread (switches.one_thread), timings on --threads.

one_thread must give the calling thread its count back — after nesting, after an exception — and leave
another thread's count alone; the tracers must run under it; compare, check and decode must pass
``--threads`` to their timings. Thread counts are read with ``torch.get_num_threads()`` (values, no times).
"""

from __future__ import annotations

import threading

import pytest
import torch
from typer.testing import CliRunner

from seqlab.cli import app
from seqlab.measure import paths, trace, work
from seqlab.measure.switches import one_thread
from seqlab.measure.timing import fixed_threads


def test_one_thread_restores_the_count_after_nesting():
    with fixed_threads(2):
        with one_thread():
            with one_thread():
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1  # the inner exit does not restore early
        assert torch.get_num_threads() == 2


def test_one_thread_restores_the_count_after_an_exception():
    with fixed_threads(2):
        with pytest.raises(ValueError, match="inside"), one_thread():
            raise ValueError("inside")
        assert torch.get_num_threads() == 2


def test_one_thread_leaves_another_threads_count_alone():
    """A trace on one thread must not change the threads of a timing running beside it."""
    inside, release, seen = threading.Event(), threading.Event(), {}

    def trace_thread():
        with one_thread():
            inside.set()
            release.wait(10)

    def timing_thread():
        with fixed_threads(2):
            inside.wait(10)
            seen["during"] = torch.get_num_threads()
            release.set()

    threads = [threading.Thread(target=trace_thread), threading.Thread(target=timing_thread)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"during": 2}


@pytest.mark.parametrize("measure", ["paths", "span", "work"])
def test_tracers_run_on_one_thread(measure):
    seen = []

    def layer(x):
        seen.append(torch.get_num_threads())
        return x * 2

    x = torch.randn(3, 2)
    with fixed_threads(2):
        {"paths": lambda: paths.measure_paths(layer, x), "span": lambda: trace.measure_span(layer, x),
         "work": lambda: work.count_multiplications(layer, x)}[measure]()
        assert torch.get_num_threads() == 2
    assert seen and set(seen) == {1}


def test_compare_times_on_the_threads_asked_for(monkeypatch):
    import seqlab.studies.compare as study

    seen = []

    def run_compare(tokens, source, config, *args, **kwargs):  # (tokens, source, config[, progress])
        seen.append(config.threads)
        raise SystemExit(0)

    monkeypatch.setattr(study, "run_compare", run_compare)
    CliRunner().invoke(app, ["compare", "--tokens", "4", "--threads", "3", "--no-time"])
    CliRunner().invoke(app, ["compare", "--tokens", "4", "--no-time"])
    assert seen == [3, None]  # None: the study takes timing_threads_default (tested in test_compare_times.py)


def test_check_passes_threads_to_its_timings(monkeypatch):
    import seqlab.studies.check as study

    seen = []

    def run_check(config, *args, **kwargs):
        seen.append(config.threads)
        raise SystemExit(0)

    monkeypatch.setattr(study, "run_check", run_check)
    CliRunner().invoke(app, ["check", "--only", "L8", "--threads", "3"])
    assert seen == [3]


def test_decode_passes_threads_to_its_timings(monkeypatch):
    import seqlab.studies.decode as study

    seen = []

    def run_decode(config, *args, **kwargs):
        seen.append(config.threads)
        raise SystemExit(0)

    monkeypatch.setattr(study, "run_decode", run_decode)
    CliRunner().invoke(app, ["decode", "--quick", "--threads", "3"])
    assert seen == [3]


def test_a_bad_thread_count_is_one_line_and_exit_2():
    result = CliRunner().invoke(app, ["compare", "--threads", "0"])
    assert result.exit_code == 2
    assert "received 0" in result.output
