"""``seqlab check``: every claim of the lesson (L1–L12) against the measurement that tests it.

Exit code 0 when every claim checked holds, 1 when one does not (or could not be measured), 2 on bad usage.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from seqlab.cli import app
from seqlab.cli.options import LANG_HELP, language
from seqlab.errors import SeqlabError

#: Exit code when a claim does not hold.
FAILED = 1


@app.command()
def check(
    full: Annotated[bool, typer.Option("--full", help="Larger sizes (longer chains, T = 2,048 timed, a longer "
                                       "Figure 1): a few seconds more than the default, whose run is mostly "
                                       "start-up and fixed-size checks.")] = False,
    only: Annotated[Optional[str], typer.Option("--only", metavar="L1,L8,...",
                                                help="Check only these claims, separated by commas: L1,L8 or 1,8 "
                                                     "(default: all twelve).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every claim, its figures and verdict as "
                                          "JSON.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Check the lesson's claims L1–L12 one by one, each against a measurement; exit 1 if one does not hold."""
    from seqlab.studies.check import CLAIMS, CheckConfig, parse_claims

    lang = language(lang)
    try:
        claims = parse_claims(only) if only is not None else CLAIMS
    except SeqlabError as error:
        raise typer.BadParameter(str(error), param_hint="'--only'") from None
    result = _run(CheckConfig(claims=claims, full=full))
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
