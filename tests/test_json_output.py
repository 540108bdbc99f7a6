"""JSON output (seqlab.render.json_output): exact integers stay integers, Fractions keep their exact value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction

import pytest

from seqlab.render.json_output import to_json, to_jsonable


@dataclass(frozen=True)
class Inner:
    ratio: Fraction
    sizes: tuple[int, ...]
    norms: tuple[float, ...]


@dataclass(frozen=True)
class Outer:
    name: str
    count: int
    holds: bool
    missing: None
    inner: Inner
    history: tuple[Inner, ...]
    by_op: dict


OUTER = Outer(
    name="atención",
    count=2**70,  # larger than a float's 53-bit mantissa: must stay exact
    holds=True,
    missing=None,
    inner=Inner(ratio=Fraction(50, 512), sizes=(8, 16), norms=(float("inf"), 0.5, float("-inf"))),
    history=(Inner(ratio=Fraction(512), sizes=(), norms=(float("nan"),)),),
    by_op={"aten.mm": 20_480, 3: Fraction(1, 3)},
)

EXPECTED = {
    "name": "atención",
    "count": 1_180_591_620_717_411_303_424,
    "holds": True,
    "missing": None,
    "inner": {"ratio": {"fraction": "25/256", "value": 0.09765625},  # 50/512
              "sizes": [8, 16],
              "norms": ["inf", 0.5, "-inf"]},
    "history": [{"ratio": {"fraction": "512", "value": 512.0}, "sizes": [], "norms": ["nan"]}],
    "by_op": {"aten.mm": 20_480, "3": {"fraction": "1/3", "value": 1 / 3}},
}


def test_to_jsonable_nested_frozen_dataclass():
    assert to_jsonable(OUTER) == EXPECTED


def test_to_json_is_strict_json_that_round_trips():
    text = to_json(OUTER)
    assert "atención" in text  # not escaped to \u00f3
    data = json.loads(text)
    assert data == EXPECTED
    assert data["count"] == 2**70 and isinstance(data["count"], int)
    json.dumps(to_jsonable(OUTER), allow_nan=False)  # no bare Infinity / NaN left


@pytest.mark.parametrize(("value", "expected"), [
    (Fraction(125, 64), {"fraction": "125/64", "value": 1.953125}),  # L9: 1000/512
    (float("inf"), "inf"),
    (1.5, 1.5),
    ((1, (2, 3)), [1, [2, 3]]),
    (Inner, Inner),  # a dataclass *type* is left alone
])
def test_to_jsonable_leaves(value, expected):
    assert to_jsonable(value) == expected


def test_compare_result_as_json(small_result):
    data = json.loads(to_json(small_result))
    assert data["T"] == 40 and data["d_model"] == 16
    assert data["recurrence"]["closed_form"] == 20_480  # 40 * (16**2 + 16*16)
    assert data["attention"]["counted"]["multiplications"] == 51_200  # 40**2 * (16 + 16)
    assert data["work_ratio"] == {"fraction": "5/2", "value": 2.5}  # 40/16
    assert data["crossover"] == {"fraction": "16", "value": 16.0}
    assert data["recurrence"]["reach"]["norms"] == list(small_result.recurrence.reach.norms)
    assert data["attention"]["order"]["permutation"] == list(small_result.attention.order.permutation)
