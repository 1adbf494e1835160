"""Rich tables whose cells are plain text: object names and messages such as "[{PriorityClass In
[online]}]" must not be read as rich markup."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table as RichTable


class Table(RichTable):
    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*(escape(r) if isinstance(r, str) else r for r in renderables), **kwargs)
