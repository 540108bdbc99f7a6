"""Peak live bytes of a forward pass (seqlab.measure.memory_peak): exact small cases, then growth with T.

The math attention path holds T×T scores (peak ∝ T²), the fused CPU flash kernel does not (∝ T), and the
Elman RNN keeps one state per position (∝ T) — issue 15, item 3.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from seqlab.errors import SeqlabError
from seqlab.layers.attention import SelfAttention
from seqlab.layers.recurrent import ElmanRNN
from seqlab.measure import memory_peak
from seqlab.measure.memory_peak import measure_peak_memory, peak_growth
from seqlab.measure.switches import SDPA_BACKENDS

LENGTHS = (256, 512, 1024, 2048)
D = 8
MATH = (False, False, True, False)  # SDPA backends: flash, efficient, math, cudnn
FLASH = (True, False, False, False)


def _generous(T: int) -> int:
    return 16 * T * T + 1024 * T


def test_views_and_inplace_writes_of_inputs_allocate_nothing():
    x = torch.zeros(100)
    peak = measure_peak_memory(lambda: x.view(10, 10).t().add_(1))
    assert (peak.peak_bytes, peak.allocations, peak.external_bytes) == (0, 0, 400)  # 100 * 4 bytes, read only


def test_a_freed_intermediate_is_released_and_the_next_one_counted():
    def loop():
        for _ in range(10):
            y = torch.zeros(1000)  # noqa: F841  the previous y dies once the new one exists
    peak = measure_peak_memory(loop)
    # two 1000-float storages live at once (the new y before the old is dropped): 2 * 4000
    assert (peak.peak_bytes, peak.allocated_bytes, peak.allocations, peak.final_bytes) == (8000, 40000, 10, 0)


def test_outputs_are_held_at_the_end_and_named_at_the_peak():
    x = torch.zeros(4, 8)
    peak = measure_peak_memory(lambda: torch.cat([x, x]))  # (8, 8) float32 = 256 bytes
    assert (peak.peak_bytes, peak.final_bytes, peak.peak_op) == (256, 256, "aten.cat")
    assert peak.largest[0].shape == (8, 8) and peak.largest[0].dtype == "float32"


def _sdpa(backends, T):
    q = torch.randn(1, 1, T, D, generator=torch.Generator().manual_seed(T))  # (B, heads, T, d)

    def run():
        with SDPA_BACKENDS.held(backends):
            return F.scaled_dot_product_attention(q, q, q)
    return run


def test_math_sdpa_peak_grows_as_t_squared_and_the_fused_kernel_as_t():
    math_path = peak_growth(lambda T: _sdpa(MATH, T), LENGTHS, _generous)
    fused = peak_growth(lambda T: _sdpa(FLASH, T), LENGTHS, _generous)
    assert abs(math_path.fit.exponent - 2) <= 0.15, math_path.peak_bytes
    assert abs(fused.fit.exponent - 1) <= 0.15, fused.peak_bytes
    # at T = 2048 the math path holds the (2048, 2048) scores and their softmax: 2 * 2048² * 4 bytes at least
    assert math_path.peak_bytes[-1] >= 2 * 2048**2 * 4
    assert {t.shape[-2:] for t in math_path.peaks[-1].largest[:2]} == {(2048, 2048)}
    assert fused.peak_bytes[-1] < 2048**2 * 4 // 16
    assert torch.backends.cuda.math_sdp_enabled() and torch.backends.cuda.flash_sdp_enabled()  # restored


def test_seqlab_attention_math_path_grows_as_t_squared():
    layer = SelfAttention(D, causal=True, generator=torch.Generator().manual_seed(0)).eval()

    def make(T):
        x = torch.randn(1, T, D, generator=torch.Generator().manual_seed(1))
        return lambda: layer(x)
    growth = peak_growth(make, LENGTHS[:3], _generous)
    assert abs(growth.fit.exponent - 2) <= 0.15, growth.peak_bytes


def test_elman_rnn_peak_grows_as_t():
    rnn = ElmanRNN(D, D, generator=torch.Generator().manual_seed(0)).eval()

    def make(T):
        x = torch.randn(1, T, D)
        return lambda: rnn(x)
    growth = peak_growth(make, LENGTHS, lambda T: 1024 * T)
    assert growth.fit.model == "power" and abs(growth.fit.exponent - 1) <= 0.15, growth.peak_bytes


def test_a_patched_measurement_changes_the_fit(monkeypatch):
    """The T² verdict rests on the measured peaks: a tracker that sees a constant makes it fail."""
    def constant(function, *args, **kwargs):
        return memory_peak.PeakMemory(4096, 0, 4096, 1, 0, (), "patched", {})
    monkeypatch.setattr(memory_peak, "measure_peak_memory", constant)
    growth = peak_growth(lambda T: _sdpa(MATH, T), LENGTHS, _generous)
    assert not abs(growth.fit.exponent - 2) <= 0.15
    assert math.isclose(growth.fit.exponent, 0.0, abs_tol=1e-9)


def test_refuses_a_pass_that_would_not_fit_before_building_it(monkeypatch):
    monkeypatch.setattr("seqlab.memory.available_memory_bytes", lambda: 2**30)

    def make(T):
        raise AssertionError("built although it would not fit")
    with pytest.raises(SeqlabError, match=r"T = 65536 would need about 64\.1 GiB"):
        peak_growth(make, (256, 512, 65536), _generous)  # 16 * 65536² + 1024 * 65536 bytes ≈ 64.06 GiB


def test_too_few_lengths_are_refused():
    with pytest.raises(SeqlabError, match=r"at least 3 distinct lengths, received \[8, 16\]"):
        peak_growth(lambda T: lambda: None, (8, 16, 16), lambda T: 0)


# --- folded from tests/test_memory_peak_events.py: Issue 21: temporaries allocated inside one dispatched op, seen thr

def math_sdpa(T: int):
    q = torch.randn(1, 1, T, D, generator=torch.Generator().manual_seed(T))  # (B, heads, T, d), float32

    def run():
        with SDPA_BACKENDS.held(MATH):
            return F.scaled_dot_product_attention(q, q, q)
    return run


@pytest.mark.parametrize("T", [64, 128])
def test_math_path_temporaries_inside_one_op(T):
    peak = measure_peak_memory(math_sdpa(T))
    # between ops: scores (T, T) float32 + their softmax (T, T) float32 + the scaled query (T, 8) float32
    assert peak.peak_bytes == 4 * T * T + 4 * T * T + 4 * T * D  # 34_816 at T = 64
    # inside _safe_softmax: isneginf (T, T) bool + all (T, 1) bool + a 4-byte scalar tensor
    assert peak.allocator_peak_bytes == peak.peak_bytes + T * T + T + 4  # 38_980 at T = 64
    assert peak.inside_op_bytes == T * T + T + 4
    assert peak.allocator_peak_op == "aten.scalar_tensor"  # the last allocation before the peak's frees
    assert 0.10 < peak.inside_op_bytes / peak.allocator_peak_bytes < 0.12  # the ~11 % a dispatch mode misses
    # what the allocator's peak holds, named: the scores, the weights and the T×T mask the dispatch mode misses
    assert peak.allocator_largest[:3] == (("aten.bmm", 4 * T * T), ("aten._softmax", 4 * T * T),
                                          ("aten.isneginf", T * T))
    # the figure to print is the allocator's, not a bound
    assert (peak.held_bytes, peak.held_is_bound) == (peak.allocator_peak_bytes, False)


def test_views_allocate_nothing_but_a_scalar_wrapper():
    x = torch.zeros(100)
    peak = measure_peak_memory(lambda: x.view(10, 10).t().add_(1))
    # 1 wrapped as an int64 tensor (8 bytes) and cast to float32 inside add_ (4 bytes); the dispatch mode's own
    # re-wrapping of the scalar for Python is not counted
    assert (peak.peak_bytes, peak.allocator_peak_bytes) == (0, 12)


def test_an_outer_profiler_leaves_the_allocator_figure_absent():
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]):
        peak = measure_peak_memory(lambda: torch.zeros(1000))
    assert (peak.peak_bytes, peak.allocator_peak_bytes, peak.inside_op_bytes) == (4000, None, None)
    assert (peak.held_bytes, peak.held_is_bound, peak.allocator_largest) == (4000, True, ())  # a named bound
