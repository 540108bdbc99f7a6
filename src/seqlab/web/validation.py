"""Every refusal of the web lab as one sentence naming the field, the range and the value received, in en or es.

FastAPI validates each request against its pydantic declaration; :func:`validation_detail` writes each error
as a catalogue sentence chosen by pydantic's error *code* (never its English message): where the value came
from, the field's translated name (:class:`~seqlab.web.messages.FieldName`), what the field accepts (from its
declaration: "an integer in [2, 96]") and what arrived ("query parameter T must be an integer in [2, 96];
received 500"), in the request's language (:func:`request_lang`: ``?lang=``, else ``Accept-Language``, else
the app's default). The lab's own refusals are :class:`~seqlab.web.messages.LabError`s whose
:class:`~seqlab.web.messages.Phrase` is rendered in that language. Error bodies keep FastAPI's shape,
``{"detail": [{"loc", "msg", "type"}]}``, and add ``"message"``, all errors in one line.

Also here: :class:`BodyTooLarge`, the refusal of a body over :data:`MAX_BODY_BYTES`; the checks that
refuse unknown query parameters, oversized, stalled or malformed bodies are in :mod:`seqlab.web.limits`.
"""

from __future__ import annotations

import json
import math
import types
import typing
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqlab.i18n import LANGUAGES
from seqlab.web.messages import N_, FieldName, LabError, Phrase, printable, tr

DOMAIN = "web"
#: Largest request body accepted (bytes); anything longer is refused as soon as it passes the limit.
MAX_BODY_BYTES = 64 * 1024

#: Where a value came from, by FastAPI's first ``loc`` element.
WHERE = {"query": N_("query parameter {name}"), "path": N_("path parameter {name}"), "body": N_("field {name}"),
         "header": N_("header {name}")}
#: What a field must be, by pydantic's error code, for fields whose declaration says no more.
EXPECTED_BY_CODE = {
    **dict.fromkeys(("string_type", "string_unicode"), N_("text")),
    **dict.fromkeys(("int_type", "int_parsing", "int_from_float", "int_parsing_size"), N_("an integer")),
    **dict.fromkeys(("float_type", "float_parsing", "finite_number"), N_("a number")),
    **dict.fromkeys(("bool_type", "bool_parsing"), N_("true or false")),
    "list_type": N_("a list"),
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), N_("a JSON object")),
}
#: The pattern of a text field that must hold at least one word: a character that is not a space (Python's
#: ``str.isspace``, which the ``words`` tokenizer follows, counts U+001C–U+001F as spaces; Unicode does not).
NOT_BLANK = r"[^\s\x1c-\x1f]"
#: The 503 of a busy lab, and the refusal of an oversized body.
BUSY = N_("the lab is busy measuring another request; try again in a few seconds")
TOO_LARGE = N_("request body must be at most {most} bytes; received more than {received}")
TOO_LARGE_DECLARED = N_("request body must be at most {most} bytes; received {received}")


def integral_float(value: Any) -> Any:
    """A JSON number with no fractional part written as a float (``2.0``, ``1e3``) as the integer it is (JSON
    Schema's ``integer`` is any such number, and the OpenAPI schema says ``integer``); anything else unchanged,
    for the strict check that follows (a string stays a string and is refused).

    >>> integral_float(2.0), integral_float(2.5), integral_float("2"), integral_float(True)
    (2, 2.5, '2', True)
    """
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _json_integer():
    from pydantic import BeforeValidator

    return BeforeValidator(integral_float)


#: A body field's integer: strict (no strings, no booleans) but ``2.0`` is 2, as JSON Schema's ``integer`` says.
JsonInt = typing.Annotated[int, _json_integer()]


def request_lang(request: Request) -> str:
    """The language of a request's messages: ``?lang=``, else the first en/es of ``Accept-Language``, else
    the app's default."""
    value = request.query_params.get("lang")
    if value in LANGUAGES:
        return value
    for part in request.headers.get("accept-language", "").split(","):
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in LANGUAGES:
            return tag
    return getattr(request.app.state, "default_lang", "en")


