"""The optional dependencies of the commands: which extra each command needs, and the one
line that names it when a module of it is missing.

A command that cannot import a module of the extras it needs ends with one line on
stderr, ``python -m aioinformer COMMAND: this command needs 'MODULE', which comes with the
'EXTRA' extra: pip install 'aioinformer[EXTRA]'``, and exit status 2. The extra named is
the command's (``demo`` needs ``[demo]``, even for ``rich``, which ``[cli]`` would also
bring: installing ``[cli]`` would only lead to the next missing module). A module that no
extra of the command brings is not the installation's fault (an operator's own import,
say) and is not reported as one.
"""

from __future__ import annotations

import importlib

from aioinformer._cli.helpformat import PROG

__all__ = [
    "COMMAND_EXTRAS",
    "DEMO_MODULES",
    "EXTRA_MODULES",
    "extra_for",
    "missing_extra",
    "require",
]

EXTRA_MODULES: dict[str, frozenset[str]] = {
    "cli": frozenset({"rich"}),
    "kubesim": frozenset({"kubesim", "cryptography", "yaml"}),
    "demo": frozenset({"rich", "kubesim", "cryptography", "yaml", "matplotlib", "aiorwlock"}),
}
"""The top-level modules each extra brings (``demo`` includes ``cli`` and ``kubesim``)."""

COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "top": ("cli",),
    "soak": ("cli", "kubesim"),
    "demo": ("demo",),
    "sim": ("kubesim",),
    "rbac": ("kubesim",),  # (PyYAML, for the manifests)
}
"""The extras each command needs; a command not listed needs none."""

DEMO_MODULES = ("rich", "kubesim", "matplotlib", "aiorwlock")
"""What ``demo`` imports before its minute of work (the plot comes at its end)."""


def extra_for(command: str, module: str) -> str | None:
    """The extra of ``command`` that brings ``module`` (a top-level name), or None."""
    for extra in COMMAND_EXTRAS.get(command, ()):
        if module in EXTRA_MODULES[extra]:
            return extra
    return None


def missing_extra(command: str, module: str, extra: str) -> str:
    """The one line that says ``command`` needs ``module``, which ``extra`` brings."""
    return (
        f"{PROG} {command}: this command needs {module!r}, which comes with the {extra!r} "
        f"extra: pip install 'aioinformer[{extra}]'"
    )


def require(*modules: str) -> None:
    """Import ``modules`` now: a missing one raises its ``ModuleNotFoundError`` before a
    command starts work it could not finish."""
    for module in modules:
        importlib.import_module(module)
