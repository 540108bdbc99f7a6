"""The ``seqlab`` command line: parse, call a study, render. Nothing here measures.

One module per command defines its function; this module registers each on :data:`app`. Bad usage
exits with code 2 and one ``Error: Invalid value for '--option': …`` line (click's convention, with a
``--help`` hint), in the language of ``--lang`` (before or after the command name) or of the locale,
like ``--help`` (:mod:`seqlab.cli.group`). ``seqlab`` alone prints the help (exit 0); ``seqlab --version`` the version.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli import bench, check, compare, decode, figure, learn, model, profile, quiz, report, serve, table1
from seqlab.cli import zoo
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
    """Console-script entry point (``seqlab``). Once the command has ended, the interpreter's own clean-up runs
    with Ctrl+C and SIGTERM ignored (:func:`seqlab.cli.interrupts.ignore_at_exit`)."""
    from seqlab.cli.interrupts import ignore_at_exit

    try:
        app()
    finally:
        ignore_at_exit()


# Explicit registration, in the order ``seqlab --help`` lists the commands. The command modules
# define plain functions and never import this module, so the command line has no import cycle.
for _command in (compare.compare, table1.table1, profile.profile, bench.bench, learn.learn, quiz.quiz,
                 model.model, figure.figure, check.check, serve.serve, report.report, decode.decode, zoo.zoo):
    app.command()(_command)
del _command
