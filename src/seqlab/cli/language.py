"""The command line in the output language: usage errors, every help text and option error.

The language of a run is known before anything is parsed: ``--lang`` wherever it stands on the
command line (before the command name or after it), else the environment's locale
(:func:`seqlab.i18n.default_language`). Typer words its messages in two ways, and each is handled
for that run only:

- ``typer.core`` calls gettext's ``_`` (bound at import: "Options", "Commands", "default: …",
  "No such command …"): :func:`cli_language` gives that module the ``cli`` catalogue's gettext and
  puts the original back on the way out; :mod:`gettext`'s process-wide state (``textdomain``,
  ``install``) is never touched;
- the click copy Typer carries writes English text ("Usage: ", "Invalid value for …", "No such
  option: …") with no gettext call: :func:`translate_message` reads such a message against the English
  templates of :data:`USAGE_MESSAGES` and words it again from the catalogue, and :class:`LocalFormatter`
  writes the usage line and the help option's text. seqlab's own errors are never read back: the library
  words them in the run's language (:meth:`seqlab.errors.SeqlabError.localized`) and the option parsers of
  :mod:`seqlab.cli.options` add the option's name.

The run's language is also kept in a context variable, so the option parsers of
:mod:`seqlab.cli.options` word their errors in it (catalogue ``cli``). :func:`localise` puts each
command's and option's help through the same ``cli`` catalogue (message ids: the English help). It
edits the click objects Typer builds afresh on every run, never the functions' docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import re
import string
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from typer import _click  # the click copy Typer 0.2x builds its commands on

from seqlab.i18n import LANGUAGES, catalogue, default_language

#: The command line's catalogue: the click layer's own messages (usage errors, help headings; ids: their English
#: text) and the commands' and options' help texts (ids: the English help, docstrings cleaned).
CLICK_DOMAIN = "cli"
HELP_DOMAIN = CLICK_DOMAIN
#: The usage line's placeholders click writes ("Usage: seqlab [OPTIONS] COMMAND [ARGS]..."), worded again.
METAVARS = ("[OPTIONS]", "COMMAND [ARGS]...")
#: Modules that bind gettext's ``_`` at import and word part of the help and the errors.
GETTEXT_MODULES = ("typer.core",)
#: English usage messages of Typer's click copy, most specific first; ``{message}`` is read again.
USAGE_MESSAGES = (
    "Invalid value for {param_hint}: {message}",
    "Invalid value: {message}",
    "Missing argument {param_hint}.",
    "Missing option {param_hint}.",
    "Missing parameter {param_hint}.",
    "No such option: {name} (Possible options: {possibilities})",
    "No such option: {name}",
    "Got unexpected extra argument(s) ({args})",
    "Option {name} requires an argument.",
    "Option {name} requires {nargs} arguments.",
    "Option {name} does not take a value.",
    "Value {value} is not a valid {label}.",
    "{value} is not one of {choices}.",
)

_LANGUAGE: ContextVar[str | None] = ContextVar("seqlab_cli_language", default=None)


def argument_language(args: Sequence[str]) -> str | None:
    """The value of the first valid ``--lang X`` / ``--lang=X`` among ``args``, lower-cased; None if none.

    Arguments after a lone ``--`` are not options, and an invalid value is left to the option's own
    check (which refuses it, exit 2).

    >>> argument_language(["--lang", "ES", "compare"]), argument_language(["compare", "--lang=es"])
    ('es', 'es')
    >>> argument_language(["compare", "--lang", "fr"]), argument_language(["--", "--lang", "es"])
    (None, None)
    """
    for index, argument in enumerate(args):
        if argument == "--":
            return None
        value = None
        if argument == "--lang" and index + 1 < len(args):
            value = args[index + 1]
        elif argument.startswith("--lang="):
            value = argument[len("--lang="):]
        if value is not None and value.strip().lower() in LANGUAGES:
            return value.strip().lower()
    return None


def current_language() -> str:
    """The language of the run in progress (see :func:`cli_language`), else the environment's.

    >>> with cli_language("es"):
    ...     current_language()
    'es'
    """
    return _LANGUAGE.get() or default_language()


@contextmanager
def cli_language(lang: str) -> Iterator[None]:
    """Typer's gettext-worded messages in ``lang`` inside the block; every switched name restored after.

    >>> import typer.core
    >>> with cli_language("es"):
    ...     typer.core._("Commands")
    'Comandos'
    >>> typer.core._("Commands")
    'Commands'
    """
    token = _LANGUAGE.set(lang)
    switched: list[tuple[object, str, object]] = []
    try:
        if lang != "en":
            translations = catalogue(lang, CLICK_DOMAIN)
            for name in GETTEXT_MODULES:
                module = importlib.import_module(name)
                if hasattr(module, "_"):
                    switched.append((module, "_", module._))
                    module._ = translations.gettext
        yield
    finally:
        for module, attribute, original in reversed(switched):
            setattr(module, attribute, original)
        _LANGUAGE.reset(token)


@lru_cache(maxsize=None)
def _template(msgid: str) -> re.Pattern[str]:
    """The regular expression that reads a message written from ``msgid``: one group per field."""
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(msgid):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(f"(?P<{field}>.+?)")
    return re.compile("^" + "".join(parts) + "$", re.S)


def read_as(message: str, lang: str, templates: Sequence[str], domain: str) -> str:
    """``message`` worded again in ``lang`` from the first of ``templates`` it reads as, else as it is.

    A ``{message}`` field is itself read again (:func:`translate_message`).

    >>> read_as("Missing argument 'FACTORY'.", "es", USAGE_MESSAGES, CLICK_DOMAIN)
    "Falta el argumento 'FACTORY'."
    """
    for msgid in templates:
        match = _template(msgid).match(message)
        if match:
            fields = match.groupdict()
            if "message" in fields:
                fields["message"] = translate_message(fields["message"], lang)
            return catalogue(lang, domain).gettext(msgid).format(**fields)
    return message


def translate_message(message: str, lang: str) -> str:
    """An English usage message of Typer's click copy worded again in ``lang``; unknown ones stay as they are.

    Only the click layer's own words are read here; the ``{message}`` inside an option error comes from seqlab
    already in the run's language (:meth:`seqlab.errors.SeqlabError.localized`, :func:`seqlab.cli.options.bad_parameter`).

    >>> translate_message("Invalid value for '--tokens': Value 'x' is not a valid int.", "es")
    "Valor no válido para '--tokens': El valor 'x' no es un int válido."
    >>> translate_message("No such option: --bogus", "es"), translate_message("No such option: --bogus", "en")
    ('No existe la opción --bogus', 'No such option: --bogus')
    """
    if lang == "en":
        return message
    return read_as(message, lang, USAGE_MESSAGES, CLICK_DOMAIN)


class LocalFormatter(_click.HelpFormatter):
    """Click's help formatter, writing "Usage:" and the help option's text in the run's language."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        """The usage line, its prefix in the run's language."""
        if prefix is None:
            prefix = catalogue(current_language(), CLICK_DOMAIN).gettext("Usage:") + " "
        super().write_usage(prog, args, prefix)

    def write_dl(self, rows: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        """A definition list; a help text of the click layer's own (``--help``'s) in the run's language."""
        translate = catalogue(current_language(), CLICK_DOMAIN).gettext
        super().write_dl([(term, translate(text) if text else text) for term, text in rows], *args, **kwargs)


