"""``seqlab check``'s B4 (issue 23): a parallel scan shortens the chain of waits (graph path) but not the chain of
factors (signal path). The real measurement holds; each measurement patched to a wrong value does not; the reach
tolerance is inclusive at its boundary.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from seqlab.studies import claims_beyond
from seqlab.studies.check import FAILS, HOLDS
from seqlab.studies.claims import CheckSizes

SIZES = CheckSizes()


def test_b4_holds_with_its_figures():
    judged = claims_beyond.check_b4(SIZES, 0)
    v = judged.values
    assert judged.verdict == HOLDS
    assert v["loop_path_ops"] == [33, 65, 129, 257]  # 2 ops per step, from x_1 to y_T: 2T + 1
    assert v["scan_path_ops"] == [11, 13, 15, 17]  # 2 ops per round, log2 T rounds, plus 3
    assert (v["loop_form"], v["scan_form"]) == ("T", "log T")
    assert v["loop_factors"] == v["scan_factors"] == v["expected_factors"] == [15, 31, 63, 127]  # T - 1
    assert v["reach_difference"] < 1e-12


def _patch_signal(monkeypatch, form: str, change):
    """Patch measure_signal_path for one form (the layer's ``form``) with ``change(signal_path, T)``."""
    real = claims_beyond.measure_signal_path

    def patched(layer, x, **kwargs):
        signal = real(layer, x, **kwargs)
        return change(signal, x.shape[1]) if layer.form == form else signal
    monkeypatch.setattr(claims_beyond, "measure_signal_path", patched)


@pytest.mark.parametrize("change", [
    lambda s, T: replace(s, factors=s.factors - 1),  # one decay fewer in the scan
    lambda s, T: replace(s, factors=None, reason="not_a_power"),  # not measured
    lambda s, T: replace(s, factors=(T - 1).bit_length()),  # the scan's rounds counted as factors
])
def test_b4_fails_when_the_factor_counts_differ(monkeypatch, change):
    _patch_signal(monkeypatch, "scan", change)
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == FAILS and not judged.values["factors_equal"]
    assert judged.values["scan_shorter"] and judged.values["reach_equal"]


def test_b4_fails_when_both_forms_agree_but_not_on_t_minus_1(monkeypatch):
    real = claims_beyond.measure_signal_path
    monkeypatch.setattr(claims_beyond, "measure_signal_path",
                        lambda layer, x, **kw: replace(real(layer, x, **kw), factors=1))
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == FAILS and judged.values["loop_factors"] == judged.values["scan_factors"] == [1] * 4


def test_b4_fails_when_the_reaches_differ(monkeypatch):
    _patch_signal(monkeypatch, "scan", lambda s, T: replace(s, reach=s.reach * (1 + 1e-6)))
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == FAILS and not judged.values["reach_equal"] and judged.values["factors_equal"]


@pytest.mark.parametrize(("relative", "verdict"), [(0.5, HOLDS), (1.0, HOLDS), (2.0, FAILS)])
def test_b4_reach_tolerance_boundary(monkeypatch, relative, verdict):
    """Reaches that differ by the tolerance itself hold (≤); twice the tolerance does not."""
    monkeypatch.setattr(claims_beyond, "REACH_TOLERANCE", 1e-6)
    _patch_signal(monkeypatch, "scan", lambda s, T: replace(s, reach=s.reach * (1 - relative * 1e-6 * 0.999)))
    assert claims_beyond.check_b4(SIZES, 0).verdict == verdict


def _patch_path(monkeypatch, form: str, value):
    real = claims_beyond._graph_path
    monkeypatch.setattr(claims_beyond, "_graph_path",
                        lambda layer, x: value(x.shape[1]) if layer.form == form else real(layer, x))


@pytest.mark.parametrize(("scan", "verdict"), [
    (lambda T: 2 * (T - 1).bit_length() + 3, HOLDS),  # the real scan path
    (lambda T: 2 * T + 1, FAILS),  # as long as the loop's: not shorter
    (lambda T: 2 * T, FAILS),  # shorter by one op, but it grows as T
    (lambda T: T // 4 + 3, FAILS),  # far shorter, but still grows as T
])
def test_b4_judges_the_scan_path(monkeypatch, scan, verdict):
    _patch_path(monkeypatch, "scan", scan)
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == verdict and judged.values["factors_equal"]


def test_b4_boundary_a_scan_path_equal_to_the_loop_at_one_t_does_not_hold(monkeypatch):
    real = claims_beyond._graph_path

    def patched(layer, x):
        T = x.shape[1]
        return 2 * T + 1 if layer.form == "scan" and T == 16 else real(layer, x)  # the loop's 33 at T = 16
    monkeypatch.setattr(claims_beyond, "_graph_path", patched)
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == FAILS and not judged.values["scan_shorter"]


def test_b4_fails_when_the_paths_do_not_connect(monkeypatch):
    _patch_path(monkeypatch, "loop", lambda T: None)
    judged = claims_beyond.check_b4(SIZES, 0)
    assert judged.verdict == FAILS and judged.values["loop_form"] is None


def test_b4_words(monkeypatch):
    from seqlab.render.check import claim_text
    from seqlab.studies.check import ClaimCheck

    judged = claims_beyond.check_b4(SIZES, 0)
    for lang, words in (("en", "15, 31, 63, 127 factors"), ("es", "15, 31, 63, 127 factores")):
        text = claim_text(ClaimCheck("B4", judged.verdict, judged.values, judged.condition), lang)
        assert words in text.figure and text.note and text.condition
    _patch_signal(monkeypatch, "scan", lambda s, T: replace(s, factors=None, reason="not_a_power"))
    failed = claims_beyond.check_b4(SIZES, 0)
    text = claim_text(ClaimCheck("B4", failed.verdict, failed.values, failed.condition), "en")
    assert "scan not measured, not measured" in text.figure