def lab_error(msgid: str, **values: Any):
    """A pydantic error whose message is ``msgid`` (a sentence of the ``web`` catalogue), translated when reported.

    Raise it from a validator; :func:`sentence` renders ``Phrase(msgid, values)`` in the request's language.
    """
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("lab_value", msgid, {**values, "msgid": msgid})


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def describe(annotation: Any, metadata: list[Any], lang: str = "en") -> str:
    """What a field accepts, in words, from its type and its pydantic constraints.

    >>> from annotated_types import Ge, Le
    >>> describe(int, [Ge(1), Le(128)]), describe(int, [Ge(1), Le(128)], "es")
    ('an integer in [1, 128]', 'un entero en [1, 128]')
    >>> describe(typing.Literal["en", "es"], [])
    "one of 'en', 'es'"
    """
    _ = tr(lang)
    bounds = {name: getattr(item, name) for item in metadata
              for name in ("ge", "gt", "le", "lt", "max_length", "min_length", "multiple_of")
              if getattr(item, name, None) is not None}
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # Optional[X]: describe X
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return describe(kept[0], metadata, lang) if len(kept) == 1 else ""
    if typing.get_origin(annotation) is typing.Literal:
        return _("one of {values}").format(values=", ".join(repr(value) for value in typing.get_args(annotation)))
    if annotation is int or annotation is float:
        low = ("[" + _number(bounds["ge"]) if "ge" in bounds
               else "(" + _number(bounds["gt"]) if "gt" in bounds else None)
        high = (_number(bounds["le"]) + "]" if "le" in bounds
                else _number(bounds["lt"]) + ")" if "lt" in bounds else None)
        if low and high:
            interval = f"{low}, {high}"
            if "multiple_of" in bounds:
                return _("a multiple of {step} in {interval}").format(step=_number(bounds["multiple_of"]),
                                                                      interval=interval)
            return (_("an integer in {interval}") if annotation is int else _("a number in {interval}")).format(
                interval=interval)
        return _("an integer") if annotation is int else _("a number")
    if annotation is str:
        low, high = bounds.get("min_length"), bounds.get("max_length")
        if high is not None:
            return _("text of {low} to {high} characters").format(low=low or 0, high=high)
        return _("text")
    return ""


Fields = dict[tuple[str, str], tuple[Any, list[Any]]]


def endpoint_params(dependant, kind: str) -> list[Any]:
    """The ``kind`` parameters (query_params, path_params, body_params) of a dependant and its dependencies."""
    found = list(getattr(dependant, kind))
    for sub in dependant.dependencies:
        found += endpoint_params(sub, kind)
    return found


