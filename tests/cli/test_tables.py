"""Tables fitted to the terminal: headers abbreviated, then columns dropped, least important
first (and said so); cells shown as written, brackets included; names folded, never cut."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from aioinformer._cli.tables import Column, fit_table, piped, print_table, wrap_list

COLUMNS = (
    Column("name", justify="left"),
    Column("count"),
    Column("a rather long header", priority=1, short="long"),
    Column("detail", priority=2),
    Column("trivia", priority=3),
)
ROWS = [["pods[default]", "12", "3", "some detail", "x"], ["configmaps", "4", "0", "-", "y"]]


def render(width: int, columns: tuple[Column, ...] = COLUMNS, rows: list[list[str]] = ROWS) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(fit_table(console, columns, rows, title="the title"))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def header(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if "name" in line)
    return [cell.strip() for cell in line.strip("┃ ").split("┃")]


def test_a_wide_terminal_shows_every_column() -> None:
    text = render(200)
    assert header(text) == ["name", "count", "a rather long header", "detail", "trivia"]
    assert "pods[default]" in text and "not shown" not in text


def test_columns_are_abbreviated_then_dropped_least_important_first() -> None:
    widths = {}
    for width in range(80, 20, -1):
        text = render(width)
        assert all(len(line) <= width for line in text.splitlines()), text
        widths[width] = header(text)
    seen = list(dict.fromkeys(tuple(h) for h in widths.values()))
    assert seen == [
        ("name", "count", "a rather long header", "detail", "trivia"),
        ("name", "count", "long", "detail", "trivia"),
        ("name", "count", "long", "detail"),
        ("name", "count", "long"),
        ("name", "count"),
    ]
    assert "not shown at this width: detail, trivia" in " ".join(render(35).split())


def test_columns_of_priority_0_stay_and_their_cells_fold_whole() -> None:
    text = render(16)
    assert all(len(line) <= 16 for line in text.splitlines()), text
    cells = "".join(
        line.strip("│ ").split("│")[0].strip() for line in text.splitlines() if "│" in line
    )
    assert "pods[default]" in cells and "configmaps" in cells  # folded, no ellipsis
    assert "…" not in text


def test_rich_markup_in_cells_headers_and_titles_is_shown_as_text() -> None:
    columns = (Column("[bold]name[/]", justify="left"), Column("n", priority=1))
    rows = [["[red]x[/] aioinformer[demo]", "1"]]
    text = render(80, columns, rows)
    assert "[bold]name[/]" in text and "[red]x[/] aioinformer[demo]" in text
    console = Console(file=io.StringIO(), width=30, color_system=None)
    console.print(fit_table(console, columns, rows, title="top [default]"))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "top [default]" in text and "not shown at this width: n" in text


def test_wrap_list_wraps_under_its_label() -> None:
    items = [f"kind{i}={i * 7}" for i in range(12)]
    lines = wrap_list("faults by kind", items, 50)
    assert all(len(line) <= 50 for line in lines) and len(lines) > 1
    assert lines[0].startswith("faults by kind: kind0=0 kind1=7 ")
    assert all(line.startswith("  kind") for line in lines[1:])
    assert " ".join(" ".join(lines).split()) == "faults by kind: " + " ".join(items)
    assert wrap_list("none", [], 50) == ["none: -"]


def test_piped_without_a_width_a_table_is_printed_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Standard output not a terminal (pytest's capture) and no ``$COLUMNS``: every column,
    at the table's own width (wider than rich's 80); the console's width is left as it was.
    With ``$COLUMNS``, or on a console of its own file, the table fits the width."""
    rows = [[f"name-{'x' * 40}", "12", "3", "detail " * 6, "trivia " * 4]]
    monkeypatch.delenv("COLUMNS", raising=False)
    console = Console(color_system=None)
    assert piped(console) and console.width == 80
    print_table(console, fit_table(console, COLUMNS, rows))
    text = capsys.readouterr().out
    assert header(text) == ["name", "count", "a rather long header", "detail", "trivia"]
    assert max(len(line) for line in text.splitlines()) > 80 and console.width == 80
    monkeypatch.setenv("COLUMNS", "80")
    console = Console(color_system=None)
    assert not piped(console)
    print_table(console, fit_table(console, COLUMNS, rows))
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80 and "not shown" in text
    monkeypatch.delenv("COLUMNS")
    assert not piped(Console(file=io.StringIO(), width=80))
