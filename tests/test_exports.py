"""The public API is what ``aioinformer.__all__`` (and ``aioinformer.testing.__all__``)
export: every name exists, is documented, and nothing public is missing from it."""

from __future__ import annotations

import inspect

import pytest

import aioinformer
import aioinformer.testing


@pytest.mark.parametrize("module", [aioinformer, aioinformer.testing])
def test_all_names_exist_and_are_documented(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert names == sorted(names), "__all__ is kept sorted"
    for name in names:
        obj = getattr(module, name)
        if name.startswith("__"):
            continue
        assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"  # type: ignore[attr-defined]


@pytest.mark.parametrize("module", [aioinformer, aioinformer.testing])
def test_no_public_name_is_left_out(module: object) -> None:
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not inspect.ismodule(v) and n != "annotations"
    }
    assert public <= set(module.__all__)  # type: ignore[attr-defined]