def _fields(request: Request) -> Fields:
    """(place, name) -> (type, constraints) for every parameter and body field of the matched route."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    fields: Fields = {}
    if dependant is None:
        return fields
    for place, kind in (("query", "query_params"), ("path", "path_params")):
        for param in endpoint_params(dependant, kind):
            info = param.field_info
            fields[(place, param.alias)] = (info.annotation, list(info.metadata))
    for param in endpoint_params(dependant, "body_params"):
        model = param.field_info.annotation
        for name, info in getattr(model, "model_fields", {}).items():
            fields[("body", info.alias or name)] = (info.annotation, list(info.metadata))
    return fields


def shown(value: Any, lang: str = "en", plain: bool = False) -> str:
    """A value as received, for a message: JSON's spelling (``true``, ``null``, ``"text"``), cut to 60 characters,
    lone surrogates and control characters escaped (:func:`~seqlab.web.messages.printable`).

    ``plain``: a query or path value, shown without quotes. An empty value is named as such.

    >>> shown(True), shown(None), shown("abc"), shown("abc", plain=True), shown("", "es", plain=True)
    ('true', 'null', '"abc"', 'abc', 'un valor vacío')
    >>> print(shown(chr(0xD800)))
    "\\ud800"
    """
    _ = tr(lang)
    if value == "" and isinstance(value, str):
        return _("an empty value")
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value[:60]).decode("utf-8", "replace")
    if isinstance(value, str) and len(value) > 60:
        head = value[:40] if plain else json.dumps(value[:40], ensure_ascii=False)
        from seqlab.i18n import format_integer

        return _("{start}… ({count} characters)").format(
            start=printable(head), count=format_integer(len(value), lang if lang in LANGUAGES else "en"))
    if plain and isinstance(value, str):
        return printable(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**60:
        return _("a number of {count} digits").format(count=len(str(abs(value))))
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = str(value)
    text = printable(text)
    return text if len(text) <= 60 else f"{text[:57]}…"


def field_place(loc: tuple, lang: str) -> str:
    """Where a value came from, with the field's translated name: "field frase (sentence)", "query parameter T".

    >>> field_place(("body", "sentence"), "es"), field_place(("query", "T"), "en")
    ('el campo frase (sentence)', 'query parameter T')
    """
    place = str(loc[0]) if loc else ""
    name = ".".join([FieldName(str(loc[1])).render(lang)] + [printable(str(p), 60) for p in loc[2:]]) \
        if len(loc) > 1 else ""
    if place in WHERE:
        return tr(lang)(WHERE[place]).format(name=name)
    return printable(f"{place} {name}".strip())


def sentence(error: dict[str, Any], fields: Fields, lang: str = "en", content_type: str = "") -> str:
    """One error as a sentence chosen by its code: where, which field, what it accepts, what arrived.

    >>> sentence({"loc": ("query", "T"), "msg": "Input should be less than or equal to 96", "input": "500",
    ...           "type": "less_than_equal"}, {})
    'query parameter T has a value that is not accepted; received 500'
    >>> sentence({"loc": ("query", "lang"), "input": "fr", "type": "literal_error"},
    ...          {("query", "lang"): (typing.Literal["en", "es"], [])}, "es")
    "el parámetro de consulta idioma (lang) debe ser uno de 'en', 'es'; se recibió fr"
    """
    _ = tr(lang)
    loc = tuple(error.get("loc", ()))
    place = str(loc[0]) if loc else ""
    kind = str(error.get("type", ""))
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "lab_value" and "msgid" in ctx:  # the lab's own checks (lab_error): a catalogue sentence
        return Phrase(ctx["msgid"], {key: item for key, item in ctx.items() if key != "msgid"}).render(lang)
    if kind == "json_invalid":
        position = loc[1] if len(loc) > 1 else 0
        return _("request body is not valid JSON (at character {position})").format(position=position)
    if place == "body" and len(loc) == 1 and kind == "missing":
        return _("request body is required: a JSON object sent with Content-Type: application/json")
    if place == "body" and len(loc) == 1:  # the body as a whole is not an object
        if isinstance(value, (bytes, bytearray)):
            return _("request body must be a JSON object sent with Content-Type: application/json; received "
                     "Content-Type {content_type}").format(content_type=printable(content_type, 80) or _("(none)"))
        return _("request body must be a JSON object; received {received}").format(received=shown(value, lang))
    where = field_place(loc, lang)
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NOT_BLANK:
        return _("{where} must hold at least one word (a character that is not a space); received {received}").format(
            where=where, received=shown(value, lang, plain=place in ("query", "path")))
    if kind == "missing":
        return _("{where} is required").format(where=where)
    if kind == "extra_forbidden":
        accepted = ", ".join(field for kind_, field in fields if kind_ == place) or "—"
        return _("{where} is not accepted; accepted: {accepted}").format(where=where, accepted=accepted)
    expected = ""
    if len(loc) == 2 and (place, str(loc[1])) in fields:
        expected = describe(*fields[(place, str(loc[1]))], lang)
    if not expected and kind in EXPECTED_BY_CODE:
        expected = _(EXPECTED_BY_CODE[kind])
    received = shown(value, lang, plain=place in ("query", "path"))
    if expected:
        return _("{where} must be {expected}; received {received}").format(
            where=where, expected=expected, received=received)
    return _("{where} has a value that is not accepted; received {received}").format(where=where, received=received)


def _clean(value: Any) -> Any:
    """JSON-safe copy of a pydantic error part (non-finite floats and exceptions become text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return str(value)


def error_body(detail: list[dict[str, Any]]) -> dict[str, Any]:
    """FastAPI's error body plus ``message``: every sentence in one line."""
    return {"detail": detail, "message": "; ".join(item["msg"] for item in detail)}


def validation_detail(request: Request, exc: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's 422 detail with every message rewritten by :func:`sentence` in the request's language."""
    fields, lang = _fields(request), request_lang(request)
    content_type = request.headers.get("content-type", "")
    return [{"loc": _clean(list(error.get("loc", ()))), "msg": sentence(error, fields, lang, content_type),
             "type": str(error.get("type", "value_error"))} for error in exc.errors()]


def seqlab_error_detail(request: Request, exc) -> list[dict[str, Any]]:
    """A refusal of the lab (:class:`~seqlab.web.messages.LabError`) in the request's language, pointing at the
    field it names. A library refusal that no check of the lab caught first is worded in the request's language
    where the library raised it (:meth:`seqlab.errors.SeqlabError.localized`), said so."""
    loc = ["query" if request.method in ("GET", "HEAD") else "body"] + ([exc.parameter] if exc.parameter else [])
    lang = request_lang(request)
    if isinstance(exc, LabError):
        return [{"loc": loc, "msg": exc.phrase.render(lang), "type": "value_error"}]
    _ = tr(lang)
    message = _("these values cannot be measured: {reason}").format(reason=printable(exc.localized(lang)))
    return [{"loc": loc, "msg": message, "type": "value_error"}]


def busy_detail(request: Request) -> list[dict[str, Any]]:
    """The 503 of a busy lab."""
    translate = tr(request_lang(request))
    return [{"loc": [], "msg": translate(BUSY), "type": "busy"}]


def http_error_detail(request: Request, exc: StarletteHTTPException) -> tuple[int, list[dict[str, Any]]]:
    """Starlette's HTTP errors as they are, except a body FastAPI cannot parse (400), which is bad input: 422."""
    _ = tr(request_lang(request))
    if isinstance(exc, BodyTooLarge):
        return 422, body_too_large_detail(exc.received, request_lang(request), exc.declared)
    if exc.status_code == 404:
        message = _("nothing here: {path} is not a page of the lab").format(path=printable(request.url.path, 200))
        return 404, [{"loc": ["path"], "msg": message, "type": "not_found"}]
    if exc.status_code == 405:
        message = _("{method} is not accepted at {path}").format(method=printable(request.method, 20),
                                                                  path=printable(request.url.path, 200))
        return 405, [{"loc": ["path"], "msg": message, "type": "method_not_allowed"}]
    if exc.status_code != 400:
        return exc.status_code, [{"loc": [], "msg": printable(str(exc.detail), 200), "type": "http_error"}]
    message = _("request body could not be read as a JSON object")
    return 422, [{"loc": ["body"], "msg": message, "type": "json_invalid"}]


def body_too_large_detail(received: int, lang: str, declared: bool) -> list[dict[str, Any]]:
    """422 for a body over :data:`MAX_BODY_BYTES` (its declared length, or the bytes received so far)."""
    from seqlab.i18n import format_integer

    lang = lang if lang in LANGUAGES else "en"
    message = tr(lang)(TOO_LARGE_DECLARED if declared else TOO_LARGE).format(
        most=format_integer(MAX_BODY_BYTES, lang), received=format_integer(received, lang))
    return [{"loc": ["body"], "msg": message, "type": "value_error"}]


# --- The body limit -----------------------------------------------------------------------------------------

class BodyTooLarge(StarletteHTTPException):
    """Raised from ``receive`` when a body passes the limit; FastAPI passes HTTP exceptions through."""

    def __init__(self, received: int, declared: bool = False) -> None:
        super().__init__(status_code=422, detail="request body too large")
        self.received = received
        self.declared = declared

