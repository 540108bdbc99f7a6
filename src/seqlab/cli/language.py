"""The command line in the output language: usage errors, every help text and option error.

The language of a run is known before anything is parsed: ``--lang`` wherever it stands on the
command line (before the command name or after it), else the environment's locale
(:func:`seqlab.i18n.default_language`). Typer words its messages in two ways, and each is handled
for that run only:

- ``typer.core`` calls gettext's ``_`` (bound at import: "Options", "Commands", "default: …",
  "No such command …"): :func:`cli_language` gives that module the ``cli`` catalogue's gettext and
  puts the original back on the way out; :mod:`gettext`'s process-wide state (``textdomain``,
  ``install``) is never touched;
- the click copy Typer carries writes its usage errors in English with no gettext call ("Invalid value
  for …", "No such option: …"): :func:`click_message` words each error again from what click's exception
  classes carry publicly (``param``, ``param_hint``, ``param_type``, ``option_name``, ``possibilities``, the
  validation error a bad value raised, the command's own parameters) with the catalogue's sentences
  (:data:`USAGE_MESSAGES`), as click's ``format_message`` would, and :class:`LocalFormatter` writes the usage
  line and the help option's text. No message is read back: seqlab's own errors are worded by the library in
  the run's language (:meth:`seqlab.errors.SeqlabError.localized`) and :mod:`seqlab.cli.options` adds the
  option's name.

The run's language is chosen once per run (:func:`seqlab.i18n.use_language`, a context variable), so the
library's refusals (:meth:`seqlab.errors.SeqlabError.localized`) and the option parsers of
:mod:`seqlab.cli.options` word their errors in it (catalogue ``cli``). :func:`localise` puts each
command's and option's help through the same ``cli`` catalogue (message ids: the English help). It
edits the click objects Typer builds afresh on every run, never the functions' docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import string
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer
import typer.core

from seqlab.i18n import LANGUAGES, N_, catalogue, chosen_language, default_language, use_language

#: The command line's catalogue: the click layer's own messages (usage errors, help headings; ids: their English
#: text) and the commands' and options' help texts (ids: the English help, docstrings cleaned).
CLICK_DOMAIN = "cli"
HELP_DOMAIN = CLICK_DOMAIN
#: The usage line's placeholders click writes ("Usage: seqlab [OPTIONS] COMMAND [ARGS]..."), worded again.
METAVARS = ("[OPTIONS]", "COMMAND [ARGS]...")
#: Modules that bind gettext's ``_`` at import and word part of the help and the errors.
GETTEXT_MODULES = ("typer.core",)
#: The click layer's usage errors, as :func:`click_message` words them (message ids of the ``cli`` catalogue,
#: click's own English sentences).
USAGE_MESSAGES = (
    N_("Invalid value for {param_hint}: {message}"),
    N_("Invalid value: {message}"),
    N_("Missing argument {param_hint}."),
    N_("Missing option {param_hint}."),
    N_("Missing parameter {param_hint}."),
    N_("No such option: {name} (Possible options: {possibilities})"),
    N_("No such option: {name}"),
    N_("Got unexpected extra argument(s) ({args})"),
    N_("Option {name} requires an argument."),
    N_("Option {name} requires {nargs} arguments."),
    N_("Option {name} does not take a value."),
    N_("Value {value} is not a valid {label}."),
    N_("{value} is not one of {choices}."),
)

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
    return chosen_language() or default_language()


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
    switched: list[tuple[object, str, object]] = []
    with use_language(lang):
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


def _hint(error: Any) -> str | None:
    """The parameter an error points at, as click writes it (``'--tokens'``, ``'--text' / '--tokens'``)."""
    hint = getattr(error, "param_hint", None)
    param = getattr(error, "param", None)
    if hint is None and param is not None:
        hint = param.get_error_hint()
    if hint is not None and not isinstance(hint, str):
        hint = " / ".join(repr(each) for each in hint)
    return hint


def _value_message(error: Any, words: Any) -> str:
    """The inner text of a bad value: seqlab's own (already in the run's language), or, when Typer's validation
    refused the value, its first validation error worded from the catalogue (type and input, never its text)."""
    cause = error.__cause__
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return error.message
    first = (errors() or [{}])[0]
    kind, value = str(first.get("type", "")), first.get("input")
    expected = (first.get("ctx") or {}).get("expected")
    if expected is not None:
        return words(N_("{value} is not one of {choices}.")).format(value=repr(value), choices=expected)
    label = kind.split("_")[0] if kind else "value"
    return words(N_("Value {value} is not a valid {label}.")).format(value=repr(value), label=label)


def _extra_arguments(context: Any, args: Sequence[str]) -> list[str]:
    """The arguments ``context``'s command left over when the run's ``args`` are parsed again, resiliently
    (click's extra-argument error carries no list of them)."""
    name = context.info_name
    if name not in args:
        return []
    try:
        again = context.command.make_context(name, list(args)[list(args).index(name) + 1:], parent=context.parent,
                                             resilient_parsing=True)
    except (typer.TyperException, typer.Exit, typer.Abort):
        return []
    return list(again.args)


def _command_params(error: Any, root: Any, args: Sequence[str]) -> list[Any]:
    """The parameters of the command an error arose in: its context's, else (the parser raises some errors with no
    context) those of the first of ``args`` that names one of ``root``'s commands."""
    context = getattr(error, "ctx", None)
    if context is not None:
        return list(context.command.params)
    commands = getattr(root, "commands", {})
    name = next((each for each in args if each in commands), None)
    return list(commands[name].params) if name is not None else list(getattr(root, "params", ()))


def click_message(error: Any, lang: str, args: Sequence[str] = (), root: Any = None) -> str:
    """A usage error of Typer's click copy worded in ``lang`` from what its exception carries, as click's
    ``format_message`` does in English; ``args`` are the run's arguments and ``root`` its command group (to name
    extra arguments and find an option the parser names without a context).

    >>> import typer
    >>> click_message(typer.BadParameter("se esperaba un entero >= 2; se recibió 'x'", param_hint="'--tokens'"), "es")
    "Valor no válido para '--tokens': se esperaba un entero >= 2; se recibió 'x'"
    >>> click_message(typer.BadParameter("expected an integer >= 2, received 'x'"), "en")
    "Invalid value: expected an integer >= 2, received 'x'"
    """
    words = catalogue(lang, CLICK_DOMAIN).gettext
    context = getattr(error, "ctx", None)
    if hasattr(error, "param_type"):  # a missing argument or option (click's MissingParameter)
        param = getattr(error, "param", None)
        kind = error.param_type or (param.param_type_name if param is not None else "parameter")
        msgid = {"argument": N_("Missing argument {param_hint}."),
                 "option": N_("Missing option {param_hint}.")}.get(kind, N_("Missing parameter {param_hint}."))
        return words(msgid).format(param_hint=_hint(error) or "")
    if hasattr(error, "possibilities"):  # an option the command does not have (click's NoSuchOption)
        if error.possibilities:
            return words(N_("No such option: {name} (Possible options: {possibilities})")).format(
                name=error.option_name, possibilities=", ".join(sorted(error.possibilities)))
        return words(N_("No such option: {name}")).format(name=error.option_name)
    if hasattr(error, "option_name"):  # an option given the wrong number of values (click's BadOptionUsage)
        options = [p for p in _command_params(error, root, args)
                   if error.option_name in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))]
        option = options[0] if options else None
        if option is not None and getattr(option, "is_flag", False):
            return words(N_("Option {name} does not take a value.")).format(name=repr(error.option_name))
        if option is not None and option.nargs > 1:
            return words(N_("Option {name} requires {nargs} arguments.")).format(name=repr(error.option_name),
                                                                                nargs=option.nargs)
        return words(N_("Option {name} requires an argument.")).format(name=repr(error.option_name))
    if hasattr(error, "param_hint"):  # a bad value (click's BadParameter)
        hint = _hint(error)
        message = _value_message(error, words)
        if hint is None:
            return words(N_("Invalid value: {message}")).format(message=message)
        return words(N_("Invalid value for {param_hint}: {message}")).format(param_hint=hint, message=message)
    if context is not None and not isinstance(context.command, typer.core.TyperGroup):
        extra = _extra_arguments(context, args)
        if extra:
            return words(N_("Got unexpected extra argument(s) ({args})")).format(args=" ".join(extra))
    return error.format_message()  # Typer's own gettext-worded messages ("No such command …"), already in lang


