"""``seqlab check``: every claim of the lesson (L1–L12) against the measurement that tests it.

Exit code 0 when no claim checked is "does not hold" (a claim that holds with a caveat does not fail), 1 when
one does not hold (or could not be measured), 2 on bad usage. ``--list`` prints the legend L1–L12 and
measures nothing.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli.options import LANG_HELP, bad_parameter, language
from seqlab.cli.threads import ThreadsOption
from seqlab.errors import SeqlabError

#: Exit code when a claim does not hold.
FAILED = 1


def check(
    full: Annotated[bool, typer.Option("--full", help="Larger sizes (longer chains, more input draws, L8 timed "
                                       "at T = 512 and d = 64, a longer Figure 1): a few seconds more than the "
                                       "default.")] = False,
    only: Annotated[Optional[str], typer.Option("--only", metavar="L1,L8,...",
                                                help="Check only these claims, separated by commas: L1,L8 or 1,8 "
                                                     "(default: all twelve, then the statements beyond the lesson "
                                                     "B1–B5).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every claim as JSON: its verdict, the condition "
                                          "judged, the figures measured and the source of each count.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    list_claims: Annotated[bool, typer.Option("--list", help="Print the legend of the claims L1–L12 (a title and "
                                              "one sentence each) and exit, measuring nothing.")] = False,
    threads: ThreadsOption = None,
) -> None:
    """Check the lesson's claims L1–L12 one by one, each against a measurement, and give each a verdict: holds,
    holds with a caveat, or does not hold; exit 1 if one does not hold."""
    from seqlab.studies.check import BEYOND, CLAIMS, CheckConfig, parse_claims

    lang = language(lang)
    if list_claims:
        from rich.console import Console

        from seqlab.render.check import render_legend

        console = Console(highlight=False)
        console.print(render_legend(lang, console.width))
        return
    try:
        claims = parse_claims(only) if only is not None else CLAIMS + BEYOND
    except SeqlabError as error:
        raise bad_parameter(error, {}, "'--only'") from None
    result = _run(CheckConfig(claims=claims, full=full, threads=threads))
    if as_json:
        from seqlab.render.check import check_json

        typer.echo(check_json(result, lang))
    else:
        from rich.console import Console

        from seqlab.render.check import render_check

        console = Console(highlight=False)
        console.print(render_check(result, lang, console.width))
    if not result.all_hold:
        raise typer.Exit(FAILED)


def _run(config):
    """Run the checks under a transient progress line on stderr (shown only on a terminal)."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from seqlab.studies.check import run_check

    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task("", total=len(config.claims))
        return run_check(config, lambda done, total, claim: bar.update(task, completed=done,
                                                                          description=f"{claim} ({done + 1}/{total})"))
