"""The web lab's refusals as codes: a catalogue sentence and its values, put into words in the request's language.

A refusal is a :class:`Phrase` — a msgid of the ``web`` catalogue plus the values of its placeholders — carried
by :class:`LabError` from wherever the request is checked to the error handler, which renders it for the
request's language only then (:meth:`Phrase.render`). Nothing is translated by matching English text: every
sentence is chosen by code. Values are rendered by kind: an ``int`` with the language's digit grouping, a
:class:`FieldName` as the field's translated name, a nested :class:`Phrase` rendered in the same language,
any other value as text with lone surrogates and control characters escaped (:func:`printable`), so a
message can always be encoded as UTF-8.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from seqlab.errors import Message, SeqlabError
from seqlab.i18n import LANGUAGES, N_, format_integer, format_number, translator

DOMAIN = "web"




#: Request fields whose name is a word (translated); symbols such as T or d_model stay as they are.
FIELD_LABELS = {
    "sentence": N_("sentence"),
    "reordered": N_("reordered"),
    "answer": N_("answer"),
    "key": N_("key"),
    "seed": N_("seed"),
    "lang": N_("lang"),
    "heads": N_("heads"),
    "spectral_radius": N_("spectral_radius"),
}


def tr(lang: str):
    """The ``web`` catalogue's gettext for ``lang`` (English ids unchanged for en or an unknown language)."""
    return translator(lang if lang in LANGUAGES else "en", DOMAIN)


def printable(text: str, limit: int | None = None) -> str:
    """``text`` with lone surrogates, control characters and invisible ones (format characters such as a soft
    hyphen or a zero-width space, line and paragraph separators) written as escapes: always valid UTF-8, and a word
    made of invisible characters never reads as an empty one.

    >>> printable("a\\ud800b\\x00"), printable("añ€")
    ('a\\\\ud800b\\\\x00', 'añ€')
    >>> printable("\\u200b"), printable("\\xad")
    ('\\\\u200b', '\\\\u00ad')
    """
    import unicodedata

    out = []
    for char in text if limit is None else text[:limit]:
        code = ord(char)
        if code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(char) in INVISIBLE:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


#: Unicode categories shown as escapes by :func:`printable`: format characters, line and paragraph separators.
INVISIBLE = frozenset({"Cf", "Zl", "Zp"})


@dataclass(frozen=True)
class FieldName:
    """A request field's name: its word in the language, with the key beside it where they differ.

    >>> FieldName("sentence").render("es"), FieldName("sentence").render("en"), FieldName("T").render("es")
    ('frase (sentence)', 'sentence', 'T')
    """

    key: str

    def render(self, lang: str) -> str:
        """The field as a message names it."""
        key = printable(self.key, 60)
        if self.key not in FIELD_LABELS:
            return key
        label = tr(lang)(FIELD_LABELS[self.key])
        return key if label == self.key else f"{label} ({key})"


@dataclass(frozen=True)
class Phrase:
    """A sentence of the ``web`` catalogue by its msgid, with its values; rendered only for a language.

    >>> Phrase("{name} must be a whole number from {min} to {max}; the results below are for the last valid values.",
    ...        {"name": FieldName("sentence"), "min": 2, "max": 1000}).render("es")[:55]
    'frase (sentence) debe ser un número entero de 2 a 1.000'
    """

    msgid: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def render(self, lang: str) -> str:
        """The sentence in ``lang`` (en or es), every value rendered by its kind."""
        lang = lang if lang in LANGUAGES else "en"
        return tr(lang)(self.msgid).format(**{name: render_value(value, lang) for name, value in self.values.items()})

    def __str__(self) -> str:
        return self.render("en")


def render_value(value: Any, lang: str) -> str:
    """One placeholder's value as text in ``lang``: grouped integers, translated names and phrases, safe text.

    >>> render_value(1024000, "es"), render_value(2.5, "es"), render_value(["a", "b"], "en")
    ('1.024.000', '2,50', 'a, b')
    """
    if isinstance(value, (Phrase, FieldName)):
        return value.render(lang)
    if isinstance(value, (Message, SeqlabError)):  # a library message or refusal: worded where it was written
        return printable(value.localized(lang))
    if isinstance(value, int) and not isinstance(value, bool):
        return format_integer(value, lang) if abs(value) < 10**30 else str(value)
    if isinstance(value, float):
        return format_number(value, lang)
    if isinstance(value, (list, tuple)):
        return ", ".join(render_value(item, lang) for item in value)
    return printable(str(value))


class LabError(SeqlabError):
    """A refusal of the web lab (HTTP 422 unless said otherwise): a :class:`Phrase`, the field at fault, and
    ``details``, fields the error body carries besides its message.

    >>> error = LabError(Phrase("T = {T} at d_model = {d}", {"T": 8, "d": 4}), parameter="T")
    >>> str(error), error.phrase.render("es")
    ('T = 8 at d_model = 4', 'T = 8 con d_model = 4')
    """

    def __init__(self, phrase: Phrase, parameter: str | None = None, status: int = 422,
                 details: Mapping[str, Any] | None = None) -> None:
        super().__init__(phrase.render("en"), parameter=parameter)
        self.phrase = phrase
        self.status = status
        #: JSON fields added to the error body beside ``detail`` and ``message`` (e.g. ``estimate``,
        #: ``keep_previous_result``), or None.
        self.details = dict(details) if details else None

    def localized(self, lang: str) -> str:
        """The refusal in ``lang``: its :class:`Phrase` rendered for that language."""
        return self.phrase.render(lang)

    def __reduce__(self):  # crosses process boundaries (worker results) intact
        return (LabError, (self.phrase, self.parameter, self.status, self.details))


def refuse(msgid: str, parameter: str | None = None, **values: Any) -> LabError:
    """A :class:`LabError` for ``msgid`` with ``values`` (raise it)."""
    return LabError(Phrase(msgid, values), parameter=parameter)
