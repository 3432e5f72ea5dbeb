"""Every Sphinx-style cross-reference in KubeSim's source names an object that exists.

A role (``:mod:``, ``:class:``, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``, ``:exc:``)
in a docstring or a ``#:`` comment names its target as Sphinx's Python domain does:
``~`` only shortens the text, ``text <target>`` names the target explicitly, and a target is
found, in this order, in the class the reference is written in (and its bases), in the
module it is written in, then as an absolute dotted path (a ``kubesim`` module, or any
importable one). A leading dot is relative to the module's package. KubeSim stands alone:
a reference to aioinformer is refused even where it would resolve. So a module that moves
or an object that is renamed cannot leave a stale reference behind.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kubesim

ROLE = re.compile(r":(mod|class|func|meth|attr|data|exc):`([^`]+)`")
_MISSING = object()


def _modules() -> list[ModuleType]:
    names = [kubesim.__name__] + [
        m.name for m in pkgutil.walk_packages(kubesim.__path__, prefix="kubesim.")
    ]
    return [importlib.import_module(n) for n in sorted(names)]


def _target(text: str) -> str:
    """The target a role names: ``title <target>`` -> target; ``~a.b`` -> ``a.b``."""
    m = re.fullmatch(r"(?s).*<([^<>]+)>\s*", text)
    target = (m.group(1) if m else text).strip()
    return target.lstrip("~").removesuffix("()")


def _instance_attributes(cls: type) -> set[str]:
    """The attributes a class's methods set on ``self`` (instance attributes are objects
    too, documented where they are assigned)."""
    try:
        tree = ast.parse(inspect.getsource(cls).lstrip())
    except (OSError, TypeError, SyntaxError):
        return set()
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _getattr_path(obj: Any, path: list[str]) -> Any:
    for i, part in enumerate(path):
        found = getattr(obj, part, _MISSING)
        if found is _MISSING:
            is_last = i == len(path) - 1
            if is_last and isinstance(obj, type) and part in _instance_attributes(obj):
                return part  # an instance attribute: it exists once the object does
            return _MISSING
        obj = found
    return obj


def _absolute(target: str) -> Any:
    """The object at the dotted path ``target``: the longest importable module prefix,
    then attributes."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        return _getattr_path(module, parts[i:])
    return _MISSING


def _classes_at(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, dotted name) of every class of a module, nested ones too."""
    out: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                out.append((child.lineno, child.end_lineno or child.lineno, name))
                visit(child, name + ".")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, prefix)

    visit(tree, "")
    return out


def _resolve(module: ModuleType, cls: str | None, target: str) -> Any:
    if target.startswith("."):
        package = module.__name__.rsplit(".", 1)[0]
        return _absolute(package + target)
    if cls is not None:
        owner = _getattr_path(module, cls.split("."))
        for klass in getattr(owner, "__mro__", ()):
            found = _getattr_path(klass, target.split("."))
            if found is not _MISSING:
                return found
    found = _getattr_path(module, target.split("."))
    if found is not _MISSING:
        return found
    return _absolute(target)


def _references(module: ModuleType) -> list[tuple[int, str, str, str | None]]:
    """(line, role, target, enclosing class) of every reference in a module's source."""
    path = Path(module.__file__ or "")
    source = path.read_text()
    classes = _classes_at(ast.parse(source))
    out = []
    for m in ROLE.finditer(source):
        line = source.count("\n", 0, m.start()) + 1
        enclosing = [name for first, last, name in classes if first <= line <= last]
        cls = max(enclosing, key=len) if enclosing else None
        out.append((line, m.group(1), _target(m.group(2)), cls))
    return out


MODULES = _modules()


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__ for m in MODULES])
def test_every_cross_reference_resolves(module: ModuleType) -> None:
    stale = []
    for line, role, target, cls in _references(module):
        where = f"{module.__name__}:{line}: :{role}:`{target}`"
        if target.split(".")[0] == "aioinformer":
            stale.append(f"{where} (KubeSim refers to nothing of aioinformer)")
        elif _resolve(module, cls, target) is _MISSING:
            stale.append(where)
    assert not stale, "stale cross-references:\n" + "\n".join(stale)


def test_the_check_finds_a_stale_reference() -> None:
    """The resolver itself: a real object resolves, a moved-away module does not."""
    module = importlib.import_module("kubesim.registry.store")
    assert _resolve(module, "Api", "write") is not _MISSING
    assert _resolve(module, None, "kubesim.registry.resource.Strategy") is not _MISSING
    assert _resolve(module, None, "Api.delete") is not _MISSING
    assert _resolve(module, None, "Api.on_served_changed") is not _MISSING  # set in __init__
    assert _resolve(module, None, "Api.nothing_like_this") is _MISSING
    assert _resolve(module, None, "._rest") is _MISSING
    assert _resolve(module, None, "kubesim.rest.Api") is _MISSING
    assert _target("title <kubesim.KubeSim.create>") == "kubesim.KubeSim.create"
    assert _target("~kubesim.errors.KubeSimError") == "kubesim.errors.KubeSimError"
