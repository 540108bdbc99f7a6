"""Option parsers and error mapping shared by every command.

Parsers raise ``typer.BadParameter`` with the received value in the message (typer's own range
messages leave it out); :func:`bad_parameter` turns a library :class:`~seqlab.errors.SeqlabError`
into the same one-line usage error, naming the option that maps to the error's parameter. The
parsers word their errors in the run's language (:func:`seqlab.cli.language.current_language`,
catalogue ``cli``), since they run while click parses, before any command body.
"""

from __future__ import annotations

import errno
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer

from seqlab.cli.language import current_language
from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_, translator

DOMAIN = "cli"
LANG_HELP = "Language of the output: en or es (default: from the environment's locale)."


def _gettext() -> Callable[[str], str]:
    """The ``cli`` catalogue's gettext in the run's language."""
    return translator(current_language(), DOMAIN)


def worded(template: str, /, **fields: object) -> str:
    """A message of the command line's own, in the run's language: ``template`` (an id marked with
    :func:`seqlab.i18n.N_`) from the catalogue, its fields rendered by kind (:class:`seqlab.errors.Message`).

    >>> worded(N_("give either --text or --tokens, not both"))
    'give either --text or --tokens, not both'
    """
    return Message(template, **fields).localized(current_language())


def integer_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A parser for an integer option in [minimum, maximum] whose error names the received text.

    >>> integer_at_least(2)("7")
    7
    """
    def parse(text: str) -> int:
        _ = _gettext()
        accepted = _("an integer >= {minimum}").format(minimum=minimum) if maximum is None else \
            _("an integer in [{minimum}, {maximum}]").format(minimum=minimum, maximum=maximum)
        try:
            if not str(text).isascii():  # int() would also take other scripts' digits
                raise ValueError(text)
            value = int(str(text), 10)
        except ValueError:
            raise typer.BadParameter(_("expected {accepted}, received {text!r}").format(accepted=accepted,
                                                                                      text=text)) from None
        if value < minimum or (maximum is not None and value > maximum):
            raise typer.BadParameter(_("expected {accepted}, received {text}").format(accepted=accepted,
                                                                                    text=value))
        return value

    return parse


def integer_list(text: str, minimum: int, option: str) -> tuple[int, ...]:
    """Parse ``16,32,64``: integers >= ``minimum`` separated by commas; the error names the option and text.

    >>> integer_list("16, 32,64", 2, "'--lengths'")
    (16, 32, 64)
    """
    parts = [part.strip() for part in str(text).split(",")]
    try:
        values = tuple(int(part, 10) for part in parts)
    except ValueError:
        values = ()
    if not values or any(value < minimum for value in values):
        raise typer.BadParameter(worded(N_("expected integers >= {minimum} separated by commas, received {text!r}"),
                                        minimum=minimum, text=text), param_hint=option)
    return values


def float_between(minimum: float, maximum: float) -> Callable[[str], float]:
    """A parser for a number in [minimum, maximum] whose error names the received text.

    >>> float_between(0.001, 1000)("0.5")
    0.5
    """
    def parse(text: str) -> float:
        _ = _gettext()
        accepted = _("a number in [{minimum}, {maximum}]").format(minimum=f"{minimum:g}", maximum=f"{maximum:g}")
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(_("expected {accepted}, received {text!r}").format(accepted=accepted,
                                                                                      text=text)) from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise typer.BadParameter(_("expected {accepted}, received {text}").format(accepted=accepted, text=text))
        return value

    return parse


def positive_float(text: str) -> float:
    """A parser for a finite number > 0 whose error names the received text.

    >>> positive_float("0.5")
    0.5
    """
    _ = _gettext()
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(_("expected a number > 0, received {text!r}").format(text=text)) from None
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(_("expected a finite number > 0, received {text}").format(text=text))
    return value


def bad_parameter(error: SeqlabError, options: dict[str, str], fallback: str) -> typer.BadParameter:
    """The usage error for ``error`` in the run's language (:meth:`SeqlabError.localized`), pointing at
    ``options[error.parameter]`` or at ``fallback``: the library words the message, the command line adds its
    option's name (as click adds the parameter hint at the boundary)."""
    option = options.get(error.parameter or "", fallback)
    return typer.BadParameter(error.localized(current_language()), param_hint=option)


