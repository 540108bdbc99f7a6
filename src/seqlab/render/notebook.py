"""Results in a notebook: every result the Python API returns as an HTML table, from the terminal's own rows.

Jupyter shows an object by its ``_repr_html_()``. The results of :func:`seqlab.profile`, :func:`seqlab.compare`,
:func:`seqlab.table1`, :func:`seqlab.table1_modern`, :func:`seqlab.check`, :func:`seqlab.decode` and
:func:`seqlab.run_learn` get theirs from :class:`seqlab.studies.notebook_view.NotebookView`,
which calls :func:`result_html` here, and their ``plot()`` from :func:`result_figure`
(:mod:`seqlab.render.notebook_figures`).

Nothing is formatted twice: :func:`renderable_html` walks the very Rich tables and sentences the terminal
prints (title, headers, rows, caption, each cell's plain text, escaped), so a number reads the same in a
terminal and in a notebook, in either language. ``check`` prints prose, not a table: its notebook table has
one row per claim with the words the terminal prints (:func:`seqlab.render.check.claim_text`).

Results in, HTML out: nothing here measures.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from seqlab.errors import SeqlabError
from seqlab.i18n import N_, check_language, default_language, translator

DOMAIN = "seqlab"

__all__ = ["check_table", "renderable_html", "result_figure", "result_html", "table_html"]

#: Result class name -> "module:function" of its terminal renderable and of its figure, each ``(result, lang)``.
VIEWS: dict[str, tuple[str, str]] = {
    "ProfileResult": ("seqlab.render.table1:profile_table", "seqlab.render.notebook_figures:profile_figure"),
    "CompareResult": ("seqlab.render.compare:render_compare", "seqlab.render.notebook_figures:compare_figure"),
    "Table1Result": ("seqlab.render.table1:render_table1", "seqlab.render.table1:table1_figure"),
    "CheckResult": ("seqlab.render.notebook:check_table", "seqlab.render.notebook_figures:check_figure"),
    "DecodeResult": ("seqlab.render.decode:render_decode", "seqlab.render.decode:decode_figure"),
    "ModelDecodeResult": ("seqlab.render.decode_model:render_model_decode",
                          "seqlab.render.decode_model:model_decode_figure"),
    "ModernResult": ("seqlab.render.table1_modern:render_modern", "seqlab.render.notebook_figures:modern_figure"),
    "LearnResult": ("seqlab.render.learn:render_learn", "seqlab.render.learn:plot_learn"),
}

_CELL = 'style="text-align: left; vertical-align: top"'


def _plain(value: Any) -> str:
    """A cell's text as the terminal shows it: Rich markup in a string is read (and dropped), a Text kept."""
    if isinstance(value, Text):
        return value.plain
    if isinstance(value, str):
        return Text.from_markup(value).plain
    console = Console(width=200, file=None, record=True, color_system=None)
    with console.capture():
        console.print(value)
    return console.export_text().rstrip("\n")


def _escaped(value: Any) -> str:
    return html.escape(_plain(value)).replace("\n", "<br>")


def table_html(table: Table) -> str:
    """One Rich table as an HTML ``<table>``: its title as caption, headers, every row, its caption below.

    >>> table = Table("Measurement", "Value", title="Profile")
    >>> table.add_row("Span: operations in a row", "7")
    >>> "<td style=\\"text-align: left; vertical-align: top\\">Span: operations in a row</td>" in table_html(table)
    True
    >>> table_html(table).count("<tr>")  # the header row and one row
    2
    """
    columns = [list(column.cells) for column in table.columns]
    parts = ['<table class="seqlab">']
    if table.title:
        parts.append(f'<caption style="text-align: left; font-weight: bold">{_escaped(table.title)}</caption>')
    if table.show_header:
        headers = "".join(f"<th {_CELL}>{_escaped(column.header)}</th>" for column in table.columns)
        parts.append(f"<thead><tr>{headers}</tr></thead>")
    parts.append("<tbody>")
    for row in zip(*columns):
        parts.append("<tr>" + "".join(f"<td {_CELL}>{_escaped(cell)}</td>" for cell in row) + "</tr>")
    parts.append("</tbody>")
    if table.caption:
        parts.append(f'<tfoot><tr><td {_CELL} colspan="{len(table.columns)}"><small>{_escaped(table.caption)}'
                     "</small></td></tr></tfoot>")
    parts.append("</table>")
    return "".join(parts)


