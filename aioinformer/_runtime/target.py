"""``MODULE:CALLABLE`` targets of ``run`` and ``rbac``: the user's build function.

A target is ``package.module:build`` (imported as a module) or ``path/to/file.py:build``
(loaded from the file as ``python path/to/file.py`` would run it: its directory first on
``sys.path``, so it may import the modules beside it); ``:build`` may be left out (the
callable is then ``build``). The callable receives a :class:`~aioinformer.Manager` and
registers its informers and controllers on it; it may be a plain function or a coroutine
function.

:func:`module_from_file` loads a Python file as a module without touching ``sys.path``
(what tools that load operator files, e.g. the fault mixes, use).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from aioinformer._core.errors import ConfigError
from aioinformer._runtime.manager import Manager

__all__ = ["BuildFunction", "build_manager", "load_target", "module_from_file"]

BuildFunction: TypeAlias = Callable[[Manager], Any]
"""What ``python -m aioinformer run`` and ``rbac`` (and the pytest plugin's ``operator``
fixture) take: a function that registers an operator's informers and controllers on a
:class:`~aioinformer.Manager` (its result is ignored; a coroutine is awaited)."""


def load_target(target: str) -> BuildFunction:
    """The callable ``target`` names (see the module docstring); a :class:`ConfigError`
    saying what is wrong otherwise."""
    where, _, attr = target.rpartition(":") if ":" in target else (target, "", "build")
    attr = attr or "build"
    if where.endswith(".py") or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise ConfigError(f"{target}: no such file {where}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module = module_from_file(path)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ConfigError(f"{target}: no module named {exc.name!r}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{target}: {where} has no callable {attr!r}")
    return fn  # type: ignore[no-any-return]


def module_from_file(path: str | Path) -> ModuleType:
    """The Python file ``path`` loaded (executed) as a new module named
    ``aioinformer_target_<stem>`` (registered in ``sys.modules``: dataclasses and pickling
    look modules up by name), each call anew; ``sys.path`` is left as it is. A
    :class:`ConfigError` if the file is missing or not Python; what running it raises
    propagates."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such file {path}")
    name = f"aioinformer_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


async def build_manager(build: BuildFunction, manager: Manager) -> None:
    """Call the user's build function on ``manager`` (awaited if it is a coroutine)."""
    result = build(manager)
    if inspect.isawaitable(result):
        await result