def language(lang: str | None) -> str:
    """Resolve ``--lang``: the command's if given (any case, ``ES`` too), else the run's (``seqlab --lang`` before
    the command name, read once per run by :class:`seqlab.cli.group.SeqlabGroup`), else the environment's.

    >>> language("ES"), language("en")
    ('es', 'en')

    Raises:
        typer.BadParameter: an unknown language (exit 2).
    """
    from seqlab.i18n import LANGUAGES

    if lang is None:
        return current_language()
    if lang.strip().lower() not in LANGUAGES:
        _ = _gettext()
        message = _("language must be one of {languages}; received {text!r}")
        raise typer.BadParameter(message.format(languages=", ".join(LANGUAGES), text=lang), param_hint="'--lang'")
    return lang.strip().lower()


#: What an output path option names: a file to write, a folder to write files into, or either (``table1 --plot``).
OUTPUT_KINDS = ("file", "folder", "file or folder")
#: Bytes a writer may add to a file's name (``PATH`` becomes ``PATH.png`` and ``PATH.svg``, ``.html`` ``.pdf``).
SUFFIX_ROOM = len(".svg")
#: Bytes kept free past a folder's path for the names of the files a command writes inside (``bench.json``…).
FOLDER_ROOM = 64
#: What the system allows where it cannot say (POSIX's common NAME_MAX and PATH_MAX).
NAME_MAX, PATH_MAX = 255, 4096


def _system_limit(path: Path, name: str, default: int) -> int:
    """``os.pathconf(folder, name)`` of the nearest existing folder above ``path``, else ``default``."""
    for folder in (path, *path.parents):
        try:
            if folder.is_dir():
                value = os.pathconf(folder, name)
                return value if value and value > 0 else default
        except (OSError, ValueError):
            continue
    return default


def check_path(path: Path | str, option: str, room: int = 0) -> None:
    """The rule every path a user gives meets before any work, read or write: it can be written as a file
    name on this system (no lone surrogate that the file system's encoding refuses, no NUL), no name in it is
    longer than the system allows (``NAME_MAX``, with ``room`` bytes kept for a suffix), and the whole path is
    not (``PATH_MAX``). Nothing is read or created here.

    >>> check_path(Path("plot.png"), "'--plot'")
    >>> try:
    ...     check_path(Path("x" * 300 + ".png"), "'--plot'")
    ... except typer.BadParameter as error:
    ...     print(error.format_message())
    Invalid value for '--plot': cannot use 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…': File name too long

    Args:
        path: as given. option: the option as the error names it, quoted. room: bytes a writer adds to the last
            name (:data:`SUFFIX_ROOM`) or past the path (:data:`FOLDER_ROOM`).

    Raises:
        typer.BadParameter: one line, in the run's language (exit 2).
    """
    _ = _gettext()
    text = os.fspath(path)
    shown = repr(text if len(text) <= 60 else text[:30] + "…")
    try:
        raw = os.fsencode(text)
    except UnicodeError as error:
        raise typer.BadParameter(_("{path} cannot be a file name on this system: {reason}").format(
            path=shown, reason=error.reason), param_hint=option) from None
    if b"\0" in raw:
        raise typer.BadParameter(_("{path} cannot be a file name on this system: {reason}").format(
            path=shown, reason="NUL"), param_hint=option)
    path = Path(text)
    names = [os.fsencode(part) for part in path.parts if part not in ("/", "")]
    longest = _system_limit(path, "PC_NAME_MAX", NAME_MAX)
    whole = _system_limit(path, "PC_PATH_MAX", PATH_MAX)
    too_long = any(len(name) > longest for name in names) or (bool(names) and len(names[-1]) + room > longest)
    try:
        full = len(os.fsencode(os.path.abspath(text)))
    except (OSError, ValueError):  # the working folder is gone: judge the path as given
        full = len(raw)
    if too_long or full + room >= whole:
        raise typer.BadParameter(_("cannot use {path}: {reason}").format(
            path=shown, reason=os.strerror(errno.ENAMETOOLONG)), param_hint=option)


