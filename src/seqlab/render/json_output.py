"""Any frozen result dataclass as JSON, for machines: exact integers stay integers.

Fractions (ratios, crossover lengths) become ``{"fraction": "25/16", "value": 1.5625}`` so the exact
value is kept beside a float; tuples become lists; every dataclass field is kept.

Every ``--json`` document starts with ``schema_version``: the version of its layout, described by the JSON
Schema ``seqlab/schemas/<document>.schema.json`` (:func:`schema`). :func:`to_json` adds it for the results
named in :data:`DOCUMENTS`; the commands that build their own document (check, learn, model) call
:func:`versioned`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction
from importlib import resources
from typing import Any

#: Layout version of each ``--json`` document, by document name (its schema: ``schemas/<name>.schema.json``).
#: Raise one when a document's layout changes in a way its readers would notice (a key renamed, removed
#: or retyped), together with its schema's ``schema_version`` constant.
SCHEMA_VERSIONS: dict[str, int] = {"bench": 2, "check": 1, "compare": 1, "decode": 2, "decode_model": 2,
                                   "figure": 1, "learn": 1,
                                   "model": 1, "profile": 1, "table1": 1, "table1_modern": 2, "zoo": 1}

#: Result class name -> the document :func:`to_json` makes of it.
DOCUMENTS: dict[str, str] = {"BenchResult": "bench", "CompareResult": "compare", "DecodeResult": "decode",
                             "ModelDecodeResult": "decode_model",
                             "FigureResult": "figure", "ModernResult": "table1_modern",
                             "ProfileResult": "profile", "Table1Result": "table1", "ZooResult": "zoo"}


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


def versioned(document: dict[str, Any], name: str) -> dict[str, Any]:
    """``document`` with its ``schema_version`` as the first key.

    >>> versioned({"T": 40}, "compare")
    {'schema_version': 1, 'T': 40}

    Args:
        document: the JSON-ready document (no ``schema_version`` of its own).
        name: a key of :data:`SCHEMA_VERSIONS`.

    Returns:
        A new dict; ``document`` is not changed.

    Raises:
        KeyError: ``name`` has no schema.
    """
    return {"schema_version": SCHEMA_VERSIONS[name], **document}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the ``--json`` document ``name``, read from the package.

    >>> schema("profile")["properties"]["schema_version"]["const"] == SCHEMA_VERSIONS["profile"]
    True

    Raises:
        KeyError: ``name`` has no schema.
    """
    if name not in SCHEMA_VERSIONS:
        raise KeyError(f"no JSON schema named {name!r}; expected one of {', '.join(sorted(SCHEMA_VERSIONS))}")
    text = resources.files("seqlab").joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def to_json(result: Any) -> str:
    """The result as indented JSON text; a result named in :data:`DOCUMENTS` gets its ``schema_version`` first.

    >>> json.loads(to_json(Fraction(1, 4)))  # not a document: no version
    {'fraction': '1/4', 'value': 0.25}
    """
    document = to_jsonable(result)
    name = DOCUMENTS.get(type(result).__name__)
    if name is not None and isinstance(document, dict):
        document = versioned(document, name)
    return json.dumps(document, indent=2, ensure_ascii=False)


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
