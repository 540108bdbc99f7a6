"""Rich tables that fit the terminal they are printed on without cutting the names they exist to show.

Shared by the renderers whose first column is a name a reader must see whole (Figure 1's box titles,
the pretrained model's module paths).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Column, Table
from rich.text import Text


class FittedTable(Table):
    """A Rich table laid out for the width it is printed at, so that its no-wrap columns are never cut.

    Where the natural layout is too wide (a pipe or an 80-column terminal), Rich would shrink every
    column, names included (``attention.se…``). Instead, the columns get explicit widths: each no-wrap
    column its longest cell, each other column at least its longest word (so words wrap, never break),
    the room left going to the columns that need least to fit whole. If even that is too wide, the
    edge padding goes, then the columns listed in ``droppable`` (indices; the least needed ones).

    >>> table = FittedTable("Name", "Note")
    >>> table.columns[0].no_wrap = True
    >>> table.add_row("attention.self.query", "a projection, one row at a time")
    >>> import io
    >>> console = Console(width=40, file=io.StringIO(), color_system=None)
    >>> console.print(table)
    >>> "│ attention.self.query │" in console.file.getvalue()
    True
    """

    def __init__(self, *headers: str | Column, droppable: Iterable[int] = (), **options: Any) -> None:
        super().__init__(*headers, **options)
        self.droppable = tuple(droppable)

    @staticmethod
    def _texts(column: Column) -> list[str]:
        return [cell.plain if isinstance(cell, Text) else str(cell) for cell in (column.header, *column._cells)]

    def _bounds(self, column: Column) -> tuple[int, int]:
        """(least, natural) content width of a column: its longest word (whole cell if no-wrap), longest cell."""
        texts = self._texts(column)
        natural = max(cell_len(line) for text in texts for line in (text.splitlines() or [""]))
        if column.no_wrap:
            return natural, natural
        return max(cell_len(word) for text in texts for word in (text.split() or [""])), natural

    def _overhead(self, columns: int, pad_edge: bool) -> int:
        _, right, _, left = self.padding
        borders = (2 if self.box and self.show_edge else 0) + (columns - 1 if self.box else 0)
        return columns * (left + right) - (0 if pad_edge else left + right) + borders

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width if self.width is None else min(self.width, options.max_width)
        everything = list(range(len(self.columns)))
        bounds = [self._bounds(column) for column in self.columns]
        if sum(natural for _, natural in bounds) + self._overhead(len(everything), self.pad_edge) <= width:
            yield from super().__rich_console__(console, options)
            return
        kept = [index for index in everything if index not in self.droppable]
        layouts = [(everything, self.pad_edge), (everything, False), (kept, self.pad_edge), (kept, False)]
        for chosen, pad_edge in layouts:
            room = width - self._overhead(len(chosen), pad_edge) - sum(bounds[i][0] for i in chosen)
            if room >= 0:
                break
        widths = {index: bounds[index][0] for index in chosen}
        for index in sorted(chosen, key=lambda i: bounds[i][1] - bounds[i][0]):  # who needs least fits first
            grant = min(max(room, 0), bounds[index][1] - bounds[index][0])
            widths[index] += grant
            room -= grant
        fitted = copy.copy(self)
        fitted.pad_edge = pad_edge
        fitted.columns = [dataclasses.replace(self.columns[index], width=widths[index], _index=position)
                          for position, index in enumerate(chosen)]
        yield from Table.__rich_console__(fitted, console, options)
