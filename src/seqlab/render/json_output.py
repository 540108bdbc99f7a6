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


def compact_json(value: object, indent: int = 2, _level: int = 0) -> str:
    """JSON indented like ``json.dumps(value, indent=2)``, but a list of plain values stays on one line.

    α of a 512-position window is 512 lists of 512 floats: one line each, not one line per number.

    >>> print(compact_json({"T": 2, "weights": [[0.5, 0.5], [0.25, 0.75]], "pieces": ["[CLS]", "[SEP]"]}))
    {
      "T": 2,
      "weights": [
        [0.5, 0.5],
        [0.25, 0.75]
      ],
      "pieces": ["[CLS]", "[SEP]"]
    }
    """
    inner, outer = " " * (indent * (_level + 1)), " " * (indent * _level)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(str(key), ensure_ascii=False)}: {compact_json(item, indent, _level + 1)}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + outer + "}"
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        return "[\n" + ",\n".join(inner + compact_json(item, indent, _level + 1) for item in value) + "\n" + outer + "]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
