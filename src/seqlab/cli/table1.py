"""``seqlab table1``: Table 1 of the paper, measured (parse, call the study, render)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli.options import (LANG_HELP, _gettext, bad_parameter, integer_at_least, integer_list, language,
                                output_file_or_folder)
from seqlab.cli.output import show_result
from seqlab.cli.options import worded
from seqlab.cli.progress import progress_bar
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"lengths": "'--lengths'", "T": "'--lengths'", "d_model": "'--d-model'", "kernel": "'--kernel'",
           "window": "'--window'", "chunk": "'--chunk'"}


def _plot_stem(path: Path) -> Path:
    """``--plot PATH`` (checked as it was parsed, :func:`~seqlab.cli.options.check_output`): a folder gets
    table1.png/.svg inside; otherwise PATH.png and PATH.svg."""
    if path.is_dir():
        return path / "table1"
    return path.with_suffix("") if path.suffix.lower() in (".png", ".svg") else path


def _refuse_modern_only(long_lengths: str | None, chunk: int | None) -> None:
    """``--long-lengths`` and ``--chunk`` mean something only with ``--modern``: refuse them without it.

    Raises:
        typer.BadParameter: either was given (exit 2), in the run's language.
    """
    given = [name for name, value in (("--long-lengths", long_lengths), ("--chunk", chunk)) if value is not None]
    if not given:
        return
    _ = _gettext()
    text = (_("{option} only applies with --modern; add --modern or leave it out").format(option=given[0])
            if len(given) == 1 else
            _("{first} and {second} only apply with --modern; add --modern or leave them out").format(
                first=given[0], second=given[1]))
    raise typer.BadParameter(text, param_hint=f"'{given[0]}'")


def table1(
    lengths: Annotated[Optional[str], typer.Option(
        "--lengths", metavar="T1,T2,...",
        help="Sequence lengths, at least 3, each >= 2 (default 16,32,64,128,256; --quick: 16,32,64).")] = None,
    d_model: Annotated[Optional[str], typer.Option(
        "--d-model", metavar="D[,D...]",
        help="Width d of every layer; several separated by commas also fit the work against d "
             "(default 64; --quick: 32; with --modern one width, default 32; --quick: 16).")] = None,
    kernel: Annotated[int, typer.Option("--kernel", parser=integer_at_least(3), metavar="INTEGER",
                                        help="Convolution kernel width k, odd and >= 3. The dilated stack's depth "
                                             "⌈log_b T⌉, b = (k + 1)/2, grows in even steps at lengths that "
                                             "are powers of b (16…256 for k = 3; 9,27,81,243 for k = 5).")] = 3,
    window: Annotated[int, typer.Option("--window", parser=integer_at_least(1), metavar="INTEGER",
                                        help="Restricted attention window r: position i sees |j - i| <= r.")] = 4,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer lengths and a smaller d (a few seconds).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print every raw measurement and fit as JSON.")] = False,
    plot: Annotated[Optional[Path], typer.Option(
        "--plot", metavar="PATH", callback=output_file_or_folder,
        help="Also draw work, span and path against T: writes PATH.png and PATH.svg "
                                       "(PATH/table1.png and .svg when PATH is a folder).")] = None,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    modern: Annotated[bool, typer.Option(
        "--modern", help="Table 1 extended: peak memory and decoding columns, and rows for linear attention, "
                         "linear recurrences (loop and scan) and sliding-window attention. --lengths then sets the "
                         "path lengths (default 32,64,128,256; --quick 32,64,128).")] = False,
    long_lengths: Annotated[Optional[str], typer.Option(
        "--long-lengths", metavar="T1,T2,...",
        help="With --modern: lengths for work, span, peak memory and decoding, at least 3, each >= 2 "
             "(default 256,512,1024,2048; --quick 256,512,1024).")] = None,
    chunk: Annotated[Optional[int], typer.Option("--chunk", parser=integer_at_least(1), metavar="INTEGER",
                                                 help="With --modern: chunk size C of chunked linear attention "
                                                      "(default 4).")] = None,
) -> None:
    """Table 1 of "Attention Is All You Need" by measurement: work, sequential operations and path length."""
    if modern:
        from seqlab.cli.table1_modern import run_modern_command

        run_modern_command(lengths, long_lengths, d_model, kernel, window, chunk, quick, as_json, plot, lang)
        return
    _refuse_modern_only(long_lengths, chunk)
    lang = language(lang)
    # the user's strings are read before the study (and PyTorch with it) is imported: a bad one is refused at once
    parsed_lengths = integer_list(lengths, 2, "'--lengths'") if lengths is not None else None
    widths = integer_list(d_model, 1, "'--d-model'") if d_model is not None else None
    stem = _plot_stem(plot) if plot is not None else None
    from seqlab.studies.table1 import (DEFAULT_D_MODEL, DEFAULT_LENGTHS, QUICK_D_MODEL, QUICK_LENGTHS, Table1Config,
                                       check_table1_size, run_table1)

    parsed_lengths = parsed_lengths or (QUICK_LENGTHS if quick else DEFAULT_LENGTHS)
    widths = widths or ((QUICK_D_MODEL if quick else DEFAULT_D_MODEL),)
    config = Table1Config(lengths=parsed_lengths, d_models=widths, kernel=kernel, window=window)
    try:
        config = check_table1_size(config)
        with progress_bar() as step:  # the bar only on a terminal (cli.progress)
            result = run_table1(config, progress=step)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--lengths' / '--d-model'") from None
    show_result(result, lang, as_json, "seqlab.render.table1:render_table1", plot="seqlab.render.table1:plot_table1",
                plot_path=stem)
