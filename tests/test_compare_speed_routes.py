"""Faster routes of ``seqlab compare`` give the figures of the routes they replaced (issue 17)."""

from __future__ import annotations

import copy
import threading

import pytest
import torch

import seqlab.measure.reach as reach_module
from seqlab.layers.attention import SCORES, SelfAttention
from seqlab.measure.reach import measure_reach
from seqlab.measure.work import count_on_meta
from seqlab.studies import compare, compare_gated, compare_reach
from seqlab.studies.compare_gated import build_gated
from seqlab.studies.compare_reach import query_row_reach
from seqlab.studies.compare_scopes import SelfAttentionLayer, meta_count_by_steps
from seqlab.text import synthetic_tokens


def _old_route(layer, x, probes, seed):
    """The attention reach as compare measured it before: the full layer, one vmapped backward."""
    layer64 = copy.deepcopy(layer).double()
    return measure_reach(lambda rows: layer64(rows)[0], x.double(), probes=probes, seed=seed, batched=False)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("probes", [None, 3])
def test_query_row_reach_equals_the_full_layer_route(score, probes):
    with torch.random.fork_rng():
        torch.manual_seed(1)
        layer = SelfAttention(6, d_v=5, score=score, generator=torch.Generator().manual_seed(2)).eval()
        x = torch.randn(9, 6)
    old, new = _old_route(layer, x, probes, 4), query_row_reach(layer, x, probes=probes, seed=4)
    assert new.norms == pytest.approx(old.norms, rel=1e-12, abs=0.0)
    assert (new.position, new.estimator, new.dtype, new.backward) == (old.position, old.estimator, old.dtype,
                                                                      old.backward)
    assert (new.zeros, new.subnormals, new.rounding, new.undefined) == (old.zeros, old.subnormals, old.rounding,
                                                                        old.undefined)


def test_query_row_reach_reads_the_last_query_only():
    """Both routes agree after an earlier row changes; a change of the last row moves the reach (not a constant)."""
    layer = SelfAttention(4, generator=torch.Generator().manual_seed(0)).eval()
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    base = query_row_reach(layer, x, probes=None, seed=0).norms
    earlier, last = x.clone(), x.clone()
    earlier[2] += 1.0
    last[5] += 1.0
    moved = query_row_reach(layer, earlier, probes=None, seed=0).norms
    assert _old_route(layer, earlier, None, 0).norms == pytest.approx(moved, rel=1e-12)
    assert query_row_reach(layer, last, probes=None, seed=0).norms != pytest.approx(base, rel=1e-6)


def test_causal_layer_takes_the_full_route():
    layer = SelfAttention(4, causal=True, generator=torch.Generator().manual_seed(0)).eval()
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    assert query_row_reach(layer, x, probes=None, seed=0).norms == _old_route(layer, x, None, 0).norms


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_meta_count_by_steps_equals_the_whole_count(cell):
    module = build_gated(cell, 6, 5, torch.Generator().manual_seed(0))
    batch = torch.randn(1, 11, 6, generator=torch.Generator().manual_seed(1))
    assert meta_count_by_steps(module, batch) == count_on_meta(module, batch)


def test_meta_count_by_steps_falls_back_when_the_count_is_not_linear_in_T():
    """Attention's count grows as T^2: the three short counts are not on a line, so the layer is counted whole."""
    layer = SelfAttentionLayer(8, 2, torch.Generator().manual_seed(0))
    batch = torch.randn(1, 9, 8, generator=torch.Generator().manual_seed(1))
    whole = count_on_meta(layer, batch)
    assert meta_count_by_steps(layer, batch) == whole
    two, three = (count_on_meta(layer, batch[:, :t]).multiplications for t in (2, 3))
    assert whole.multiplications != two + 7 * (three - two)  # a straight line from T = 2, 3 would be wrong


# --- folded from tests/test_compare_speed_routes2.py: ``seqlab compare`` takes the recurrence's and attention's reach

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


def test_each_reach_runs_once_on_either_thread(monkeypatch):
    """Every measure_reach call runs once, on the worker or, taken back at the end, on the caller's thread."""
    calls, lock = [], threading.Lock()
    original = reach_module.measure_reach

    def recorded(*args, **kwargs):
        with lock:
            calls.append(threading.current_thread().name)
        return original(*args, **kwargs)

    for module in (compare, compare_gated, compare_reach):
        monkeypatch.setattr(module, "measure_reach", recorded)
    config = compare.CompareConfig(d_model=8, time=False, sensitivity_draws=0)
    result = compare.run_compare(synthetic_tokens(16), "synthetic", config)
    assert len(calls) == 6  # recurrence, attention at T, T/2 and T/4, LSTM, GRU
    assert set(calls) <= {"seqlab-reach", threading.main_thread().name}
    assert len(result.gated) == 2 and all(len(g.reach.norms) == 16 for g in result.gated)


def test_the_figures_do_not_depend_on_which_thread_measures_them(monkeypatch):
    """Every float64 job on the worker beside the traces, or every one on the caller's thread after them: the same
    result, to the bit."""
    config = compare.CompareConfig(d_model=12, time=False, spectral_radius=1.3, sensitivity_draws=2)
    tokens = synthetic_tokens(20)
    beside = compare.run_compare(tokens, "synthetic", config)
    monkeypatch.setattr(compare_gated.AsideWork, "start", lambda self: None)  # no worker: help() runs every job
    after = compare.run_compare(tokens, "synthetic", config)
    assert after == beside