def check_output(path: Path | None, option: str, kind: str = "file") -> Path | None:
    """The one check of every path a command writes to, made while the command line is parsed, before any work.

    The path itself first meets :func:`check_path` (a name the system can take, with room for the suffix a writer
    adds), and whatever the file system still refuses (``OSError``) is one usage error naming the option.
    Nothing is created here (a folder named by ``--out`` is made by :func:`writable_folder` when the command
    writes): a file's folder must exist, and so must the folder above an ``--out`` folder that is missing, so a
    mistyped path is refused instead of making folders at the root. Where the folder that takes the file exists, a
    probe file proves it can be written in (written and removed), and a file to overwrite must be writable.

    >>> check_output(None, "'--plot'") is None
    True
    >>> try:
    ...     check_output(Path("/nonexistent/dir/x.png"), "'--plot'")
    ... except typer.BadParameter as error:
    ...     print(error.format_message())
    Invalid value for '--plot': the folder '/nonexistent/dir' does not exist, received '/nonexistent/dir/x.png'

    Args:
        path: the option's value, or None when it was not given.
        option: the option as the error names it, quoted (``"'--plot'"``).
        kind: one of :data:`OUTPUT_KINDS`: ``file`` must not be a folder; ``folder`` must not be a file; ``file or
            folder`` takes either.

    Raises:
        typer.BadParameter: as above, one line, in the run's language (exit 2).
        SeqlabError: ``kind`` is not one of :data:`OUTPUT_KINDS`.
    """
    if kind not in OUTPUT_KINDS:
        raise SeqlabError(N_("expected kind among {output_kinds}, received {kind!r}"),
                          output_kinds=', '.join(OUTPUT_KINDS), kind=kind)
    if path is None:
        return None
    check_path(path, option, FOLDER_ROOM if kind != "file" else SUFFIX_ROOM)
    try:
        return _writable(path, option, kind)
    except OSError as error:  # whatever the system still refuses (a loop of links, a name it will not take)
        _ = _gettext()
        raise typer.BadParameter(_("cannot write {path}: {reason}").format(
            path=repr(str(path)), reason=error.strerror or error), param_hint=option) from None


def _writable(path: Path, option: str, kind: str) -> Path:
    """:func:`check_output`'s checks of the file system, once the path itself is known to be usable."""
    _ = _gettext()
    if kind == "file" and path.is_dir():
        raise typer.BadParameter(_("expected a file name, received the folder {path!r}").format(path=str(path)),
                                 param_hint=option)
    if kind == "folder" and path.exists() and not path.is_dir():
        raise typer.BadParameter(_("{path!r} is a file, not a folder").format(path=str(path)), param_hint=option)
    folder = path if path.is_dir() else path.parent
    if folder.exists() and not folder.is_dir():  # a file where its folder should be
        raise typer.BadParameter(_("{path!r} is a file, not a folder").format(path=str(folder)), param_hint=option)
    if not folder.is_dir():
        raise typer.BadParameter(_("the folder {folder} does not exist, received {path}").format(
            folder=repr(str(folder)), path=repr(str(path))), param_hint=option)
    _probe(folder, option)
    if path.is_file() and not os.access(path, os.W_OK):
        raise typer.BadParameter(_("cannot write {path}: {reason}").format(
            path=repr(str(path)), reason=os.strerror(errno.EACCES)), param_hint=option)
    return path


def _probe(folder: Path, option: str) -> None:
    """Prove ``folder`` takes a file: a probe written and removed."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".seqlab-probe-"):  # removed when closed
            pass
    except OSError as error:
        _ = _gettext()
        raise typer.BadParameter(_("cannot write in {path!r}: {reason}").format(
            path=str(folder), reason=error.strerror or error), param_hint=option) from None


def output_file(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a file to write: :func:`check_output` as the option is parsed."""
    return check_output(value, f"'{param.opts[0]}'", "file")


