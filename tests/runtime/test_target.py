"""``MODULE:CALLABLE`` targets and files loaded as modules: a file target may import the
modules beside it (as ``python file.py`` could), :func:`module_from_file` leaves
``sys.path`` alone and loads anew each time; what is wrong is a one-line ConfigError."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aioinformer import ConfigError
from aioinformer._runtime.target import load_target, module_from_file


def test_module_from_file_loads_anew_without_touching_sys_path(tmp_path: Path) -> None:
    op = tmp_path / "op.py"
    op.write_text("LOADS = []\n")
    before = list(sys.path)
    first, second = module_from_file(op), module_from_file(str(op))
    assert sys.path == before
    assert first is not second and first.LOADS is not second.LOADS  # executed twice
    assert sys.modules["aioinformer_target_op"] is second and second.__file__ == str(op)


def test_module_from_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        module_from_file(tmp_path / "missing.py")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('at import')\n")
    with pytest.raises(RuntimeError, match="at import"):
        module_from_file(broken)
    assert "aioinformer_target_broken" not in sys.modules


def test_a_file_target_imports_its_neighbours(tmp_path: Path) -> None:
    (tmp_path / "helper_for_target.py").write_text("VALUE = 42\n")
    (tmp_path / "op2.py").write_text(
        "import helper_for_target\ndef build(manager):\n    return helper_for_target.VALUE\n"
    )
    try:
        build = load_target(f"{tmp_path / 'op2.py'}:build")
        assert build(None) == 42  # type: ignore[arg-type]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helper_for_target", None)
    with pytest.raises(ConfigError, match="has no callable 'nope'"):
        load_target(f"{tmp_path / 'op2.py'}:nope")
