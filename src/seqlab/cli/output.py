"""What every command does with its result: the plot it was asked for, then the result on stdout as the JSON
document (``--json``) or as its table in the run's language.

A command names its renderers as ``"module:function"`` strings, imported only when they run (Rich, Matplotlib and
the render modules stay out of ``seqlab --help``): the table as ``function(result, lang, *extra)``, the plot as
``function(result, path, lang)``. A plot that cannot be written is a usage error on ``--plot`` (exit 2). An
interrupt that comes while they are written waits until they are whole (:func:`seqlab.cli.interrupts.held`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import typer

from seqlab.cli import interrupts
from seqlab.cli.options import worded
from seqlab.i18n import N_

__all__ = ["show_result"]


def _named(where: str) -> Callable:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def show_result(result: object, lang: str, as_json: bool, table: str, *extra: object, plot: str | None = None,
                plot_path: Path | None = None) -> None:
    """Write the plot when ``plot_path`` is given, then print ``result`` as JSON or as its table.

    Args:
        result: a study's frozen result. lang: the output language. as_json: print the JSON document instead of
            the table (:func:`seqlab.render.json_output.to_json`).
        table: ``"module:function"`` of the renderer, called as ``function(result, lang, *extra)``.
        plot: ``"module:function"`` of the plot writer, called as ``function(result, plot_path, lang)``.
        plot_path: where ``--plot`` asked for the figure, or None.

    Raises:
        typer.BadParameter: the plot cannot be written (parameter ``--plot``, exit 2).
    """
    with interrupts.held():  # the plot and the output written whole, or an interrupt waits for them
        if plot is not None and plot_path is not None:
            try:
                _named(plot)(result, plot_path, lang)
            except OSError as error:
                raise typer.BadParameter(worded(N_("cannot write {plot_path!r}: {error}"), plot_path=str(plot_path),
                                                error=error), param_hint="'--plot'") from None
        if as_json:
            from seqlab.render.json_output import to_json

            typer.echo(to_json(result))
            return
        from rich.console import Console

        Console().print(_named(table)(result, lang, *extra))