def output_folder(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a folder to write files into: :func:`check_output`."""
    return check_output(value, f"'{param.opts[0]}'", "folder")


def output_file_or_folder(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a file or a folder to write into (``table1 --plot``)."""
    return check_output(value, f"'{param.opts[0]}'", "file or folder")


#: The callbacks every output path option uses (a test checks each ``Path`` option of the app has one).
OUTPUT_CALLBACKS = (output_file, output_folder, output_file_or_folder)


def check_input(path: str | None, option: str, kind: str = "text") -> str | None:
    """Check a file or folder a command reads while the command line is parsed, before any heavy import (torch
    takes seconds to import, far longer on a busy machine): it must exist, be of its kind and be readable. The
    words are those of the later, full checks (:func:`seqlab.text.read_text`, the checkpoint loader), so a
    path reads the same whichever check meets it first.

    >>> check_input("-", "'--text'"), check_input(None, "'--text'")
    ('-', None)

    Args:
        path: the option's value as given; None when not given; ``-`` (standard input) passes for ``text``.
        option: the option as the error names it, quoted.
        kind: ``text`` (a text file, or ``-``) or ``checkpoint`` (a local Hugging Face checkpoint folder).

    Raises:
        typer.BadParameter: missing, of the other kind, or unreadable (one line, exit 2).
        SeqlabError: ``kind`` is neither ``text`` nor ``checkpoint``.
    """
    if kind not in ("text", "checkpoint"):
        raise SeqlabError(N_("expected kind text or checkpoint, received {kind!r}"), kind=kind)
    if path is None or (kind == "text" and path == "-"):
        return path
    check_path(path, option)
    _ = _gettext()
    if kind == "checkpoint":
        if not os.path.isdir(path):
            raise typer.BadParameter(_("{path} is not a folder; expected a local Hugging Face checkpoint folder "
                                       "(config.json, weights)").format(path=repr(path)), param_hint=option)
        if not os.access(path, os.R_OK | os.X_OK):
            raise typer.BadParameter(_("cannot read the checkpoint folder {path}: {reason}").format(
                path=repr(path), reason=os.strerror(errno.EACCES)), param_hint=option)
        return path
    if not os.path.exists(path):
        raise typer.BadParameter(_("text file {path} does not exist; expected a UTF-8 text file or '-' for "
                                   "stdin").format(path=repr(path)), param_hint=option)
    if os.path.isdir(path):
        raise typer.BadParameter(_("text file {path} is a directory; expected a UTF-8 text file").format(
            path=repr(path)), param_hint=option)
    if not os.access(path, os.R_OK):
        raise typer.BadParameter(_("cannot read text file {path}: {reason}; expected a readable UTF-8 text "
                                   "file").format(path=repr(path), reason=os.strerror(errno.EACCES)),
                                 param_hint=option)
    return path


def _hint(param: typer.CallbackParam) -> str:
    """How an error names the parameter: its first option (``'--text'``), or an argument's metavar (``'FILE'``)."""
    return f"'{param.opts[0]}'" if param.param_type_name == "option" else f"'{param.metavar or param.name.upper()}'"


def input_text(param: typer.CallbackParam, value: str | None) -> str | None:
    """Typer callback of a text file to read (or ``-``): :func:`check_input` as the command line is parsed."""
    return check_input(value, _hint(param), "text")


def input_checkpoint(param: typer.CallbackParam, value: str | None) -> str | None:
    """Typer callback of a local checkpoint folder to read: :func:`check_input` as the command line is parsed."""
    return check_input(value, _hint(param), "checkpoint")


def writable_folder(out: Path, option: str = "'--out'") -> Path:
    """Create ``out`` if missing (one level: the folder above must exist) and prove it takes a file, before any
    work that writes into it.

    Shared by ``figure``, ``model`` and ``report``, so all word a bad ``--out`` alike.

    Raises:
        typer.BadParameter: ``out`` is a file, its parent folder is missing, it cannot be created, or cannot be
            written in (exit 2).
    """
    _ = _gettext()
    check_output(out, option, "folder")
    try:
        out.mkdir(exist_ok=True)
    except OSError as error:
        raise typer.BadParameter(_("cannot create the folder {path!r}: {reason}").format(
            path=str(out), reason=error.strerror or error), param_hint=option) from None
    _probe(out, option)
    return out


def integer_or_text(text: str) -> int | str:
    """Keep an integer, or the text as given: its range depends on another option, checked after parsing."""
    text = str(text)
    if text.isascii() and text.lstrip("+-").isdigit():
        return int(text, 10)
    return text
