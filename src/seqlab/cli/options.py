"""Option parsers and error mapping shared by every command.

Parsers raise ``typer.BadParameter`` with the received value in the message (typer's own range
messages leave it out); :func:`bad_parameter` turns a library :class:`~seqlab.errors.SeqlabError`
into the same one-line usage error, naming the option that maps to the error's parameter. The
parsers word their errors in the run's language (:func:`seqlab.cli.language.current_language`,
catalogue ``cli``), since they run while click parses, before any command body.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer
from typer._click.globals import get_current_context  # typer vendors click: no click package

from seqlab.cli.language import current_language
from seqlab.errors import SeqlabError
from seqlab.i18n import translator

DOMAIN = "cli"
LANG_HELP = "Language of the output: en or es (default: from the environment's locale)."


def _gettext() -> Callable[[str], str]:
    """The ``cli`` catalogue's gettext in the run's language."""
    return translator(current_language(), DOMAIN)


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
        raise typer.BadParameter(f"expected integers >= {minimum} separated by commas, received {text!r}",
                                 param_hint=option)
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
    """The usage error for ``error``, pointing at ``options[error.parameter]`` or at ``fallback``."""
    option = options.get(error.parameter or "", fallback)
    return typer.BadParameter(str(error), param_hint=option)


def language(lang: str | None) -> str:
    """Resolve ``--lang``: the command's if given (any case, ``ES`` too), else ``seqlab --lang`` before the
    command name, else the environment's.

    >>> language("ES"), language("en")
    ('es', 'en')

    Raises:
        typer.BadParameter: an unknown language (exit 2).
    """
    from seqlab.i18n import LANGUAGES, default_language

    if lang is None:
        context = get_current_context(silent=True)
        lang = context.find_root().params.get("lang") if context is not None else None
    if lang is None:
        return default_language()
    if lang.strip().lower() not in LANGUAGES:
        _ = _gettext()
        message = _("language must be one of {languages}; received {text!r}")
        raise typer.BadParameter(message.format(languages=", ".join(LANGUAGES), text=lang), param_hint="'--lang'")
    return lang.strip().lower()


def writable_folder(out: Path) -> Path:
    """Create ``out`` if missing and prove it takes a file (a probe written and removed), before any work.

    Shared by ``figure`` and ``model``, so both word a bad ``--out`` alike.

    Raises:
        typer.BadParameter: ``out`` is a file, cannot be created, or cannot be written in (exit 2).
    """
    _ = _gettext()
    if out.exists() and not out.is_dir():
        raise typer.BadParameter(_("{path!r} is a file, not a folder").format(path=str(out)), param_hint="'--out'")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise typer.BadParameter(_("cannot create the folder {path!r}: {reason}").format(
            path=str(out), reason=error.strerror or error), param_hint="'--out'") from None
    try:
        with tempfile.NamedTemporaryFile(dir=out, prefix=".seqlab-probe-"):  # removed when closed
            pass
    except OSError as error:
        raise typer.BadParameter(_("cannot write in {path!r}: {reason}").format(
            path=str(out), reason=error.strerror or error), param_hint="'--out'") from None
    return out


def integer_or_text(text: str) -> int | str:
    """Keep an integer, or the text as given: its range depends on another option, checked after parsing."""
    text = str(text)
    if text.isascii() and text.lstrip("+-").isdigit():
        return int(text, 10)
    return text
