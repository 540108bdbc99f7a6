"""``seqlab learn``: train tiny models on four synthetic tasks; accuracy against T, pairs and state (parse, run, render).

Every option is checked, and the memory weighed, before anything trains; bad input exits 2 with one
line naming the option and the value. The time the sweep may take is measured (one step of each model
and length) and printed on stderr before it starts; a Rich progress bar on stderr (runs done, time
left, estimated from the runs done) follows the runs when stderr is a terminal, and stays off under
``--json``. ``--jobs N`` runs N local worker processes, ``--ray auto|ADDRESS`` Ray tasks on a cluster
(the ``cluster`` extra); ``--results FILE`` keeps every finished run in FILE and, when FILE already holds
runs of the same sweep, resumes it (:mod:`seqlab.learn.sweep`). Ctrl-C (exit 130) or SIGTERM (exit 143) stops
the sweep with one line (:mod:`seqlab.cli.interrupts`): how many runs finished, and where ``--results`` keeps them
for the same command to resume; a run being recorded is first written and counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import LANG_HELP, bad_parameter, integer_at_least, language, output_file
from seqlab.cli.options import worded
from seqlab.errors import Message, SeqlabError
from seqlab.i18n import N_
from seqlab.learn.sweep import JOBS_PER_CPU, max_jobs

#: Which option each library parameter comes from, to point an error at the right one.
OPTIONS = {"tasks": "'--tasks'", "models": "'--models'", "T": "'--lengths'", "seeds": "'--seeds'",
           "rates": "'--rates'", "results": "'--results'", "jobs": "'--jobs'", "ray": "'--ray'",
           "pairs": "'--pairs'", "widths": "'--widths'"}


def _tokens(text: str, option: str) -> tuple[str, ...]:
    tokens = tuple(token.strip() for token in text.split(","))
    if not text.strip() or any(not token for token in tokens):
        raise typer.BadParameter(worded(N_("expected a comma-separated list, received {text!r}"), text=text),
                                 param_hint=option)
    return tokens


def _lengths(text: str, option: str = "'--lengths'") -> tuple[int, ...]:
    values = []
    for token in _tokens(text, option):
        try:
            value = int(token, 10)
        except ValueError:
            raise typer.BadParameter(worded(N_("expected integers >= 1, received {token!r} in {text!r}"), token=token,
                                            text=text), param_hint=option) from None
        if value < 1:
            raise typer.BadParameter(worded(N_("expected integers >= 1, received {token} in {text!r}"), token=token,
                                            text=text), param_hint=option)
        values.append(value)
    return tuple(values)


def _rates(text: str) -> tuple[float, ...]:
    values = []
    for token in _tokens(text, "'--rates'"):
        try:
            value = float(token)
        except ValueError:
            raise typer.BadParameter(worded(N_("expected learning rates in (0, 1], received {token!r} in {text!r}"),
                                            token=token, text=text), param_hint="'--rates'") from None
        values.append(value)
    return tuple(values)


def learn(
    quick: Annotated[bool, typer.Option("--quick", help="A sketch in a minute or two: fewer seeds, lengths, "
                                        "steps and learning rates; the output lists what it cut.")] = False,
    tasks: Annotated[Optional[str], typer.Option("--tasks", help="Comma-separated: recall, order, position, mqar "
                                                 "(default all four).")] = None,
    models: Annotated[Optional[str], typer.Option("--models", help="Comma-separated: {models} (default: each task's "
                                                  "own).")] = None,  # {models}: filled from the registry
    lengths: Annotated[Optional[str], typer.Option("--lengths", help="Comma-separated lengths T for every task "
                                                   "(default: each task's own).")] = None,
    seeds: Annotated[Optional[int], typer.Option("--seeds", parser=integer_at_least(1, 10), metavar="INTEGER",
                                                 help="Seeds 0..N-1 per cell (default 5; --quick 2).")] = None,
    pairs: Annotated[Optional[str], typer.Option("--pairs", help="Comma-separated numbers of key-value pairs for "
                                                 "mqar, 1 to 16 (default 2, 4, 8; --quick: 2, 6).")] = None,
    widths: Annotated[Optional[str], typer.Option("--widths", help="Comma-separated layer widths for every task "
                                                  "(default: mqar 8, 32, --quick 16; the lesson's tasks the widest "
                                                  "within the parameter budget).")] = None,
    rates: Annotated[Optional[str], typer.Option("--rates", help="Comma-separated AdamW peak learning rates to try per "
                                                 "model, task and T; the best on the validation split is kept "
                                                 "(default: three rates from 1e-2 to 1e-3; --quick: two).")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", parser=integer_at_least(1, max_jobs()), metavar="INTEGER",
                                                help=f"Run N runs at a time in local worker processes (default 1: "
                                                f"in this process; at most {JOBS_PER_CPU} per CPU). The results "
                                                "do not depend on it.")] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="auto|ADDRESS",
                                               help="Run the runs as Ray tasks on an existing Ray cluster: auto "
                                               "(the one this machine belongs to) or its address. Needs the "
                                               "cluster extra.")] = None,
    results: Annotated[Optional[Path], typer.Option("--results", metavar="FILE", callback=output_file,
                                                    help="Write every run to FILE (JSON Lines) as it ends; if FILE "
                                                    "holds runs of this same sweep, resume it.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every run and the summary as JSON.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", callback=output_file,
                                                 help="Write the plot to PATH.png and PATH.svg.")] = None,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Train tiny models and see path length decide what they learn (L3, L4, L10), and what they recall for their state."""
    from seqlab.learn.sweep import Local, Ray
    from seqlab.studies.learn import LearnConfig, check_learn_config, open_learn_results

    lang = language(lang)
    changes: dict[str, object] = {}
    if tasks is not None:
        changes["tasks"] = _tokens(tasks, "'--tasks'")
    if models is not None:
        changes["models"] = _tokens(models, "'--models'")
    if lengths is not None:
        changes["lengths"] = _lengths(lengths)
    if seeds is not None:
        changes["seeds"] = seeds
    if rates is not None:
        changes["rates"] = _rates(rates)
    if pairs is not None:
        changes["pairs"] = _lengths(pairs, "'--pairs'")
    if widths is not None:
        changes["widths"] = _lengths(widths, "'--widths'")
    config = LearnConfig.quick(**changes) if quick else LearnConfig(**changes)
    try:
        check_learn_config(config)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--lengths'") from None
    if ray is not None and jobs is not None:
        raise typer.BadParameter(worded(N_("give either --jobs or --ray, not both")), param_hint="'--ray'")
    if ray is not None:
        from seqlab.cli.extras import require_extra

        require_extra("learn --ray", "cluster", lang)
        if not ray.strip():
            raise typer.BadParameter(worded(N_("expected auto or a Ray cluster's address, received {ray!r}"), ray=ray),
                                     param_hint="'--ray'")
    backend = Ray(ray) if ray is not None else Local(1 if jobs is None else jobs)
    if plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise typer.BadParameter(worded(N_("plots need matplotlib (pip install matplotlib)")),
                                     param_hint="'--plot'") from None
    store = None
    if results is not None:
        try:
            store = open_learn_results(config, results)
        except SeqlabError as error:
            raise bad_parameter(error, OPTIONS, "'--results'") from None
    from seqlab.learn.sweep import interrupt_now_or_later

    try:
        # Ctrl-C and SIGTERM alike wait for a run being recorded to be written and counted, so the runs the
        # command says it kept are the runs the results file holds.
        with interrupts.raised_by(interrupt_now_or_later):
            result = _run(config, lang, backend, store, quiet=as_json)
    finally:
        if store is not None:
            store.close()
    if result.partial:
        raise interrupts.Interrupted(kept=_kept(result, store))
    with interrupts.held():  # tables and plots written whole, or an interrupt waits for them
        _emit(result, lang, as_json, plot)


