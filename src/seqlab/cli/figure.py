"""``seqlab figure``: Figure 1 of the paper, box by box, with the boxes that mix positions measured (L11).

Parse, call :func:`seqlab.studies.figure.measure_figure`, render: writes figure1.svg, figure1.png and
figure1.json into ``--out`` and prints the table (or, with ``--json``, the JSON). Every option is
checked, the memory weighed and ``--out`` proved writable before anything is built; bad input exits 2
with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import (LANG_HELP, bad_parameter, integer_at_least, integer_or_text, language, output_folder,
                                writable_folder)
from seqlab.cli.options import worded
from seqlab.cli.progress import progress_bar
from seqlab.errors import SeqlabError
from seqlab.seeds import MAX_SEED
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"T_source": "'--length'", "T_target": "'--length'", "d_model": "'--d-model'", "heads": "'--heads'",
           "seed": "'--seed'"}
#: File names written into --out.
STEM, JSON_NAME = "figure1", "figure1.json"
#: Bounds of the options (those of :mod:`seqlab.studies.figure`, kept here so ``--help`` imports no torch).
MAX_D_MODEL = 4096


def _given(ctx: typer.Context, name: str) -> bool:
    """The user gave option ``name`` (command line or environment), not its default."""
    source = ctx.get_parameter_source(name)  # typer's own click: compared by name, not by class
    return source is not None and source.name != "DEFAULT"


def _check_heads(ctx: typer.Context, d_model: int, heads: int | str) -> None:
    """--heads must be in [1, d_model] and divide d_model; blame the option the user gave.

    With --heads left at its default, a --d-model it does not divide is the user's choice: the error
    names --d-model and the multiples of that default. Otherwise it names --heads (and --d-model too
    when both were given).
    """
    if isinstance(heads, int) and 1 <= heads <= d_model and d_model % heads == 0:
        return
    shown = heads if isinstance(heads, int) else repr(heads)
    heads_given, d_model_given = (_given(ctx, name) for name in ("heads", "d_model"))
    if not heads_given:
        largest = MAX_D_MODEL // heads * heads
        raise typer.BadParameter(worded(N_("expected a multiple of --heads ({heads}, its default) in [{heads}, "
                                           "{largest}], received {d_model}"), heads=heads, largest=largest,
                                        d_model=d_model), param_hint="'--d-model'")
    hint = "'--heads' / '--d-model'" if d_model_given else "'--heads'"
    raise typer.BadParameter(worded(N_("expected an integer in [1, {d_model}] that divides --d-model ({d_model}), "
                                       "received {shown}"), d_model=d_model, shown=shown), param_hint=hint)


def figure(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", callback=output_folder,
                                      help="Folder for figure1.svg, figure1.png and figure1.json (created if "
                                           "missing; default: the current folder).")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the measured boxes as JSON instead of the "
                                          "table (the three files are still written).")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    length: Annotated[int, typer.Option("--length", parser=integer_at_least(2, 256), metavar="N",
                                        help="Source and target tokens, each, 2 to 256 (default 10).")] = 10,
    d_model: Annotated[int, typer.Option("--d-model", parser=integer_at_least(1, MAX_D_MODEL), metavar="D",
                                         help="Row width d_model, 1 to 4096, a multiple of --heads (default 512, "
                                              "the paper's).")] = 512,
    heads: Annotated[int, typer.Option("--heads", parser=integer_or_text, metavar="H",
                                       help="Attention heads, 1 to d_model, dividing --d-model (default 8, the "
                                            "paper's).")] = 8,
    seed: Annotated[int, typer.Option("--seed", parser=integer_at_least(0, MAX_SEED), metavar="S",
                                      help="Seed of the weights and probes, 0 to 4294967295 (default 0).")] = 0,
) -> None:
    """Figure 1 of "Attention Is All You Need" as 15 boxes: measure which ones mix positions (L11)."""
    lang = language(lang)
    _check_heads(ctx, d_model, heads)  # before the study (and PyTorch) is imported
    from seqlab.studies.figure import check_figure_arguments, measure_figure

    try:
        check_figure_arguments(length, length, d_model, heads, seed)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--length' / '--d-model'") from None
    writable_folder(out)
    with progress_bar() as step:  # the bar only on a terminal (cli.progress)
        result = measure_figure(T_source=length, T_target=length, d_model=d_model, heads=heads, seed=seed,
                                progress=step)
    with interrupts.held():  # every file written whole, or an interrupt waits for it (seqlab.cli.interrupts)
        _emit(result, out, lang, as_json)


def _emit(result, out: Path, lang: str, as_json: bool) -> None:
    """Write the three files, then print the JSON, or the table (and the files' paths on stderr)."""
    from rich.console import Console

    from seqlab.i18n import translator
    from seqlab.render.figure import figure_table, write_figure
    from seqlab.render.json_output import to_json

    tr = translator(lang)
    text = to_json(result)
    try:
        written = (*write_figure(result, out / STEM, lang), out / JSON_NAME)
        (out / JSON_NAME).write_text(text + "\n", encoding="utf-8")
    except OSError as error:  # the folder was writable a moment ago: a full disk, or it changed meanwhile
        raise typer.BadParameter(worded(N_("cannot write in {out!r}: {value}"), out=str(out),
                                        value=error.strerror or error), param_hint="'--out'") from None
    if as_json:  # stdout and stderr hold nothing but the JSON, so the mixed stream parses too
        typer.echo(text)
        return
    Console().print(figure_table(result, lang))
    for path in written:
        typer.echo(tr("Wrote {path}").format(path=path), err=True)
