"""The public API is what ``aioinformer.__all__`` (and ``aioinformer.testing.__all__``)
export: every name exists, is documented, and nothing public is missing from it; the old
names are gone; ``import aioinformer`` loads no testing, harness, demo or CLI module."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import aioinformer
import aioinformer.testing
from tests.support import attribute_docstrings as assigned_docstrings

PACKAGE = Path(aioinformer.__file__).parent


def attribute_docstrings() -> set[str]:
    """Names given a docstring by the string right after their assignment (how type
    aliases and constants are documented), anywhere in the package."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        found |= assigned_docstrings(ast.parse(path.read_text()).body)
    return found


@pytest.mark.parametrize("module", [aioinformer, aioinformer.testing])
def test_all_names_exist_and_are_documented(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert names == sorted(names), "__all__ is kept sorted"
    documented = attribute_docstrings()
    for name in names:
        obj = getattr(module, name)
        if name.startswith("__"):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"  # type: ignore[attr-defined]
        else:
            assert name in documented, f"{module.__name__}.{name} has no docstring"  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", [aioinformer, aioinformer.testing])
def test_no_public_name_is_left_out(module: object) -> None:
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not inspect.ismodule(v) and n != "annotations"
    }
    assert public <= set(module.__all__)  # type: ignore[attr-defined]


def test_public_classes_show_the_public_module() -> None:
    assert aioinformer.Informer.__module__ == "aioinformer"
    assert repr(aioinformer.Conflict).endswith("aioinformer.Conflict'>")


@pytest.mark.parametrize(
    "old",
    [
        "ApiStatusError",
        "WatchExpired",
        "StreamError",
        "WatchError",
        "InformerStats",
        "DeltaType",
        "Delta",
        "Replace",
        "Bookmark",
        "DeltaFIFO",
        "StoreKind",
        "StoreView",
        "StoreReader",
        "PipelineThread",
    ],
)
def test_old_names_are_gone(old: str) -> None:
    """The package is 0.x and unreleased: a renamed or removed name is simply gone (no
    shim that imports it with a warning)."""
    assert old not in aioinformer.__all__
    with pytest.raises(AttributeError, match=f"no attribute '{old}'"):
        getattr(aioinformer, old)


def test_import_loads_the_library_only() -> None:
    code = "import aioinformer, sys; print(sorted(m for m in sys.modules if 'aioinformer' in m or 'kubesim' in m))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    modules = set(eval(out))
    assert "aioinformer._cache.informer" in modules, out
    for prefix in ("aioinformer.testing", "aioinformer._harness", "aioinformer._cli", "kubesim"):
        assert not [m for m in modules if m == prefix or m.startswith(prefix + ".")], modules
    code = (
        "import aioinformer, sys; "
        "print([m for m in ('rich', 'matplotlib', 'yaml', 'cryptography') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out
