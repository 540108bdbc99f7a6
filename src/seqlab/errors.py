"""The one exception class of seqlab, and messages translated where they are written.

Every bad input the library refuses raises :class:`SeqlabError` with a one-line message that names the bad
value and the accepted range. The message is written as a gettext message id marked with
:func:`seqlab.i18n.N_` and its named fields, never as finished English text::

    raise SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name=name, value=value,
                      parameter=name)

``str(error)`` is the English sentence (the template formatted with the fields exactly as an f-string would);
:meth:`SeqlabError.localized` formats the catalogue's translation of the same id with the same fields, in
any language of :data:`seqlab.i18n.LANGUAGES`. Front ends (CLI, web) catch the error, show
``error.localized(lang)`` and add the name of their own option or field (``parameter``), turning it into exit
code 2 or HTTP 422. Nothing reads an English message back.

Fields are rendered by kind (:func:`render_field`), so a kind of value is right everywhere at once: an integer or
a float with the language's number format (Babel, :mod:`seqlab.i18n`), a nested :class:`Message` or
:class:`SeqlabError` (a message that embeds another, a refusal that wraps a cause) in the same language, any
other value as the text the English sentence shows. Values other than numbers, text and messages are kept as
their text when the error is made, so an error never holds a tensor or a module alive and always pickles.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from seqlab.i18n import N_, refuse_with

#: Field values kept as they are; anything else is kept as its ``str``/``repr`` (:class:`Shown`).
PLAIN = (str, int, float, Fraction, Decimal, complex, bool, type(None))


class Shown:
    """A field's value kept as the text it shows (``str`` and ``repr``), formatted like a string.

    >>> value = Shown(3.5j)
    >>> f"{value} {value!r} {value:>6}"
    '3.5j 3.5j   3.5j'
    """

    __slots__ = ("representation", "text")

    def __init__(self, value: object) -> None:
        self.text = str(value)
        self.representation = repr(value)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.representation

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)

    def __reduce__(self):
        return (_restore_shown, (self.text, self.representation))


def _restore_shown(text: str, representation: str) -> Shown:
    shown = object.__new__(Shown)
    shown.text, shown.representation = text, representation
    return shown


def keep(value: object) -> object:
    """A field's value as the message keeps it: numbers, text, labels, messages and errors as they are; a list or tuple
    item by item; anything else as its text (:class:`Shown`).

    >>> keep(3), keep((1, 2)), type(keep(object())).__name__
    (3, (1, 2), 'Shown')
    """
    if isinstance(value, (Message, SeqlabError, Shown, Worded)) or type(value) in PLAIN:
        return value
    if type(value) in (list, tuple):
        return type(value)(keep(item) for item in value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):  # numpy and torch integers
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():  # a 0-d tensor or numpy scalar: the number itself
        try:
            number = item()
        except (TypeError, ValueError, RuntimeError):
            return Shown(value)
        if type(number) in (int, float, bool):
            return number
    return Shown(value)


def render_field(value: Any, conversion: str | None, spec: str, lang: str) -> str:
    """One field of a message in ``lang``: a message in that language, a number in its format, else as in English.

    ``conversion`` and ``spec`` are the field's ``!r`` and ``:spec`` from the template; in English the result is
    always what ``str.format`` gives.

    >>> render_field(26214400, None, "", "es"), render_field(0.5, None, ".2f", "es"), render_field("a", "r", "", "es")
    ('26.214.400', '0,50', "'a'")
    >>> render_field(26214400, None, "", "en")
    '26214400'
    """
    if isinstance(value, (Message, SeqlabError)):
        return format(value.localized(lang), spec) if conversion is None else repr(value.localized(lang))
    if isinstance(value, Worded) and lang != "en" and conversion is None:  # a label: its own wording
        return format(value.localized(lang), spec)
    if lang == "en" or conversion is not None or isinstance(value, bool):
        return string.Formatter().format_field(string.Formatter().convert_field(value, conversion), spec)
    if isinstance(value, int) and spec in ("", "d", ","):
        from seqlab.i18n import format_integer

        return format_integer(value, lang)
    if isinstance(value, (float, Decimal)) and (spec == "" or spec[-1:] in ("f", "g", "e", "G", "%")):
        return _localized_float(value, spec, lang)
    if isinstance(value, (list, tuple)) and spec == "":
        items = [render_field(item, None, "", lang) for item in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    return format(value, spec)


def _localized_float(value: float | Decimal, spec: str, lang: str) -> str:
    """``format(value, spec)`` with the language's decimal and group separators (Babel's symbols)."""
    from babel.numbers import get_decimal_symbol, get_group_symbol

    english = format(value, spec)
    decimal, group = get_decimal_symbol(lang), get_group_symbol(lang)
    return english.replace(",", "\0").replace(".", decimal).replace("\0", group)


class Message:
    """A sentence by its message id and named fields, put into words only for a language.

    A message that embeds another (a reason, a part of a sentence) holds it as a field; it is rendered in the
    same language as the sentence around it.

    >>> part = Message(N_("attention maps"))
    >>> str(Message(N_("{what} of {count} bytes"), what=part, count=12000))
    'attention maps of 12000 bytes'
    """

    __slots__ = ("fields", "template")

    def __init__(self, template: str, /, **fields: Any) -> None:
        self.template = template
        self.fields = {name: keep(value) for name, value in fields.items()}

    def localized(self, lang: str | None = None) -> str:
        """The sentence in ``lang`` (default: the language chosen for the call, else English): the catalogue's
        translation of the id, formatted with the fields."""
        from seqlab.i18n import current_language

        return format_message(self.template, self.fields, lang or current_language())

    def __str__(self) -> str:
        return self.localized("en")

    def __repr__(self) -> str:
        return f"Message({self.template!r}, {self.fields!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and (self.template, self.fields) == (other.template, other.fields)

    def __hash__(self) -> int:
        return hash(self.template)

    def __reduce__(self):
        return (_restore_message, (self.template, self.fields))


def _restore_message(template: str, fields: Mapping[str, Any]) -> Message:
    return Message(template, **fields)


class Worded(str):
    """A label kept as data, in English as the JSON and the tests read it, that carries the message it is shown as:
    a renderer words it in any language from its message id and fields, never by reading the English back.

    >>> label = Worded("ElmanRNN loop", Message(N_("{name}, loop"), name="ElmanRNN"))
    >>> label == "ElmanRNN loop", label.localized("en")
    (True, 'ElmanRNN, loop')
    """

    def __new__(cls, text: str, message: Message) -> Worded:
        worded = super().__new__(cls, text)
        worded.message = message
        return worded

    def localized(self, lang: str | None = None) -> str:
        """The label shown in ``lang`` (default: the language chosen for the call, else English)."""
        return self.message.localized(lang)

    def __reduce__(self):
        return (Worded, (str(self), self.message))


def shown(label: object, lang: str | None = None) -> str:
    """How a label reads in ``lang``: a :class:`Worded` label's own message, any other (a path, a module's name)
    as it is.

    >>> shown("nn.RNN", "es"), shown(Worded("built-in (es)", Message(N_("the built-in text ({language})"),
    ...                                                                language="es")), "es")
    ('nn.RNN', 'el texto incluido (es)')
    """
    return label.localized(lang) if isinstance(label, Worded) else str(label)


def translated_template(template: str, lang: str) -> str:
    """The catalogue's translation of ``template`` in ``lang``: the first domain of :data:`seqlab.i18n.DOMAINS`
    that holds it (library messages live in ``seqlab``, the command line's in ``cli``, the web lab's in ``web``);
    the English id itself where none does."""
    from seqlab.i18n import DOMAINS, catalogue

    if lang == "en":
        return template
    for domain in DOMAINS:
        worded = catalogue(lang, domain).gettext(template)
        if worded != template:
            return worded
    return template


def format_message(template: str, fields: Mapping[str, Any], lang: str) -> str:
    """``template`` in ``lang`` with ``fields`` rendered by kind (:func:`render_field`).

    >>> format_message("{name} must be >= 1, received {value}", {"name": "T", "value": 0}, "en")
    'T must be >= 1, received 0'
    """
    if not fields:  # a sentence with no fields is literal text: no braces are read in it
        return translated_template(template, lang)
    if lang == "en" and not any(isinstance(value, (Message, SeqlabError)) for value in fields.values()):
        return template.format(**fields)
    out = []
    for literal, field, spec, conversion in string.Formatter().parse(translated_template(template, lang)):
        out.append(literal)
        if field is not None:
            value, _key = string.Formatter().get_field(field, (), fields)
            out.append(render_field(value, conversion, spec or "", lang))
    return "".join(out)


class SeqlabError(ValueError):
    """Bad input to a seqlab function: the message names the value and what was expected.

    ``message`` is a message id marked with :func:`seqlab.i18n.N_` whose ``{fields}`` are given by name;
    ``parameter``, when given, names the argument at fault (``"d_model"``, ``"T"``...), so a front end can point
    at its own option or field. ``str(error)`` is the English sentence, :meth:`localized` the sentence in a
    language.

    >>> raise SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name="T", value=0, parameter="T")
    Traceback (most recent call last):
    ...
    seqlab.errors.SeqlabError: T must be an integer >= 1, received 0
    >>> SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name="T", value=0).localized("es")
    'T debe ser un entero >= 1; se recibió 0'
    """

    def __init__(self, message: str | Message, /, parameter: str | None = None, **fields: Any) -> None:
        if isinstance(message, Message):
            fields = {**message.fields, **fields}
            message = message.template
        self.template = message
        self.fields = {name: keep(value) for name, value in fields.items()}
        self.parameter = parameter
        super().__init__(format_message(self.template, self.fields, "en"))

    def localized(self, lang: str | None = None) -> str:
        """The message in ``lang`` (one of :data:`seqlab.i18n.LANGUAGES`; default: the language chosen for the call,
        :func:`seqlab.i18n.use_language`, else English): the catalogue's translation of its id, formatted with its
        fields; English is ``str(self)``."""
        from seqlab.i18n import current_language

        return format_message(self.template, self.fields, lang or current_language())

    def message(self, lang: str | None = None) -> str:
        """Alias of :meth:`localized`."""
        return self.localized(lang)

    @classmethod
    def wrapping(cls, error: SeqlabError, parameter: str | None = None) -> SeqlabError:
        """A new error with ``error``'s message and fields, pointing at ``parameter`` (a front end's own name)."""
        return cls(error.template, parameter=parameter, **error.fields)

    def __reduce__(self):  # crosses process boundaries (worker results) with its id and fields
        return (_restore_error, (type(self), self.template, self.parameter, self.fields, self.__dict__))


refuse_with(SeqlabError)  # seqlab.i18n raises it on bad input without importing this module


def _restore_error(kind: type, template: str, parameter: str | None, fields: Mapping[str, Any],
                   state: Mapping[str, Any]) -> SeqlabError:
    error = SeqlabError.__new__(kind)
    ValueError.__init__(error, format_message(template, fields, "en"))
    error.__dict__.update(state)
    return error


def require_positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """Return ``value`` if it is an integer in ``[1, maximum]``, else raise :class:`SeqlabError`.

    >>> require_positive_int("T", 8)
    8

    Raises:
        SeqlabError: ``value`` is not an int (bools are refused), is < 1, or is > ``maximum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise SeqlabError(N_("{name} must be an integer >= 1, received {value!r}"), name=name, value=value,
                          parameter=name)
    if value < 1:
        raise SeqlabError(N_("{name} must be an integer >= 1, received {value}"), name=name, value=value,
                          parameter=name)
    if maximum is not None and value > maximum:
        raise SeqlabError(N_("{name} must be an integer in [1, {maximum}], received {value}"), name=name,
                          maximum=maximum, value=value, parameter=name)
    return value


def check_form(form: object, forms: tuple[str, ...]) -> str:
    """``form`` if it is one of ``forms``, else a :class:`SeqlabError` naming both.

    >>> check_form("scan", ("loop", "scan"))
    'scan'
    """
    if form not in forms:
        raise SeqlabError(N_("form must be one of {forms}; received {form!r}"), forms=", ".join(forms), form=form,
                          parameter="form")
    return form
