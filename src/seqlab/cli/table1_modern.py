"""``seqlab table1 --modern``: parse the options, call the study, render (the flag is in :mod:`seqlab.cli.table1`)."""

from __future__ import annotations

import typer

from seqlab.cli.options import bad_parameter, integer_list, language
from seqlab.cli.output import show_result
from seqlab.cli.options import worded
from seqlab.cli.progress import progress_bar
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"lengths": "'--lengths' / '--long-lengths'", "T": "'--lengths' / '--long-lengths'",
           "d_model": "'--d-model'", "kernel": "'--kernel'", "window": "'--window'", "chunk": "'--chunk'",
           "rows": "'--modern'"}


def run_modern_command(lengths: str | None, long_lengths: str | None, d_model: str | None, kernel: int, window: int,
                       chunk: int | None, quick: bool, as_json: bool, plot: str | None, lang: str | None) -> None:
    """Run the extended table with the options of ``seqlab table1`` and print it (or its JSON).

    Raises:
        typer.BadParameter: a bad value (exit 2), ``--plot`` (the extended table has no figure) or several widths.
    """
    from seqlab.studies import table1_modern as study

    lang = language(lang)
    if plot is not None:
        raise typer.BadParameter(worded(N_("--plot draws the paper's table only; run it without --modern")),
                                 param_hint="'--plot'")
    short = integer_list(lengths, 2, "'--lengths'") if lengths is not None else \
        (study.QUICK_SHORT_LENGTHS if quick else study.DEFAULT_SHORT_LENGTHS)
    long = integer_list(long_lengths, 2, "'--long-lengths'") if long_lengths is not None else \
        (study.QUICK_LONG_LENGTHS if quick else study.DEFAULT_LONG_LENGTHS)
    widths = integer_list(d_model, 1, "'--d-model'") if d_model is not None else \
        ((study.QUICK_D_MODEL if quick else study.DEFAULT_D_MODEL),)
    if len(set(widths)) != 1:
        raise typer.BadParameter(worded(N_("--modern measures one width; received {d_model!r}"), d_model=d_model),
                                 param_hint="'--d-model'")
    config = study.ModernConfig(lengths=short, long_lengths=long, d_model=widths[0], kernel=kernel, window=window,
                                **({} if chunk is None else {"chunk": chunk}))
    try:
        config = study.check_modern_size(config)
        with progress_bar() as step:  # the bar only on a terminal (cli.progress)
            result = study.run_modern(config, progress=step)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--lengths' / '--long-lengths' / '--d-model'") from None
    show_result(result, lang, as_json, "seqlab.render.table1_modern:render_modern")
