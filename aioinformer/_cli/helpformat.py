"""How the command line's help reads: plain text for a terminal, with every default shown.

``add_command`` registers a subcommand whose description and epilog are plain text
written for the terminal (not docstrings: reStructuredText roles and backquotes mean
nothing there) and whose help is laid out by :class:`HelpFormatter`.
"""

from __future__ import annotations

import argparse
import copy
import re
import textwrap
from typing import Any

__all__ = ["PROG", "HelpFormatter", "add_command"]

PROG = "python -m aioinformer"
"""The program's name in usage lines and at the start of every error line."""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with two changes.

    * Descriptions and epilogs keep their layout: paragraphs (separated by blank lines) are
      wrapped to the terminal's width, and indented lines (examples, lists) are printed as
      written.
    * Every option that takes a value and has a default ends its help with
      ``(default: VALUE)``, unless the help shows it already with ``%(default)s``. Flags
      (options without a value) show none: their default is to be absent.
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                out.append(
                    textwrap.fill(
                        " ".join(prose), width, initial_indent=indent, subsequent_indent=indent
                    )
                )
                prose.clear()

        for line in textwrap.dedent(text).strip("\n").splitlines():
            if not line.strip():
                flush()
                out.append("")
            elif line[0].isspace():
                flush()
                out.append(indent + line.rstrip())
            else:
                prose.append(line.strip())
        flush()
        return "\n".join(out)

    def add_argument(self, action: argparse.Action) -> None:
        if action.help is None and _has_default(action):
            action = copy.copy(action)  # argparse prints no help line without a help text
            action.help = "(default: %(default)s)"
        super().add_argument(action)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "%(default)" in text or not _has_default(action):
            return action.help
        return f"{text} (default: %(default)s)"


def _has_default(action: argparse.Action) -> bool:
    """Whether ``action``'s help should show a default: it has one, and takes a value
    (a flag's default is to be absent; a required positional has none)."""
    if action.default in (None, argparse.SUPPRESS) or action.nargs == 0:
        return False
    return bool(action.option_strings) or action.nargs in ("?", "*")


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    help: str,
    description: str,
    epilog: str | None = None,
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``: ``help`` is its line in the command list,
    ``description`` and ``epilog`` (e.g. examples) plain text laid out by
    :class:`HelpFormatter`."""
    return sub.add_parser(
        name,
        help=help,
        description=_plain(description),
        epilog=_plain(epilog) if epilog else None,
        formatter_class=HelpFormatter,
        **kwargs,
    )


def _plain(text: str) -> str:
    """``text`` without the indentation of a triple-quoted literal."""
    return re.sub(r"[ \t]+\n", "\n", textwrap.dedent(text)).strip("\n")
