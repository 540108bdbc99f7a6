"""``seqlab figure``: Figure 1 of the paper, box by box, with the boxes that mix positions measured (L11).

Parse, call :func:`seqlab.studies.figure.measure_figure`, render: writes figure1.svg, figure1.png and
figure1.json into ``--out`` and prints the table (or, with ``--json``, the JSON). Every option is
checked, and the memory weighed, before anything is built; bad input exits 2 with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import app
from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language
from seqlab.errors import SeqlabError

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"T_source": "'--length'", "T_target": "'--length'", "d_model": "'--d-model'", "heads": "'--heads'",
           "seed": "'--seed'"}
#: File names written into --out.
STEM, JSON_NAME = "figure1", "figure1.json"


@app.command()
def figure(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", file_okay=False,
                                      help="Folder for figure1.svg, figure1.png and figure1.json (created if "
                                           "missing; default: the current folder).")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the measured boxes as JSON instead of the "
                                          "table (the three files are still written).")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    length: Annotated[int, typer.Option("--length", parser=integer_at_least(2, 256), metavar="N",
                                        help="Source and target tokens, each (default 10).")] = 10,
    d_model: Annotated[int, typer.Option("--d-model", parser=integer_at_least(1, 4096), metavar="D",
                                         help="Row width d_model, a multiple of --heads (default 512, the "
                                              "paper's).")] = 512,
    heads: Annotated[int, typer.Option("--heads", parser=integer_at_least(1), metavar="H",
                                       help="Attention heads (default 8, the paper's).")] = 8,
    seed: Annotated[int, typer.Option("--seed", parser=integer_at_least(0), metavar="S",
                                      help="Seed of the weights and probes (default 0).")] = 0,
) -> None:
    """Figure 1 of "Attention Is All You Need" as 15 boxes: measure which ones mix positions (L11)."""
    from seqlab.studies.figure import check_figure_arguments, measure_figure

    lang = language(lang)
    try:
        check_figure_arguments(length, length, d_model, heads, seed)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--length' / '--d-model'") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise typer.BadParameter(f"cannot create the folder {str(out)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    result = measure_figure(T_source=length, T_target=length, d_model=d_model, heads=heads, seed=seed)
    _emit(result, out, lang, as_json)


def _emit(result, out: Path, lang: str, as_json: bool) -> None:
    """Write the three files, then print the JSON, or the table (and the files' paths on stderr)."""
    from rich.console import Console

    from seqlab.render.figure import figure_table, figure_translator, write_figure
    from seqlab.render.json_output import to_json

    tr = figure_translator(lang)
    text = to_json(result)
    try:
        written = (*write_figure(result, out / STEM, lang), out / JSON_NAME)
        (out / JSON_NAME).write_text(text + "\n", encoding="utf-8")
    except OSError as error:
        raise typer.BadParameter(f"cannot write into {str(out)!r}: {error.strerror or error}",
                                 param_hint="'--out'") from None
    if as_json:  # stdout and stderr hold nothing but the JSON, so the mixed stream parses too
        typer.echo(text)
        return
    Console().print(figure_table(result, lang))
    for path in written:
        typer.echo(tr("Wrote {path}").format(path=path), err=True)
