"""Option parsers and error mapping shared by every command.

Parsers raise ``typer.BadParameter`` with the received value in the message (typer's own range
messages leave it out); :func:`bad_parameter` turns a library :class:`~seqlab.errors.SeqlabError`
into the same one-line usage error, naming the option that maps to the error's parameter.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import typer

from seqlab.errors import SeqlabError

LANG_HELP = "Language of the output: en or es (default: from the environment's locale)."


def integer_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A parser for an integer option in [minimum, maximum] whose error names the received text.

    >>> integer_at_least(2)("7")
    7
    """
    accepted = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"

    def parse(text: str) -> int:
        try:
            if not str(text).isascii():  # int() would also take other scripts' digits
                raise ValueError(text)
            value = int(str(text), 10)
        except ValueError:
            raise typer.BadParameter(f"expected {accepted}, received {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise typer.BadParameter(f"expected {accepted}, received {value}")
        return value

    return parse


def float_between(minimum: float, maximum: float) -> Callable[[str], float]:
    """A parser for a number in [minimum, maximum] whose error names the received text.

    >>> float_between(0.001, 1000)("0.5")
    0.5
    """
    accepted = f"a number in [{minimum:g}, {maximum:g}]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(f"expected {accepted}, received {text!r}") from None
        if not (math.isfinite(value) and minimum <= value <= maximum):
            raise typer.BadParameter(f"expected {accepted}, received {text}")
        return value

    return parse


def positive_float(text: str) -> float:
    """A parser for a finite number > 0 whose error names the received text.

    >>> positive_float("0.5")
    0.5
    """
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"expected a number > 0, received {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"expected a finite number > 0, received {text}")
    return value


def bad_parameter(error: SeqlabError, options: dict[str, str], fallback: str) -> typer.BadParameter:
    """The usage error for ``error``, pointing at ``options[error.parameter]`` or at ``fallback``."""
    option = options.get(error.parameter or "", fallback)
    return typer.BadParameter(str(error), param_hint=option)


def language(lang: str | None) -> str:
    """Resolve ``--lang``: the given language if valid (any case, ``ES`` too), else the environment's.

    Raises:
        typer.BadParameter: an unknown language (exit 2).
    """
    from seqlab.i18n import check_language, default_language

    try:
        return check_language(lang.strip().lower()) if lang is not None else default_language()
    except SeqlabError as error:
        raise typer.BadParameter(str(error), param_hint="'--lang'") from None


def writable_folder(out: Path) -> Path:
    """Create ``out`` if missing and prove it takes a file (a probe written and removed), before any work.

    Shared by ``figure`` and ``model``, so both word a bad ``--out`` alike.

    Raises:
        typer.BadParameter: ``out`` is a file, cannot be created, or cannot be written in (exit 2).
    """
    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{str(out)!r} is a file, not a folder", param_hint="'--out'")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise typer.BadParameter(f"cannot create the folder {str(out)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    try:
        with tempfile.NamedTemporaryFile(dir=out, prefix=".seqlab-probe-"):  # removed when closed
            pass
    except OSError as error:
        raise typer.BadParameter(f"cannot write in {str(out)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    return out


def integer_or_text(text: str) -> int | str:
    """Keep an integer, or the text as given: its range depends on another option, checked after parsing."""
    text = str(text)
    if text.isascii() and text.lstrip("+-").isdigit():
        return int(text, 10)
    return text
