"""``seqlab report``: run compare, Table 1, a short bench, decoding, Figure 1 and the check; write one HTML page.

The page is self-contained (plots embedded as PNG, no outside links) and opens offline. Beside it, the same
report as a PDF (same name, ``.pdf``) when WeasyPrint is installed — it lays the page out without a browser;
without it the command says so on stderr and the HTML is the report. ``--no-pdf`` skips the PDF.

Everything that can be refused is refused before the measuring starts (exit 2, one ``Error:`` line):
``--out`` must end in .html or .htm (the PDF takes the same name with .pdf, so it cannot be the page) and its
folder must take a file; ``--quick`` takes ``--d-model`` up to 256 and compares at most the first 1,000
tokens; a text too long for memory is refused with the ``--max-tokens`` that fits.

``--learn`` adds a section that trains tiny models (``seqlab learn --quick``'s preset,
:data:`seqlab.studies.report.REPORT_LEARN`; ``--quick`` does not shrink it): it is off by default because it
takes minutes, and its time, measured from one training step of each model, is printed on stderr before
anything runs, as ``seqlab learn`` does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import LANG_HELP, bad_parameter, input_text, integer_at_least, language, output_file
from seqlab.cli.options import worded
from seqlab.errors import SeqlabError
from seqlab.i18n import format_integer, translator
from seqlab.i18n import N_

# The --quick limits live here, not in the study, so that `seqlab --help` does not import torch.
#: The widest compare section a --quick preview takes: at 256 the built-in text's compare runs in about 2 s
#: on two busy cores, at 512 in about 16 s and at 4,096 in minutes.
QUICK_MAX_D_MODEL = 256
#: The longest text a --quick preview compares (the first tokens of a longer one): about 3 s at T = 1,000 and
#: d_model = 32, 11 s at T = 4,000.
QUICK_MAX_TOKENS = 1000

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"d_model": "'--d-model'", "T": "'--text'", "tokenizer": "'--text'"}
#: What --out may end in: the page is HTML, and the PDF beside it takes the same name with .pdf.
HTML_SUFFIXES = (".html", ".htm")


def _text(text: Optional[str], lang: str):
    """Resolve ``--text`` into (Tokens, source label); a failure names the option."""
    from seqlab.text import builtin_text, read_text, tokenize

    try:
        source = builtin_text(lang) if text is None else read_text(text)
        return tokenize(source.content), source.source
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--text'") from None


def _check_out(out: Path, pdf: bool) -> None:
    """Refuse, before any measuring, an --out that is a folder, does not end in .html/.htm, lies in a missing
    folder or one that takes no file, or whose page or PDF cannot be written over (exit 2)."""
    if out.suffix.lower() not in HTML_SUFFIXES:
        raise typer.BadParameter(worded(N_("expected a file name ending in .html or .htm (the PDF is written beside "
                                           "it, with .pdf), received {out!r}"), out=str(out)), param_hint="'--out'")
    for path in (out, out.with_suffix(".pdf")) if pdf else (out,):
        if path.is_dir():
            raise typer.BadParameter(worded(N_("cannot write {path!r}: it is a folder"), path=str(path)),
                                     param_hint="'--out'")
        if path.exists() and not os.access(path, os.W_OK):
            raise typer.BadParameter(worded(N_("cannot write {path!r}: Permission denied"), path=str(path)),
                                     param_hint="'--out'")


def _fit_text(tokens, config, max_tokens: Optional[int], quick: bool, lang: str):
    """Keep the first --max-tokens tokens (under --quick at most 1,000), then refuse a text still too long for
    memory, naming the --max-tokens that fits."""
    from seqlab.studies.compare import check_compare_size
    from seqlab.studies.report import first_tokens, largest_fitting_length

    if quick and max_tokens is not None and max_tokens > QUICK_MAX_TOKENS:
        raise typer.BadParameter(worded(N_("expected an integer in [2, {quick_max_tokens}] under --quick (a preview "
                                           "in seconds), received {max_tokens}; leave out --quick to compare more "
                                           "tokens"), quick_max_tokens=QUICK_MAX_TOKENS, max_tokens=max_tokens),
                                 param_hint="'--max-tokens'")
    limit = max_tokens if max_tokens is not None else QUICK_MAX_TOKENS if quick else None
    if limit is not None and len(tokens) > limit:
        if max_tokens is None:
            tl = translator(lang)
            typer.echo(tl("--quick compares the first {kept} of the text's {total} tokens (--max-tokens sets how "
                          "many, up to {kept}).").format(
                kept=format_integer(limit, lang), total=format_integer(len(tokens), lang)), err=True)
        tokens = first_tokens(tokens, limit)
    try:
        check_compare_size(len(tokens), config.compare)
    except SeqlabError as error:
        fitting = largest_fitting_length(config, len(tokens) - 1) if len(tokens) > 2 else None
        if fitting is None:
            raise bad_parameter(error, OPTIONS, "'--text' / '--d-model'") from None
        raise typer.BadParameter(worded(N_("{error}; --max-tokens {fitting} keeps the first {fitting} tokens, the "
                                           "most that fit"), error=error, fitting=fitting),
                                 param_hint="'--text'") from None
    return tokens


def report(
    out: Annotated[Path, typer.Option("--out", callback=output_file,
                                      help="The HTML file to write, ending in .html or .htm; the PDF goes "
                                      "beside it with .pdf.")] = Path("report.html"),
    text: Annotated[Optional[str], typer.Option("--text", callback=input_text,
                                                help="A UTF-8 text file for the compare section, or - "
                                                "for standard input. Default: the built-in text.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option("--max-tokens", parser=integer_at_least(2), metavar="N",
                                                      help="Compare only the first N tokens of the text (for a "
                                                           "text too long for memory; --quick: at most "
                                                           f"{QUICK_MAX_TOKENS:,}).")] = None,
    d_model: Annotated[Optional[int], typer.Option("--d-model", parser=integer_at_least(1), metavar="INTEGER",
                                                   help="Token-vector width of the compare section (default: the "
                                                        f"paper's 512; --quick: 32, at most {QUICK_MAX_D_MODEL})."
                                                   )] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Tiny sizes everywhere, four claims checked, --d-model at "
                                        f"most {QUICK_MAX_D_MODEL} and the first {QUICK_MAX_TOKENS:,} tokens of the "
                                        "text: a preview in seconds, not a measurement to quote.")] = False,
    learn: Annotated[bool, typer.Option("--learn", help="Add a section that trains tiny models (seqlab learn "
                                        "--quick: its tables, sentences and plots). Minutes more, even under "
                                        "--quick; the time is printed before it starts.")] = False,
    pdf: Annotated[bool, typer.Option("--pdf/--no-pdf", help="Also print the page to a PDF beside it (same name, "
                                      ".pdf) with WeasyPrint, when it is installed.")] = True,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """One self-contained HTML page: compare, Table 1, bench, Figure 1 and the twelve claims checked."""
    from dataclasses import replace

    from seqlab.studies.report import REPORT_LEARN, ReportConfig, with_compare

    lang = language(lang)
    tl = translator(lang)
    _check_out(out, pdf)
    if quick and d_model is not None and d_model > QUICK_MAX_D_MODEL:
        raise typer.BadParameter(worded(N_("expected an integer in [1, {quick_max_d_model}] under --quick (a preview "
                                           "in seconds), received {d_model}; leave out --quick to measure at that "
                                           "width"), quick_max_d_model=QUICK_MAX_D_MODEL, d_model=d_model),
                                 param_hint="'--d-model'")
    tokens, source = _text(text, lang)
    config = ReportConfig.quick() if quick else ReportConfig()
    if d_model is not None:
        config = with_compare(config, d_model=d_model)
    tokens = _fit_text(tokens, config, max_tokens, quick, lang)
    if learn:
        config = replace(config, learn=REPORT_LEARN)
        _price_learn(config.learn, lang)
    try:
        result = _run(tokens, source, config, lang)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--text' / '--d-model'") from None
    from seqlab.render.report import write_report

    try:
        with interrupts.held():  # the page written whole, or an interrupt waits for it (seqlab.cli.interrupts)
            path = write_report(result, out, lang)
    except OSError as error:
        raise typer.BadParameter(worded(N_("cannot write {out!r}: {value}"), out=str(out),
                                        value=error.strerror or error), param_hint="'--out'") \
            from None
    typer.echo(tl("Wrote {path} ({size} KiB, {held} of {total} claims hold).").format(
        path=path, size=round(path.stat().st_size / 1024), held=result.check.held, total=len(result.check.checks)))
    if pdf:
        _write_pdf(path, tl)


def _price_learn(config, lang: str) -> None:
    """Say on stderr, before anything runs, how long the learn section may take (its per-step cost measured
    now, as ``seqlab learn`` prints it)."""
    from seqlab.render.learn_text import duration_text
    from seqlab.studies.learn import estimate_learn

    tl = translator(lang)
    estimate = estimate_learn(config)
    typer.echo(tl("The learn section trains {runs} runs (seqlab learn --quick): at most {time} more (per-step cost "
                  "measured now, every run to its step limit); runs that learn the task stop earlier.").format(
        runs=format_integer(estimate.runs, lang), time=duration_text(estimate.seconds, lang)), err=True)


def _write_pdf(path: Path, tl) -> None:
    """The PDF beside the page, or one line on stderr saying why there is none (not an error: exit 0)."""
    from seqlab.cli.extras import install_commands
    from seqlab.render.report import PdfUnavailable, write_pdf

    try:
        with interrupts.held():
            written = write_pdf(path, path.with_suffix(".pdf"))
    except PdfUnavailable as error:
        registry, clone = install_commands("pdf")
        typer.echo(tl("No PDF written: WeasyPrint is not available ({detail}); install the pdf extra with {registry} "
                      "(in a clone: {clone}; WeasyPrint needs the Pango library) to get a PDF.").format(
            detail=error.detail, registry=registry, clone=clone), err=True)
        return
    except OSError as error:
        raise typer.BadParameter(worded(N_("cannot write {with_suffix!r}: {value}"),
                                        with_suffix=str(path.with_suffix('.pdf')), value=error.strerror or error),
                                 param_hint="'--out'") from None
    typer.echo(tl("Wrote {path} ({size} KiB).").format(path=written, size=round(written.stat().st_size / 1024)))


def _run(tokens, source: str, config, lang: str):
    """Run the report's parts under a transient progress line on stderr (shown only on a terminal)."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from seqlab.studies.report import parts, run_report

    console = Console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("", total=len(parts(config)))
        return run_report(tokens, source, config, lambda done, total, part: bar.update(
            task, completed=done, description=f"{part} ({done + 1}/{total})"))
