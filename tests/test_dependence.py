"""The one dependence rule (seqlab.measure.dependence): band, structural vs numerical, NaN (issue 13, kind 2)."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.errors import SeqlabError
from seqlab.measure import dependence
from seqlab.measure.dependence import band, judge


@pytest.mark.parametrize(("dtype", "eps"), [(torch.float64, 2.0**-52), (torch.float32, 2.0**-23),
                                            (torch.bfloat16, 2.0**-7)])
def test_band_is_64_eps_of_the_block_scale(dtype, eps):
    assert band(3.0, dtype) == 64 * eps * 3.0  # 64 ulps of the largest strength


def test_the_same_strength_is_rounding_in_one_block_and_dependence_in_another():
    # 1e-9 next to 1.0: within float32's band (7.6e-6), above float64's (1.4e-14)
    assert judge(((1.0, 1e-9),), torch.float32).depends == ((True, False),)
    assert judge(((1.0, 1e-9),), torch.float64).depends == ((True, True),)
    # structural in both: the float32 block reports the disagreement
    assert judge(((1.0, 1e-9),), torch.float32).disagreements == ((0, 1),)
    assert judge(((1.0, 1e-9),), torch.float64).disagreements == ()


def test_nan_is_undefined_never_depends_never_structural():
    judged = judge(((math.nan, 1.0), (math.nan, math.nan)), torch.float64)
    assert judged.depends == ((False, True), (False, False))
    assert judged.structural == ((False, True), (False, False))
    assert judged.undefined_rows == (1,) and judged.scale == 1.0


def test_an_all_zero_block_depends_on_nothing():
    judged = judge(((0.0, 0.0),), torch.float64)
    assert judged.band == 0.0 and judged.depends == ((False, False),) and judged.disagreements == ()


def test_the_width_of_the_band_is_the_rule(monkeypatch):
    monkeypatch.setattr(dependence, "ROUNDING_ULPS", 0)  # a rule of "nonzero": rounding becomes dependence
    assert judge(((4.0, 3.8e-16),), torch.float64).depends == ((True, True),)


@pytest.mark.parametrize("bad", [-1.0, math.inf])
def test_bad_strengths_are_refused(bad):
    with pytest.raises(SeqlabError, match="finite numbers >= 0 or NaN"):
        judge(((1.0, bad),), torch.float64)
    with pytest.raises(SeqlabError, match="floating torch dtype"):
        judge(((1.0,),), torch.int64)
