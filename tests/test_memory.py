"""The memory guard (seqlab.memory): estimates by hand, T² growth, and refusals that say GiB."""

from __future__ import annotations

import pytest

import seqlab.memory
from seqlab.errors import SeqlabError
from seqlab.memory import GIB, MemoryEstimate, available_memory_bytes, estimate_compare_bytes, require_fits


def test_estimate_by_hand():
    estimate = estimate_compare_bytes(10, 4, 4, 4, 4, probes=1)
    # maps: 10**2 * (6*4 + 4*8*(1+1)) = 100 * 88 = 8_800
    # activations: 10 * (4 + 4 + 2*4 + 2*4) * (12*4 + 4*8*2) = 10 * 24 * 112 = 26_880
    # weights: 3 * (4 + 8) * (4*(4+4) + 4*(2*4+4) + 4*4) = 36 * (32 + 48 + 16) = 3_456
    assert estimate.total_bytes == 8_800 + 26_880 + 3_456 == 39_136
    assert str(estimate.largest) == "activations of 10 positions"
    assert estimate.gib == 39_136 / 2**30


def test_maps_dominate_at_large_T():
    estimate = estimate_compare_bytes(100_000, 512, 512, 512, 512, probes=8)
    assert str(estimate.largest) == "attention maps of 100000×100000"
    # maps alone: 10**10 * (24 + 32*9) = 3.12e12 bytes
    assert estimate.total_bytes > 100_000**2 * 312


def test_estimate_grows_as_T_squared():
    ratios = [estimate_compare_bytes(2 * T, 512, 512, 512, 512, 8).total_bytes
              / estimate_compare_bytes(T, 512, 512, 512, 512, 8).total_bytes
              for T in (10, 1_000, 100_000, 10_000_000)]
    assert ratios == sorted(ratios)  # tends to 4 from below as the T² maps take over
    assert 1 < ratios[0] < 2  # tiny T: the weights, which do not grow with T, dominate
    assert ratios[-1] == pytest.approx(4, abs=1e-3)
    assert all(ratio < 4 for ratio in ratios)


def test_estimate_grows_with_the_widths():
    assert estimate_compare_bytes(100, 64, 64, 64, 64, 8).total_bytes < \
        estimate_compare_bytes(100, 128, 64, 64, 64, 8).total_bytes < \
        estimate_compare_bytes(100, 128, 128, 64, 64, 8).total_bytes


def test_require_fits_refuses_with_gib():
    with pytest.raises(SeqlabError) as error:
        require_fits(MemoryEstimate(3 * GIB, "attention maps of 9×9"), "T = 9 at d_model = 512", available=2 * GIB)
    message = str(error.value)
    assert message.startswith("T = 9 at d_model = 512 would need about 3.0 GiB (mostly attention maps of 9×9)")
    assert "2.0 GiB available" in message and "80%" in message
    assert message.endswith("(3,221,225,472 bytes against 2,147,483,648)")


def test_refusals_choose_a_readable_unit():
    with pytest.raises(SeqlabError, match=r"about 300\.0 MiB .*has 256\.0 MiB available"):
        require_fits(MemoryEstimate(300 * 1024**2, "maps"), "T = 2", available=256 * 1024**2)


def test_require_fits_passes_when_memory_is_plentiful():
    assert require_fits(MemoryEstimate(3 * GIB, "maps"), "T = 9", available=1024 * GIB) is None


def test_require_fits_share_boundary():
    assert require_fits(MemoryEstimate(8, "maps"), "T = 2", available=10) is None  # 8 <= 0.8 * 10
    with pytest.raises(SeqlabError, match="about 8 B .*has 9 B available.*8 bytes against 9"):
        require_fits(MemoryEstimate(8, "maps"), "T = 2", available=9)  # 8 > 0.8 * 9 = 7.2
    with pytest.raises(SeqlabError, match="at most 50%"):
        require_fits(MemoryEstimate(8, "maps"), "T = 2", available=10, share=0.5)


def test_require_fits_reads_this_machine_by_default(monkeypatch):
    monkeypatch.setattr(seqlab.memory, "available_memory_bytes", lambda: 2 * GIB)
    with pytest.raises(SeqlabError, match="2.0 GiB available"):
        require_fits(MemoryEstimate(3 * GIB, "maps"), "T = 9")


def test_available_memory_is_a_positive_byte_count():
    available = available_memory_bytes()
    assert isinstance(available, int) and available > 0
