"""``MODULE:CALLABLE`` targets of ``run`` and ``rbac``: the user's build function.

A target is ``package.module:build`` (imported as a module) or ``path/to/file.py:build``
(loaded from the file as ``python path/to/file.py`` would run it: its directory first on
``sys.path``, so it may import the modules beside it); ``:build`` may be left out (the
callable is then ``build``). The callable receives a :class:`~aioinformer.Manager` and
registers its informers and controllers on it; it may be a plain function or a coroutine
function.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aioinformer._core.errors import ConfigError
from aioinformer._runtime.manager import Manager

__all__ = ["BuildFunction", "build_manager", "load_target"]

BuildFunction = Callable[[Manager], Any]


def load_target(target: str) -> BuildFunction:
    """The callable ``target`` names (see the module docstring); a :class:`ConfigError`
    saying what is wrong otherwise."""
    where, _, attr = target.rpartition(":") if ":" in target else (target, "", "build")
    attr = attr or "build"
    if where.endswith(".py") or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise ConfigError(f"{target}: no such file {where}")
        name = f"aioinformer_target_{path.stem}"
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"{target}: cannot load {where} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (dataclasses and pickling look modules up by name)
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ConfigError(f"{target}: no module named {exc.name!r}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{target}: {where} has no callable {attr!r}")
    return fn  # type: ignore[no-any-return]


async def build_manager(build: BuildFunction, manager: Manager) -> None:
    """Call the user's build function on ``manager`` (awaited if it is a coroutine)."""
    result = build(manager)
    if inspect.isawaitable(result):
        await result
