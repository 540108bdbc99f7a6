"""Rich tables that fit the terminal they are printed on without cutting the names they exist to show.

Shared by every renderer whose first column is a name a reader must see whole (Table 1's layer types,
compare's measurements, bench's lengths, Figure 1's box titles, the pretrained model's module paths):
at 80 columns the names wrap between words or the table is stacked, never cut (issue 16, item 6), and no
line of a cell wraps to more than two lines: the columns are sized for it, or long shared notes become keys
with a legend, or the table is stacked in parts, or shown as one record per row (issue 37, item 4).
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
    """A Rich table laid out for the width it is printed at, so that no cell is cut and no line of a cell
    wraps to more than :attr:`MOST_LINES` (two) lines (issue 16, item 6; issue 37, item 4).

    Where the natural layout fits, it is Rich's. Otherwise, in this order, the first that fits is printed:

    1. one box, each column at the least width where no line of its cells (heading included) takes more
       than two lines (each line of a cell, its text between newlines, counted on its own), the room left
       going first to the name column (the first), then to the columns that need least to fit whole; the
       edge padding goes, then the columns listed in ``droppable`` (indices; the least needed ones), if
       that makes it fit;
    2. where columns are listed in ``notes`` (indices; long texts shared by rows, such as who counted),
       their cells as keys (a, b, …) with the texts in a legend under the table;
    3. stacked: several tables one under the other, each with the first (name) column and as many of the
       others as fit, in their order, when every part but the last holds at least two of them (so a part
       still compares);
    4. records: one block per row, the row's name and under it each other cell after its column's heading,
       every line with the whole width.

    Nothing is cut with an ellipsis: a no-wrap column keeps its longest cell, other columns at least their
    longest word.

    >>> table = FittedTable("Name", "Note")
    >>> table.columns[0].no_wrap = True
    >>> table.add_row("attention.self.query", "a projection, one row at a time")
    >>> import io
    >>> console = Console(width=44, file=io.StringIO(), color_system=None)
    >>> console.print(table)
    >>> "│ attention.self.query │ a projection, one │" in console.file.getvalue()
    True
    """

    def __init__(self, *headers: str | Column, droppable: Iterable[int] = (), notes: Iterable[int] = (),
                 **options: Any) -> None:
        super().__init__(*headers, **options)
        self.droppable = tuple(droppable)
        self.notes = tuple(notes)

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

    def _layout(self, width: int, bounds: list[tuple[int, int]]) -> tuple[list[int], bool, int]:
        """(columns kept, edge padding, room left over their least widths) of the first layout that fits."""
        everything = list(range(len(self.columns)))
        kept = [index for index in everything if index not in self.droppable]
        layouts = [(everything, self.pad_edge), (everything, False), (kept, self.pad_edge), (kept, False)]
        for chosen, pad_edge in layouts:
            room = width - self._overhead(len(chosen), pad_edge) - sum(bounds[i][0] for i in chosen)
            if room >= 0:
                break
        return chosen, pad_edge, room

    def _chunks(self, width: int, bounds: list[tuple[int, int]]) -> list[list[int]]:
        """The other columns in groups that each fit beside the first (name) column, in their order."""
        chunks: list[list[int]] = [[]]
        for index in range(1, len(self.columns)):
            trial = [0, *chunks[-1], index]
            if chunks[-1] and width - self._overhead(len(trial), False) - sum(bounds[i][0] for i in trial) < 0:
                chunks.append([])
            chunks[-1].append(index)
        return chunks

    def _part(self, columns: list[int], first: bool, last: bool) -> FittedTable:
        """This table with only ``columns`` (the title on the first part, the caption on the last)."""
        part = copy.copy(self)
        part.columns = [dataclasses.replace(self.columns[index], _index=position)
                        for position, index in enumerate(columns)]
        part.title = self.title if first else None
        part.caption = self.caption if last else None
        part.droppable = ()
        return part

    #: The most lines a cell's line may wrap to at 80 columns before the table is stacked (issue 37, item 4).
    MOST_LINES = 2

    @staticmethod
    def paragraph_lines(console: Console, cell: Any, width: int, column: Column) -> int:
        """The most physical lines any one line of ``cell`` (a paragraph: its text between newlines) takes at
        content ``width`` in ``column``: a cell written on two lines that each fit reads as 1, not 2.
        Renderables other than text count their rendered lines."""
        if isinstance(cell, str):
            cell = console.render_str(cell, highlight=False)
        if not isinstance(cell, Text):
            options = console.options.update(width=max(width, 1), no_wrap=column.no_wrap, overflow=column.overflow)
            return len(console.render_lines(cell, options, pad=False))
        return max((len(part.wrap(console, max(width, 1), justify=column.justify, overflow=column.overflow,
                                  no_wrap=column.no_wrap)) for part in cell.split("\n")), default=1)

    def _width_for(self, console: Console, column: Column, bounds: tuple[int, int], most: int) -> int:
        """The least content width in ``bounds`` at which no line of the column's cells (header included)
        wraps to more than ``most`` lines (the natural width, where every line fits whole, at worst)."""
        least, natural = bounds
        if column.no_wrap:
            return natural
        cells = (column.header, *column._cells)
        low, high = least, natural
        while low < high:
            middle = (low + high) // 2
            if all(self.paragraph_lines(console, cell, middle, column) <= most for cell in cells):
                high = middle
            else:
                low = middle + 1
        return low

    def _keyed(self, console: Console) -> tuple[FittedTable, list[Any]]:
        """This table with each cell of the ``notes`` columns replaced by a key (a, b, …; one key per distinct
        text, dashes and blanks kept), and the legend that gives each key's text, one line per key."""
        keys: dict[str, str] = {}
        keyed = copy.copy(self)
        keyed.notes = ()
        keyed.caption = None
        keyed.columns = []
        for index, column in enumerate(self.columns):
            if index in self.notes:
                cells = []
                for cell in column._cells:
                    text = cell.plain if isinstance(cell, Text) else str(cell)
                    if text.strip() in ("", "—"):
                        cells.append(cell)
                        continue
                    key = keys.setdefault(text, _key(len(keys)))
                    cells.append(key)
                column = dataclasses.replace(column, _cells=cells, justify="center")
            keyed.columns.append(column)
        legend: list[Any] = [Table.grid(padding=(0, 2, 0, 0))]
        legend[0].add_column(style="bold", no_wrap=True)
        legend[0].add_column()
        for text, key in keys.items():
            legend[0].add_row(key, text)
        if self.caption:
            legend.append(self.caption)
        return keyed, legend

    def _records(self, console: Console) -> Table:
        """This table as one column of records: each row's name, then each other cell on its own line, indented,
        after its column's heading (the heading is left out when there is one other column: a name and its
        value). Every line then has the whole width, so no line of a cell wraps to more than two lines unless it
        is over twice the width long."""
        def text(cell: Any) -> Text:
            return console.render_str(cell, highlight=False) if isinstance(cell, str) else \
                cell if isinstance(cell, Text) else Text(str(cell))

        records = Table(title=self.title, caption=self.caption, title_justify=self.title_justify,
                        caption_justify=self.caption_justify, title_style=self.title_style,
                        caption_style=self.caption_style, show_header=False, show_lines=len(self.columns) > 2, box=self.box,
                        pad_edge=False, expand=False)
        records.add_column(overflow="fold")
        names = self.columns[0]._cells
        for row, name in enumerate(names):
            lines = [text(name).copy()]
            lines[0].stylize("bold")
            for column in self.columns[1:]:
                value = text(column._cells[row])
                if len(self.columns) > 2:
                    heading = " ".join(text(column.header).plain.split())
                    value = Text.assemble(f"{heading}: ", value)
                lines += [Text.assemble("  ", part) for part in value.split("\n")]
            records.add_row(Text("\n").join(lines))
        return records

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width if self.width is None else min(self.width, options.max_width)
        natural_bounds = [self._bounds(column) for column in self.columns]
        if sum(natural for _, natural in natural_bounds) + self._overhead(len(self.columns), self.pad_edge) <= width:
            yield from super().__rich_console__(console, options)
            return
        # first choice: every column at the width where no cell wraps to more than MOST_LINES lines
        bounds = [(self._width_for(console, column, bound, self.MOST_LINES), bound[1])
                  for column, bound in zip(self.columns, natural_bounds)]
        chosen, pad_edge, room = self._layout(width, bounds)
        if room < 0 and self.notes:  # then the note columns as keys, their texts in a legend below
            keyed, legend = self._keyed(console)
            yield from keyed.__rich_console__(console, options)
            for part in legend:
                yield from console.render(part, options)
            return
        if room < 0 and len(self.columns) > 2:  # stacked: the name column and as many others as fit in each part
            chunks = self._chunks(width, bounds)
            if len(chunks) > 1 and all(len(chunk) > 1 for chunk in chunks[:-1]):  # parts that still compare
                for number, chunk in enumerate(chunks):
                    yield from self._part([0, *chunk], number == 0, number == len(chunks) - 1) \
                        .__rich_console__(console, options)
                return
        if room < 0:  # too wide even stacked: one record per row, each value under its row's name
            yield from Table.__rich_console__(self._records(console), console, options)
            return
        widths = {index: bounds[index][0] for index in chosen}
        # the name column first (a name on one line reads best), then who needs least to fit whole
        for index in sorted(chosen, key=lambda i: (i != 0, bounds[i][1] - bounds[i][0])):
            grant = min(max(room, 0), bounds[index][1] - bounds[index][0])
            widths[index] += grant
            room -= grant
        fitted = copy.copy(self)
        fitted.pad_edge = pad_edge
        fitted.columns = [dataclasses.replace(self.columns[index], width=widths[index], _index=position)
                          for position, index in enumerate(chosen)]
        yield from Table.__rich_console__(fitted, console, options)


def _key(number: int) -> str:
    """The ``number``-th key of a legend: a, b, …, z, aa, ab, …

    >>> [_key(0), _key(25), _key(26)]
    ['a', 'z', 'aa']
    """
    letters = ""
    number += 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters
