"""Tables of the command line that fit the terminal: columns chosen by priority.

A table is described by its :class:`Column` s and its rows of plain strings (never rich
markup: a cell shows its text as it is, brackets included). :func:`fit_table` builds the
widest table that fits ``width``: when the whole table is too wide it first abbreviates
the headers of the least important columns, then drops them, least important first, and
says in the caption which ones it left out. Columns of priority 0 always stay (their
headers abbreviated last); if they alone are too wide, their cells wrap onto more lines (a
name is folded, never cut short with an ellipsis).

A command's output that goes to a pipe or a file, with no width given (``$COLUMNS``), has
no width to fit: there every column is shown, and :func:`print_table` prints the table
whole, however wide (what reads it, ``less -S``, a file, a script, has no terminal to
overflow; rich's default of 80 columns would drop the columns that a log most needs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

__all__ = ["UNLIMITED", "Column", "fit_table", "piped", "print_table", "wrap_list"]

UNLIMITED = 1_000_000
"""The width of a piped output: no limit."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table."""

    header: str
    """Its header when there is room."""
    priority: int = 0
    """0: always shown; otherwise the higher the number, the sooner it goes when the
    terminal is narrow."""
    short: str = ""
    """A shorter header, tried before the column is dropped ("" keeps ``header``)."""
    justify: Literal["left", "right"] = "right"


def fit_table(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    *,
    title: str | None = None,
    width: int | None = None,
) -> Table:
    """The table of ``rows`` (one cell per column: a plain string, or a rich ``Text`` to
    style it) with the columns that fit ``width`` (default: the console's, unlimited when
    :func:`piped`), as the module docstring describes."""
    from rich.measure import Measurement

    if width is None:
        width = UNLIMITED if piped(console) else console.width
    by_priority = sorted(
        (i for i, c in enumerate(columns) if c.priority > 0),
        key=lambda i: (-columns[i].priority, -i),
    )
    short: set[int] = set()
    dropped: list[int] = []
    steps = [("short", i) for i in by_priority if columns[i].short]
    steps += [("drop", i) for i in by_priority]
    steps += [("short", i) for i, c in enumerate(columns) if c.priority == 0 and c.short]
    unbounded = console.options.update_width(1_000_000)
    table = _table(columns, rows, title, short, dropped)
    for step, i in steps:
        if Measurement.get(console, unbounded, table).maximum <= width:
            break
        if step == "short":
            short.add(i)
        else:
            dropped.append(i)
        table = _table(columns, rows, title, short, dropped)
    return table


def piped(console: Console) -> bool:
    """Whether ``console`` writes the process's standard output to a pipe or a file (not
    a terminal) with no width given (``$COLUMNS`` unset): its tables have no width to fit."""
    return (
        console.file in (sys.stdout, sys.__stdout__)
        and not console.is_terminal
        and not os.environ.get("COLUMNS")
    )


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` on ``console``; when :func:`piped`, whole, at its own width even if
    that is wider than the console's (the console's width is left as it was)."""
    from rich.measure import Measurement

    if not piped(console):
        console.print(table)
        return
    needed = Measurement.get(console, console.options.update_width(UNLIMITED), table).maximum
    width = console.width
    console.width = max(width, needed)
    try:
        console.print(table)
    finally:
        console.width = width


def _table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    title: str | None,
    short: set[int],
    dropped: list[int],
) -> Table:
    from rich.table import Table
    from rich.text import Text

    caption = None
    if dropped:
        names = ", ".join(columns[i].header for i in sorted(dropped))
        caption = Text(f"not shown at this width: {names}")
    table = Table(
        title=Text(title) if title is not None else None,
        caption=caption,
        title_justify="left",
        caption_justify="left",
    )
    keep = [i for i in range(len(columns)) if i not in dropped]
    for i in keep:
        col = columns[i]
        header = col.short if i in short and col.short else col.header
        table.add_column(Text(header), justify=col.justify, overflow="fold")
    for row in rows:
        cells = [row[i] for i in keep]
        table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))
    return table


def wrap_list(label: str, items: Sequence[str], width: int) -> list[str]:
    """``label: a b c`` wrapped to ``width`` (continuation lines indented by two spaces),
    as plain lines; ``label: -`` when there are none."""
    import textwrap

    return textwrap.wrap(
        " ".join(items) or "-",
        width,
        initial_indent=f"{label}: ",
        subsequent_indent="  ",
        break_on_hyphens=False,
    )
