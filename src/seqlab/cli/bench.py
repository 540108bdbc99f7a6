"""``seqlab bench``: time the recurrence against attention over T, at 1 and auto threads (parse, run, render).

Every option is checked, and the largest size weighed against the memory, before anything is allocated;
bad input exits 2 with one line naming the option and the value. A Rich progress bar on stderr follows
the sweep when stderr is a terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import (LANG_HELP, bad_parameter, integer_at_least, language, output_file, output_folder,
                                positive_float, writable_folder)
from seqlab.cli.options import worded
from seqlab.errors import SeqlabError
from seqlab.i18n import N_

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"T": "'--lengths'", "d_model": "'--d-model'", "batch": "'--batch'", "threads": "'--threads'",
           "device": "'--device'", "machines": "'--machines'", "min_run_time": "'--min-run-time'"}


def _tokens(text: str, option: str) -> list[str]:
    tokens = [token.strip() for token in text.split(",")]
    if not text.strip() or any(not token for token in tokens):
        raise typer.BadParameter(worded(N_("expected a comma-separated list, received {text!r}"), text=text),
                                 param_hint=option)
    return tokens


def _integers(texts: list[str], option: str, words: tuple[str, ...] = ()) -> tuple[int | str, ...]:
    """Comma lists of integers >= 1 (or one of ``words``); the error names the option and the bad item."""
    values: list[int | str] = []
    for text in texts:
        for token in _tokens(text, option):
            if token in words:
                values.append(token)
                continue
            try:
                value = int(token, 10)
            except ValueError:
                accepted = " or ".join(("an integer >= 1", *words))
                raise typer.BadParameter(worded(N_("expected {accepted}, received {token!r} in {text!r}"),
                                                accepted=accepted, token=token, text=text),
                                         param_hint=option) from None
            if value < 1:
                raise typer.BadParameter(worded(N_("expected integers >= 1, received {token} in {text!r}"), token=token,
                                                text=text), param_hint=option)
            values.append(value)
    return tuple(values)


def _machines(text: str) -> tuple[str, ...]:
    from seqlab.studies.bench import MACHINES

    tokens = _tokens(text, "'--machines'")
    if "all" in tokens:
        return tuple(MACHINES)
    for token in tokens:
        if token not in MACHINES:
            raise typer.BadParameter(worded(N_("expected machines among {machines} or all, received {token!r}"),
                                            machines=', '.join(MACHINES), token=token), param_hint="'--machines'")
    return tuple(tokens)


def bench(
    lengths: Annotated[Optional[str], typer.Option(
        "--lengths", metavar="T,T,…",
        help="Comma-separated lengths T (default 16,32,…,4096; with --quick 64,512,2048).")] = None,
    d_model: Annotated[Optional[list[str]], typer.Option(
        "--d-model", metavar="D[,D…]",
        help="Width d (d_model = d_h = d_k = d_v); repeat or give a comma list. Default 512.")] = None,
    batch: Annotated[int, typer.Option(parser=integer_at_least(1), metavar="INTEGER",
                                       help="Sequences per call.")] = 1,
    threads: Annotated[str, typer.Option(
        metavar="N,…|auto|all",
        help="CPU thread settings, comma-separated: integers, auto (torch's thread count capped by the cores the "
             "machine's load leaves free) or all (torch's thread count at start).")] = "1,auto",
    device: Annotated[str, typer.Option(metavar="cpu|cuda", help="cpu or cuda.")] = "cpu",
    machines: Annotated[str, typer.Option(
        metavar="NAME,…",
        help="Comma-separated: rnn (nn.RNN), loop (ElmanRNN), lstm, gru, sdpa, attention (explicit call), "
             "or all.")] = "all",
    quick: Annotated[bool, typer.Option(
        "--quick", help="A few points with short timing runs (under a minute on two cores).")] = False,
    min_run_time: Annotated[Optional[float], typer.Option(
        "--min-run-time", parser=positive_float, metavar="SECONDS",
        help="Least timed seconds per point (default 0.2; --quick 0.05).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result, every sample, as JSON.")] = False,
    csv_path: Annotated[Optional[Path], typer.Option(
        "--csv", metavar="PATH", callback=output_file, help="Write every sample as CSV to PATH.")] = None,
    plot: Annotated[Optional[Path], typer.Option(
        "--plot", metavar="PATH", callback=output_file, help="Write the plots to PATH.png and PATH.svg.")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", metavar="DIR", callback=output_folder,
        help="Write bench.json, bench.csv, bench.png and bench.svg into this folder.")] = None,
    lang: Annotated[Optional[str], typer.Option("--lang", metavar="en|es", help=LANG_HELP)] = None,
) -> None:
    """Time the recurrence against attention over T: where does time cross over, against work (T = d)?"""
    lang = language(lang)
    # the user's strings are read before the study (and PyTorch with it) is imported: a bad one is refused at once
    changes: dict[str, object] = {"batch": batch, "device": device,
                                  "threads": _integers([threads], "'--threads'", ("all", "auto"))}
    if lengths is not None:
        changes["lengths"] = _integers([lengths], "'--lengths'")
    if d_model:
        changes["d_models"] = _integers(d_model, "'--d-model'")
    from seqlab.studies.bench import DEVICES, BenchConfig, check_bench_config

    if device not in DEVICES:
        raise typer.BadParameter(worded(N_("expected one of {devices}, received {device!r}"),
                                        devices=', '.join(DEVICES), device=device), param_hint="'--device'")
    changes["machines"] = _machines(machines)
    if min_run_time is not None:
        changes["min_run_time"] = min_run_time
    config = BenchConfig.quick(**changes) if quick else BenchConfig(**changes)
    try:
        check_bench_config(config)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--lengths'") from None
    if out is not None:
        writable_folder(out)  # made before the sweep (one level), not after it
    if plot is not None or out is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise typer.BadParameter(worded(N_("plots need matplotlib (pip install matplotlib)")),
                                     param_hint="'--plot'" if plot is not None else "'--out'") from None
    result = _run(config, lang)
    with interrupts.held():  # every file written whole, or an interrupt waits for it (seqlab.cli.interrupts)
        _emit(result, lang, as_json, csv_path, plot, out)


def _run(config, lang: str):
    """Run the sweep under a Rich progress bar on stderr (shown only on a terminal)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from seqlab.errors import shown
    from seqlab.i18n import translator
    from seqlab.studies.bench import run_bench

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        tr = translator(lang)
        measuring = tr("Measuring")
        task = bar.add_task(measuring, total=None)
        try:
            return run_bench(config, lambda done, total, what: bar.update(
                task, completed=done, total=total, description=f"{measuring}: {shown(what, lang)}"))
        except SeqlabError as error:
            raise bad_parameter(error, OPTIONS, "'--lengths'") from None


def _emit(result, lang: str, as_json: bool, csv_path: Optional[Path], plot: Optional[Path],
          out: Optional[Path]) -> None:
    """Print the table (or JSON) on stdout; write the files asked for; name them on stderr."""
    from rich.console import Console

    from seqlab.i18n import translator
    from seqlab.render.bench import render_bench, to_csv, write_all, write_plots
    from seqlab.render.json_output import to_json

    if as_json:
        typer.echo(to_json(result))
    else:
        Console().print(render_bench(result, lang))
    written: list[Path] = []
    if csv_path is not None:
        csv_path.write_text(to_csv(result), encoding="utf-8")
        written.append(csv_path)
    if plot is not None:
        written += write_plots(result, plot, lang)
    if out is not None:
        written += write_all(result, out, lang).values()
    tr = translator(lang)
    for path in written:
        typer.echo(tr("Wrote {path}").format(path=path), err=True)
