"""JSON Schemas of the ``--json`` documents, written from the result dataclasses' own type hints.

:func:`seqlab.render.json_output.to_jsonable` turns a frozen result into JSON by fixed rules: every
dataclass field is kept (an object with exactly those keys), an ``int`` stays an integer, a ``float`` is a
number or one of ``"inf"``, ``"-inf"``, ``"nan"``, a ``Fraction`` becomes ``{"fraction", "value"}``, tuples
become arrays and dict keys strings. The same rules applied to the type hints give each document's schema
(draft 2020-12), so a schema says exactly what the code emits: every key required, no other key allowed,
each nullable field nullable. ``check``'s document is built by hand in :func:`seqlab.render.check.check_json`
and so is its schema here (:data:`CHECK`); learn and model add a few keys to their result (:data:`EXTRA`).

``python -m seqlab.render.json_schema`` writes ``src/seqlab/schemas/<document>.schema.json``;
``tests/test_json_schemas.py`` checks that the files are current and that real output validates.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import types
import typing
from fractions import Fraction
from pathlib import Path
from typing import Any

from seqlab.render.json_output import SCHEMA_VERSIONS

__all__ = ["CHECK", "DOCUMENT_TYPES", "EXTRA", "build_schema", "main", "schema_text"]

#: Document name -> "module:ResultClass" it is made from (``check`` is built by hand: :data:`CHECK`).
DOCUMENT_TYPES: dict[str, str] = {
    "bench": "seqlab.studies.bench:BenchResult",
    "compare": "seqlab.studies.compare:CompareResult",
    "decode": "seqlab.studies.decode:DecodeResult",
    "decode_model": "seqlab.studies.decode_model:ModelDecodeResult",
    "figure": "seqlab.studies.figure:FigureResult",
    "learn": "seqlab.studies.learn:LearnResult",
    "model": "seqlab.studies.model:ModelResult",
    "profile": "seqlab.studies.profile:ProfileResult",
    "table1": "seqlab.studies.table1_results:Table1Result",
    "table1_modern": "seqlab.studies.table1_modern:ModernResult",
    "zoo": "seqlab.studies.zoo:ZooResult",
}

_REAL = {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]}
_FRACTION = {"type": "object", "required": ["fraction", "value"], "additionalProperties": False,
             "properties": {"fraction": {"type": "string"}, "value": {"$ref": "#/$defs/real"}}}

#: Keys a renderer adds to its result's fields, as schemas (``learn_json``, ``model_json``).
EXTRA: dict[str, dict[str, Any]] = {
    "learn": {"cuts": {"type": "array"},
              "findings": {"type": "array", "items": {"type": "object", "required": ["supports_lesson"],
                                                       "properties": {"supports_lesson": {"type": "boolean"}}}}},
    "model": {"kind": {"type": "string"}},
}

_VALUE = {"type": "object"}
#: ``seqlab check --json`` (:func:`seqlab.render.check.check_json`): the verdicts, then every claim.
CHECK: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["all_hold", "held", "caveats", "not_judged", "total", "full", "seed", "threads", "torch_version",
                 "elapsed_s", "claims"],
    "properties": {
        "all_hold": {"type": "boolean"}, "held": {"type": "integer", "minimum": 0},
        "caveats": {"type": "integer", "minimum": 0}, "not_judged": {"type": "integer", "minimum": 0},
        "total": {"type": "integer", "minimum": 0},
        "full": {"type": "boolean"}, "seed": {"type": "integer"}, "threads": {"type": "integer", "minimum": 1},
        "torch_version": {"type": "string"}, "elapsed_s": {"$ref": "#/$defs/real"},
        "claims": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["claim", "beyond_lesson", "verdict", "holds", "statement", "measured", "figure", "condition",
                         "condition_text", "note", "sources", "values", "seconds", "error"],
            "properties": {
                "claim": {"type": "string", "pattern": "^(L([1-9]|1[0-2])|B[1-5])$"},
                "beyond_lesson": {"type": "boolean"},
                "verdict": {"enum": ["holds", "holds_with_caveat", "not_judged", "does_not_hold"]},
                "holds": {"type": ["boolean", "null"]}, "statement": {"type": "string"}, "measured": {"type": "string"},
                "figure": {"type": "string"}, "condition": _VALUE, "condition_text": {"type": "string"},
                "note": {"type": ["string", "null"]}, "sources": {"oneOf": [{"type": "object"}, {"type": "array", "items": {"type": "string"}},
                                                                 {"type": "null"}]}, "values": _VALUE,
                "seconds": {"$ref": "#/$defs/real"}, "error": {"type": ["string", "null"]}}}}},
}


class _Builder:
    """Turns type hints into schemas, one ``$defs`` entry per dataclass."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {"real": _REAL, "fraction": _FRACTION}

    def of(self, hint: Any) -> dict[str, Any]:
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is Any or hint is object:
            return {}
        if origin in (typing.Union, types.UnionType):
            return {"anyOf": [self.of(arg) for arg in args]}
        if origin is typing.Literal:
            return {"enum": list(args)}
        if origin is tuple and (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "items": self.of(args[0])}
        if origin is tuple:
            return {"type": "array", "prefixItems": [self.of(a) for a in args], "minItems": len(args),
                    "maxItems": len(args)}
        if origin in (list, typing.get_origin(typing.Sequence[int])):
            return {"type": "array", "items": self.of(args[0]) if args else {}}
        if origin is dict or origin is typing.get_origin(typing.Mapping[str, int]):
            return {"type": "object", "additionalProperties": self.of(args[1]) if args else {}}
        if dataclasses.is_dataclass(hint):
            return self.dataclass(hint)
        simple = {bool: {"type": "boolean"}, int: {"type": "integer"}, str: {"type": "string"},
                  type(None): {"type": "null"}, float: {"$ref": "#/$defs/real"}, Fraction: {"$ref": "#/$defs/fraction"},
                  tuple: {"type": "array"}, dict: {"type": "object"}, list: {"type": "array"}}
        if hint in simple:
            return simple[hint]
        raise TypeError(f"no JSON schema rule for the type hint {hint!r}")

    def dataclass(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # a placeholder first: a dataclass may refer to itself
            hints = typing.get_type_hints(cls)
            fields = dataclasses.fields(cls)
            self.defs[name] = {"type": "object", "additionalProperties": False,
                               "required": [field.name for field in fields],
                               "properties": {field.name: self.of(hints[field.name]) for field in fields}}
        return {"$ref": f"#/$defs/{name}"}


def build_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the ``--json`` document ``name`` (a key of ``SCHEMA_VERSIONS``).

    >>> schema = build_schema("profile")
    >>> schema["properties"]["schema_version"], schema["required"][:3]
    ({'const': 1}, ['schema_version', 'module', 'shape'])

    Raises:
        KeyError: ``name`` is not a document.
    """
    builder = _Builder()
    if name == "check":
        body = dict(CHECK)
        title = "seqlab check --json"
    else:
        module, cls_name = DOCUMENT_TYPES[name].split(":")
        cls = getattr(importlib.import_module(module), cls_name)
        ref = builder.dataclass(cls)["$ref"].rsplit("/", 1)[1]
        body = builder.defs.pop(ref)
        body = {**body, "properties": {**body["properties"], **EXTRA.get(name, {})},
                "required": body["required"] + list(EXTRA.get(name, {}))}
        title = f"seqlab {name.replace('_modern', ' --modern')} --json"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
            "description": f"The JSON document of {title} (seqlab.render.json_schema).",
            **body, "required": ["schema_version", *body["required"]],
            "properties": {"schema_version": {"const": SCHEMA_VERSIONS[name]}, **body["properties"]},
            "$defs": dict(sorted(builder.defs.items()))}


def schema_text(name: str) -> str:
    """:func:`build_schema` as the text of its file (indented, a newline at the end)."""
    return json.dumps(build_schema(name), indent=2, ensure_ascii=False) + "\n"


def main(folder: str | Path | None = None) -> list[Path]:
    """Write every document's schema into ``folder`` (default: the package's ``schemas``); return the paths."""
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parents[1] / "schemas"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in sorted(SCHEMA_VERSIONS):
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(name), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    main()
