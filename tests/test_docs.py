"""The documentation cannot rot: every ``python`` block of README.md and docs/ runs as its
own program (against KubeSim) and exits 0; every ``python -m aioinformer`` command line in
them parses with the CLI's parser; the CLI reference names every subcommand, the metrics
reference every metric, the API reference every exported name; every exported name has a
docstring and every public constructor and function documents each of its parameters
(Google style, the style the site renders); the README stays short.

A block that includes a file by snippet (``--8<-- "examples/x.py"``) or quotes a part of
one of examples/ verbatim is not run here: the file has its own test.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import enum
import importlib
import inspect
import io
import re
import shlex
import subprocess
import sys
import tomllib
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import aioinformer
import aioinformer.testing
import kubesim
from aioinformer import InformerStatistics, Metrics, SubscriptionStatistics
from aioinformer._cli.main import build_parser
from tests.support import REPO, attribute_docstrings

DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
PUBLIC = (aioinformer, aioinformer.testing, kubesim)
OURS = ("aioinformer", "kubesim")
"""The packages whose classes the docstring checks look into."""

# -- fenced blocks ---------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)[^\n]*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it starts and what it holds."""

    path: Path
    line: int
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> Iterator[Block]:
    """The fenced code blocks of a Markdown file (indented ones, e.g. in admonitions or
    tabs, included), dedented."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, start = len(m["indent"]), m["fence"], i + 1
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:])
            i += 1
        yield Block(path, start, m["lang"].lower(), "\n".join(body) + "\n")
        i += 1


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]
EXAMPLE_SOURCES = [path.read_text() for path in sorted((REPO / "examples").glob("*.py"))]
PYTHON = [
    b
    for b in ALL_BLOCKS
    if b.lang in ("python", "py")
    and "--8<--" not in b.code
    and not any(b.code in source for source in EXAMPLE_SOURCES)
]
SHELL = [b for b in ALL_BLOCKS if b.lang in ("sh", "bash", "shell", "console")]


def test_the_docs_have_code_to_check() -> None:
    assert len(PYTHON) >= 10, [b.where for b in PYTHON]
    assert any(b.path == README for b in PYTHON), "the README's quickstart is a python block"


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    """Copied into a file and run, the block exits 0 (each block is a whole program)."""
    program = tmp_path / "block.py"
    program.write_text(block.code)
    try:
        done = subprocess.run(
            [sys.executable, str(program)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.where}: still running after {exc.timeout}s:\n{exc.stderr!r}")
    assert done.returncode == 0, (
        f"{block.where} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )


def test_the_readme_quickstart_is_a_program_that_runs() -> None:
    """The README's quickstart section holds a complete python block (run by the test
    above, like every other block)."""
    text = README.read_text()
    section = text.partition("## Quickstart")[2].split("\n## ", 1)[0]
    assert "```python" in section, "README.md has a '## Quickstart' with a python block"
    code = section.partition("```python\n")[2].partition("\n```")[0]
    assert "KubeSim" in code and "asyncio.run(" in code, code


# -- command lines ---------------------------------------------------------------------------


def command_lines(block: Block) -> Iterator[str]:
    """Each command of a shell block (continuation lines joined, ``$ `` prompts and
    comments removed), split at ``&&``, ``;`` and ``|``."""
    text = re.sub(r"\\\n\s*", " ", block.code)
    for line in text.splitlines():
        line = line.strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|;|\|", line):
            yield re.split(r"\s[12]?>", part)[0].strip()  # without a redirection


def aioinformer_commands() -> list[tuple[str, str]]:
    return [
        (b.where, cmd)
        for b in SHELL
        for cmd in command_lines(b)
        if cmd.startswith("python -m aioinformer")
    ]


COMMANDS = aioinformer_commands()


def test_the_docs_show_command_lines() -> None:
    subcommands = {shlex.split(cmd)[3] for _, cmd in COMMANDS if len(shlex.split(cmd)) > 3}
    assert subcommands >= {"demo", "run", "rbac", "sim", "soak"}, subcommands


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_command_line_parses(where: str, command: str) -> None:
    argv = shlex.split(command, comments=True)[3:]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            if exc.code != 0:  # --help exits 0
                pytest.fail(f"{where}: {command!r} does not parse: {err.getvalue()}")


def test_pip_install_lines_name_real_extras() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])  # fmt: skip
    seen = set()
    for b in SHELL:
        for cmd in command_lines(b):
            for group in re.findall(r"\[([\w,-]+)\]", cmd) if cmd.startswith("pip ") else ():
                seen.update(group.split(","))
    assert seen, "the docs show pip install lines with extras"
    assert seen <= extras, seen - extras


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_cli_reference_documents_every_subcommand() -> None:
    page = (DOCS / "cli.md").read_text()
    documented = set(re.findall(r"^## `python -m aioinformer (\w+)", page, re.M))
    assert documented == set(subcommands()), (
        f"missing: {set(subcommands()) - documented}, unknown: {documented - set(subcommands())}"
    )


def test_cli_reference_names_every_option() -> None:
    page = (DOCS / "cli.md").read_text()
    sections = re.split(r"^## `python -m aioinformer ", page, flags=re.M)[1:]
    by_name = {s.split("`", 1)[0].split()[0]: s for s in sections}
    for name, parser in subcommands().items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert f"`{flag}" in by_name[name], f"docs/cli.md: {name} {flag}"


# -- the metrics reference -------------------------------------------------------------------


def fields(cls: type) -> list[str]:
    return list(cls.__dataclass_fields__)  # type: ignore[attr-defined]


def exposed_metric_names() -> set[str]:
    """Every series name a Manager's Metrics exposes (counters with their ``_total``)."""
    metrics = Metrics()
    handler = SubscriptionStatistics(**dict.fromkeys(fields(SubscriptionStatistics), 0))
    informer = dict.fromkeys(fields(InformerStatistics), 0)
    informer.update(name="i", store="snapshot", errors_by_code={}, handlers=(handler,))
    metrics.add_informer_source(lambda: [InformerStatistics(**informer)])
    names = set()
    for family in metrics.registry.collect():
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_metrics_reference_lists_every_metric_and_no_other() -> None:
    page = (DOCS / "running.md").read_text()
    section = page.partition("## Metrics reference")[2].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(aioinformer_\w+)`", section))
    exposed = exposed_metric_names()
    assert exposed, "Metrics registers series"
    assert documented == exposed, (
        f"undocumented: {sorted(exposed - documented)}, not exposed: {sorted(documented - exposed)}"
    )


# -- the API reference and the docstrings ----------------------------------------------------


def exported(module: object) -> list[str]:
    return [n for n in module.__all__ if not n.startswith("__")]  # type: ignore[attr-defined]


def reexported(module: object, name: str) -> bool:
    """Whether ``module.name`` is KubeSim's own export, shown again (documented once, as
    ``kubesim.name``)."""
    return module is not kubesim and getattr(kubesim, name, None) is getattr(module, name)


def test_api_reference_has_every_exported_name() -> None:
    text = "\n".join(p.read_text() for p in sorted((DOCS / "api").glob("*.md")))
    referenced = set(
        re.findall(r"^::: ((?:aioinformer(?:\.testing)?|kubesim)\.\w+)\s*$", text, re.M)
    )
    names = {f"{m.__name__}.{n}" for m in PUBLIC for n in exported(m) if not reexported(m, n)}
    assert referenced == names, (
        f"missing: {sorted(names - referenced)}, not exported: {sorted(referenced - names)}"
    )


def defining_modules() -> dict[tuple[str, str], str]:
    """(public module, name) -> the module that defines it, from the re-exports
    (``from aioinformer._x import Name as Name``) of the public ``__init__`` files."""
    found = {}
    for module in PUBLIC:
        tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[arg-type]
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[module.__name__, alias.asname or alias.name] = node.module
    return found


DEFINED_IN = defining_modules()


def source_module(cls: type) -> str:
    """The module that defines ``cls`` (public classes show the public module's name)."""
    if cls.__module__ in (m.__name__ for m in PUBLIC):
        for (_, name), module in DEFINED_IN.items():
            if name == cls.__name__:
                return module
    return cls.__module__


def module_tree(module: str) -> ast.Module:
    return ast.parse(inspect.getsource(importlib.import_module(module)))


def field_docstrings(cls: type) -> set[str]:
    """The fields of ``cls`` and its bases with an attribute docstring."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith(OURS):
            continue
        for node in module_tree(source_module(klass)).body:
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                found |= attribute_docstrings(node.body)
    return found


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Keyword Args|Keyword Arguments):\s*$")
_ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:")


def documented_parameters(doc: str | None) -> set[str]:
    """The parameter names of the Google-style ``Args:`` sections of ``doc``."""
    names: set[str] = set()
    lines = inspect.cleandoc(doc or "").splitlines()
    for i, line in enumerate(lines):
        if not _SECTION.match(line):
            continue
        entry_indent = None
        for entry in lines[i + 1 :]:
            if entry.strip() and not entry.startswith(" "):
                break  # the next section
            if not entry.strip():
                continue
            indent = len(entry) - len(entry.lstrip())
            entry_indent = entry_indent or indent
            m = _ENTRY.match(entry.strip())
            if indent == entry_indent and m:
                names.add(m[1].lstrip("*"))
    return names


def constructor_docs(cls: type) -> set[str]:
    """What documents the constructor of ``cls``: the ``Args`` of its docstring, of the
    class that defines ``__init__`` and of that ``__init__``, and field docstrings."""
    documented = documented_parameters(cls.__doc__) | field_docstrings(cls)
    for klass in cls.__mro__:
        if "__init__" in vars(klass) or "__new__" in vars(klass):
            documented |= documented_parameters(klass.__doc__)
            documented |= documented_parameters(
                getattr(vars(klass).get("__init__"), "__doc__", None)
            )
            break
    return documented


def parameters(fn: typing.Any) -> list[str]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind not in variadic and not p.name.startswith("_")  # private: not for callers
    ]


def public_members(cls: type) -> Iterator[tuple[str, typing.Any]]:
    """The public methods and properties ``cls`` has from the package (not from object,
    Exception or typing)."""
    data_fields = getattr(cls, "__dataclass_fields__", {})
    for name in dir(cls):
        if name.startswith("_") or name in data_fields:  # a field's default, not a method
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if not owner.__module__.startswith(OURS):
            continue
        member = vars(owner)[name]
        if isinstance(member, property):
            yield name, member.fget
        elif isinstance(member, staticmethod | classmethod):
            yield name, member.__func__
        elif inspect.isfunction(member):
            yield name, member


def docstring_problems(module: typing.Any, name: str) -> Iterator[str]:
    obj = getattr(module, name)
    where = f"{module.__name__}.{name}"
    if inspect.isclass(obj):
        if not (vars(obj).get("__doc__") or "").strip():
            yield f"{where}: no docstring"
        constructed = not getattr(obj, "_is_protocol", False) and not issubclass(obj, enum.Enum)
        if constructed and obj.__init__ is not object.__init__:
            documented = constructor_docs(obj)
            for param in parameters(obj):
                if param not in documented:
                    yield f"{where}: constructor parameter {param!r} is not documented"
        for member, fn in public_members(obj):
            if not (fn.__doc__ or "").strip():
                yield f"{where}.{member}: no docstring"
    elif inspect.isfunction(obj):
        if not (obj.__doc__ or "").strip():
            yield f"{where}: no docstring"
        documented = documented_parameters(obj.__doc__)
        for param in parameters(obj):
            if param not in documented:
                yield f"{where}: parameter {param!r} is not documented"
    else:  # a type alias or a constant: an attribute docstring where it is defined
        tree = module_tree(DEFINED_IN[module.__name__, name])
        if name not in attribute_docstrings(tree.body):
            yield f"{where}: no docstring (a string right after its assignment)"


@pytest.mark.parametrize("module", PUBLIC, ids=[m.__name__ for m in PUBLIC])
def test_every_export_is_documented(module: typing.Any) -> None:
    problems = [p for name in exported(module) for p in docstring_problems(module, name)]
    assert not problems, "\n".join(problems)


def test_the_docstring_check_finds_what_is_missing() -> None:
    """The check itself: an undocumented parameter and a missing docstring are found."""

    def f(a: int, b: int) -> None:
        """Do it.

        Args:
            a: the first.
        """

    assert documented_parameters(f.__doc__) == {"a"}
    assert parameters(f) == ["a", "b"]
    assert documented_parameters("Nothing.\n\nArgs:\n    x (int): one.\n    y: two.\n") == {
        "x",
        "y",
    }


# -- the site's structure and the README -----------------------------------------------------


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())

    def entries(nav: typing.Any) -> Iterator[str]:
        for item in nav:
            if isinstance(item, str):
                yield item
            else:
                for value in item.values():
                    yield from entries(value) if isinstance(value, list) else [value]

    nav = set(entries(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert nav <= pages, f"in the nav but missing: {nav - pages}"
    assert pages <= nav, f"pages left out of the nav: {pages - nav}"


def test_snippets_include_files_that_exist() -> None:
    for page in PAGES:
        for path in re.findall(r'--8<--\s+"([^":]+)', page.read_text()):
            assert (REPO / path).is_file(), f"{page.relative_to(REPO)} includes {path}"


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.encode()) <= 10 * 1024, f"README.md is {len(text.encode())} bytes"
    first = text.split("\n## ", 2)[1]
    install = "pip install -e ./kubesim -e"  # (KubeSim is a distribution of its own)
    assert f"{install} '.[demo]' && python -m aioinformer demo" in first
    assert f"{install} '.[test]' && python -m pytest -q" in first
    ci = (REPO / ".ci" / "run").read_text()
    assert f"{install} '.[test]'" in ci.replace("-q ", "") and "python -m pytest -q" in ci
    assert "pip install aioinformer" in text
    for marker in ("<!-- headline:start -->", "<!-- headline:end -->"):
        assert marker in text
    for link in ("docs/writing-an-operator.md", "docs/kubesim.md", "bench/RESULTS.md"):
        assert link in text