def _kept(result, store) -> Message:
    """The one line of an interrupted sweep: how many runs finished, and where they are kept (``--results``)."""
    if store is not None:
        return Message(N_("Interrupted: kept {done} of {planned} runs in {path}; the same command resumes the "
                          "sweep."), done=len(result.runs), planned=result.planned, path=str(store.path))
    return Message(N_("Interrupted after {done} of {planned} runs, which are not kept (--results FILE keeps "
                      "each run as it ends)."), done=len(result.runs), planned=result.planned)


def _run(config, lang: str, backend, store, quiet: bool):
    """Price what is left of the sweep (stderr), then run it under a Rich progress bar on stderr (shown only
    on a terminal, and not under ``--json``): runs done and the time left, estimated from the runs done."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from seqlab.i18n import translator
    from seqlab.learn.sweep import run_key
    from seqlab.render.learn import duration_text, progress_text
    from seqlab.studies.learn import check_learn_config, estimate_learn, run_learn

    tl = translator(lang)
    done = 0
    if store is not None:
        planned = {run_key(run) for run in check_learn_config(config).runs}
        done = len(planned & set(store.done))
        if done:
            typer.echo(tl("Resuming from {path}: {done} of {planned} runs already done.").format(
                path=store.path, done=done, planned=len(planned)), err=True)
    estimate = estimate_learn(config, skip=frozenset() if store is None else frozenset(store.done))
    if estimate.runs:
        typer.echo(tl("Estimated time: at most {time} for {runs} runs (per-step cost measured now, every run to "
                      "its step limit); runs that learn the task stop earlier.").format(
            time=duration_text(estimate.seconds, lang), runs=estimate.runs), err=True)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    # The time left: the runs still to do at the mean pace of the runs done in this session.
    with Progress(*columns, console=console, transient=True, disable=quiet or not console.is_terminal,
                  speed_estimate_period=float("inf")) as bar:
        task = bar.add_task(tl("Training"), total=done + estimate.runs, completed=done)

        def progress(finished: int, total: int, run) -> None:
            description = progress_text(run, lang) if run is not None or finished == total else tl("Training")
            bar.update(task, completed=finished, total=total, description=description)

        try:
            return run_learn(config, progress, backend=backend, results=store)
        except SeqlabError as error:
            raise bad_parameter(error, OPTIONS, "'--ray'") from None


def _emit(result, lang: str, as_json: bool, plot: Optional[Path]) -> None:
    """Print the tables (or JSON) on stdout; write the plot; name the files on stderr."""
    from rich.console import Console

    from seqlab.i18n import translator
    from seqlab.render.learn import learn_json, render_learn, write_plots

    tl = translator(lang)
    if as_json:
        typer.echo(learn_json(result))
    else:
        Console().print(render_learn(result, lang))
    if plot is not None and result.runs:
        for path in write_plots(result, plot, lang):
            typer.echo(tl("Wrote {path}").format(path=path), err=True)
