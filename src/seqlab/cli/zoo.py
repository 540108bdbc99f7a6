"""``seqlab zoo``: Table 1 and the decode columns of every text model type of the installed ``transformers``.

Parse, call :func:`seqlab.studies.zoo.run_zoo`, render (:mod:`seqlab.render.zoo`). ``--families`` and ``--kinds``
filter; ``--jobs N`` runs N local worker processes, ``--ray auto|ADDRESS`` Ray tasks; ``--results FILE`` keeps each
finished family in FILE and a run given the same FILE measures only the families not in it; ``--config PATH`` (a
config.json or a checkpoint folder) measures the user's model at its real size beside the catalogue; ``--json``
prints the dataset. A Rich progress bar on stderr names the family being measured (a terminal only). Needs the
``model`` extra (``transformers``): a base install is refused in one line naming it. Every refusal is one
``Error:`` line, exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from seqlab.cli.options import LANG_HELP, bad_parameter, language, output_file, worded
from seqlab.errors import SeqlabError
from seqlab.i18n import N_
from seqlab.learn.sweep import JOBS_PER_CPU, max_jobs
from seqlab.cli.options import integer_at_least

OPTIONS = {"families": "'--families'", "kinds": "'--kinds'", "config": "'--config'", "results": "'--results'",
           "jobs": "'--jobs'", "ray": "'--ray'"}
#: Exit code of a run interrupted by Ctrl-C (the shell's 128 + SIGINT), as ``seqlab learn``'s.
INTERRUPTED = 130


def _names(text: str, option: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise typer.BadParameter(worded(N_("expected comma-separated names, received {text!r}"), text=text),
                                 param_hint=option)
    return names


def zoo(
    families: Annotated[Optional[str], typer.Option("--families", help="Comma-separated model types of the "
                                                    "installed transformers (default: every causal- and "
                                                    "masked-LM model type).")] = None,
    kinds: Annotated[Optional[str], typer.Option("--kinds", help="Comma-separated kinds to show: full, windowed, "
                                                 "linear, hybrid, moe, encoder (a kind is measured: every family "
                                                 "asked for is measured first).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", metavar="PATH", help="A config.json or a local "
                                                  "checkpoint folder: its model measured through the same "
                                                  "pipeline, at its real size, beside the catalogue.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", parser=integer_at_least(1, max_jobs()), metavar="INTEGER",
                                                help=f"Measure N families at a time in local worker processes "
                                                f"(default 1: in this process; at most {JOBS_PER_CPU} per CPU). "
                                                "The results do not depend on it.")] = None,
    ray: Annotated[Optional[str], typer.Option("--ray", metavar="auto|ADDRESS",
                                               help="Measure the families as Ray tasks on an existing Ray cluster: "
                                               "auto or its address. Needs the cluster extra.")] = None,
    results: Annotated[Optional[Path], typer.Option("--results", metavar="FILE", callback=output_file,
                                                    help="Write every family's row to FILE (JSON Lines) as it "
                                                    "ends; if FILE holds rows of this same zoo, resume.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the dataset as JSON.")] = False,
    lang: Annotated[Optional[str], typer.Option("--lang", help=LANG_HELP)] = None,
) -> None:
    """Table 1 and the decode columns of every text model type of the installed transformers, measured."""
    lang = language(lang)
    try:
        import transformers  # noqa: F401
    except ModuleNotFoundError:
        from seqlab.cli.extras import missing_extra_line

        typer.echo(missing_extra_line("zoo", "model", ("transformers",), lang), err=True)
        raise typer.Exit(2) from None
    from seqlab.learn.sweep import Local, Ray
    from seqlab.studies.zoo import ZooConfig, check_zoo_config, open_zoo_results

    if ray is not None and jobs is not None:
        raise typer.BadParameter(worded(N_("give either --jobs or --ray, not both")), param_hint="'--ray'")
    if ray is not None:
        from seqlab.cli.extras import require_extra

        require_extra("zoo --ray", "cluster", lang)
    zoo_config = ZooConfig(families=None if families is None else _names(families, "'--families'"),
                           kinds=None if kinds is None else _names(kinds, "'--kinds'"), config=config)
    try:
        check_zoo_config(zoo_config)
    except SeqlabError as error:
        raise bad_parameter(error, OPTIONS, "'--families'") from None
    store = None
    if results is not None:
        try:
            store = open_zoo_results(results)
        except SeqlabError as error:
            raise bad_parameter(error, OPTIONS, "'--results'") from None
    backend = Ray(ray) if ray is not None else Local(1 if jobs is None else jobs)
    try:
        result = _run(zoo_config, lang, backend, store, quiet=as_json)
    finally:
        if store is not None:
            store.close()
    from seqlab.cli.output import show_result

    show_result(result, lang, as_json, "seqlab.render.zoo:zoo_table")
    if result.partial:
        raise typer.Exit(INTERRUPTED)


def _run(config, lang: str, backend, store, quiet: bool):
    """The sweep under a Rich progress bar on stderr naming the family being measured (a terminal only, not under
    ``--json``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from seqlab.i18n import translator
    from seqlab.studies.zoo import run_zoo

    tl = translator(lang)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task(tl("Measuring"), total=None)

        def progress(done: int, total: int, family: str | None) -> None:
            description = tl("Measuring {family}").format(family=family) if family else tl("Measuring")
            bar.update(task, completed=done, total=total, description=description)

        try:
            return run_zoo(config, progress, backend=backend, results=store)
        except SeqlabError as error:
            raise bad_parameter(error, OPTIONS, "'--ray'") from None