class LocalFormatter(typer.Context.formatter_class):
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


class LocalContext(typer.Context):
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


def help_fields() -> dict[str, str]:
    """The placeholders a help text may hold, read from the registries (torch-free): ``{machines}`` (every machine
    of ``seqlab decode``), ``{models}`` (every model of ``seqlab learn``), so that no help lists them by hand.

    >>> help_fields()["machines"].split(", ")[0]
    'elman'
    """
    from seqlab.layers.mixers import learn_models, machine_names
    from seqlab.learn import LESSON_MODELS

    return {"machines": ", ".join(machine_names()),
            "models": ", ".join((*LESSON_MODELS, *(m.name for m in learn_models())))}


def filled_help(text: str) -> str:
    """``text`` with the placeholders of :func:`help_fields` filled (a text with none, or other braces, as it is).

    >>> filled_help("Which: {models}.").startswith("Which: elman, lstm")
    True
    """
    if "{" not in text:
        return text
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(text) if field}
    except ValueError:
        return text
    fields = help_fields()
    return text.format(**{name: fields[name] for name in names}) if names and names <= fields.keys() else text


def localise(command: Any, lang: str) -> None:
    """Prepare Typer's fresh click objects for a run in ``lang``: help texts translated (their placeholders filled
    by :func:`filled_help`), local formatter.

    A help text missing from the catalogue stays in English (a test lists any such text).
    """
    for each in commands(command):
        each.context_class = LocalContext
    translate = (lambda text: text) if lang == "en" else catalogue(lang, HELP_DOMAIN).gettext
    for owner, attribute, text in list(help_texts(command)):
        setattr(owner, attribute, filled_help(translate(text)))
    if lang == "en":
        return
    for each in commands(command):
        for attribute in ("options_metavar", "subcommand_metavar"):
            if getattr(each, attribute, None) in METAVARS:
                setattr(each, attribute, translate(getattr(each, attribute)))
        for param in getattr(each, "params", ()):
            localise_metavar(param, translate)


