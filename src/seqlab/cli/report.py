"""``seqlab report``: run compare, Table 1, a short bench, Figure 1 and the check, and write one HTML page.

The page is self-contained (plots embedded as PNG, no outside links) and opens offline. Beside it, the same
report as a PDF (same name, ``.pdf``) when WeasyPrint is installed — it lays the page out without a browser;
without it the command says so on stderr and the HTML is the report. ``--no-pdf`` skips the PDF.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import app
from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language
from seqlab.errors import SeqlabError
from seqlab.i18n import translator

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"d_model": "'--d-model'", "T": "'--text'", "tokenizer": "'--text'"}


def _tr(lang: str):
    return translator(lang, "report")


def _text(text: Optional[str], lang: str):
    """Resolve ``--text`` into (Tokens, source label); a failure names the option."""
    from seqlab.text import builtin_text, read_text, tokenize

    try:
        source = builtin_text(lang) if text is None else read_text(text)
        return tokenize(source.content), source.source
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--text'") from None


@app.command()
def report(
    out: Annotated[Path, typer.Option("--out", help="The HTML file to write.")] = Path("report.html"),
    text: Annotated[Optional[str], typer.Option("--text", help="A UTF-8 text file for the compare section, or - "
                                                "for standard input. Default: the built-in text.")] = None,
    d_model: Annotated[Optional[int], typer.Option("--d-model", parser=integer_at_least(1), metavar="INTEGER",
                                                   help="Token-vector width of the compare section (default: the "
                                                        "paper's 512; --quick: 32).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Tiny sizes everywhere and four claims checked: a "
                                        "preview in seconds, not a measurement to quote.")] = False,
    pdf: Annotated[bool, typer.Option("--pdf/--no-pdf", help="Also print the page to a PDF beside it (same name, "
                                      ".pdf) with WeasyPrint, when it is installed.")] = True,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """One self-contained HTML page: compare, Table 1, bench, Figure 1 and the twelve claims checked."""
    from seqlab.studies.report import ReportConfig, with_compare

    lang = language(lang)
    tl = _tr(lang)
    if out.is_dir():
        raise typer.BadParameter(f"expected a file name, received the folder {str(out)!r}", param_hint="'--out'")
    if not out.parent.is_dir():
        raise typer.BadParameter(f"the folder {str(out.parent)!r} does not exist, received {str(out)!r}",
                                 param_hint="'--out'")
    tokens, source = _text(text, lang)
    config = ReportConfig.quick() if quick else ReportConfig()
    if d_model is not None:
        config = with_compare(config, d_model=d_model)
    try:
        result = _run(tokens, source, config, lang)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--text' / '--d-model'") from None
    from seqlab.render.report import write_report

    try:
        path = write_report(result, out, lang)
    except OSError as error:
        raise typer.BadParameter(f"cannot write {str(out)!r}: {error.strerror or error}", param_hint="'--out'") \
            from None
    typer.echo(tl("Wrote {path} ({size} KiB, {held} of {total} claims hold).").format(
        path=path, size=round(path.stat().st_size / 1024), held=result.check.held, total=len(result.check.checks)))
    if pdf:
        _write_pdf(path, tl)


def _write_pdf(path: Path, tl) -> None:
    """The PDF beside the page, or one line on stderr saying why there is none (not an error: exit 0)."""
    from seqlab.render.report import write_pdf

    try:
        written = write_pdf(path, path.with_suffix(".pdf"))
    except SeqlabError as error:
        typer.echo(tl("No PDF written: {reason}.").format(reason=error), err=True)
        return
    except OSError as error:
        raise typer.BadParameter(f"cannot write {str(path.with_suffix('.pdf'))!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    typer.echo(tl("Wrote {path} ({size} KiB).").format(path=written, size=round(written.stat().st_size / 1024)))


def _run(tokens, source: str, config, lang: str):
    """Run the report's parts under a transient progress line on stderr (shown only on a terminal)."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from seqlab.studies.report import run_report

    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("", total=5)
        return run_report(tokens, source, config, lambda done, total, part: bar.update(
            task, completed=done, description=f"{part} ({done + 1}/{total})"))
