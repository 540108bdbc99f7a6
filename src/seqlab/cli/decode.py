"""``seqlab decode``: the cost of each new token when a model writes (parse, call the study, render).

Everything that can be refused is refused before the measuring starts (exit 2, one ``Error:`` line): positions
that are not integers >= 1 or exceed the largest accepted, an unknown machine, a ``--plot`` file that is not .png
or .svg or lies in a missing folder, and a step that would not fit in memory (the message says how much it would
need).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli.options import (LANG_HELP, bad_parameter, input_checkpoint, integer_at_least, integer_list, language,
                                output_file)
from seqlab.cli.output import show_result
from seqlab.cli.threads import DecodeThreadsOption
from seqlab.errors import SeqlabError
from seqlab.cli.options import worded
from seqlab.i18n import N_
from seqlab.layers.mixers import machine_names  # torch-free: the machines --help lists

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"positions": "'--positions'", "d_model": "'--d-model'", "machine": "'--machines'",
           "batch": "'--batch'"}
PLOT_SUFFIXES = (".png", ".svg")


def _plot_path(path: Path) -> Path:
    """``--plot FILE.png`` or ``FILE.svg`` (its folder checked as it was parsed,
    :func:`~seqlab.cli.options.check_output`)."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise typer.BadParameter(worded(N_("expected a file name ending in .png or .svg, received {path!r}"),
                                        path=str(path)), param_hint="'--plot'")
    return path


def _machines(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def decode(
    positions: Annotated[Optional[str], typer.Option(
        "--positions", metavar="T1,T2,...",
        help="Positions t of the new token, integers >= 1 separated by commas (default 16,256,1024; "
             "--quick: 16,64,256).")] = None,
    d_model: Annotated[Optional[int], typer.Option(
        "--d-model", parser=integer_at_least(1), metavar="INTEGER",
        help="Every width: d_model = d_h = d_k = d_v (default 256; --quick: 64).")] = None,
    machines: Annotated[Optional[str], typer.Option(
        "--machines", metavar="NAME,...",
        help="Which machines: {machines} (default: all).")] = None,  # filled from the registry
    batch: Annotated[int, typer.Option("--batch", parser=integer_at_least(1), metavar="INTEGER",
                                       help="Sequences generated side by side.")] = 1,
    time: Annotated[bool, typer.Option("--time/--no-time", help="Time each step (median ± IQR), or count only."
                                       )] = True,
    quick: Annotated[bool, typer.Option("--quick", help="Smaller positions and width, short timings: seconds, a "
                                        "preview rather than a measurement to quote.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print every measurement and decision as JSON.")] = False,
    plot: Annotated[Optional[Path], typer.Option(
        "--plot", metavar="FILE", callback=output_file,
        help="Also draw multiplications, time and state against t (log axes) to FILE.png "
                                       "or FILE.svg.")] = None,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
    threads: DecodeThreadsOption = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", metavar="DIR", callback=input_checkpoint,
        help="Measure a local Hugging Face causal LM instead, read offline from DIR: "
                                       "multiplications, time and the bytes of its own cache per new token "
                                       "(positions >= 2; default 16,64,256; --quick: 8,16,32).")] = None,
    dtype: Annotated[Optional[str], typer.Option(
        "--dtype", metavar="DTYPE",
        help="With --model: load the weights, and so write the cache, in float32, bfloat16, float16 or float64 "
             "(default: the checkpoint's own).")] = None,
) -> None:
    """Generate token by token: multiplications, time and state per new token, machine by machine."""
    lang = language(lang)
    plot_path = _plot_path(plot) if plot is not None else None
    if model is not None:
        from seqlab.cli.decode_model import decode_model

        given = [name for name, value in (("--d-model", d_model), ("--machines", machines), ("--batch", batch != 1))
                 if value]
        if given:
            raise typer.BadParameter(worded(N_("{given} apply to seqlab's own machines, not to --model"),
                                            given=', '.join(given)), param_hint="'--model'")
        return decode_model(model, positions, time, quick, as_json, lang, threads, plot_path, dtype)
    if dtype is not None:
        raise typer.BadParameter(worded(N_("--dtype applies to --model only")), param_hint="'--dtype'")
    changes: dict[str, object] = {"batch": batch, "time": time}
    if threads is not None:
        changes["threads"] = threads
    if positions is not None:
        changes["positions"] = integer_list(positions, 1, "'--positions'")
    if d_model is not None:
        changes["d_model"] = d_model
    # the user's strings are read before the study (and PyTorch with it) is imported: a bad one is refused at once
    from seqlab.studies.decode import DecodeConfig, check_decode_config, run_decode

    if machines is not None:
        changes["machines"] = _machines(machines)
    try:
        config = check_decode_config(DecodeConfig.quick(**changes) if quick else DecodeConfig(**changes))
        result = run_decode(config)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--positions' / '--d-model'") from None
    show_result(result, lang, as_json, "seqlab.render.decode:render_decode", plot="seqlab.render.decode:plot_decode",
                plot_path=plot_path)