#: The words a parameter's placeholder is written with (``--seq-len INTEGER``, ``FILE <str>``): each is worded
#: through the ``cli`` catalogue wherever it stands in a placeholder (``auto|ADDRESS``, ``NAME,…``).
METAVAR_WORDS = (N_("INTEGER"), N_("FLOAT"), N_("TEXT"), N_("PATH"), N_("FILE"), N_("DIR"), N_("NAME"),
                 N_("SECONDS"), N_("ADDRESS"), N_("FACTORY"), N_("INDEX"), N_("KEY"), N_("DTYPE"),
                 N_("str"), N_("int"), N_("float"), N_("path"), N_("bool"))


def metavar_in(text: str, translate: Any) -> str:
    """A placeholder with each of its :data:`METAVAR_WORDS` worded by ``translate`` (other words, the values a
    user types such as ``auto`` or ``btd``, stay as they are).

    >>> metavar_in("auto|ADDRESS", {"ADDRESS": "DIRECCIÓN"}.get)
    'auto|DIRECCIÓN'
    """
    runs = ("".join(run) for _, run in itertools.groupby(text, key=lambda char: char.isascii() and char.isalpha()))
    return "".join((translate(run) or run) if run in METAVAR_WORDS else run for run in runs)


def localise_metavar(param: Any, translate: Any) -> None:
    """Word ``param``'s placeholder (its ``metavar``, and the ``<type>`` Typer shows beside it) with
    :func:`metavar_in`, on this run's fresh click object only."""
    if isinstance(getattr(param, "metavar", None), str):
        param.metavar = metavar_in(param.metavar, translate)
    shown_type = getattr(param, "display_type", None)
    if callable(shown_type):
        param.display_type = lambda *args, _shown=shown_type, **kwargs: metavar_in(_shown(*args, **kwargs), translate)


def first_paragraph(text: str | None) -> str:
    """A help text's summary: its first paragraph on one line, whole.

    >>> first_paragraph("Time the recurrence against attention over T:\\nwhere does time cross?\\n\\nMore.")
    'Time the recurrence against attention over T: where does time cross?'
    """
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())
