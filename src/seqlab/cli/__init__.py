"""The ``seqlab`` command line: parse, call a study, render. Nothing here measures.

One module per command registers itself on :data:`app`. Bad usage exits with code 2 and one
``Error: Invalid value for '--option': …`` line (click's convention, with a ``--help`` hint).
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="seqlab",
    help="Measure what recurrence costs and what attention buys, on your own text and hardware.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def root() -> None:
    """Measure what recurrence costs and what attention buys, on your own text and hardware."""


def main() -> None:
    """Console-script entry point (``seqlab``)."""
    app()


from seqlab.cli import compare as _compare  # noqa: E402,F401  (registers its command)
from seqlab.cli import table1 as _table1  # noqa: E402,F401  (registers its command)
from seqlab.cli import profile as _profile  # noqa: E402,F401  (registers its command)
from seqlab.cli import bench as _bench  # noqa: E402,F401
from seqlab.cli import learn as _learn  # noqa: E402,F401
from seqlab.cli import quiz as _quiz  # noqa: E402,F401
from seqlab.cli import model as _model  # noqa: E402,F401
from seqlab.cli import figure as _figure  # noqa: E402,F401
from seqlab.cli import check as _check  # noqa: E402,F401
from seqlab.cli import serve as _serve  # noqa: E402,F401
from seqlab.cli import report as _report  # noqa: E402,F401
