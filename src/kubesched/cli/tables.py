"""The console every command prints its tables on, and tables whose cells are plain text.

Width: on a terminal, the terminal's (long names are shortened where they stay distinct, see
:meth:`Table.add_fitted_rows`); with ``wide`` (``-o wide``, as kubectl's) or when
standard output is a pipe or a file, rows are as long as their cells: rich's own default there is
80 columns, which cut EKS node names such as ``ip-10-0-1-17.us-west-2.compute.internal`` to
``ip-10-0-1-1…`` for ``grep`` and ``less -S`` alike. ``COLUMNS``, when set, is the width of piped
output (not of ``-o wide``).

Cells: object names and messages such as "[{PriorityClass In [online]}]" must not be read as rich
markup.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from kubesched.report.svg import shorten_distinct

#: the width of a console whose rows nothing cuts: wider than any row a table of names makes
UNLIMITED_WIDTH = 100_000


def make_console(*, wide: bool = False) -> Console:
    """The console for a command's standard output (see the module's docstring for its width)."""
    piped = not sys.stdout.isatty() and not (os.environ.get("COLUMNS") or "").isdigit()
    return Console(highlight=False, width=UNLIMITED_WIDTH if wide or piped else None)


class Table(RichTable):
    def __init__(self, *headers: Any, title: str | None = None, **kwargs: Any) -> None:
        """A title runs past a narrow table on one line rather than wrapping within its width."""
        heading = None if title is None else Text(title, no_wrap=True, overflow="ignore")
        super().__init__(*headers, title=heading, **kwargs)

    def add_column(self, *args: Any, overflow: Any = "fold", **kwargs: Any) -> None:
        """A column whose cells wrap what does not fit onto more lines (``fold``), never cut it (rich's
        default cuts it with an ellipsis: two node names alike at their start would read the same)."""
        super().add_column(*args, overflow=overflow, **kwargs)

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*(escape(r) if isinstance(r, str) else r for r in renderables), **kwargs)

    def add_fitted_rows(self, console: Console, rows: list[list[str]], names: tuple[int, ...] = (0,),
                        least: int = 16) -> None:
        """Add ``rows`` so that the names in the columns ``names`` (pods, nodes) read whole, or shortened
        where they stay distinct (:func:`shorten_distinct`) when the table would not fit ``console``
        otherwise: the other columns (numbers, phases) wrap first, down to their longest word; then
        each name column gives up width in proportion to what it has above ``least`` characters.
        A name that must stay whole to stay distinct, or a console too narrow for even that, folds
        (see :meth:`add_column`)."""
        def words(i: int) -> list[str]:
            return str(self.columns[i].header).split() + [word for row in rows for word in row[i].split()]

        others = sum(max(map(len, words(i)), default=0) for i in range(len(self.columns)) if i not in names)
        room = console.width - 3 * len(self.columns) - 1 - others  # each column: two spaces and a rule
        widths = {i: max([len(str(self.columns[i].header))] + [len(row[i]) for row in rows]) for i in names}
        excess = sum(widths.values()) - room
        spare = {i: max(0, width - least) for i, width in widths.items()}
        total_spare = sum(spare.values())
        for i in names:
            if excess > 0 and total_spare:
                limit = max(least, widths[i] - -(-excess * spare[i] // total_spare))  # rounded up
                for row, text in zip(rows, shorten_distinct([row[i] for row in rows], limit), strict=True):
                    row[i] = text
                widths[i] = max([len(str(self.columns[i].header))] + [len(row[i]) for row in rows])
        if sum(widths.values()) <= room:  # rich would narrow the widest columns first: the names keep theirs
            for i in names:
                self.columns[i].width = widths[i]
        for row in rows:
            self.add_row(*row)


def _width(header: str, cells: list[str]) -> int:
    return max([len(header), *(len(c) for c in cells)])


def print_split(console: Console, keys: list[tuple[str, list[str]]], columns: list[tuple[str, list[str]]],
                title: str | None = None) -> None:
    """Print a table of ``keys`` (left-aligned columns naming each row) and ``columns`` (right-aligned
    values, headers and cells whole): as one table when it fits ``console``, else as several, each
    with the keys and as many of the columns as fit beside them, so that no header or cell is cut
    (a table too wide for ``console`` would have rich fold every cell into pieces). Only a key
    wider than the console itself folds."""
    key_room = sum(_width(h, cells) + 3 for h, cells in keys) + 1  # each column: two spaces and a rule
    groups: list[list[int]] = []
    used = console.width
    for i, (header, cells) in enumerate(columns):
        width = _width(header, cells) + 3
        if not groups or used + width > console.width:
            groups.append([])
            used = key_room
        groups[-1].append(i)
        used += width
    for n, group in enumerate(groups or [[]]):
        table = Table(title=title if n == 0 else None, title_justify="left")
        for header, cells in keys:
            table.add_column(header, min_width=_width(header, cells))
        for i in group:
            table.add_column(columns[i][0], justify="right", min_width=_width(*columns[i]))
        for r in range(len(keys[0][1])):
            table.add_row(*(cells[r] for _, cells in keys), *(columns[i][1][r] for i in group))
        console.print(table)
