"""A progress bar for the commands that can take more than a few seconds, on a terminal only.

The studies accept an optional ``progress(done, total, what)`` callback (``run_compare``,
``run_table1``, ``measure_figure``, like ``run_bench``, ``run_learn`` and ``run_check``); this module
gives them one that drives a Rich progress bar on standard error. Where standard error is not a
terminal (a pipe, a file, a test's runner) the bar is disabled and nothing at all is written, so the
output a script or a test reads is the same with or without it. The bar is transient: it leaves no
line behind when the work is done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from seqlab.cli.language import catalogue, current_language

DOMAIN = "cli"

#: What a study calls as it goes: steps done, steps in all, and what it is working on (not shown).
Progress = Callable[[int, int, str], None]


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """A callback for a study's ``progress`` parameter, drawing "Measuring ━━━━ 3/7 0:00:04" on a terminal.

    >>> with progress_bar() as step:  # not a terminal here: the bar stays off and prints nothing
    ...     step(1, 2, "attention")
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    _ = catalogue(current_language(), DOMAIN).gettext
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(_("Measuring"), total=None)
        yield lambda done, total, what: bar.update(task, completed=done, total=total)
