"""seqlab.measure.switches: global and module settings held and given back exactly, nested and across threads.

(The per-thread CPU thread count, :func:`one_thread`, is tested with the engine's threads in
tests/test_engine_threads.py; here its restore on exception and its no-op at a count of 1.)
"""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from seqlab.measure import switches
from seqlab.measure.switches import (
    FAST_PATH,
    ONEDNN,
    SDPA_BACKENDS,
    SharedSwitch,
    evaluation_mode,
    fast_paths_off,
    has_fast_path,
    one_thread,
    reference_kernels,
)


def box_switch(value="user"):
    box = {"v": value}
    writes = []

    def write(v):
        writes.append(v)
        box["v"] = v

    return box, writes, SharedSwitch("demo", lambda: box["v"], write)


def test_nested_holds_restore_the_users_value_once_at_the_end():
    box, writes, switch = box_switch()
    with switch.held("a"):
        assert box["v"] == "a" and switch.holds == 1
        with switch.held("b"):
            assert box["v"] == "b" and switch.holds == 2
        assert box["v"] == "a"  # the latest hold still active
    assert box["v"] == "user" and switch.holds == 0
    assert writes == ["a", "b", "a", "user"]
    assert repr(switch) == "SharedSwitch('demo', holds=0)"


def test_holds_that_leave_out_of_order_keep_the_latest_active_value():
    box, _, switch = box_switch()
    first, second = switch.held("a"), switch.held("b")
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first holder leaves while the second still measures
    assert box["v"] == "b" and switch.holds == 1
    second.__exit__(None, None, None)
    assert box["v"] == "user"  # the value saved by the first hold, not "a"


def test_a_hold_that_raises_gives_the_value_back():
    box, _, switch = box_switch(7)
    with pytest.raises(RuntimeError), switch.held(0):
        raise RuntimeError("inside")
    assert box["v"] == 7 and switch.holds == 0


def test_a_new_first_hold_saves_the_value_of_its_own_time():
    box, _, switch = box_switch("one")
    with switch.held("x"):
        pass
    box["v"] = "two"  # the user changed it between measurements
    with switch.held("x"):
        pass
    assert box["v"] == "two"


def test_holds_in_two_threads_overlapping_in_every_order():
    """Thread A holds, thread B holds, A leaves, B leaves: the setting ends as the user had it (events, no clock)."""
    box, _, switch = box_switch("user")
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with switch.held("A"):
            a_in.set()
            assert b_in.wait(60)
        a_out.set()

    def b():
        assert a_in.wait(60)
        with switch.held("B"):
            b_in.set()
            assert a_out.wait(60)
            seen["after A left"] = box["v"]

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seen == {"after A left": "B"} and box["v"] == "user" and switch.holds == 0


def global_flags():
    return (torch.backends.mha.get_fastpath_enabled(), bool(torch.backends.mkldnn.enabled),
            switches._sdpa_backends())


def test_reference_kernels_switches_every_fused_kernel_off_and_back():
    before = global_flags()
    with reference_kernels():
        assert torch.backends.mha.get_fastpath_enabled() is False
        assert torch.backends.mkldnn.enabled is False
        assert switches._sdpa_backends() == (False, False, True, False)  # the math reference alone
        with reference_kernels():
            assert FAST_PATH.holds == ONEDNN.holds == SDPA_BACKENDS.holds == 2
        assert switches._sdpa_backends() == (False, False, True, False)
    assert global_flags() == before
    assert FAST_PATH.holds == ONEDNN.holds == SDPA_BACKENDS.holds == 0


def test_reference_kernels_keep_the_users_own_changed_flags():
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(not before)
    try:
        with reference_kernels():
            pass
        assert torch.backends.mha.get_fastpath_enabled() is (not before)
        with fast_paths_off():
            assert torch.backends.mha.get_fastpath_enabled() is False
        assert torch.backends.mha.get_fastpath_enabled() is (not before)
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def test_a_reference_kernel_computes_the_same_values():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 4, dtype=torch.float64) for _ in range(3))
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    with reference_kernels():
        reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(fused, reference, rtol=1e-12, atol=1e-12)


def test_has_fast_path():
    assert has_fast_path(nn.MultiheadAttention(4, 1))
    assert has_fast_path(nn.Sequential(nn.Linear(4, 4), nn.TransformerEncoderLayer(4, 1, dim_feedforward=8)))
    assert not has_fast_path(nn.LSTM(4, 4))
    assert not has_fast_path(lambda x: x)


def test_evaluation_mode_gives_each_submodule_its_own_flag_back():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(), nn.Sequential(nn.Dropout())).train()
    net[1].eval()
    with evaluation_mode(net):
        assert not any(m.training for m in net.modules())
        with evaluation_mode(net[2]):  # a hold on a part, nested
            assert not net[2].training
        assert not any(m.training for m in net.modules())
    assert [m.training for m in net.modules()] == [True, True, False, True, True]


def test_evaluation_mode_leaves_a_function_alone_and_restores_on_exception():
    with evaluation_mode(lambda x: x):
        pass
    net = nn.Dropout().train()
    with pytest.raises(ValueError), evaluation_mode(net):
        raise ValueError
    assert net.training


def test_one_thread_restores_on_exception_and_needs_no_change_at_one():
    before = torch.get_num_threads()
    with pytest.raises(KeyError), one_thread():
        assert torch.get_num_threads() == 1
        raise KeyError
    assert torch.get_num_threads() == before
