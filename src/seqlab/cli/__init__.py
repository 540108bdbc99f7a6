"""The ``seqlab`` command line: parse, call a study, render. Nothing here measures.

One module per command registers itself on :data:`app`. Bad usage exits with code 2 and one
``Error: Invalid value for '--option': …`` line (click's convention, with a ``--help`` hint), in the
language of ``--lang`` (before or after the command name) or of the locale, like ``--help``
(:mod:`seqlab.cli.group`). ``seqlab`` alone prints the help (exit 0); ``seqlab --version`` the version.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.group import SeqlabGroup, print_version
from seqlab.cli.options import LANG_HELP, language

app = typer.Typer(
    name="seqlab",
    cls=SeqlabGroup,
    help="Measure what recurrence costs and what attention buys, on your own text and hardware.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    add_completion=False,
)


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=print_version,
                                          help="Print seqlab's version and exit.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Measure what recurrence costs and what attention buys, on your own text and hardware."""
    if lang is not None:
        language(lang)  # an unknown language is refused here, exit 2
    if ctx.invoked_subcommand is None:  # `seqlab` alone: the help, and success
        typer.echo(ctx.get_help())
        raise typer.Exit()


def main() -> None:
    """Console-script entry point (``seqlab``)."""
    app()


from seqlab.cli import compare as _compare  # noqa: E402,F401  (registers its command)
from seqlab.cli import table1 as _table1  # noqa: E402,F401  (registers its command)
from seqlab.cli import profile as _profile  # noqa: E402,F401  (registers its command)
from seqlab.cli import bench as _bench  # noqa: E402,F401
from seqlab.cli import learn as _learn  # noqa: E402,F401
from seqlab.cli import quiz as _quiz  # noqa: E402,F401
from seqlab.cli import model as _model  # noqa: E402,F401
from seqlab.cli import figure as _figure  # noqa: E402,F401
from seqlab.cli import check as _check  # noqa: E402,F401
from seqlab.cli import serve as _serve  # noqa: E402,F401
from seqlab.cli import report as _report  # noqa: E402,F401
from seqlab.cli import decode as _decode  # noqa: E402,F401  (registers its command)
