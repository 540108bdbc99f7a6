"""Any frozen result dataclass as JSON, for machines: exact integers stay integers.

Fractions (ratios, crossover lengths) become ``{"fraction": "25/16", "value": 1.5625}`` so the exact
value is kept beside a float; tuples become lists; every dataclass field is kept.
"""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert a result (dataclasses, Fractions, tuples, dicts, floats) to JSON-ready Python values.

    >>> to_jsonable(Fraction(50, 512))
    {'fraction': '25/256', 'value': 0.09765625}
    >>> to_jsonable(float("inf"))
    'inf'
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Fraction):
        return {"fraction": str(value), "value": float(value)}
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def to_json(result: Any) -> str:
    """The result as indented JSON text."""
    return json.dumps(to_jsonable(result), indent=2, ensure_ascii=False)