def renderable_html(renderable: Any) -> str:
    """HTML for what the terminal prints: tables as ``<table>``, sentences as ``<p>``, a Group part by part.

    >>> renderable_html(Group(Text("Two tables follow."), "[bold]bold[/bold] & plain"))
    '<p>Two tables follow.</p><p>bold &amp; plain</p>'
    """
    if isinstance(renderable, Group):
        return "".join(renderable_html(part) for part in renderable.renderables)
    if isinstance(renderable, Table):
        return table_html(renderable)
    if isinstance(renderable, (Text, str)):
        return f"<p>{_escaped(renderable)}</p>"
    return f"<pre>{_escaped(renderable)}</pre>"


def check_table(result: Any, lang: str = "en") -> Group:
    """``seqlab check`` as one Rich table (a row per claim: the terminal's verdict, statement, measurement,
    figure, condition and note) followed by its summary line; the terminal prints the same words as prose.

    Args:
        result: a :class:`seqlab.studies.check.CheckResult`.
        lang: ``"en"`` or ``"es"``.

    Returns:
        A Rich ``Group``: the table, then :func:`seqlab.render.check.summary`.
    """
    from seqlab.render.check import MARKS, claim_text, summary

    _ = translator(lang, DOMAIN)
    table = Table(title=_("The lesson's claims, measured"), title_justify="left")
    for header in (_("Claim"), _("Verdict"), _("Statement"), _("Measured"), _("Figure"), _("Condition"),
                   _("Note")):
        table.add_column(header)
    for check in result.checks:
        text = claim_text(check, lang)
        table.add_row(text.claim, f"{MARKS[text.verdict_key][0]} {text.verdict}", text.statement, text.measured,
                      text.figure, text.condition, text.note or "")
    return Group(table, Text(summary(result, lang)))


def _view(result: Any, which: int) -> Callable[[Any, str], Any]:
    name = type(result).__name__
    if name not in VIEWS:
        raise SeqlabError(N_("no notebook view for {name}; expected one of {views}"), name=name,
                          views=', '.join(sorted(VIEWS)))
    module, function = VIEWS[name][which].split(":")
    return getattr(importlib.import_module(module), function)


def _language(lang: str | None) -> str:
    return default_language() if lang is None else check_language(lang)


def result_html(result: Any, lang: str | None = None) -> str:
    """A result as HTML: the terminal renderer's tables and sentences (:func:`renderable_html`).

    Args:
        result: a result named in :data:`VIEWS` (``ProfileResult``, ``CompareResult``, ``Table1Result``,
            ``ModernResult``, ``CheckResult``, ``DecodeResult``, ``ModelDecodeResult``, ``LearnResult``).
        lang: ``"en"`` or ``"es"``; None: the environment's language (:func:`seqlab.i18n.default_language`).

    Returns:
        An HTML fragment (a ``<div>``) holding one ``<table>`` per terminal table.

    Raises:
        SeqlabError: a result with no view, or an unknown language.
    """
    lang = _language(lang)
    return f'<div class="seqlab-result">{renderable_html(_view(result, 0)(result, lang))}</div>'


def result_figure(result: Any, lang: str | None = None) -> Any:
    """A result's Matplotlib figure (off-screen Agg canvas, no pyplot state): see :mod:`seqlab.render.notebook_figures`.

    Args:
        result: a result named in :data:`VIEWS`.
        lang: ``"en"`` or ``"es"``; None: the environment's language.

    Returns:
        A ``matplotlib.figure.Figure``.

    Raises:
        SeqlabError: a result with no view, an unknown language, or matplotlib missing.
    """
    lang = _language(lang)
    return _view(result, 1)(result, lang)
