"""The command line's top level, as a user sees it: every command's help (discovered from the
parser, so a new command is covered) is plain text that fits 80 columns and shows its
defaults; ``--version``; help works without the optional dependencies (a missing extra
is named in one line: ``test_exit_status``)."""

from __future__ import annotations

import argparse
import importlib.metadata
import re

import pytest

import aioinformer
from aioinformer._cli.main import build_parser
from tests.support import run_cli, run_python


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands ``parser`` has, by name."""
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = commands(build_parser())

RST = re.compile(
    r"``"  # inline literals
    r"|:[a-z]+(?::[a-z]+)?:`"  # roles: :func:`...`, :class:`...`, :py:meth:`...`
    r"|`~"  # a role's ~target
    r"|::$",  # a literal block marker
    re.MULTILINE,
)


def option_entries(help_text: str) -> dict[str, str]:
    """Each option's entry in ``help_text`` (its invocation line and the indented lines
    under it, whitespace collapsed), by each of its option strings."""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in help_text.splitlines():
        m = re.match(r"^  (-\S.*?)(?:\s{2,}(.*))?$", line)
        if m:
            current = [m.group(2) or ""]
            for option in re.findall(r"(?:^|, )(-[-\w]+)", m.group(1)):
                entries[option] = current
        elif current is not None and line.startswith("    "):
            current.append(line.strip())
        else:
            current = None
    return {option: " ".join(" ".join(lines).split()) for option, lines in entries.items()}


def shows_default(entry: str, default: object) -> bool:
    forms = {str(default)} | ({f"{default:g}"} if isinstance(default, float) else set())
    return any(re.search(rf"default:?\s+{re.escape(f)}(?![\w.])", entry) for f in forms)


def test_the_commands_are_discovered() -> None:
    assert {"run", "rbac", "demo", "sim", "dump", "top", "soak"} <= set(COMMANDS)


@pytest.mark.parametrize("command", ["", *COMMANDS])
async def test_help_is_plain_text_within_80_columns_with_its_defaults(command: str) -> None:
    result = await run_cli(*([command] if command else []), "--help", columns=80)
    assert result.code == 0, result.err
    text = result.out
    problems = []
    markup = sorted({m.group(0) for m in RST.finditer(text)})
    if markup:
        problems.append(f"reStructuredText markup: {markup}")
    wide = [line for line in text.splitlines() if len(line) > 80]
    if wide:
        problems.append(f"lines wider than 80 columns: {wide}")
    parser = COMMANDS[command] if command else build_parser()
    entries = option_entries(text)
    hidden = [
        f"{action.option_strings[0]} (default {action.default!r})"
        for action in parser._actions
        if action.option_strings
        and action.nargs != 0  # a flag's default is to be absent
        and action.default not in (None, argparse.SUPPRESS)
        and not shows_default(entries.get(action.option_strings[0], ""), action.default)
    ]
    if hidden:
        problems.append(f"options whose help does not show their default: {hidden}")
    assert not problems, f"the help of {command or 'the program'}:\n" + "\n".join(problems)
    assert f"usage: python -m aioinformer {command}".rstrip() in text


def test_option_entries_reads_the_help_layout() -> None:
    text = (
        "options:\n"
        "  -n NAMESPACE, --namespace NAMESPACE\n"
        "                        one namespace (default:\n"
        "                        all)\n"
        "  --port PORT           the port (default: 8001)\n"
        "\n"
        "examples:\n"
        "  python -m aioinformer sim --port 0\n"
    )
    entries = option_entries(text)
    assert entries == {
        "-n": "one namespace (default: all)",
        "--namespace": "one namespace (default: all)",
        "--port": "the port (default: 8001)",
    }
    assert shows_default(entries["--port"], 8001) and not shows_default(entries["--port"], 80)
    assert shows_default("seconds (default 1)", 1.0) and not shows_default("(default: 1.5)", 1.0)


async def test_version_is_the_installed_distributions() -> None:
    result = await run_cli("--version")
    assert result.code == 0, result.err
    assert result.out == f"aioinformer {importlib.metadata.version('aioinformer')}\n"
    assert result.out == f"aioinformer {aioinformer.__version__}\n"


BLOCK = "import sys; sys.modules.update(dict.fromkeys({blocked!r})); "
"""Python that makes the ``blocked`` modules fail to import, as on an install without them."""

OPTIONAL = ["rich", "yaml", "cryptography", "matplotlib"]


async def test_help_works_without_the_optional_dependencies() -> None:
    code = BLOCK.format(blocked=OPTIONAL) + (
        "from aioinformer._cli.main import main\n"
        "for argv in [[], *([c] for c in sys.argv[1:])]:\n"
        "    try:\n"
        "        main([*argv, '--help'])\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (argv, exc.code)\n"
        "    print('HELP-OK', *argv, flush=True)\n"
    )
    result = await run_python("-c", code, *COMMANDS)
    assert result.code == 0, result.err
    assert [line for line in result.out.splitlines() if line.startswith("HELP-OK")] == [
        "HELP-OK",
        *(f"HELP-OK {c}" for c in COMMANDS),
    ]
