"""``seqlab compare`` takes the recurrence's and attention's reaches before the LSTM and GRU reaches start on
the second thread, so the worker overlaps the whole count-and-trace stretch: the figures equal the route that
measures each reach inside its machine's measurements, and no two reaches run at once (the reach engine enters
``warnings.catch_warnings``, which is process-wide)."""

from __future__ import annotations

import threading

import seqlab.measure.reach as reach_module
from seqlab.studies import compare, compare_gated, compare_reach
from seqlab.text import synthetic_tokens


def _setup(T: int = 12, d: int = 8):
    config = compare.CompareConfig(d_model=d, time=False, gated=False)
    recurrence, attention = compare._build(config)
    return config, recurrence, attention, compare.embed(synthetic_tokens(T), d, seed=config.seed)


def test_reaches_taken_first_equal_the_reaches_taken_inside():
    config, recurrence, attention, x = _setup()
    inside = compare._measure_recurrence(recurrence, x, config)
    first = compare._measure_recurrence(recurrence, x, config, reach=compare._reach(recurrence, x, 8, config))
    assert first == inside
    inside_att = compare._measure_attention(attention, x, config)
    reaches = compare_reach.query_row_reaches(attention, x, lambda n: compare._probes(config, 8, n), config.seed)
    first_att = compare._measure_attention(attention, x, config, reaches=reaches)
    assert first_att == inside_att
    assert first_att.reach_half is not None and len(first_att.reach_half.norms) == 6


def test_a_given_reach_is_the_one_reported():
    config, recurrence, attention, x = _setup()
    wrong = compare._reach(recurrence, x[:6], 8, config)  # a reach of another input: 6 norms, not 12
    assert compare._measure_recurrence(recurrence, x, config, reach=wrong).reach is wrong
    assert len(compare._measure_recurrence(recurrence, x, config).reach.norms) == 12


def test_no_reach_overlaps_another(monkeypatch):
    """Every measure_reach call, on either thread, runs while no other one does."""
    active, overlaps, calls, lock = [0], [], [], threading.Lock()
    original = reach_module.measure_reach

    def guarded(*args, **kwargs):
        with lock:
            active[0] += 1
            overlaps.append(active[0] > 1)
            calls.append(threading.current_thread().name)
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                active[0] -= 1

    for module in (compare, compare_gated, compare_reach):
        monkeypatch.setattr(module, "measure_reach", guarded)
    config = compare.CompareConfig(d_model=8, time=False, sensitivity_draws=0)
    result = compare.run_compare(synthetic_tokens(16), "synthetic", config)
    assert len(calls) == 6  # recurrence, attention at T, T/2 and T/4, LSTM, GRU
    assert sum(name.startswith("seqlab-reach") for name in calls) == 2
    assert not any(overlaps)
    assert len(result.gated) == 2 and all(len(g.reach.norms) == 16 for g in result.gated)