class LocalContext(_click.Context):
    """Click's context, formatting help and usage with :class:`LocalFormatter`."""

    formatter_class = LocalFormatter


def help_texts(command: Any) -> Iterator[tuple[object, str, str]]:
    """(object, attribute, English text) for the help of ``command``, its parameters and its subcommands."""
    for attribute in ("help", "short_help"):
        text = getattr(command, attribute, None)
        if text:
            yield command, attribute, inspect.cleandoc(text)
    for parameter in command.params:
        text = getattr(parameter, "help", None)
        if text:
            yield parameter, "help", text
    for subcommand in getattr(command, "commands", {}).values():
        yield from help_texts(subcommand)


def commands(command: Any) -> Iterator[Any]:
    """``command`` and every command under it."""
    yield command
    for subcommand in getattr(command, "commands", {}).values():
        yield from commands(subcommand)


def localise(command: Any, lang: str) -> None:
    """Prepare Typer's fresh click objects for a run in ``lang``: help texts translated, local formatter.

    A help text missing from the catalogue stays in English (a test lists any such text).
    """
    for each in commands(command):
        each.context_class = LocalContext
    if lang == "en":
        return
    translate = catalogue(lang, HELP_DOMAIN).gettext
    for owner, attribute, text in list(help_texts(command)):
        setattr(owner, attribute, translate(text))
    for each in commands(command):
        for attribute in ("options_metavar", "subcommand_metavar"):
            if getattr(each, attribute, None) in METAVARS:
                setattr(each, attribute, translate(getattr(each, attribute)))


def first_paragraph(text: str | None) -> str:
    """A help text's summary: its first paragraph on one line, whole.

    >>> first_paragraph("Time the recurrence against attention over T:\\nwhere does time cross?\\n\\nMore.")
    'Time the recurrence against attention over T: where does time cross?'
    """
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())
