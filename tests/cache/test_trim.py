"""Returning free heap memory to the OS: asked of glibc where it has malloc_trim, and
never an error where it has not."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from aioinformer._cache import trim
from aioinformer._cache.trim import release_free_memory


def test_glibc_is_asked_to_trim() -> None:
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's; this C library has none")
    assert release_free_memory() is True


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    trim._malloc_trim.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libdoesnotexist.so.0")
    try:
        assert release_free_memory() is False
    finally:
        trim._malloc_trim.cache_clear()


def test_a_failing_trim_is_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pad: int) -> int:
        raise OSError("no")

    monkeypatch.setattr(trim, "_malloc_trim", lambda: broken)
    assert release_free_memory() is False
