"""The help formatter: paragraphs wrapped, indented lines kept as written, and defaults shown
for every option that takes a value (not for flags, not twice)."""

from __future__ import annotations

import argparse

import pytest

from aioinformer._cli.helpformat import add_command


def command(width: int = 60) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prog")
    sub = parser.add_subparsers(dest="command")
    p = add_command(
        sub,
        "cmd",
        help="a command",
        description="""
            First paragraph, long enough that it has to be wrapped onto more than one line
            at sixty columns.

            examples:
              prog cmd --port 0 --a-long-option-that-stays-on-one-line value value value
            """,
        epilog="see also: prog other",
    )
    p.add_argument("--port", type=int, default=8001, help="port to bind")
    p.add_argument("--host", default="127.0.0.1", help="bind here (default: %(default)s)")
    p.add_argument("--delay", type=float, default=0.5)
    p.add_argument("--verbose", action="store_true", help="say more")
    p.add_argument("--name", help="a name (default: the target's)")
    p.add_argument("maybe", nargs="?", default="x", help="optional positional")
    p.add_argument("target", help="required positional")
    return p


@pytest.fixture
def text(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "60")
    return command().format_help()


def test_paragraphs_wrap_and_indented_lines_stay(text: str) -> None:
    lines = text.splitlines()
    start = lines.index("First paragraph, long enough that it has to be wrapped")
    assert lines[start : start + 5] == [
        "First paragraph, long enough that it has to be wrapped",  # argparse keeps 2 spare
        "onto more than one line at sixty columns.",
        "",
        "examples:",
        "  prog cmd --port 0 --a-long-option-that-stays-on-one-line value value value",
    ]
    assert lines[-1] == "see also: prog other"


def test_every_default_of_an_option_with_a_value_is_shown_once(text: str) -> None:
    flat = " ".join(text.split())
    assert "port to bind (default: 8001)" in flat
    assert "bind here (default: 127.0.0.1)" in flat and flat.count("127.0.0.1") == 1
    assert "--delay DELAY (default: 0.5)" in flat  # no help text: the default alone
    assert "optional positional (default: x)" in flat
    assert "say more" in flat and "False" not in flat  # a flag shows no default
    assert "a name (default: the target's)" in flat  # None: the help says it in words
    assert "required positional" in flat and "(default: None)" not in flat
